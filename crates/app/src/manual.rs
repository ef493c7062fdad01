//! Shell completions and man pages of the server-side binaries, generated from the clap
//! definitions they parse with (`scaleset-server completions bash`, `scaleset-worker man
//! --dir DIR`), so that they cannot drift from the binaries. `scalesetctl` has its own copy of
//! these few lines: it is built without this crate.

use std::path::{Path, PathBuf};

pub use clap_complete::Shell;

use crate::Exit;

/// `man`'s arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct ManArgs {
    /// Write one page per command (`NAME.1`, `NAME-SUBCOMMAND.1`, …) into this directory
    /// instead of the main page to stdout.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// The completion script of `command` for `shell`.
pub fn completions(mut command: clap::Command, shell: Shell) -> String {
    let name = command.get_name().to_owned();
    let mut script = Vec::new();
    // Into memory: the generators panic on a failed write, and stdout may be a closed pipe.
    clap_complete::generate(shell, &mut command, name, &mut script);
    String::from_utf8_lossy(&script).into_owned()
}

/// Prints the completion script of `command` for `shell`.
pub fn print_completions(command: clap::Command, shell: Shell) -> Exit {
    crate::console::out(&completions(command, shell));
    Exit::Done
}

/// Prints the man page of `command` (its subcommands listed), or with `args.dir` writes one
/// page per command there.
pub fn print_man(command: clap::Command, args: &ManArgs) -> Exit {
    let name = command.get_name().to_owned();
    match man(command, args.dir.as_deref()) {
        Ok(text) => {
            crate::console::out(&text);
            Exit::Done
        }
        Err(e) => {
            crate::errln!("{name} man: {}", scaleset_store::chain(&e));
            Exit::Failed
        }
    }
}

/// Why the man pages could not be rendered or written.
#[derive(Debug, thiserror::Error)]
enum ManError {
    /// Rendering to memory failed.
    #[error("cannot render the man page")]
    Render(#[source] std::io::Error),
    /// The directory could not be made.
    #[error("cannot create the directory {}; give a writable --dir", dir.display())]
    CreateDir {
        /// The directory.
        dir: std::path::PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The pages could not be written.
    #[error("cannot write the man pages into {}; give a writable --dir", dir.display())]
    Write {
        /// The directory.
        dir: std::path::PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// The man page of `command`, or with `dir` the line saying where the pages were written.
fn man(command: clap::Command, dir: Option<&Path>) -> Result<String, ManError> {
    let Some(dir) = dir else {
        let mut page = Vec::new();
        clap_mangen::Man::new(command)
            .render(&mut page)
            .map_err(ManError::Render)?;
        return Ok(String::from_utf8_lossy(&page).into_owned());
    };
    std::fs::create_dir_all(dir).map_err(|source| ManError::CreateDir {
        dir: dir.to_owned(),
        source,
    })?;
    clap_mangen::generate_to(command, dir).map_err(|source| ManError::Write {
        dir: dir.to_owned(),
        source,
    })?;
    Ok(format!("man pages written to {}\n", dir.display()))
}
