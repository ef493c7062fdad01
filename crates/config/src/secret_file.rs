//! Secrets of declared credentials that live in files (`token_file`, `private_key_file`): the
//! files Kubernetes and vault agents replace to rotate a secret. The process keeps where each
//! came from, so it can read the file again and use the new secret without a restart.

use std::path::PathBuf;

use scaleset_store::{AppIdentity, Auth, SecretString};

/// One `[[credentials]]` secret held in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretFile {
    /// The `[[credentials]]` name.
    pub credentials: String,
    /// The file, as the configuration names it.
    pub path: PathBuf,
    /// What the file holds.
    pub form: SecretForm,
}

/// What a [`SecretFile`] holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretForm {
    /// A personal access token (`token_file`).
    Pat,
    /// The private key of GitHub App `app`, installation `installation_id`
    /// (`private_key_file`).
    AppKey {
        /// The App, by App ID or client id.
        app: AppIdentity,
        /// The installation's id.
        installation_id: i64,
    },
}

/// Why a secret file's content is not taken; the secret in use is kept. No message holds the
/// secret, nor the file's text.
#[derive(Debug, thiserror::Error)]
pub enum SecretFileError {
    /// The file cannot be read.
    #[error("cannot read {}; keeping the secret in use", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The read's error.
        #[source]
        source: std::io::Error,
    },
    /// The file holds no token.
    #[error(
        "{} is empty (replaced half-way?); keeping the token in use until it holds a token",
        path.display()
    )]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// The token cannot be sent (a line break, a control character).
    #[error("{}: keeping the token in use until it holds one token", path.display())]
    Pat {
        /// The file.
        path: PathBuf,
        /// What is wrong with the token.
        #[source]
        source: scaleset_github::UnsendableToken,
    },
    /// The file is not a private key the GitHub client can sign with.
    #[error(
        "{}: keeping the key in use until it holds the PEM private key GitHub generated for \
         App {app}",
        path.display()
    )]
    AppKey {
        /// The file.
        path: PathBuf,
        /// The App the key is for.
        app: AppIdentity,
        /// What is wrong with the key.
        #[source]
        source: scaleset_github::Error,
    },
}

impl SecretFile {
    /// The credentials' secret as the file holds it now, checked as at start (a PAT trimmed
    /// and not empty; an App key the GitHub client can sign with).
    ///
    /// # Errors
    ///
    /// [`SecretFileError`] naming the file, what is wrong and what to do (the secret is never
    /// in it).
    pub fn read(&self) -> Result<Auth, SecretFileError> {
        let path = || self.path.clone();
        let text =
            std::fs::read_to_string(&self.path).map_err(|source| SecretFileError::Unreadable {
                path: path(),
                source,
            })?;
        match &self.form {
            SecretForm::Pat => {
                let token = text.trim();
                if token.is_empty() {
                    return Err(SecretFileError::Empty { path: path() });
                }
                scaleset_github::check_pat(token).map_err(|source| SecretFileError::Pat {
                    path: path(),
                    source,
                })?;
                Ok(Auth::Pat {
                    token: SecretString::from(token.to_owned()),
                })
            }
            SecretForm::AppKey {
                app,
                installation_id,
            } => {
                let private_key = SecretString::from(text);
                scaleset_github::app_key_fingerprint(&private_key).map_err(|source| {
                    SecretFileError::AppKey {
                        path: path(),
                        app: app.clone(),
                        source,
                    }
                })?;
                Ok(Auth::App {
                    app: app.clone(),
                    installation_id: *installation_id,
                    private_key,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = include_str!("../../sim/tests/conformance/app-key.pem");

    #[test]
    fn a_rotated_file_is_read_again_and_a_bad_one_refused_without_the_secret() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        let file = SecretFile {
            credentials: "c".to_owned(),
            path: path.clone(),
            form: SecretForm::Pat,
        };
        assert!(matches!(
            file.read(),
            Err(SecretFileError::Unreadable { .. })
        ));
        std::fs::write(&path, "  ghp_new\n").unwrap();
        assert_eq!(
            file.read().unwrap(),
            Auth::Pat {
                token: SecretString::from("ghp_new")
            }
        );
        std::fs::write(&path, "\n").unwrap();
        assert!(matches!(file.read(), Err(SecretFileError::Empty { .. })));
        std::fs::write(&path, "ghp_one\nghp_two\n").unwrap();
        let two_lines = file.read().unwrap_err();
        assert!(
            matches!(two_lines, SecretFileError::Pat { .. }),
            "{two_lines:?}"
        );
        let shown = scaleset_store::chain(&two_lines);
        assert!(!shown.contains("ghp_"), "{shown}");

        let key = SecretFile {
            form: SecretForm::AppKey {
                app: AppIdentity::Id(7),
                installation_id: 8,
            },
            ..file
        };
        std::fs::write(&path, "-----BEGIN PRIVATE KEY-----\nnot a key\n").unwrap();
        let refused = key.read().unwrap_err();
        assert!(
            matches!(
                &refused,
                SecretFileError::AppKey {
                    app: AppIdentity::Id(7),
                    ..
                }
            ),
            "{refused:?}"
        );
        let shown = scaleset_store::chain(&refused);
        assert!(!shown.contains("not a key"), "{shown}");
        std::fs::write(&path, KEY).unwrap();
        assert!(matches!(
            key.read().unwrap(),
            Auth::App {
                app: AppIdentity::Id(7),
                installation_id: 8,
                ..
            }
        ));
    }
}
