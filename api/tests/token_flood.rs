//! The token endpoint under a flood of bad sign-ins, on the real `i9-api`
//! binary (its resident memory read from /proc): password hashing runs
//! under a bound, a delayed address is answered 429 before any hashing, a
//! saturated endpoint answers 503, memory stays flat, and other endpoints
//! keep answering. Then SIGTERM: a request in flight is still answered and
//! the process exits 0.

#![allow(clippy::unwrap_used)] // a test: panics are failures

use std::{
    collections::BTreeMap,
    process::Stdio,
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc,
    },
    time::Duration,
};

use i9_common::{crypto::DataCipher, seed, Config};
use i9_tests::{fixture, TestDb, ADMIN, PORTAL};
use secrecy::ExposeSecret;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
    process::{Child, Command},
};

const FLOOD: usize = 2_000;
const MIB: u64 = 1024 * 1024;

struct Api {
    child: Child,
    base: String,
    port: u16,
    log: std::path::PathBuf,
    _db: TestDb,
}

impl Api {
    /// `i9-api` on a fresh, seeded database with `env` added.
    async fn start(env: &[(&str, &str)]) -> Self {
        let db = TestDb::new().await;
        let cipher = DataCipher::from_config(&Config::for_tests(&db.url));
        seed::load(&db.pool, &cipher, &fixture()).await.unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let base = format!("http://127.0.0.1:{port}");
        let log = std::env::temp_dir().join(format!("i9-api-flood-{port}.log"));
        let out = std::fs::File::create(&log).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_i9-api"));
        cmd.env_remove("DATA_ENCRYPTION_KEY")
            .env_remove("SSN_HASH_KEY")
            .env_remove("LOG_FORMAT")
            .env("APP_ENV", "development")
            .env("DATABASE_URL", &db.url)
            .env("AMQP_URL", i9_tests::amqp_url().expose_secret())
            .env("BIND_ADDR", format!("127.0.0.1:{port}"))
            .env("PUBLIC_BASE_URL", &base)
            .env("API_NO_RELAY", "1")
            .env("RUST_LOG", "warn")
            // One address stands for a crowd here: its connection cap is
            // out of the way (tests/tests/api/connections.rs tests it).
            .env("HTTP_MAX_CONNECTIONS_PER_ADDRESS", "100000")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(out)
            .kill_on_drop(true);
        let api = Self {
            child: cmd.spawn().unwrap(),
            base,
            port,
            log,
            _db: db,
        };
        let http = reqwest::Client::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let up = http.get(api.url("/healthz")).send().await;
            if up.is_ok_and(|r| r.status() == 200) {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "i9-api did not start: {}",
                api.log()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        api
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Resident memory, from /proc.
    fn rss(&self) -> u64 {
        let pid = self.child.id().unwrap();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let kb: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap();
        kb * 1024
    }
}

impl Drop for Api {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.log);
    }
}

/// The answers of a flood, by status (0: no answer).
type Counts = BTreeMap<u16, usize>;

struct Flood {
    counts: Counts,
    /// Peak resident memory minus the memory before.
    growth: u64,
    /// GETs of other endpoints answered 200 during the flood, and others.
    others_ok: u64,
    others_failed: u64,
}

/// `FLOOD` concurrent bad sign-ins of three kinds (an unknown client, a
/// wrong password of a real user, unknown users), each on a connection of
/// its own, while another client GETs `/healthz` and `/v1/roles` with a
/// token taken before.
async fn flood(api: &Api) -> Flood {
    let http = reqwest::Client::new();
    let token: serde_json::Value = http
        .post(api.url("/oauth2/access_token"))
        .form(&[
            ("grant_type", "password"),
            ("client_id", PORTAL.0),
            ("client_secret", PORTAL.1),
            ("username", ADMIN.0),
            ("password", ADMIN.1),
        ])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let token = token["access_token"].as_str().unwrap().to_owned();
    let before = api.rss();

    let done = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(before));
    let (ok, failed) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let watcher = {
        let (done, peak, ok, failed) = (done.clone(), peak.clone(), ok.clone(), failed.clone());
        let (healthz, roles) = (api.url("/healthz"), api.url("/v1/roles"));
        let pid = api.child.id().unwrap();
        tokio::spawn(async move {
            let http = reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .unwrap();
            while !done.load(Ordering::SeqCst) {
                for r in [
                    http.get(&healthz).send().await,
                    http.get(&roles).bearer_auth(&token).send().await,
                ] {
                    match r {
                        Ok(r) if r.status() == 200 => ok.fetch_add(1, Ordering::SeqCst),
                        _ => failed.fetch_add(1, Ordering::SeqCst),
                    };
                }
                if let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
                    let kb: u64 = status
                        .lines()
                        .find_map(|l| l.strip_prefix("VmRSS:"))
                        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
                        .unwrap_or(0);
                    peak.fetch_max(kb * 1024, Ordering::SeqCst);
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };

    let attackers = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let mut set = tokio::task::JoinSet::new();
    for i in 0..FLOOD {
        let http = attackers.clone();
        let url = api.url("/oauth2/access_token");
        set.spawn(async move {
            let user = format!("nobody-{i}");
            let (client, username) = match i % 3 {
                0 => (("no-such-client", "guess"), "admin"),
                1 => (PORTAL, "admin"),
                _ => (PORTAL, user.as_str()),
            };
            let r = http
                .post(url)
                .form(&[
                    ("grant_type", "password"),
                    ("client_id", client.0),
                    ("client_secret", client.1),
                    ("username", username),
                    ("password", "wrong-password"),
                ])
                .send()
                .await;
            match r {
                Ok(r) => {
                    let status = r.status().as_u16();
                    if matches!(status, 429 | 503) {
                        assert!(r.headers().contains_key("retry-after"), "{status}");
                        assert_eq!(r.headers()["cache-control"], "no-store");
                    }
                    status
                }
                Err(_) => 0,
            }
        });
    }
    let mut counts = Counts::new();
    while let Some(status) = set.join_next().await {
        *counts.entry(status.unwrap()).or_default() += 1;
    }
    done.store(true, Ordering::SeqCst);
    watcher.await.unwrap();
    let growth = peak
        .load(Ordering::SeqCst)
        .max(api.rss())
        .saturating_sub(before);
    eprintln!(
        "flood: answers {counts:?}; RSS before {} MiB, peak growth {:.1} MiB; other GETs {} ok, {} failed",
        before / MIB,
        growth as f64 / MIB as f64,
        ok.load(Ordering::SeqCst),
        failed.load(Ordering::SeqCst)
    );
    Flood {
        counts,
        growth,
        others_ok: ok.load(Ordering::SeqCst),
        others_failed: failed.load(Ordering::SeqCst),
    }
}

fn count(counts: &Counts, statuses: &[u16]) -> usize {
    statuses.iter().filter_map(|s| counts.get(s)).sum()
}

/// What every flood must show.
fn assert_bounded(api: &Api, f: &Flood) {
    assert_eq!(
        count(&f.counts, &[400, 401, 429, 503]),
        FLOOD,
        "only wrong-credential, throttled and busy answers: {:?}\n{}",
        f.counts,
        api.log()
    );
    assert!(
        f.growth < 100 * MIB,
        "resident memory grew by {} MiB",
        f.growth / MIB
    );
    assert!(f.others_ok >= 2, "other endpoints answered meanwhile");
    assert_eq!(f.others_failed, 0, "every other GET answered 200");
}

#[tokio::test]
async fn a_flood_of_bad_sign_ins_from_one_address_is_throttled_in_bounded_memory() {
    let api = Api::start(&[]).await;
    let f = flood(&api).await;
    assert_bounded(&api, &f);
    // The address is delayed after its free failures (20 by default); the
    // rest of the flood is refused before any hashing, at once.
    assert!(count(&f.counts, &[400, 401]) >= 20, "{:?}", f.counts);
    assert!(count(&f.counts, &[429]) > 0, "{:?}", f.counts);
}

#[tokio::test]
async fn a_flood_past_the_throttle_is_shed_with_503_in_bounded_memory() {
    // Throttling out of the way: every request wants a verification.
    let api = Api::start(&[
        ("SIGN_IN_ADDRESS_FAILURES", "1000000"),
        ("SIGN_IN_USERNAME_FAILURES", "1000000"),
    ])
    .await;
    let f = flood(&api).await;
    assert_bounded(&api, &f);
    assert_eq!(count(&f.counts, &[429]), 0, "{:?}", f.counts);
    // Thousands of argon2id verifications do not fit in the 2 s wait, nor
    // thousands of requests in the admission bound.
    assert!(count(&f.counts, &[503]) > 0, "{:?}", f.counts);
    assert!(count(&f.counts, &[400, 401]) > 0, "{:?}", f.counts);
}

#[tokio::test]
async fn sigterm_lets_a_request_in_flight_finish_and_exits_zero() {
    let mut api = Api::start(&[]).await;
    // A request whose body is half sent.
    let body = "grant_type=password&client_id=acme-hr-portal&client_secret=portal-secret-change-me\
                &username=admin&password=admin-Passw0rd%21";
    let (first, rest) = body.split_at(30);
    let mut stream = TcpStream::connect(("127.0.0.1", api.port)).await.unwrap();
    let head = format!(
        "POST /oauth2/access_token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{first}",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    // An idle kept-alive connection must not hold the shutdown up.
    let mut idle = TcpStream::connect(("127.0.0.1", api.port)).await.unwrap();
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut status = [0u8; 12];
    idle.read_exact(&mut status).await.unwrap();
    assert_eq!(&status, b"HTTP/1.1 200");

    let pid = api.child.id().unwrap().to_string();
    let killed = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .await
        .unwrap();
    assert!(killed.success());
    // Shutdown has begun once new connections are refused.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", api.port)).await.is_ok() {
        assert!(tokio::time::Instant::now() < deadline, "still accepting");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stream.write_all(rest.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("access_token"));
    let exit = tokio::time::timeout(Duration::from_secs(30), api.child.wait())
        .await
        .expect("the process exits")
        .unwrap();
    assert_eq!(exit.code(), Some(0), "{}", api.log());
}
