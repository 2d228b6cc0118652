//! Where the service's effects land, counted: an SMTP server (mailin-embedded,
//! as the tests use) behind a gate that can close its port, and the partner's
//! callback endpoint (axum), which can answer 503. Both record everything
//! that arrives, so duplicates show.

use std::{
    collections::HashMap,
    net::TcpListener as StdListener,
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc, Mutex,
    },
    time::Instant,
};

use anyhow::Context as _;
use axum::{body::Bytes, extract::State, http::HeaderMap, http::StatusCode, routing::post, Router};
use mailin_embedded::{response, Handler, Response, Server, SslConfig};
use tokio::{
    net::{TcpListener, TcpStream},
    sync::watch,
};

/// One email as received.
#[derive(Debug, Clone)]
pub struct Mail {
    pub message_id: String,
    pub to: Vec<String>,
    pub at: Instant,
}

#[derive(Clone, Default)]
struct Collector {
    inbox: Arc<Mutex<Vec<Mail>>>,
    to: Vec<String>,
    data: Vec<u8>,
}

impl Handler for Collector {
    fn data_start(&mut self, _domain: &str, _from: &str, _is8bit: bool, to: &[String]) -> Response {
        self.to = to.iter().map(|t| t.to_ascii_lowercase()).collect();
        self.data.clear();
        response::START_DATA
    }

    fn data(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.data.extend_from_slice(buf);
        Ok(())
    }

    fn data_end(&mut self) -> Response {
        let message_id = mail_parser::MessageParser::default()
            .parse(&self.data)
            .and_then(|m| m.message_id().map(str::to_owned))
            .unwrap_or_default();
        if let Ok(mut inbox) = self.inbox.lock() {
            inbox.push(Mail {
                message_id,
                to: std::mem::take(&mut self.to),
                at: Instant::now(),
            });
        }
        response::OK
    }
}

/// A TCP port that forwards to `target` while up, and is closed (connections
/// refused, open ones cut) while down.
struct Gate {
    port: u16,
    up: watch::Sender<bool>,
}

impl Gate {
    async fn start(target: u16) -> anyhow::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let (up, rx) = watch::channel(true);
        tokio::spawn(gate(Some(listener), port, target, rx));
        Ok(Self { port, up })
    }

    fn set(&self, up: bool) {
        self.up.send_if_modified(|v| std::mem::replace(v, up) != up);
    }
}

async fn gate(
    mut listener: Option<TcpListener>,
    port: u16,
    target: u16,
    mut rx: watch::Receiver<bool>,
) {
    loop {
        let up = *rx.borrow_and_update();
        if !up {
            listener = None; // the port is closed
            if rx.changed().await.is_err() {
                return;
            }
            continue;
        }
        let l = match listener.take() {
            Some(l) => l,
            None => match TcpListener::bind(("127.0.0.1", port)).await {
                Ok(l) => l,
                Err(e) => {
                    eprintln!("faults: cannot reopen the SMTP port {port}: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                    continue;
                }
            },
        };
        loop {
            tokio::select! {
                accepted = l.accept() => {
                    if let Ok((inbound, _)) = accepted {
                        tokio::spawn(pipe(inbound, target, rx.clone()));
                    }
                }
                changed = rx.changed() => {
                    if changed.is_err() { return; }
                    break;
                }
            }
        }
    }
}

async fn pipe(mut inbound: TcpStream, target: u16, mut up: watch::Receiver<bool>) {
    let Ok(mut outbound) = TcpStream::connect(("127.0.0.1", target)).await else {
        return;
    };
    tokio::select! {
        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
        _ = up.wait_for(|up| !*up) => {}
    }
}

/// One callback answered 2xx.
#[derive(Debug, Clone)]
pub struct Callback {
    pub webhook_id: String,
    pub candidate: String,
    pub signature_ok: bool,
    pub at: Instant,
}

#[derive(Clone)]
struct Partner {
    down: Arc<AtomicBool>,
    delivered: Arc<Mutex<Vec<Callback>>>,
    /// Requests refused with 503, in all and per webhook-id.
    refused: Arc<AtomicU64>,
    refused_by_event: Arc<Mutex<HashMap<String, u32>>>,
    webhook: Arc<Option<standardwebhooks::Webhook>>,
}

async fn hook(State(p): State<Partner>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let id = headers
        .get("webhook-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    if p.down.load(Ordering::SeqCst) {
        p.refused.fetch_add(1, Ordering::SeqCst);
        if let Ok(mut m) = p.refused_by_event.lock() {
            *m.entry(id).or_default() += 1;
        }
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    let payload: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let signature_ok = p
        .webhook
        .as_ref()
        .as_ref()
        .is_some_and(|wh| wh.verify(&body, &headers).is_ok());
    if let Ok(mut d) = p.delivered.lock() {
        d.push(Callback {
            webhook_id: id,
            candidate: payload["integrationCandidateId"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            signature_ok,
            at: Instant::now(),
        });
    }
    StatusCode::NO_CONTENT
}

/// What the sinks have counted since the last reset.
#[derive(Debug, Clone, Default)]
pub struct Received {
    pub mails: Vec<Mail>,
    pub callbacks: Vec<Callback>,
    pub refused_callbacks: u64,
    /// The most 503s one event got.
    pub most_refusals_of_one_event: u32,
}

pub struct Sinks {
    pub smtp_url: String,
    pub partner_url: String,
    inbox: Arc<Mutex<Vec<Mail>>>,
    gate: Gate,
    partner: Partner,
}

impl Sinks {
    pub async fn start() -> anyhow::Result<Self> {
        // The SMTP server listens on a port of its own; the gate in front is what the worker uses.
        let listener = StdListener::bind("127.0.0.1:0").context("binding the SMTP server")?;
        let inner_port = listener.local_addr()?.port();
        let collector = Collector::default();
        let inbox = collector.inbox.clone();
        let mut server = Server::new(collector);
        server
            .with_name("smtp.faults")
            .with_ssl(SslConfig::None)
            .map_err(|e| anyhow::anyhow!("SMTP server setup: {e}"))?
            .with_tcp_listener(listener);
        std::thread::spawn(move || {
            let _ = server.serve();
        });
        let gate = Gate::start(inner_port).await?;

        let partner = Partner {
            down: Arc::default(),
            delivered: Arc::default(),
            refused: Arc::default(),
            refused_by_event: Arc::default(),
            webhook: Arc::new(
                signing_secret()
                    .ok()
                    .and_then(|s| standardwebhooks::Webhook::new(&s).ok()),
            ),
        };
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .context("binding the partner receiver")?;
        let port = listener.local_addr()?.port();
        let app = Router::new()
            .route("/i9-status", post(hook))
            .with_state(partner.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self {
            smtp_url: format!("smtp://127.0.0.1:{}", gate.port),
            partner_url: format!("http://127.0.0.1:{port}/i9-status"),
            inbox,
            gate,
            partner,
        })
    }

    pub fn smtp_up(&self, up: bool) {
        self.gate.set(up);
    }

    pub fn partner_up(&self, up: bool) {
        self.partner.down.store(!up, Ordering::SeqCst);
    }

    /// Forget everything received (a new phase).
    pub fn reset(&self) {
        self.smtp_up(true);
        self.partner_up(true);
        if let Ok(mut m) = self.inbox.lock() {
            m.clear();
        }
        if let Ok(mut d) = self.partner.delivered.lock() {
            d.clear();
        }
        self.partner.refused.store(0, Ordering::SeqCst);
        if let Ok(mut m) = self.partner.refused_by_event.lock() {
            m.clear();
        }
    }

    pub fn received(&self) -> Received {
        Received {
            mails: self.inbox.lock().map(|m| m.clone()).unwrap_or_default(),
            callbacks: self
                .partner
                .delivered
                .lock()
                .map(|d| d.clone())
                .unwrap_or_default(),
            refused_callbacks: self.partner.refused.load(Ordering::SeqCst),
            most_refusals_of_one_event: self
                .partner
                .refused_by_event
                .lock()
                .map(|m| m.values().copied().max().unwrap_or(0))
                .unwrap_or(0),
        }
    }

    /// Emails and callbacks received so far (cheap; to notice new arrivals).
    pub fn arrivals(&self) -> usize {
        self.inbox.lock().map(|m| m.len()).unwrap_or(0)
            + self.partner.delivered.lock().map(|d| d.len()).unwrap_or(0)
    }
}

/// The partner's signing secret, from the fixture the database is seeded with.
fn signing_secret() -> anyhow::Result<String> {
    let text = std::fs::read_to_string(crate::workspace_root().join("fixtures/org.json"))?;
    let v: serde_json::Value = serde_json::from_str(&text)?;
    v["clients"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["clientId"] == crate::faults::traffic::PARTNER.0)
        .and_then(|c| c["integration"]["signingSecret"].as_str())
        .map(str::to_owned)
        .context("no signing secret of the partner in fixtures/org.json")
}
