//! Every log line of a test run, kept for the log scan (`log_scan.rs`,
//! run by `scripts/test.sh` after the tests). When `I9_TEST_LOG_DIR` names a
//! directory, [`init`] adds a debug-level subscriber writing there (one file
//! per test process) beside the usual stderr output, and the tests hand the
//! stderr of every binary they spawn to [`keep_stderr`] or [`stderr_sink`].
//! Without it, logging is as `i9_common::telemetry` sets it up.

use std::{
    fs::{File, OpenOptions},
    io::Write,
    path::PathBuf,
    process::Stdio,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc, Mutex, Once,
    },
};

use tracing_subscriber::{fmt, fmt::MakeWriter, prelude::*, EnvFilter};

/// The directory the test run's logs go to.
pub const LOG_DIR_ENV: &str = "I9_TEST_LOG_DIR";

/// The stderr filter of the tests (when `RUST_LOG` is not set).
const STDERR_DEFAULT: &str = "warn,i9_common=info,i9_workers=info";

/// What the kept log records: everything from debug up, whatever `RUST_LOG` says.
const FILE_FILTER: &str = "debug";

pub fn log_dir() -> Option<PathBuf> {
    std::env::var_os(LOG_DIR_ENV)
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
}

fn process_name() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "test".to_owned())
}

/// A new file in the log directory named after this process and `label`.
fn new_file(label: &str) -> Option<File> {
    static SEQ: AtomicUsize = AtomicUsize::new(0);
    let dir = log_dir()?;
    std::fs::create_dir_all(&dir).ok()?;
    let name = format!(
        "{label}-{}-{}.log",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    );
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(name))
        .ok()
}

/// Install this process's subscriber (once; later calls do nothing).
pub fn init() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let Some(file) = new_file(&process_name()) else {
            // As a binary would log, RUST_LOG still choosing the levels.
            let log = i9_common::config::LogSettings {
                filter: std::env::var("RUST_LOG").ok(),
                json: false,
                otlp_endpoint: None,
            };
            i9_common::telemetry::init(&log, STDERR_DEFAULT);
            return;
        };
        let stderr_filter =
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(STDERR_DEFAULT));
        let _ = tracing_subscriber::registry()
            .with(
                fmt::layer()
                    .with_writer(std::io::stderr)
                    .with_filter(stderr_filter),
            )
            .with(
                fmt::layer()
                    .with_ansi(false)
                    .with_writer(Mutex::new(file))
                    .with_filter(EnvFilter::new(FILE_FILTER)),
            )
            // Trace contexts, as the binaries have them (not exported).
            .with(
                i9_common::telemetry::trace_layer(None)
                    .0
                    .with_filter(EnvFilter::new("info")),
            )
            .try_init();
    });
}

/// Keep the stderr a spawned binary wrote (no-op without a log directory).
pub fn keep_stderr(binary: &str, stderr: &[u8]) {
    if let Some(mut f) = new_file(&format!("spawned-{binary}")) {
        let _ = f.write_all(stderr);
    }
}

/// Where a spawned binary's stderr goes when it runs on: a file in the log
/// directory, or nowhere.
pub fn stderr_sink(binary: &str) -> Stdio {
    new_file(&format!("spawned-{binary}"))
        .map(Stdio::from)
        .unwrap_or_else(Stdio::null)
}

/// A writer that keeps every line in memory, for a test that reads the log
/// lines a subscriber of its own wrote (`i9_common::telemetry::subscriber`).
#[derive(Clone, Default)]
pub struct Lines(Arc<Mutex<Vec<u8>>>);

impl Lines {
    /// What was written so far.
    pub fn text(&self) -> String {
        self.0
            .lock()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }

    /// The lines written so far, as JSON (`LOG_FORMAT=json`); others skipped.
    pub fn json(&self) -> Vec<serde_json::Value> {
        self.text()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Hand the lines to the log scan (no-op without a log directory).
    pub fn keep(&self, label: &str) {
        keep_stderr(label, self.text().as_bytes());
    }
}

impl Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut b) = self.0.lock() {
            b.extend_from_slice(buf);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Lines {
    type Writer = Lines;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}
