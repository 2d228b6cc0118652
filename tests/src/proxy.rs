//! A TCP proxy between the service and RabbitMQ that a test can cut and
//! restore: the broker stays real, the network fails.

use std::sync::{
    atomic::{AtomicBool, AtomicUsize, Ordering},
    Arc,
};

use tokio::{
    net::{TcpListener, TcpStream},
    sync::watch,
};

pub struct TcpProxy {
    pub port: u16,
    up: Arc<AtomicBool>,
    accepted: Arc<AtomicUsize>,
    cut_tx: watch::Sender<u64>,
}

impl TcpProxy {
    pub async fn start(target: &'static str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let port = listener.local_addr().expect("addr").port();
        let up = Arc::new(AtomicBool::new(true));
        let (cut_tx, cut_rx) = watch::channel(0u64);
        let accepted = Arc::new(AtomicUsize::new(0));
        let (up2, accepted2) = (up.clone(), accepted.clone());
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if !up2.load(Ordering::SeqCst) {
                    drop(inbound); // refused while cut
                    continue;
                }
                accepted2.fetch_add(1, Ordering::SeqCst);
                let mut cut = cut_rx.clone();
                cut.borrow_and_update(); // only cuts from now on count
                tokio::spawn(async move {
                    let Ok(mut outbound) = TcpStream::connect(target).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = cut.changed() => {}
                    }
                });
            }
        });
        Self {
            port,
            up,
            accepted,
            cut_tx,
        }
    }

    /// Connections relayed so far (those refused while cut not included).
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    pub fn amqp_url(&self) -> String {
        format!("amqp://guest:guest@127.0.0.1:{}/%2f", self.port)
    }

    /// Drop every connection and refuse new ones.
    pub fn cut(&self) {
        self.up.store(false, Ordering::SeqCst);
        self.cut_tx.send_modify(|n| *n += 1);
    }

    pub fn restore(&self) {
        self.up.store(true, Ordering::SeqCst);
    }
}
