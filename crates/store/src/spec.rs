//! The scale-set spec's rules, in one place: [`ScaleSetSpec::parse`] turns what an operator
//! wrote at any door (the API's create and update, a fleet sent to plan/apply, the
//! configuration file and its `SCALESET_…` overrides, the demo) into a [`ScaleSetSpec`], or
//! into every [`SpecProblem`] at once, each naming its field, the cause and what to write
//! instead. The limits are data ([`NAME_MAX`], [`MAX_RUNNERS`], …) so the API schema can quote
//! them rather than restate them.
//!
//! Why these rules: the name and the runner prefix become runner names, and runner names
//! become file names and command arguments at the providers, so both are one safe path
//! component of ASCII letters, digits, `.`, `_` and `-` (no `..`, no `/`, no space); labels
//! travel comma-joined to GitHub, which compares them case-insensitively and keeps only one
//! of two that differ in case; an owner label (`scaleset-owner-…`) is the controller's
//! ownership claim, never the operator's to write.

use std::fmt;
use std::ops::RangeInclusive;
use std::time::Duration;

use scaleset_domain::{Label, ProviderName, RunnerPrefix, ScaleSetName};

use crate::platform::{OsArch, OsType};
use crate::scale_set::{AdoptionPolicy, RunnerGroup, ScaleSetSpec};

/// `a, b or c`.
fn spelled<const N: usize>(values: [&str; N]) -> String {
    match values.split_last() {
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// The longest scale-set name, in characters.
pub const NAME_MAX: usize = scaleset_domain::SCALE_SET_NAME_MAX;
/// The longest runner prefix, in characters (runner names add `-` and 8 characters).
pub const RUNNER_PREFIX_MAX: usize = scaleset_domain::RUNNER_PREFIX_MAX;
/// The longest provider name, in characters.
pub const PROVIDER_MAX: usize = scaleset_domain::PROVIDER_MAX;
/// The longest runner-group name.
pub const RUNNER_GROUP_MAX: usize = 100;
/// The longest label, in characters.
pub const LABEL_MAX: usize = scaleset_domain::LABEL_MAX;
/// The most labels on one scale set.
pub const LABELS_MAX: usize = 50;
/// The longest image or flavor.
pub const IMAGE_MAX: usize = 1000;
/// The allowed `max_runners`.
pub const MAX_RUNNERS: RangeInclusive<u32> = 1..=10_000;
/// `max_runners` when none is written.
pub const DEFAULT_MAX_RUNNERS: u32 = 10;
/// The allowed bootstrap timeout, in seconds.
pub const BOOTSTRAP_TIMEOUT_SECS: RangeInclusive<u64> = 1..=86_400;
/// The bootstrap timeout when none is written.
pub const DEFAULT_BOOTSTRAP_TIMEOUT: Duration = Duration::from_secs(600);
/// The longest `scale_down_delay`, `max_idle_lifetime` or `max_lifetime`, in seconds (30 days).
pub const LIFECYCLE_SECS_MAX: u64 = 30 * 86_400;
/// The runner group when none is written.
pub const DEFAULT_RUNNER_GROUP: &str = "Default";
/// What a name, runner prefix or provider name may be, as a regular expression (the length
/// limits are separate: [`NAME_MAX`], [`RUNNER_PREFIX_MAX`], [`PROVIDER_MAX`]).
pub const NAME_PATTERN: &str = scaleset_domain::NAME_PATTERN;

/// One thing wrong with a spec.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SpecProblem {
    /// The field at fault as the API names it (`name`, `labels[2]`, `max_runners`); a door
    /// prefixes its own path (`scale_set[0].name`).
    pub field: String,
    /// What is wrong and what to write instead.
    pub message: String,
}

impl SpecProblem {
    fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for SpecProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// A spec as written at a door, before [`ScaleSetSpec::parse`]: every field optional (an
/// absent one takes its default), numbers as the widest integer a door can carry so a range
/// problem reads the same everywhere. A door converts only its own syntax (a TOML duration
/// string, JSON seconds, a policy's text) before filling it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawScaleSetSpec {
    /// The name on GitHub (required).
    pub name: Option<String>,
    /// The runner group (default [`DEFAULT_RUNNER_GROUP`]).
    pub runner_group: Option<String>,
    /// Labels (default none).
    pub labels: Vec<String>,
    /// GitHub's `disableUpdate` (default false).
    pub disable_update: Option<bool>,
    /// The provider's name (required).
    pub provider: Option<String>,
    /// The provider image (default empty).
    pub image: Option<String>,
    /// The provider flavor (default empty).
    pub flavor: Option<String>,
    /// The runners' operating system as GARM spells it: `linux` (default), `windows`, `osx`.
    pub os_type: Option<String>,
    /// The runners' CPU architecture as GARM spells it: `amd64` (default), `arm64`, `arm`,
    /// `386`.
    pub os_arch: Option<String>,
    /// The runners' proxy, SSH keys and user-data options (default none; an empty proxy
    /// setting is none).
    pub runner_setup: crate::RunnerSetup,
    /// Idle runners kept warm (default 0).
    pub min_idle: Option<i64>,
    /// The most runners at once (default [`DEFAULT_MAX_RUNNERS`]).
    pub max_runners: Option<i64>,
    /// How long an instance may take to register (default [`DEFAULT_BOOTSTRAP_TIMEOUT`]).
    pub bootstrap_timeout: Option<Duration>,
    /// The runner-name prefix (default empty: the name, see [`ScaleSetSpec::runner_prefix`]).
    pub runner_prefix: Option<String>,
    /// Provider-specific settings (default `{}`; `null` is taken as `{}`).
    pub extra_specs: Option<serde_json::Value>,
    /// Whether it is served (default true).
    pub enabled: Option<bool>,
    /// The adoption policy (default `owned`).
    pub adoption_policy: Option<AdoptionPolicy>,
    /// Whether adoption may repair drift (default false).
    pub repair: Option<bool>,
    /// How long surplus idle runners stay after a burst (default zero: retired at once).
    pub scale_down_delay: Option<Duration>,
    /// How long a runner may idle while no job waits (default zero: off).
    pub max_idle_lifetime: Option<Duration>,
    /// How long a runner may live before it is retired once idle (default zero: off).
    pub max_lifetime: Option<Duration>,
}

impl From<&ScaleSetSpec> for RawScaleSetSpec {
    /// The raw form of a stored spec, so an update can change some fields and parse the whole
    /// again.
    fn from(spec: &ScaleSetSpec) -> Self {
        Self {
            name: Some(spec.name.as_str().to_owned()),
            runner_group: Some(spec.runner_group.name.clone()),
            labels: spec.label_texts(),
            disable_update: Some(spec.disable_update),
            provider: Some(spec.provider.as_str().to_owned()),
            image: Some(spec.image.clone()),
            flavor: Some(spec.flavor.clone()),
            os_type: Some(spec.os_type.as_str().to_owned()),
            os_arch: Some(spec.os_arch.as_str().to_owned()),
            runner_setup: spec.runner_setup.clone(),
            min_idle: Some(i64::from(spec.min_idle)),
            max_runners: Some(i64::from(spec.max_runners)),
            bootstrap_timeout: Some(spec.bootstrap_timeout),
            runner_prefix: Some(
                spec.runner_prefix
                    .as_ref()
                    .map(|p| p.as_str().to_owned())
                    .unwrap_or_default(),
            ),
            extra_specs: Some(spec.extra_specs.clone()),
            enabled: Some(spec.enabled),
            adoption_policy: Some(spec.adoption_policy),
            repair: Some(spec.repair),
            scale_down_delay: Some(spec.scale_down_delay),
            max_idle_lifetime: Some(spec.max_idle_lifetime),
            max_lifetime: Some(spec.max_lifetime),
        }
    }
}

impl ScaleSetSpec {
    /// Parses a spec written at any door: defaults filled in once, every rule checked, every
    /// problem reported at once. The runner group's GitHub id starts unknown.
    ///
    /// ```
    /// use scaleset_store::{RawScaleSetSpec, ScaleSetSpec};
    ///
    /// let spec = ScaleSetSpec::parse(RawScaleSetSpec {
    ///     name: Some("linux".into()),
    ///     provider: Some("lxd".into()),
    ///     ..RawScaleSetSpec::default()
    /// })
    /// .unwrap();
    /// assert_eq!(spec.runner_prefix(), "linux");
    ///
    /// let problems = ScaleSetSpec::parse(RawScaleSetSpec {
    ///     name: Some("../../../escape".into()),
    ///     provider: Some("lxd".into()),
    ///     labels: vec!["a,b".into()],
    ///     ..RawScaleSetSpec::default()
    /// })
    /// .unwrap_err();
    /// let fields: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
    /// assert_eq!(fields, ["name", "labels[0]"]);
    /// ```
    ///
    /// # Errors
    ///
    /// Every [`SpecProblem`], in field order.
    pub fn parse(raw: RawScaleSetSpec) -> Result<Self, Vec<SpecProblem>> {
        let mut p = Vec::new();
        let mut required = |field: &str, value: Option<String>, what: &str| match value {
            Some(v) if !v.trim().is_empty() => Some(v),
            _ => {
                p.push(SpecProblem::new(field, format!("missing; {what}")));
                None
            }
        };
        let name = required("name", raw.name, "name the scale set");
        let provider = required(
            "provider",
            raw.provider,
            "name one of the configured providers",
        );
        // A missing name or provider is reported once, not again as "empty".
        let name = name.and_then(|name| {
            ScaleSetName::parse(&name)
                .map_err(|error| p.push(SpecProblem::new("name", error.to_string())))
                .ok()
        });
        let provider = provider.and_then(|provider| {
            ProviderName::parse(&provider)
                .map_err(|error| p.push(SpecProblem::new("provider", error.to_string())))
                .ok()
        });
        let max_runners = count(&mut p, "max_runners", raw.max_runners, DEFAULT_MAX_RUNNERS);
        let min_idle = count(&mut p, "min_idle", raw.min_idle, 0);
        let os_type = match raw.os_type.as_deref() {
            None => OsType::default(),
            Some(text) => OsType::parse(text).unwrap_or_else(|| {
                p.push(SpecProblem::new(
                    "os_type",
                    format!(
                        "{text:?} is not an operating system GARM's providers know; write one \
                         of {}",
                        spelled(OsType::ALL.map(OsType::as_str))
                    ),
                ));
                OsType::default()
            }),
        };
        let os_arch = match raw.os_arch.as_deref() {
            None => OsArch::default(),
            Some(text) => OsArch::parse(text).unwrap_or_else(|| {
                p.push(SpecProblem::new(
                    "os_arch",
                    format!(
                        "{text:?} is not an architecture GARM's providers know; write one of {} \
                         (GitHub's x64 is amd64)",
                        spelled(OsArch::ALL.map(OsArch::as_str))
                    ),
                ));
                OsArch::default()
            }),
        };
        // Null is "none" as older versions stored it.
        let extra_specs = match raw.extra_specs {
            None | Some(serde_json::Value::Null) => serde_json::Value::Object(Default::default()),
            Some(value) => value,
        };
        if !extra_specs.is_object() {
            p.push(SpecProblem::new(
                "extra_specs",
                "must be a table (a JSON object), passed to the provider as it is",
            ));
        }
        let mut runner_setup = raw.runner_setup;
        for proxy in [
            &mut runner_setup.http_proxy,
            &mut runner_setup.https_proxy,
            &mut runner_setup.no_proxy,
        ] {
            // An empty setting is none: what an update sends to clear one.
            if proxy.as_deref().is_some_and(str::is_empty) {
                *proxy = None;
            }
        }
        for (field, message) in runner_setup.problems() {
            p.push(SpecProblem::new(field, message));
        }
        let runner_group = raw
            .runner_group
            .unwrap_or_else(|| DEFAULT_RUNNER_GROUP.to_owned());
        if let Err(error) = scaleset_domain::check_text(&runner_group, RUNNER_GROUP_MAX) {
            p.push(SpecProblem::new("runner_group", error.to_string()));
        }
        let labels = labels(&mut p, &raw.labels);
        let image = raw.image.unwrap_or_default();
        let flavor = raw.flavor.unwrap_or_default();
        for (field, value) in [("image", &image), ("flavor", &flavor)] {
            if value.chars().count() > IMAGE_MAX || value.chars().any(char::is_control) {
                p.push(SpecProblem::new(
                    field,
                    format!("at most {IMAGE_MAX} characters, no control characters"),
                ));
            }
        }
        if !MAX_RUNNERS.contains(&max_runners) {
            p.push(SpecProblem::new(
                "max_runners",
                outside(max_runners, &MAX_RUNNERS),
            ));
        }
        if min_idle > max_runners {
            p.push(SpecProblem::new(
                "min_idle",
                format!(
                    "{min_idle} is more than max_runners ({max_runners}); keep at most \
                     max_runners idle"
                ),
            ));
        }
        let bootstrap_timeout = raw.bootstrap_timeout.unwrap_or(DEFAULT_BOOTSTRAP_TIMEOUT);
        let secs = bootstrap_timeout.as_secs();
        if !BOOTSTRAP_TIMEOUT_SECS.contains(&secs) || bootstrap_timeout.subsec_nanos() != 0 {
            p.push(SpecProblem::new(
                "bootstrap_timeout",
                format!(
                    "{bootstrap_timeout:?} is outside {}–{} whole seconds",
                    BOOTSTRAP_TIMEOUT_SECS.start(),
                    BOOTSTRAP_TIMEOUT_SECS.end()
                ),
            ));
        }
        let runner_prefix = match raw.runner_prefix.as_deref() {
            None | Some("") => None,
            Some(text) => RunnerPrefix::parse(text)
                .map_err(|error| p.push(SpecProblem::new("runner_prefix", error.to_string())))
                .ok(),
        };
        let scale_down_delay = raw.scale_down_delay.unwrap_or_default();
        let max_idle_lifetime = raw.max_idle_lifetime.unwrap_or_default();
        let max_lifetime = raw.max_lifetime.unwrap_or_default();
        for (field, value) in [
            ("scale_down_delay", scale_down_delay),
            ("max_idle_lifetime", max_idle_lifetime),
            ("max_lifetime", max_lifetime),
        ] {
            if value.as_secs() > LIFECYCLE_SECS_MAX || value.subsec_nanos() != 0 {
                p.push(SpecProblem::new(
                    field,
                    format!(
                        "{value:?} is outside 0–{LIFECYCLE_SECS_MAX} whole seconds (0 switches \
                         it off)"
                    ),
                ));
            }
        }
        p.sort_by_key(|problem| field_order(&problem.field));
        match (name, provider) {
            (Some(name), Some(provider)) if p.is_empty() => Ok(Self {
                name,
                runner_group: RunnerGroup {
                    name: runner_group,
                    id: None,
                },
                labels,
                disable_update: raw.disable_update.unwrap_or(false),
                provider,
                image,
                flavor,
                os_type,
                os_arch,
                runner_setup,
                min_idle,
                max_runners,
                bootstrap_timeout,
                runner_prefix,
                extra_specs,
                enabled: raw.enabled.unwrap_or(true),
                adoption_policy: raw.adoption_policy.unwrap_or(AdoptionPolicy::Owned),
                repair: raw.repair.unwrap_or(false),
                scale_down_delay,
                max_idle_lifetime,
                max_lifetime,
            }),
            _ => Err(p),
        }
    }

    /// This spec with `change` written over its raw form ([`RawScaleSetSpec::from`]), parsed
    /// again as a whole: the one way to change a field that has a rule, so an edit can never
    /// leave a spec the parser would refuse. The runner group's GitHub id is kept while the
    /// group's name stays.
    ///
    /// ```
    /// use scaleset_store::{RawScaleSetSpec, ScaleSetSpec};
    ///
    /// let spec = ScaleSetSpec::parse(RawScaleSetSpec {
    ///     name: Some("linux".into()),
    ///     provider: Some("lxd".into()),
    ///     ..RawScaleSetSpec::default()
    /// })
    /// .unwrap();
    /// let wider = spec.edit(|raw| raw.max_runners = Some(20)).unwrap();
    /// assert_eq!(wider.max_runners(), 20);
    /// let problems = spec.edit(|raw| raw.min_idle = Some(50)).unwrap_err();
    /// assert_eq!(problems[0].field, "min_idle");
    /// ```
    ///
    /// # Errors
    ///
    /// Every [`SpecProblem`] of the edited spec, in field order.
    pub fn edit(
        &self,
        change: impl FnOnce(&mut RawScaleSetSpec),
    ) -> Result<Self, Vec<SpecProblem>> {
        let mut raw = RawScaleSetSpec::from(self);
        change(&mut raw);
        let mut edited = Self::parse(raw)?;
        if edited.runner_group.name == self.runner_group.name {
            edited.runner_group.id = self.runner_group.id;
        }
        Ok(edited)
    }

    /// [`Self::edit`] in place: on a problem the spec stays as it was.
    ///
    /// # Errors
    ///
    /// As [`Self::edit`].
    pub fn change(
        &mut self,
        change: impl FnOnce(&mut RawScaleSetSpec),
    ) -> Result<(), Vec<SpecProblem>> {
        *self = self.edit(change)?;
        Ok(())
    }

    /// The prefix of this scale set's runner names: the runner prefix, or the name when none
    /// is set. Runner names are `<prefix>-<8 characters>`.
    pub fn runner_prefix(&self) -> &str {
        self.runner_prefix
            .as_ref()
            .map_or(self.name.as_str(), RunnerPrefix::as_str)
    }

    /// How long an instance of this scale set may take to register before it is deleted: the
    /// spec's bootstrap timeout, or `fallback` (the worker's setting) for a row written before
    /// the timeout was required, which holds zero. A parsed spec never does.
    pub fn bootstrap_timeout_or(&self, fallback: Duration) -> Duration {
        if self.bootstrap_timeout.is_zero() {
            fallback
        } else {
            self.bootstrap_timeout
        }
    }

    /// The problem when the spec names a provider not among `known` (the door's configured
    /// providers), else `None`.
    pub fn unknown_provider<'a>(
        &self,
        known: impl IntoIterator<Item = &'a str>,
    ) -> Option<SpecProblem> {
        let known: Vec<&str> = known.into_iter().collect();
        if known.contains(&self.provider.as_str()) {
            return None;
        }
        let configured = if known.is_empty() {
            "none is configured".to_owned()
        } else {
            format!("configured: {}", known.join(", "))
        };
        Some(SpecProblem::new(
            "provider",
            format!(
                "no provider is named {:?} ({configured}); name one of them, or add a \
                 [[provider]] table to the configuration",
                self.provider
            ),
        ))
    }
}

/// The labels of `texts`, each parsed, at most [`LABELS_MAX`] and no two the same to GitHub;
/// a problem for each that is not.
fn labels(problems: &mut Vec<SpecProblem>, texts: &[String]) -> Vec<Label> {
    if texts.len() > LABELS_MAX {
        problems.push(SpecProblem::new(
            "labels",
            format!(
                "{} labels; at most {LABELS_MAX} (the owner label is added on top)",
                texts.len()
            ),
        ));
    }
    let mut labels: Vec<Label> = Vec::with_capacity(texts.len());
    for (i, text) in texts.iter().enumerate() {
        let field = format!("labels[{i}]");
        match Label::parse(text) {
            Err(error) => problems.push(SpecProblem::new(field, error.to_string())),
            Ok(label) => {
                if let Some(first) = texts[..i].iter().position(|l| l.eq_ignore_ascii_case(text)) {
                    problems.push(SpecProblem::new(
                        field,
                        format!(
                            "{text:?} repeats labels[{first}] (GitHub compares labels without \
                             case and keeps one); remove it"
                        ),
                    ));
                } else {
                    labels.push(label);
                }
            }
        }
    }
    labels
}

/// The order fields are reported in: the spec's field order, then label index.
fn field_order(field: &str) -> (usize, usize) {
    const ORDER: [&str; 27] = [
        "name",
        "runner_group",
        "labels",
        "provider",
        "image",
        "flavor",
        "os_type",
        "os_arch",
        "http_proxy",
        "https_proxy",
        "no_proxy",
        "ssh_keys",
        "extra_packages",
        "disable_updates_on_boot",
        "enable_boot_debug",
        "runner_install_template",
        "max_runners",
        "min_idle",
        "bootstrap_timeout",
        "scale_down_delay",
        "max_idle_lifetime",
        "max_lifetime",
        "runner_prefix",
        "extra_specs",
        "enabled",
        "adoption_policy",
        "repair",
    ];
    let (head, index) = match field.split_once('[') {
        Some((head, rest)) => (
            head,
            rest.trim_end_matches(']')
                .parse::<usize>()
                .map_or(0, |i| i + 1),
        ),
        None => (field, 0),
    };
    let position = ORDER.iter().position(|f| *f == head).unwrap_or(ORDER.len());
    (position, index)
}

/// A count from a door's integer: the default when absent; a problem when it is no `u32`.
fn count(problems: &mut Vec<SpecProblem>, field: &str, value: Option<i64>, default: u32) -> u32 {
    match value {
        None => default,
        Some(n) => u32::try_from(n).unwrap_or_else(|_| {
            let range = if field == "max_runners" {
                outside(n, &MAX_RUNNERS)
            } else {
                format!("{n} is not a number of runners (0 or more, at most max_runners)")
            };
            problems.push(SpecProblem::new(field, range));
            // A placeholder inside the range, so no second problem is reported for it.
            if field == "max_runners" {
                DEFAULT_MAX_RUNNERS
            } else {
                0
            }
        }),
    }
}

fn outside(value: impl fmt::Display, range: &RangeInclusive<u32>) -> String {
    format!("{value} is outside {}–{}", range.start(), range.end())
}

#[cfg(test)]
mod tests;
