//! The listener: the message session of one scale set, the long-poll, the handling of each
//! batch, the fenced cursor write and the ack.
//!
//! Session rules: our stored session id is deleted first (our own stale session after a
//! crash); a 409 is `foreign_session` at once (visible, counted as needing attention, nothing
//! deleted), and the session planner (`planner::session`) says who holds it and when to look
//! again: a holder that may be our own (named as our owner, or not named: a crash and a lost
//! database leave exactly that) on a short schedule, another owner slowly. A create that
//! failed in transit is tried again with backoff. A rejected queue token is refreshed by the
//! client (once per call); an unknown session is recreated keeping the cursor; a scale set
//! GitHub deleted is re-ensured (dormancy: the cursor is reset by the ensure).
//!
//! Nothing here sleeps between tries: opening a session is one try, and a try that must be
//! repeated ends the listener with [`ListenEnd::Wait`] and the facts so far
//! ([`SessionAttempt`]); the task waits (cancel-aware, holding no start permit) and resumes
//! the attempt. While listening, every step is raced with cancellation: a stop drops the step
//! where it is (as a crash there would; every step is safe to stop at an await), then deletes
//! the session.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use scaleset_github::ExposeSecret as _;
use scaleset_github::{
    Client, GithubScaleSetId, JobMessage, Message, MessageId, Session, Statistics,
    unverified_expiry,
};
use scaleset_store::{
    Instance, InstanceStatus, Lease, Progress, ReasonCode, Sample, ScaleSetState, Store,
};
use tokio_util::sync::CancellationToken;

use crate::checkpoint::Checkpoint;
use crate::ensure::{Ensured, ImportedWrites, ensure, record};
use crate::error::{Error, chain, store};
use crate::metrics::KindLabel;
use crate::planner::session::{
    AfterStaleDelete, Conflict, Rechecks, after_stale_delete, forget_after_close, held_by,
    recheck_after,
};
use crate::scaler::{Landed, Recovering, Runners};
use crate::session;
use crate::shared::{Samples, Shared};
use crate::wait::{Waited, wait_until};

/// How a listener stopped.
#[derive(Debug)]
pub(crate) enum ListenEnd {
    /// Cancelled; the session was deleted.
    Cancelled,
    /// GitHub no longer has the scale set: ensure it again.
    Reensure,
    /// No session could be opened now (held by another listener, or a create failed in
    /// transit): try again after `after`, resuming `attempt`.
    Wait {
        /// How long to wait (the task jitters it).
        after: Duration,
        /// The facts of the attempt so far.
        attempt: SessionAttempt,
    },
}

/// The facts of one attempt to open a scale set's session that outlive a wait of the task:
/// it resumes the attempt without ensuring again, and the planner judges the next conflict by
/// them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SessionAttempt {
    /// Our recorded session was dealt with (deleted, found gone, or there was none).
    stale_handled: bool,
    /// A recorded session of ours was deleted first.
    recorded_deleted: bool,
    /// Creates of ours that failed in transit (they may have succeeded on GitHub).
    failed_creates: u32,
    /// When GitHub first answered a conflict, for the short recheck window.
    held_since: Option<tokio::time::Instant>,
    /// For a scale set imported from GARM that no session of ours has held yet (its ensure
    /// wrote nothing to it: `ImportedWrites::Wait`), GARM's controller id: the first suspect
    /// for a held session, and the ensure runs again, writing, once our session opens.
    awaiting: Option<String>,
}

impl SessionAttempt {
    /// A first attempt after an ensure; `awaiting` as [`Ensured::Ready`] said
    /// (`crate::ensure::Ensured::Ready`).
    pub(crate) fn after_ensure(awaiting: Option<String>) -> Self {
        Self {
            awaiting,
            ..Self::default()
        }
    }

    /// An attempt after a session was lost while listening: our recorded one is gone already.
    fn after_loss() -> Self {
        Self {
            stale_handled: true,
            ..Self::default()
        }
    }
}

/// Stores `sample` in the next batch of samples (`window` long), or alone when that batch
/// failed as a whole; a failure costs a point on a chart, not the listener: it is logged.
async fn write_sample(
    samples: Arc<Samples>,
    store: Arc<dyn Store>,
    lease: Lease,
    sample: Sample,
    window: Duration,
) {
    let batch_store = store.clone();
    let batched = samples
        .join((lease.clone(), sample), window, move |batch| async move {
            match batch_store.record_samples(&batch).await {
                Ok(answers) if answers.len() == batch.len() => Some(answers),
                Ok(_) => None,
                Err(e) => {
                    tracing::warn!(error = %chain(&e), samples = batch.len(), "recording samples together failed; each is recorded alone");
                    None
                }
            }
        })
        .await;
    let answer = match batched {
        Some(answer) => answer,
        None => store.record_sample(&lease, &sample).await,
    };
    if let Err(e) = answer {
        tracing::warn!(error = %chain(&e), "could not record the status page's sample");
    }
}

/// Runs `step` unless `cancel` fires first: `None` then, the step dropped where it was.
async fn unless_cancelled<T>(
    cancel: &CancellationToken,
    step: impl std::future::Future<Output = Result<T, Error>>,
) -> Result<Option<T>, Error> {
    tokio::select! {
        biased;
        () = cancel.cancelled() => Ok(None),
        done = step => done.map(Some),
    }
}

/// The facts of the recovery running beside the listener, when they land (never, when none
/// runs).
async fn landing(recovery: &mut Option<Recovering<'_>>) -> Landed {
    match recovery {
        Some(running) => running.await,
        None => std::future::pending().await,
    }
}

/// The status page's runner counts of a list of rows.
#[derive(Debug, Clone, Copy)]
struct Counts {
    idle: u32,
    busy: u32,
    starting: u32,
}

impl Counts {
    fn of(instances: &[Instance]) -> Self {
        let count = |wanted: &[InstanceStatus]| {
            u32::try_from(
                instances
                    .iter()
                    .filter(|i| wanted.contains(&i.status))
                    .count(),
            )
            .unwrap_or(u32::MAX)
        };
        Self {
            idle: count(&[InstanceStatus::Running]),
            busy: count(&[InstanceStatus::Busy]),
            starting: count(&[InstanceStatus::Pending, InstanceStatus::Creating]),
        }
    }
}

/// A queue token expiring within this margin is refreshed before the next poll.
const QUEUE_TOKEN_MARGIN: Duration = Duration::from_secs(60);

/// How many poll failures in a row are absorbed before the task backs off as a whole.
const MAX_POLL_FAILURES: u32 = 8;

/// How many deliveries of a message whose body does not decode are tried before it is
/// acknowledged and skipped (with a `message_undecodable` event).
const MAX_UNDECODABLE_TRIES: u32 = 3;

/// One scale set's listener.
pub(crate) struct Listener<'a> {
    pub(crate) shared: &'a Shared,
    pub(crate) client: &'a Client,
    pub(crate) lease: Lease,
    pub(crate) runners: Runners<'a>,
    pub(crate) github_id: GithubScaleSetId,
    pub(crate) last_message_id: MessageId,
    pub(crate) statistics: Option<Statistics>,
    /// The start permit, given back once the session is open (the recovery runs beside the
    /// polls, holding none).
    pub(crate) starting: Option<tokio::sync::SemaphorePermit<'a>>,
    /// The jobs-waiting figure last written to the store for the status page (written again
    /// only when it changes).
    pub(crate) jobs_waiting_shown: Option<u32>,
    /// When the status page's next sample is due, and the start latency it carries.
    pub(crate) sampler: crate::sampler::Sampler,
    /// The session attempt this listener resumes (default: a new one).
    pub(crate) attempt: SessionAttempt,
    /// Until when this worker can prove it holds the lease, on its own clock: the lease TTL
    /// from before the last renewal (or the acquisition) was asked for. A renewal that has not
    /// answered by then fences the listener ([`Listener::renew_lease`]).
    pub(crate) lease_deadline: tokio::time::Instant,
}

enum Opened {
    Session(Box<Session>),
    /// Try again after this long (the attempt's facts are in `Listener::attempt`).
    Wait(Duration),
    Reensure,
}

impl Listener<'_> {
    fn name(&self) -> &str {
        self.runners.name()
    }

    fn github_error(&self, during: &'static str) -> impl FnOnce(scaleset_github::Error) -> Error {
        self.runners.github_error(during)
    }

    /// Serves until cancelled, until GitHub loses the scale set, or until a session cannot be
    /// opened now (held by another listener, or a create failed in transit). `handed` is a session the ensure opened for us.
    pub(crate) async fn run(
        &mut self,
        handed: Option<Box<Session>>,
        cancel: &CancellationToken,
    ) -> Result<ListenEnd, Error> {
        let mut session = match handed {
            Some(session) => {
                self.store_session(Some(&session.session_id)).await?;
                *session
            }
            None => match Box::pin(self.open_session()).await? {
                Opened::Session(session) => *session,
                Opened::Wait(after) => return Ok(self.wait(after)),
                Opened::Reensure => return Ok(ListenEnd::Reensure),
            },
        };
        self.statistics = session.statistics.or(self.statistics);
        let end = self.serve(&mut session, cancel).await;
        match end {
            Ok(ListenEnd::Cancelled) => Box::pin(self.close(&session)).await,
            // Not a stop: the creates in flight are finished before the task waits, so a
            // lost session does not abandon a burst half-created.
            Ok(ListenEnd::Reensure | ListenEnd::Wait { .. }) => {
                if unless_cancelled(cancel, Box::pin(self.runners.finish_in_flight()))
                    .await?
                    .is_none()
                {
                    return Ok(ListenEnd::Cancelled);
                }
            }
            Err(_) => {}
        }
        end
    }

    /// Ends the listener to wait `after`, handing the attempt's facts to the task.
    fn wait(&mut self, after: Duration) -> ListenEnd {
        ListenEnd::Wait {
            after,
            attempt: std::mem::take(&mut self.attempt),
        }
    }

    async fn serve(
        &mut self,
        session: &mut Session,
        cancel: &CancellationToken,
    ) -> Result<ListenEnd, Error> {
        // Listen before listing (issue 35): the session is open, so the next scale set may
        // begin, and the recovery of this one's instances (the provider's list, GitHub's
        // runners) runs beside the polls; its facts are merged when they land
        // (`scaler/recovery.rs`). Jobs arriving meanwhile are served.
        self.starting = None;
        let registered = self.statistics.map_or(0, |s| s.total_registered_runners);
        let mut recovery = Some(self.runners.recovery(registered, cancel));
        let started = unless_cancelled(cancel, async {
            Box::pin(self.scale()).await?;
            Box::pin(self.record_progress(None, None)).await
        })
        .await?;
        if started.is_none() {
            return Ok(ListenEnd::Cancelled);
        }
        let capacity = self.runners.scale_set.spec.max_runners();
        let renew_every = self.shared.settings.lease_ttl / 3;
        // One deadline across polls: polls that end sooner than `renew_every` (messages
        // arriving often, a short long-poll hold) must not keep postponing the renewal, or the
        // lease would expire under a busy listener and another worker could take it.
        let mut renew_at = tokio::time::Instant::now();
        let mut failures = 0u32;
        // The message that did not decode, and how many deliveries of it in a row.
        let mut undecodable: Option<(MessageId, u32)> = None;
        // Deliveries in a row of messages already handled (GitHub re-delivering).
        let mut redeliveries = 0u32;
        loop {
            if tokio::time::Instant::now() >= renew_at {
                Box::pin(self.renew_lease()).await?;
                renew_at = tokio::time::Instant::now() + renew_every;
            }
            if unless_cancelled(cancel, async {
                Box::pin(self.refresh_if_expiring(session)).await;
                Ok(())
            })
            .await?
            .is_none()
            {
                return Ok(ListenEnd::Cancelled);
            }
            let poll = {
                let client = self.client;
                let last = self.last_message_id;
                let poll = client.get_message(session, last, capacity);
                tokio::pin!(poll);
                // An operator's "retry now" (`shared::Retries`) scales while the poll waits.
                let wake = self.shared.retries.wake_of(self.runners.scale_set.id);
                // The poll is raced with the wait (`crate::wait`) for the next renewal, which also
                // ends it on a stop.
                loop {
                    tokio::select! {
                        result = &mut poll => break result,
                        landed = landing(&mut recovery) => {
                            recovery = None;
                            let merged = unless_cancelled(cancel, async {
                                Box::pin(self.runners.land(landed)).await?;
                                // The warm pool waited for the recovery.
                                Box::pin(self.scale()).await.map(drop)
                            })
                            .await?;
                            if merged.is_none() {
                                return Ok(ListenEnd::Cancelled);
                            }
                        }
                        waited = wait_until(cancel, renew_at) => match waited {
                            Waited::Cancelled => return Ok(ListenEnd::Cancelled),
                            Waited::Elapsed => {
                                Box::pin(self.renew_lease()).await?;
                                renew_at = tokio::time::Instant::now() + renew_every;
                            }
                        },
                        // A create that landed is recorded while the poll waits (disabled
                        // while none is in flight).
                        Some(created) = self.runners.next_created() => {
                            Box::pin(self.runners.finish_landed_with(created)).await?;
                        }
                        () = wake.notified() => {
                            let scaled = unless_cancelled(cancel, async {
                                Box::pin(self.scale()).await.map(drop)
                            })
                            .await?;
                            if scaled.is_none() {
                                return Ok(ListenEnd::Cancelled);
                            }
                        }
                    }
                }
            };
            // Everything after the poll is boxed: an idle listener's task then holds only the
            // waiting poll, not the larger futures of handling a message (docs/benchmarks.md).
            match poll {
                Ok(None) => {
                    failures = 0;
                    redeliveries = 0;
                    if unless_cancelled(cancel, Box::pin(self.idle()))
                        .await?
                        .is_none()
                    {
                        return Ok(ListenEnd::Cancelled);
                    }
                }
                Ok(Some(message)) if message.undecodable.is_some() => {
                    failures = 0;
                    let tries = match undecodable {
                        Some((id, tries)) if id == message.message_id => tries + 1,
                        _ => 1,
                    };
                    undecodable = Some((message.message_id, tries));
                    let skip = Box::pin(self.on_undecodable(session, &message, tries));
                    match unless_cancelled(cancel, skip).await? {
                        None => return Ok(ListenEnd::Cancelled),
                        Some(true) => undecodable = None,
                        Some(false) => {
                            let cancelled = Box::pin(self.back_off_polling(
                                cancel,
                                tries,
                                &mut renew_at,
                                renew_every,
                            ))
                            .await?;
                            if cancelled {
                                return Ok(ListenEnd::Cancelled);
                            }
                        }
                    }
                }
                Ok(Some(message))
                    if self.last_message_id.0 > 0 && message.message_id <= self.last_message_id =>
                {
                    // Handled before (the cursor is past it): GitHub lost our acknowledgement.
                    // Acknowledged again, not handled again, and the next poll backs off while
                    // GitHub keeps re-delivering.
                    failures = 0;
                    undecodable = None;
                    redeliveries += 1;
                    self.shared.metrics.redelivered_messages.inc();
                    tracing::warn!(
                        message_id = message.message_id.0,
                        last_message_id = self.last_message_id.0,
                        redeliveries,
                        "GitHub delivered a message already handled; acknowledging it again"
                    );
                    // Boxed like every rare step: inline, this request's future made every
                    // idle listener's task larger (task::tests::an_idle_listeners_task_stays_small).
                    let ack =
                        Box::pin(self.client.delete_message(session, message.message_id)).await;
                    if let Err(e) = ack {
                        tracing::warn!(message_id = message.message_id.0, error = %chain(&e), "message ack failed");
                    }
                    let cancelled = Box::pin(self.back_off_polling(
                        cancel,
                        redeliveries,
                        &mut renew_at,
                        renew_every,
                    ))
                    .await?;
                    if cancelled {
                        return Ok(ListenEnd::Cancelled);
                    }
                }
                Ok(Some(message)) => {
                    failures = 0;
                    undecodable = None;
                    redeliveries = 0;
                    if unless_cancelled(cancel, Box::pin(self.on_message(session, &message)))
                        .await?
                        .is_none()
                    {
                        return Ok(ListenEnd::Cancelled);
                    }
                }
                Err(e) if e.is_scale_set_not_found() => {
                    let reason = "GitHub no longer has the scale set (deleted out of band or \
                                  for dormancy); ensuring it again with the cursor reset";
                    tracing::warn!("{reason}");
                    Box::pin(record(
                        self.shared,
                        &self.lease,
                        ReasonCode::Dormant,
                        reason,
                        |s| {
                            s.state = ScaleSetState::Dormant;
                        },
                    ))
                    .await?;
                    return Ok(ListenEnd::Reensure);
                }
                // Any sign the session is gone will do: a new one is opened next either way.
                Err(e) if e.session_gone(&session.session_id).is_some() => {
                    tracing::info!(error = %chain(&e), "session lost; creating a new one, keeping the cursor");
                    self.attempt = SessionAttempt::after_loss();
                    match Box::pin(self.open_session()).await? {
                        Opened::Session(new) => {
                            self.statistics = new.statistics.or(self.statistics);
                            *session = *new;
                        }
                        Opened::Wait(after) => return Ok(self.wait(after)),
                        Opened::Reensure => return Ok(ListenEnd::Reensure),
                    }
                }
                Err(e) => {
                    failures += 1;
                    if matches!(
                        e,
                        scaleset_github::Error::Decode { .. }
                            | scaleset_github::Error::UnexpectedResponse { .. }
                    ) {
                        self.shared.metrics.undecodable_messages.inc();
                        tracing::warn!(last_message_id = self.last_message_id.0, error = %chain(&e), "a message could not be decoded; it is not acknowledged, polling again");
                    } else {
                        tracing::warn!(error = %chain(&e), failures, "polling failed");
                    }
                    if failures > MAX_POLL_FAILURES {
                        return Err(self.github_error("polling for messages")(e));
                    }
                    let cancelled = Box::pin(self.back_off_polling(
                        cancel,
                        failures,
                        &mut renew_at,
                        renew_every,
                    ))
                    .await?;
                    if cancelled {
                        return Ok(ListenEnd::Cancelled);
                    }
                }
            }
        }
    }

    /// Waits out the back-off after `failures` failed polls in a row, keeping the session and
    /// renewing the lease (the listener's poll loop is the task's wait while it listens).
    /// `true` when cancelled.
    async fn back_off_polling(
        &mut self,
        cancel: &CancellationToken,
        failures: u32,
        renew_at: &mut tokio::time::Instant,
        renew_every: Duration,
    ) -> Result<bool, Error> {
        let backoff =
            scaleset_github::jittered(self.shared.settings.backoff(failures), fastrand::f64());
        let until = tokio::time::Instant::now() + backoff;
        loop {
            if wait_until(cancel, until.min(*renew_at)).await == Waited::Cancelled {
                return Ok(true);
            }
            let now = tokio::time::Instant::now();
            if now >= *renew_at {
                Box::pin(self.renew_lease()).await?;
                *renew_at = tokio::time::Instant::now() + renew_every;
            }
            if now >= until {
                return Ok(false);
            }
        }
    }

    /// A message whose envelope decoded but whose body did not, delivered for the `tries`-th
    /// time in a row. Before [`MAX_UNDECODABLE_TRIES`] it is left unacknowledged (a body cut
    /// short in transit decodes next time; the caller backs off); at the last try it is
    /// acknowledged with a `message_undecodable` event quoting its type and the decode error,
    /// and handled as a message whose jobs all failed to decode (GitHub's acquirable jobs are
    /// read instead), so the scale set goes on. `true` when it was acknowledged.
    async fn on_undecodable(
        &mut self,
        session: &mut Session,
        message: &Message,
        tries: u32,
    ) -> Result<bool, Error> {
        let error = message.undecodable.as_deref().unwrap_or_default();
        if tries < MAX_UNDECODABLE_TRIES {
            tracing::warn!(
                message_id = message.message_id.0,
                message_type = %message.message_type,
                tries,
                error,
                "a message could not be decoded; it is not acknowledged yet, polling again"
            );
            return Ok(false);
        }
        let reason = format!(
            "message {} of type {:?} could not be decoded in {tries} deliveries ({error}); \
             acknowledged and skipped so the scale set goes on: the jobs it carried are read \
             from GitHub's acquirable jobs, and the next message's statistics correct the counts",
            message.message_id, message.message_type
        );
        tracing::warn!(message_id = message.message_id.0, "{reason}");
        self.shared
            .store
            .append_event(
                self.runners.scale_set.id,
                ReasonCode::MessageUndecodable,
                &reason,
            )
            .await
            .map_err(store("appending an event"))?;
        let mut skipped = message.clone();
        skipped.undecodable = None;
        skipped.skipped_job_messages = skipped.skipped_job_messages.max(1);
        Box::pin(self.on_message(session, &skipped)).await?;
        Ok(true)
    }

    /// Extends the lease (fenced: a lease taken over fails with `LeaseLost`, which stops the
    /// task).
    ///
    /// Renewals of all listeners are joined: one store commit renews every lease due within
    /// a short window (a thirtieth of the TTL, at most 1 s; each lease still fenced by its
    /// own token). A batch that fails as a whole is retried as this lease alone.
    ///
    /// **The fence.** A renewal that fails, or has not answered by the lease's deadline on this
    /// worker's clock (a partition from the database: the connection hangs), ends the
    /// listener: it stops creating runners and acknowledging messages at once (both come after
    /// fenced writes this worker can no longer make), abandons its session (another worker's
    /// ensure deletes it and opens its own) and marks the lease in doubt (`/readyz` says so,
    /// and `scaleset_leases_in_doubt`) until a renewal or a new acquisition settles it. Whoever
    /// took the lease over may begin at the lease's expiry in the database, which is no
    /// earlier than this deadline.
    async fn renew_lease(&mut self) -> Result<(), Error> {
        let asked = tokio::time::Instant::now();
        let renewal = Box::pin(self.renewal());
        let Ok(renewed) = tokio::time::timeout_at(self.lease_deadline, renewal).await else {
            let name = self.name().to_owned();
            self.shared
                .metrics
                .lease_in_doubt(self.runners.scale_set.id, &name);
            tracing::warn!(
                scale_set = %name,
                lease_ttl = ?self.shared.settings.lease_ttl,
                "fenced: the lease could not be renewed within its TTL (the database does not answer); this worker stops creating runners and acknowledging messages on the scale set and abandons its session, and another worker takes it over"
            );
            return Err(Error::LeaseLost { scale_set: name });
        };
        match renewed {
            Ok(lease) => {
                self.lease = lease;
                self.lease_deadline = asked + self.shared.settings.lease_ttl;
                self.shared.metrics.lease_settled(self.runners.scale_set.id);
                Ok(())
            }
            Err(e) => {
                if !e.is_lease_lost() {
                    self.shared
                        .metrics
                        .lease_in_doubt(self.runners.scale_set.id, self.name());
                    tracing::warn!(
                        scale_set = %self.name(),
                        error = %chain(&e),
                        "fenced: renewing the lease failed; this worker stops creating runners and acknowledging messages on the scale set until it holds the lease again"
                    );
                }
                Err(store("renewing the lease")(e))
            }
        }
    }

    /// One renewal of the lease, joined with the other listeners' (see [`Self::renew_lease`]).
    async fn renewal(&self) -> Result<Lease, scaleset_store::Error> {
        let ttl = self.shared.settings.lease_ttl;
        let window = (ttl / 30).min(Duration::from_secs(1));
        let batch_store = self.shared.store.clone();
        let batched = self
            .shared
            .renewals
            .join(self.lease.clone(), window, move |leases| async move {
                match batch_store.renew_leases(&leases, ttl).await {
                    Ok(renewed) if renewed.len() == leases.len() => Some(renewed),
                    Ok(_) => None,
                    Err(e) => {
                        tracing::warn!(error = %chain(&e), leases = leases.len(), "renewing leases together failed; each is renewed alone");
                        None
                    }
                }
            })
            .await;
        match batched {
            Some(renewed) => renewed,
            None => self.shared.store.renew_lease(&self.lease, ttl).await,
        }
    }

    /// After an empty poll: scale, remove runners past their bootstrap deadline and retire
    /// runners for their life; or, when the idle planner allows (nothing changed and nothing
    /// came due since a pass that changed nothing, `planner::idle`), stand on that pass's list
    /// and skip the store's list and the rules (issue 35 item 3: 200 empty polls a second at
    /// 10,000 idle scale sets each listed the rows).
    async fn idle(&mut self) -> Result<(), Error> {
        let now = self.shared.clock.now();
        let assigned = self.assigned_jobs();
        if self.runners.may_stand(now, assigned) {
            self.shared.metrics.instance_lists_reused.inc();
            let counts = self.kept_counts();
            return self.record_progress(None, counts).await;
        }
        // A pass that fails half way keeps no list.
        self.runners.idle_list = None;
        let writes = self.runners.writes();
        self.runners.finish_landed().await?;
        let requested = self.scale().await?;
        let rows = self.runners.check_deadlines().await?;
        self.runners
            .keep_list(rows, now, writes, assigned, requested);
        let counts = self.kept_counts();
        self.record_progress(None, counts).await
    }

    /// The status page's counts of the list an empty poll stands on, if any.
    fn kept_counts(&self) -> Option<Counts> {
        self.runners
            .idle_list
            .as_ref()
            .map(|kept| Counts::of(&kept.rows))
    }

    /// Handles a message, persists the cursor (fenced), then acks it.
    async fn on_message(&mut self, session: &mut Session, message: &Message) -> Result<(), Error> {
        self.shared
            .checkpoints
            .reached(Checkpoint::MessageReceived, self.name())
            .await;
        self.handle(session, message).await?;
        self.record_progress(Some(i64::from(message.message_id)), None)
            .await?;
        self.last_message_id = message.message_id;
        self.shared
            .checkpoints
            .reached(Checkpoint::CursorPersisted, self.name())
            .await;
        let ack = self
            .client
            .delete_message(session, message.message_id)
            .await;
        if let Err(e) = ack {
            // Handling is idempotent and the cursor moved on: an unacked message is skipped
            // by the next poll.
            tracing::warn!(message_id = message.message_id.0, error = %chain(&e), "message ack failed");
        }
        Ok(())
    }

    /// Refreshes the session when its queue token expires soon (read from the token's `exp`),
    /// so polls do not run into a 401; a failure is only logged, the client still refreshes
    /// once on a 401.
    async fn refresh_if_expiring(&self, session: &mut Session) {
        let Some(expiry) = unverified_expiry(session.message_queue_access_token.expose_secret())
        else {
            return;
        };
        if expiry
            .duration_since(SystemTime::now())
            .is_ok_and(|left| left > QUEUE_TOKEN_MARGIN)
        {
            return;
        }
        let result = self.client.refresh_session(session).await;
        match result {
            Ok(refreshed) => *session = refreshed,
            Err(e) => {
                tracing::warn!(error = %chain(&e), "refreshing the session before its queue token expires failed")
            }
        }
    }

    /// Handles one batch; idempotent, so a redelivered message changes nothing twice.
    async fn handle(&mut self, session: &mut Session, message: &Message) -> Result<(), Error> {
        self.runners.finish_landed().await?;
        let mut available = Vec::new();
        let now = SystemTime::now();
        // The queue times of jobs that came in this message, oldest first: the runners the
        // scaler asks for below are theirs.
        let mut queued: Vec<SystemTime> = Vec::new();
        let metrics = std::sync::Arc::clone(&self.shared.metrics);
        let id = self.runners.scale_set.id;
        let since = |from: Option<scaleset_github::Timestamp>, to: SystemTime| {
            from.and_then(|t| t.to_system_time())
                .and_then(|t| to.duration_since(t).ok())
                .map(|d| d.as_secs_f64())
        };
        for job in &message.jobs {
            if matches!(
                job,
                JobMessage::Available { .. } | JobMessage::Assigned { .. }
            ) && let Some(at) = job.job().queue_time.and_then(|t| t.to_system_time())
            {
                queued.push(at);
            }
            let kind = match job {
                JobMessage::Available { job, .. } => {
                    available.push(job.runner_request_id);
                    "available"
                }
                JobMessage::Assigned { .. } => "assigned",
                JobMessage::Started {
                    job, runner_name, ..
                } => {
                    let online_at = job
                        .runner_assign_time
                        .and_then(|t| t.to_system_time())
                        .unwrap_or(now);
                    self.runners.started(runner_name, online_at).await?;
                    // For the status page only: a failure to record it costs the job's
                    // names there, not the message.
                    if let Err(e) = self
                        .shared
                        .store
                        .record_job(
                            &self.lease,
                            runner_name,
                            scaleset_store::JobShown::new(
                                &job.owner_name,
                                &job.repository_name,
                                &job.job_workflow_ref,
                            ),
                        )
                        .await
                    {
                        tracing::warn!(error = %chain(&e), runner = %runner_name, "could not record the job a runner runs");
                    }
                    let assigned = job.scale_set_assign_time.or(job.queue_time);
                    if let Some(seconds) = since(assigned, now) {
                        metrics.observe_timing(&metrics.job_assigned_to_started, id, seconds);
                    }
                    let queued = job.queue_time.and_then(|t| t.to_system_time());
                    if let Some(latency) = queued.and_then(|t| now.duration_since(t).ok()) {
                        self.sampler.started(latency);
                    }
                    "started"
                }
                JobMessage::Completed {
                    job, runner_name, ..
                } => {
                    if !runner_name.is_empty() {
                        self.runners.completed(runner_name).await?;
                        let finished = job
                            .finish_time
                            .and_then(|t| t.to_system_time())
                            .unwrap_or(now);
                        if let Some(seconds) = since(job.runner_assign_time, finished) {
                            metrics.observe_timing(&metrics.job_started_to_completed, id, seconds);
                        }
                    }
                    "completed"
                }
                _ => "other",
            };
            self.shared
                .metrics
                .jobs_seen
                .get_or_create(&KindLabel {
                    kind: kind.to_owned(),
                })
                .inc();
            let since = job
                .job()
                .scale_set_assign_time
                .or(job.job().queue_time)
                .and_then(|t| t.to_system_time());
            if let Some(lag) = since.and_then(|t| now.duration_since(t).ok()) {
                self.shared.metrics.message_lag.observe(lag.as_secs_f64());
            }
        }
        if message.skipped_job_messages > 0 {
            self.shared.metrics.undecodable_messages.inc();
            tracing::warn!(
                message_id = message.message_id.0,
                skipped = message.skipped_job_messages,
                "job messages that did not decode were skipped; acquirable jobs are read instead"
            );
            let result = self.client.get_acquirable_jobs(self.github_id).await;
            match result {
                Ok(jobs) => available.extend(jobs.iter().map(|j| j.runner_request_id)),
                Err(e) if e.status() == Some(404) => {}
                Err(e) => return Err(self.github_error("reading acquirable jobs")(e)),
            }
        }
        available.retain(|id| id.0 > 0);
        available.sort_unstable();
        available.dedup();
        if !available.is_empty() {
            let result = self.client.acquire_jobs(session, &available).await;
            let acquired = result.map_err(self.github_error("acquiring jobs"))?;
            self.shared
                .metrics
                .jobs_acquired
                .inc_by(u64::try_from(acquired.len()).unwrap_or(0));
            tracing::info!(
                offered = available.len(),
                acquired = acquired.len(),
                "jobs acquired"
            );
        }
        if message.statistics.is_some() {
            self.statistics = message.statistics;
        }
        let requested = self.scale().await?;
        queued.sort_unstable();
        let requested_at = SystemTime::now();
        for at in queued
            .iter()
            .take(usize::try_from(requested).unwrap_or(usize::MAX))
        {
            if let Ok(wait) = requested_at.duration_since(*at) {
                metrics.observe_timing(
                    &metrics.job_queued_to_runner_requested,
                    id,
                    wait.as_secs_f64(),
                );
            }
        }
        self.runners.check_deadlines().await.map(drop)
    }

    async fn scale(&mut self) -> Result<u32, Error> {
        let assigned = self.assigned_jobs();
        self.runners.scale(assigned).await
    }

    /// `totalAssignedJobs` of the last statistics (none yet: 0).
    fn assigned_jobs(&self) -> i64 {
        self.statistics.map_or(0, |s| s.total_assigned_jobs)
    }

    /// The jobs waiting for a runner, as the last statistics say.
    fn jobs_waiting(&self) -> Option<u32> {
        let stats = self.statistics?;
        let waiting = stats.total_available_jobs.max(0)
            + stats.total_acquired_jobs.max(0)
            + (stats.total_assigned_jobs - stats.total_running_jobs).max(0);
        Some(u32::try_from(waiting).unwrap_or(u32::MAX))
    }

    /// Records, in one fenced commit, the message cursor (after a handled message) with the
    /// desired count and jobs waiting when they changed; nothing when none of them is new.
    /// Merged because they always move together with a job: three commits per message were
    /// most of a job's wait for its instance (`docs/benchmarks.md`, job to instance).
    /// `counts`: the runner counts of a list known to be true, for the status page's sample
    /// (none: the sample lists the rows).
    async fn record_progress(
        &mut self,
        cursor: Option<i64>,
        counts: Option<Counts>,
    ) -> Result<(), Error> {
        let changed = |now: Option<u32>, written: Option<u32>| now.filter(|_| now != written);
        let progress = Progress {
            last_message_id: cursor,
            desired_runners: changed(self.runners.desired, self.runners.desired_written),
            jobs_waiting: changed(self.jobs_waiting(), self.jobs_waiting_shown),
        };
        let during = if cursor.is_some() {
            "persisting the message cursor"
        } else {
            "recording the desired runner count"
        };
        self.shared
            .store
            .record_progress(&self.lease, progress)
            .await
            .map_err(store(during))?;
        self.runners.desired_written = self.runners.desired.or(self.runners.desired_written);
        self.jobs_waiting_shown = self.jobs_waiting().or(self.jobs_waiting_shown);
        self.sample(counts).await;
        Ok(())
    }

    /// Writes the status page's sample of this scale set when its figures are due to be
    /// considered (once a minute) and say something the last sample did not
    /// ([`crate::sampler::Sampler::consider`]). A failed write costs a point on a chart, not
    /// the listener: it is logged, not returned. The runner counts come from `counts` when
    /// given (a list known to be true), else from a list of the rows.
    async fn sample(&mut self, counts: Option<Counts>) {
        let now = tokio::time::Instant::now();
        if !self.sampler.due(now, self.shared.settings.sample_interval) {
            return;
        }
        let store = &self.shared.store;
        let counts = match counts {
            Some(counts) => counts,
            None => match store.list_instances(self.lease.scale_set_id()).await {
                Ok(instances) => Counts::of(&instances),
                Err(e) => {
                    tracing::warn!(error = %chain(&e), "could not list instances for the status page's sample");
                    return;
                }
            },
        };
        let figures = crate::sampler::Figures {
            jobs_waiting: self.jobs_waiting().unwrap_or(0),
            idle: counts.idle,
            busy: counts.busy,
            starting: counts.starting,
        };
        let Some(start_latency) = self.sampler.consider(now, figures) else {
            return;
        };
        let sample = Sample {
            at: self.shared.clock.now(),
            jobs_waiting: figures.jobs_waiting,
            idle: figures.idle,
            busy: figures.busy,
            starting: figures.starting,
            start_latency,
        };
        // Written beside the listener, not awaited: a chart's point must not hold up the next
        // poll, and the samples of every listener due within a short window share one commit
        // (issue 35: at 10,000 scale sets, 167 samples a second were 167 commits).
        let interval = self.shared.settings.sample_interval;
        let write = write_sample(
            self.shared.samples.clone(),
            store.clone(),
            self.lease.clone(),
            sample,
            (interval / 30).min(Duration::from_secs(1)),
        );
        tokio::spawn(tracing::Instrument::in_current_span(write));
    }

    async fn store_session(&self, session_id: Option<&str>) -> Result<(), Error> {
        self.shared
            .store
            .set_message_session(&self.lease, session_id)
            .await
            .map_err(store("recording the session id"))
    }

    /// One try at opening our session: deletes our recorded session first (once per attempt),
    /// then creates ours. A conflict is shown as `foreign_session` with what the planner makes
    /// of it; it, and a create that failed in transit, end in [`Opened::Wait`].
    async fn open_session(&mut self) -> Result<Opened, Error> {
        let id = self.runners.scale_set.id;
        if !self.attempt.stale_handled {
            let stored = self
                .shared
                .store
                .get_scale_set(id)
                .await
                .map_err(store("reading the stored session"))?
                .session_id;
            if let Some(stale) = stored {
                let command = session::Command::Delete {
                    scale_set: self.github_id,
                    session: &stale,
                };
                let result = session::execute(self.client, command).await;
                match after_stale_delete(session::answer(&result, &stale)) {
                    AfterStaleDelete::Forget => {}
                    AfterStaleDelete::Reensure => return Ok(Opened::Reensure),
                    AfterStaleDelete::Fail => {
                        if let Err(e) = result {
                            return Err(self.github_error("deleting our stale session")(e));
                        }
                    }
                }
                self.store_session(None).await?;
                self.shared
                    .store
                    .append_event(
                        id,
                        ReasonCode::StaleSessionDeleted,
                        &format!("deleted our stale session {stale}"),
                    )
                    .await
                    .map_err(store("appending an event"))?;
                self.attempt.recorded_deleted = true;
            }
            self.attempt.stale_handled = true;
        }
        let owner = self.shared.identity.session_owner();
        let result = self.client.create_session(self.github_id, &owner).await;
        match result {
            Ok(session) => {
                self.store_session(Some(&session.session_id)).await?;
                let scale_set = self
                    .shared
                    .store
                    .get_scale_set(id)
                    .await
                    .map_err(store("reading the scale set"))?;
                if scale_set.state != ScaleSetState::Ready {
                    record(
                        self.shared,
                        &self.lease,
                        ReasonCode::SessionOpened,
                        "ready: listening for jobs",
                        |s| {
                            s.state = ScaleSetState::Ready;
                        },
                    )
                    .await?;
                }
                let awaiting = self.attempt.awaiting.take();
                self.attempt = SessionAttempt::default();
                tracing::info!(session_id = %session.session_id, "session opened");
                if awaiting.is_some() {
                    // The imported set's session is ours now: what its ensure held back (our
                    // owner label, a patch to the configuration) is written.
                    let ensured = Box::pin(ensure(
                        self.shared,
                        self.client,
                        &self.lease,
                        id,
                        0,
                        None,
                        ImportedWrites::Allowed,
                    ))
                    .await?;
                    let after = match ensured {
                        Ensured::Ready { github_id, .. } if github_id == self.github_id => {
                            return Ok(Opened::Session(Box::new(session)));
                        }
                        Ensured::Ready { .. } => None,
                        Ensured::Retry { after } | Ensured::Wait { after, .. } => Some(after),
                    };
                    // Not servable after all: our session is given back, and the writes wait
                    // for the next one.
                    self.close(&session).await;
                    return Ok(match after {
                        Some(after) => {
                            self.attempt.awaiting = awaiting;
                            Opened::Wait(after)
                        }
                        None => Opened::Reensure,
                    });
                }
                Ok(Opened::Session(Box::new(session)))
            }
            Err(e) if e.is_session_conflict() => {
                let holder = e.session_conflict_owner();
                let held = held_by(&Conflict {
                    holder: holder.as_deref(),
                    our_owner: &owner,
                    probe_owner: &self.shared.identity.probe_owner(),
                    recorded_deleted: self.attempt.recorded_deleted,
                    own_create_failed: self.attempt.failed_creates > 0,
                    imported_from: self.attempt.awaiting.as_deref(),
                });
                let settings = &self.shared.settings;
                let now = tokio::time::Instant::now();
                let since = *self.attempt.held_since.get_or_insert(now);
                let after = recheck_after(
                    &held,
                    now.saturating_duration_since(since),
                    Rechecks {
                        short: settings.held_session_recheck,
                        window: settings.held_session_window,
                        slow: settings.foreign_session_recheck,
                        takeover: settings.takeover_session_recheck,
                    },
                );
                let reason = held.reason(
                    settings.held_session_recheck,
                    settings.takeover_session_recheck,
                );
                let shown = self
                    .shared
                    .store
                    .get_scale_set(id)
                    .await
                    .map_err(store("reading the scale set"))?;
                // Recorded once: a recheck that finds the same holder adds no event.
                if shown.state != ScaleSetState::ForeignSession || shown.state_reason != reason {
                    tracing::warn!(%reason, holder = holder.as_deref().unwrap_or(""), "message session held");
                    record(
                        self.shared,
                        &self.lease,
                        ReasonCode::SessionHeld,
                        &reason,
                        |s| {
                            s.state = ScaleSetState::ForeignSession;
                        },
                    )
                    .await?;
                }
                Ok(Opened::Wait(after))
            }
            Err(e) if e.is_scale_set_not_found() || e.status() == Some(404) => Ok(Opened::Reensure),
            Err(e)
                if (e.class() == scaleset_github::ErrorClass::Retryable
                    || matches!(e, scaleset_github::Error::UnexpectedResponse { .. }))
                    && self.attempt.failed_creates < self.shared.settings.own_session_retries =>
            {
                // The create may have succeeded on GitHub: an unnamed 409 next is most likely
                // ours, and the planner says so.
                self.attempt.failed_creates += 1;
                tracing::warn!(error = %chain(&e), tries = self.attempt.failed_creates, "session create failed; retrying");
                Ok(Opened::Wait(
                    self.shared.settings.backoff(self.attempt.failed_creates),
                ))
            }
            Err(e) => Err(self.github_error("creating the message session")(e)),
        }
    }

    /// Deletes the session on clean shutdown.
    async fn close(&self, session: &Session) {
        let command = session::Command::Delete {
            scale_set: self.github_id,
            session: &session.session_id,
        };
        let result = session::execute(self.client, command).await;
        if forget_after_close(session::answer(&result, &session.session_id)) {
            if let Err(e) = self.store_session(None).await {
                tracing::warn!(error = %chain(&e), "could not clear the stored session id");
            }
            tracing::info!("session deleted on shutdown");
        } else if let Err(e) = result {
            tracing::warn!(error = %chain(&e), "could not delete the session on shutdown; the next start deletes it");
        }
    }
}
