//! [`CallObserver`]: the hook told about every finished call, so metrics are counted once, by
//! the client, under the endpoint's own name — not by each caller under a name typed by hand.

use std::time::Duration;

use crate::endpoint::Endpoint;
use crate::error::Error;

/// One finished call: its endpoint, how it ended, how many attempts it took and how long.
///
/// A call is one HTTP request with its retries (see [`crate::RetryPolicy`]). Calls the client
/// makes on its own are calls too: the token chain's (`registration_token`,
/// `runner_registration`, …), the session refresh a queue call makes after a 401, the delete
/// of an unusable session that `create_session` cleans up.
#[derive(Debug)]
#[non_exhaustive]
pub struct CallReport<'a> {
    /// The endpoint called.
    pub endpoint: Endpoint,
    /// The accepted status, or the error the call ended with (after its retries). The outcome
    /// is the HTTP exchange's: a 200 whose body then fails to decode is reported as the 200 it
    /// was, and the method returns the decode error.
    pub outcome: Result<u16, &'a Error>,
    /// Attempts made (at least 1, unless the call failed before sending, e.g. while fetching
    /// the admin token).
    pub attempts: u32,
    /// From the first attempt until the call finished, retry waits included.
    pub duration: Duration,
    /// Waits the server asked for (`Retry-After`, or a rate limit's reset) that the client
    /// waited before a retry: how many, and how long in all (after the policy's cap).
    pub advertised_waits: u32,
    /// The total of those waits.
    pub advertised_wait: Duration,
}

/// Told once about every finished call of a client (set with
/// [`ClientConfig::with_observer`](crate::ClientConfig::with_observer) or
/// [`Client::with_observer`](crate::Client::with_observer)).
///
/// It runs on the calling task right before the call returns: keep it short and non-blocking
/// (count, record a histogram), never call the client from it.
pub trait CallObserver: Send + Sync {
    /// One call finished.
    fn finished(&self, report: &CallReport<'_>);
}
