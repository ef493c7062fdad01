//! The console of every binary, set up once: logging to stderr (text or JSON, filtered by
//! `RUST_LOG`), and printing to stdout and stderr without panicking. When the reader of a pipe
//! went away (`… | head -3`, a `tee` stopped by Ctrl-C), every write fails with EPIPE, and
//! `println!` would panic on it (exit 101, mid-shutdown). Output nobody reads is not an error
//! worth a message: the process carries on and exits with its own code.

use std::io::Write as _;

/// How logs are written (`--log-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Logs to stderr in `format`, filtered by `RUST_LOG` (else `default`, e.g. `info`). Call it
/// once, first thing after the configuration is read; a second call changes nothing.
pub fn init_tracing(format: LogFormat, default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // Colour codes only for a terminal: in a file or a log collector they are noise.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    // `try_init`: a subscriber set already (a test, a second call) is kept.
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}

/// Writes `text` to stdout; a failed write (a closed pipe) is ignored.
pub fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

/// Writes `text` to stderr; a failed write (a closed pipe) is ignored.
pub fn err(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// `print!` that ignores a closed stdout.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::console::out(&format!($($arg)*))
    };
}

/// `println!` that ignores a closed stdout.
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::console::out(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprintln!` that ignores a closed stderr.
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::console::err(&format!("{}\n", format_args!($($arg)*)))
    };
}
