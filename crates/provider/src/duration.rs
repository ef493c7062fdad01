//! Human-readable durations in configuration: `"30s"`, `"5m"`, `"1m30s"`,
//! `"250ms"`, `"1h"`.

use std::time::Duration;

/// Parses a duration made of `<number><unit>` parts, units `ms`, `s`, `m`, `h`.
///
/// Returns a message naming what is wrong; the caller adds the context.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("empty duration (write e.g. \"30s\", \"5m\", \"1m30s\")".to_owned());
    }
    let mut total = Duration::ZERO;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits == 0 {
            return Err(format!(
                "{text:?} is not a duration: expected a number at {rest:?} (write e.g. \"30s\")"
            ));
        }
        let number: u64 = rest[..digits]
            .parse()
            .map_err(|_| format!("{text:?} is not a duration: number too large"))?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        let part = match unit {
            "ms" => Duration::from_millis(number),
            "s" => Duration::from_secs(number),
            "m" => Duration::from_secs(number.saturating_mul(60)),
            "h" => Duration::from_secs(number.saturating_mul(3600)),
            "" => {
                return Err(format!(
                    "{text:?} has no unit: write e.g. \"{number}s\" (units: ms, s, m, h)"
                ));
            }
            other => {
                return Err(format!(
                    "{text:?} has the unknown unit {other:?} (units: ms, s, m, h)"
                ));
            }
        };
        total = total.saturating_add(part);
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_single_and_compound_durations() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration(" 2s "), Ok(Duration::from_secs(2)));
    }

    #[test]
    fn rejects_missing_or_unknown_units_and_garbage() {
        assert!(parse_duration("").unwrap_err().contains("empty"));
        assert!(parse_duration("30").unwrap_err().contains("no unit"));
        assert!(parse_duration("3d").unwrap_err().contains("unknown unit"));
        assert!(
            parse_duration("s")
                .unwrap_err()
                .contains("expected a number")
        );
        assert!(parse_duration("99999999999999999999s").is_err());
    }
}
