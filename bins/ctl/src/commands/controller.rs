//! `scalesetctl controller`: the controller's identity.

use anyhow::Result;
use comfy_table::Cell;
use scaleset_api::v1::ControllerInfo;

use super::Ctx;
use crate::exit::Outcome;

/// `controller`.
pub(crate) async fn show(ctx: &Ctx<'_>) -> Result<Outcome> {
    let info: ControllerInfo = ctx.api.get(&["controller"]).await?;
    ctx.show(&info, || {
        ctx.out.details(vec![
            ("id", Cell::new(info.id)),
            ("version", Cell::new(&info.version)),
            ("owner label", Cell::new(&info.owner_label)),
            (
                "owner label on create",
                Cell::new(if info.owner_label_enabled {
                    "yes"
                } else {
                    "no"
                }),
            ),
            ("session owner", Cell::new(&info.session_owner)),
        ])
    });
    Ok(Outcome::Done)
}
