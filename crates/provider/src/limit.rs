//! How many calls of one provider run at once, and how fast creates may start: the
//! per-provider `concurrency` and `create_rate` settings ([`CallLimits`]), the admission that
//! enforces them ([`Limiter`]), and a wrapper that puts any [`Provider`] under them
//! ([`Limited`]).
//!
//! A burst is bounded by the cloud, not by us: the default concurrency
//! ([`CallLimits::DEFAULT_CONCURRENCY`]) is high enough for a 1,000-job burst to have every
//! create running at once, as GARM (which sets no limit) would, and the rate is unlimited
//! unless the operator sets one for a cloud whose API throttles creates. Waiting calls queue
//! in arrival order (tokio's semaphore is fair), so creates start in the order they were asked
//! for; a create waits for its concurrency slot first and then for its rate slot, so no more
//! than the rate ever starts in any window, however long the queue.

use std::fmt;
use std::num::{NonZeroU32, NonZeroUsize};
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::{Semaphore, SemaphorePermit};
use tokio::time::Instant;

use crate::bootstrap::CreateRequest;
use crate::command::Command;
use crate::error::Error;
use crate::instance::{InstanceId, ProviderInstance};
use crate::pool::{Pool, PoolKey};
use crate::provider::Provider;

/// A rate of creates: at most `count` per `per` (`"10/s"`, `"120/m"`, `"1000/h"`), spread
/// evenly: one create may start every `per / count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CreateRate {
    count: NonZeroU32,
    per: Duration,
}

/// Why a text is not a [`CreateRate`]; every message ends with what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RateError {
    /// No `/` between a count and a unit.
    #[error("{text:?} is not a rate; {RATE_USAGE}")]
    NotARate {
        /// The text.
        text: String,
    },
    /// A unit other than `s`, `m` or `h`.
    #[error("{unit:?} is not a unit of {text:?}; {RATE_USAGE}")]
    Unit {
        /// The unit written.
        unit: String,
        /// The text.
        text: String,
    },
    /// A count that is not a positive whole number.
    #[error("{count:?} is not a positive whole number; {RATE_USAGE}")]
    Count {
        /// The count written.
        count: String,
    },
}

const RATE_USAGE: &str = "write creates per second, minute or hour as \"N/s\", \"N/m\" or \
                          \"N/h\" with N a positive whole number (e.g. \"5/s\", \"120/m\")";

impl CreateRate {
    /// `count` creates per `per`; `None` when `per` is zero.
    pub fn new(count: NonZeroU32, per: Duration) -> Option<Self> {
        (!per.is_zero()).then_some(Self { count, per })
    }

    /// Parses `"N/s"`, `"N/m"` or `"N/h"` (N a positive whole number).
    ///
    /// # Errors
    ///
    /// [`RateError`] naming what is wrong; its message says what to write instead.
    pub fn parse(text: &str) -> Result<Self, RateError> {
        let Some((count, unit)) = text.trim().split_once('/') else {
            return Err(RateError::NotARate {
                text: text.to_owned(),
            });
        };
        let per = match unit.trim() {
            "s" => Duration::from_secs(1),
            "m" => Duration::from_secs(60),
            "h" => Duration::from_secs(3600),
            other => {
                return Err(RateError::Unit {
                    unit: other.to_owned(),
                    text: text.to_owned(),
                });
            }
        };
        let count = count
            .trim()
            .parse::<u32>()
            .ok()
            .and_then(NonZeroU32::new)
            .ok_or_else(|| RateError::Count {
                count: count.trim().to_owned(),
            })?;
        Ok(Self { count, per })
    }

    /// The time between two creates' starts.
    pub fn interval(self) -> Duration {
        self.per / self.count.get()
    }
}

impl fmt::Display for CreateRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = match self.per.as_secs() {
            1 => "s",
            60 => "m",
            3600 => "h",
            _ => return write!(f, "{}/{:?}", self.count, self.per),
        };
        write!(f, "{}/{unit}", self.count)
    }
}

/// The limits on one provider's calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallLimits {
    /// Calls (of any command) running at once; more wait their turn, in arrival order.
    pub concurrency: NonZeroUsize,
    /// How fast creates may start; `None`: as fast as they come.
    pub create_rate: Option<CreateRate>,
}

impl CallLimits {
    /// Default concurrency: 1,000 calls at once. A cloud API takes hundreds of creates at once
    /// and throttles by rate, not by how many are open, and a create on a real cloud takes
    /// 30–90 s: with a small limit (4 was the default) a burst of 100 jobs waited 25 rounds.
    /// GARM sets no limit at all; 1,000 has a 1,000-job burst start every create at once and
    /// still bounds the processes an external provider runs (each holds a process and three
    /// pipes: raise the open-file limit to match, docs/providers.md).
    pub const DEFAULT_CONCURRENCY: usize = 1000;
}

impl Default for CallLimits {
    fn default() -> Self {
        Self {
            concurrency: NonZeroUsize::new(Self::DEFAULT_CONCURRENCY).unwrap_or(NonZeroUsize::MIN),
            create_rate: None,
        }
    }
}

/// Admits one provider's calls under its [`CallLimits`].
#[derive(Debug)]
pub struct Limiter {
    slots: Semaphore,
    create_rate: Option<CreateRate>,
    /// When the next create may start (the rate's schedule; `None` before the first).
    next_create: Mutex<Option<Instant>>,
}

/// A call's admission: the call runs while it is held.
#[derive(Debug)]
pub struct Admission<'a> {
    _slot: Option<SemaphorePermit<'a>>,
}

impl Limiter {
    /// A limiter enforcing `limits`.
    pub fn new(limits: CallLimits) -> Self {
        Self {
            slots: Semaphore::new(limits.concurrency.get()),
            create_rate: limits.create_rate,
            next_create: Mutex::new(None),
        }
    }

    /// Waits until a call of `command` may run: a concurrency slot, then, for a create under a
    /// rate, its turn in the rate's schedule. Dropping the future gives the slot back (a rate
    /// turn already taken stays used: the rate errs on the slow side).
    #[allow(
        clippy::disallowed_methods,
        reason = "a create waits for its turn under the configured rate: the clock is the rule"
    )]
    pub async fn admit(&self, command: Command) -> Admission<'_> {
        // The semaphore is never closed, so acquiring only fails if it were; treat that as
        // "no limit" rather than panicking.
        let slot = self.slots.acquire().await.ok();
        if command == Command::CreateInstance
            && let Some(rate) = self.create_rate
        {
            let turn = {
                let mut next = self
                    .next_create
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let now = Instant::now();
                let turn = next.map_or(now, |at| at.max(now));
                *next = Some(turn + rate.interval());
                turn
            };
            tokio::time::sleep_until(turn).await;
        }
        Admission { _slot: slot }
    }
}

/// Any [`Provider`] under [`CallLimits`]: the in-process ones (the fake, the directory
/// provider) get the same limits as the external one, which enforces them itself.
#[derive(Debug)]
pub struct Limited<P> {
    inner: P,
    limiter: Limiter,
}

impl<P> Limited<P> {
    /// `inner` under `limits`.
    pub fn new(inner: P, limits: CallLimits) -> Self {
        Self {
            inner,
            limiter: Limiter::new(limits),
        }
    }
}

#[async_trait]
impl<P: Provider> Provider for Limited<P> {
    async fn create(&self, request: &CreateRequest) -> Result<ProviderInstance, Error> {
        let _admitted = self.limiter.admit(Command::CreateInstance).await;
        self.inner.create(request).await
    }

    async fn delete(&self, pool: &Pool, instance: &InstanceId) -> Result<(), Error> {
        let _admitted = self.limiter.admit(Command::DeleteInstance).await;
        self.inner.delete(pool, instance).await
    }

    async fn get(&self, pool: &Pool, instance: &InstanceId) -> Result<ProviderInstance, Error> {
        let _admitted = self.limiter.admit(Command::GetInstance).await;
        self.inner.get(pool, instance).await
    }

    async fn list(&self, pool: &Pool) -> Result<Vec<ProviderInstance>, Error> {
        let _admitted = self.limiter.admit(Command::ListInstances).await;
        self.inner.list(pool).await
    }

    async fn remove_all(&self) -> Result<(), Error> {
        let _admitted = self.limiter.admit(Command::RemoveAllInstances).await;
        self.inner.remove_all().await
    }

    async fn start(&self, pool: &Pool, instance: &InstanceId) -> Result<(), Error> {
        let _admitted = self.limiter.admit(Command::StartInstance).await;
        self.inner.start(pool, instance).await
    }

    async fn stop(&self, pool: &Pool, instance: &InstanceId) -> Result<(), Error> {
        let _admitted = self.limiter.admit(Command::StopInstance).await;
        self.inner.stop(pool, instance).await
    }

    async fn version(&self) -> Result<String, Error> {
        let _admitted = self.limiter.admit(Command::GetVersion).await;
        self.inner.version().await
    }
    // Not a provider command (the in-process providers answer it from their own state, the
    // external one answers `None`), so no slot is taken.
    async fn pools(&self) -> Result<Option<Vec<PoolKey>>, Error> {
        self.inner.pools().await
    }
}

#[cfg(test)]
mod tests;
