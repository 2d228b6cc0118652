//! Logging with tracing, to stderr: human-readable by default (coloured only
//! when stderr is a terminal, so files and journald get plain text), JSON
//! lines with `LOG_FORMAT=json`; levels from `RUST_LOG` (both read with the
//! rest of the configuration, `common/src/config.rs`).
//!
//! Beside the log lines, an OpenTelemetry layer gives every span a W3C trace
//! context, which `crate::trace` carries on through the outbox, the job
//! messages and partner callbacks (docs/operations.md, "Logs"). Spans are
//! exported over OTLP/HTTP (protobuf) only when `OTEL_EXPORTER_OTLP_ENDPOINT`
//! is set; otherwise nothing is exported, no thread is started, log events
//! never reach the layer, and spans are sampled out (ids, no data) unless
//! the caller's `traceparent` says its trace is sampled, a decision passed
//! on (docs/operations.md, "Logs").

use std::{
    io::IsTerminal,
    sync::{Arc, OnceLock},
};

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{SpanExporter, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::{
    trace::{Sampler, SdkTracerProvider},
    Resource,
};
use tracing::Subscriber;
use tracing_subscriber::{
    filter::filter_fn, fmt, fmt::MakeWriter, prelude::*, registry::LookupSpan, EnvFilter, Layer,
};

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

/// Where spans go once the process is done with them: the exporter of
/// `OTEL_EXPORTER_OTLP_ENDPOINT`, if any.
#[derive(Clone, Default)]
pub struct Export(Option<SdkTracerProvider>);

impl Export {
    /// Whether spans are exported.
    pub fn is_on(&self) -> bool {
        self.0.is_some()
    }

    /// Send every finished span now (at the end of a process, or a test).
    pub fn flush(&self) {
        if let Some(p) = &self.0 {
            let _ = p.force_flush();
        }
    }

    /// Flush, then stop the exporter's thread.
    pub fn shutdown(&self) {
        if let Some(p) = &self.0 {
            let _ = p.shutdown();
        }
    }
}

static EXPORT: OnceLock<Export> = OnceLock::new();

/// Log as `settings` say, `default_filter` when `RUST_LOG` is unset.
pub fn init(settings: &LogSettings, default_filter: &str) {
    let (subscriber, export, problem) = subscriber(
        settings,
        default_filter,
        std::io::stderr,
        std::io::stderr().is_terminal(),
    );
    // As `try_init` always did: also takes the `log` crate's records. A
    // second init (tests) keeps the first subscriber.
    if subscriber.try_init().is_ok() {
        let _ = EXPORT.set(export);
    }
    if let Some(problem) = problem {
        tracing::warn!(%problem, "spans are not exported (OTEL_EXPORTER_OTLP_ENDPOINT)");
    }
}

/// At the end of a process: send the spans not exported yet.
pub fn shutdown() {
    if let Some(e) = EXPORT.get() {
        e.shutdown();
    }
}

/// The subscriber [`init`] installs, writing its lines to `writer` (a test
/// keeps them); also what exports its spans, and why they cannot be, if so.
pub fn subscriber<W>(
    settings: &LogSettings,
    default_filter: &str,
    writer: W,
    ansi: bool,
) -> (
    impl Subscriber + Send + Sync + 'static,
    Export,
    Option<String>,
)
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let filter = settings
        .filter
        .as_deref()
        .and_then(|f| EnvFilter::try_new(f).ok())
        .unwrap_or_else(|| EnvFilter::new(default_filter));
    let lines = if settings.json {
        fmt::layer()
            .json()
            .with_current_span(true)
            .with_writer(writer)
            .boxed()
    } else {
        fmt::layer().with_ansi(ansi).with_writer(writer).boxed()
    };
    let (traces, export, problem) = trace_layer(settings.otlp_endpoint.as_deref());
    let subscriber = tracing_subscriber::registry()
        .with(filter)
        .with(lines)
        .with(traces);
    (subscriber, export, problem)
}

/// The OpenTelemetry layer: a trace context for every span it sees (all
/// the filter lets through), exported to `endpoint` (the base URL of an
/// OTLP/HTTP collector; `/v1/traces` is added) when given. Without an
/// exporter, root spans are sampled out and events are not seen: the layer
/// only hands out ids.
pub fn trace_layer<S>(
    endpoint: Option<&str>,
) -> (Box<dyn Layer<S> + Send + Sync>, Export, Option<String>)
where
    S: Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
{
    let (provider, problem) = match endpoint.map(exporting_provider) {
        Some(Ok(p)) => (Some(p), None),
        Some(Err(e)) => (None, Some(e)),
        None => (None, None),
    };
    let exporting = provider.is_some();
    let provider = provider.unwrap_or_else(|| {
        SdkTracerProvider::builder()
            .with_sampler(Sampler::ParentBased(Box::new(Sampler::AlwaysOff)))
            .build()
    });
    let tracer = provider.tracer("i9");
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_target(false)
        .with_filter(filter_fn(move |m| exporting || m.is_span()))
        .boxed();
    let export = Export(exporting.then_some(provider));
    (layer, export, problem)
}

/// The service's name in exported spans: its binary's (`i9-api`, `i9-worker`).
fn service_name() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "i9".to_owned())
}

/// A provider whose spans are batched and posted to `endpoint`/v1/traces.
fn exporting_provider(endpoint: &str) -> Result<SdkTracerProvider, String> {
    let url = format!("{}/v1/traces", endpoint.trim_end_matches('/'));
    // reqwest's blocking client runs a runtime of its own: it is built (and
    // later dropped, by the batch processor) outside the caller's.
    let client = std::thread::spawn(blocking_client)
        .join()
        .map_err(|_| "building the HTTP client failed".to_owned())??;
    let exporter = SpanExporter::builder()
        .with_http()
        .with_http_client(client)
        .with_endpoint(url)
        .build()
        .map_err(|e| e.to_string())?;
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_sampler(Sampler::ParentBased(Box::new(Sampler::AlwaysOn)))
        .with_resource(
            Resource::builder()
                .with_service_name(service_name())
                .build(),
        )
        .build())
}

/// The exporter's HTTP client: TLS with rustls and ring and the built-in
/// Mozilla roots (as every other client of the service), no proxy, bounded.
fn blocking_client() -> Result<reqwest::blocking::Client, String> {
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| e.to_string())?
    .with_root_certificates(roots)
    .with_no_client_auth();
    reqwest::blocking::Client::builder()
        .tls_backend_preconfigured(tls)
        .no_proxy()
        .timeout(std::time::Duration::from_secs(10))
        .build()
        .map_err(|e| e.to_string())
}
