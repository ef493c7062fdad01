//! The scale sets and sessions that the memory benchmark examples (`client_memory`,
//! `longpoll_memory`) spread their held long-polls over; both include this file with `#[path]`.

use anyhow::Result;
use scaleset_github::{Client, NewRunnerScaleSet, RunnerGroupId, Session};

/// Creates `count` scale sets `mem-0`, `mem-1`… in runner group 1 through `client`, and a
/// session owned by `bench` on each; the sessions in that order.
pub(crate) async fn sessions(client: &Client, count: usize) -> Result<Vec<Session>> {
    let mut sessions = Vec::with_capacity(count);
    for i in 0..count {
        let set = client
            .create_scale_set(&NewRunnerScaleSet::new(
                format!("mem-{i}"),
                RunnerGroupId(1),
            ))
            .await?;
        sessions.push(client.create_session(set.id, "bench").await?);
    }
    Ok(sessions)
}
