//! `scalesetctl completions SHELL` and `scalesetctl man [--dir DIR]`: generated from the clap
//! definitions the binary parses with, so they cannot drift from it. (The server and the
//! worker have the same in `scaleset_app::manual`; this binary is built without that crate.)

use std::path::Path;

use anyhow::{Context as _, Result};
use clap_complete::Shell;

fn command() -> clap::Command {
    crate::cli::built_with_garm_flags()
}

/// The completion script for `shell`.
pub(crate) fn completions(shell: Shell) -> String {
    let mut command = command();
    let mut script = Vec::new();
    // Into memory: the generators panic on a failed write, and stdout may be a closed pipe.
    clap_complete::generate(shell, &mut command, "scalesetctl", &mut script);
    String::from_utf8_lossy(&script).into_owned()
}

/// The man page (its subcommands listed), or with `dir` the line saying where one page per
/// command was written.
pub(crate) fn man(dir: Option<&Path>) -> Result<String> {
    let Some(dir) = dir else {
        let mut page = Vec::new();
        clap_mangen::Man::new(command())
            .render(&mut page)
            .context("cannot render the man page")?;
        return Ok(String::from_utf8_lossy(&page).into_owned());
    };
    std::fs::create_dir_all(dir)
        .and_then(|()| clap_mangen::generate_to(command(), dir))
        .with_context(|| {
            format!(
                "cannot write the man pages into {}; give a writable --dir",
                dir.display()
            )
        })?;
    Ok(format!("man pages written to {}\n", dir.display()))
}
