//! `scalesetctl events`: the event trails of every scale set (or one), oldest first, one line
//! each; `--follow` asks again every `--interval` for what was appended since the last one
//! printed (the API's `after` cursor) until Ctrl-C or a closed stdout.

use std::io::Write as _;
use std::time::{Duration, SystemTime};

use anyhow::{Context as _, Result, bail};
use http::Method;
use scaleset_api::v1::{EventList, FleetEvent};

use super::{Ctx, scale_set};
use crate::cli::EventsArgs;
use crate::exit::Outcome;
use crate::output::{Format, Output};

/// The most events the server gives in one answer (its own bound).
const PAGE: u32 = 1000;

/// `events`.
#[allow(
    clippy::disallowed_methods,
    reason = "`--follow` polls the server every interval"
)]
pub(crate) async fn run(ctx: &Ctx<'_>, args: EventsArgs) -> Result<Outcome> {
    let interval = scaleset_duration::parse(&args.interval)
        .map_err(anyhow::Error::msg)
        .with_context(|| format!("--interval {}", args.interval))?;
    if interval.is_zero() {
        bail!("--interval 0s would ask the server without pause: give at least 1s");
    }
    let since = args
        .since
        .as_deref()
        .map(|text| since(text, SystemTime::now()))
        .transpose()?;
    let scale_set = match &args.scale_set {
        Some(wanted) => Some(scale_set::resolve(ctx, wanted).await?.to_string()),
        None => None,
    };
    let mut query: Vec<(&str, String)> = vec![("limit", args.limit.to_string())];
    if let Some(id) = &scale_set {
        query.push(("scale_set_id", id.clone()));
    }
    if let Some(since) = &since {
        query.push(("since", since.clone()));
    }
    let first = fetch(ctx, &query).await?;
    if !args.follow {
        ctx.show(&first, || {
            if first.items.is_empty() {
                "no events\n".to_owned()
            } else {
                first.items.iter().map(line).collect()
            }
        });
        return Ok(Outcome::Done);
    }
    let mut last = first.items.last().map(|e| e.id);
    if !emit(ctx.out, &first.items) {
        return Ok(Outcome::Done);
    }
    let stop = tokio::signal::ctrl_c();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            _ = &mut stop => return Ok(Outcome::Done),
            () = tokio::time::sleep(interval) => {}
        }
        // Everything appended since the last one printed, page after page.
        loop {
            let mut next: Vec<(&str, String)> = vec![("limit", PAGE.to_string())];
            if let Some(id) = &scale_set {
                next.push(("scale_set_id", id.clone()));
            }
            match last {
                Some(id) => next.push(("after", id.to_string())),
                None => {
                    if let Some(since) = &since {
                        next.push(("since", since.clone()));
                    }
                }
            }
            let page = fetch(ctx, &next).await?;
            if let Some(newest) = page.items.last() {
                last = Some(newest.id);
            }
            if !emit(ctx.out, &page.items) {
                return Ok(Outcome::Done);
            }
            if page.items.len() < PAGE as usize {
                break;
            }
        }
    }
}

async fn fetch(ctx: &Ctx<'_>, query: &[(&str, String)]) -> Result<EventList> {
    let pairs: Vec<(&str, &str)> = query.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Ok(ctx
        .api
        .send(Method::GET, ctx.api.url(&["events"], &pairs), None::<&()>)
        .await?)
}

/// Prints events as `--follow` does (JSON: one object per line); false once stdout is closed
/// (`scalesetctl events --follow | head`), which ends the follow.
fn emit(out: &Output, events: &[FleetEvent]) -> bool {
    if events.is_empty() {
        return true;
    }
    let text: String = match out.format {
        Format::Json => events
            .iter()
            .map(|e| format!("{}\n", serde_json::to_string(e).unwrap_or_default()))
            .collect(),
        Format::Table => events.iter().map(line).collect(),
    };
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes()).is_ok() && stdout.flush().is_ok()
}

/// `2026-12-06 10:00:01  linux  ready  the reason (3 times, last 10:05:12)`.
fn line(e: &FleetEvent) -> String {
    let repeats = if e.count > 1 {
        format!(" ({} times, last {})", e.count, seconds(&e.last_at))
    } else {
        String::new()
    };
    format!(
        "{}  {}  {}  {}{repeats}\n",
        seconds(&e.at),
        e.scale_set,
        e.kind,
        e.reason
    )
}

/// An RFC 3339 time as `YYYY-MM-DD HH:MM:SS`; other text as it is.
fn seconds(text: &str) -> String {
    match (text.get(..10), text.get(11..19)) {
        (Some(date), Some(time)) if text.as_bytes().get(10) == Some(&b'T') => {
            format!("{date} {time}")
        }
        _ => text.to_owned(),
    }
}

/// `--since`: a duration ago (`10m`, `2h`) or an RFC 3339 time, as the RFC 3339 time the API
/// takes.
fn since(text: &str, now: SystemTime) -> Result<String> {
    let rfc3339 = &time::format_description::well_known::Rfc3339;
    if let Ok(at) = time::OffsetDateTime::parse(text.trim(), rfc3339) {
        return Ok(at.format(rfc3339)?);
    }
    let ago: Duration = scaleset_duration::parse(text).map_err(|_| {
        anyhow::anyhow!(
            "--since {text:?} is neither a duration (10m, 2h, 1d) nor an RFC 3339 time \
             (2026-12-06T10:00:00Z)"
        )
    })?;
    let at = now.checked_sub(ago).unwrap_or(SystemTime::UNIX_EPOCH);
    Ok(time::OffsetDateTime::from(at).format(rfc3339)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_a_duration_ago_or_an_rfc3339_time() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(3600);
        assert_eq!(since("10m", now).unwrap(), "1970-01-01T00:50:00Z");
        assert_eq!(
            since("2026-12-06T10:00:00+01:00", now).unwrap(),
            "2026-12-06T10:00:00+01:00"
        );
        let e = since("yesterday", now).unwrap_err().to_string();
        assert!(
            e.contains("neither a duration") && e.contains("RFC 3339"),
            "{e}"
        );
    }
}
