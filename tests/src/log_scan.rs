//! The log scan: after `cargo test`, `scripts/test.sh` runs `i9-log-scan`
//! over every log line the run produced (`logs.rs`) and fails naming the
//! file and line (the secret masked) of each line that holds:
//!
//! - a social security number: any `###-##-####`, and the bare nine digits
//!   of every SSN the tests use (found in the test sources and fixtures);
//! - a password or client secret of `fixtures/org.json`, or one the tests
//!   send (`("password", "...")` pairs in the test sources), and the
//!   password of any URL (`postgres://user:password@host`);
//! - an access, refresh or link token: a prefix of `new_token("...")` in the
//!   sources (`i9at_`, `i9rt_`, `s1_`, `pw_`, ...) and its 43 characters;
//! - a partner signing secret (`whsec_...`, and those of the fixture bare);
//! - a data or SSN hash key: every `const ..._KEY: &str = "..."` of the
//!   sources, as written and as the hex of its bytes.
//!
//! What to look for is read from the repository each run, so a new token
//! prefix, test SSN or test key is covered without touching this file.

use std::{
    fs,
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
};

use anyhow::Context;
use base64::{engine::general_purpose::STANDARD, Engine as _};
use regex::Regex;

/// What a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Ssn,
    Password,
    ClientSecret,
    Token,
    SigningSecret,
    Key,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Ssn => "social security number",
            Kind::Password => "password",
            Kind::ClientSecret => "client secret",
            Kind::Token => "token",
            Kind::SigningSecret => "signing secret",
            Kind::Key => "key",
        }
    }
}

/// The secrets of a test run, as the repository holds them.
#[derive(Debug, Default, Clone)]
pub struct Secrets {
    /// `new_token` prefixes.
    pub token_prefixes: Vec<String>,
    /// SSNs the tests use, `###-##-####`.
    pub ssns: Vec<String>,
    pub passwords: Vec<String>,
    pub client_secrets: Vec<String>,
    /// `whsec_...`
    pub signing_secrets: Vec<String>,
    /// Base64, as configured.
    pub keys: Vec<String>,
}

/// Where in a line a secret is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub kind: Kind,
    pub start: usize,
    pub end: usize,
}

pub struct Scanner {
    rules: Vec<(Kind, Regex)>,
}

fn alternation(literals: &[String]) -> Option<String> {
    let mut literals: Vec<&String> = literals.iter().filter(|l| !l.is_empty()).collect();
    literals.sort_by_key(|l| std::cmp::Reverse(l.len()));
    literals.dedup();
    (!literals.is_empty()).then(|| {
        literals
            .iter()
            .map(|l| regex::escape(l))
            .collect::<Vec<_>>()
            .join("|")
    })
}

impl Scanner {
    pub fn new(s: &Secrets) -> anyhow::Result<Self> {
        let mut rules: Vec<(Kind, String)> = vec![
            // Any SSN written as SSNs are, not inside a longer run of digits.
            (
                Kind::Ssn,
                r"(?:^|[^0-9])([0-9]{3}-[0-9]{2}-[0-9]{4})(?:[^0-9]|$)".into(),
            ),
            (
                Kind::SigningSecret,
                r"(whsec_[A-Za-z0-9+/]{16,}={0,2})".into(),
            ),
            // The password of a URL (`postgres://user:password@host`).
            (
                Kind::Password,
                r"[a-z][a-z0-9+.-]*://[^/\s:@]+:([^@\s/]+)@".into(),
            ),
        ];
        let bare: Vec<String> = s.ssns.iter().map(|v| v.replace('-', "")).collect();
        if let Some(a) = alternation(&bare) {
            // Not after a `.`: the nine decimals of a logged duration are not an SSN.
            rules.push((Kind::Ssn, format!("(?:^|[^0-9.])({a})(?:[^0-9]|$)")));
        }
        if let Some(a) = alternation(&s.token_prefixes) {
            rules.push((Kind::Token, format!("((?:{a})[A-Za-z0-9_-]{{43}})")));
        }
        let signing_bare: Vec<String> = s
            .signing_secrets
            .iter()
            .flat_map(|w| [w.clone(), w.trim_start_matches("whsec_").to_owned()])
            .collect();
        let key_forms: Vec<String> = s
            .keys
            .iter()
            .flat_map(|k| {
                let hex = STANDARD
                    .decode(k)
                    .map(|b| b.iter().map(|x| format!("{x:02x}")).collect::<String>())
                    .unwrap_or_default();
                [k.clone(), k.trim_end_matches('=').to_owned(), hex]
            })
            .collect();
        for (kind, literals) in [
            (Kind::Password, &s.passwords),
            (Kind::ClientSecret, &s.client_secrets),
            (Kind::SigningSecret, &signing_bare),
            (Kind::Key, &key_forms),
        ] {
            if let Some(a) = alternation(literals) {
                rules.push((kind, format!("({a})")));
            }
        }
        let rules = rules
            .into_iter()
            .map(|(k, r)| Ok((k, Regex::new(&r).with_context(|| format!("rule {r}"))?)))
            .collect::<anyhow::Result<_>>()?;
        Ok(Self { rules })
    }

    /// The secrets in `line`, in order.
    pub fn scan_line(&self, line: &str) -> Vec<Hit> {
        let mut hits = Vec::new();
        for (kind, re) in &self.rules {
            for c in re.captures_iter(line) {
                if let Some(m) = c.get(1) {
                    hits.push(Hit {
                        kind: *kind,
                        start: m.start(),
                        end: m.end(),
                    });
                }
            }
        }
        hits.sort_by_key(|h| (h.start, std::cmp::Reverse(h.end)));
        // Overlapping rules (a fixture secret that also looks like whsec_...) count once.
        let mut kept: Vec<Hit> = Vec::new();
        for h in hits {
            if kept.last().is_none_or(|k| h.start >= k.end) {
                kept.push(h);
            }
        }
        kept
    }

    /// `line` with each hit replaced by `<kind>` (a token keeps its prefix).
    pub fn mask(line: &str, hits: &[Hit]) -> String {
        let mut out = String::new();
        let mut at = 0;
        for h in hits {
            out.push_str(&line[at..h.start]);
            let secret = &line[h.start..h.end];
            if h.kind == Kind::Token {
                let prefix = secret.split_inclusive('_').next().unwrap_or("");
                out.push_str(&format!("{prefix}<token>"));
            } else {
                out.push_str(&format!("<{}>", h.kind.name()));
            }
            at = h.end;
        }
        out.push_str(&line[at..]);
        out
    }
}

/// One line that holds a secret.
#[derive(Debug)]
pub struct Finding {
    pub file: PathBuf,
    pub line: usize,
    pub kinds: Vec<Kind>,
    /// The line, secrets masked, shortened.
    pub masked: String,
}

/// What a scan of a directory found.
#[derive(Debug, Default)]
pub struct Report {
    pub files: usize,
    pub lines: usize,
    pub findings: Vec<Finding>,
}

/// Scan every file under `dir`.
pub fn scan_dir(scanner: &Scanner, dir: &Path) -> anyhow::Result<Report> {
    let mut report = Report::default();
    let ansi = Regex::new(r"\x1b\[[0-9;]*m")?;
    let mut stack = vec![dir.to_path_buf()];
    let mut files = Vec::new();
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).with_context(|| format!("reading {}", d.display()))? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    for path in files {
        report.files += 1;
        let reader = BufReader::new(fs::File::open(&path)?);
        for (i, raw) in reader.split(b'\n').enumerate() {
            let raw = raw?;
            let line = String::from_utf8_lossy(&raw);
            // Spawned binaries colour their stderr.
            let line = if line.contains('\x1b') {
                ansi.replace_all(&line, "")
            } else {
                line
            };
            report.lines += 1;
            let hits = scanner.scan_line(&line);
            if !hits.is_empty() {
                let masked: String = Scanner::mask(&line, &hits).chars().take(400).collect();
                report.findings.push(Finding {
                    file: path.clone(),
                    line: i + 1,
                    kinds: hits.iter().map(|h| h.kind).collect(),
                    masked,
                });
            }
        }
    }
    Ok(report)
}

/// The repository this crate lives in.
pub fn repository_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn rust_files(root: &Path, dirs: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = dirs.iter().map(|d| root.join(d)).collect();
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "target") {
                    stack.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn captures(re: &Regex, text: &str) -> Vec<String> {
    re.captures_iter(text)
        .filter_map(|c| c.get(1).map(|m| m.as_str().to_owned()))
        .collect()
}

/// What to look for, read from the sources and the example organization.
pub fn secrets_of(root: &Path) -> anyhow::Result<Secrets> {
    let mut s = Secrets::default();
    let fixture_text =
        fs::read_to_string(root.join("fixtures/org.json")).context("reading fixtures/org.json")?;
    let org = i9_common::seed::parse(&fixture_text).context("parsing fixtures/org.json")?;
    s.passwords
        .extend(org.users.iter().map(|u| u.password.clone()));
    s.client_secrets
        .extend(org.clients.iter().map(|c| c.client_secret.clone()));
    s.signing_secrets.extend(
        org.clients
            .iter()
            .filter_map(|c| c.integration.as_ref())
            .map(|i| i.signing_secret.clone()),
    );
    s.ssns.extend(
        org.employees
            .iter()
            .filter_map(|e| e.social_security_number.clone()),
    );

    let token = Regex::new(r#"new_token\(\s*"([A-Za-z0-9_]+)"\s*\)"#)?;
    let ssn = Regex::new(r#""([0-9]{3}-[0-9]{2}-[0-9]{4})""#)?;
    let key = Regex::new(r#"const [A-Z0-9_]*KEY[A-Z0-9_]*: &str = "([A-Za-z0-9+/]{40,}={0,2})""#)?;
    let pair = |names: &str| {
        Regex::new(&format!(
            r#"\(\s*"(?:{names})"\s*,\s*"([^"\\]{{8,}})"\s*\)"#
        ))
    };
    let password = pair("password|confirm")?;
    let client_secret = pair("client_secret")?;
    let tests = [
        "tests",
        "admin/tests",
        "api/tests",
        "workers/tests",
        "bench/src",
    ];
    for path in rust_files(root, &["api/src", "common/src", "workers/src", "admin/src"]) {
        let text = fs::read_to_string(&path)?;
        s.token_prefixes.extend(captures(&token, &text));
        s.keys.extend(captures(&key, &text));
        // Unit tests live beside the code.
        s.ssns.extend(captures(&ssn, &text));
    }
    for path in rust_files(root, &tests) {
        let text = fs::read_to_string(&path)?;
        s.ssns.extend(captures(&ssn, &text));
        s.keys.extend(captures(&key, &text));
        s.passwords.extend(captures(&password, &text));
        s.client_secrets.extend(captures(&client_secret, &text));
    }
    for v in [
        &mut s.token_prefixes,
        &mut s.ssns,
        &mut s.passwords,
        &mut s.client_secrets,
        &mut s.signing_secrets,
        &mut s.keys,
    ] {
        v.sort();
        v.dedup();
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn scanner() -> Scanner {
        Scanner::new(&Secrets {
            token_prefixes: vec!["i9at_".into(), "i9rt_".into(), "s1_".into(), "pw_".into()],
            ssns: vec!["456-78-9012".into()],
            passwords: vec!["admin-Passw0rd!".into()],
            client_secrets: vec!["portal-secret-change-me".into()],
            signing_secrets: vec!["whsec_YWNtZS1ncmVlbmhvdXNlLWRldi1zaWduaW5nLWtleSEh".into()],
            keys: vec!["ZGV2LW9ubHktZGF0YS1lbmNyeXB0aW9uLWtleS0zMmI=".into()],
        })
        .unwrap()
    }

    fn kinds(line: &str) -> Vec<Kind> {
        scanner().scan_line(line).iter().map(|h| h.kind).collect()
    }

    const TOKEN_BODY: &str = "q0B9kX2vJm3T7yLwPz8cRn4sUe6dHa1fGi5oKb0lMtQ";

    #[test]
    fn finds_every_kind_of_secret() {
        assert_eq!(kinds("ssn=123-45-6789 done"), [Kind::Ssn]);
        assert_eq!(
            kinds(r#"{"socialSecurityNumber":"987-65-4321"}"#),
            [Kind::Ssn]
        );
        assert_eq!(kinds("searching 456789012 now"), [Kind::Ssn], "bare, known");
        assert_eq!(
            kinds("sign-in password=admin-Passw0rd! failed"),
            [Kind::Password]
        );
        assert_eq!(
            kinds("client_secret: portal-secret-change-me"),
            [Kind::ClientSecret]
        );
        assert_eq!(
            kinds("connecting to postgres://i9:hunter2@db:5432/i9"),
            [Kind::Password]
        );
        for prefix in ["i9at_", "i9rt_", "s1_", "pw_"] {
            assert_eq!(
                kinds(&format!("path=/x/{prefix}{TOKEN_BODY} status=200")),
                [Kind::Token],
                "{prefix}"
            );
        }
        assert_eq!(
            kinds("secret whsec_YWNtZS1ncmVlbmhvdXNlLWRldi1zaWduaW5nLWtleSEh"),
            [Kind::SigningSecret]
        );
        assert_eq!(
            kinds("raw YWNtZS1ncmVlbmhvdXNlLWRldi1zaWduaW5nLWtleSEh"),
            [Kind::SigningSecret],
            "the fixture's secret without its prefix"
        );
        assert_eq!(
            kinds("any whsec_c29tZW90aGVyc2VjcmV0a2V5"),
            [Kind::SigningSecret]
        );
        assert_eq!(
            kinds("key ZGV2LW9ubHktZGF0YS1lbmNyeXB0aW9uLWtleS0zMmI="),
            [Kind::Key]
        );
        let hex: String = STANDARD
            .decode("ZGV2LW9ubHktZGF0YS1lbmNyeXB0aW9uLWtleS0zMmI=")
            .unwrap()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(kinds(&format!("key bytes {hex}")), [Kind::Key]);
        assert_eq!(
            kinds(&format!(
                "a 123-45-6789 and i9at_{TOKEN_BODY} and admin-Passw0rd!"
            )),
            [Kind::Ssn, Kind::Token, Kind::Password]
        );
    }

    #[test]
    fn leaves_ordinary_log_lines_alone() {
        for line in [
            "2026-11-24T03:55:07.101902Z  WARN request{request_id=\"68c110f7-ee86-4417-810a-6a5846be0866\" method=POST path=\"/v1/employees/{id}\"}: done latency=30002 ms",
            "employee 1234567890 saved; ssn ***-**-6789",
            "phone 555-0100, zip 97201-1234, date 2026-11-05, port 127.0.0.1:45678",
            "UPDATE users SET password_hash = $2 WHERE id = $1",
            "token i9at_short",
            "connecting to postgres://i9@db:5432/i9 and http://127.0.0.1:8080/x",
            "elapsed=0.456789012s rows=456789012345",
        ] {
            assert_eq!(kinds(line), [], "{line}");
        }
    }

    #[test]
    fn masks_what_it_finds() {
        let line = format!("GET /i9/section1/s1_{TOKEN_BODY} for 123-45-6789 with admin-Passw0rd!");
        let s = scanner();
        let masked = Scanner::mask(&line, &s.scan_line(&line));
        assert_eq!(
            masked,
            "GET /i9/section1/s1_<token> for <social security number> with <password>"
        );
    }

    #[test]
    fn reads_what_to_look_for_from_the_repository() {
        let s = secrets_of(&repository_root()).unwrap();
        for prefix in ["i9at_", "i9rt_", "s1_", "pw_"] {
            assert!(
                s.token_prefixes.iter().any(|p| p == prefix),
                "{prefix}: {s:?}"
            );
        }
        assert!(s.ssns.iter().any(|v| v == "123-45-6789"), "{:?}", s.ssns);
        assert!(s.passwords.iter().any(|v| v == "admin-Passw0rd!"));
        assert!(s.passwords.iter().any(|v| v == "a long pass phrase"));
        assert!(s.client_secrets.iter().any(|v| v == "ats-secret-change-me"));
        assert!(s.client_secrets.iter().any(|v| v == "wrong-secret"));
        assert!(
            !s.passwords.iter().any(|v| v == "refresh_token"),
            "only (name, value) pairs"
        );
        assert!(s.signing_secrets.iter().all(|v| v.starts_with("whsec_")));
        assert!(!s.signing_secrets.is_empty());
        assert!(s.keys.len() >= 2, "{:?}", s.keys);
    }

    #[test]
    fn names_file_and_line_of_each_finding() {
        let dir = std::env::temp_dir().join(format!("i9-log-scan-{}", uuid::Uuid::new_v4()));
        fs::create_dir_all(dir.join("sub")).unwrap();
        fs::write(
            dir.join("a.log"),
            "clean\nssn \x1b[3m123-45-6789\x1b[0m\nclean\n",
        )
        .unwrap();
        fs::write(
            dir.join("sub/b.log"),
            format!("x\ny\nbearer i9rt_{TOKEN_BODY}\n"),
        )
        .unwrap();
        let report = scan_dir(&scanner(), &dir).unwrap();
        fs::remove_dir_all(&dir).unwrap();
        assert_eq!((report.files, report.lines), (2, 6));
        let found: Vec<(String, usize, Vec<Kind>)> = report
            .findings
            .iter()
            .map(|f| {
                (
                    f.file.file_name().unwrap().to_string_lossy().into_owned(),
                    f.line,
                    f.kinds.clone(),
                )
            })
            .collect();
        assert_eq!(
            found,
            [
                ("a.log".to_owned(), 2, vec![Kind::Ssn]),
                ("b.log".to_owned(), 3, vec![Kind::Token])
            ]
        );
        assert!(!report.findings[1].masked.contains(TOKEN_BODY));
    }
}
