//! What a scale set's machines are given besides the runner, as GARM's bootstrap carries it:
//! the runners' proxy (GARM's `proxy_config`, GARM #822: the runners', never the worker's own),
//! SSH keys (`ssh-keys`), the user-data options (`user_data_options`) and the name of the
//! runner install template the worker's configuration maps to a file (sent as
//! `extra_specs.runner_install_template`). Stored as one JSON column; each field is a spec field
//! at every door.

use serde::{Deserialize, Serialize};

/// The most SSH keys or extra packages a set may give.
pub const SETUP_LIST_MAX: usize = 100;
/// The longest proxy setting, SSH key or package name.
pub const SETUP_TEXT_MAX: usize = 8192;

/// A scale set's machine setup ([`crate::ScaleSetSpec::runner_setup`]). Every field is empty by
/// default, which sends exactly what GARM sends for a set without them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RunnerSetup {
    /// The runners' `http_proxy`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_proxy: Option<String>,
    /// The runners' `https_proxy`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub https_proxy: Option<String>,
    /// The runners' `no_proxy`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_proxy: Option<String>,
    /// SSH public keys installed for the runner user, when the provider supports it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ssh_keys: Vec<String>,
    /// Packages the machine installs on first boot besides the provider's own.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub extra_packages: Vec<String>,
    /// Skip the operating system's updates on first boot.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub disable_updates_on_boot: bool,
    /// Verbose boot logging (garm-provider-common's `set -x`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub enable_boot_debug: bool,
    /// The name of a runner install template in the worker's configuration
    /// (`worker.runner_install_templates`), whose file is sent as GARM sends a scale set's
    /// template; none: the provider's built-in install script.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runner_install_template: Option<String>,
}

/// Whether `name` can name a runner install template: 1–64 of `A-Z a-z 0-9 . _ -`, starting
/// with a letter or digit.
pub fn is_template_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

impl RunnerSetup {
    /// Each field's problem as `(field, message)`: text of at most [`SETUP_TEXT_MAX`]
    /// characters without control characters (a proxy or key with a newline would break the
    /// cloud-config it is written into), at most [`SETUP_LIST_MAX`] keys or packages, no empty
    /// one, and package names without spaces.
    pub fn problems(&self) -> Vec<(String, String)> {
        let mut p = Vec::new();
        let text = |value: &str| {
            value.chars().count() <= SETUP_TEXT_MAX && !value.chars().any(char::is_control)
        };
        for (field, value) in [
            ("http_proxy", &self.http_proxy),
            ("https_proxy", &self.https_proxy),
            ("no_proxy", &self.no_proxy),
        ] {
            if let Some(value) = value
                && !text(value)
            {
                p.push((
                    field.to_owned(),
                    format!("at most {SETUP_TEXT_MAX} characters, no control characters"),
                ));
            }
        }
        for (field, list) in [
            ("ssh_keys", &self.ssh_keys),
            ("extra_packages", &self.extra_packages),
        ] {
            if list.len() > SETUP_LIST_MAX {
                p.push((
                    field.to_owned(),
                    format!("{} given; at most {SETUP_LIST_MAX}", list.len()),
                ));
            }
            for (i, value) in list.iter().enumerate() {
                let blank = value.trim().is_empty();
                let spaced = field == "extra_packages" && value.chars().any(char::is_whitespace);
                if blank || spaced || !text(value) {
                    p.push((
                        format!("{field}[{i}]"),
                        if field == "extra_packages" {
                            format!(
                                "{value:?} is not a package name: one name, no spaces or \
                                 control characters, at most {SETUP_TEXT_MAX} characters"
                            )
                        } else {
                            format!(
                                "not an SSH public key line: not empty, one line, at most \
                                 {SETUP_TEXT_MAX} characters"
                            )
                        },
                    ));
                }
            }
        }
        if let Some(name) = &self.runner_install_template
            && !is_template_name(name)
        {
            p.push((
                "runner_install_template".to_owned(),
                format!(
                    "{name:?} is not a template name: 1–64 of A-Z a-z 0-9 . _ -, starting with \
                     a letter or digit, as in worker.runner_install_templates"
                ),
            ));
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_setup_without_settings_is_stored_as_an_empty_object_and_reads_back() {
        let none = RunnerSetup::default();
        assert_eq!(serde_json::to_string(&none).unwrap(), "{}");
        let some = RunnerSetup {
            https_proxy: Some("http://proxy.internal:3128".into()),
            ssh_keys: vec!["ssh-ed25519 AAAA ops".into()],
            extra_packages: vec!["jq".into()],
            enable_boot_debug: true,
            ..RunnerSetup::default()
        };
        let text = serde_json::to_string(&some).unwrap();
        assert_eq!(serde_json::from_str::<RunnerSetup>(&text).unwrap(), some);
        assert!(some.problems().is_empty());
    }

    #[test]
    fn a_newline_in_a_proxy_or_key_and_a_spaced_package_are_refused() {
        let bad = RunnerSetup {
            http_proxy: Some("http://p\nruncmd".into()),
            ssh_keys: vec!["ssh-ed25519 AAAA\nssh-rsa BBBB".into(), String::new()],
            extra_packages: vec!["jq curl".into()],
            runner_install_template: Some("../etc/passwd".into()),
            ..RunnerSetup::default()
        };
        let fields: Vec<String> = bad.problems().into_iter().map(|(f, _)| f).collect();
        assert_eq!(
            fields,
            [
                "http_proxy",
                "ssh_keys[0]",
                "ssh_keys[1]",
                "extra_packages[0]",
                "runner_install_template"
            ]
        );
    }
}
