//! Outgoing mail with lettre: over SMTP when `SMTP_URL` is set, otherwise as
//! `.eml` files in `MAIL_DIR`, so the service runs with no mail server.

use std::path::PathBuf;

use anyhow::Context;
use lettre::{
    message::{header::ContentType, Mailbox, MultiPart, SinglePart},
    AsyncFileTransport, AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor,
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
    /// `smtp://host:port` (no TLS: a local relay or Mailpit), or a folder.
    pub fn new(smtp_url: Option<&str>, mail_dir: PathBuf) -> anyhow::Result<Self> {
        match smtp_url {
            Some(url) => {
                let (creds, host, port) = parse_smtp_url(url)?;
                let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host)
                    .port(port)
                    .timeout(Some(std::time::Duration::from_secs(20)));
                if let Some((user, pass)) = creds {
                    builder = builder.credentials(
                        lettre::transport::smtp::authentication::Credentials::new(user, pass),
                    );
                }
                Ok(Mailer::Smtp(builder.build()))
            }
            None => Ok(Mailer::Files(mail_dir)),
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
                tokio::time::timeout(std::time::Duration::from_secs(60), t.send(message))
                    .await
                    .context("SMTP delivery timed out")?
                    .context("SMTP delivery")?;
            }
            Mailer::Files(dir) => {
                tokio::fs::create_dir_all(dir)
                    .await
                    .context("creating MAIL_DIR")?;
                AsyncFileTransport::<Tokio1Executor>::new(dir)
                    .send(message)
                    .await
                    .context("writing the .eml file")?;
            }
        }
        Ok(())
    }
}

/// `smtp://[user:password@]host[:port]` (port 25 by default).
fn parse_smtp_url(url: &str) -> anyhow::Result<(Option<(String, String)>, String, u16)> {
    let rest = url
        .strip_prefix("smtp://")
        .context("SMTP_URL must look like smtp://host:port (TLS is not supported yet)")?
        .trim_end_matches('/');
    let (creds, hostport) = match rest.rsplit_once('@') {
        Some((c, h)) => {
            let (u, p) = c.split_once(':').unwrap_or((c, ""));
            (Some((u.to_owned(), p.to_owned())), h)
        }
        None => (None, rest),
    };
    let (host, port) = match hostport.rsplit_once(':') {
        Some((h, p)) => (h, p.parse().context("SMTP_URL port must be a number")?),
        None => (hostport, 25),
    };
    anyhow::ensure!(!host.is_empty(), "SMTP_URL needs a host");
    Ok((creds, host.to_owned(), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smtp_urls() {
        assert_eq!(
            parse_smtp_url("smtp://mailpit:1025").unwrap(),
            (None, "mailpit".into(), 1025)
        );
        assert_eq!(parse_smtp_url("smtp://relay").unwrap().2, 25);
        let (creds, host, _) = parse_smtp_url("smtp://u:p@relay:587").unwrap();
        assert_eq!(
            (creds, host.as_str()),
            (Some(("u".into(), "p".into())), "relay")
        );
        assert!(parse_smtp_url("smtps://relay").is_err());
        assert!(parse_smtp_url("smtp://relay:x").is_err());
    }
}
