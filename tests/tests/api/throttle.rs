//! Sign-in throttling (docs/api.md, "Throttling"): failures are counted
//! atomically per username and per client address, growing delays answer
//! 429 with Retry-After before any hashing, a sprayer is delayed by its
//! address without touching other addresses, failed client authentication
//! counts, nothing identifying is stored in clear, and a remembered client
//! secret is forgotten when its client changes.

use std::time::Duration;

use i9_common::config::ThrottleLimit;
use i9_tests::{spawn_app_with, TestApp, ADMIN, PORTAL, WEST_HR};
use serde_json::Value;

/// Limits that never delay (to count failures alone).
const NEVER: ThrottleLimit = ThrottleLimit {
    free_failures: 1_000,
    forget: Duration::from_secs(3600),
};

/// A password sign-in as `address` (through the trusted proxy header when
/// `address` is given).
async fn sign_in(
    app: &TestApp,
    address: Option<&str>,
    client: (&str, &str),
    user: (&str, &str),
) -> reqwest::Response {
    let mut req = app.http.post(app.url("/oauth2/access_token")).form(&[
        ("grant_type", "password"),
        ("client_id", client.0),
        ("client_secret", client.1),
        ("username", user.0),
        ("password", user.1),
    ]);
    if let Some(a) = address {
        req = req.header("x-forwarded-for", a);
    }
    req.send().await.unwrap()
}

/// Polling with a deadline (30 s), 50 ms between attempts.
struct Deadline(tokio::time::Instant);

impl Deadline {
    fn start() -> Self {
        Self(tokio::time::Instant::now() + Duration::from_secs(30))
    }

    async fn again(&self, what: &str) {
        assert!(
            tokio::time::Instant::now() < self.0,
            "timed out waiting for: {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn retry_after(r: &reqwest::Response) -> u64 {
    r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap()
}

/// `(failures, blocked now)` of the one row of `kind`.
async fn row(app: &TestApp, kind: &str) -> (i64, bool) {
    sqlx::query_as(
        "SELECT failures, coalesce(blocked_until > now(), false) FROM throttle WHERE kind = $1",
    )
    .bind(kind)
    .fetch_one(app.pool())
    .await
    .unwrap()
}

async fn rows(app: &TestApp, kind: &str) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM throttle WHERE kind = $1")
        .bind(kind)
        .fetch_one(app.pool())
        .await
        .unwrap()
}

#[tokio::test]
async fn concurrent_failures_are_all_counted_once_each() {
    let app = spawn_app_with(|c| {
        c.sign_in_username = NEVER;
        c.sign_in_address = NEVER;
        // Twenty verifications queue for the turns: none may give up.
        c.password_hash_wait = Duration::from_secs(120);
    })
    .await;
    let attempts = (0..20).map(|_| sign_in(&app, None, PORTAL, (WEST_HR.0, "wrong-password")));
    for r in futures_util::future::join_all(attempts).await {
        assert_eq!(r.status(), 400);
    }
    assert_eq!(rows(&app, "username").await, 1);
    assert_eq!(rows(&app, "address").await, 1);
    assert_eq!(row(&app, "username").await, (20, false));
    assert_eq!(row(&app, "address").await, (20, false));
    // The key is an HMAC: the username is nowhere in the table.
    let clear: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM throttle
         WHERE position(convert_to('west.hr', 'UTF8') IN key) > 0 OR key = sha256(convert_to('west.hr', 'UTF8'))",
    )
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(clear, 0);
}

#[tokio::test]
async fn a_delayed_username_is_refused_even_with_the_right_password_until_the_delay_passes() {
    let app = spawn_app_with(|c| {
        c.sign_in_username = ThrottleLimit {
            free_failures: 3,
            forget: Duration::from_secs(2),
        };
        c.sign_in_address = NEVER;
    })
    .await;
    // Three free failures, then each one delays: find the first 429 (a slow
    // machine may let a delay pass between two attempts; it then grows).
    for _ in 0..3 {
        let r = sign_in(&app, None, PORTAL, (WEST_HR.0, "wrong-password")).await;
        assert_eq!(r.status(), 400);
    }
    let deadline = Deadline::start();
    let r = loop {
        let r = sign_in(&app, None, PORTAL, ("WEST.HR", "wrong-password")).await;
        assert!(r.status() == 400 || r.status() == 429, "{}", r.status());
        if r.status() == 429 {
            break r;
        }
        deadline.again("the username is delayed").await;
    };
    assert_eq!(r.headers()["cache-control"], "no-store");
    let wait = retry_after(&r);
    assert!(
        (1..=4).contains(&wait),
        "at most twice the forget period: {wait}"
    );
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"], "slow_down");
    let (failures, _) = row(&app, "username").await;
    assert!(failures >= 4, "{failures}");

    // Another username from the same address is not affected.
    assert_eq!(sign_in(&app, None, PORTAL, ADMIN).await.status(), 200);

    // The right password waits too; refusals are not counted; once the
    // delay is over it works and clears the username's count.
    let mut answers = Vec::new();
    let deadline = Deadline::start();
    loop {
        let s = sign_in(&app, None, PORTAL, WEST_HR).await.status().as_u16();
        answers.push(s);
        if s == 200 {
            break;
        }
        deadline.again("the delay passes").await;
    }
    assert!(
        answers[..answers.len() - 1].iter().all(|s| *s == 429),
        "{answers:?}"
    );
    assert_eq!(rows(&app, "username").await, 0, "cleared by the sign-in");
}

#[tokio::test]
async fn a_sprayer_is_delayed_by_its_address_while_other_addresses_sign_in() {
    let app = spawn_app_with(|c| {
        c.trusted_proxies = vec!["127.0.0.1/32".parse().unwrap()];
        c.sign_in_username = NEVER;
        c.sign_in_address = ThrottleLimit {
            free_failures: 5,
            forget: Duration::from_secs(600),
        };
    })
    .await;
    let sprayer = Some("203.0.113.9");
    let mut statuses = Vec::new();
    let deadline = Deadline::start();
    for n in 0.. {
        let user = format!("user{n}");
        let s = sign_in(&app, sprayer, PORTAL, (&user, "Summer2026!"))
            .await
            .status()
            .as_u16();
        statuses.push(s);
        if s == 429 {
            break;
        }
        deadline.again("the sprayer's address is delayed").await;
    }
    assert_eq!(&statuses[..5], &[400; 5], "five free failures");
    // Every username was tried once: none of them is delayed by itself.
    assert_eq!(rows(&app, "username").await, (statuses.len() - 1) as i64);
    assert_eq!(rows(&app, "address").await, 1);
    // Hold the delay for the rest of the test.
    sqlx::query(
        "UPDATE throttle SET blocked_until = now() + interval '1 hour' WHERE kind = 'address'",
    )
    .execute(app.pool())
    .await
    .unwrap();
    let (failures, blocked) = row(&app, "address").await;
    assert!(blocked);

    // From the sprayer's address even a real user's right password waits...
    let r = sign_in(&app, sprayer, PORTAL, ADMIN).await;
    assert_eq!(r.status(), 429);
    assert!(retry_after(&r) >= 1);
    // ...while other addresses are not affected, right or wrong.
    assert_eq!(
        sign_in(&app, Some("198.51.100.1"), PORTAL, ADMIN)
            .await
            .status(),
        200
    );
    assert_eq!(
        sign_in(&app, Some("198.51.100.2"), PORTAL, (WEST_HR.0, "typo"))
            .await
            .status(),
        400
    );
    // Refused attempts were not counted; the other addresses have rows of their own.
    assert_eq!(row_of_blocked(&app).await, failures);
    assert_eq!(rows(&app, "address").await, 2);
}

/// Failures of the one delayed address.
async fn row_of_blocked(app: &TestApp) -> i64 {
    sqlx::query_scalar(
        "SELECT failures FROM throttle WHERE kind = 'address' AND blocked_until > now()",
    )
    .fetch_one(app.pool())
    .await
    .unwrap()
}

#[tokio::test]
async fn failed_client_authentication_counts_against_the_address() {
    let app = spawn_app_with(|c| {
        c.trusted_proxies = vec!["127.0.0.1/32".parse().unwrap()];
        c.sign_in_username = NEVER;
        c.sign_in_address = ThrottleLimit {
            free_failures: 2,
            forget: Duration::from_secs(600),
        };
    })
    .await;
    let guesser = Some("203.0.113.50");
    for secret in ["guess-1", "guess-2"] {
        let r = sign_in(&app, guesser, (PORTAL.0, secret), ADMIN).await;
        assert_eq!(r.status(), 401);
    }
    let r = sign_in(&app, guesser, ("no-such-client", "x"), ADMIN).await;
    assert_eq!(r.status(), 401, "an unknown client counts too");
    assert_eq!(row(&app, "address").await.0, 3);
    assert_eq!(rows(&app, "username").await, 0, "no password was tried");
    let deadline = Deadline::start();
    for n in 3.. {
        let secret = format!("guess-{n}");
        let s = sign_in(&app, guesser, (PORTAL.0, &secret), ADMIN)
            .await
            .status();
        assert!(s == 401 || s == 429, "{s}");
        if s == 429 {
            break;
        }
        deadline.again("the guesser's address is delayed").await;
    }
    // Even the right secret waits at that address.
    sqlx::query("UPDATE throttle SET blocked_until = now() + interval '1 hour'")
        .execute(app.pool())
        .await
        .unwrap();
    assert_eq!(sign_in(&app, guesser, PORTAL, ADMIN).await.status(), 429);
    // The right client from another address is not affected.
    assert_eq!(
        sign_in(&app, Some("198.51.100.1"), PORTAL, ADMIN)
            .await
            .status(),
        200
    );
}

#[tokio::test]
async fn a_remembered_client_secret_is_forgotten_when_the_client_changes() {
    // A long cache life: only the change notification can clear it.
    let app = spawn_app_with(|c| c.auth_cache_ttl = Duration::from_secs(3600)).await;
    assert_eq!(sign_in(&app, None, PORTAL, ADMIN).await.status(), 200);
    assert_eq!(sign_in(&app, None, PORTAL, ADMIN).await.status(), 200);
    let new_hash = i9_common::crypto::hash_password("a-new-portal-secret");
    sqlx::query("UPDATE oauth_clients SET secret_hash = $1 WHERE client_id = $2")
        .bind(&new_hash)
        .bind(PORTAL.0)
        .execute(app.pool())
        .await
        .unwrap();
    let deadline = Deadline::start();
    while sign_in(&app, None, PORTAL, ADMIN).await.status() != 401 {
        deadline.again("the old secret is refused").await;
    }
    assert_eq!(
        sign_in(&app, None, (PORTAL.0, "a-new-portal-secret"), ADMIN)
            .await
            .status(),
        200
    );
}

/// The set-password page hashes under the token endpoint's bound: with every
/// turn taken it answers 503 with Retry-After and changes nothing, the link
/// still works, and once a turn is free the password is set exactly once.
#[tokio::test]
async fn the_set_password_page_waits_for_a_hashing_turn_like_the_token_endpoint() {
    let app = spawn_app_with(|c| {
        c.password_hash_concurrency = 1;
        c.password_hash_wait = Duration::from_millis(200);
    })
    .await;
    let token = i9_common::crypto::new_token("pw_");
    sqlx::query(
        "INSERT INTO password_set_tokens (token_hash, user_id, expires_at)
         SELECT $1, id, now() + interval '1 hour' FROM users WHERE login = 'west.hr'",
    )
    .bind(i9_common::crypto::token_hash(&token))
    .execute(app.pool())
    .await
    .unwrap();
    let hash_of_west = || async {
        sqlx::query_scalar::<_, Option<String>>(
            "SELECT password_hash FROM users WHERE login = 'west.hr'",
        )
        .fetch_one(app.pool())
        .await
        .unwrap()
    };
    let before = hash_of_west().await;
    let url = app.url(&format!("/account/set-password/{token}"));
    let form = [
        ("password", "a-long-new-passw0rd"),
        ("confirm", "a-long-new-passw0rd"),
    ];

    let held = app.hashing.turn().await.expect("the only turn");
    let r = app.http.post(&url).form(&form).send().await.unwrap();
    assert_eq!(r.status(), 503);
    assert_eq!(r.headers()["retry-after"], "5");
    assert!(r.text().await.unwrap().contains("your link still works"));
    assert_eq!(hash_of_west().await, before, "nothing written");
    let used: i64 =
        sqlx::query_scalar("SELECT count(*) FROM password_set_tokens WHERE used_at IS NOT NULL")
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert_eq!(used, 0, "the link is not spent");

    drop(held);
    let r = app
        .http
        .post(&url)
        .header("x-request-id", "set-password-1")
        .form(&form)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_ne!(hash_of_west().await, before);
    let set: Vec<Option<String>> =
        sqlx::query_scalar("SELECT request_id FROM audit_log WHERE action = 'password.set'")
            .fetch_all(app.pool())
            .await
            .unwrap();
    assert_eq!(
        set,
        vec![Some("set-password-1".to_owned())],
        "one entry, with the request's id"
    );
    let r = app.http.post(&url).form(&form).send().await.unwrap();
    assert_eq!(r.status(), 404, "the link works once");
}
