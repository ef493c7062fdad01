//! The simulator's clock: real wall-clock time plus an offset that the control API advances.
//!
//! Everything with a deadline in the simulator (token expiry, dormancy, reassignment, simulated
//! runner jobs) reads this clock, so a test can jump hours ahead without sleeping. Only the
//! long-poll hold uses real time, because it is what a client's socket experiences.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A point in simulated time, in milliseconds since the Unix epoch.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Default,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct SimTime(u64);

impl SimTime {
    /// The instant `millis` milliseconds after the Unix epoch.
    pub const fn from_millis(millis: u64) -> Self {
        Self(millis)
    }

    /// Milliseconds since the Unix epoch.
    pub const fn as_millis(self) -> u64 {
        self.0
    }

    /// Whole seconds since the Unix epoch (what a JWT's `exp` holds).
    pub const fn as_secs(self) -> u64 {
        self.0 / 1000
    }

    /// This instant plus `d` (saturating).
    pub fn plus(self, d: Duration) -> Self {
        Self(
            self.0
                .saturating_add(u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        )
    }

    /// How long after `earlier` this instant is (zero if it is not later).
    pub fn since(self, earlier: Self) -> Duration {
        Duration::from_millis(self.0.saturating_sub(earlier.0))
    }

    /// RFC 3339 with seven fraction digits, as .NET services write dates
    /// (`2026-12-02T10:00:00.1230000Z`).
    pub fn to_dotnet(self) -> String {
        let (date, secs_of_day) = civil(self.0 / 1000);
        let frac = (self.0 % 1000) * 10_000;
        format!("{date}T{}.{frac:07}Z", hms(secs_of_day))
    }

    /// RFC 3339 with whole seconds, as GitHub's REST API writes `expires_at`.
    pub fn to_rfc3339(self) -> String {
        let (date, secs_of_day) = civil(self.0 / 1000);
        format!("{date}T{}Z", hms(secs_of_day))
    }
}

fn hms(secs_of_day: u64) -> String {
    format!(
        "{:02}:{:02}:{:02}",
        secs_of_day / 3600,
        (secs_of_day / 60) % 60,
        secs_of_day % 60
    )
}

/// Splits seconds since the epoch into a `YYYY-MM-DD` date (from the `time` crate) and
/// seconds of the day. A clock advanced past `time`'s last date prints that date.
fn civil(secs: u64) -> (String, u64) {
    let date = i64::try_from(secs)
        .ok()
        .and_then(|secs| time::OffsetDateTime::from_unix_timestamp(secs).ok())
        .map_or(time::Date::MAX, time::OffsetDateTime::date);
    let (year, month, day) = (date.year(), u8::from(date.month()), date.day());
    (format!("{year:04}-{month:02}-{day:02}"), secs % 86_400)
}

/// Wall-clock time plus an advanceable offset. Shared by every part of one simulator.
#[derive(Debug, Default)]
pub(crate) struct Clock {
    offset_ms: AtomicU64,
}

impl Clock {
    /// The current simulated time.
    pub(crate) fn now(&self) -> SimTime {
        let real = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        SimTime(
            u64::try_from(real.as_millis())
                .unwrap_or(u64::MAX)
                .saturating_add(self.offset_ms.load(Ordering::SeqCst)),
        )
    }

    /// The wall-clock time: simulated time without the advanced offset. What a client's own
    /// clock reads (App JWTs are judged against it).
    pub(crate) fn wall(&self) -> SimTime {
        SimTime(
            self.now()
                .0
                .saturating_sub(self.offset_ms.load(Ordering::SeqCst)),
        )
    }

    /// Moves simulated time forward by `by`.
    pub(crate) fn advance(&self, by: Duration) {
        let ms = u64::try_from(by.as_millis()).unwrap_or(u64::MAX);
        // Saturating: a huge advance must not wrap simulated time around.
        let _ = self
            .offset_ms
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |o| {
                Some(o.saturating_add(ms))
            });
    }

    /// A clock already `offset` ahead of the wall clock (a restored simulator's).
    pub(crate) fn with_offset(offset: Duration) -> Self {
        let clock = Self::default();
        clock.advance(offset);
        clock
    }

    /// How far simulated time is ahead of the wall clock.
    pub(crate) fn offset(&self) -> Duration {
        Duration::from_millis(self.offset_ms.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_dates_like_github_and_dotnet() {
        // 2026-12-02T10:00:00.123Z
        let t = SimTime::from_millis(1_796_205_600_123);
        assert_eq!(t.to_rfc3339(), "2026-12-02T10:00:00Z");
        assert_eq!(t.to_dotnet(), "2026-12-02T10:00:00.1230000Z");
        assert_eq!(SimTime::from_millis(0).to_rfc3339(), "1970-01-01T00:00:00Z");
        assert_eq!(
            SimTime::from_millis(951_782_400_000).to_rfc3339(),
            "2000-02-29T00:00:00Z"
        );
    }

    #[test]
    fn advancing_moves_now_forward() {
        let clock = Clock::default();
        let before = clock.now();
        clock.advance(Duration::from_secs(3600));
        assert!(clock.now().since(before) >= Duration::from_secs(3600));
        assert_eq!(clock.offset(), Duration::from_secs(3600));
        clock.advance(Duration::MAX);
        clock.advance(Duration::MAX);
        assert!(clock.now() >= before, "saturates instead of wrapping");
    }
}
