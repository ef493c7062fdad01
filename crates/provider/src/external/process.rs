//! Running one executable call: a cleared environment, stdin written and
//! stdout/stderr read concurrently (so a chatty child cannot deadlock on a
//! full pipe), bounded buffers, and a per-call timeout that kills the whole
//! process group. Nothing the call started outlives it.
//!
//! The call ends when the executable exits, not when its pipes close. Once it
//! has exited, everything it wrote is in our buffers or in the pipes' kernel
//! buffers (a write to a pipe returns only once its bytes are in the pipe), so
//! the readers take what is left without waiting and stop. A helper the
//! executable left holding stdout or stderr (one that escaped the process
//! group by starting its own session, as `setsid` does) therefore cannot hold
//! the call open until the timeout. GARM instead waits until every holder of
//! the pipes has closed them, which such a helper delays without bound.

use std::os::fd::AsFd;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command as ProcessCommand};
use tokio::sync::watch;

use crate::command::Command;
use crate::error::Error;

/// One call of the executable.
pub(crate) struct Invocation<'a> {
    pub(crate) command: Command,
    pub(crate) executable: &'a Path,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) stdin: Option<Vec<u8>>,
    pub(crate) timeout: Duration,
    pub(crate) stdout_limit: usize,
    pub(crate) stderr_limit: usize,
}

/// How the call ended, when it ended by itself.
pub(crate) struct Outcome {
    pub(crate) status: ExitStatus,
    /// The first `stdout_limit` bytes.
    pub(crate) stdout: Vec<u8>,
    /// Whether stdout had more than `stdout_limit` bytes.
    pub(crate) stdout_overflowed: bool,
    /// The last `stderr_limit` bytes.
    pub(crate) stderr_tail: Vec<u8>,
}

/// How often a spawn that hit "text file busy" is retried. That error is
/// transient: it happens when the executable is still open for writing in
/// some process (being installed, or a fork of a thread that just wrote it).
const BUSY_RETRIES: u32 = 20;

/// Size of one read from a pipe.
const CHUNK: usize = 16 * 1024;

/// The most taken from one pipe after the executable exited. What it wrote is
/// at most one pipe buffer (Linux allows up to 1 MiB by default); a helper
/// that keeps writing past that must not keep the call reading forever.
const DRAIN_LIMIT: usize = 1024 * 1024;

/// Runs the call to completion or timeout.
pub(crate) async fn run(invocation: Invocation<'_>) -> Result<Outcome, Error> {
    let Invocation {
        command,
        executable,
        env,
        stdin,
        timeout,
        stdout_limit,
        stderr_limit,
    } = invocation;

    let mut process = ProcessCommand::new(executable);
    process
        .env_clear()
        .envs(env)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        // A new process group led by the child: everything it starts can be
        // killed together.
        .process_group(0);

    let mut child = spawn(&mut process, executable).await?;
    let group = ProcessGroup::of(&child);

    let stdin_pipe = child.stdin.take();
    let stdout_pipe = child.stdout.take();
    let stderr_pipe = child.stderr.take();

    let work = async {
        let (exited, exit_seen) = watch::channel(false);
        let mut feed_exit_seen = exit_seen.clone();
        let feed = async {
            if let (Some(mut pipe), Some(bytes)) = (stdin_pipe, stdin) {
                // A child that exits without reading stdin closes the pipe;
                // that is its business, so write errors are not ours to report.
                // Nor is a helper that kept stdin open without reading it: once
                // the executable has exited, writing stops and the pipe closes.
                tokio::select! {
                    _ = async {
                        let _ = pipe.write_all(&bytes).await;
                        let _ = pipe.shutdown().await;
                    } => {}
                    _ = feed_exit_seen.wait_for(|done| *done) => {}
                }
            }
        };
        let wait = async {
            let status = child.wait().await;
            // The executable is done: anything it left running in its group
            // is killed, and the readers take what is left and stop, so a
            // straggler holding our pipes cannot stall the call.
            group.kill();
            exited.send_replace(true);
            status
        };
        let mut head = Head::new(stdout_limit);
        let mut tail = Tail::new(stderr_limit);
        let ((), status, stdout, stderr) = tokio::join!(
            feed,
            wait,
            collect(stdout_pipe, exit_seen.clone(), &mut head),
            collect(stderr_pipe, exit_seen, &mut tail)
        );
        let io = |source| Error::Io { command, source };
        let status = status.map_err(io)?;
        stdout.map_err(io)?;
        stderr.map_err(io)?;
        Ok(Outcome {
            status,
            stdout: head.kept,
            stdout_overflowed: head.overflowed,
            stderr_tail: tail.finish(),
        })
    };

    let finished = tokio::time::timeout(timeout, work).await;
    match finished {
        Ok(outcome) => {
            group.disarm();
            outcome
        }
        Err(_elapsed) => {
            group.kill();
            // The leader is in the group and was killed with it; reap it.
            let _ = child.start_kill();
            let _ = child.wait().await;
            group.disarm();
            Err(Error::Timeout {
                command,
                after: timeout,
            })
        }
    }
}

#[allow(
    clippy::disallowed_methods,
    reason = "a spawn that met ETXTBSY retries after a short pause: nothing to wait on but time"
)]
async fn spawn(process: &mut ProcessCommand, executable: &Path) -> Result<Child, Error> {
    let mut attempt = 0;
    loop {
        match process.spawn() {
            Ok(child) => return Ok(child),
            Err(cause)
                if cause.raw_os_error() == Some(nix::errno::Errno::ETXTBSY as i32)
                    && attempt < BUSY_RETRIES =>
            {
                attempt += 1;
                tokio::time::sleep(Duration::from_millis(5 * u64::from(attempt))).await;
            }
            Err(cause) => {
                return Err(Error::Spawn {
                    path: executable.to_path_buf(),
                    cause,
                });
            }
        }
    }
}

/// The child's process group; killed on drop unless disarmed, so a cancelled
/// call (its future dropped) leaves nothing running.
struct ProcessGroup {
    id: Option<Pid>,
    armed: AtomicBool,
}

impl ProcessGroup {
    fn of(child: &Child) -> Self {
        Self {
            id: child
                .id()
                .and_then(|pid| i32::try_from(pid).ok())
                .map(Pid::from_raw),
            armed: AtomicBool::new(true),
        }
    }

    fn kill(&self) {
        if let Some(id) = self.id {
            // ESRCH (nothing left in the group) is the common, fine case.
            let _ = killpg(id, Signal::SIGKILL);
        }
    }

    fn disarm(&self) {
        self.armed.store(false, Ordering::SeqCst);
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        if self.armed.load(Ordering::SeqCst) {
            self.kill();
        }
    }
}

/// Where the bytes read from one pipe go.
trait Keep {
    fn keep(&mut self, bytes: &[u8]);
}

/// The first `limit` bytes, and whether there were more.
struct Head {
    kept: Vec<u8>,
    limit: usize,
    overflowed: bool,
}

impl Head {
    fn new(limit: usize) -> Self {
        Self {
            kept: Vec::new(),
            limit,
            overflowed: false,
        }
    }
}

impl Keep for Head {
    fn keep(&mut self, bytes: &[u8]) {
        let room = self.limit.saturating_sub(self.kept.len());
        if bytes.len() > room {
            self.overflowed = true;
        }
        self.kept.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }
}

/// The last `limit` bytes (memory stays below twice the limit plus a chunk).
struct Tail {
    kept: Vec<u8>,
    limit: usize,
}

impl Tail {
    fn new(limit: usize) -> Self {
        Self {
            kept: Vec::new(),
            limit,
        }
    }

    fn finish(mut self) -> Vec<u8> {
        if self.kept.len() > self.limit {
            self.kept.drain(..self.kept.len() - self.limit);
        }
        self.kept
    }
}

impl Keep for Tail {
    fn keep(&mut self, bytes: &[u8]) {
        self.kept.extend_from_slice(bytes);
        if self.kept.len() > self.limit.saturating_mul(2) {
            self.kept.drain(..self.kept.len() - self.limit);
        }
    }
}

/// Reads a pipe until end of stream or until the executable has exited, then
/// takes what the pipe still holds without waiting (see the module docs).
/// Reading continues past any bound, so the writer never blocks on us.
async fn collect<P: AsyncRead + AsFd + Unpin>(
    pipe: Option<P>,
    mut exited: watch::Receiver<bool>,
    keep: &mut impl Keep,
) -> std::io::Result<()> {
    let Some(mut pipe) = pipe else {
        return Ok(());
    };
    let mut chunk = vec![0u8; CHUNK];
    loop {
        tokio::select! {
            read = pipe.read(&mut chunk) => {
                let n = read?;
                if n == 0 {
                    return Ok(());
                }
                keep.keep(&chunk[..n]);
            }
            // Also taken when the sender is gone: the call is over either way.
            _ = exited.wait_for(|done| *done) => break,
        }
    }
    drain(&pipe, &mut chunk, keep)
}

/// Takes what a pipe holds right now. The read goes to the descriptor itself
/// (tokio keeps it non-blocking) rather than through the runtime, whose
/// readiness may not have caught up with bytes already in the pipe.
fn drain(pipe: &impl AsFd, chunk: &mut [u8], keep: &mut impl Keep) -> std::io::Result<()> {
    let mut drained = 0;
    while drained < DRAIN_LIMIT {
        match nix::unistd::read(pipe, chunk) {
            Ok(0) | Err(Errno::EAGAIN) => break,
            Ok(n) => {
                keep.keep(&chunk[..n]);
                drained += n;
            }
            Err(Errno::EINTR) => {}
            Err(errno) => return Err(errno.into()),
        }
    }
    Ok(())
}
