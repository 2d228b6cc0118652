//! I-9 requests: a write asks for an I-9 (on-site or remote hire); the
//! Section 1 link token is issued at once, so the answer carries the link,
//! and a worker creates the I-9 from the request (its job goes through the
//! outbox in the same transaction).

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, Postgres, QueryBuilder};
use uuid::Uuid;

use super::{audit, employee::constraint_error, WriteError};
use crate::{
    crypto::{new_token, token_hash, DataCipher, Purpose},
    domain::{I9Status, OnboardingType},
    jobs::{Envelope, Job},
    links, outbox,
};

/// An I-9 requested by a write: its id, its Section 1 link token and the
/// job that creates it.
#[derive(Debug, Clone)]
pub struct I9Request {
    pub id: Uuid,
    pub onboarding: OnboardingType,
    token: String,
    /// The employee's Section 1 link (absolute).
    pub link: String,
    expires: DateTime<Utc>,
    envelope: Envelope,
    /// The partner push that made the request (`IntegrationTransactionId`),
    /// copied into the I-9; `None` for a request of an HR write.
    pub integration_transaction_id: Option<String>,
}

impl I9Request {
    /// A new request whose Section 1 link, under `public_base_url`, works
    /// for `ttl`.
    pub fn new(
        onboarding: OnboardingType,
        public_base_url: &str,
        ttl: std::time::Duration,
    ) -> Self {
        let token = new_token("s1_");
        let id = Uuid::new_v4();
        Self {
            id,
            onboarding,
            link: links::section1(public_base_url, &token),
            expires: Utc::now()
                + chrono::Duration::from_std(ttl).unwrap_or(chrono::Duration::days(14)),
            envelope: outbox::envelope(Job::CreateI9 { request_id: id }),
            token,
            integration_transaction_id: None,
        }
    }

    /// The request of partner push `transaction` (its `IntegrationTransactionId`).
    pub fn of_partner_push(mut self, transaction: String) -> Self {
        self.integration_transaction_id = Some(transaction);
        self
    }

    /// Record the request for `employee`, and its job.
    pub async fn insert(
        &self,
        conn: &mut PgConnection,
        cipher: &DataCipher,
        employee: i64,
    ) -> Result<(), WriteError> {
        sqlx::query!(
            "INSERT INTO i9_requests (id, employee_id, remote, onboarding_type, section1_token_hash,
                                      section1_token_ciphertext, section1_expires_at, integration_transaction_id)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            self.id,
            employee,
            self.onboarding.is_remote(),
            self.onboarding.as_str(),
            token_hash(&self.token),
            cipher.encrypt(Purpose::Section1Token, self.token.as_bytes()),
            self.expires,
            self.integration_transaction_id.as_deref(),
        )
        .execute(&mut *conn)
        .await
        .map_err(constraint_error)?;
        outbox::enqueue_envelope(conn, &self.envelope).await?;
        Ok(())
    }

    /// The same, as parts of one statement whose CTE `e` is the employee
    /// just inserted: `r` the request, and the job ([`outbox::push_ctes`]).
    pub fn push_ctes(&self, q: &mut QueryBuilder<'_, Postgres>, cipher: &DataCipher) {
        q.push(
            ", r AS (INSERT INTO i9_requests (id, employee_id, remote, onboarding_type, section1_token_hash,
                                              section1_token_ciphertext, section1_expires_at,
                                              integration_transaction_id) SELECT ",
        );
        q.push_bind(self.id).push(", e.id, ");
        q.push_bind(self.onboarding.is_remote()).push(", ");
        q.push_bind(self.onboarding).push(", ");
        q.push_bind(token_hash(&self.token)).push(", ");
        q.push_bind(cipher.encrypt(Purpose::Section1Token, self.token.as_bytes()));
        q.push(", ").push_bind(self.expires).push(", ");
        q.push_bind(self.integration_transaction_id.clone());
        q.push(" FROM e)");
        outbox::push_ctes(q, &self.envelope, "e");
    }
}

/// A stored Section 1 link, read again for a replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoredLink {
    /// The link (absolute), as the write that issued it answered.
    Link(String),
    /// The request is no longer stored: the I-9 it started was purged at
    /// the end of its retention, and its link with it (docs/retention.md,
    /// "What the API answers").
    Gone,
    /// The token no longer decrypts.
    Undecryptable,
}

/// The Section 1 link of request `request`, as the write that issued it
/// answered (for a replay; the token is kept encrypted).
pub async fn section1_link(
    conn: &mut PgConnection,
    cipher: &DataCipher,
    public_base_url: &str,
    request: Uuid,
) -> Result<StoredLink, sqlx::Error> {
    let Some(ciphertext) = sqlx::query_scalar!(
        "SELECT section1_token_ciphertext FROM i9_requests WHERE id = $1",
        request,
    )
    .fetch_optional(&mut *conn)
    .await?
    else {
        return Ok(StoredLink::Gone);
    };
    Ok(cipher
        .decrypt(Purpose::Section1Token, &ciphertext)
        .ok()
        .and_then(|t| String::from_utf8(t).ok())
        .map_or(StoredLink::Undecryptable, |token| {
            StoredLink::Link(links::section1(public_base_url, &token))
        }))
}

/// A Section 1 link issued anew by [`reissue`].
#[derive(Debug, Clone)]
pub struct Reissued {
    /// The new link (absolute); the only one of the I-9 that works now.
    pub link: String,
    /// Whether the link was queued to the employee's email address.
    pub emailed: bool,
}

/// Issue a new Section 1 link for I-9 `i9`, which must be in
/// [`I9Status::INITIAL`] (else [`WriteError::Conflict`]; an unknown I-9 is
/// [`WriteError::NotFound`]): a new token replaces the I-9's request's, so
/// the old link stops working at once; the change is audited
/// (`i9.section1_link_reissued`, never the token); and when the employee has
/// an email address, the remote-hire email carries the new link to it
/// (docs/api.md, "A new Section 1 link"). An I-9 without a request (made
/// before requests kept their link) gets one.
pub async fn reissue(
    conn: &mut PgConnection,
    cipher: &DataCipher,
    actor: &audit::Actor,
    i9: i64,
    public_base_url: &str,
    ttl: std::time::Duration,
) -> Result<Reissued, WriteError> {
    let row = sqlx::query!(
        r#"SELECT i.status AS "status: I9Status", i.employee_id, i.remote, i.onboarding_type,
                  e.email_address
           FROM i9s i JOIN employees e ON e.id = i.employee_id
           WHERE i.id = $1 FOR UPDATE OF i"#,
        i9,
    )
    .fetch_optional(&mut *conn)
    .await?
    .ok_or(WriteError::NotFound)?;
    if row.status != I9Status::INITIAL {
        return Err(WriteError::Conflict(format!(
            "The I-9 is {}; a new Section 1 link is issued only while it is {}.",
            row.status.as_str(),
            I9Status::INITIAL.as_str()
        )));
    }
    let token = new_token("s1_");
    let expires =
        Utc::now() + chrono::Duration::from_std(ttl).unwrap_or(chrono::Duration::days(14));
    let request = sqlx::query_scalar!(
        "INSERT INTO i9_requests (id, employee_id, remote, onboarding_type, section1_token_hash,
                                  section1_token_ciphertext, section1_expires_at, i9_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (i9_id) DO UPDATE SET section1_token_hash = EXCLUDED.section1_token_hash,
             section1_token_ciphertext = EXCLUDED.section1_token_ciphertext,
             section1_expires_at = EXCLUDED.section1_expires_at, section1_used_at = NULL
         RETURNING id",
        Uuid::new_v4(),
        row.employee_id,
        row.remote,
        row.onboarding_type,
        token_hash(&token),
        cipher.encrypt(Purpose::Section1Token, token.as_bytes()),
        expires,
        i9,
    )
    .fetch_one(&mut *conn)
    .await?;
    let emailed = row.email_address.is_some();
    if emailed {
        outbox::enqueue(
            conn,
            Job::SendRemoteHireEmail {
                request_id: request,
            },
        )
        .await?;
    }
    audit::record(
        &mut *conn,
        actor,
        audit::Entry::new("i9.section1_link_reissued", "i9", i9)
            .detail(serde_json::json!({ "emailed": emailed })),
    )
    .await?;
    Ok(Reissued {
        link: links::section1(public_base_url, &token),
        emailed,
    })
}
