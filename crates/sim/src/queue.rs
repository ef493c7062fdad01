//! The message queue: the long-poll GET (held up to the configured time, answered 202 when
//! nothing arrives) and the DELETE that acknowledges a message. Delivery is at least once and
//! scale-set scoped: an un-deleted message is delivered again, to any session.

use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::{Instant, sleep_until};

use crate::auth::queue_grant;
use crate::exception::ApiError;
use crate::fault::take_count;
use crate::protocol;
use crate::request::{Outcome, Reply, Request};
use crate::simulator::{Shared, lock};

/// `GET {messageQueueUrl}[?lastMessageId=M]` with `X-ScaleSetMaxCapacity`.
#[allow(
    clippy::disallowed_methods,
    reason = "the simulated long poll holds until its deadline, as GitHub's does"
)]
pub(crate) async fn get_message(shared: &Shared, req: &Request) -> Outcome {
    let (scale_set, session) = queue_grant(shared, req)?;
    if take_count(&mut lock(&shared.faults).empty_message_body) {
        return Ok(Reply::empty(200));
    }
    {
        let delivered = lock(&shared.last_delivered);
        if let Some(message) = delivered.get(&scale_set)
            && take_count(&mut lock(&shared.faults).redeliver_messages)
        {
            return Ok(Reply::json(200, message.clone()));
        }
    }
    let last = match req.query("lastMessageId") {
        None | Some("") => 0,
        Some(raw) => raw.parse::<i64>().map_err(|_| {
            ApiError::exception(
                400,
                "ArgumentException",
                format!("lastMessageId {raw:?} is not an integer."),
            )
        })?,
    };
    let capacity = req
        .headers
        .get("X-ScaleSetMaxCapacity")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let now = Instant::now();
    let deadline = now
        .checked_add(shared.config.long_poll_hold)
        .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 86_400));
    let _guard = PollGuard::new(shared, scale_set);
    let goaway = &req.connection.goaway;
    let mut held = false;
    loop {
        shared.tick();
        let notify = {
            let state = lock(&shared.state);
            match state.scale_sets.get(&scale_set) {
                Some(set) => set.notify.clone(),
                None => return Err(ApiError::Unauthorized),
            }
        };
        let notified = notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        {
            let mut state = lock(&shared.state);
            if !state.session_active(scale_set, &session) {
                return Err(ApiError::Unauthorized);
            }
            let now = shared.clock.now();
            state.touch_session(scale_set, now);
            if let Some(delivery) =
                state.poll(scale_set, last, capacity, shared.config.assignment, now)
            {
                let mut message = protocol::message(&delivery);
                if garbled(shared, delivery.id) {
                    message["body"] = serde_json::Value::String("[{\"messageType\":".to_owned());
                }
                lock(&shared.last_delivered).insert(scale_set, message.clone());
                return Ok(Reply::json(200, message));
            }
        }
        if !held {
            held = true;
            if take_count(&mut lock(&shared.faults).goaway) {
                tracing::debug!("goaway fault: closing the connection of a held poll");
                goaway.cancel();
            }
        }
        tokio::select! {
            () = &mut notified => {}
            () = goaway.cancelled() => return Ok(Reply::empty(202)),
            () = sleep_until(deadline) => {
                lock(&shared.state).touch_session(scale_set, shared.clock.now());
                return Ok(Reply::empty(202));
            }
            () = shared.shutdown.cancelled() => return Ok(Reply::empty(202)),
        }
    }
}

/// `DELETE {messageQueueUrl}/{M}`: acknowledges message `M`.
pub(crate) fn delete_message(shared: &Shared, req: &Request, message_id: i64) -> Outcome {
    let (scale_set, _) = queue_grant(shared, req)?;
    let now = shared.clock.now();
    let mut state = lock(&shared.state);
    state.touch_session(scale_set, now);
    state.ack(scale_set, message_id);
    lock(&shared.garbled_messages).remove(&message_id);
    Ok(Reply::empty(204))
}

/// Whether this delivery of message `id` is garbled: it was garbled before, or the
/// `undecodable_messages` fault is armed (which then takes it).
fn garbled(shared: &Shared, id: i64) -> bool {
    let mut garbled = lock(&shared.garbled_messages);
    if garbled.contains(&id) {
        return true;
    }
    if take_count(&mut lock(&shared.faults).undecodable_messages) {
        garbled.insert(id);
        return true;
    }
    false
}

/// Marks one more held poll, on the scale set `.1`, for the lifetime of the guard.
pub(crate) struct PollGuard<'a>(&'a Shared, i64);

impl<'a> PollGuard<'a> {
    pub(crate) fn new(shared: &'a Shared, scale_set: i64) -> Self {
        shared.waiting_polls.fetch_add(1, Ordering::SeqCst);
        *lock(&shared.held_polls).entry(scale_set).or_default() += 1;
        Self(shared, scale_set)
    }
}

impl Drop for PollGuard<'_> {
    fn drop(&mut self) {
        self.0.waiting_polls.fetch_sub(1, Ordering::SeqCst);
        let mut held = lock(&self.0.held_polls);
        if let std::collections::hash_map::Entry::Occupied(mut entry) = held.entry(self.1) {
            *entry.get_mut() -= 1;
            if *entry.get() == 0 {
                entry.remove();
            }
        }
    }
}
