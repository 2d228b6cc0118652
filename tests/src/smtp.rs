//! A real SMTP server for tests (mailin-embedded), collecting what it receives.

use std::{
    net::TcpListener,
    sync::{
        atomic::{AtomicU64, AtomicUsize, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use mailin_embedded::{response, Handler, Response, Server, SslConfig};

/// One message as received, decoded.
#[derive(Debug, Clone)]
pub struct Received {
    pub to: Vec<String>,
    pub subject: String,
    pub text: String,
    pub html: String,
    pub message_id: String,
}

#[derive(Clone, Default)]
struct Collector {
    inbox: Arc<Mutex<Vec<Received>>>,
    refuse: Arc<AtomicUsize>,
    /// Milliseconds to wait before accepting a message (a slow server).
    delay_ms: Arc<AtomicU64>,
    /// Messages whose data has started arriving.
    started: Arc<AtomicUsize>,
    /// When each recipient was offered, and to whom (refused ones included).
    offers: Arc<Mutex<Vec<(std::time::Instant, String)>>>,
    to: Vec<String>,
    data: Vec<u8>,
}

impl Handler for Collector {
    fn rcpt(&mut self, to: &str) -> Response {
        if let Ok(mut offers) = self.offers.lock() {
            offers.push((std::time::Instant::now(), to.to_owned()));
        }
        // Refuse the next N recipients with a transient error (greylisting, a busy server).
        if self
            .refuse
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
        {
            return response::INTERNAL_ERROR;
        }
        response::OK
    }

    fn data_start(&mut self, _domain: &str, _from: &str, _is8bit: bool, to: &[String]) -> Response {
        self.to = to.to_vec();
        self.data.clear();
        self.started.fetch_add(1, Ordering::SeqCst);
        response::START_DATA
    }

    fn data(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.data.extend_from_slice(buf);
        Ok(())
    }

    fn data_end(&mut self) -> Response {
        let delay = self.delay_ms.load(Ordering::SeqCst);
        if delay > 0 {
            std::thread::sleep(Duration::from_millis(delay));
        }
        let parsed = mail_parser::MessageParser::default().parse(&self.data);
        if let Some(m) = parsed {
            let received = Received {
                to: self.to.clone(),
                subject: m.subject().unwrap_or_default().to_owned(),
                text: m.body_text(0).map(|t| t.into_owned()).unwrap_or_default(),
                html: m.body_html(0).map(|t| t.into_owned()).unwrap_or_default(),
                message_id: m.message_id().unwrap_or_default().to_owned(),
            };
            if let Ok(mut inbox) = self.inbox.lock() {
                inbox.push(received);
            }
        }
        response::OK
    }
}

pub struct TestSmtp {
    pub port: u16,
    inbox: Arc<Mutex<Vec<Received>>>,
    refuse: Arc<AtomicUsize>,
    delay_ms: Arc<AtomicU64>,
    started: Arc<AtomicUsize>,
    offers: Arc<Mutex<Vec<(std::time::Instant, String)>>>,
}

impl TestSmtp {
    /// Start a server on a free loopback port (it lives until the test process ends).
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind SMTP");
        let port = listener.local_addr().expect("addr").port();
        let collector = Collector::default();
        let inbox = collector.inbox.clone();
        let refuse = collector.refuse.clone();
        let delay_ms = collector.delay_ms.clone();
        let started = collector.started.clone();
        let offers = collector.offers.clone();
        let mut server = Server::new(collector);
        server
            .with_name("smtp.test")
            .with_ssl(SslConfig::None)
            .expect("no TLS")
            .with_tcp_listener(listener);
        std::thread::spawn(move || {
            let _ = server.serve();
        });
        Self {
            port,
            inbox,
            refuse,
            delay_ms,
            started,
            offers,
        }
    }

    /// When a message to `address` was offered, accepted or refused, in order.
    pub fn attempt_times(&self, address: &str) -> Vec<std::time::Instant> {
        self.offers
            .lock()
            .map(|o| {
                o.iter()
                    .filter(|(_, to)| to.trim_matches(['<', '>']).eq_ignore_ascii_case(address))
                    .map(|(t, _)| *t)
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }

    pub fn messages(&self) -> Vec<Received> {
        self.inbox.lock().map(|m| m.clone()).unwrap_or_default()
    }

    pub fn to(&self, address: &str) -> Vec<Received> {
        self.messages()
            .into_iter()
            .filter(|m| m.to.iter().any(|t| t.eq_ignore_ascii_case(address)))
            .collect()
    }

    /// Take `d` to accept each message from now on.
    pub fn slow_down(&self, d: Duration) {
        self.delay_ms.store(d.as_millis() as u64, Ordering::SeqCst);
    }

    /// How many messages have started to arrive (accepted or not yet).
    pub fn started(&self) -> usize {
        self.started.load(Ordering::SeqCst)
    }

    /// Refuse the next `n` messages with a transient 4xx.
    pub fn refuse_next(&self, n: usize) {
        self.refuse.store(n, Ordering::SeqCst);
    }
}
