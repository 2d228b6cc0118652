//! I-9 requests: a write asks for an I-9 (on-site or remote hire); the
//! Section 1 link token is issued at once, so the answer carries the link,
//! and a worker creates the I-9 from the request (its job goes through the
//! outbox in the same transaction).

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, Postgres, QueryBuilder};
use uuid::Uuid;

use super::{employee::constraint_error, WriteError};
use crate::{
    crypto::{new_token, token_hash, DataCipher, Purpose},
    domain::OnboardingType,
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
        }
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
                                      section1_token_ciphertext, section1_expires_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
            self.id,
            employee,
            self.onboarding.is_remote(),
            self.onboarding.as_str(),
            token_hash(&self.token),
            cipher.encrypt(Purpose::Section1Token, self.token.as_bytes()),
            self.expires,
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
                                              section1_token_ciphertext, section1_expires_at) SELECT ",
        );
        q.push_bind(self.id).push(", e.id, ");
        q.push_bind(self.onboarding.is_remote()).push(", ");
        q.push_bind(self.onboarding).push(", ");
        q.push_bind(token_hash(&self.token)).push(", ");
        q.push_bind(cipher.encrypt(Purpose::Section1Token, self.token.as_bytes()));
        q.push(", ").push_bind(self.expires).push(" FROM e)");
        outbox::push_ctes(q, &self.envelope, "e");
    }
}

/// The Section 1 link of request `request`, as the write that issued it
/// answered (for a replay; the token is kept encrypted). `None` when the
/// token no longer decrypts.
pub async fn section1_link(
    conn: &mut PgConnection,
    cipher: &DataCipher,
    public_base_url: &str,
    request: Uuid,
) -> Result<Option<String>, sqlx::Error> {
    let ciphertext = sqlx::query_scalar!(
        "SELECT section1_token_ciphertext FROM i9_requests WHERE id = $1",
        request,
    )
    .fetch_one(&mut *conn)
    .await?;
    Ok(cipher
        .decrypt(Purpose::Section1Token, &ciphertext)
        .ok()
        .and_then(|t| String::from_utf8(t).ok())
        .map(|token| links::section1(public_base_url, &token)))
}
