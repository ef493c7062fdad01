//! Which worker serves each scale set on the status page: the holder of its lease, and a set
//! whose lease is in doubt (its worker cut off, paused or dead, or fenced on this process),
//! by the same rule the API's `served_by` answers with ([`AppState::served_by`]).

use maud::{Markup, html};

use super::view::Row;
use crate::state::AppState;
use crate::v1::{LeaseStatus, ServedBy};

/// Reads the lease of each row's scale set (the rows of one page: at most
/// [`super::view::PER_PAGE`] reads) and says who serves it.
pub(super) async fn serve_rows<'a>(
    state: &AppState,
    rows: impl IntoIterator<Item = &'a mut Row>,
) -> scaleset_store::Result<()> {
    for row in rows {
        let lease = state.store.get_lease(row.set.id).await?;
        row.served_by = state.served_by(row.set.id, row.set.spec.enabled(), lease.as_ref());
    }
    Ok(())
}

/// The worker serving a scale set, or that its lease is in doubt; `None` says so only where
/// `say_none` (the detail view: a row of the overview stays quiet about it).
pub(super) fn served_by_html(served: Option<&ServedBy>, say_none: bool) -> Markup {
    html! {
        @match served {
            Some(ServedBy { worker, lease: LeaseStatus::Held, .. }) => {
                span.served-by data-lease="held" { "served by " b { (worker) } }
            }
            Some(ServedBy { worker, lease: LeaseStatus::InDoubt, expires_at }) => {
                span.badge.s-attention.served-by data-lease="in_doubt" { "lease in doubt" }
                " "
                span.sub {
                    "worker " b { (worker) } " could not renew its lease (expiry " (expires_at)
                    "); another worker takes the scale set over once it runs out"
                }
            }
            None if say_none => span.sub.served-by data-lease="none" { "not served by any worker" },
            None => {}
        }
    }
}
