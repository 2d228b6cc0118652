//! A real SMTP server for tests (mailin-embedded), collecting what it receives.
//! [`TestSmtp::start_tls`] serves TLS (STARTTLS or TLS from the first byte)
//! with a certificate of a private CA made for the test, and requires a
//! sign-in, which mailin accepts only once TLS is on.

use std::{
    io::{BufRead, BufReader, Write},
    net::TcpListener,
    path::PathBuf,
    sync::{
        atomic::{AtomicU64, AtomicUsize, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use mailin_embedded::{response, AuthMechanism, Handler, Response, Server, SslConfig};

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
    /// The user name and password a client must sign in with, if any.
    credentials: Option<(String, String)>,
    /// Successful sign-ins.
    auths: Arc<AtomicUsize>,
}

impl Collector {
    fn sign_in(&mut self, user: &str, password: &str) -> Response {
        match &self.credentials {
            Some((u, p)) if u == user && p == password => {
                self.auths.fetch_add(1, Ordering::SeqCst);
                response::AUTH_OK
            }
            _ => response::INVALID_CREDENTIALS,
        }
    }
}

impl Handler for Collector {
    fn auth_plain(&mut self, _authz: &str, user: &str, password: &str) -> Response {
        self.sign_in(user, password)
    }

    fn auth_login(&mut self, user: &str, password: &str) -> Response {
        self.sign_in(user, password)
    }

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
    auths: Arc<AtomicUsize>,
    tls: Option<(SmtpTls, TestCa)>,
}

/// How a TLS test server speaks TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmtpTls {
    /// Plain at first, upgraded by STARTTLS (port 587 style).
    StartTls,
    /// TLS from the first byte (port 465 style, `smtps://`).
    Implicit,
}

/// A private certificate authority of a test, and a certificate it issued
/// for 127.0.0.1 and localhost; PEM files in a folder of their own.
pub struct TestCa {
    dir: PathBuf,
    /// The authority's certificate: what a client must trust.
    pub ca_file: PathBuf,
    cert_file: PathBuf,
    key_file: PathBuf,
}

impl TestCa {
    pub fn new() -> Self {
        use rcgen::{
            BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose,
        };
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, "I-9 Records test CA");
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_cert = ca.self_signed(&ca_key).expect("CA certificate");
        let issuer = Issuer::new(ca, ca_key);
        let key = KeyPair::generate().expect("server key");
        let mut server = CertificateParams::new(vec!["127.0.0.1".into(), "localhost".into()])
            .expect("server params");
        server
            .distinguished_name
            .push(DnType::CommonName, "smtp.test");
        let cert = server.signed_by(&key, &issuer).expect("server certificate");
        let dir =
            std::env::temp_dir().join(format!("i9-test-ca-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("CA folder");
        let ca_file = dir.join("ca.pem");
        let cert_file = dir.join("server.pem");
        let key_file = dir.join("server.key");
        std::fs::write(&ca_file, ca_cert.pem()).expect("write CA");
        std::fs::write(&cert_file, cert.pem()).expect("write certificate");
        std::fs::write(&key_file, key.serialize_pem()).expect("write key");
        Self {
            dir,
            ca_file,
            cert_file,
            key_file,
        }
    }

    /// The server's certificate (PEM), for 127.0.0.1 and localhost.
    pub fn cert_file(&self) -> &std::path::Path {
        &self.cert_file
    }

    /// The server certificate's private key (PEM).
    pub fn key_file(&self) -> &std::path::Path {
        &self.key_file
    }

    fn server_config(&self) -> Arc<rustls::ServerConfig> {
        use rustls::pki_types::{pem::PemObject, CertificateDer, PrivateKeyDer};
        let certs = CertificateDer::pem_file_iter(&self.cert_file)
            .expect("certificate file")
            .collect::<Result<Vec<_>, _>>()
            .expect("certificate");
        let key = PrivateKeyDer::from_pem_file(&self.key_file).expect("key");
        Arc::new(
            rustls::ServerConfig::builder()
                .with_no_client_auth()
                .with_single_cert(certs, key)
                .expect("server TLS configuration"),
        )
    }
}

impl Default for TestCa {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for TestCa {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl TestSmtp {
    /// Start a server on a free loopback port (it lives until the test process ends).
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind SMTP");
        let port = listener.local_addr().expect("addr").port();
        let collector = Collector::default();
        let this = Self::watching(port, &collector, None);
        let mut server = Server::new(collector);
        server
            .with_name("smtp.test")
            .with_ssl(SslConfig::None)
            .expect("no TLS")
            .with_tcp_listener(listener);
        std::thread::spawn(move || {
            let _ = server.serve();
        });
        this
    }

    /// Start a TLS server on a free loopback port that takes mail only from
    /// a client signed in as `user` with `password`, over TLS.
    pub fn start_tls(mode: SmtpTls, user: &str, password: &str) -> Self {
        // Several TLS back-ends are linked into the tests; the server's needs one chosen.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind SMTP");
        let port = listener.local_addr().expect("addr").port();
        let ca = TestCa::new();
        let collector = Collector {
            credentials: Some((user.to_owned(), password.to_owned())),
            ..Collector::default()
        };
        match mode {
            SmtpTls::StartTls => {
                let mut server = Server::new(collector.clone());
                server
                    .with_name("smtp.test")
                    .with_ssl(SslConfig::SelfSigned {
                        cert_path: ca.cert_file.display().to_string(),
                        key_path: ca.key_file.display().to_string(),
                    })
                    .expect("TLS configuration")
                    .with_auth(AuthMechanism::Plain)
                    .with_auth(AuthMechanism::Login)
                    .with_tcp_listener(listener);
                std::thread::spawn(move || {
                    let _ = server.serve();
                });
            }
            SmtpTls::Implicit => {
                // mailin-embedded speaks STARTTLS only: here the TLS session
                // comes first, then a mailin session inside it.
                let config = ca.server_config();
                let handler = collector.clone();
                std::thread::spawn(move || serve_implicit_tls(listener, config, handler));
            }
        }
        Self::watching(port, &collector, Some((mode, ca)))
    }

    fn watching(port: u16, c: &Collector, tls: Option<(SmtpTls, TestCa)>) -> Self {
        Self {
            port,
            inbox: c.inbox.clone(),
            refuse: c.refuse.clone(),
            delay_ms: c.delay_ms.clone(),
            started: c.started.clone(),
            offers: c.offers.clone(),
            auths: c.auths.clone(),
            tls,
        }
    }

    /// The PEM file of the CA that issued a TLS server's certificate.
    pub fn ca_file(&self) -> PathBuf {
        self.tls
            .as_ref()
            .map(|(_, ca)| ca.ca_file.clone())
            .expect("a TLS server")
    }

    /// The `SMTP_URL` of a TLS server, signing in as `user` with `password`.
    pub fn tls_url(&self, user: &str, password: &str) -> String {
        match self.tls.as_ref().map(|(m, _)| *m) {
            Some(SmtpTls::Implicit) => format!("smtps://{user}:{password}@127.0.0.1:{}", self.port),
            Some(SmtpTls::StartTls) => format!(
                "smtp://{user}:{password}@127.0.0.1:{}?tls=required",
                self.port
            ),
            None => panic!("not a TLS server"),
        }
    }

    /// Successful sign-ins so far.
    pub fn sign_ins(&self) -> usize {
        self.auths.load(Ordering::SeqCst)
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

/// Serve SMTP inside TLS from the first byte, a thread per connection.
fn serve_implicit_tls(
    listener: TcpListener,
    config: Arc<rustls::ServerConfig>,
    handler: Collector,
) {
    let mut builder = mailin::SessionBuilder::new("smtp.test");
    builder
        .enable_auth(AuthMechanism::Plain)
        .enable_auth(AuthMechanism::Login);
    for tcp in listener.incoming().flatten() {
        let (config, builder, handler) = (config.clone(), builder.clone(), handler.clone());
        std::thread::spawn(move || {
            let remote = tcp
                .peer_addr()
                .map(|a| a.ip())
                .unwrap_or(std::net::Ipv4Addr::LOCALHOST.into());
            let _ = tcp.set_read_timeout(Some(Duration::from_secs(60)));
            let Ok(conn) = rustls::ServerConnection::new(config) else {
                return;
            };
            let mut stream = BufReader::new(rustls::StreamOwned::new(conn, tcp));
            let mut session = builder.build(remote, handler);
            session.tls_active();
            let reply = |stream: &mut BufReader<_>, r: &Response| {
                let out: &mut rustls::StreamOwned<_, _> = stream.get_mut();
                r.write_to(out).and_then(|()| out.flush()).is_ok()
            };
            if !reply(&mut stream, &session.greeting()) {
                return;
            }
            let mut line = Vec::new();
            loop {
                line.clear();
                match stream.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                let r = session.process(&line);
                match r.action {
                    mailin::Action::Reply => {
                        if !reply(&mut stream, &r) {
                            return;
                        }
                    }
                    mailin::Action::Close | mailin::Action::UpgradeTls => {
                        let _ = reply(&mut stream, &r);
                        return;
                    }
                    mailin::Action::NoReply => {}
                }
            }
        });
    }
}
