//! SIGTERM and SIGINT, the stop of every scaleset process.

use std::marker::PhantomData;

use nix::sys::signal::{SigSet, Signal};

/// SIGTERM and SIGINT held pending from the first line of `main` until [`Deferred::install`]
/// has the handlers in place, so a signal that arrives while the process starts (parsing its
/// arguments, loading its configuration, building its runtime) stops it cleanly once it can,
/// instead of killing it (the default action) or being lost (issue 36, the chaos soak's seed
/// 203). The handlers need a Tokio runtime, and the runtime's blocking pool is sized from the
/// configuration, so they cannot come first; blocking the signals can. Before `main` (the
/// dynamic loader, Rust's runtime set-up) nothing of the binary runs: a signal there still
/// takes the default action.
///
/// Blocked on the calling thread: call it on the main thread before any other thread exists,
/// so that every thread the process starts inherits the block and only the main thread, which
/// unblocks in [`Deferred::install`], takes the signals. Child processes do not inherit it
/// (the standard library clears the signal mask of what it spawns). Dropped without
/// `install` (a path that serves nothing), it unblocks: a pending signal then takes its
/// default action, as it would have without the block.
#[derive(Debug)]
#[must_use = "dropping it unblocks the signals at once"]
pub struct Deferred {
    // The mask is per thread: unblocking on another thread than the one that blocked would
    // leave the main thread's block in place.
    not_send: PhantomData<*const ()>,
}

fn stop_signals() -> SigSet {
    let mut set = SigSet::empty();
    set.add(Signal::SIGTERM);
    set.add(Signal::SIGINT);
    set
}

impl Deferred {
    /// Blocks SIGTERM and SIGINT on this thread (see [`Deferred`]).
    pub fn block() -> Self {
        // pthread_sigmask fails only for an invalid `how`; were it to fail, the process would
        // be as it was without the block.
        let _ = stop_signals().thread_block();
        Self {
            not_send: PhantomData,
        }
    }

    /// Installs the handlers (inside a Tokio runtime, on the thread that called
    /// [`Deferred::block`]), then unblocks: a signal that arrived in between is delivered to
    /// them now and [`Signals::wait`] returns at once.
    ///
    /// # Errors
    ///
    /// The system refused a handler (the signals are unblocked all the same).
    pub fn install(self) -> std::io::Result<Signals> {
        let signals = Signals::install();
        drop(self);
        signals
    }
}

impl Drop for Deferred {
    fn drop(&mut self) {
        let _ = stop_signals().thread_unblock();
    }
}

/// The handlers, installed before anything a signal must stop cleanly (so a signal sent as
/// soon as the ready line shows is handled, not fatal).
#[derive(Debug)]
pub struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl Signals {
    /// Installs the handlers (inside a Tokio runtime). A binary's `main` goes through
    /// [`Deferred`] instead, which also covers the moments before the runtime exists.
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use nix::sys::signal::{SigSet, Signal, raise};

    use super::Deferred;

    fn blocked(signal: Signal) -> bool {
        SigSet::thread_get_mask()
            .expect("this thread's signal mask")
            .contains(signal)
    }

    /// Issue 36: a SIGTERM between the first line of `main` and the handlers waits for them
    /// instead of taking its default action (which would end this test process), and is
    /// delivered to them once they are installed.
    #[test]
    fn a_signal_before_the_handlers_waits_pending_and_reaches_them_once_installed() {
        let deferred = Deferred::block();
        assert!(blocked(Signal::SIGTERM) && blocked(Signal::SIGINT));
        // Thread-directed: pending on this thread, which blocks it.
        raise(Signal::SIGTERM).expect("raise SIGTERM");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let received = runtime.block_on(async {
            let signals = deferred.install().expect("the handlers");
            tokio::time::timeout(Duration::from_secs(30), signals.wait())
                .await
                .ok()
        });
        assert_eq!(received, Some("SIGTERM"));
        assert!(!blocked(Signal::SIGTERM) && !blocked(Signal::SIGINT));
    }

    /// A path that serves nothing drops it: the signals are unblocked, as without it.
    #[test]
    fn dropped_without_install_it_unblocks_the_signals() {
        let deferred = Deferred::block();
        assert!(blocked(Signal::SIGTERM) && blocked(Signal::SIGINT));
        drop(deferred);
        assert!(!blocked(Signal::SIGTERM) && !blocked(Signal::SIGINT));
    }
}
