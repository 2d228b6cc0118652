//! Logging with tracing, to stderr: human-readable by default (coloured only
//! when stderr is a terminal, so files and journald get plain text), JSON
//! lines with `LOG_FORMAT=json`; levels from `RUST_LOG` (both read with the
//! rest of the configuration, `common/src/config.rs`).

use std::io::IsTerminal;

use tracing_subscriber::{fmt, prelude::*, EnvFilter};

use crate::config::LogSettings;

/// The filter of `i9-api` and `i9-worker` when `RUST_LOG` is unset: `sqlx`
/// at warn (each query at info is noise), and `lapin` off, since it logs at
/// ERROR what our own code reports with its context (a refused login, a lost
/// connection, a channel the broker closed) or what is expected (its own
/// shutdown, a probe of a queue that is not there). README, "Configuration",
/// and docs/operations.md, "Logs", say it as it is here.
pub const SERVICES_DEFAULT_FILTER: &str = "info,sqlx=warn,lapin=off";

/// The filter of `i9-admin` when `RUST_LOG` is unset: its commands print
/// what they did themselves; lapin logs its connection teardown at exit as
/// errors.
pub const ADMIN_DEFAULT_FILTER: &str = "warn,lapin=off";

/// Log as `settings` say, `default_filter` when `RUST_LOG` is unset.
pub fn init(settings: &LogSettings, default_filter: &str) {
    let filter = settings
        .filter
        .as_deref()
        .and_then(|f| EnvFilter::try_new(f).ok())
        .unwrap_or_else(|| EnvFilter::new(default_filter));
    let json = settings.json;
    let registry = tracing_subscriber::registry().with(filter);
    let result = if json {
        registry
            .with(
                fmt::layer()
                    .json()
                    .with_current_span(true)
                    .with_writer(std::io::stderr),
            )
            .try_init()
    } else {
        registry
            .with(
                fmt::layer()
                    .with_ansi(std::io::stderr().is_terminal())
                    .with_writer(std::io::stderr),
            )
            .try_init()
    };
    // A second init (tests) keeps the first subscriber.
    let _ = result;
}
