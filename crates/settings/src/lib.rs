//! How the control loop behaves: lease timing, backoff, how often it re-checks refused and
//! foreign-held scale sets, and the adoption machine's retry bounds. A crate of its own, below
//! the loop (`scaleset-control`, which re-exports it) and the configuration (`scaleset-config`,
//! which fills it from the file), so that the configuration does not depend on the loop.
//!
//! ```
//! let settings = scaleset_settings::Settings::default();
//! assert_eq!(settings.backoff(1), settings.backoff_base);
//! ```

use std::time::Duration;

use scaleset_adopt::RetryBounds;

/// The control loop's settings. [`Settings::default`] suits production; tests shorten the
/// durations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// This worker's name, the holder of its leases.
    pub worker: String,
    /// How long a lease lasts unless renewed (renewed at a third of it).
    pub lease_ttl: Duration,
    /// How often the supervisor re-reads the store for added, changed and removed scale sets.
    pub watch_interval: Duration,
    /// The first wait after a failure of a scale set's task; doubles per failure.
    pub backoff_base: Duration,
    /// The longest wait after failures.
    pub backoff_max: Duration,
    /// How long a refused, drifted or misconfigured scale set waits before it is ensured again
    /// (a changed spec restarts it at once).
    pub refused_recheck: Duration,
    /// How long a scale set whose session another owner holds waits before trying again (also
    /// a holder that may be our own, once [`Settings::held_session_window`] has passed).
    pub foreign_session_recheck: Duration,
    /// How many times a session create that failed in transit (a 5xx, a timeout: it may have
    /// been created on GitHub all the same) is tried again with backoff before the scale set's
    /// task fails and backs off as a whole.
    pub own_session_retries: u32,
    /// How often a scale set whose session is held by a listener that may be this controller's
    /// own (GitHub names no holder, or names our owner: a crash left it, and the database that
    /// recorded its id was lost) is checked again, for [`Settings::held_session_window`]; the
    /// session expires on GitHub within minutes, and serving resumes at the first check after.
    pub held_session_recheck: Duration,
    /// How long the short rechecks of [`Settings::held_session_recheck`] go on (from the first
    /// conflict) before the scale set is rechecked only every
    /// [`Settings::foreign_session_recheck`]: about twice the time GitHub is expected to take to
    /// drop a crashed listener's session (docs/operations.md, "Disaster recovery").
    pub held_session_window: Duration,
    /// How often a scale set imported from GARM whose session GARM holds (named so by GitHub,
    /// or not named while no session of ours has held the set) is checked again: for as long
    /// as GARM runs, so that serving starts within seconds of its stop.
    pub takeover_session_recheck: Duration,
    /// The adoption machine's retry bounds (attempt is set by the driver).
    pub adoption_retry: RetryBounds,
    /// How long a new runner may take to come online before it is removed, for a stored spec
    /// that holds none ([`scaleset_store::ScaleSetSpec::bootstrap_timeout_or`]); the spec's
    /// own default when omitted.
    pub default_bootstrap_timeout: Duration,
    /// How often a listening scale set is reconciled (provider × store × GitHub) besides
    /// after every ensure.
    pub reconcile_interval: Duration,
    /// How often a disabled scale set that still has instances is drained again: idle runners
    /// retired, busy ones asked whether their job is done (no listener hears it any more).
    pub drain_interval: Duration,
    /// How many scale sets may be starting at once (lease, ensure, session, recovery); the
    /// others wait their turn. Listening sets do not count. Bounds the store's queue when a
    /// worker starts with thousands of scale sets (after a restart or a lost database): with
    /// no bound every set takes one step at a time in lockstep and none is listening until
    /// nearly all are (`docs/benchmarks.md`, listener density).
    pub max_concurrent_starts: usize,
    /// How many scale sets of one provider may be recovering at once (the provider's list by
    /// pool key and its answers on rows a crash left `creating`). A recovery runs beside its
    /// listening scale set and holds no start slot (issue 35, "listen before listing"), so
    /// this bounds only how hard a start after a restart or a lost database hits the
    /// provider; the provider's own concurrency limit still applies under it.
    pub max_concurrent_recoveries: usize,
    /// How often a listener stores its scale set's sample for the status page's charts (jobs
    /// waiting, runners idle/busy/starting, job start latency); the store keeps an hour.
    pub sample_interval: Duration,
    /// How long an empty poll may stand on the scale set's last instance list at most
    /// (`planner::idle`: it lists again sooner whenever a write, a message, a due time-based
    /// rule or an operator's removal request says so). The bound covers writes to the rows
    /// that nothing reports (a hand edit of the database). The periodic reconciliation lists
    /// too, so a bound above [`Settings::reconcile_interval`] changes nothing.
    pub instance_list_max_age: Duration,
    /// The wait before a scale set's provider is asked again after a failed create or delete
    /// (issue 33 item 3); doubles per failure in a row up to
    /// [`Settings::provider_backoff_max`], jittered between half of it and all of it. Until
    /// then the scale set creates and deletes nothing; an instance whose delete failed stays
    /// `deleting` in the store and is deleted again after the wait, also after a restart.
    pub provider_backoff_base: Duration,
    /// The longest wait between tries of a failing provider.
    pub provider_backoff_max: Duration,
    /// After how many failed creates or deletes in a row the scale set is shown as needing
    /// attention (state `error`, the provider's own message as the reason); the first success
    /// after it serves it as `ready` again.
    pub provider_failures_flagged: u32,
    /// The wait before a scale set creates its next runner after one failed to boot (its
    /// instance reported a failed bootstrap, or it was not online by its bootstrap deadline);
    /// doubles per round of failures up to [`Settings::bootstrap_backoff_max`], jittered
    /// between half of it and all of it (`planner::bootstrap_backoff`). Only a runner of the
    /// scale set coming online ends it.
    pub bootstrap_backoff_base: Duration,
    /// The longest wait between creates of a scale set whose runners keep failing to boot.
    pub bootstrap_backoff_max: Duration,
    /// The server's URL as instances reach it (e.g. `https://scaleset.example.com`), from
    /// which their metadata and callback URLs are made (GARM's `metadata_url` and
    /// `callback_url`). When set, every new runner is granted an instance token and its JIT
    /// config is kept for it to fetch; when not, the bootstrap parameters carry empty URLs
    /// and providers must boot runners from the JIT config they are handed (the fake and
    /// directory providers do; GARM's external providers cannot).
    pub instance_api_url: Option<url::Url>,
    /// The runner install templates a scale set may name (`runner_install_template`), each a
    /// file read at every create and sent base64-encoded as `extra_specs.runner_install_template`,
    /// as GARM sends its scale set's template (`worker.runner_install_templates`).
    pub runner_install_templates: std::collections::BTreeMap<String, std::path::PathBuf>,
    /// How long an entity's runner downloads (GARM's `tools`) are used before they are read
    /// from GitHub again: one REST call per entity per refresh, whatever its number of scale
    /// sets (GARM refreshes its tools on a timer too).
    pub runner_tools_refresh: Duration,
    /// After a failed read of an entity's runner downloads, how long until GitHub is asked
    /// again (meanwhile its scale sets use the list read before, or, with none, create no
    /// runner and show why).
    pub runner_tools_retry: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            worker: "scaleset-worker".to_owned(),
            lease_ttl: Duration::from_secs(120),
            watch_interval: Duration::from_secs(10),
            backoff_base: Duration::from_secs(1),
            backoff_max: Duration::from_secs(120),
            refused_recheck: Duration::from_secs(300),
            foreign_session_recheck: Duration::from_secs(300),
            own_session_retries: 6,
            held_session_recheck: Duration::from_secs(30),
            held_session_window: Duration::from_secs(600),
            takeover_session_recheck: Duration::from_secs(5),
            adoption_retry: RetryBounds::default(),
            default_bootstrap_timeout: scaleset_store::spec::DEFAULT_BOOTSTRAP_TIMEOUT,
            reconcile_interval: Duration::from_secs(300),
            drain_interval: Duration::from_secs(30),
            max_concurrent_starts: 64,
            max_concurrent_recoveries: 8,
            sample_interval: Duration::from_secs(60),
            instance_list_max_age: Duration::from_secs(300),
            provider_backoff_base: Duration::from_secs(5),
            provider_backoff_max: Duration::from_secs(300),
            provider_failures_flagged: 3,
            bootstrap_backoff_base: Duration::from_secs(10),
            bootstrap_backoff_max: Duration::from_secs(600),
            instance_api_url: None,
            runner_install_templates: std::collections::BTreeMap::new(),
            runner_tools_refresh: Duration::from_secs(15 * 60),
            runner_tools_retry: Duration::from_secs(60),
        }
    }
}

impl Settings {
    /// The metadata and callback URLs instances are given, when [`Settings::instance_api_url`]
    /// is set: `<url>/api/v1/metadata` and `<url>/api/v1/callbacks/status` (a path in the URL
    /// is kept, for a server behind a reverse proxy under a prefix).
    pub fn instance_urls(&self) -> Option<InstanceUrls> {
        let base = self.instance_api_url.as_ref()?;
        let base = base.as_str().trim_end_matches('/');
        Some(InstanceUrls {
            metadata: format!("{base}/api/v1/metadata"),
            callback: format!("{base}/api/v1/callbacks/status"),
        })
    }

    /// The wait after `failures` consecutive failures: `backoff_base × 2^(failures-1)`, capped.
    /// The task's wait jitters it (between half of it and all of it).
    pub fn backoff(&self, failures: u32) -> Duration {
        let exponent = failures.saturating_sub(1).min(20);
        self.backoff_base
            .saturating_mul(1u32 << exponent)
            .min(self.backoff_max)
    }
}

/// Where an instance fetches its setup data and reports its progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceUrls {
    /// GARM's `metadata-url`: the JIT files, CA bundle and service files under it.
    pub metadata: String,
    /// GARM's `callback-url`: status reports (system info goes to its sibling `system-info`).
    pub callback: String,
}

#[cfg(test)]
mod tests {
    use scaleset_github::jittered;

    use super::*;

    #[test]
    fn backoff_doubles_and_caps() {
        let settings = Settings {
            backoff_base: Duration::from_millis(10),
            backoff_max: Duration::from_millis(50),
            ..Settings::default()
        };
        assert_eq!(settings.backoff(1), Duration::from_millis(10));
        assert_eq!(settings.backoff(2), Duration::from_millis(20));
        assert_eq!(settings.backoff(4), Duration::from_millis(50));
        assert_eq!(settings.backoff(u32::MAX), Duration::from_millis(50));
    }

    #[test]
    fn jitter_stays_in_the_upper_half_and_never_exceeds_the_hint() {
        let after = Duration::from_secs(10);
        assert_eq!(jittered(after, 0.0), Duration::from_secs(5));
        assert_eq!(jittered(after, 1.0), after);
        assert_eq!(jittered(after, 0.5), Duration::from_millis(7500));
        assert_eq!(jittered(after, 7.0), after, "a bad draw is clamped");
        assert_eq!(jittered(after, -1.0), Duration::from_secs(5));
        assert_eq!(jittered(after, f64::NAN), after);
        assert_eq!(jittered(Duration::ZERO, 0.3), Duration::ZERO);
        let odd = Duration::from_nanos(3);
        assert!(jittered(odd, 0.0) >= Duration::from_nanos(1));
        assert!(jittered(odd, 0.99) <= odd);
    }

    #[test]
    fn instance_urls_are_made_under_the_api_and_keep_a_prefix() {
        assert_eq!(Settings::default().instance_urls(), None);
        for (base, prefix) in [
            (
                "https://scaleset.example.com",
                "https://scaleset.example.com",
            ),
            (
                "https://proxy.example.com/scaleset/",
                "https://proxy.example.com/scaleset",
            ),
        ] {
            let settings = Settings {
                instance_api_url: Some(url::Url::parse(base).unwrap()),
                ..Settings::default()
            };
            assert_eq!(
                settings.instance_urls(),
                Some(InstanceUrls {
                    metadata: format!("{prefix}/api/v1/metadata"),
                    callback: format!("{prefix}/api/v1/callbacks/status"),
                })
            );
        }
    }
}
