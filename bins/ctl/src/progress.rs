//! Progress for a request that takes more than a moment (`apply`): after a short delay, a
//! line on stderr saying what is waited for and for how long, redrawn in place on a terminal
//! and printed once otherwise. stdout stays clean for the result (and for JSON).

use std::io::{IsTerminal as _, Write as _};
use std::time::{Duration, Instant};

/// Nothing is shown for requests answered sooner than this.
const QUIET_FOR: Duration = Duration::from_millis(700);
/// How often the terminal line is redrawn.
const TICK: Duration = Duration::from_millis(250);

/// Runs `work`, showing `what` with the elapsed time on stderr while it takes longer than a
/// moment. `show` is false under `--quiet`.
#[allow(
    clippy::disallowed_methods,
    reason = "the progress line redraws every interval"
)]
pub(crate) async fn while_waiting<F: std::future::Future>(
    what: &str,
    show: bool,
    work: F,
) -> F::Output {
    if !show {
        return work.await;
    }
    let tty = std::io::stderr().is_terminal();
    let started = Instant::now();
    tokio::pin!(work);
    let mut shown = false;
    let output = loop {
        let wait = if shown { TICK } else { QUIET_FOR };
        tokio::select! {
            output = &mut work => break output,
            () = tokio::time::sleep(wait) => {
                let elapsed = started.elapsed().as_secs();
                let mut err = std::io::stderr().lock();
                if tty {
                    let _ = write!(err, "\r\x1b[2K{what}… {elapsed}s");
                } else if !shown {
                    let _ = writeln!(err, "{what}…");
                }
                let _ = err.flush();
                shown = true;
            }
        }
    };
    if shown && tty {
        let _ = write!(std::io::stderr(), "\r\x1b[2K");
    }
    output
}
