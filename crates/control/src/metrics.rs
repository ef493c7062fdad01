//! The control loop's metrics, recorded with `prometheus-client` into a registry the binaries
//! expose later: fleet-wide (scale sets by state, runners by status, jobs seen and acquired,
//! message lag), per scale set (state, jobs waiting, runners by status, desired runners, last
//! message age, enabled, `max_runners` and `min_idle`, job timings, bootstrap failures and
//! deadline expiries; labels `scale_set`, `entity_kind` and `entity_name`, never a runner or job
//! id), GitHub calls by endpoint, outcome class and status
//! class with the `Retry-After` waits, provider calls by command, and leases per worker.
//!
//! Every counter is exported from start at 0: the label sets known at start (kinds, endpoints,
//! providers and their commands) are created with the metrics, a scale set's series when the
//! supervisor first sees it, and removed when it is gone from the store.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use prometheus_client::encoding::{EncodeLabelSet, EncodeMetric, MetricEncoder};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use scaleset_github::{CallObserver, CallReport, Endpoint, ErrorClass};
use scaleset_store::{InstanceStatus, ScaleSetId, ScaleSetState};

/// A `state` label.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct StateLabel {
    /// The scale-set state (`ready`, `foreign_session`, …).
    pub state: String,
}

/// A `status` label.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct StatusLabel {
    /// The instance status (`pending`, `running`, `busy`, …).
    pub status: String,
}

/// A `kind` label.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct KindLabel {
    /// The job message kind (`available`, `assigned`, `started`, `completed`).
    pub kind: String,
}

/// `endpoint` and `class` labels of a GitHub call.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct CallLabels {
    /// The endpoint's name.
    pub endpoint: String,
    /// `ok`, `retryable`, `refusal` or `fatal`.
    pub class: String,
}

/// The labels of one scale set's series. Shared, not copied: a scale set has ~50 series, and
/// each series' key held its own copies of both strings (docs/benchmarks.md, "Issue 35:
/// memory").
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct SetLabels {
    /// The scale set's name.
    pub scale_set: Arc<str>,
    /// Its entity's kind: `organization`, `repository` or `enterprise`.
    pub entity_kind: &'static str,
    /// Its entity's name: the organization (`acme`), the repository (`acme/app`) or the
    /// enterprise (`big`). Two labels, not one joined by a space, so each can be selected on
    /// its own.
    pub entity_name: Arc<str>,
}

/// A scale set's labels and one of its states.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct SetStateLabels {
    /// The scale set's name.
    pub scale_set: Arc<str>,
    /// Its entity's kind.
    pub entity_kind: &'static str,
    /// Its entity's name.
    pub entity_name: Arc<str>,
    /// The state.
    pub state: &'static str,
}

/// A scale set's labels and an instance status.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct SetStatusLabels {
    /// The scale set's name.
    pub scale_set: Arc<str>,
    /// Its entity's kind.
    pub entity_kind: &'static str,
    /// Its entity's name.
    pub entity_name: Arc<str>,
    /// The instance status.
    pub status: &'static str,
}

/// An `endpoint` label.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct EndpointLabel {
    /// The endpoint's name.
    pub endpoint: String,
}

/// `endpoint` and `status` (class) labels of a GitHub call.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct StatusClassLabels {
    /// The endpoint's name.
    pub endpoint: String,
    /// `2xx`, `3xx`, `4xx`, `5xx`, or `none` when no response came (transport failure).
    pub status: String,
}

/// `provider` and `command` labels of a provider call.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ProviderLabels {
    /// The provider's configured name.
    pub provider: String,
    /// `create`, `delete`, `get`, `list`, `remove_all`, `start`, `stop` or `version`.
    pub command: String,
}

/// A `worker` label.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct WorkerLabel {
    /// The worker's name.
    pub worker: String,
}

/// A histogram family whose histograms share one set of buckets.
pub type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

/// Whether this process exports the fleet-wide series: only the leader among the workers
/// sharing a store does, so that a Prometheus summing every scraped process reads the truth
/// once (issue 50 item 1; the rule is the export planner's, `planner::exports`). Shared by
/// every [`FleetOnly`] metric of the process; false until the control loop says otherwise, and
/// always in a process without one.
#[derive(Debug, Clone, Default)]
pub struct FleetRole(Arc<AtomicBool>);

impl FleetRole {
    /// Whether this process exports the fleet-wide series now.
    pub fn exports(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    fn set(&self, exports: bool) {
        self.0.store(exports, Ordering::Relaxed);
    }
}

/// A fleet-wide metric: encoded (with its `# HELP` and `# TYPE`) only while its process
/// exports the fleet-wide series ([`FleetRole`]), absent otherwise.
#[derive(Debug, Clone)]
pub struct FleetOnly<M> {
    metric: M,
    role: FleetRole,
}

impl<M> FleetOnly<M> {
    /// `metric`, exported while `role` says so.
    pub fn new(metric: M, role: FleetRole) -> Self {
        Self { metric, role }
    }
}

impl<M: EncodeMetric> EncodeMetric for FleetOnly<M> {
    fn encode(&self, encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        if self.role.exports() {
            self.metric.encode(encoder)
        } else {
            Ok(())
        }
    }

    fn metric_type(&self) -> MetricType {
        self.metric.metric_type()
    }

    fn is_empty(&self) -> bool {
        !self.role.exports() || self.metric.is_empty()
    }
}

/// The job and boot timing buckets, in seconds: from 5 ms to an hour. Our own latencies are
/// milliseconds (queued → runner requested is ~12 ms in the demo, p99 8.8 ms in the
/// benchmarks); with 5 s as the first bucket every one of them fell in `le="5"` and the
/// dashboard's `histogram_quantile(0.9, …)` read ~4.5 s (issue 50 item 2). Twelve, not the
/// usual twenty: every one is a sample per scale set and histogram (docs/benchmarks.md).
const TIMING_BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0, 120.0, 600.0, 3600.0,
];

fn timing_histogram() -> Histogram {
    Histogram::new(TIMING_BUCKETS)
}

fn provider_histogram() -> Histogram {
    Histogram::new([0.1, 1.0, 10.0, 60.0, 300.0])
}

/// The provider commands, as the `command` label spells them.
pub const PROVIDER_COMMANDS: [&str; 8] = [
    "create",
    "delete",
    "get",
    "list",
    "remove_all",
    "start",
    "stop",
    "version",
];

/// The job message kinds of `jobs_seen`.
const JOB_KINDS: [&str; 5] = ["available", "assigned", "started", "completed", "other"];

/// The outcome classes of `github_calls`.
const CALL_CLASSES: [&str; 4] = ["ok", "retryable", "refusal", "fatal"];

/// The most scale sets a process exports per-scale-set series for (the first in the store's
/// order; the fleet-wide series count every one): bounds `/metrics` at about 10 MB and a
/// render at well under a second (docs/benchmarks.md, "Metrics").
pub const MAX_SCALE_SETS_EXPORTED: usize = 10_000;

/// The status classes of `github_call_statuses`.
const STATUS_CLASSES: [&str; 5] = ["2xx", "3xx", "4xx", "5xx", "none"];

/// What the supervisor read of one scale set, for its per-scale-set gauges.
#[derive(Debug, Clone)]
pub struct SetReading {
    /// The scale set.
    pub id: ScaleSetId,
    /// Its labels.
    pub labels: SetLabels,
    /// Its state.
    pub state: ScaleSetState,
    /// Whether it is served (`false`: disabled or draining, no new runners).
    pub enabled: bool,
    /// Jobs waiting, as GitHub's last statistics said.
    pub jobs_waiting: u32,
    /// The runner count the scaler wants.
    pub desired_runners: u32,
    /// Its configured most runners at once.
    pub max_runners: u32,
    /// Its configured idle runners kept warm.
    pub min_idle: u32,
    /// Since the last handled message; `None` before the first.
    pub last_message_age: Option<Duration>,
    /// Its instances by status (statuses with none left out).
    pub runners: Vec<(InstanceStatus, u64)>,
}

/// One exported scale set's labels and gauges. The supervisor sets every gauge of every scale
/// set each watch interval: through these handles (each shares its value with the series in
/// the family), not by looking each series up by freshly copied labels, which at 10,000 scale
/// sets was 160,000 lookups and half a million string copies every 10 s (docs/benchmarks.md,
/// "Issue 35: memory").
#[derive(Debug)]
struct SetSeries {
    labels: SetLabels,
    /// One per [`ScaleSetState::ALL`], in its order.
    states: Vec<Gauge>,
    /// One per [`InstanceStatus::ALL`], in its order.
    runners: Vec<Gauge>,
    jobs_waiting: Gauge,
    desired_runners: Gauge,
    enabled: Gauge,
    max_runners: Gauge,
    min_idle: Gauge,
    /// Present while the set has handled a message (the series is absent before).
    last_message_age: Option<Gauge>,
}

/// Every metric of the control loop.
#[derive(Debug)]
pub struct Metrics {
    /// Scale sets by state.
    pub scale_sets: Family<StateLabel, Gauge>,
    /// Scale sets with per-scale-set series.
    pub exported_gauge: Gauge,
    /// Scale sets left without per-scale-set series (over [`MAX_SCALE_SETS_EXPORTED`]).
    pub unexported_gauge: Gauge,
    /// Scale sets whose state needs an operator's attention (every state but `ready` and
    /// `pending`: refused, drifted, a held session, dormant, error), as the status page counts.
    pub scale_sets_needing_attention: Gauge,
    /// Runners (instances) by status.
    pub runners: Family<StatusLabel, Gauge>,
    /// Job messages seen, by kind.
    pub jobs_seen: Family<KindLabel, Counter>,
    /// Jobs acquired (GHES mode).
    pub jobs_acquired: Counter,
    /// GitHub calls, by endpoint and outcome class.
    pub github_calls: Family<CallLabels, Counter>,
    /// Seconds from a job's assignment to the scale set (or its queueing) until its message
    /// was handled.
    pub message_lag: Histogram,
    /// Messages whose jobs could not all be decoded.
    pub undecodable_messages: Counter<u64, AtomicU64>,
    /// Messages GitHub delivered again after they were handled (acknowledged again, not
    /// handled again).
    pub redelivered_messages: Counter<u64, AtomicU64>,
    /// Empty polls that stood on their scale set's last instance list instead of listing the
    /// rows again (nothing changed and nothing came due since).
    pub instance_lists_reused: Counter<u64, AtomicU64>,
    /// Per scale set: 1 for its state, 0 for every other.
    pub scale_set_state: Family<SetStateLabels, Gauge>,
    /// Per scale set: jobs waiting for a runner (GitHub's last statistics).
    pub scale_set_jobs_waiting: Family<SetLabels, Gauge>,
    /// Per scale set: runners by status.
    pub scale_set_runners: Family<SetStatusLabels, Gauge>,
    /// Per scale set: the runner count the scaler wants.
    pub scale_set_desired_runners: Family<SetLabels, Gauge>,
    /// Per scale set: 1 while it is served, 0 while disabled or draining (a `ready` state
    /// then says nothing of new runners: none are made).
    pub scale_set_enabled: Family<SetLabels, Gauge>,
    /// Per scale set: its configured `max_runners` (the ceiling the desired count is held to).
    pub scale_set_max_runners: Family<SetLabels, Gauge>,
    /// Per scale set: its configured `min_idle` (idle runners kept warm).
    pub scale_set_min_idle: Family<SetLabels, Gauge>,
    /// Per scale set: seconds since its last handled message (absent before the first).
    pub scale_set_last_message_age: Family<SetLabels, Gauge>,
    /// Per scale set: from a job's queueing until the scaler asked for a runner for it.
    pub job_queued_to_runner_requested: HistogramFamily<SetLabels>,
    /// Per scale set: from a runner's request (its row) until GitHub assigned it a job.
    pub runner_requested_to_online: HistogramFamily<SetLabels>,
    /// Per scale set: from a job's assignment to the scale set until it started.
    pub job_assigned_to_started: HistogramFamily<SetLabels>,
    /// Per scale set: from a job's start until it completed.
    pub job_started_to_completed: HistogramFamily<SetLabels>,
    /// Per scale set: runners whose provider create failed.
    pub bootstrap_failures: Family<SetLabels, Counter>,
    /// Per scale set: runners removed for not being online by their bootstrap deadline.
    pub bootstrap_deadline_expiries: Family<SetLabels, Counter>,
    /// GitHub calls by endpoint and HTTP status class.
    pub github_call_statuses: Family<StatusClassLabels, Counter>,
    /// Retries that waited as the server asked (`Retry-After`, rate-limit reset), by endpoint.
    pub github_retry_after_waits: Family<EndpointLabel, Counter>,
    /// Seconds of those waits, by endpoint.
    pub github_retry_after_wait_seconds: Family<EndpointLabel, Counter<f64, AtomicU64>>,
    /// Provider calls by provider and command.
    pub provider_calls: Family<ProviderLabels, Counter>,
    /// Provider calls that failed, by provider and command.
    pub provider_failures: Family<ProviderLabels, Counter>,
    /// Provider call durations by provider and command.
    pub provider_call_duration: HistogramFamily<ProviderLabels>,
    /// Scale-set leases this worker holds (one series, its own name: each worker exports its
    /// own count, so a sum over the workers is the fleet's).
    pub leases_held: Family<WorkerLabel, Gauge>,
    /// Scale sets whose lease this worker cannot prove it still holds: a renewal failed or
    /// did not answer within the lease's TTL (a partition from the database). The worker has
    /// fenced itself on them (creates nothing, acknowledges nothing there) until a renewal or
    /// a new acquisition settles it; `/readyz` reports them as the reason it is not ready.
    pub leases_in_doubt: Gauge,
    /// The names of the scale sets counted in `leases_in_doubt`.
    doubts: Mutex<std::collections::BTreeMap<ScaleSetId, String>>,
    /// Whether this process exports the fleet-wide series.
    fleet_role: FleetRole,
    /// Every scale set exported: its labels, to record by id and remove when it is gone, and
    /// its gauges.
    sets: Mutex<HashMap<ScaleSetId, SetSeries>>,
    /// The workers whose lease counts are exported.
    workers: Mutex<HashSet<String>>,
}

impl Metrics {
    /// Creates the metrics and registers them under `scaleset_`.
    pub fn new(registry: &mut Registry) -> Self {
        let metrics = Self {
            scale_sets: Family::default(),
            exported_gauge: Gauge::default(),
            unexported_gauge: Gauge::default(),
            scale_sets_needing_attention: Gauge::default(),
            runners: Family::default(),
            jobs_seen: Family::default(),
            jobs_acquired: Counter::default(),
            github_calls: Family::default(),
            message_lag: Histogram::new([0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0]),
            undecodable_messages: Counter::default(),
            redelivered_messages: Counter::default(),
            instance_lists_reused: Counter::default(),
            scale_set_state: Family::default(),
            scale_set_jobs_waiting: Family::default(),
            scale_set_runners: Family::default(),
            scale_set_desired_runners: Family::default(),
            scale_set_enabled: Family::default(),
            scale_set_max_runners: Family::default(),
            scale_set_min_idle: Family::default(),
            scale_set_last_message_age: Family::default(),
            job_queued_to_runner_requested: Family::new_with_constructor(timing_histogram),
            runner_requested_to_online: Family::new_with_constructor(timing_histogram),
            job_assigned_to_started: Family::new_with_constructor(timing_histogram),
            job_started_to_completed: Family::new_with_constructor(timing_histogram),
            bootstrap_failures: Family::default(),
            bootstrap_deadline_expiries: Family::default(),
            github_call_statuses: Family::default(),
            github_retry_after_waits: Family::default(),
            github_retry_after_wait_seconds: Family::default(),
            provider_calls: Family::default(),
            provider_failures: Family::default(),
            provider_call_duration: Family::new_with_constructor(provider_histogram),
            leases_held: Family::default(),
            leases_in_doubt: Gauge::default(),
            doubts: Mutex::default(),
            fleet_role: FleetRole::default(),
            sets: Mutex::default(),
            workers: Mutex::default(),
        };
        metrics.start_at_zero();
        let sub = registry.sub_registry_with_prefix("scaleset");
        sub.register(
            "scale_sets",
            "Scale sets by state (exported by the leading worker only)",
            FleetOnly::new(metrics.scale_sets.clone(), metrics.fleet_role.clone()),
        );
        sub.register(
            "scale_sets_needing_attention",
            "Scale sets whose state needs attention (every state but ready and pending; exported by the leading worker only)",
            FleetOnly::new(
                metrics.scale_sets_needing_attention.clone(),
                metrics.fleet_role.clone(),
            ),
        );
        sub.register(
            "runners",
            "Runners (provider instances) by status (exported by the leading worker only)",
            FleetOnly::new(metrics.runners.clone(), metrics.fleet_role.clone()),
        );
        sub.register(
            "jobs_seen",
            "Job messages seen, by kind",
            metrics.jobs_seen.clone(),
        );
        sub.register(
            "jobs_acquired",
            "Jobs acquired (available-then-acquire mode)",
            metrics.jobs_acquired.clone(),
        );
        sub.register(
            "github_calls",
            "GitHub calls by endpoint and outcome class",
            metrics.github_calls.clone(),
        );
        sub.register(
            "message_lag_seconds",
            "Seconds from a job's assignment until its message was handled",
            metrics.message_lag.clone(),
        );
        sub.register(
            "undecodable_messages",
            "Messages with job messages that did not decode",
            metrics.undecodable_messages.clone(),
        );
        sub.register(
            "redelivered_messages",
            "Messages GitHub delivered again after they were handled (acknowledged again, not handled twice)",
            metrics.redelivered_messages.clone(),
        );
        sub.register(
            "instance_lists_reused",
            "Empty polls that stood on their scale set's last instance list (nothing changed or came due since)",
            metrics.instance_lists_reused.clone(),
        );
        sub.register(
            "scale_set_state",
            "Per scale set: 1 for its current state, 0 for the others",
            metrics.scale_set_state.clone(),
        );
        sub.register(
            "scale_set_jobs_waiting",
            "Per scale set: jobs waiting for a runner, as GitHub's last statistics said",
            metrics.scale_set_jobs_waiting.clone(),
        );
        sub.register(
            "scale_set_runners",
            "Per scale set: runners (provider instances) by status",
            metrics.scale_set_runners.clone(),
        );
        sub.register(
            "scale_set_desired_runners",
            "Per scale set: the runner count the scaler wants",
            metrics.scale_set_desired_runners.clone(),
        );
        sub.register(
            "scale_set_enabled",
            "Per scale set: 1 while it is served, 0 while disabled or draining (no new runners)",
            metrics.scale_set_enabled.clone(),
        );
        sub.register(
            "scale_set_max_runners",
            "Per scale set: its configured max_runners, the most runners at once",
            metrics.scale_set_max_runners.clone(),
        );
        sub.register(
            "scale_set_min_idle",
            "Per scale set: its configured min_idle, the idle runners kept warm",
            metrics.scale_set_min_idle.clone(),
        );
        sub.register(
            "scale_set_last_message_age_seconds",
            "Per scale set: seconds since its last handled message (absent before the first)",
            metrics.scale_set_last_message_age.clone(),
        );
        sub.register(
            "job_queued_to_runner_requested_seconds",
            "Per scale set: from a job's queueing until the scaler asked for a runner for it",
            metrics.job_queued_to_runner_requested.clone(),
        );
        sub.register(
            "runner_requested_to_online_seconds",
            "Per scale set: from a runner's request until GitHub assigned it its job (the provider's boot)",
            metrics.runner_requested_to_online.clone(),
        );
        sub.register(
            "job_assigned_to_started_seconds",
            "Per scale set: from a job's assignment to the scale set until it started",
            metrics.job_assigned_to_started.clone(),
        );
        sub.register(
            "job_started_to_completed_seconds",
            "Per scale set: from a job's start until it completed",
            metrics.job_started_to_completed.clone(),
        );
        sub.register(
            "bootstrap_failures",
            "Per scale set: runners whose provider create failed",
            metrics.bootstrap_failures.clone(),
        );
        sub.register(
            "bootstrap_deadline_expiries",
            "Per scale set: runners removed for not being online by their bootstrap deadline",
            metrics.bootstrap_deadline_expiries.clone(),
        );
        sub.register(
            "github_call_statuses",
            "GitHub calls by endpoint and HTTP status class (none: no response)",
            metrics.github_call_statuses.clone(),
        );
        sub.register(
            "github_retry_after_waits",
            "GitHub retries that waited as the server asked (Retry-After, rate-limit reset), by endpoint",
            metrics.github_retry_after_waits.clone(),
        );
        sub.register(
            "github_retry_after_wait_seconds",
            "Seconds waited as the server asked before GitHub retries, by endpoint",
            metrics.github_retry_after_wait_seconds.clone(),
        );
        sub.register(
            "provider_calls",
            "Provider calls by provider and command",
            metrics.provider_calls.clone(),
        );
        sub.register(
            "provider_failures",
            "Provider calls that failed, by provider and command",
            metrics.provider_failures.clone(),
        );
        sub.register(
            "provider_call_duration_seconds",
            "Provider call durations by provider and command",
            metrics.provider_call_duration.clone(),
        );
        sub.register(
            "leases_held",
            "Scale-set leases this worker holds",
            metrics.leases_held.clone(),
        );
        sub.register(
            "leases_in_doubt",
            "Scale-set leases this worker could not renew within their TTL or at all (fenced: it creates and acknowledges nothing on them; another worker takes them over)",
            metrics.leases_in_doubt.clone(),
        );
        sub.register(
            "scale_sets_unexported",
            "Scale sets without per-scale-set series (over the limit of 10000 per process)",
            metrics.unexported_gauge.clone(),
        );
        sub.register(
            "scale_sets_exported",
            "Scale sets with per-scale-set series",
            metrics.exported_gauge.clone(),
        );
        metrics
    }

    /// Creates the label sets known at start, so their counters read 0 before the first event.
    fn start_at_zero(&self) {
        for kind in JOB_KINDS {
            drop(self.jobs_seen.get_or_create(&KindLabel {
                kind: kind.to_owned(),
            }));
        }
        for endpoint in Endpoint::ALL {
            let endpoint = endpoint.as_str();
            for class in CALL_CLASSES {
                drop(self.github_calls.get_or_create(&CallLabels {
                    endpoint: endpoint.to_owned(),
                    class: class.to_owned(),
                }));
            }
            for status in STATUS_CLASSES {
                drop(self.github_call_statuses.get_or_create(&StatusClassLabels {
                    endpoint: endpoint.to_owned(),
                    status: status.to_owned(),
                }));
            }
            let label = EndpointLabel {
                endpoint: endpoint.to_owned(),
            };
            drop(self.github_retry_after_waits.get_or_create(&label));
            drop(self.github_retry_after_wait_seconds.get_or_create(&label));
        }
    }

    /// Creates a provider's series at 0 (the controller calls it for each configured one).
    pub fn provider_known(&self, provider: &str) {
        for command in PROVIDER_COMMANDS {
            let labels = ProviderLabels {
                provider: provider.to_owned(),
                command: command.to_owned(),
            };
            drop(self.provider_calls.get_or_create(&labels));
            drop(self.provider_failures.get_or_create(&labels));
            drop(self.provider_call_duration.get_or_create(&labels));
        }
    }

    /// Records one provider call.
    pub fn provider_call(&self, provider: &str, command: &str, failed: bool, took: Duration) {
        let labels = ProviderLabels {
            provider: provider.to_owned(),
            command: command.to_owned(),
        };
        self.provider_calls.get_or_create(&labels).inc();
        if failed {
            self.provider_failures.get_or_create(&labels).inc();
        }
        self.provider_call_duration
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
    }

    /// The labels of a scale set the supervisor has exported (`None` before it first saw it).
    pub fn set_labels(&self, id: ScaleSetId) -> Option<SetLabels> {
        self.sets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&id)
            .map(|series| series.labels.clone())
    }

    /// Observes `seconds` in a scale set's histogram of `family`, if the set is exported
    /// (a negative span, from clocks that disagree, counts as 0).
    pub fn observe_timing(
        &self,
        family: &HistogramFamily<SetLabels>,
        id: ScaleSetId,
        seconds: f64,
    ) {
        if let Some(labels) = self.set_labels(id) {
            family.get_or_create(&labels).observe(seconds.max(0.0));
        }
    }

    /// Counts one event in a scale set's counter of `family`, if the set is exported.
    pub fn count(&self, family: &Family<SetLabels, Counter>, id: ScaleSetId) {
        if let Some(labels) = self.set_labels(id) {
            family.get_or_create(&labels).inc();
        }
    }

    /// The fleet-wide series' switch, for metrics registered elsewhere ([`FleetOnly`]).
    pub fn fleet_role(&self) -> FleetRole {
        self.fleet_role.clone()
    }

    /// Whether this process exports the fleet-wide series (the control loop decides, each
    /// watch interval; see `planner::exports`). A process without a control loop never does,
    /// unless told here (tests of the API alone).
    pub fn set_fleet_exporter(&self, exports: bool) {
        self.fleet_role.set(exports);
    }

    /// Sets the leases held by each worker; workers no longer holding any are removed. The
    /// control loop passes only its own worker (each exports its own count).
    pub fn set_leases(&self, held: &HashMap<String, u64>) {
        let mut workers = self
            .workers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for gone in workers.iter().filter(|w| !held.contains_key(*w)) {
            self.leases_held.remove(&WorkerLabel {
                worker: gone.clone(),
            });
        }
        workers.clear();
        for (worker, count) in held {
            self.leases_held
                .get_or_create(&WorkerLabel {
                    worker: worker.clone(),
                })
                .set(i64::try_from(*count).unwrap_or(i64::MAX));
            workers.insert(worker.clone());
        }
    }

    /// Says that the lease of scale set `id` (named `name`) is in doubt: its renewal failed or
    /// did not answer in time.
    pub fn lease_in_doubt(&self, id: ScaleSetId, name: &str) {
        let mut doubts = self
            .doubts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        doubts.insert(id, name.to_owned());
        self.leases_in_doubt
            .set(i64::try_from(doubts.len()).unwrap_or(i64::MAX));
    }

    /// Says that the lease of scale set `id` is settled: renewed, acquired again, known to be
    /// another worker's, or released.
    pub fn lease_settled(&self, id: ScaleSetId) {
        let mut doubts = self
            .doubts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if doubts.remove(&id).is_some() {
            self.leases_in_doubt
                .set(i64::try_from(doubts.len()).unwrap_or(i64::MAX));
        }
    }

    /// Whether this worker could not renew the lease of scale set `id` (it has fenced itself
    /// there until a renewal or a new acquisition settles it).
    pub fn is_lease_in_doubt(&self, id: ScaleSetId) -> bool {
        self.doubts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains_key(&id)
    }

    /// The names of the scale sets whose lease is in doubt, sorted.
    pub fn leases_in_doubt(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .doubts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .values()
            .cloned()
            .collect();
        names.sort();
        names
    }

    /// Sets every scale set's gauges from what the supervisor read, creates a new set's
    /// counters and histograms at 0, and removes the series of sets no longer in the store.
    /// Only the first [`MAX_SCALE_SETS_EXPORTED`] readings get series.
    pub fn observe_scale_sets(&self, readings: &[SetReading]) {
        let over = readings.len().saturating_sub(MAX_SCALE_SETS_EXPORTED);
        let readings = &readings[..readings.len() - over];
        self.unexported_gauge
            .set(i64::try_from(over).unwrap_or(i64::MAX));
        let mut sets = self
            .sets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let seen: HashSet<ScaleSetId> = readings.iter().map(|r| r.id).collect();
        let gone: Vec<ScaleSetId> = sets
            .keys()
            .filter(|id| !seen.contains(id))
            .copied()
            .collect();
        for id in gone {
            if let Some(series) = sets.remove(&id) {
                self.remove_set(&series.labels);
            }
        }
        for reading in readings {
            let labels = &reading.labels;
            // A renamed set (or moved entity) drops its old series.
            let known = match sets.get(&reading.id) {
                Some(old) if &old.labels != labels => {
                    self.remove_set(&old.labels);
                    false
                }
                Some(_) => true,
                None => false,
            };
            if !known {
                // A new set's gauges, counters and histograms, at 0.
                for family in self.timings() {
                    drop(family.get_or_create(labels));
                }
                drop(self.bootstrap_failures.get_or_create(labels));
                drop(self.bootstrap_deadline_expiries.get_or_create(labels));
                sets.insert(reading.id, self.new_series(labels));
            }
            let Some(series) = sets.get_mut(&reading.id) else {
                continue;
            };
            for (state, gauge) in ScaleSetState::ALL.iter().zip(&series.states) {
                gauge.set(i64::from(*state == reading.state));
            }
            for (status, gauge) in InstanceStatus::ALL.iter().zip(&series.runners) {
                let count = reading
                    .runners
                    .iter()
                    .find(|(s, _)| s == status)
                    .map_or(0, |(_, n)| *n);
                gauge.set(i64::try_from(count).unwrap_or(i64::MAX));
            }
            series.jobs_waiting.set(i64::from(reading.jobs_waiting));
            series
                .desired_runners
                .set(i64::from(reading.desired_runners));
            series.enabled.set(i64::from(reading.enabled));
            series.max_runners.set(i64::from(reading.max_runners));
            series.min_idle.set(i64::from(reading.min_idle));
            match reading.last_message_age {
                Some(age) => {
                    let seconds = i64::try_from(age.as_secs()).unwrap_or(i64::MAX);
                    series
                        .last_message_age
                        .get_or_insert_with(|| {
                            self.scale_set_last_message_age
                                .get_or_create(labels)
                                .clone()
                        })
                        .set(seconds);
                }
                None => {
                    if series.last_message_age.take().is_some() {
                        self.scale_set_last_message_age.remove(labels);
                    }
                }
            }
        }
        self.exported_gauge
            .set(i64::try_from(sets.len()).unwrap_or(i64::MAX));
    }

    /// A new set's gauges, created in their families (at 0 until set).
    fn new_series(&self, labels: &SetLabels) -> SetSeries {
        SetSeries {
            labels: labels.clone(),
            states: ScaleSetState::ALL
                .iter()
                .map(|state| {
                    self.scale_set_state
                        .get_or_create(&SetStateLabels {
                            scale_set: labels.scale_set.clone(),
                            entity_kind: labels.entity_kind,
                            entity_name: labels.entity_name.clone(),
                            state: state.as_str(),
                        })
                        .clone()
                })
                .collect(),
            runners: InstanceStatus::ALL
                .iter()
                .map(|status| {
                    self.scale_set_runners
                        .get_or_create(&SetStatusLabels {
                            scale_set: labels.scale_set.clone(),
                            entity_kind: labels.entity_kind,
                            entity_name: labels.entity_name.clone(),
                            status: status.as_str(),
                        })
                        .clone()
                })
                .collect(),
            jobs_waiting: self.scale_set_jobs_waiting.get_or_create(labels).clone(),
            desired_runners: self.scale_set_desired_runners.get_or_create(labels).clone(),
            enabled: self.scale_set_enabled.get_or_create(labels).clone(),
            max_runners: self.scale_set_max_runners.get_or_create(labels).clone(),
            min_idle: self.scale_set_min_idle.get_or_create(labels).clone(),
            last_message_age: None,
        }
    }

    fn timings(&self) -> [&HistogramFamily<SetLabels>; 4] {
        [
            &self.job_queued_to_runner_requested,
            &self.runner_requested_to_online,
            &self.job_assigned_to_started,
            &self.job_started_to_completed,
        ]
    }

    fn remove_set(&self, labels: &SetLabels) {
        for state in ScaleSetState::ALL {
            self.scale_set_state.remove(&SetStateLabels {
                scale_set: labels.scale_set.clone(),
                entity_kind: labels.entity_kind,
                entity_name: labels.entity_name.clone(),
                state: state.as_str(),
            });
        }
        for status in InstanceStatus::ALL {
            self.scale_set_runners.remove(&SetStatusLabels {
                scale_set: labels.scale_set.clone(),
                entity_kind: labels.entity_kind,
                entity_name: labels.entity_name.clone(),
                status: status.as_str(),
            });
        }
        self.scale_set_jobs_waiting.remove(labels);
        self.scale_set_desired_runners.remove(labels);
        self.scale_set_enabled.remove(labels);
        self.scale_set_max_runners.remove(labels);
        self.scale_set_min_idle.remove(labels);
        self.scale_set_last_message_age.remove(labels);
        for family in self.timings() {
            family.remove(labels);
        }
        self.bootstrap_failures.remove(labels);
        self.bootstrap_deadline_expiries.remove(labels);
    }

    /// The calls counted for one endpoint and class, for tests and status pages.
    pub fn github_call_count(&self, endpoint: &str, class: &str) -> u64 {
        self.github_calls
            .get_or_create(&CallLabels {
                endpoint: endpoint.to_owned(),
                class: class.to_owned(),
            })
            .get()
    }
}

/// Counts every call of the clients the controller hands out ([`crate::ClientFactory`] clients
/// are given the controller's metrics as their observer), under the client's own endpoint name.
impl CallObserver for Metrics {
    fn finished(&self, report: &CallReport<'_>) {
        let class = match report.outcome {
            Ok(_) => "ok",
            Err(error) => match error.class() {
                ErrorClass::Retryable => "retryable",
                ErrorClass::Refusal(_) => "refusal",
                _ => "fatal",
            },
        };
        let endpoint = report.endpoint.as_str();
        self.github_calls
            .get_or_create(&CallLabels {
                endpoint: endpoint.to_owned(),
                class: class.to_owned(),
            })
            .inc();
        let status = match report.outcome {
            Ok(status) => Some(status),
            Err(error) => error.status(),
        };
        self.github_call_statuses
            .get_or_create(&StatusClassLabels {
                endpoint: endpoint.to_owned(),
                status: status_class(status).to_owned(),
            })
            .inc();
        if report.advertised_waits > 0 {
            let label = EndpointLabel {
                endpoint: endpoint.to_owned(),
            };
            self.github_retry_after_waits
                .get_or_create(&label)
                .inc_by(u64::from(report.advertised_waits));
            self.github_retry_after_wait_seconds
                .get_or_create(&label)
                .inc_by(report.advertised_wait.as_secs_f64());
        }
    }
}

/// `2xx` … `5xx` for a status, `none` when no response came.
fn status_class(status: Option<u16>) -> &'static str {
    match status {
        Some(200..=299) => "2xx",
        Some(300..=399) => "3xx",
        Some(400..=499) => "4xx",
        Some(500..=599) => "5xx",
        _ => "none",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(id: ScaleSetId, name: &str) -> SetReading {
        SetReading {
            id,
            labels: SetLabels {
                scale_set: name.into(),
                entity_kind: "organization",
                entity_name: "acme".into(),
            },
            state: ScaleSetState::Ready,
            enabled: true,
            jobs_waiting: 3,
            desired_runners: 2,
            max_runners: 6,
            min_idle: 1,
            last_message_age: Some(Duration::from_secs(7)),
            runners: vec![(InstanceStatus::Busy, 2)],
        }
    }

    fn render(registry: &Registry) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, registry).expect("encode");
        text
    }

    fn lines_of<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
        text.lines()
            .filter(|l| !l.starts_with('#') && l.contains(&format!("scale_set=\"{name}\"")))
            .collect()
    }

    #[test]
    fn a_12_ms_job_timing_lands_below_50_ms_not_in_a_seconds_bucket() {
        let mut registry = Registry::default();
        let metrics = Metrics::new(&mut registry);
        let id = ScaleSetId(uuid::Uuid::new_v4());
        metrics.observe_scale_sets(&[reading(id, "fast")]);
        for family in [
            &metrics.job_queued_to_runner_requested,
            &metrics.runner_requested_to_online,
            &metrics.job_assigned_to_started,
            &metrics.job_started_to_completed,
        ] {
            metrics.observe_timing(family, id, 0.012);
        }
        let text = render(&registry);
        for name in [
            "job_queued_to_runner_requested",
            "runner_requested_to_online",
            "job_assigned_to_started",
            "job_started_to_completed",
        ] {
            let bucket = |le: &str| {
                let prefix = format!("scaleset_{name}_seconds_bucket{{");
                text.lines()
                    .find(|l| l.starts_with(&prefix) && l.contains(&format!("le=\"{le}\"")))
                    .and_then(|l| l.rsplit(' ').next())
                    .unwrap_or_else(|| panic!("{name}: no le={le} bucket in\n{text}"))
                    .to_owned()
            };
            assert_eq!(bucket("0.01"), "0", "{name}: 12 ms is above 10 ms");
            assert_eq!(bucket("0.025"), "1", "{name}: 12 ms is at most 25 ms");
            assert_eq!(bucket("0.05"), "1", "{name}: 12 ms is below 50 ms");
            assert_eq!(bucket("3600.0"), "1", "{name}: the buckets reach an hour");
        }
    }

    #[test]
    fn a_sets_series_appear_with_its_values_and_go_when_it_is_deleted_or_renamed() {
        let mut registry = Registry::default();
        let metrics = Metrics::new(&mut registry);
        let (a, b) = (
            ScaleSetId(uuid::Uuid::new_v4()),
            ScaleSetId(uuid::Uuid::new_v4()),
        );
        metrics.observe_scale_sets(&[reading(a, "a"), reading(b, "b")]);
        let text = render(&registry);
        for expected in [
            "scaleset_scale_set_state{scale_set=\"a\",entity_kind=\"organization\",entity_name=\"acme\",state=\"ready\"} 1",
            "scaleset_scale_set_state{scale_set=\"a\",entity_kind=\"organization\",entity_name=\"acme\",state=\"error\"} 0",
            "scaleset_scale_set_jobs_waiting{scale_set=\"a\",entity_kind=\"organization\",entity_name=\"acme\"} 3",
            "scaleset_scale_set_desired_runners{scale_set=\"a\",entity_kind=\"organization\",entity_name=\"acme\"} 2",
            "scaleset_scale_set_enabled{scale_set=\"a\",entity_kind=\"organization\",entity_name=\"acme\"} 1",
            "scaleset_scale_set_max_runners{scale_set=\"a\",entity_kind=\"organization\",entity_name=\"acme\"} 6",
            "scaleset_scale_set_min_idle{scale_set=\"a\",entity_kind=\"organization\",entity_name=\"acme\"} 1",
            "scaleset_scale_set_last_message_age_seconds{scale_set=\"a\",entity_kind=\"organization\",entity_name=\"acme\"} 7",
            "scaleset_scale_set_runners{scale_set=\"a\",entity_kind=\"organization\",entity_name=\"acme\",status=\"busy\"} 2",
            "scaleset_scale_set_runners{scale_set=\"a\",entity_kind=\"organization\",entity_name=\"acme\",status=\"pending\"} 0",
            "scaleset_bootstrap_failures_total{scale_set=\"a\",entity_kind=\"organization\",entity_name=\"acme\"} 0",
            "scaleset_job_started_to_completed_seconds_count{scale_set=\"a\",entity_kind=\"organization\",entity_name=\"acme\"} 0",
            "scaleset_scale_sets_exported 2",
        ] {
            assert!(text.lines().any(|l| l == expected), "{expected} in\n{text}");
        }
        metrics.count(&metrics.bootstrap_deadline_expiries, a);
        metrics.observe_timing(&metrics.job_assigned_to_started, a, -1.0);
        let text = render(&registry);
        assert!(text.contains(
            "scaleset_bootstrap_deadline_expiries_total{scale_set=\"a\",entity_kind=\"organization\",entity_name=\"acme\"} 1"
        ));
        assert!(text.contains(
            "scaleset_job_assigned_to_started_seconds_bucket{le=\"5.0\",scale_set=\"a\",entity_kind=\"organization\",entity_name=\"acme\"} 1"
        ), "a negative span counts as 0:\n{text}");

        // `a` deleted, `b` renamed `c`: neither old name is left; no age before a message.
        let mut renamed = reading(b, "c");
        renamed.last_message_age = None;
        metrics.observe_scale_sets(&[renamed]);
        let text = render(&registry);
        assert_eq!(lines_of(&text, "a"), Vec::<&str>::new());
        assert_eq!(lines_of(&text, "b"), Vec::<&str>::new());
        assert!(!lines_of(&text, "c").is_empty());
        assert!(!text.contains("scaleset_scale_set_last_message_age_seconds{"));
        assert!(text.contains("scaleset_scale_sets_exported 1"));
        assert_eq!(metrics.set_labels(a), None, "a deleted set records nothing");
        metrics.count(&metrics.bootstrap_failures, a);
        assert_eq!(lines_of(&render(&registry), "a"), Vec::<&str>::new());
    }

    /// The entity is two labels: a set whose organization `acme` becomes the enterprise `acme`
    /// (same name, another kind) is another series, and the old one goes.
    #[test]
    fn a_sets_entity_is_its_kind_and_name_and_a_new_kind_replaces_its_series() {
        let mut registry = Registry::default();
        let metrics = Metrics::new(&mut registry);
        let a = ScaleSetId(uuid::Uuid::new_v4());
        metrics.observe_scale_sets(&[reading(a, "a")]);
        let text = render(&registry);
        assert!(
            text.lines().any(|l| l
                == "scaleset_scale_set_desired_runners{scale_set=\"a\",entity_kind=\"organization\",entity_name=\"acme\"} 2"),
            "{text}"
        );
        assert!(
            !text.contains("entity=\""),
            "no joined entity label:\n{text}"
        );
        let mut moved = reading(a, "a");
        moved.labels.entity_kind = "enterprise";
        metrics.observe_scale_sets(&[moved]);
        let text = render(&registry);
        let set_lines = lines_of(&text, "a");
        assert!(!set_lines.is_empty());
        assert!(
            set_lines
                .iter()
                .all(|l| l.contains("entity_kind=\"enterprise\",entity_name=\"acme\"")),
            "only the new kind's series are left: {set_lines:#?}"
        );
    }

    /// Every series of a scale set shares its name and entity strings rather than copying them
    /// (issue 35: they were 43 % of the metrics' memory at 10,000 sets), and removing the set
    /// lets them go.
    #[test]
    fn a_sets_series_share_its_label_strings_and_release_them_when_it_goes() {
        let mut registry = Registry::default();
        let metrics = Metrics::new(&mut registry);
        let a = ScaleSetId(uuid::Uuid::new_v4());
        let first = reading(a, "a");
        let (name, entity) = (
            first.labels.scale_set.clone(),
            first.labels.entity_name.clone(),
        );
        metrics.observe_scale_sets(std::slice::from_ref(&first));
        drop(first);
        // Gauges by state and by status, jobs waiting, desired runners, enabled, max runners,
        // min idle, message age, four timings, two counters; then the set's own record and
        // this test's copy.
        let series = ScaleSetState::ALL.len() + InstanceStatus::ALL.len() + 6 + 4 + 2;
        assert_eq!(Arc::strong_count(&name), series + 2);
        assert_eq!(Arc::strong_count(&entity), series + 2);
        // A later reading of a known set (fresh strings) adds no copies.
        metrics.observe_scale_sets(&[reading(a, "a")]);
        assert_eq!(Arc::strong_count(&name), series + 2);
        metrics.observe_scale_sets(&[]);
        assert_eq!(
            Arc::strong_count(&name),
            1,
            "a gone set's series are all removed"
        );
        assert_eq!(Arc::strong_count(&entity), 1);
    }

    /// A known set's gauges are set through the handles kept for it (issue 35: no lookup by
    /// copied labels each tick): every later reading shows, and its message age comes and goes.
    #[test]
    fn a_known_sets_gauges_follow_every_reading() {
        let mut registry = Registry::default();
        let metrics = Metrics::new(&mut registry);
        let a = ScaleSetId(uuid::Uuid::new_v4());
        metrics.observe_scale_sets(&[reading(a, "a")]);
        let mut later = reading(a, "a");
        later.state = ScaleSetState::Error;
        later.jobs_waiting = 5;
        later.desired_runners = 4;
        later.enabled = false;
        later.max_runners = 9;
        later.min_idle = 0;
        later.last_message_age = None;
        later.runners = vec![(InstanceStatus::Running, 3)];
        metrics.observe_scale_sets(&[later.clone()]);
        let text = render(&registry);
        let labels = "scale_set=\"a\",entity_kind=\"organization\",entity_name=\"acme\"";
        for expected in [
            format!("scaleset_scale_set_state{{{labels},state=\"ready\"}} 0"),
            format!("scaleset_scale_set_state{{{labels},state=\"error\"}} 1"),
            format!("scaleset_scale_set_jobs_waiting{{{labels}}} 5"),
            format!("scaleset_scale_set_desired_runners{{{labels}}} 4"),
            format!("scaleset_scale_set_enabled{{{labels}}} 0"),
            format!("scaleset_scale_set_max_runners{{{labels}}} 9"),
            format!("scaleset_scale_set_min_idle{{{labels}}} 0"),
            format!("scaleset_scale_set_runners{{{labels},status=\"busy\"}} 0"),
            format!("scaleset_scale_set_runners{{{labels},status=\"running\"}} 3"),
        ] {
            assert!(text.lines().any(|l| l == expected), "{expected} in\n{text}");
        }
        assert!(
            !text.contains("scaleset_scale_set_last_message_age_seconds{"),
            "no age without a message:\n{text}"
        );
        later.last_message_age = Some(Duration::from_secs(9));
        metrics.observe_scale_sets(&[later.clone()]);
        later.last_message_age = Some(Duration::from_secs(11));
        metrics.observe_scale_sets(&[later]);
        let expected = format!("scaleset_scale_set_last_message_age_seconds{{{labels}}} 11");
        let text = render(&registry);
        assert!(text.lines().any(|l| l == expected), "{expected} in\n{text}");
    }

    #[test]
    fn leases_are_per_worker_and_a_worker_holding_none_is_removed() {
        let mut registry = Registry::default();
        let metrics = Metrics::new(&mut registry);
        metrics.set_leases(&HashMap::from([("w1".to_owned(), 3), ("w2".to_owned(), 1)]));
        let text = render(&registry);
        assert!(
            text.contains("scaleset_leases_held{worker=\"w1\"} 3"),
            "{text}"
        );
        assert!(
            text.contains("scaleset_leases_held{worker=\"w2\"} 1"),
            "{text}"
        );
        metrics.set_leases(&HashMap::from([("w1".to_owned(), 2)]));
        let text = render(&registry);
        assert!(
            text.contains("scaleset_leases_held{worker=\"w1\"} 2"),
            "{text}"
        );
        assert!(!text.contains("worker=\"w2\""), "{text}");
    }

    #[test]
    fn a_lease_in_doubt_is_counted_and_named_until_it_is_settled() {
        let mut registry = Registry::default();
        let metrics = Metrics::new(&mut registry);
        let (a, b) = (
            ScaleSetId(uuid::Uuid::new_v4()),
            ScaleSetId(uuid::Uuid::new_v4()),
        );
        assert!(render(&registry).contains("scaleset_leases_in_doubt 0"));
        metrics.lease_in_doubt(b, "linux");
        metrics.lease_in_doubt(a, "arm");
        metrics.lease_in_doubt(a, "arm");
        assert!(render(&registry).contains("scaleset_leases_in_doubt 2"));
        assert_eq!(metrics.leases_in_doubt(), vec!["arm", "linux"]);
        assert!(metrics.is_lease_in_doubt(a));
        metrics.lease_settled(a);
        metrics.lease_settled(a);
        assert!(render(&registry).contains("scaleset_leases_in_doubt 1"));
        assert_eq!(metrics.leases_in_doubt(), vec!["linux"]);
        assert!(!metrics.is_lease_in_doubt(a) && metrics.is_lease_in_doubt(b));
    }

    #[test]
    fn statuses_are_classed_by_hundreds_and_no_response_is_none() {
        assert_eq!(status_class(Some(200)), "2xx");
        assert_eq!(status_class(Some(299)), "2xx");
        assert_eq!(status_class(Some(302)), "3xx");
        assert_eq!(status_class(Some(404)), "4xx");
        assert_eq!(status_class(Some(503)), "5xx");
        assert_eq!(status_class(Some(600)), "none");
        assert_eq!(status_class(None), "none");
    }

    #[test]
    fn provider_calls_count_failures_apart_and_time_every_call() {
        let mut registry = Registry::default();
        let metrics = Metrics::new(&mut registry);
        metrics.provider_known("p");
        metrics.provider_call("p", "create", false, Duration::from_millis(200));
        metrics.provider_call("p", "create", true, Duration::from_millis(200));
        let text = render(&registry);
        for expected in [
            "scaleset_provider_calls_total{provider=\"p\",command=\"create\"} 2",
            "scaleset_provider_failures_total{provider=\"p\",command=\"create\"} 1",
            "scaleset_provider_calls_total{provider=\"p\",command=\"stop\"} 0",
            "scaleset_provider_call_duration_seconds_count{provider=\"p\",command=\"create\"} 2",
        ] {
            assert!(text.lines().any(|l| l == expected), "{expected} in\n{text}");
        }
    }
}
