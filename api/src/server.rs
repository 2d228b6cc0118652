//! Serving HTTP/1.1 with the bounds `axum::serve` lacks (docs/operations.md,
//! "Connections"):
//! - a connection must deliver a complete request head within
//!   `HTTP_HEADER_TIMEOUT_SECS` of the server waiting for one, on a new
//!   connection and on a kept-alive one after each response, or it is
//!   closed: slow senders and idle keep-alive connections alike (hyper's
//!   header-read timer starts when it begins waiting for a request);
//! - a request head is at most [`MAX_HEAD_BUFFER`] bytes (431 beyond);
//! - at most `HTTP_MAX_CONNECTIONS` connections are served at once; while
//!   all are taken the listener is not polled, and new connections wait in
//!   the kernel's listen queue;
//! - each request carries its peer address (`ConnectInfo`) for throttling;
//! - on shutdown: stop accepting, let requests in flight finish, close
//!   idle connections.
//!
//! HTTP/2 is for a TLS-terminating proxy in front, not for the API itself.

use std::{future::Future, net::SocketAddr, sync::Arc, time::Duration};

use axum::{extract::ConnectInfo, extract::Request, Router};
use hyper_util::{
    rt::{TokioIo, TokioTimer},
    server::graceful::GracefulShutdown,
    service::TowerToHyperService,
};
use i9_common::Config;
use tokio::{net::TcpListener, sync::Semaphore};
use tower::ServiceExt;

/// The read buffer of a connection, and so the largest request head.
pub const MAX_HEAD_BUFFER: usize = 64 * 1024;

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub header_timeout: Duration,
    pub max_connections: usize,
}

impl Limits {
    pub fn from_config(config: &Config) -> Self {
        Self {
            header_timeout: config.http_header_timeout,
            max_connections: config.http_max_connections,
        }
    }
}

/// Serve `router` on `listener` until `shutdown`, then until the requests in
/// flight are answered.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(MAX_HEAD_BUFFER);
    tokio::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break, // never closed
            },
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    if accept_failed(e, &mut shutdown).await {
                        break;
                    }
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let service = router
            .clone()
            .map_request(move |mut req: Request<hyper::body::Incoming>| {
                req.extensions_mut().insert(ConnectInfo::<SocketAddr>(peer));
                req
            });
        let connection = graceful
            .watch(http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service)));
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// A failed accept: a connection that died in the queue is nothing; running
/// out of file descriptors (or the like) is logged, and accepting resumes a
/// second later rather than spinning. True when `shutdown` came meanwhile.
async fn accept_failed(
    e: std::io::Error,
    shutdown: &mut std::pin::Pin<&mut impl Future<Output = ()>>,
) -> bool {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        e.kind(),
        ConnectionRefused | ConnectionAborted | ConnectionReset
    ) {
        return false;
    }
    tracing::error!(error = %e, "accepting a connection failed; retrying in 1 s");
    tokio::select! {
        () = tokio::time::sleep(Duration::from_secs(1)) => false,
        () = shutdown.as_mut() => true,
    }
}
