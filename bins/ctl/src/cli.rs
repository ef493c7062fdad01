//! The command line: global connection and output options, and one subcommand per API
//! resource. Parsing only: `commands` runs them.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::output::{ColorChoice, Format};
use crate::settings::{Flags, Token};

/// The command-line client of scaleset-server's REST API.
///
/// Exit codes: 0 done (plan: no changes); 1 error; 2 refused (a scale set refused adoption,
/// apply refused) or changes pending (plan, decommission); 3 partially done (busy runners
/// left).
#[derive(Debug, Parser)]
#[command(name = "scalesetctl", version, max_term_width = 100)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) connection: Connection,
    /// How results are printed.
    #[arg(long, short = 'o', global = true, value_enum, default_value_t = Format::Table)]
    pub(crate) output: Format,
    /// When to use colour.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub(crate) color: ColorChoice,
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// `import garm --help` as it should read: the global connection flags described as GARM's
/// (there they name GARM and read no environment, file or default), `--token` and `--config`
/// left out. `None` for any other error or help, which clap's text serves.
pub(crate) fn garm_help(error: &clap::Error, args: &[String]) -> Option<String> {
    if error.kind() != clap::error::ErrorKind::DisplayHelp
        || !args.windows(2).any(|w| w[0] == "import" && w[1] == "garm")
    {
        return None;
    }
    let mut command = built_with_garm_flags();
    let mut garm = command
        .find_subcommand_mut("import")?
        .find_subcommand_mut("garm")?
        .clone();
    Some(garm.render_help().to_string())
}

/// The whole command as built for help and man pages: `import garm`'s global connection flags
/// described as GARM's (see [`garm_help`]).
pub(crate) fn built_with_garm_flags() -> clap::Command {
    use clap::CommandFactory as _;
    let mut command = Cli::command();
    // Global flags reach the subcommands only when the command is built.
    command.build();
    command.mut_subcommand("import", |import| import.mut_subcommand("garm", garm_flags))
}

/// `import garm`'s connection flags, which name GARM there.
fn garm_flags(garm: clap::Command) -> clap::Command {
    garm.mut_arg("url", |a| {
        a.help("GARM's URL, e.g. http://garm.internal:9997 (required; SCALESET_URL is not read)")
    })
    .mut_arg("token_file", |a| {
        a.help("A file holding GARM's JWT; or --username with --password-file")
    })
    .mut_arg("ca_bundle", |a| {
        a.help("CA certificates (PEM) to trust for an https:// GARM")
    })
    .mut_arg("timeout", |a| {
        a.help("How long one request to GARM may take [default: 60s]")
    })
    .mut_arg("token", |a| a.hide(true))
    .mut_arg("config", |a| a.hide(true))
}

/// Where the server is and how to authenticate (flags win over the environment, which wins
/// over the configuration file).
#[derive(Debug, Args)]
pub(crate) struct Connection {
    /// The server's URL [env: SCALESET_URL] [default: http://127.0.0.1:8080].
    #[arg(long, global = true, value_name = "URL")]
    url: Option<String>,
    /// The API token (visible to other local users in the process list: prefer
    /// --token-file or SCALESET_TOKEN).
    #[arg(long, global = true, value_name = "TOKEN")]
    token: Option<String>,
    /// A file holding the API token [env: SCALESET_TOKEN_FILE].
    #[arg(long, global = true, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// CA certificates (PEM) to trust for an https:// server [env: SCALESET_CA_BUNDLE].
    #[arg(long, global = true, value_name = "FILE")]
    ca_bundle: Option<PathBuf>,
    /// The configuration file [env: SCALESET_CTL_CONFIG] [default:
    /// $XDG_CONFIG_HOME/scaleset/ctl.toml].
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// How long one request may take ("30s", "2m") [env: SCALESET_TIMEOUT] [default: 60s].
    #[arg(long, global = true, value_name = "DURATION")]
    timeout: Option<String>,
}

impl Connection {
    /// `--url`, `--token-file`, `--ca-bundle` and `--timeout` as typed, for `import garm`,
    /// where they name GARM (no environment or configuration file is read for it: those name
    /// scaleset-server).
    pub(crate) fn typed(
        &self,
    ) -> (
        Option<&str>,
        Option<&PathBuf>,
        Option<&PathBuf>,
        Option<&str>,
    ) {
        (
            self.url.as_deref(),
            self.token_file.as_ref(),
            self.ca_bundle.as_ref(),
            self.timeout.as_deref(),
        )
    }

    /// The flags, for `Settings::resolve`.
    pub(crate) fn flags(&self) -> Flags {
        Flags {
            url: self.url.clone(),
            token: self.token.as_deref().map(Token::new),
            token_file: self.token_file.clone(),
            ca_bundle: self.ca_bundle.clone(),
            config: self.config.clone(),
            timeout: self.timeout.clone(),
        }
    }
}

/// The subcommands, one per resource.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Show where scalesetctl connects and where each setting came from (no request made;
    /// the token is never shown).
    Config,
    /// Show the controller's identity: id, version, owner label, session owner.
    Controller,
    /// GitHub credentials (PAT or GitHub App); secrets are write-only.
    #[command(subcommand, visible_alias = "credentials")]
    Credential(CredentialCommand),
    /// Repositories, organizations and enterprises.
    #[command(subcommand, visible_alias = "entities")]
    Entity(EntityCommand),
    /// Scale sets: their state, provenance, evidence and events.
    #[command(subcommand, name = "scale-set", visible_alias = "scale-sets")]
    ScaleSet(ScaleSetCommand),
    /// What happened to the scale sets and why (every scale set's, or one's), oldest first;
    /// --follow keeps printing new ones until Ctrl-C.
    Events(EventsArgs),
    /// Provider instances running runners.
    #[command(subcommand, visible_alias = "instances")]
    Instance(InstanceCommand),
    /// API tokens: list and revoke (they are created on the server's host:
    /// `scaleset-server token create NAME`).
    #[command(subcommand, visible_alias = "tokens")]
    Token(TokenCommand),
    /// Worker processes: drain one before an upgrade or a scale-down.
    #[command(subcommand, visible_alias = "workers")]
    Worker(WorkerCommand),
    /// Show what applying a fleet file would do (create / adopt / update / detach / refuse
    /// per scale set, with reasons) without writing anything. Exit 2 when there are changes
    /// or refusals.
    Plan(FleetArgs),
    /// Apply a fleet file: exactly the reviewed plan (--digest), or the plan shown first.
    /// Exit 2 when the server refuses because the world changed since the plan, or when the
    /// plan holds refusals.
    Apply {
        #[command(flatten)]
        fleet: FleetArgs,
        /// The digest `plan` printed: apply only if planning now gives the same plan.
        #[arg(long, value_name = "SHA256")]
        digest: Option<String>,
    },
    /// Import another manager's configuration as a fleet file (read-only on its side).
    #[command(subcommand)]
    Import(ImportCommand),
    /// The fleet file: export the stored scale sets as one.
    #[command(subcommand)]
    Fleet(FleetCommand),
    /// Tear down everything this controller owns, and nothing else: prints the plan (delete,
    /// detach, wait, kill or skip per runner, instance, scale set, session and record, with
    /// why); applies it only with --apply --digest. Needs a server started with --with-worker
    /// (docs/operations.md, "Decommission"). Exit 2 when the plan has work in it (not applied)
    /// or changed since it was reviewed; 3 when busy runners were left.
    Decommission(DecommissionArgs),
    /// Print the shell completion script (bash, zsh, fish, elvish, powershell), e.g.
    /// `scalesetctl completions bash > ~/.local/share/bash-completion/completions/scalesetctl`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (or write one per command with --dir), e.g.
    /// `scalesetctl man --dir ~/.local/share/man/man1`.
    Man {
        /// Write one page per command (`scalesetctl.1`, `scalesetctl-scale-set.1`, …) into
        /// this directory instead of the main page to stdout.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

/// `events`.
#[derive(Debug, Args)]
pub(crate) struct EventsArgs {
    /// Only this scale set's (name, id or id prefix).
    #[arg(long, value_name = "NAME")]
    pub(crate) scale_set: Option<String>,
    /// Only events since then: a duration ago ("10m", "2h") or an RFC 3339 time
    /// ("2026-12-06T10:00:00Z"); a repeated event counts by its last occurrence.
    #[arg(long, value_name = "WHEN")]
    pub(crate) since: Option<String>,
    /// At most this many, the newest (1 to 1000).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) limit: u32,
    /// Keep printing new events as they are recorded (with -o json: one object per line),
    /// until Ctrl-C.
    #[arg(long, short = 'f')]
    pub(crate) follow: bool,
    /// How often --follow asks the server.
    #[arg(long, value_name = "DURATION", default_value = "2s")]
    pub(crate) interval: String,
}

/// `decommission`: its scope and flags (those of `scaleset-worker decommission`).
#[derive(Debug, Args)]
pub(crate) struct DecommissionArgs {
    /// Only this entity (its path: `acme` for an organization, `acme/web` for a repository).
    #[arg(long, value_name = "ENTITY")]
    pub(crate) entity: Option<String>,
    /// Only this scale set of --entity.
    #[arg(long, value_name = "NAME", requires = "entity")]
    pub(crate) scale_set: Option<String>,
    /// Delete scale sets we adopted too (they are detached otherwise: left on GitHub).
    #[arg(long)]
    pub(crate) include_adopted: bool,
    /// Wait this long for busy runners (e.g. 10m); 0 does not wait.
    #[arg(long, value_name = "DURATION", default_value = "0s")]
    pub(crate) wait: String,
    /// Kill runners still busy when --wait runs out (their jobs fail), instead of leaving them.
    #[arg(long)]
    pub(crate) force_busy: bool,
    /// Carry the plan out (without it, only print it).
    #[arg(long, requires = "digest")]
    pub(crate) apply: bool,
    /// The digest of the reviewed plan: apply refuses if the plan is not that one any more.
    #[arg(long, value_name = "SHA256")]
    pub(crate) digest: Option<String>,
}

/// `fleet …`.
#[derive(Debug, Subcommand)]
pub(crate) enum FleetCommand {
    /// Write every stored scale set as a fleet file ([[scale_set]] tables), which `plan`
    /// shows as no change: declare it in the configuration file, and a database loss no
    /// longer loses them. Credentials are named, not written (declare them with their
    /// secret's file or variable).
    Export(FleetExport),
    /// List the scale sets on GitHub that carry this controller's owner label but that the
    /// server neither stores nor declares (after a database loss: those made through the
    /// API), each with the two remedies: declare it, or decommission it. Exit 2 when any.
    Undeclared,
}

/// `fleet export`.
#[derive(Debug, Args)]
pub(crate) struct FleetExport {
    /// Write the fleet file here (default: stdout).
    #[arg(long = "output-file", visible_alias = "out", value_name = "FILE")]
    pub(crate) output_file: Option<PathBuf>,
}

/// `import …`.
#[derive(Debug, Subcommand)]
pub(crate) enum ImportCommand {
    /// Read a running GARM's REST API (--url GARM's URL, --token-file a file holding the JWT
    /// `garm-cli` logs in with, or --username with --password-file) and write a fleet file
    /// with every GARM scale set, its GitHub id and a takeover note. Prints what the operator
    /// must supply (secrets: GARM never returns them; providers) and what could not be
    /// carried. Stop GARM before applying the file.
    Garm(ImportGarm),
}

/// `import garm`.
#[derive(Debug, Args)]
pub(crate) struct ImportGarm {
    /// Write the fleet file here (default: stdout, with the notes on stderr).
    #[arg(long = "output-file", visible_alias = "out", value_name = "FILE")]
    pub(crate) output_file: Option<PathBuf>,
    /// Log in to GARM as this user (with --password-file) instead of --token-file.
    #[arg(long, requires = "password_file")]
    pub(crate) username: Option<String>,
    /// A file holding the password of --username.
    #[arg(long, value_name = "FILE", requires = "username")]
    pub(crate) password_file: Option<PathBuf>,
}

/// The fleet file a plan or an apply is about.
#[derive(Debug, Args)]
pub(crate) struct FleetArgs {
    /// The fleet file (TOML: [[credentials]] and [[scale_set]] tables); "-" for stdin.
    #[arg(long, short = 'f', value_name = "FILE")]
    pub(crate) file: PathBuf,
    /// Also detach stored scale sets the file does not declare (GitHub's are left alone).
    #[arg(long)]
    pub(crate) prune: bool,
}

/// `credential …`.
#[derive(Debug, Subcommand)]
pub(crate) enum CredentialCommand {
    /// List credentials.
    List,
    /// Show one credential set (by name, id or id prefix).
    Show {
        /// Name, id or unique id prefix.
        credential: String,
    },
    /// Store credentials. The secret is read from a file or an environment variable, never
    /// from the command line.
    Create(CreateCredential),
    /// Delete credentials no entity uses.
    Delete {
        /// Name, id or unique id prefix.
        credential: String,
    },
}

/// `credential create`.
#[derive(Debug, Args)]
pub(crate) struct CreateCredential {
    /// A unique name.
    pub(crate) name: String,
    /// A personal access token: read from this file ("-" for stdin).
    #[arg(long, value_name = "FILE", group = "secret")]
    pub(crate) pat_file: Option<PathBuf>,
    /// A personal access token: read from this environment variable.
    #[arg(long, value_name = "VAR", group = "secret")]
    pub(crate) pat_env: Option<String>,
    /// A GitHub App: its numeric App ID (with --installation-id and --private-key-file); or
    /// give --client-id instead.
    #[arg(long, requires_all = ["installation_id", "private_key_file"], group = "secret")]
    pub(crate) app_id: Option<i64>,
    /// A GitHub App: its client id, `Iv23li…` (with --installation-id and
    /// --private-key-file); or give --app-id instead.
    #[arg(long, value_name = "ID", requires_all = ["installation_id", "private_key_file"], group = "secret")]
    pub(crate) client_id: Option<String>,
    /// The GitHub App installation's id.
    #[arg(long)]
    pub(crate) installation_id: Option<i64>,
    /// The GitHub App's private key (PEM file).
    #[arg(long, value_name = "FILE")]
    pub(crate) private_key_file: Option<PathBuf>,
    /// The GitHub web URL (a GHES host); github.com when omitted.
    #[arg(long, value_name = "URL")]
    pub(crate) base_url: Option<String>,
    /// The GitHub REST API URL (default: derived from --base-url).
    #[arg(long, value_name = "URL", requires = "base_url")]
    pub(crate) api_base_url: Option<String>,
    /// CA certificates (PEM) to trust for this GitHub endpoint.
    #[arg(long, value_name = "FILE", requires = "base_url")]
    pub(crate) github_ca_bundle: Option<PathBuf>,
}

/// `token …`.
#[derive(Debug, Subcommand)]
pub(crate) enum TokenCommand {
    /// List API tokens (names and ids; a token's text is never shown again).
    List,
    /// Revoke an API token (by name or id): requests with it are refused from now on.
    Revoke {
        /// The token's name or id. (Not called `token`: that is the global `--token` flag's
        /// id, and clap would let this positional overwrite the credential sent.)
        #[arg(value_name = "NAME_OR_ID")]
        which: String,
    },
}

/// `worker …`.
#[derive(Debug, Subcommand)]
pub(crate) enum WorkerCommand {
    /// Drain a worker: it hands the leases of its scale sets to the other workers and takes
    /// none (busy runners keep running; the taker retires them when their jobs end). Run it
    /// again to see how many it still holds; stop the worker once it is drained.
    Drain {
        /// The worker's name (its `worker.name`).
        #[arg(value_name = "NAME")]
        name: String,
    },
}

/// `entity …`.
#[derive(Debug, Subcommand)]
pub(crate) enum EntityCommand {
    /// List entities.
    List,
    /// Show one entity (by name, id or id prefix).
    Show {
        /// Name, id or unique id prefix.
        entity: String,
    },
    /// Record a repository, organization or enterprise.
    Create {
        /// repository, organization or enterprise.
        #[arg(value_enum)]
        kind: EntityKindArg,
        /// `owner/repo`, the organization's login, or the enterprise's slug.
        name: String,
        /// The credentials (name or id) used to reach it.
        #[arg(long)]
        credentials: String,
    },
    /// Delete an entity no scale set uses.
    Delete {
        /// Name, id or unique id prefix.
        entity: String,
    },
}

/// The kind of entity, as typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum EntityKindArg {
    /// `owner/repo`.
    Repository,
    /// An organization's login.
    Organization,
    /// An enterprise's slug.
    Enterprise,
}

/// `scale-set …`.
#[derive(Debug, Subcommand)]
pub(crate) enum ScaleSetCommand {
    /// List scale sets with their state.
    List {
        /// Only this entity's (name, id or id prefix).
        #[arg(long)]
        entity: Option<String>,
    },
    /// Show a scale set: spec, state and reason, evidence, recent events.
    Show {
        /// Name, id or unique id prefix.
        scale_set: String,
    },
    /// Create a scale set: the server stores it and the worker adopts or creates it on
    /// GitHub; this waits (--wait) for the outcome and shows it (exit 2 when adoption is
    /// refused).
    Create(Box<CreateScaleSet>),
    /// Change a scale set's spec, at its current generation (refused if someone changed it
    /// meanwhile).
    Update(Box<UpdateScaleSet>),
    /// Drain a scale set: it is no longer served (no new runners); the worker retires its idle
    /// runners and lets busy ones finish their jobs. Run it again to see what is left; delete
    /// it once drained.
    Drain {
        /// Name, id or unique id prefix.
        scale_set: String,
    },
    /// Retry now: a scale set backing off after its provider failed (or in `error`) tries
    /// again at once instead of waiting out its back-off. The worker serving it acts at its
    /// next watch; watch `scale-set show`. A disabled or draining scale set is refused
    /// (enable it first). Exit 0 when the request is recorded.
    Retry {
        /// Name, id or unique id prefix.
        scale_set: String,
    },
    /// Delete a scale set: one this controller created is deleted on GitHub; an adopted or
    /// known one is only detached unless --force. Drain it first.
    Delete {
        /// Name, id or unique id prefix.
        scale_set: String,
        /// Also delete an adopted or known scale set on GitHub.
        #[arg(long)]
        force: bool,
    },
}

/// The adoption policy, as typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum PolicyArg {
    /// Refuse a same-name scale set we have no record of.
    Never,
    /// Adopt only on ownership evidence.
    Owned,
    /// Adopt unless a live foreign owner is evident.
    Any,
}

/// `scale-set create`.
#[derive(Debug, Args)]
pub(crate) struct CreateScaleSet {
    /// The name on GitHub.
    pub(crate) name: String,
    /// The entity (name, id or id prefix).
    #[arg(long)]
    pub(crate) entity: String,
    /// The provider (a [[provider]] of the server's configuration).
    #[arg(long)]
    pub(crate) provider: String,
    /// The most runners at once.
    #[arg(long)]
    pub(crate) max_runners: u32,
    /// The runner group's name [default: Default].
    #[arg(long)]
    pub(crate) runner_group: Option<String>,
    /// A label (repeat for more).
    #[arg(long = "label", value_name = "LABEL")]
    pub(crate) labels: Vec<String>,
    /// Idle runners kept warm.
    #[arg(long, default_value_t = 0)]
    pub(crate) min_idle: u32,
    /// The provider image.
    #[arg(long, default_value = "")]
    pub(crate) image: String,
    /// The provider flavor.
    #[arg(long, default_value = "")]
    pub(crate) flavor: String,
    /// The runners' operating system: linux, windows or osx [default: linux].
    #[arg(long, value_name = "OS")]
    pub(crate) os_type: Option<String>,
    /// The runners' CPU architecture: amd64, arm64, arm or 386 [default: amd64].
    #[arg(long, value_name = "ARCH")]
    pub(crate) os_arch: Option<String>,
    /// The runners' http_proxy (not the worker's own proxy).
    #[arg(long, value_name = "URL")]
    pub(crate) http_proxy: Option<String>,
    /// The runners' https_proxy.
    #[arg(long, value_name = "URL")]
    pub(crate) https_proxy: Option<String>,
    /// The runners' no_proxy.
    #[arg(long, value_name = "HOSTS")]
    pub(crate) no_proxy: Option<String>,
    /// An SSH public key for the runner user (repeat for more).
    #[arg(long = "ssh-key", value_name = "KEY")]
    pub(crate) ssh_keys: Vec<String>,
    /// A package the machine installs on first boot (repeat for more).
    #[arg(long = "extra-package", value_name = "NAME")]
    pub(crate) extra_packages: Vec<String>,
    /// Skip the operating system's updates on first boot.
    #[arg(long)]
    pub(crate) disable_updates_on_boot: bool,
    /// Verbose boot logging.
    #[arg(long)]
    pub(crate) enable_boot_debug: bool,
    /// A runner install template of the worker's configuration (worker.runner_install_templates).
    #[arg(long, value_name = "NAME")]
    pub(crate) runner_install_template: Option<String>,
    /// How long an instance may take to register, seconds [default: 600].
    #[arg(long, value_name = "SECONDS")]
    pub(crate) bootstrap_timeout: Option<u64>,
    /// The runner name prefix [default: the name].
    #[arg(long, default_value = "")]
    pub(crate) runner_prefix: String,
    /// Provider-specific settings, a JSON object.
    #[arg(long, value_name = "JSON")]
    pub(crate) extra_specs: Option<String>,
    /// Store it without serving it.
    #[arg(long)]
    pub(crate) disabled: bool,
    /// GitHub's disableUpdate.
    #[arg(long)]
    pub(crate) disable_update: bool,
    /// Which same-name scale set found on GitHub may be adopted.
    #[arg(long, value_enum, default_value_t = PolicyArg::Owned)]
    pub(crate) adoption_policy: PolicyArg,
    /// Let adoption repair drift (PATCH labels and settings on GitHub).
    #[arg(long)]
    pub(crate) repair: bool,
    /// How long to wait, in seconds, for the worker to ensure it on GitHub before showing it
    /// still pending (0: show it as stored at once).
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub(crate) wait: u64,
}

/// `scale-set update`.
#[derive(Debug, Args)]
pub(crate) struct UpdateScaleSet {
    /// Name, id or unique id prefix.
    pub(crate) scale_set: String,
    /// The generation the change is made against (default: the one read just before).
    #[arg(long)]
    pub(crate) generation: Option<i64>,
    /// Replace the labels (repeat for more; --clear-labels for none).
    #[arg(long = "label", value_name = "LABEL", conflicts_with = "clear_labels")]
    pub(crate) labels: Vec<String>,
    /// Remove every label.
    #[arg(long)]
    pub(crate) clear_labels: bool,
    /// New maximum.
    #[arg(long)]
    pub(crate) max_runners: Option<u32>,
    /// New idle count.
    #[arg(long)]
    pub(crate) min_idle: Option<u32>,
    /// New provider.
    #[arg(long)]
    pub(crate) provider: Option<String>,
    /// New image.
    #[arg(long)]
    pub(crate) image: Option<String>,
    /// New flavor.
    #[arg(long)]
    pub(crate) flavor: Option<String>,
    /// New operating system: linux, windows or osx.
    #[arg(long, value_name = "OS")]
    pub(crate) os_type: Option<String>,
    /// New CPU architecture: amd64, arm64, arm or 386.
    #[arg(long, value_name = "ARCH")]
    pub(crate) os_arch: Option<String>,
    /// New runners' http_proxy ("" for none).
    #[arg(long, value_name = "URL")]
    pub(crate) http_proxy: Option<String>,
    /// New runners' https_proxy ("" for none).
    #[arg(long, value_name = "URL")]
    pub(crate) https_proxy: Option<String>,
    /// New runners' no_proxy ("" for none).
    #[arg(long, value_name = "HOSTS")]
    pub(crate) no_proxy: Option<String>,
    /// Replace the SSH keys (repeat for more; --clear-ssh-keys for none).
    #[arg(
        long = "ssh-key",
        value_name = "KEY",
        conflicts_with = "clear_ssh_keys"
    )]
    pub(crate) ssh_keys: Vec<String>,
    /// Remove every SSH key.
    #[arg(long)]
    pub(crate) clear_ssh_keys: bool,
    /// Replace the extra packages (repeat for more; --clear-extra-packages for none).
    #[arg(
        long = "extra-package",
        value_name = "NAME",
        conflicts_with = "clear_extra_packages"
    )]
    pub(crate) extra_packages: Vec<String>,
    /// Remove every extra package.
    #[arg(long)]
    pub(crate) clear_extra_packages: bool,
    /// Skip the operating system's updates on first boot, or not.
    #[arg(long)]
    pub(crate) disable_updates_on_boot: Option<bool>,
    /// Verbose boot logging, or not.
    #[arg(long)]
    pub(crate) enable_boot_debug: Option<bool>,
    /// New runner install template ("" for none: the provider's built-in script).
    #[arg(long, value_name = "NAME")]
    pub(crate) runner_install_template: Option<String>,
    /// New bootstrap timeout, seconds.
    #[arg(long, value_name = "SECONDS")]
    pub(crate) bootstrap_timeout: Option<u64>,
    /// New runner prefix.
    #[arg(long)]
    pub(crate) runner_prefix: Option<String>,
    /// New provider settings, a JSON object.
    #[arg(long, value_name = "JSON")]
    pub(crate) extra_specs: Option<String>,
    /// Serve it (true) or stop serving it (false).
    #[arg(long)]
    pub(crate) enabled: Option<bool>,
    /// New GitHub disableUpdate.
    #[arg(long)]
    pub(crate) disable_update: Option<bool>,
    /// New adoption policy.
    #[arg(long, value_enum)]
    pub(crate) adoption_policy: Option<PolicyArg>,
    /// Repair drift or not.
    #[arg(long)]
    pub(crate) repair: Option<bool>,
}

/// `instance …`.
#[derive(Debug, Subcommand)]
pub(crate) enum InstanceCommand {
    /// List instances.
    List {
        /// Only this scale set's (name, id or id prefix).
        #[arg(long)]
        scale_set: Option<String>,
    },
    /// Show one instance.
    Show {
        /// The instance (runner) name.
        name: String,
    },
    /// Delete an instance (the provider machine and its runner).
    Delete {
        /// The instance (runner) name.
        name: String,
    },
}
