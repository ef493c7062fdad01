//! The control loop's metrics, recorded with `prometheus-client` into a registry the binaries
//! expose later: scale sets by state, runners by status, jobs seen and acquired, GitHub calls
//! and errors by endpoint and class, and message lag.

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use scaleset_github::{CallObserver, CallReport, ErrorClass};

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

/// Every metric of the control loop.
#[derive(Debug)]
pub struct Metrics {
    /// Scale sets by state.
    pub scale_sets: Family<StateLabel, Gauge>,
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
}

impl Metrics {
    /// Creates the metrics and registers them under `scaleset_`.
    pub fn new(registry: &mut Registry) -> Self {
        let metrics = Self {
            scale_sets: Family::default(),
            scale_sets_needing_attention: Gauge::default(),
            runners: Family::default(),
            jobs_seen: Family::default(),
            jobs_acquired: Counter::default(),
            github_calls: Family::default(),
            message_lag: Histogram::new([0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0]),
            undecodable_messages: Counter::default(),
        };
        let sub = registry.sub_registry_with_prefix("scaleset");
        sub.register(
            "scale_sets",
            "Scale sets by state",
            metrics.scale_sets.clone(),
        );
        sub.register(
            "scale_sets_needing_attention",
            "Scale sets whose state needs attention (every state but ready and pending)",
            metrics.scale_sets_needing_attention.clone(),
        );
        sub.register(
            "runners",
            "Runners (provider instances) by status",
            metrics.runners.clone(),
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
        metrics
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
        self.github_calls
            .get_or_create(&CallLabels {
                endpoint: report.endpoint.as_str().to_owned(),
                class: class.to_owned(),
            })
            .inc();
    }
}
