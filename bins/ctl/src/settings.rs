//! Where the server is and how to authenticate to it: resolved from the flags, then the
//! environment (`SCALESET_URL`, `SCALESET_TOKEN`, `SCALESET_TOKEN_FILE`, `SCALESET_CA_BUNDLE`),
//! then the configuration file (`$XDG_CONFIG_HOME/scaleset/ctl.toml`, else
//! `~/.config/scaleset/ctl.toml`, or the file `--config`/`SCALESET_CTL_CONFIG` names), first
//! found wins per setting. The environment is passed in as a map: nothing here reads the
//! process environment.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, Result, anyhow, bail};
use serde::Deserialize;
use url::Url;

/// The URL used when none is given: the server's default listen address.
pub(crate) const DEFAULT_URL: &str = "http://127.0.0.1:8080";

/// How long one request may take before the command gives up, unless configured.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The connection settings as given on the command line (all optional).
#[derive(Debug, Default, Clone)]
pub(crate) struct Flags {
    pub(crate) url: Option<String>,
    pub(crate) token: Option<Token>,
    pub(crate) token_file: Option<PathBuf>,
    pub(crate) ca_bundle: Option<PathBuf>,
    pub(crate) config: Option<PathBuf>,
    pub(crate) timeout: Option<String>,
}

/// An API token. `Debug` and `Display` never show it.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Token(String);

impl Token {
    /// Wraps a token, trimming surrounding whitespace (a file usually ends in a newline).
    pub(crate) fn new(text: &str) -> Self {
        Self(text.trim().to_owned())
    }

    /// The token itself, for the `Authorization` header only.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token([redacted])")
    }
}

/// The resolved settings a command runs with.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// The server's base URL (`http://host:port` or `https://…`), without `/api/v1`.
    pub(crate) url: Url,
    /// Where the URL came from (`--url`, `SCALESET_URL`, `url in <file>`, `the default`).
    pub(crate) url_source: String,
    /// The bearer token, if one was found anywhere.
    pub(crate) token: Option<Token>,
    /// Where the token came from, for error messages ("--token-file /x", "SCALESET_TOKEN").
    pub(crate) token_source: Option<String>,
    /// Extra CA certificates (PEM) to trust for an `https://` server.
    pub(crate) ca_bundle: Option<Vec<u8>>,
    /// The per-request timeout.
    pub(crate) timeout: Duration,
    /// The configuration file that was read, if any.
    pub(crate) config_file: Option<PathBuf>,
}

/// The configuration file's keys (`deny_unknown_fields`: a misspelt key is an error).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    url: Option<String>,
    token: Option<String>,
    token_file: Option<PathBuf>,
    ca_bundle: Option<PathBuf>,
    timeout: Option<String>,
}

impl Settings {
    /// Resolves the settings from the flags, the environment map and the configuration file.
    pub(crate) fn resolve(flags: &Flags, env: &BTreeMap<String, String>) -> Result<Self> {
        let (file, config_file) = load_file(flags, env)?;
        let base = config_file.as_deref().and_then(Path::parent);
        let shown = |key: &str| match &config_file {
            Some(path) => format!("{key} in {}", path.display()),
            None => key.to_owned(),
        };

        let (url_text, url_source) = first([
            flags.url.clone().map(|v| (v, "--url".to_owned())),
            env.get("SCALESET_URL")
                .map(|v| (v.clone(), "SCALESET_URL".to_owned())),
            file.url.clone().map(|v| (v, shown("url"))),
        ])
        .unwrap_or_else(|| (DEFAULT_URL.to_owned(), "the default".to_owned()));
        let url = parse_url(&url_text).with_context(|| format!("{url_source} is not usable"))?;
        let url = without_api_prefix(url);

        let (token, token_source) = match resolve_token(flags, env, &file, base, &shown)? {
            Some((token, source)) => (Some(token), Some(source)),
            None => (None, None),
        };

        let ca_path = first([
            flags
                .ca_bundle
                .clone()
                .map(|p| (p, "--ca-bundle".to_owned())),
            env.get("SCALESET_CA_BUNDLE")
                .map(|p| (PathBuf::from(p), "SCALESET_CA_BUNDLE".to_owned())),
            file.ca_bundle
                .as_ref()
                .map(|p| (relative(base, p), shown("ca_bundle"))),
        ]);
        let ca_bundle = match ca_path {
            Some((path, source)) => Some(std::fs::read(&path).with_context(|| {
                format!("cannot read the CA bundle {} ({source})", path.display())
            })?),
            None => None,
        };

        let timeout = match first([
            flags.timeout.clone().map(|v| (v, "--timeout".to_owned())),
            env.get("SCALESET_TIMEOUT")
                .map(|v| (v.clone(), "SCALESET_TIMEOUT".to_owned())),
            file.timeout.clone().map(|v| (v, shown("timeout"))),
        ]) {
            Some((text, source)) => parse_duration(&text).with_context(|| {
                format!("{source} = {text:?} is not a duration (write e.g. \"30s\", \"2m\")")
            })?,
            None => DEFAULT_TIMEOUT,
        };

        Ok(Self {
            url,
            url_source,
            token,
            token_source,
            ca_bundle,
            timeout,
            config_file,
        })
    }
}

/// The first setting present, in precedence order.
fn first<T, const N: usize>(candidates: [Option<T>; N]) -> Option<T> {
    candidates.into_iter().flatten().next()
}

fn resolve_token(
    flags: &Flags,
    env: &BTreeMap<String, String>,
    file: &File,
    base: Option<&Path>,
    shown: &dyn Fn(&str) -> String,
) -> Result<Option<(Token, String)>> {
    enum From {
        Text(String),
        Path(PathBuf),
    }
    let found = first([
        flags
            .token
            .as_ref()
            .map(|t| (From::Text(t.expose().to_owned()), "--token".to_owned())),
        flags.token_file.clone().map(|p| {
            let source = format!("--token-file {}", p.display());
            (From::Path(p), source)
        }),
        env.get("SCALESET_TOKEN")
            .map(|t| (From::Text(t.clone()), "SCALESET_TOKEN".to_owned())),
        env.get("SCALESET_TOKEN_FILE").map(|p| {
            (
                From::Path(PathBuf::from(p)),
                format!("SCALESET_TOKEN_FILE {p}"),
            )
        }),
        file.token.clone().map(|t| (From::Text(t), shown("token"))),
        file.token_file.as_ref().map(|p| {
            let path = relative(base, p);
            let source = format!("{} ({})", shown("token_file"), path.display());
            (From::Path(path), source)
        }),
    ]);
    let Some((from, source)) = found else {
        return Ok(None);
    };
    let text = match from {
        From::Text(text) => text,
        From::Path(path) => std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read the token file {}", path.display()))?,
    };
    let token = Token::new(&text);
    if token.expose().is_empty() {
        bail!("the token from {source} is empty");
    }
    if token
        .expose()
        .chars()
        .any(|c| c.is_whitespace() || c.is_control())
    {
        bail!("the token from {source} contains whitespace; give the token alone");
    }
    Ok(Some((token, source)))
}

/// Reads the configuration file: the one named (which must exist), else the default one if it
/// exists.
fn load_file(flags: &Flags, env: &BTreeMap<String, String>) -> Result<(File, Option<PathBuf>)> {
    let named = flags
        .config
        .clone()
        .or_else(|| env.get("SCALESET_CTL_CONFIG").map(PathBuf::from));
    let (path, required) = match named {
        Some(path) => (path, true),
        None => match default_config_path(env) {
            Some(path) => (path, false),
            None => return Ok((File::default(), None)),
        },
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => {
            return Ok((File::default(), None));
        }
        Err(e) => {
            return Err(anyhow!(e))
                .with_context(|| format!("cannot read the configuration file {}", path.display()));
        }
    };
    let file: File = toml::from_str(&text).map_err(|e| {
        anyhow!(
            "the configuration file {} is invalid: {}",
            path.display(),
            e.message()
        )
    })?;
    Ok((file, Some(path)))
}

/// `$XDG_CONFIG_HOME/scaleset/ctl.toml`, else `$HOME/.config/scaleset/ctl.toml`.
pub(crate) fn default_config_path(env: &BTreeMap<String, String>) -> Option<PathBuf> {
    let dir = match env
        .get("XDG_CONFIG_HOME")
        .filter(|d| Path::new(d).is_absolute())
    {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env.get("HOME").filter(|h| !h.is_empty())?).join(".config"),
    };
    Some(dir.join("scaleset").join("ctl.toml"))
}

/// A path from the configuration file, relative to the file's directory.
fn relative(base: Option<&Path>, path: &Path) -> PathBuf {
    match base {
        Some(base) if path.is_relative() => base.join(path),
        _ => path.to_owned(),
    }
}

pub(crate) fn parse_url(text: &str) -> Result<Url> {
    // `127.0.0.1:8080` is "a relative URL" to the parser, `localhost:8080` one of scheme
    // `localhost`: both are a host and port without their scheme.
    let scheme_hint = |text: &str| {
        if text.contains("://") {
            String::new()
        } else {
            format!("; write the scheme too: http://{}", text.trim())
        }
    };
    let url = Url::parse(text.trim())
        .map_err(|e| anyhow!("{text:?} is not a URL: {e}{}", scheme_hint(text)))?;
    if !matches!(url.scheme(), "http" | "https") {
        bail!(
            "{text:?}: the server URL must be http:// or https://{}",
            scheme_hint(text)
        );
    }
    if url.host_str().is_none_or(str::is_empty) {
        bail!("{text:?}: the server URL has no host");
    }
    if url.query().is_some() || url.fragment().is_some() {
        bail!("{text:?}: the server URL must not have a query or fragment");
    }
    Ok(url)
}

/// The server's base URL without a trailing `/api/v1` (the demo's banner shows the API at
/// `…/api/v1`, and requests add it again).
pub(crate) fn without_api_prefix(mut url: Url) -> Url {
    let path = url.path().trim_end_matches('/');
    if let Some(base) = path.strip_suffix("/api/v1") {
        let base = base.to_owned();
        url.set_path(&base);
    }
    url
}

/// The one grammar of every door ([`scaleset_duration`]: `"30s"`, `"1m30s"`, `"7d"`, a bare
/// number of seconds); a request timeout of zero is refused.
pub(crate) fn parse_duration(text: &str) -> Option<Duration> {
    scaleset_duration::parse(text).ok().filter(|d| !d.is_zero())
}

#[cfg(test)]
mod tests;
