//! The one duration grammar of every door: the worker's configuration file, the provider
//! settings, the simulator's configuration and `scalesetctl`. It is [`humantime`]'s
//! (`250ms`, `30s`, `5m`, `1m30s`, `2h`, `7d`, `1h 30m`; units from `ns` to `y`), and a bare
//! number is seconds (`60`, `0.5`), as the command line and the simulator always took it.
//!
//! It is a crate of its own because the doors share no other crate: `scalesetctl` is built
//! without the server's crates, and the configuration crate sits above the provider's.

use std::time::Duration;

/// Parses a duration at any door. The message names the text, why it is not a duration and
/// what to write instead; the caller adds which setting it was.
pub fn parse(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("empty duration: write e.g. \"30s\", \"5m\", \"1m30s\" or \"7d\"".to_owned());
    }
    if text.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return bare_seconds(text);
    }
    humantime::parse_duration(text).map_err(|e| {
        format!("{text:?} is not a duration ({e}): write e.g. \"30s\", \"5m\", \"1m30s\" or \"7d\"")
    })
}

/// A bare number: seconds, whole or not.
fn bare_seconds(text: &str) -> Result<Duration, String> {
    let bad = || format!("{text:?} is not a number of seconds: write e.g. \"30\" or \"30s\"");
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
    fn what_is_not_a_duration_says_what_to_write() {
        for text in ["", "  ", "soon", "s", "3x", "-5s", "1..5", ".", "1e999"] {
            let message = parse(text).unwrap_err();
            assert!(message.contains("write e.g."), "{text:?}: {message}");
        }
        assert!(parse("99999999999999999999999").is_err(), "too large");
        assert!(parse("soon").unwrap_err().contains("\"soon\""));
    }
}
