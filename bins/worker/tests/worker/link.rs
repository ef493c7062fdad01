//! A network link the soak controls: a TCP proxy on a loopback port between one worker and
//! one server (its PostgreSQL, or the simulator standing in for GitHub), whose [`Fault`] the
//! harness sets and heals while both sides keep running. The worker binary and PostgreSQL run
//! unchanged: the worker's configuration names the proxy instead of the server.
//!
//! What each fault does to the bytes (not to the processes):
//! - [`Fault::Drop`]: packets vanish. New connections are accepted and never answered; bytes on
//!   existing ones are held, not forwarded, so every request hangs (the TCP stack would retry,
//!   and the bytes arrive after the heal, as held bytes do here).
//! - [`Fault::Reject`]: connection refused. Existing connections are closed at once, new ones
//!   closed as soon as they are accepted.
//! - [`Fault::Slow`]: each chunk forwarded after `latency_ms`, at most `bytes_per_sec`.
//! - [`Fault::OneWay`]: one direction held as under `Drop`, the other passes (a request
//!   arrives and its answer never does, or the other way round).
//!
//! A link connects upstream from its own loopback source address when given one, so the
//! simulator's request log (which records each client's address) says which worker sent what.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::watch;

/// A direction of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    /// From the worker to the server (requests).
    Up,
    /// From the server to the worker (answers).
    Down,
}

/// What a link does to its traffic now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// Every byte forwarded at once.
    Pass,
    /// Nothing forwarded, connections hang.
    Drop,
    /// Connections refused (closed at once).
    Reject,
    /// Latency per chunk and a bandwidth cap.
    Slow { latency_ms: u64, bytes_per_sec: u64 },
    /// One direction held, the other passes.
    OneWay(Direction),
}

impl Fault {
    /// Whether bytes going `direction` are held now.
    fn holds(self, direction: Direction) -> bool {
        match self {
            Self::Drop => true,
            Self::OneWay(held) => held == direction,
            Self::Pass | Self::Reject | Self::Slow { .. } => false,
        }
    }
}

/// One proxied link; it stops (closing every connection) when dropped.
pub(crate) struct Link {
    /// Where the worker connects.
    pub(crate) addr: SocketAddr,
    fault: watch::Sender<Fault>,
    accept: tokio::task::JoinHandle<()>,
}

impl Link {
    /// A link on a fresh loopback port to `upstream`, connecting from `source` (port 0) when
    /// given.
    pub(crate) async fn start(
        upstream: SocketAddr,
        source: Option<IpAddr>,
    ) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (fault, watching) = watch::channel(Fault::Pass);
        let accept = tokio::spawn(accept_loop(listener, upstream, source, watching));
        Ok(Self {
            addr,
            fault,
            accept,
        })
    }

    /// Sets the link's fault (`Fault::Pass` heals it).
    pub(crate) fn set(&self, fault: Fault) {
        self.fault.send_replace(fault);
    }

    /// The fault now.
    pub(crate) fn fault(&self) -> Fault {
        *self.fault.borrow()
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

async fn accept_loop(
    listener: TcpListener,
    upstream: SocketAddr,
    source: Option<IpAddr>,
    mut fault: watch::Receiver<Fault>,
) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        if *fault.borrow_and_update() == Fault::Reject {
            drop(client);
            continue;
        }
        tokio::spawn(connection(client, upstream, source, fault.clone()));
    }
}

/// One client connection: held while the link drops, then connected upstream and pumped both
/// ways until either side closes or the link rejects.
async fn connection(
    client: TcpStream,
    upstream: SocketAddr,
    source: Option<IpAddr>,
    mut fault: watch::Receiver<Fault>,
) {
    // A connection accepted during a drop is not answered until the heal (a SYN retried).
    loop {
        let now = *fault.borrow_and_update();
        match now {
            Fault::Reject => return,
            Fault::Drop => {
                if fault.changed().await.is_err() {
                    return;
                }
            }
            _ => break,
        }
    }
    let Ok(server) = connect(upstream, source).await else {
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let up = pump(client_read, server_write, Direction::Up, fault.clone());
    let down = pump(server_read, client_write, Direction::Down, fault);
    // Either direction ending on a reject or an error ends both (the halves drop); an orderly
    // end of one direction waits for the other.
    tokio::pin!(up, down);
    tokio::select! {
        end = &mut up => if end == End::Closed { down.await; },
        end = &mut down => if end == End::Closed { up.await; },
    }
}

async fn connect(upstream: SocketAddr, source: Option<IpAddr>) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    if let Some(ip) = source {
        socket.bind(SocketAddr::new(ip, 0))?;
    }
    socket.connect(upstream).await
}

#[derive(Debug, PartialEq, Eq)]
enum End {
    /// The reading side closed in order (its write half was shut down after).
    Closed,
    /// An error, or the link rejected: the connection is over.
    Broken,
}

/// Forwards `from` to `to` under the link's fault.
#[allow(
    clippy::disallowed_methods,
    reason = "a slow link delays what it forwards: the latency is the fault, not a wait"
)]
async fn pump(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    direction: Direction,
    mut fault: watch::Receiver<Fault>,
) -> End {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let read = tokio::select! {
            read = from.read(&mut buf) => read,
            changed = fault.changed() => {
                if changed.is_err() || *fault.borrow() == Fault::Reject {
                    return End::Broken;
                }
                continue;
            }
        };
        let n = match read {
            Ok(0) => {
                let _ = to.shutdown().await;
                return End::Closed;
            }
            Ok(n) => n,
            Err(_) => return End::Broken,
        };
        // Held while the fault holds this direction; a reject ends the connection.
        loop {
            let now = *fault.borrow_and_update();
            if now == Fault::Reject {
                return End::Broken;
            }
            if !now.holds(direction) {
                if let Fault::Slow {
                    latency_ms,
                    bytes_per_sec,
                } = now
                {
                    let transfer = (n as u64).saturating_mul(1000) / bytes_per_sec.max(1);
                    tokio::time::sleep(Duration::from_millis(latency_ms + transfer)).await;
                }
                break;
            }
            if fault.changed().await.is_err() {
                return End::Broken;
            }
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return End::Broken;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// An echo server on a loopback port; its accepted peers' addresses are sent on `peers`.
    async fn echo() -> (SocketAddr, tokio::sync::mpsc::UnboundedReceiver<SocketAddr>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((mut stream, peer)) = listener.accept().await {
                let _ = tx.send(peer);
                tokio::spawn(async move {
                    let mut buf = [0u8; 1024];
                    while let Ok(n) = stream.read(&mut buf).await {
                        if n == 0 || stream.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        (addr, rx)
    }

    /// Sends `text` and reads its echo, giving up after `within`: `None` when nothing came.
    async fn round_trip(stream: &mut TcpStream, text: &[u8], within: Duration) -> Option<Vec<u8>> {
        stream.write_all(text).await.ok()?;
        let mut buf = vec![0u8; text.len()];
        tokio::time::timeout(within, stream.read_exact(&mut buf))
            .await
            .ok()?
            .ok()?;
        Some(buf)
    }

    #[tokio::test]
    async fn a_link_passes_holds_while_dropping_delivers_after_the_heal_and_refuses_on_reject() {
        let (server, mut peers) = echo().await;
        let link = Link::start(server, Some(IpAddr::from([127, 0, 0, 33])))
            .await
            .expect("link");
        let mut stream = TcpStream::connect(link.addr).await.expect("connect");
        assert_eq!(
            round_trip(&mut stream, b"one", Duration::from_secs(5)).await,
            Some(b"one".to_vec())
        );
        let peer = peers.recv().await.expect("a peer");
        assert_eq!(
            peer.ip(),
            IpAddr::from([127, 0, 0, 33]),
            "from its own source address"
        );

        // Dropping: the bytes are held, then delivered after the heal.
        link.set(Fault::Drop);
        assert_eq!(
            round_trip(&mut stream, b"two", Duration::from_millis(300)).await,
            None
        );
        link.set(Fault::Pass);
        let mut buf = [0u8; 3];
        stream
            .read_exact(&mut buf)
            .await
            .expect("delivered after the heal");
        assert_eq!(&buf, b"two");

        // One way: requests pass, answers are held.
        link.set(Fault::OneWay(Direction::Down));
        assert_eq!(
            round_trip(&mut stream, b"3", Duration::from_millis(300)).await,
            None
        );
        link.set(Fault::Pass);
        let mut one = [0u8; 1];
        stream
            .read_exact(&mut one)
            .await
            .expect("the answer after the heal");

        // Slow: about the latency asked for.
        link.set(Fault::Slow {
            latency_ms: 150,
            bytes_per_sec: 1_000_000,
        });
        let started = Instant::now();
        assert!(
            round_trip(&mut stream, b"4", Duration::from_secs(5))
                .await
                .is_some()
        );
        assert!(
            started.elapsed() >= Duration::from_millis(300),
            "both ways delayed"
        );

        // Reject: the open connection ends, a new one is closed at once.
        link.set(Fault::Reject);
        let mut end = [0u8; 1];
        let closed = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut end))
            .await
            .expect("closed within 5 s");
        assert!(matches!(closed, Ok(0) | Err(_)), "{closed:?}");
        let mut fresh = TcpStream::connect(link.addr)
            .await
            .expect("accepted, then closed");
        let refused = tokio::time::timeout(Duration::from_secs(5), fresh.read(&mut end))
            .await
            .expect("closed within 5 s");
        assert!(matches!(refused, Ok(0) | Err(_)), "{refused:?}");
        assert_eq!(link.fault(), Fault::Reject);
    }
}
