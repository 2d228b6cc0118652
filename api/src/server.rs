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
//! - one client address holds at most `HTTP_MAX_CONNECTIONS_PER_ADDRESS` of
//!   them (an IPv6 address by its /64; `TRUSTED_PROXIES` are exempt): a
//!   connection beyond is answered 503 at once and closed, so one address
//!   cannot take every slot;
//! - each request carries its peer address (`ConnectInfo`) for throttling;
//! - on shutdown: stop accepting, let requests in flight finish, close
//!   idle connections.
//!
//! Each limit that refuses, pauses or closes a connection is counted on
//! `/metrics` and, for floods, logged at WARN at most every 10 s
//! (`crate::overload`).
//!
//! HTTP/2 is for a TLS-terminating proxy in front, not for the API itself.

use std::{
    collections::HashMap,
    future::Future,
    net::{IpAddr, Ipv6Addr, SocketAddr},
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use axum::{extract::ConnectInfo, extract::Request, Router};
use hyper_util::{
    rt::{TokioIo, TokioTimer},
    server::graceful::GracefulShutdown,
    service::TowerToHyperService,
};
use i9_common::Config;
use ipnet::IpNet;
use tokio::{
    net::{TcpListener, TcpStream},
    sync::Semaphore,
};
use tower::ServiceExt;

use crate::overload;

/// The read buffer of a connection, and so the largest request head.
pub const MAX_HEAD_BUFFER: usize = 64 * 1024;

#[derive(Debug, Clone)]
pub struct Limits {
    pub header_timeout: Duration,
    pub max_connections: usize,
    pub max_per_address: usize,
    /// Peers exempt from the per-address cap: the trusted proxies, whose
    /// connections carry many clients.
    pub exempt: Vec<IpNet>,
}

impl Limits {
    pub fn from_config(config: &Config) -> Self {
        Self {
            header_timeout: config.http_header_timeout,
            max_connections: config.http_max_connections,
            max_per_address: config.http_max_connections_per_address,
            exempt: config.trusted_proxies.clone(),
        }
    }
}

/// The connections each client address holds.
struct PerAddress {
    cap: usize,
    exempt: Vec<IpNet>,
    open: Mutex<HashMap<IpAddr, usize>>,
}

/// One connection counted against its address, until dropped.
struct AddressSlot {
    owner: Arc<PerAddress>,
    key: IpAddr,
}

impl PerAddress {
    /// Count a connection from `peer`: `Ok(None)` for an exempt peer,
    /// `Err(())` when its address holds `cap` connections already.
    fn take(self: &Arc<Self>, peer: IpAddr) -> Result<Option<AddressSlot>, ()> {
        let peer = peer.to_canonical();
        if self.exempt.iter().any(|net| net.contains(&peer)) {
            return Ok(None);
        }
        let key = address_key(peer);
        let Ok(mut open) = self.open.lock() else {
            return Ok(None);
        };
        let held = open.entry(key).or_insert(0);
        if *held >= self.cap {
            return Err(());
        }
        *held += 1;
        Ok(Some(AddressSlot {
            owner: self.clone(),
            key,
        }))
    }
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        if let Ok(mut open) = self.owner.open.lock() {
            if let Some(held) = open.get_mut(&self.key) {
                *held -= 1;
                if *held == 0 {
                    open.remove(&self.key);
                }
            }
        }
    }
}

/// What one client counts as: an IPv4 address, or an IPv6 address's /64
/// (the block one subscriber is usually given), as sign-in throttling does.
fn address_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(
            u128::from(v6) & 0xffff_ffff_ffff_ffff_0000_0000_0000_0000,
        )),
        v4 => v4,
    }
}

/// The body of the answer to a connection refused by the per-address cap.
const REFUSAL: &str = "{\"type\":\"/problems/unavailable\",\"title\":\"Service Unavailable\",\
\"status\":503,\"detail\":\"Too many connections from this address; retry later.\"}";

/// Answer 503 if the socket takes it at once, and close; nothing is ever
/// waited for. What the client sent already is read first, so that closing
/// sends an end of stream rather than a reset that could overtake the answer.
fn refuse(stream: TcpStream) {
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/problem+json\r\n\
         retry-after: 5\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{REFUSAL}",
        REFUSAL.len()
    );
    let mut sent = [0u8; 8192];
    for _ in 0..8 {
        if !matches!(stream.try_read(&mut sent), Ok(n) if n > 0) {
            break;
        }
    }
    let _ = stream.try_write(answer.as_bytes());
    if let Ok(stream) = stream.into_std() {
        let _ = stream.shutdown(std::net::Shutdown::Write);
    }
}

/// Files an `i9-api` process opens besides its connections: the database
/// pool's, RabbitMQ's, the listener, libraries, with room to spare.
pub const OTHER_FILES: u64 = 256;

/// The open-file limit against `HTTP_MAX_CONNECTIONS`: each connection is a
/// file. The soft limit is raised (up to the hard one) to what the
/// connections, the database pool and [`OTHER_FILES`] need; `Err` holds a
/// warning when even the hard limit is lower, `Ok` the soft limit now.
pub fn make_room_for_connections(config: &Config) -> Result<u64, String> {
    let needed = config.http_max_connections as u64
        + u64::from(config.database_max_connections)
        + OTHER_FILES;
    let limit = match rlimit::increase_nofile_limit(needed) {
        Ok(limit) => limit,
        Err(e) => return Err(format!("cannot read the open-file limit: {e}")),
    };
    if limit >= needed {
        return Ok(limit);
    }
    Err(format!(
        "HTTP_MAX_CONNECTIONS ({}) is above what the open-file limit ({limit}, `ulimit -n`; \
         systemd LimitNOFILE) allows: each connection is a file, and with the database pool and \
         the rest about {needed} are needed; past about {} connections accepting fails. Raise \
         the limit to at least {needed} or lower HTTP_MAX_CONNECTIONS",
        config.http_max_connections,
        limit.saturating_sub(needed - config.http_max_connections as u64),
    ))
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
    let per_address = Arc::new(PerAddress {
        cap: limits.max_per_address.max(1),
        exempt: limits.exempt.clone(),
        open: Mutex::new(HashMap::new()),
    });
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(MAX_HEAD_BUFFER);
    tokio::pin!(shutdown);
    loop {
        let slot = match slots.clone().try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                overload::connection_cap_reached(limits.max_connections);
                tokio::select! {
                    slot = slots.clone().acquire_owned() => match slot {
                        Ok(slot) => slot,
                        Err(_) => break, // never closed
                    },
                    () = &mut shutdown => break,
                }
            }
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
        let Ok(address_slot) = per_address.take(peer.ip()) else {
            overload::connection_refused_per_address(peer.ip(), per_address.cap);
            refuse(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let served = Arc::new(AtomicUsize::new(0));
        let counted = served.clone();
        let service = router
            .clone()
            .map_request(move |mut req: Request<hyper::body::Incoming>| {
                counted.fetch_add(1, Ordering::Relaxed);
                req.extensions_mut().insert(ConnectInfo::<SocketAddr>(peer));
                req
            });
        let connection = graceful
            .watch(http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service)));
        overload::connection_opened();
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                if e.is_timeout() {
                    overload::connection_timed_out(served.load(Ordering::Relaxed) > 0);
                } else {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
            }
            drop(address_slot);
            drop(slot);
            overload::connection_closed();
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
