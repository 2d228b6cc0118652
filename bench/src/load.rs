//! The load: keep-alive connections each sending one kind of request back to
//! back for a fixed time (a [`Target`] builds each request: a `POST` of a new
//! employee, a `GET` of a random seeded one, ...), and the time-to-I-9 samples.

use std::{
    collections::BTreeMap,
    sync::{
        atomic::{AtomicU64, AtomicUsize, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use anyhow::Context as _;
use axum::body::Bytes;
use hdrhistogram::Histogram;
use reqwest::{header::CONTENT_TYPE, StatusCode};
use sqlx::PgPool;

use crate::sys;

/// A hard limit on the requests of one connection in one phase, beside the deadline.
const MAX_REQUESTS_PER_CONNECTION: u64 = 2_000_000;
/// Limit on one request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one time-to-I-9 sample may wait for its I-9.
const I9_DEADLINE: Duration = Duration::from_secs(30);
const I9_POLL: Duration = Duration::from_millis(2);
/// Latencies are recorded in microseconds, up to this many.
const MAX_MICROS: u64 = 120_000_000;

/// Builds one request of a target; the `u64` is random, for picking a
/// record or a search among the seeded ones.
pub type Build = Arc<dyn Fn(&reqwest::Client, u64) -> reqwest::RequestBuilder + Send + Sync>;

/// One kind of request to one program, and the status that counts as done.
#[derive(Clone)]
pub struct Target {
    pub name: String,
    pub expect: StatusCode,
    pub build: Build,
}

impl Target {
    pub fn new(
        name: impl Into<String>,
        expect: StatusCode,
        build: impl Fn(&reqwest::Client, u64) -> reqwest::RequestBuilder + Send + Sync + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            expect,
            build: Arc::new(build),
        }
    }

    /// `POST`s of new employees (the body of [`body`]) to `url`.
    pub fn post_employee(
        name: impl Into<String>,
        url: String,
        token: Option<String>,
        location_id: i64,
        ids: Arc<ProfileIds>,
    ) -> Self {
        Self::new(name, StatusCode::CREATED, move |client, _| {
            let mut request = client
                .post(&url)
                .header(CONTENT_TYPE, "application/json")
                .body(body(location_id, &ids, false));
            if let Some(token) = &token {
                request = request.bearer_auth(token);
            }
            request
        })
    }
}

/// Where the time-to-I-9 samples `POST` (with `createI9: "yes"`).
#[derive(Debug, Clone)]
pub struct I9Target {
    pub url: String,
    pub token: Option<String>,
    pub location_id: i64,
}

/// Unique `profileId`s across the whole run.
pub struct ProfileIds {
    prefix: String,
    next: AtomicU64,
}

impl ProfileIds {
    pub fn new(run_id: &str) -> Arc<Self> {
        Arc::new(Self {
            prefix: format!("b{}-", &run_id[..run_id.len().min(8)]),
            next: AtomicU64::new(1),
        })
    }

    pub fn next(&self) -> String {
        format!(
            "{}{}",
            self.prefix,
            self.next.fetch_add(1, Ordering::Relaxed)
        )
    }
}

pub struct Settings {
    pub connections: usize,
    pub warmup: Duration,
    pub duration: Duration,
}

pub struct I9Settings {
    pub samples: usize,
    pub concurrency: usize,
}

/// What one measured phase counted.
pub struct LoadResult {
    /// Responses with the target's expected status.
    pub ok: u64,
    /// Everything else, by status or transport error.
    pub errors: BTreeMap<String, u64>,
    pub first_error: Option<String>,
    pub elapsed: Duration,
    /// Latency of the counted responses, in microseconds.
    pub latency: Histogram<u64>,
    pub cpu: sys::CpuUsage,
}

impl LoadResult {
    pub fn requests_per_second(&self) -> f64 {
        self.ok as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }
}

/// What the time-to-I-9 samples measured.
pub struct I9Result {
    /// Samples whose I-9 appeared.
    pub ok: u64,
    pub failures: BTreeMap<String, u64>,
    pub first_error: Option<String>,
    /// From just before the POST to the I-9 row, in microseconds.
    pub latency: Histogram<u64>,
}

impl I9Result {
    pub fn failure_count(&self) -> u64 {
        self.failures.values().sum()
    }
}

/// Milliseconds at quantile `q` of a histogram in microseconds.
pub fn quantile_ms(h: &Histogram<u64>, q: f64) -> f64 {
    h.value_at_quantile(q) as f64 / 1000.0
}

fn histogram() -> anyhow::Result<Histogram<u64>> {
    Histogram::new_with_bounds(1, MAX_MICROS, 3).context("creating a latency histogram")
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

fn client(connections: usize) -> anyhow::Result<reqwest::Client> {
    reqwest::Client::builder()
        .pool_max_idle_per_host(connections)
        .tcp_nodelay(true)
        .timeout(REQUEST_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .context("building the HTTP client")
}

/// A new employee: unique `profileId`, no SSN.
pub fn body(location_id: i64, ids: &ProfileIds, create_i9: bool) -> String {
    let mut v = serde_json::json!({
        "firstName": "Bench",
        "lastName": "Load",
        "locationId": location_id,
        "startDate": "2026-11-05",
        "profileId": ids.next(),
    });
    if create_i9 {
        v["createI9"] = "yes".into();
    }
    v.to_string()
}

/// Send `request` and read its body to the end (so the connection is reused).
async fn send(request: reqwest::RequestBuilder) -> Result<(StatusCode, Bytes), String> {
    let kind = |e: reqwest::Error| {
        if e.is_timeout() {
            "transport: timeout".to_owned()
        } else if e.is_connect() {
            "transport: connect".to_owned()
        } else {
            format!("transport: {e}")
        }
    };
    let response = request.send().await.map_err(kind)?;
    let status = response.status();
    let bytes = response.bytes().await.map_err(kind)?;
    Ok((status, bytes))
}

/// One POST of a time-to-I-9 sample.
async fn post(
    client: &reqwest::Client,
    target: &I9Target,
    body: String,
) -> Result<(StatusCode, Bytes), String> {
    let mut request = client
        .post(&target.url)
        .header(CONTENT_TYPE, "application/json")
        .body(body);
    if let Some(token) = &target.token {
        request = request.bearer_auth(token);
    }
    send(request).await
}

fn describe(status: StatusCode, body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text: String = text.chars().take(300).collect();
    format!("HTTP {}: {text}", status.as_u16())
}

struct Tally {
    ok: u64,
    errors: BTreeMap<String, u64>,
    first_error: Option<String>,
    latency: Histogram<u64>,
}

impl Tally {
    fn new() -> anyhow::Result<Self> {
        Ok(Self {
            ok: 0,
            errors: BTreeMap::new(),
            first_error: None,
            latency: histogram()?,
        })
    }

    fn error(&mut self, key: String, detail: String) {
        *self.errors.entry(key).or_default() += 1;
        self.first_error.get_or_insert(detail);
    }

    fn merge(&mut self, other: Tally) -> anyhow::Result<()> {
        self.ok += other.ok;
        for (k, n) in other.errors {
            *self.errors.entry(k).or_default() += n;
        }
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
        self.latency
            .add(&other.latency)
            .context("merging latency histograms")
    }
}

/// `connections` tasks sending back to back until `duration` has passed.
async fn phase(
    client: &reqwest::Client,
    target: &Arc<Target>,
    connections: usize,
    duration: Duration,
) -> anyhow::Result<(Tally, Duration)> {
    let start = Instant::now();
    let deadline = start + duration;
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..connections {
        let (client, target) = (client.clone(), target.clone());
        tasks.spawn(async move {
            let mut tally = Tally::new()?;
            let mut sent = 0;
            while sent < MAX_REQUESTS_PER_CONNECTION && Instant::now() < deadline {
                sent += 1;
                let request = (target.build)(&client, rand::random());
                let t0 = Instant::now();
                match send(request).await {
                    Ok((status, _)) if status == target.expect => {
                        tally.ok += 1;
                        tally.latency.saturating_record(micros(t0.elapsed()));
                    }
                    Ok((status, bytes)) => {
                        tally.error(
                            format!("HTTP {}", status.as_u16()),
                            describe(status, &bytes),
                        );
                    }
                    Err(e) => {
                        tally.error(e.clone(), e);
                        // No hot loop against a program that is not answering.
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
            }
            anyhow::Ok(tally)
        });
    }
    let mut total = Tally::new()?;
    while let Some(joined) = tasks.join_next().await {
        total.merge(joined.context("a load task failed")??)?;
    }
    Ok((total, start.elapsed()))
}

/// Warm up, then measure throughput and latency under `settings.connections`.
pub async fn throughput(target: &Target, settings: &Settings) -> anyhow::Result<LoadResult> {
    let client = client(settings.connections)?;
    let target = Arc::new(target.clone());
    if !settings.warmup.is_zero() {
        let (warm, _) = phase(&client, &target, settings.connections, settings.warmup).await?;
        if warm.ok == 0 {
            anyhow::bail!(
                "{}: no request succeeded during the warm-up; first error: {}",
                target.name,
                warm.first_error.unwrap_or_default()
            );
        }
    }
    let before = sys::CpuSnapshot::take();
    let (tally, elapsed) = phase(&client, &target, settings.connections, settings.duration).await?;
    let cpu = before.usage_since();
    Ok(LoadResult {
        ok: tally.ok,
        errors: tally.errors,
        first_error: tally.first_error,
        elapsed,
        latency: tally.latency,
        cpu,
    })
}

/// One sample: POST with `createI9: "yes"` and poll until the employee's I-9
/// exists: the time it took, or (kind, detail) of the failure.
async fn sample(
    client: &reqwest::Client,
    target: &I9Target,
    ids: &ProfileIds,
    pool: &PgPool,
) -> Result<Duration, (String, String)> {
    let body = body(target.location_id, ids, true);
    let t0 = Instant::now();
    let (status, bytes) = post(client, target, body)
        .await
        .map_err(|e| (e.clone(), e))?;
    if status != StatusCode::CREATED {
        return Err((
            format!("HTTP {}", status.as_u16()),
            describe(status, &bytes),
        ));
    }
    let id = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|v| v["id"].as_i64())
        .ok_or_else(|| ("response without id".to_owned(), describe(status, &bytes)))?;
    loop {
        let exists: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM i9s WHERE employee_id = $1)")
                .bind(id)
                .fetch_one(pool)
                .await
                .map_err(|e| ("polling failed".to_owned(), e.to_string()))?;
        if exists {
            return Ok(t0.elapsed());
        }
        if t0.elapsed() > I9_DEADLINE {
            return Err((
                "no I-9 within 30 s".to_owned(),
                format!("employee {id}: no I-9 within 30 s"),
            ));
        }
        tokio::time::sleep(I9_POLL).await;
    }
}

/// `count` samples, `concurrency` at a time.
async fn samples(
    client: &reqwest::Client,
    target: &Arc<I9Target>,
    ids: &Arc<ProfileIds>,
    pool: &PgPool,
    count: usize,
    concurrency: usize,
) -> anyhow::Result<Tally> {
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..concurrency.min(count) {
        let (client, target, ids, pool, next) = (
            client.clone(),
            target.clone(),
            ids.clone(),
            pool.clone(),
            next.clone(),
        );
        tasks.spawn(async move {
            let mut tally = Tally::new()?;
            while next.fetch_add(1, Ordering::Relaxed) < count {
                match sample(&client, &target, &ids, &pool).await {
                    Ok(took) => {
                        tally.ok += 1;
                        tally.latency.saturating_record(micros(took));
                    }
                    Err((key, detail)) => tally.error(key, detail),
                }
            }
            anyhow::Ok(tally)
        });
    }
    let mut total = Tally::new()?;
    while let Some(joined) = tasks.join_next().await {
        total.merge(joined.context("a time-to-I-9 task failed")??)?;
    }
    Ok(total)
}

/// Time from the POST to the I-9 row, after a few unmeasured samples.
pub async fn time_to_i9(
    target: &I9Target,
    pool: &PgPool,
    settings: &I9Settings,
    ids: &Arc<ProfileIds>,
) -> anyhow::Result<I9Result> {
    let client = client(settings.concurrency)?;
    let target = Arc::new(target.clone());
    let warm = settings.concurrency;
    samples(&client, &target, ids, pool, warm, settings.concurrency).await?;
    let tally = samples(
        &client,
        &target,
        ids,
        pool,
        settings.samples,
        settings.concurrency,
    )
    .await?;
    Ok(I9Result {
        ok: tally.ok,
        failures: tally.errors,
        first_error: tally.first_error,
        latency: tally.latency,
    })
}
