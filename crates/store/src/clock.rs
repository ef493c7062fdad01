//! Time as the store sees it: [`Timestamp`] (unix milliseconds, as stored) and the injected
//! [`Clock`] that lease expiry and row timestamps read.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A point in time as stored: milliseconds since the unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

impl Timestamp {
    /// The unix epoch.
    pub const EPOCH: Self = Self(0);

    /// A timestamp from milliseconds since the unix epoch.
    pub const fn from_unix_millis(millis: i64) -> Self {
        Self(millis)
    }

    /// Milliseconds since the unix epoch.
    pub const fn unix_millis(self) -> i64 {
        self.0
    }

    /// Converts a system time (saturating at the ends of the range).
    pub fn from_system_time(time: SystemTime) -> Self {
        match time.duration_since(UNIX_EPOCH) {
            Ok(after) => Self(i64::try_from(after.as_millis()).unwrap_or(i64::MAX)),
            Err(before) => Self(-i64::try_from(before.duration().as_millis()).unwrap_or(i64::MAX)),
        }
    }

    /// Converts to a system time.
    pub fn to_system_time(self) -> SystemTime {
        let magnitude = Duration::from_millis(self.0.unsigned_abs());
        if self.0 >= 0 {
            UNIX_EPOCH + magnitude
        } else {
            UNIX_EPOCH - magnitude
        }
    }

    /// This time plus a duration (saturating).
    pub fn saturating_add(self, duration: Duration) -> Self {
        let millis = i64::try_from(duration.as_millis()).unwrap_or(i64::MAX);
        Self(self.0.saturating_add(millis))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}ms", self.0)
    }
}

/// Where the store reads "now" (row timestamps, lease expiry).
///
/// Lease expiry compares times written by different processes, so in a scale-out deployment
/// the workers' clocks must agree (NTP) to well within the lease time-to-live.
pub trait Clock: Send + Sync + fmt::Debug {
    /// The current time.
    fn now(&self) -> Timestamp;
}

/// The system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_system_time(SystemTime::now())
    }
}

/// A clock that moves only when told: for tests (lease expiry without sleeping).
///
/// Clones share the same time.
#[derive(Debug, Clone, Default)]
pub struct ManualClock {
    millis: Arc<AtomicI64>,
}

impl ManualClock {
    /// A clock standing at `start`.
    pub fn new(start: Timestamp) -> Self {
        Self {
            millis: Arc::new(AtomicI64::new(start.unix_millis())),
        }
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        let millis = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        self.millis.fetch_add(millis, Ordering::SeqCst);
    }

    /// Sets the clock.
    pub fn set(&self, to: Timestamp) {
        self.millis.store(to.unix_millis(), Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.millis.load(Ordering::SeqCst))
    }
}
