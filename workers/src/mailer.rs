//! Outgoing mail with lettre: over SMTP when `SMTP_URL` is set, otherwise as
//! `.eml` files in `MAIL_DIR`, so the service runs with no mail server. The
//! files hold live one-time links: the folder is kept at 0700 and each file
//! is made 0600 (never readable by others, even for a moment).
//!
//! `SMTP_URL` is read by lettre (`AsyncSmtpTransport::from_url`: host,
//! port, credentials, hello name, TLS): `smtps://` is TLS from the first
//! byte (port 465 by default), `smtp://…?tls=required` upgrades with
//! STARTTLS and refuses a server that does not offer it (port 587), plain
//! `smtp://` has no TLS (port 25; a relay on this host, or Mailpit). Servers
//! are verified against the Mozilla roots plus `SMTP_CA_FILE` (a private
//! CA). Credentials in the URL need one of the two TLS forms: otherwise the
//! worker refuses to start, unless `SMTP_ALLOW_PLAINTEXT_AUTH` is true
//! (docs/operations.md, "Mail"); that rule, which lettre does not apply, is
//! checked with the rest of the configuration ([`SmtpSecurity::check`]).

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use secrecy::{ExposeSecret, SecretString};

use anyhow::{anyhow, bail, Context};
use i9_common::{
    config::{SmtpSecurity, SMTP_URL_FORMS},
    Config,
};
use lettre::{
    message::{header::ContentType, Mailbox, MultiPart, SinglePart},
    transport::smtp::client::{Certificate, Tls, TlsParameters},
    AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor,
};

pub const FROM: &str = "I-9 Records <no-reply@i9.invalid>";

/// One email: plain text and HTML.
#[derive(Debug, Clone)]
pub struct Email {
    pub to: String,
    pub subject: String,
    pub text: String,
    pub html: String,
    /// A stable `Message-ID` (from the job id), so a receiving system can tell
    /// a repeat from a new message.
    pub message_id: String,
}

#[derive(Clone)]
pub enum Mailer {
    Smtp(AsyncSmtpTransport<Tokio1Executor>),
    Files(PathBuf),
}

impl std::fmt::Debug for Mailer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Mailer::Smtp(_) => f.write_str("Mailer::Smtp"),
            Mailer::Files(dir) => write!(f, "Mailer::Files({})", dir.display()),
        }
    }
}

impl Mailer {
    /// The mailer of `config`: SMTP per `SMTP_URL`, or `.eml` files in
    /// `MAIL_DIR`. A setting that would send credentials in clear, or that
    /// cannot work, is an error naming the setting (never its value).
    pub fn from_config(config: &Config) -> anyhow::Result<Self> {
        match &config.smtp_url {
            Some(url) => Ok(Mailer::Smtp(smtp_transport(
                url,
                config.smtp_ca_file.as_deref(),
                config.smtp_allow_plaintext_auth,
            )?)),
            None => {
                prepare_mail_dir(&config.mail_dir)?;
                Ok(Mailer::Files(config.mail_dir.clone()))
            }
        }
    }

    pub async fn send(&self, email: &Email) -> anyhow::Result<()> {
        let to: Mailbox = email.to.parse().context("recipient address")?;
        let message = Message::builder()
            .from(FROM.parse().context("sender address")?)
            .to(to)
            .subject(&email.subject)
            .message_id(Some(email.message_id.clone()))
            .multipart(
                MultiPart::alternative()
                    .singlepart(
                        SinglePart::builder()
                            .header(ContentType::TEXT_PLAIN)
                            .body(email.text.clone()),
                    )
                    .singlepart(
                        SinglePart::builder()
                            .header(ContentType::TEXT_HTML)
                            .body(email.html.clone()),
                    ),
            )
            .context("building the message")?;
        match self {
            Mailer::Smtp(t) => {
                // lettre bounds each command; this bounds the whole exchange.
                tokio::time::timeout(Duration::from_secs(60), t.send(message))
                    .await
                    .context("SMTP delivery timed out")?
                    .map_err(|e| anyhow!("SMTP delivery: {}", describe(&e)))?;
            }
            Mailer::Files(dir) => {
                let dir = dir.clone();
                tokio::task::spawn_blocking(move || write_eml(&dir, &message.formatted()))
                    .await
                    .context("writing the .eml file")??;
            }
        }
        Ok(())
    }
}

/// The folder of `.eml` files: made if missing, and 0700 whatever it was
/// (its files hold live Section 1 and set-password links). A shared folder
/// (sticky, such as `/tmp`) is refused rather than closed to its other users.
fn prepare_mail_dir(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let shown = dir.display();
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("creating MAIL_DIR ({shown})"))?;
    let mode = std::fs::metadata(dir)
        .with_context(|| format!("reading MAIL_DIR ({shown})"))?
        .permissions()
        .mode();
    if mode & 0o1000 != 0 {
        bail!(
            "MAIL_DIR ({shown}) is a shared folder (sticky bit, as /tmp): the mail in it holds \
             live links; name a folder of the service's own"
        );
    }
    if mode & 0o777 != 0o700 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .with_context(|| format!("making MAIL_DIR ({shown}) private (0700)"))?;
    }
    Ok(())
}

/// Write one message as `<uuid>.eml` in `dir`, created 0600; it appears
/// under that name only once whole.
fn write_eml(dir: &Path, message: &[u8]) -> anyhow::Result<()> {
    use std::{io::Write, os::unix::fs::OpenOptionsExt};
    prepare_mail_dir(dir)?;
    let id = uuid::Uuid::new_v4();
    let partial = dir.join(format!(".{id}.partial"));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&partial)
        .with_context(|| format!("creating {}", partial.display()))?;
    file.write_all(message)
        .and_then(|()| file.sync_all())
        .and_then(|()| std::fs::rename(&partial, dir.join(format!("{id}.eml"))))
        .with_context(|| format!("writing {}", partial.display()))
}

/// The transport for `url`: lettre reads it, once its form passed the
/// rules of [`SmtpSecurity::check`]; `SMTP_CA_FILE` replaces lettre's TLS
/// parameters by ones that trust its roots too, in the same form.
fn smtp_transport(
    url: &SecretString,
    ca_file: Option<&Path>,
    allow_plaintext_auth: bool,
) -> anyhow::Result<AsyncSmtpTransport<Tokio1Executor>> {
    // Errors name the setting, never its value: it may hold a password.
    let (security, host) = SmtpSecurity::check(url, allow_plaintext_auth, ca_file.is_some())
        .map_err(|e| anyhow!(e))?;
    let encrypted = matches!(security, SmtpSecurity::StartTls | SmtpSecurity::Implicit);
    if !encrypted && !is_local(&host) {
        tracing::warn!(
            "SMTP_URL uses no TLS (or only opportunistic STARTTLS): mail, and the one-time links \
             in it, cross the network in clear; use smtps:// or ?tls=required unless the relay is \
             on a network you trust"
        );
    }
    let mut builder = AsyncSmtpTransport::<Tokio1Executor>::from_url(url.expose_secret())
        .map_err(|_| anyhow!("SMTP_URL cannot be used; use {SMTP_URL_FORMS}"))?
        .timeout(Some(Duration::from_secs(20)));
    if let Some(ca_file) = ca_file {
        let params = with_extra_roots(&host, ca_file)?;
        builder = builder.tls(match security {
            SmtpSecurity::Implicit => Tls::Wrapper(params),
            SmtpSecurity::StartTls => Tls::Required(params),
            SmtpSecurity::Opportunistic => Tls::Opportunistic(params),
            SmtpSecurity::Plain => bail!("SMTP_CA_FILE is set but SMTP_URL uses no TLS"),
        });
    }
    Ok(builder.build())
}

/// TLS parameters for `host` that trust the Mozilla roots and the PEM
/// certificates of `ca_file`.
fn with_extra_roots(host: &str, ca_file: &Path) -> anyhow::Result<TlsParameters> {
    let pem = std::fs::read(ca_file)
        .with_context(|| format!("reading SMTP_CA_FILE ({})", ca_file.display()))?;
    if !pem
        .windows(b"-----BEGIN CERTIFICATE-----".len())
        .any(|w| w == b"-----BEGIN CERTIFICATE-----")
    {
        bail!(
            "SMTP_CA_FILE ({}) holds no PEM certificate",
            ca_file.display()
        );
    }
    let cert = Certificate::from_pem(&pem).map_err(|_| {
        anyhow!(
            "SMTP_CA_FILE ({}) holds a certificate that cannot be read",
            ca_file.display()
        )
    })?;
    TlsParameters::builder(host.to_owned())
        .add_root_certificate(cert)
        .build_rustls()
        .map_err(|e| anyhow!("SMTP_CA_FILE ({}): {e}", ca_file.display()))
}

fn is_local(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .trim_matches(['[', ']'])
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// A delivery error for the log: the server's reply code, not its text (a
/// rejection often quotes the recipient's address).
fn describe(e: &lettre::transport::smtp::Error) -> String {
    match e.status() {
        Some(code) if e.is_permanent() => {
            format!("the server refused the message ({code}, permanent)")
        }
        Some(code) => format!("the server refused the message for now ({code}, transient)"),
        None if e.is_response() => "the server gave an answer that could not be read".into(),
        None => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(url: &str, allow_plaintext_auth: bool) -> Option<String> {
        smtp_transport(&url.into(), None, allow_plaintext_auth)
            .err()
            .map(|e| format!("{e:#}"))
    }

    #[test]
    fn the_url_forms_that_work() {
        for url in [
            "smtp://mailpit:1025",
            "smtp://relay",
            "smtps://relay.example",
            "smtps://u:p@relay.example",
            "smtps://u:p@relay.example:2465",
            "smtp://u:p@relay.example:587?tls=required",
            "smtp://relay.example?tls=opportunistic",
        ] {
            assert_eq!(refusal(url, false), None, "{url}");
        }
    }

    /// The forms [`SmtpSecurity::check`] tells apart are lettre's: what it
    /// refuses for its form, lettre refuses too.
    #[test]
    fn the_forms_refused_are_those_lettre_does_not_know() {
        for url in [
            "mailto://relay",
            "smtp://relay?tls=sometimes",
            "smtps://",
            "not a url",
        ] {
            assert!(refusal(url, false).is_some(), "{url}");
            assert!(
                AsyncSmtpTransport::<Tokio1Executor>::from_url(url).is_err(),
                "lettre takes {url}"
            );
        }
    }

    #[test]
    fn credentials_without_tls_are_refused_naming_the_settings_not_the_password() {
        for url in [
            "smtp://u:s3cret-pw@relay.example:587",
            "smtp://u:s3cret-pw@relay.example:587?tls=opportunistic",
        ] {
            let e = refusal(url, false).expect("refused");
            assert!(
                e.contains("SMTP_URL") && e.contains("SMTP_ALLOW_PLAINTEXT_AUTH=true"),
                "{e}"
            );
            assert!(!e.contains("s3cret-pw"), "{e}");
            assert_eq!(refusal(url, true), None, "the opt-out: {url}");
        }
    }

    #[test]
    fn bad_urls_are_refused_without_echoing_them() {
        for url in [
            "mailto://u:s3cret-pw@relay",
            "smtp://u:s3cret-pw@relay?tls=sometimes",
            "not a url s3cret-pw",
            "smtps://",
        ] {
            let e = refusal(url, false).expect("refused");
            assert!(e.contains("SMTP_URL"), "{e}");
            assert!(!e.contains("s3cret-pw"), "{e}");
        }
    }

    #[test]
    fn the_mail_folder_is_made_private_and_each_file_is_the_owners_alone() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
        let dir = std::env::temp_dir().join(format!("i9-mail-{}", uuid::Uuid::new_v4().simple()));
        // A folder that exists, readable by everyone, is closed.
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        write_eml(&dir, b"Subject: hi\r\n\r\nbody").unwrap();
        assert_eq!(mode(&dir), 0o700);
        // A missing one (and its parents) is made so.
        let nested = dir.join("a/b");
        write_eml(&nested, b"Subject: hi\r\n\r\nbody").unwrap();
        assert_eq!((mode(&dir.join("a")), mode(&nested)), (0o700, 0o700));
        let files: Vec<_> = std::fs::read_dir(&nested)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1);
        assert_eq!(mode(&files[0]), 0o600);
        // A shared folder is refused, not closed to its other users.
        let shared = dir.join("shared");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let e = write_eml(&shared, b"x").unwrap_err().to_string();
        assert!(e.contains("MAIL_DIR") && e.contains("shared folder"), "{e}");
        assert_eq!(mode(&shared), 0o1777);
        assert_eq!(std::fs::read_dir(&shared).unwrap().count(), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_ca_file_must_hold_a_certificate_and_needs_tls() {
        let dir = std::env::temp_dir();
        let empty = dir.join(format!("i9-empty-ca-{}.pem", uuid::Uuid::new_v4().simple()));
        std::fs::write(&empty, "not a certificate").unwrap();
        let e = smtp_transport(&"smtps://relay.example".into(), Some(&empty), false)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("SMTP_CA_FILE") && e.contains("no PEM"), "{e}");
        let missing = dir.join("i9-no-such-ca.pem");
        let e = smtp_transport(&"smtps://relay.example".into(), Some(&missing), false)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("reading SMTP_CA_FILE"), "{e}");
        let _ = std::fs::remove_file(empty);
    }
}
