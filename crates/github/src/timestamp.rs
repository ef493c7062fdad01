//! [`Timestamp`]: RFC 3339 and .NET date-times (up to 7+ fraction digits, optional offset),
//! with `0001-01-01T00:00:00Z` meaning "unset".

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A UTC instant decoded from the service's date strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp {
    unix_seconds: i64,
    nanos: u32,
}

impl Timestamp {
    /// Parses `YYYY-MM-DDTHH:MM:SS[.fraction][Z|±HH:MM]`; a missing offset means UTC.
    /// Fraction digits beyond nanoseconds are ignored. Returns `None` on anything else.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let bytes = text.as_bytes();
        if bytes.len() < 19 {
            return None;
        }
        let year = digits(bytes, 0, 4)?;
        let month = digits(bytes, 5, 2)?;
        let day = digits(bytes, 8, 2)?;
        let hour = digits(bytes, 11, 2)?;
        let minute = digits(bytes, 14, 2)?;
        let second = digits(bytes, 17, 2)?;
        if bytes[4] != b'-' || bytes[7] != b'-' || bytes[13] != b':' || bytes[16] != b':' {
            return None;
        }
        if !matches!(bytes[10], b'T' | b't' | b' ') {
            return None;
        }
        if !(1..=12).contains(&month)
            || !(1..=31).contains(&day)
            || hour > 23
            || minute > 59
            || second > 60
        {
            return None;
        }
        let mut pos = 19;
        let mut nanos: u32 = 0;
        if bytes.get(pos) == Some(&b'.') {
            pos += 1;
            let start = pos;
            let mut scale = 100_000_000u32;
            while let Some(&b) = bytes.get(pos) {
                if !b.is_ascii_digit() {
                    break;
                }
                if scale > 0 {
                    nanos += u32::from(b - b'0') * scale;
                    scale /= 10;
                }
                pos += 1;
            }
            if pos == start {
                return None;
            }
        }
        let offset_seconds: i64 = match bytes.get(pos) {
            None => 0,
            Some(b'Z' | b'z') if pos + 1 == bytes.len() => 0,
            Some(&sign @ (b'+' | b'-')) => {
                let rest = &text[pos + 1..];
                let (h, m) = match rest.len() {
                    5 if rest.as_bytes()[2] == b':' => (rest.get(0..2)?, rest.get(3..5)?),
                    4 => (rest.get(0..2)?, rest.get(2..4)?),
                    2 => (rest.get(0..2)?, "00"),
                    _ => return None,
                };
                let total = h.parse::<i64>().ok()? * 3600 + m.parse::<i64>().ok()? * 60;
                if sign == b'+' { total } else { -total }
            }
            _ => return None,
        };
        let month = time::Month::try_from(u8::try_from(month).ok()?).ok()?;
        let date = time::Date::from_calendar_date(
            i32::try_from(year).ok()?,
            month,
            u8::try_from(day).ok()?,
        )
        .ok()?;
        let days = i64::from(date.to_julian_day() - UNIX_EPOCH_JULIAN_DAY);
        let unix_seconds =
            days * 86_400 + i64::from(hour) * 3600 + i64::from(minute) * 60 + i64::from(second)
                - offset_seconds;
        Some(Self {
            unix_seconds,
            nanos,
        })
    }

    /// Seconds since the Unix epoch (negative before 1970).
    pub fn unix_seconds(&self) -> i64 {
        self.unix_seconds
    }

    /// The sub-second part in nanoseconds.
    pub fn subsec_nanos(&self) -> u32 {
        self.nanos
    }

    /// True for the .NET/Go zero value `0001-01-01T00:00:00Z`, which means "unset".
    pub fn is_unset(&self) -> bool {
        self.unix_seconds == ZERO_DATE_UNIX && self.nanos == 0
    }

    /// The instant as `SystemTime`, or `None` before the Unix epoch.
    pub fn to_system_time(&self) -> Option<SystemTime> {
        let seconds = u64::try_from(self.unix_seconds).ok()?;
        UNIX_EPOCH.checked_add(Duration::new(seconds, self.nanos))
    }
}

/// Unix seconds of 0001-01-01T00:00:00Z.
const ZERO_DATE_UNIX: i64 = -62_135_596_800;

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let days = self.unix_seconds.div_euclid(86_400);
        let secs = self.unix_seconds.rem_euclid(86_400);
        // Days of any i64 timestamp we produced fit a julian day; one that does not (never
        // decoded from text) prints as the unset date rather than panicking.
        let date = i32::try_from(days + i64::from(UNIX_EPOCH_JULIAN_DAY))
            .ok()
            .and_then(|julian| time::Date::from_julian_day(julian).ok())
            .unwrap_or(time::Date::MIN);
        let (y, m, d) = (date.year(), u8::from(date.month()), date.day());
        write!(
            f,
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
            secs / 3600,
            (secs / 60) % 60,
            secs % 60
        )?;
        if self.nanos > 0 {
            write!(f, ".{:09}", self.nanos)?;
        }
        f.write_str("Z")
    }
}

fn digits(bytes: &[u8], start: usize, len: usize) -> Option<u32> {
    let slice = bytes.get(start..start + len)?;
    let mut value = 0u32;
    for &b in slice {
        if !b.is_ascii_digit() {
            return None;
        }
        value = value * 10 + u32::from(b - b'0');
    }
    Some(value)
}

/// The julian day of 1970-01-01: civil dates come from the `time` crate, counted from here.
const UNIX_EPOCH_JULIAN_DAY: i32 = 2_440_588;

#[cfg(test)]
mod tests;
