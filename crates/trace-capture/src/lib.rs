//! Tests only: capture everything `tracing` writes while one test runs, as text, without losing
//! events to the tests running beside it.
//!
//! **Why a crate.** `tracing` caches, per callsite and for the whole process, whether any
//! subscriber is interested in it. A test that installs its own subscriber for a scope
//! (`set_default`, `with_subscriber`) races its neighbours: when another thread reaches a
//! callsite first while a single subscriber exists, `tracing` asks only that thread's default
//! (none) and caches the callsite as uninteresting, so the test's subscriber never sees its
//! event. [`capture`] first installs, once per process, a global subscriber that records
//! nothing but answers "ask me each time" for every callsite, so no callsite is ever cached as
//! uninteresting and each event reaches the scoped subscriber of the thread that emits it.
//!
//! **Main item:** [`capture`], which returns the [`Captured`] text and the guard that keeps the
//! capture installed on this thread. Tests that use it run on a current-thread runtime, so
//! every poll of the code under test happens on the capturing thread.
//!
//! ```
//! let (captured, guard) = scaleset_trace_capture::capture();
//! tracing::info!(answer = 42, "computed");
//! drop(guard);
//! assert!(captured.text().contains("answer=42"));
//! ```

use std::sync::{Arc, Mutex, Once};

use tracing::subscriber::{DefaultGuard, Interest};
use tracing::{Event, Metadata, Subscriber, span};

/// Everything the capturing subscriber wrote, shared with it.
#[derive(Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    /// Everything written so far, as text (invalid UTF-8 replaced, never a panic).
    pub fn text(&self) -> String {
        let bytes = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Installs a TRACE `fmt` subscriber (no colours) as this thread's default, writing into the
/// returned [`Captured`]; the capture lasts as long as the returned guard.
pub fn capture() -> (Captured, DefaultGuard) {
    install_the_asking_global_subscriber();
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    (captured, tracing::subscriber::set_default(subscriber))
}

fn install_the_asking_global_subscriber() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Another global default (a test binary's own `try_init`) serves as well only if it
        // asks each time; ours is installed first in the binaries that use this crate.
        let _ = tracing::subscriber::set_global_default(AskEachTime);
    });
}

/// A subscriber that records nothing and is "sometimes" interested in every callsite, so
/// `tracing` asks the dispatchers alive at each event instead of caching "never".
struct AskEachTime;

impl Subscriber for AskEachTime {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        Interest::sometimes()
    }

    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(tracing::level_filters::LevelFilter::TRACE)
    }

    fn enabled(&self, _: &Metadata<'_>) -> bool {
        false
    }

    fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
        span::Id::from_u64(1)
    }

    fn record(&self, _: &span::Id, _: &span::Record<'_>) {}

    fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}

    fn event(&self, _: &Event<'_>) {}

    fn enter(&self, _: &span::Id) {}

    fn exit(&self, _: &span::Id) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The race, made deterministic: while this thread captures, another thread is the first
    /// to reach a callsite. `tracing` asks only that thread's default (none) when a single
    /// dispatcher exists, and would cache the callsite as uninteresting for the whole process.
    #[test]
    fn a_capture_sees_a_callsite_another_thread_reached_first_during_the_capture() {
        fn emit(who: &str) {
            tracing::debug!(who, "reached");
        }
        let (captured, guard) = capture();
        std::thread::spawn(|| emit("neighbour"))
            .join()
            .expect("neighbour thread");
        emit("me");
        drop(guard);
        let text = captured.text();
        assert!(text.contains("who=\"me\""), "{text:?}");
        assert!(!text.contains("neighbour"), "{text:?}");
    }
}
