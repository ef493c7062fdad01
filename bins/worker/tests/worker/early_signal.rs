//! A SIGTERM that reaches the worker while it is still starting (issue 36: the chaos soak's
//! seed 203 signalled a worker it had just started, within the same millisecond, and it died of
//! the signal instead of exiting 0).
//!
//! The window the binary can close starts at the first line of `main`: before that the dynamic
//! loader and Rust's runtime set-up run, and a SIGTERM there takes the default action (death)
//! whatever the binary does. So the test signals only once Rust's runtime set-up has run, which
//! it sees from outside with no hook in the binary: that set-up ignores SIGPIPE and then installs
//! its stack-overflow handler for SIGSEGV (the `SigIgn` and `SigCgt` masks of
//! `/proc/PID/status`), the last thing it does with a system call before it calls `main`. The
//! test then signals 0.2 to 20 ms after that (not at once: a few instructions of that set-up
//! remain, and on a loaded machine the process can be descheduled there): through the argument
//! parsing, the configuration load, the runtime's build, the store's opening and the start of
//! the loop. On the binary before the fix about half of them died of the signal.

use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::helpers::{self, Worker, worker_env};

/// A signal's bit in the masks of `/proc/PID/status`.
const fn bit(signal: Signal) -> u64 {
    1 << (signal as u64 - 1)
}

/// Whether Rust's runtime set-up of `pid` has run: SIGPIPE ignored, then SIGSEGV caught (the
/// stack-overflow handler), just before `main`.
fn reached_main(pid: Pid) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    let mask = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
            .unwrap_or(0)
    };
    mask("SigIgn:") & bit(Signal::SIGPIPE) != 0 && mask("SigCgt:") & bit(Signal::SIGSEGV) != 0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigterm_while_the_worker_starts_stops_it_with_exit_0_and_its_sessions_deleted() {
    let (sim, site) = helpers::linux_site().await;
    let delays_us = [
        200, 500, 1_000, 2_000, 3_000, 5_000, 8_000, 10_000, 15_000, 20_000,
    ];
    let rounds = 4;
    let mut outcomes = Vec::new();
    for _ in 0..rounds {
        for delay in delays_us {
            let worker = Worker::spawn(&site.config(), &worker_env());
            let pid = worker.pid();
            // Busy-polled: a sleep between reads would let the start run past the window.
            let started = Instant::now();
            while !reached_main(pid) {
                assert!(
                    started.elapsed() < Duration::from_secs(30),
                    "worker pid {pid} never reached main"
                );
                std::thread::yield_now();
            }
            std::thread::sleep(Duration::from_micros(delay));
            kill(pid, Signal::SIGTERM).expect("signal the worker");
            let code = worker.exit_code().await;
            outcomes.push((delay, code));
        }
    }
    let bad: Vec<_> = outcomes
        .iter()
        .filter(|(_, code)| *code != Some(0))
        .collect();
    assert!(
        bad.is_empty(),
        "{} of {} workers signalled while starting did not exit 0 (delay µs, exit code; None: \
         killed by the signal): {bad:?}",
        bad.len(),
        outcomes.len()
    );
    // A worker signalled after it opened a session deleted it before exiting.
    if let Some(id) = sim.scale_set_id("linux") {
        assert!(!sim.has_session(id), "a session was left open");
    }
}
