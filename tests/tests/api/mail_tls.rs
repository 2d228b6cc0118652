//! Mail over TLS (finding 9 of issue 8), against real TLS SMTP servers whose
//! certificate a private CA of the test issued, trusted through
//! `SMTP_CA_FILE`: TLS from the first byte (`smtps://`) and STARTTLS
//! required (`?tls=required`), each signing in; one email per job. A server
//! whose certificate is not trusted gets neither the mail nor the password.

use i9_tests::{eventually, smtp::SmtpTls, spawn, Stack, TestApp, TestSmtp, ADMIN};
use serde_json::json;

const USER: &str = "i9-mailer";
const PASSWORD: &str = "mail-Passw0rd-over-tls";

async fn stack_sending_to(smtp: &TestSmtp, trust_ca: bool) -> TestApp {
    let url = smtp.tls_url(USER, PASSWORD);
    let ca = trust_ca.then(|| smtp.ca_file());
    spawn(
        Stack {
            jobs: true,
            ..Stack::default()
        },
        move |c| {
            c.smtp_url = Some(url.into());
            c.smtp_ca_file = ca;
        },
    )
    .await
}

/// A login email and a remote-hire email: two jobs, two messages.
async fn two_emails(app: &TestApp) {
    let token = app.token(ADMIN).await;
    for body in [
        json!({"firstName": "Lee", "lastName": "Park", "locationId": 3, "startDate": "2026-11-05",
               "emailAddress": "lee.park@mail.example", "createLogin": true, "sendLoginEmail": true}),
        json!({"firstName": "Ana", "lastName": "Diaz", "locationId": 3, "startDate": "2026-11-05",
               "emailAddress": "ana.diaz@mail.example", "createRemotehireI9": "yes"}),
    ] {
        let r = app.post_json("/v1/employees", &token, &body).await;
        assert_eq!(r.status(), 201);
    }
}

async fn mail_jobs_done(app: &TestApp) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM processed_jobs WHERE processed_at IS NOT NULL
           AND kind IN ('send_login_email', 'send_remote_hire_email')",
    )
    .fetch_one(app.pool())
    .await
    .unwrap()
}

async fn delivers_over(mode: SmtpTls) {
    let smtp = TestSmtp::start_tls(mode, USER, PASSWORD);
    let app = stack_sending_to(&smtp, true).await;
    two_emails(&app).await;
    eventually("both mail jobs are done", || async {
        mail_jobs_done(&app).await == 2
    })
    .await;
    assert_eq!(smtp.messages().len(), 2, "{mode:?}: one email per job");
    assert_eq!(smtp.to("lee.park@mail.example").len(), 1);
    let remote = smtp.to("ana.diaz@mail.example");
    assert_eq!(remote.len(), 1);
    assert!(
        remote[0].text.contains("/i9/section1/"),
        "the Section 1 link"
    );
    assert_eq!(smtp.sign_ins(), 2, "{mode:?}: signed in over TLS for each");
    assert!(
        app.smtp().messages().is_empty(),
        "nothing went to the stack's plain server"
    );
}

#[tokio::test]
async fn mail_goes_over_tls_from_the_first_byte() {
    delivers_over(SmtpTls::Implicit).await;
}

#[tokio::test]
async fn mail_goes_over_required_starttls() {
    delivers_over(SmtpTls::StartTls).await;
}

#[tokio::test]
async fn a_server_whose_certificate_is_not_trusted_gets_nothing() {
    for mode in [SmtpTls::Implicit, SmtpTls::StartTls] {
        let smtp = TestSmtp::start_tls(mode, USER, PASSWORD);
        let app = stack_sending_to(&smtp, false).await;
        two_emails(&app).await;
        // Each job is tried to the end of its schedule, then dead-lettered.
        eventually("both mail jobs are dead-lettered", || async {
            app.dead_letters().await == 2
        })
        .await;
        assert_eq!(smtp.messages().len(), 0, "{mode:?}");
        assert_eq!(smtp.started(), 0, "{mode:?}: no message began");
        assert_eq!(smtp.sign_ins(), 0, "{mode:?}: the password was never sent");
        assert_eq!(mail_jobs_done(&app).await, 0);
    }
}
