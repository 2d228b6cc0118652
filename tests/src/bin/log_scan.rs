//! `i9-log-scan DIR [--require-lines]`: scan every log file under DIR for
//! secrets (`i9_tests::log_scan`); exit 1 naming each line that holds one.
//! `scripts/test.sh` runs it over the logs of the whole test run.

use std::{path::PathBuf, process::ExitCode};

use i9_tests::log_scan::{repository_root, scan_dir, secrets_of, Scanner};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(dir) = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .map(PathBuf::from)
    else {
        eprintln!("usage: i9-log-scan DIR [--require-lines]");
        return ExitCode::from(2);
    };
    let require_lines = args.iter().any(|a| a == "--require-lines");
    let run = || -> anyhow::Result<_> {
        let secrets = secrets_of(&repository_root())?;
        let scanner = Scanner::new(&secrets)?;
        scan_dir(&scanner, &dir)
    };
    let report = match run() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("log scan: {e:#}");
            return ExitCode::from(2);
        }
    };
    println!(
        "log scan: {} lines in {} files under {}",
        report.lines,
        report.files,
        dir.display()
    );
    if require_lines && report.lines == 0 {
        eprintln!("log scan: no log lines were collected; is I9_TEST_LOG_DIR reaching the tests?");
        return ExitCode::from(1);
    }
    if report.findings.is_empty() {
        println!("log scan: no SSN, password, client secret, token, signing secret or key found");
        return ExitCode::SUCCESS;
    }
    for f in report.findings.iter().take(100) {
        let kinds: Vec<&str> = f.kinds.iter().map(|k| k.name()).collect();
        eprintln!(
            "{}:{}: {}: {}",
            f.file.display(),
            f.line,
            kinds.join(", "),
            f.masked
        );
    }
    let mut by_kind: std::collections::BTreeMap<&str, usize> = Default::default();
    for f in &report.findings {
        for k in &f.kinds {
            *by_kind.entry(k.name()).or_default() += 1;
        }
    }
    let counts: Vec<String> = by_kind.iter().map(|(k, n)| format!("{n} {k}")).collect();
    eprintln!("log scan: found {}", counts.join(", "));
    eprintln!(
        "log scan: FAILED: {} log lines hold a secret{}",
        report.findings.len(),
        if report.findings.len() > 100 {
            " (the first 100 shown)"
        } else {
            ""
        }
    );
    ExitCode::from(1)
}
