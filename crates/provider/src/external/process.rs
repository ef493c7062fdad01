//! Running one executable call: a cleared environment, stdin written and
//! stdout/stderr read concurrently (so a chatty child cannot deadlock on a
//! full pipe), bounded buffers, and a per-call timeout that kills the whole
//! process group. Nothing the call started outlives it.

use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command as ProcessCommand};

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
        let feed = async {
            if let (Some(mut pipe), Some(bytes)) = (stdin_pipe, stdin) {
                // A child that exits without reading stdin closes the pipe;
                // that is its business, so write errors are not ours to report.
                let _ = pipe.write_all(&bytes).await;
                let _ = pipe.shutdown().await;
            }
        };
        let wait = async {
            let status = child.wait().await;
            // The executable is done: anything it left running in its group
            // is killed, so a background straggler holding our pipes cannot
            // stall the call.
            group.kill();
            status
        };
        let ((), status, stdout, stderr) = tokio::join!(
            feed,
            wait,
            read_head(stdout_pipe, stdout_limit),
            read_tail(stderr_pipe, stderr_limit)
        );
        let io = |source| Error::Io { command, source };
        let status = status.map_err(io)?;
        let (stdout, stdout_overflowed) = stdout.map_err(io)?;
        let stderr_tail = stderr.map_err(io)?;
        Ok(Outcome {
            status,
            stdout,
            stdout_overflowed,
            stderr_tail,
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

/// Reads to end of stream, keeping the first `limit` bytes; reports overflow.
async fn read_head(
    pipe: Option<impl AsyncRead + Unpin>,
    limit: usize,
) -> std::io::Result<(Vec<u8>, bool)> {
    let mut kept = Vec::new();
    let mut overflowed = false;
    let Some(mut pipe) = pipe else {
        return Ok((kept, overflowed));
    };
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        let n = pipe.read(&mut chunk).await?;
        if n == 0 {
            return Ok((kept, overflowed));
        }
        let room = limit.saturating_sub(kept.len());
        if n > room {
            overflowed = true;
        }
        kept.extend_from_slice(&chunk[..n.min(room)]);
    }
}

/// Reads to end of stream, keeping only the last `limit` bytes (memory stays
/// below twice the limit plus one chunk).
async fn read_tail(pipe: Option<impl AsyncRead + Unpin>, limit: usize) -> std::io::Result<Vec<u8>> {
    let mut kept = Vec::new();
    let Some(mut pipe) = pipe else {
        return Ok(kept);
    };
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        let n = pipe.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        kept.extend_from_slice(&chunk[..n]);
        if kept.len() > limit.saturating_mul(2) {
            kept.drain(..kept.len() - limit);
        }
    }
    if kept.len() > limit {
        kept.drain(..kept.len() - limit);
    }
    Ok(kept)
}
