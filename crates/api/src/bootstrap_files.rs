//! What the instance-facing endpoints serve, worked out without I/O: a JIT file out of the
//! encoded JIT config, the runner's systemd service name and unit file, the CA bundle split
//! into certificates, and the status words GARM's bootstrap scripts send.

use std::collections::BTreeMap;

use base64::Engine as _;
use scaleset_store::{BootstrapStatus, EntityKind};

/// Why a JIT file cannot be served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum JitFileError {
    /// The file name is not one a JIT config can hold.
    BadName,
    /// The JIT config holds no such file.
    NoSuchFile,
    /// The stored JIT config is not GitHub's encoding (a bug or a changed format).
    Malformed(String),
}

/// The contents of file `.{name}` of an encoded JIT config: GitHub's `encodedJITConfig` is
/// base64 of a JSON object from file names (`.runner`, `.credentials`,
/// `.credentials_rsaparams`) to base64 contents; GARM serves the decoded contents under the
/// name without its dot.
pub(crate) fn jit_file(encoded: &str, name: &str) -> Result<Vec<u8>, JitFileError> {
    let well_formed = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !well_formed {
        return Err(JitFileError::BadName);
    }
    let b64 = base64::engine::general_purpose::STANDARD;
    let json = b64
        .decode(encoded.trim())
        .map_err(|e| JitFileError::Malformed(format!("not base64: {e}")))?;
    let files: BTreeMap<String, String> = serde_json::from_slice(&json)
        .map_err(|e| JitFileError::Malformed(format!("not a JSON object of file contents: {e}")))?;
    let contents = files
        .get(&format!(".{name}"))
        .ok_or(JitFileError::NoSuchFile)?;
    b64.decode(contents.trim())
        .map_err(|e| JitFileError::Malformed(format!("file .{name} is not base64: {e}")))
}

/// The runner's systemd service name, as the runner's own `svc.sh` and GARM name it:
/// `actions.runner.<owner>.<runner>`, the owner being the organization, the enterprise or
/// `owner-repo` for a repository.
pub(crate) fn service_name(entity: &EntityKind, instance: &str) -> String {
    let owner = match entity {
        EntityKind::Repository { owner, name } => format!("{owner}-{name}"),
        EntityKind::Organization { name } => name.clone(),
        EntityKind::Enterprise { slug } => slug.clone(),
    };
    format!("actions.runner.{owner}.{instance}")
}

/// The user a runner runs as when the instance does not say (GARM's default).
pub(crate) const DEFAULT_RUNNER_USER: &str = "runner";

/// Whether `user` can be put in a unit file as is: a POSIX-style user name (letters, digits,
/// `_`, `-`, not starting with `-`, at most 32 characters), so a query parameter cannot
/// inject unit directives.
pub(crate) fn valid_user(user: &str) -> bool {
    !user.is_empty()
        && user.len() <= 32
        && !user.starts_with('-')
        && user
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A systemd unit that runs the runner from `~user/actions-runner` (where GARM's images
/// unpack it), stopping it gently so a job can finish.
pub(crate) fn unit_file(service_name: &str, user: &str) -> String {
    format!(
        "[Unit]\n\
         Description=GitHub Actions Runner ({service_name})\n\
         After=network-online.target\n\
         Wants=network-online.target\n\
         \n\
         [Service]\n\
         ExecStart=/home/{user}/actions-runner/runsvc.sh\n\
         User={user}\n\
         WorkingDirectory=/home/{user}/actions-runner\n\
         KillMode=process\n\
         KillSignal=SIGTERM\n\
         TimeoutStopSec=5min\n\
         \n\
         [Install]\n\
         WantedBy=multi-user.target\n"
    )
}

/// The certificates of a PEM bundle, one PEM block each, keyed `0`, `1`, … in order: tools
/// such as `update-ca-certificates` take one certificate per file. Text outside blocks is
/// dropped; an unterminated block is dropped too.
pub(crate) fn split_certificates(bundle: &str) -> BTreeMap<String, Vec<u8>> {
    const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
    const END: &str = "-----END CERTIFICATE-----";
    let mut certificates = BTreeMap::new();
    let mut rest = bundle;
    while let Some(start) = rest.find(BEGIN) {
        let Some(length) = rest[start..].find(END) else {
            break;
        };
        let end = start + length + END.len();
        let mut block = rest[start..end].to_owned();
        block.push('\n');
        certificates.insert(certificates.len().to_string(), block.into_bytes());
        rest = &rest[end..];
    }
    certificates
}

/// The status word of a status callback: GARM's bootstrap scripts send `installing` while
/// they work, then `idle` (the runner started) or `failed`. Anything else is not a report an
/// instance makes (`None`).
pub(crate) fn parse_status(word: &str) -> Option<BootstrapStatus> {
    match word.trim() {
        "installing" => Some(BootstrapStatus::Installing),
        "idle" => Some(BootstrapStatus::Idle),
        "failed" => Some(BootstrapStatus::Failed),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(files: &[(&str, &[u8])]) -> String {
        let b64 = base64::engine::general_purpose::STANDARD;
        let map: BTreeMap<String, String> = files
            .iter()
            .map(|(name, contents)| ((*name).to_owned(), b64.encode(contents)))
            .collect();
        b64.encode(serde_json::to_vec(&map).unwrap())
    }

    #[test]
    fn a_jit_file_is_the_decoded_contents_of_its_dotted_name() {
        let jit = encoded(&[(".runner", b"{\"agentId\":7}"), (".credentials", b"creds")]);
        assert_eq!(jit_file(&jit, "runner").unwrap(), b"{\"agentId\":7}");
        assert_eq!(jit_file(&jit, "credentials").unwrap(), b"creds");
        assert_eq!(
            jit_file(&jit, "credentials_rsaparams"),
            Err(JitFileError::NoSuchFile)
        );
    }

    #[test]
    fn a_jit_file_name_cannot_reach_outside_its_set() {
        let jit = encoded(&[(".runner", b"r"), ("..runner", b"x")]);
        for bad in ["", ".runner", "../runner", "run ner", &"a".repeat(65)] {
            assert_eq!(jit_file(&jit, bad), Err(JitFileError::BadName), "{bad:?}");
        }
        assert_eq!(
            jit_file(&jit, &"a".repeat(64)),
            Err(JitFileError::NoSuchFile)
        );
        assert_eq!(jit_file(&jit, "run-ner"), Err(JitFileError::NoSuchFile));
    }

    #[test]
    fn a_malformed_jit_config_is_named_not_served() {
        let b64 = base64::engine::general_purpose::STANDARD;
        for bad in [
            "not base64!".to_owned(),
            b64.encode("[1,2]"),
            b64.encode("{\".runner\": \"not base64!\"}"),
        ] {
            assert!(
                matches!(jit_file(&bad, "runner"), Err(JitFileError::Malformed(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn service_names_follow_the_runners_own_scheme() {
        let repo = EntityKind::Repository {
            owner: "acme".into(),
            name: "app".into(),
        };
        let org = EntityKind::Organization {
            name: "acme".into(),
        };
        let ent = EntityKind::Enterprise { slug: "big".into() };
        assert_eq!(service_name(&repo, "r-1"), "actions.runner.acme-app.r-1");
        assert_eq!(service_name(&org, "r-1"), "actions.runner.acme.r-1");
        assert_eq!(service_name(&ent, "r-1"), "actions.runner.big.r-1");
    }

    #[test]
    fn the_unit_file_runs_the_runner_as_its_user() {
        let unit = unit_file("actions.runner.acme.r-1", "ci");
        assert!(unit.contains("Description=GitHub Actions Runner (actions.runner.acme.r-1)\n"));
        assert!(unit.contains("ExecStart=/home/ci/actions-runner/runsvc.sh\n"));
        assert!(unit.contains("User=ci\n"));
        assert!(unit.contains("WorkingDirectory=/home/ci/actions-runner\n"));
        assert!(unit.contains("[Install]\nWantedBy=multi-user.target\n"));
    }

    #[test]
    fn only_plain_user_names_go_into_a_unit_file() {
        for good in ["runner", "ci_user", "a-b", "u1", &"a".repeat(32)] {
            assert!(valid_user(good), "{good:?}");
        }
        for bad in [
            "",
            "-x",
            "a b",
            "x\nExecStartPre=/bin/evil",
            "root;",
            &"a".repeat(33),
        ] {
            assert!(!valid_user(bad), "{bad:?}");
        }
    }

    #[test]
    fn a_bundle_is_split_into_its_certificates() {
        let one = "-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----";
        let two = "-----BEGIN CERTIFICATE-----\nBBB\n-----END CERTIFICATE-----";
        let bundle = format!("# comment\n{one}\nnoise\n{two}\n-----BEGIN CERTIFICATE-----\nCCC");
        let split = split_certificates(&bundle);
        assert_eq!(split.len(), 2, "{split:?}");
        assert_eq!(split["0"], format!("{one}\n").into_bytes());
        assert_eq!(split["1"], format!("{two}\n").into_bytes());
        assert!(split_certificates("").is_empty());
    }

    #[test]
    fn only_the_words_instances_send_are_statuses() {
        assert_eq!(
            parse_status("installing"),
            Some(BootstrapStatus::Installing)
        );
        assert_eq!(parse_status(" idle "), Some(BootstrapStatus::Idle));
        assert_eq!(parse_status("failed"), Some(BootstrapStatus::Failed));
        for other in ["pending", "active", "terminated", "", "IDLE"] {
            assert_eq!(parse_status(other), None, "{other:?}");
        }
    }
}
