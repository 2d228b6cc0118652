//! Logging with tracing, to stderr: human-readable by default (coloured only
//! when stderr is a terminal, so files and journald get plain text), JSON
//! lines with `LOG_FORMAT=json`; levels from `RUST_LOG`.

use std::io::IsTerminal;

use tracing_subscriber::{fmt, prelude::*, EnvFilter};

pub fn init(default_filter: &str) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_filter));
    let json = std::env::var("LOG_FORMAT").is_ok_and(|v| v.eq_ignore_ascii_case("json"));
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
