//! The one duration grammar of every door: the worker's configuration file, the provider
//! settings, the simulator's configuration and `scalesetctl`. It is [`humantime`]'s
//! (`250ms`, `30s`, `5m`, `1m30s`, `2h`, `7d`, `1h 30m`; units from `ns` to `y`), and a bare
//! number is seconds (`60`, `0.5`), as the command line and the simulator always took it.
//!
//! It is a crate of its own because the doors share no other crate: `scalesetctl` is built
//! without the server's crates, and the configuration crate sits above the provider's.

use std::time::Duration;

/// Why a text is not a duration. The message names the text, why and what to write instead;
/// the caller adds which setting it was.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// Nothing was written.
    #[error("empty duration: write e.g. \"30s\", \"5m\", \"1m30s\" or \"7d\"")]
    Empty,
    /// Not in humantime's grammar.
    #[error(
        "{text:?} is not a duration ({cause}): write e.g. \"30s\", \"5m\", \"1m30s\" or \"7d\""
    )]
    NotADuration {
        /// The text, trimmed.
        text: String,
        /// What humantime found.
        cause: humantime::DurationError,
    },
    /// Digits and dots that are not a number of seconds (`1.2.3`, or too many).
    #[error("{text:?} is not a number of seconds: write e.g. \"30\" or \"30s\"")]
    NotSeconds {
        /// The text, trimmed.
        text: String,
    },
}

/// Parses a duration at any door.
///
/// # Errors
///
/// [`Error`] naming the text, why it is not a duration and what to write instead.
pub fn parse(text: &str) -> Result<Duration, Error> {
    let text = text.trim();
    if text.is_empty() {
        return Err(Error::Empty);
    }
    if text.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return bare_seconds(text);
    }
    humantime::parse_duration(text).map_err(|cause| Error::NotADuration {
        text: text.to_owned(),
        cause,
    })
}

/// A bare number: seconds, whole or not.
fn bare_seconds(text: &str) -> Result<Duration, Error> {
    let bad = || Error::NotSeconds {
        text: text.to_owned(),
    };
    if let Ok(seconds) = text.parse::<u64>() {
        return Ok(Duration::from_secs(seconds));
    }
    let seconds: f64 = text.parse().map_err(|_| bad())?;
    Duration::try_from_secs_f64(seconds).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn humantimes_grammar_is_accepted() {
        for (text, expected) in [
            ("1m30s", Duration::from_secs(90)),
            ("7d", Duration::from_secs(7 * 86_400)),
            ("250ms", Duration::from_millis(250)),
            ("30s", Duration::from_secs(30)),
            ("5m", Duration::from_secs(300)),
            ("1h", Duration::from_secs(3600)),
            ("1h 30m", Duration::from_secs(5400)),
            (" 2s ", Duration::from_secs(2)),
            ("0s", Duration::ZERO),
        ] {
            assert_eq!(parse(text), Ok(expected), "{text:?}");
        }
    }

    #[test]
    fn a_bare_number_is_seconds() {
        assert_eq!(parse("60"), Ok(Duration::from_secs(60)));
        assert_eq!(parse("0"), Ok(Duration::ZERO));
        assert_eq!(parse("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(parse("2."), Ok(Duration::from_secs(2)));
    }

    #[test]
    fn what_is_not_a_duration_is_refused_by_kind() {
        for text in ["", "  "] {
            assert_eq!(parse(text), Err(Error::Empty), "{text:?}");
        }
        for text in ["soon", "s", "3x", "-5s"] {
            assert!(
                matches!(parse(text), Err(Error::NotADuration { text: t, .. }) if t == text),
                "{text:?}"
            );
        }
        for text in ["1..5", ".", "1e999", "99999999999999999999999"] {
            assert!(parse(text).is_err(), "{text:?}");
        }
        assert_eq!(
            parse("1..5"),
            Err(Error::NotSeconds {
                text: "1..5".to_owned()
            })
        );
    }

    #[test]
    fn every_refusal_says_what_to_write() {
        for text in ["", "soon", "1..5"] {
            let message = parse(text).unwrap_err().to_string();
            assert!(message.contains("write e.g."), "{text:?}: {message}");
        }
    }
}
