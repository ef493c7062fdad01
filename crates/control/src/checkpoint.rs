//! Observable points of the control loop where a crash matters: each is reached right after a
//! durable step (intent recorded, JIT config generated, instance created, cursor persisted),
//! plus the arrival of a message, which the job-to-instance benchmark times from.
//! Tests stop the controller at one of them and start another on the same store.

use async_trait::async_trait;

/// A point just after a durable step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Checkpoint {
    /// The intent to create the scale set on GitHub was recorded; the POST comes next.
    ScaleSetCreateIntent,
    /// GitHub answered the create POST with the new scale set; the outcome is not recorded yet.
    ScaleSetCreated,
    /// A runner's intent (a pending instance row) was recorded; the JIT POST comes next.
    RunnerIntentRecorded,
    /// The runner's JIT config was generated and its GitHub id recorded; the provider create
    /// comes next.
    JitConfigGenerated,
    /// The provider created the instance and the store recorded it.
    InstanceCreated,
    /// A message's cursor was persisted; its ack comes next.
    CursorPersisted,
    /// A message arrived from the long-poll; nothing of it is handled yet (not a durable step:
    /// benchmarks time from here to the provider's create, see `docs/benchmarks.md`).
    MessageReceived,
}

/// Told about every [`Checkpoint`] reached, in the scale set's task. The default does nothing.
/// A test can record the point, or never return to freeze the task there before dropping the
/// controller (a crash at exactly that point).
#[async_trait]
pub trait Checkpoints: Send + Sync + std::fmt::Debug {
    /// Called when `point` is reached for the scale set named `scale_set`.
    async fn reached(&self, point: Checkpoint, scale_set: &str);
}

/// No observer.
#[derive(Debug, Default)]
pub(crate) struct NoCheckpoints;

#[async_trait]
impl Checkpoints for NoCheckpoints {
    async fn reached(&self, _point: Checkpoint, _scale_set: &str) {}
}
