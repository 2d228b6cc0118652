//! The steady mixed load: a few clients of the public API, each pacing
//! itself, behaving as a careful real client would. Every POST carries an
//! `Idempotency-Key`; a 5xx, a timeout or a connection error is retried with
//! the same key and body (backoff, `Retry-After` honoured, bounded in time)
//! until an answer that is not a 5xx. A 401 signs in again. Every write is
//! recorded with its final answer and what it should produce.

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use reqwest::{header::CONTENT_TYPE, StatusCode};
use serde_json::{json, Value};
use tokio::sync::watch;

/// The HR portal client and its administrator (fixtures/org.json).
pub const PORTAL: (&str, &str) = ("acme-hr-portal", "portal-secret-change-me");
pub const ADMIN: (&str, &str) = ("admin", "admin-Passw0rd!");
/// The partner client and its integration user (docs/partners.md).
pub const PARTNER: (&str, &str) = ("greenhouse-ats", "ats-secret-change-me");
pub const ATS_BOT: (&str, &str) = ("ats.bot", "ats-Passw0rd!");

/// Limit on one HTTP attempt.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// A client gives a request up after retrying it this long.
pub const GIVE_UP_AFTER: Duration = Duration::from_secs(180);
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(4);
/// Tokens are renewed this often (a refresh grant, every fourth time a password sign-in).
const RENEW_TOKENS: Duration = Duration::from_secs(30);
/// A failed sign-in (unknown user) this often per client, so `throttle` sees use
/// (below the default throttling: docs/api.md, "Throttling").
const FAILED_SIGN_IN_EVERY: Duration = Duration::from_secs(60);

/// The kinds of writes, and what each should produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    /// `POST /v1/employees` with `createI9: "yes"`: an employee and an I-9.
    CreateI9,
    /// With `createRemotehireI9: "yes"`: an employee, an I-9 and one email.
    RemoteHire,
    /// With `createLogin` and `sendLoginEmail`: an employee and one email.
    Login,
    /// `PATCH /v1/employees/{id}` of `jobTitle`: the value stays.
    Patch,
    /// `POST /v1/partners/i9s/section1` (on-site): an employee, an I-9 and one callback.
    Partner,
}

impl Op {
    /// The mix, repeated by every client.
    const MIX: [Op; 10] = [
        Op::CreateI9,
        Op::Partner,
        Op::RemoteHire,
        Op::Patch,
        Op::CreateI9,
        Op::Login,
        Op::Partner,
        Op::Patch,
        Op::CreateI9,
        Op::RemoteHire,
    ];

    pub fn creates(self) -> bool {
        self != Op::Patch
    }
    pub fn makes_i9(self) -> bool {
        matches!(self, Op::CreateI9 | Op::RemoteHire | Op::Partner)
    }
    pub fn makes_email(self) -> bool {
        matches!(self, Op::RemoteHire | Op::Login)
    }
    pub fn makes_callback(self) -> bool {
        self == Op::Partner
    }
}

#[derive(Debug, Clone)]
pub enum Outcome {
    /// 2xx: the service took it.
    Acked { id: i64 },
    /// A 4xx (never expected from this load): the status and the start of the body.
    Refused { status: u16, body: String },
    /// Still 5xx or unreachable after retrying for [`GIVE_UP_AFTER`]: unknown.
    GaveUp { last: String },
}

/// One write of the load.
#[derive(Debug, Clone)]
pub struct Write {
    pub op: Op,
    /// The key that ties the write to its effects: the `profileId`, the
    /// partner's candidate id, or (for PATCH) the employee id.
    pub marker: String,
    /// The email address its email goes to, if any.
    pub email: Option<String>,
    /// PATCH: the `jobTitle` written.
    pub value: Option<String>,
    /// When the final answer arrived.
    pub finished: Instant,
    pub attempts: u32,
    pub outcome: Outcome,
}

impl Write {
    pub fn acked_id(&self) -> Option<i64> {
        match self.outcome {
            Outcome::Acked { id } => Some(id),
            _ => None,
        }
    }
}

/// One HTTP attempt's answer.
#[derive(Debug, Clone)]
pub struct Answer {
    pub sent: Instant,
    pub at: Instant,
    /// The status, or `None` for a transport error (timeout, refused, reset).
    pub status: Option<u16>,
}

#[derive(Default)]
pub struct Log {
    pub writes: Mutex<Vec<Write>>,
    pub answers: Mutex<Vec<Answer>>,
}

impl Log {
    fn answer(&self, a: Answer) {
        if let Ok(mut v) = self.answers.lock() {
            v.push(a);
        }
    }

    pub fn writes(&self) -> Vec<Write> {
        self.writes.lock().map(|w| w.clone()).unwrap_or_default()
    }

    pub fn answers(&self) -> Vec<Answer> {
        self.answers.lock().map(|a| a.clone()).unwrap_or_default()
    }
}

#[derive(Clone)]
pub struct Target {
    pub base_url: String,
    pub location_id: i64,
    /// Unique per phase: every profileId, candidate id and address starts with it.
    pub tag: String,
}

/// The running clients.
pub struct Traffic {
    pub log: Arc<Log>,
    stop: watch::Sender<bool>,
    tasks: tokio::task::JoinSet<()>,
}

impl Traffic {
    pub fn start(target: &Target, clients: usize, rate: f64) -> anyhow::Result<Self> {
        let log = Arc::new(Log::default());
        let (stop, rx) = watch::channel(false);
        let http = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .connect_timeout(Duration::from_secs(5))
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        let period = Duration::from_secs_f64(clients as f64 / rate);
        let mut tasks = tokio::task::JoinSet::new();
        for n in 0..clients {
            let client = Client {
                n,
                http: http.clone(),
                target: target.clone(),
                log: log.clone(),
                portal: Session::new(PORTAL, ADMIN),
                partner: Session::new(PARTNER, ATS_BOT),
                own: Vec::new(),
                seq: 0,
                // The first failed sign-in comes 10 s in.
                last_failed_sign_in: Instant::now()
                    .checked_sub(FAILED_SIGN_IN_EVERY - Duration::from_secs(10))
                    .unwrap_or_else(Instant::now),
            };
            tasks.spawn(client.run(period, rx.clone()));
        }
        Ok(Self { log, stop, tasks })
    }

    /// Stop starting operations; wait for those under way (each bounded by its retries).
    pub async fn stop(mut self) -> Arc<Log> {
        let _ = self.stop.send(true);
        while self.tasks.join_next().await.is_some() {}
        self.log
    }
}

struct Session {
    client: (&'static str, &'static str),
    user: (&'static str, &'static str),
    access: Option<String>,
    refresh: Option<String>,
    renewed: Instant,
    renewals: u32,
}

impl Session {
    fn new(client: (&'static str, &'static str), user: (&'static str, &'static str)) -> Self {
        Self {
            client,
            user,
            access: None,
            refresh: None,
            renewed: Instant::now(),
            renewals: 0,
        }
    }
}

struct Client {
    n: usize,
    http: reqwest::Client,
    target: Target,
    log: Arc<Log>,
    portal: Session,
    partner: Session,
    /// Employees this client created (acknowledged), to PATCH.
    own: Vec<i64>,
    seq: u64,
    last_failed_sign_in: Instant,
}

/// The final answer of a request after retries.
enum Final {
    Answer(StatusCode, Value),
    GaveUp(String),
}

impl Client {
    async fn run(mut self, period: Duration, mut stop: watch::Receiver<bool>) {
        // Clients start spread over one period, so the load is even.
        let offset = period.mul_f64(self.n as f64 / 8.0);
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + offset, period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut i = self.n;
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = stop.changed() => return,
            }
            if *stop.borrow() {
                return;
            }
            let op = Op::MIX[i % Op::MIX.len()];
            i += 1;
            self.operation(op).await;
            if self.last_failed_sign_in.elapsed() >= FAILED_SIGN_IN_EVERY {
                self.last_failed_sign_in = Instant::now();
                self.failed_sign_in().await;
            }
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.target.base_url)
    }

    fn next_marker(&mut self, kind: &str) -> String {
        self.seq += 1;
        format!("{}-{}{}-{}", self.target.tag, kind, self.n, self.seq)
    }

    async fn operation(&mut self, op: Op) {
        let (method, path, body, marker, email, value, partner) = match op {
            Op::Patch => {
                let Some(&id) = self.own.get(self.seq as usize % self.own.len().max(1)) else {
                    return; // nothing of ours to PATCH yet
                };
                let value = self.next_marker("t");
                // PATCH requires these three (docs/api.md); they stay as created.
                let body = json!({
                    "firstName": "Fault", "lastName": "Load",
                    "locationId": self.target.location_id, "jobTitle": value,
                });
                (
                    reqwest::Method::PATCH,
                    format!("/v1/employees/{id}"),
                    body,
                    id.to_string(),
                    None,
                    Some(value),
                    false,
                )
            }
            Op::Partner => {
                let marker = self.next_marker("c");
                let email = format!("{marker}@load.example");
                let body = json!({
                    "integrationCandidateId": marker, "onboardingType": "on-site",
                    "firstName": "Fault", "lastName": "Partner", "emailAddress": email,
                    "startDate": "2026-12-01", "locationId": self.target.location_id,
                });
                (
                    reqwest::Method::POST,
                    "/v1/partners/i9s/section1".to_owned(),
                    body,
                    marker,
                    None,
                    None,
                    true,
                )
            }
            _ => {
                let marker = self.next_marker("e");
                let email = format!("{marker}@load.example");
                let mut body = json!({
                    "firstName": "Fault", "lastName": "Load", "locationId": self.target.location_id,
                    "startDate": "2026-12-01", "profileId": marker, "emailAddress": email,
                });
                match op {
                    Op::CreateI9 => body["createI9"] = "yes".into(),
                    Op::RemoteHire => body["createRemotehireI9"] = "yes".into(),
                    _ => {
                        body["createLogin"] = true.into();
                        body["sendLoginEmail"] = true.into();
                    }
                }
                let email = op.makes_email().then_some(email);
                (
                    reqwest::Method::POST,
                    "/v1/employees".to_owned(),
                    body,
                    marker,
                    email,
                    None,
                    false,
                )
            }
        };
        let key = (method == reqwest::Method::POST).then(|| uuid::Uuid::new_v4().to_string());
        let (result, attempts) = self
            .request(method, &path, &body, key.as_deref(), partner)
            .await;
        let outcome = match result {
            Final::Answer(status, v) if status.is_success() => {
                let id = if op == Op::Patch {
                    marker.parse().unwrap_or_default()
                } else {
                    v["id"].as_i64().unwrap_or_default()
                };
                if op.creates() && op != Op::Partner {
                    self.own.push(id);
                }
                Outcome::Acked { id }
            }
            Final::Answer(status, v) => Outcome::Refused {
                status: status.as_u16(),
                body: v.to_string().chars().take(300).collect(),
            },
            Final::GaveUp(last) => Outcome::GaveUp { last },
        };
        if let Ok(mut w) = self.log.writes.lock() {
            w.push(Write {
                op,
                marker,
                email,
                value,
                finished: Instant::now(),
                attempts,
                outcome,
            });
        }
    }

    /// Send until an answer that is not a 5xx, or give up; (final, attempts).
    async fn request(
        &mut self,
        method: reqwest::Method,
        path: &str,
        body: &Value,
        key: Option<&str>,
        partner: bool,
    ) -> (Final, u32) {
        let first = Instant::now();
        let mut backoff = FIRST_BACKOFF;
        let mut attempts = 0;
        let mut signed_in_again = false;
        loop {
            let token = match self.token(partner).await {
                Ok(t) => Some(t),
                Err(e) if first.elapsed() > GIVE_UP_AFTER => return (Final::GaveUp(e), attempts),
                Err(_) => None,
            };
            if let Some(token) = token {
                attempts += 1;
                let mut r = self
                    .http
                    .request(method.clone(), self.url(path))
                    .bearer_auth(token)
                    .header(CONTENT_TYPE, "application/json")
                    .body(body.to_string());
                if let Some(k) = key {
                    r = r.header("Idempotency-Key", k);
                }
                let sent = Instant::now();
                match r.send().await {
                    Ok(resp) => {
                        let status = resp.status();
                        let retry_after = resp
                            .headers()
                            .get("retry-after")
                            .and_then(|v| v.to_str().ok())
                            .and_then(|v| v.parse::<u64>().ok());
                        let v: Value = resp.json().await.unwrap_or(Value::Null);
                        self.log.answer(Answer {
                            sent,
                            at: Instant::now(),
                            status: Some(status.as_u16()),
                        });
                        if status == StatusCode::UNAUTHORIZED && !signed_in_again {
                            // The token expired or was purged: sign in again, once.
                            signed_in_again = true;
                            self.session(partner).access = None;
                            continue;
                        }
                        if !status.is_server_error() {
                            return (Final::Answer(status, v), attempts);
                        }
                        if first.elapsed() > GIVE_UP_AFTER {
                            return (Final::GaveUp(format!("HTTP {}", status.as_u16())), attempts);
                        }
                        if let Some(secs) = retry_after {
                            backoff = backoff.max(Duration::from_secs(secs.min(5)));
                        }
                    }
                    Err(e) => {
                        self.log.answer(Answer {
                            sent,
                            at: Instant::now(),
                            status: None,
                        });
                        if first.elapsed() > GIVE_UP_AFTER {
                            return (Final::GaveUp(transport(&e)), attempts);
                        }
                    }
                }
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }

    fn session(&mut self, partner: bool) -> &mut Session {
        if partner {
            &mut self.partner
        } else {
            &mut self.portal
        }
    }

    /// A valid access token: the one in hand, renewed now and then. `Err`: why none.
    async fn token(&mut self, partner: bool) -> Result<String, String> {
        let http = self.http.clone();
        let url = self.url("/oauth2/access_token");
        let log = self.log.clone();
        let s = self.session(partner);
        if let Some(t) = &s.access {
            if s.renewed.elapsed() < RENEW_TOKENS {
                return Ok(t.clone());
            }
        }
        let mut form = vec![("client_id", s.client.0), ("client_secret", s.client.1)];
        let refresh = s.refresh.clone();
        let use_refresh = refresh.is_some() && s.renewals % 4 != 3;
        if use_refresh {
            form.push(("grant_type", "refresh_token"));
            form.push(("refresh_token", refresh.as_deref().unwrap_or_default()));
        } else {
            form.extend([
                ("grant_type", "password"),
                ("username", s.user.0),
                ("password", s.user.1),
            ]);
        }
        let sent = Instant::now();
        let result = http.post(&url).form(&form).send().await;
        let status = result.as_ref().ok().map(|r| r.status().as_u16());
        log.answer(Answer {
            sent,
            at: Instant::now(),
            status,
        });
        let resp = result.map_err(|e| transport(&e))?;
        let code = resp.status();
        let v: Value = resp.json().await.unwrap_or(Value::Null);
        if code.is_success() {
            let access = v["access_token"].as_str().map(str::to_owned);
            s.access.clone_from(&access);
            s.refresh = v["refresh_token"].as_str().map(str::to_owned);
            s.renewed = Instant::now();
            s.renewals += 1;
            return access.ok_or_else(|| "a token answer without access_token".to_owned());
        }
        if code.is_client_error() && use_refresh {
            // The refresh token expired or was purged: a password sign-in next.
            s.refresh = None;
        }
        Err(format!("sign-in answered HTTP {}", code.as_u16()))
    }

    /// A sign-in of an unknown user (401 or 429 expected; not retried).
    async fn failed_sign_in(&mut self) {
        let login = format!("{}-nobody-{}", self.target.tag, self.n);
        let form = [
            ("grant_type", "password"),
            ("client_id", PORTAL.0),
            ("client_secret", PORTAL.1),
            ("username", login.as_str()),
            ("password", "not-the-password"),
        ];
        let sent = Instant::now();
        let r = self
            .http
            .post(self.url("/oauth2/access_token"))
            .form(&form)
            .send()
            .await;
        self.log.answer(Answer {
            sent,
            at: Instant::now(),
            status: r.ok().map(|r| r.status().as_u16()),
        });
    }
}

fn transport(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "timeout".to_owned()
    } else if e.is_connect() {
        "connection refused".to_owned()
    } else {
        "connection error".to_owned()
    }
}
