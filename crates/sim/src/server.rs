//! Serving: the accept loop on an already-bound listener, one HTTP/1.1 connection task per
//! client, the timer task, and graceful shutdown when the shutdown future completes (held
//! long-polls answer 202 at once).

use std::convert::Infallible;
use std::future::Future;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio_util::task::TaskTracker;

use crate::Simulator;
use crate::error::Error;
use crate::simulator::Shared;

impl Simulator {
    /// Serves the simulated GitHub (REST under `/api/v3/`, the Actions service under the
    /// configured base path, the queue on its path, the control API under `/_sim/`) on
    /// `listener` until `shutdown` completes, then answers held long-polls with 202, closes
    /// every connection and returns. A simulator is served once: after shutdown its long-polls
    /// no longer wait.
    pub async fn serve(
        &self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<(), Error> {
        let shared = self.shared.clone();
        let tracker = TaskTracker::new();
        tracker.spawn(ticker(shared.clone()));
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => {
                        let shared = shared.clone();
                        tracker.spawn(connection(shared, stream));
                    }
                    Err(error) => {
                        // Typically EMFILE: back off instead of spinning.
                        tracing::warn!(%error, "accept failed");
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                },
            }
        }
        shared.shutdown.cancel();
        tracker.close();
        tracker.wait().await;
        Ok(())
    }
}

async fn ticker(shared: std::sync::Arc<Shared>) {
    let mut interval = tokio::time::interval(shared.config.tick_interval);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = interval.tick() => shared.tick(),
            () = shared.shutdown.cancelled() => return,
        }
    }
}

async fn connection(shared: std::sync::Arc<Shared>, stream: tokio::net::TcpStream) {
    let handler = shared.clone();
    let service = service_fn(move |req| {
        let shared = handler.clone();
        async move { Ok::<_, Infallible>(crate::service::handle(shared, req).await) }
    });
    let conn =
        hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    tokio::select! {
        result = conn.as_mut() => {
            if let Err(error) = result {
                tracing::debug!(%error, "connection ended with an error");
            }
        }
        () = shared.shutdown.cancelled() => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        }
    }
}
