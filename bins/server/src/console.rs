//! Printing to stdout and stderr without panicking. When the reader of a pipe went away
//! (`… | head -3`, a `tee` stopped by Ctrl-C), every write fails with EPIPE, and `println!`
//! would panic on it (exit 101, mid-shutdown). Output nobody reads is not an error worth a
//! message: the process carries on and exits with its own code.

use std::io::Write as _;

/// Writes `text` to stdout; a failed write (a closed pipe) is ignored.
pub(crate) fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

/// Writes `text` to stderr; a failed write (a closed pipe) is ignored.
pub(crate) fn err(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// `println!` that ignores a closed stdout.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::console::out(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` that ignores a closed stdout.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::console::out(&format!($($arg)*))
    };
}

/// `eprintln!` that ignores a closed stderr.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::console::err(&format!("{}\n", format_args!($($arg)*)))
    };
}
