//! Connection bounds (docs/operations.md, "Connections"): slow and idle
//! connections are closed by the header timeout and do not starve normal
//! requests; past the connection cap, new connections wait for a free slot;
//! past its own cap, one address is refused while others are served.

use std::{
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    },
    time::Duration,
};

use i9_tests::{eventually, spawn_app_with, ADMIN};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpSocket, TcpStream},
};

/// Read until the server closes the connection (end of stream or a reset);
/// whatever it wrote before (a 408, say) is ignored.
async fn until_closed(mut stream: TcpStream) {
    let mut buf = [0u8; 1024];
    while let Ok(n) = stream.read(&mut buf).await {
        if n == 0 {
            break;
        }
    }
}

#[tokio::test]
async fn slow_connections_are_closed_and_do_not_starve_normal_requests() {
    // One address stands for many slow clients here: the per-address cap
    // (tested below) is set out of the way.
    let app = spawn_app_with(|c| {
        c.http_header_timeout = Duration::from_secs(3);
        c.http_max_connections_per_address = 10_000;
    })
    .await;
    let token = app.token(ADMIN).await;
    let addr = format!("127.0.0.1:{}", app.port);
    let closed = Arc::new(AtomicUsize::new(0));
    let mut slow = tokio::task::JoinSet::new();
    for i in 0..1000 {
        let mut stream = TcpStream::connect(&addr).await.unwrap();
        let closed = closed.clone();
        slow.spawn(async move {
            if i % 2 == 0 {
                // Half a request line, then nothing.
                let _ = stream.write_all(b"GET /v1/roles HT").await;
                until_closed(stream).await;
            } else {
                // Headers a byte at a time, never finished (slowloris).
                let (read, mut write) = stream.into_split();
                let trickle = async move {
                    let head = b"GET /v1/roles HTTP/1.1\r\nHost: x\r\nX-Slow: "
                        .iter()
                        .chain(b"a".iter().cycle());
                    let mut tick = tokio::time::interval(Duration::from_millis(300));
                    for byte in head {
                        tick.tick().await;
                        if write.write_all(&[*byte]).await.is_err() {
                            break;
                        }
                    }
                };
                let mut read = read;
                let closed_by_server = async move {
                    let mut buf = [0u8; 1024];
                    while let Ok(n) = read.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                    }
                };
                tokio::select! {
                    () = closed_by_server => {}
                    () = trickle => {}
                }
            }
            closed.fetch_add(1, Ordering::SeqCst);
        });
    }

    // Meanwhile, another client's requests are answered.
    let mut answered = 0;
    for _ in 0..20 {
        assert_eq!(
            app.http
                .get(app.url("/healthz"))
                .send()
                .await
                .unwrap()
                .status(),
            200
        );
        assert_eq!(app.get("/v1/roles", &token).await.status(), 200);
        answered += 2;
    }
    assert_eq!(answered, 40);

    // Every slow connection is closed by the server (the test gives up after 60 s).
    let all_closed = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(r) = slow.join_next().await {
            r.unwrap();
        }
    })
    .await;
    assert!(
        all_closed.is_ok(),
        "still open: {}",
        1000 - closed.load(Ordering::SeqCst)
    );
    assert_eq!(closed.load(Ordering::SeqCst), 1000);
}

#[tokio::test]
async fn past_the_connection_cap_a_new_connection_waits_for_a_free_slot() {
    let app = spawn_app_with(|c| {
        c.http_max_connections = 2;
        c.http_header_timeout = Duration::from_secs(120);
    })
    .await;
    let addr = format!("127.0.0.1:{}", app.port);
    let request = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    // Two kept-alive connections, each answered once: both slots are taken.
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut s = TcpStream::connect(&addr).await.unwrap();
        s.write_all(request).await.unwrap();
        let mut buf = [0u8; 12];
        s.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"HTTP/1.1 200");
        held.push(s);
    }
    // A third is queued by the kernel but not served while both are held.
    // (A negative check: on a slow machine it can only pass, never fail wrongly.)
    let mut third = TcpStream::connect(&addr).await.unwrap();
    third.write_all(request).await.unwrap();
    let mut buf = [0u8; 12];
    let early = tokio::time::timeout(Duration::from_millis(500), third.read_exact(&mut buf)).await;
    assert!(early.is_err(), "answered past the cap");
    // One slot comes free: the third is served.
    drop(held.pop());
    tokio::time::timeout(Duration::from_secs(30), third.read_exact(&mut buf))
        .await
        .expect("served once a slot was free")
        .unwrap();
    assert_eq!(&buf, b"HTTP/1.1 200");
}

/// A connection to the API's `port` from the loopback address `from`.
async fn connect_from(from: &str, port: u16) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
    socket
        .connect(format!("127.0.0.1:{port}").parse().unwrap())
        .await
        .unwrap()
}

/// GET /healthz on `stream`, kept alive, and read the whole answer: its
/// status line's first 12 bytes (nothing if the connection was closed).
async fn healthz(stream: &mut TcpStream) -> Vec<u8> {
    if stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .is_err()
    {
        return Vec::new();
    }
    let mut answer = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        if let Some(end) = answer.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&answer[..end]).to_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if answer.len() >= end + 4 + length {
                break;
            }
        }
        match stream.read(&mut buf).await {
            Ok(n) if n > 0 => answer.extend_from_slice(&buf[..n]),
            _ => return Vec::new(),
        }
    }
    answer.truncate(12);
    answer
}

#[tokio::test]
async fn one_address_past_its_own_cap_is_refused_while_another_is_served() {
    let app = spawn_app_with(|c| {
        c.http_max_connections_per_address = 5;
        c.http_header_timeout = Duration::from_secs(120);
        c.trusted_proxies = vec!["127.0.0.3/32".parse().unwrap()];
    })
    .await;
    let port = app.port;
    // Five connections from 127.0.0.1, each answered once and kept open.
    let mut held = Vec::new();
    for _ in 0..5 {
        let mut s = connect_from("127.0.0.1", port).await;
        assert_eq!(healthz(&mut s).await, b"HTTP/1.1 200");
        held.push(s);
    }
    // A sixth from the same address is answered 503 at once and closed.
    let mut sixth = connect_from("127.0.0.1", port).await;
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), sixth.read_to_end(&mut answer))
        .await
        .expect("the refusal closes the connection")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer).into_owned();
    assert!(
        answer.starts_with("HTTP/1.1 503 ")
            && answer.contains("retry-after: 5\r\n")
            && answer
                .ends_with("\"detail\":\"Too many connections from this address; retry later.\"}"),
        "{answer}"
    );
    // Another address is served, however many 127.0.0.1 holds.
    let mut other = connect_from("127.0.0.2", port).await;
    assert_eq!(healthz(&mut other).await, b"HTTP/1.1 200");
    // A trusted proxy carries many clients: it is exempt.
    let mut proxied = Vec::new();
    for _ in 0..6 {
        let mut s = connect_from("127.0.0.3", port).await;
        assert_eq!(healthz(&mut s).await, b"HTTP/1.1 200");
        proxied.push(s);
    }
    assert_eq!(proxied.len(), 6);
    // The five are still served; once one closes, the address has a slot again.
    for s in &mut held {
        assert_eq!(healthz(s).await, b"HTTP/1.1 200");
    }
    drop(held.pop());
    eventually("a slot of 127.0.0.1 comes free", || async {
        let mut s = connect_from("127.0.0.1", port).await;
        healthz(&mut s).await == b"HTTP/1.1 200"
    })
    .await;
    // Refusals are counted on /metrics.
    let metrics = app
        .http
        .get(app.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let refused: f64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("i9_http_connections_refused_total{limit=\"per_address\"} "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0.0);
    assert!(refused >= 1.0, "{metrics}");
}
