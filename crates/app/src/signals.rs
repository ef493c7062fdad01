//! SIGTERM and SIGINT, the stop of every scaleset process.

/// The handlers, installed before anything a signal must stop cleanly (so a signal sent as
/// soon as the ready line shows is handled, not fatal).
#[derive(Debug)]
pub struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl Signals {
    /// Installs the handlers (inside a Tokio runtime).
    ///
    /// # Errors
    ///
    /// The system refused a handler.
    pub fn install() -> std::io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
        })
    }

    /// Waits for the first of them; returns its name.
    pub async fn wait(mut self) -> &'static str {
        tokio::select! {
            _ = self.term.recv() => "SIGTERM",
            _ = self.int.recv() => "SIGINT",
        }
    }
}
