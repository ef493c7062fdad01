//! The status page's frame: the page around every body, its stylesheet and the small script
//! that refreshes it (both served as files under `/static/`, so the Content-Security-Policy
//! allows no inline script or style), the security headers, `<time>` elements, and the text
//! helpers (times, query values). The HTML is written with `maud`, which escapes every value it
//! is given: stored text cannot become markup, and no call site has to remember to escape.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::{HeaderMap, HeaderValue, header};
use maud::{DOCTYPE, Markup, html};
use scaleset_store::Timestamp;

/// A query-string value, percent-encoded.
pub(crate) fn query_value(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// RFC 3339 in UTC, to the second (`2026-12-03T07:01:02Z`).
pub(crate) fn rfc3339(at: Timestamp) -> String {
    let nanos = i128::from(at.unix_millis()) * 1_000_000;
    time::OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()
        .and_then(|t| t.replace_nanosecond(0).ok())
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| format!("{} ms", at.unix_millis()))
}

/// A time in UTC to the second, as people read it: `2026-12-06 17:37:34 UTC`.
pub(crate) fn utc(at: Timestamp) -> String {
    let text = rfc3339(at);
    match text.strip_suffix('Z') {
        Some(plain) => format!("{} UTC", plain.replacen('T', " ", 1)),
        None => text,
    }
}

/// How long before `now` `at` was, in words (`12 s ago`, `3 min ago`, `2 h ago`).
pub(crate) fn ago(at: Timestamp, now: SystemTime) -> String {
    let now_ms = now
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_millis();
    let at_ms = u128::try_from(at.unix_millis()).unwrap_or(0);
    if at_ms > now_ms + 999 {
        return format!("in {}", span((at_ms - now_ms) / 1000));
    }
    format!("{} ago", span(now_ms.saturating_sub(at_ms) / 1000))
}

fn span(secs: u128) -> String {
    match secs {
        0..=59 => format!("{secs} s"),
        60..=3599 => format!("{} min", secs / 60),
        3600..=86_399 => format!("{} h", secs / 3600),
        _ => format!("{} d", secs / 86_400),
    }
}

/// A `<time>` element: relative text, the exact time as its tooltip.
pub(crate) fn time_el(at: Timestamp, now: SystemTime) -> Markup {
    let exact = rfc3339(at);
    html! { time datetime=(exact) title=(exact) { (ago(at, now)) } }
}

/// The stylesheet, served at `/static/status.css`.
pub(crate) const STYLE: &str = r#"
:root { color-scheme: light; --ink:#1f2328; --muted:#59636e; --line:#d1d9e0; --bg:#f6f8fa;
  --ok:#1a7f37; --okbg:#dafbe1; --warn:#9a6700; --warnbg:#fff8c5; --bad:#cf222e; --badbg:#ffebe9;
  --info:#0969da; --infobg:#ddf4ff; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
  color: var(--ink); background: #fff; }
header { display:flex; align-items:center; gap:16px; padding: 12px 24px; background:#24292f; color:#fff; }
header h1 { font-size: 18px; margin: 0; font-weight: 600; }
header a { color:#fff; text-decoration:none; }
header .spacer { flex: 1; }
header .meta { color:#c9d1d9; font-size: 12px; }
header form { margin: 0; }
header button { background: transparent; color:#c9d1d9; border:1px solid #57606a; border-radius:6px;
  padding: 3px 10px; cursor: pointer; }
main { padding: 16px 24px 32px; }
.summary { display:flex; flex-wrap: wrap; gap: 12px; margin: 0 0 14px; }
.card { border:1px solid var(--line); border-radius: 8px; padding: 8px 14px; background: var(--bg); min-width: 120px; }
.card b { display:block; font-size: 20px; }
.card span { color: var(--muted); font-size: 12px; }
form.filter { display:flex; flex-wrap: wrap; gap: 8px; align-items:center; margin: 0 0 12px; }
form.filter input, form.filter select { font: inherit; padding: 5px 8px; border:1px solid var(--line); border-radius: 6px; }
form.filter button, .login button { font: inherit; padding: 5px 14px; border-radius: 6px; border:1px solid #1f883d;
  background:#1f883d; color:#fff; cursor:pointer; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; vertical-align: top; padding: 7px 10px; border-bottom: 1px solid var(--line); }
th { background: var(--bg); font-weight: 600; font-size: 12px; color: var(--muted); text-transform: uppercase;
  letter-spacing: .03em; position: sticky; top: 0; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr:hover td { background: #f6f8fa88; }
a { color: var(--info); }
.name { min-width: 120px; max-width: 260px; overflow-wrap: anywhere; }
.name a { font-weight: 600; text-decoration: none; }
h2#name { overflow-wrap: anywhere; }
.attention { margin-top: 4px; max-width: 420px; font-size: 12px; overflow-wrap: anywhere; }
.attention .why { color: var(--bad); }
.attention .remedy code { background: var(--bg); border: 1px solid var(--line); border-radius: 4px; padding: 0 4px; }
.s-attention { color: var(--bad); background: var(--badbg); border-color: #ffcecb; }
#attention-box { border: 1px solid #ffcecb; background: #fff8f7; border-radius: 8px; padding: 8px 14px; margin: 0 0 14px; }
#attention-box .attention { max-width: none; font-size: 14px; }
#groups { border: 1px solid #ffcecb; background: #fff8f7; border-radius: 8px; padding: 6px 14px; margin: 0 0 14px; }
#groups .group { margin: 2px 0; }
#groups .group b { color: var(--bad); }
section.charts { display: flex; flex-wrap: wrap; gap: 16px; }
figure.chart { margin: 0; border: 1px solid var(--line); border-radius: 8px; padding: 8px 10px; }
figure.chart figcaption { font-size: 12px; color: var(--muted); margin-bottom: 4px; }
.legend { display: flex; gap: 10px; font-size: 12px; color: var(--muted); }
td.spark { padding-top: 9px; }
.sub { color: var(--muted); font-size: 12px; }
.badge { display:inline-block; padding: 1px 8px; border-radius: 999px; font-size: 12px; font-weight: 600;
  border: 1px solid transparent; white-space: nowrap; }
.s-ready { color: var(--ok); background: var(--okbg); border-color: #aceebb; }
.s-pending { color: var(--info); background: var(--infobg); border-color: #b6e3ff; }
.s-refused, .s-error, .s-foreign_session { color: var(--bad); background: var(--badbg); border-color: #ffcecb; }
.s-drifted, .s-dormant, .s-draining, .s-disabled { color: var(--warn); background: var(--warnbg); border-color: #f5e0a0; }
tr[data-service="draining"] .s-ready, tr[data-service="disabled"] .s-ready { color: var(--muted); background: none; border-color: var(--muted); }
.p-created { color: var(--info); } .p-adopted { color: #8250df; } .p-known { color: var(--muted); }
.reason { max-width: 420px; color: var(--muted); font-size: 12px; overflow-wrap: anywhere; }
ul.events { list-style: none; margin: 0; padding: 0; font-size: 12px; max-width: 360px; }
ul.events li { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
ul.events .k { font-weight: 600; }
ul.events .repeats { color: var(--muted); }
.pager { display:flex; gap: 12px; align-items:center; margin-top: 12px; color: var(--muted); }
dl.facts { display:grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 0 0 20px; }
dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; overflow-wrap: anywhere; }
h2 { font-size: 16px; margin: 22px 0 8px; }
code, pre { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12px; }
pre { background: var(--bg); border:1px solid var(--line); border-radius: 6px; padding: 8px; overflow:auto; }
.login { max-width: 420px; margin: 80px auto; border:1px solid var(--line); border-radius: 8px; padding: 24px; }
.login input { width: 100%; font: inherit; padding: 7px 9px; margin: 8px 0 14px; border:1px solid var(--line); border-radius:6px; }
.error { color: var(--bad); }
/* The actions (status_page/actions.rs): forms that POST, inline; greyed out when the scope
   does not open them. */
.actions { display:flex; flex-wrap:wrap; align-items:center; gap:6px; margin:6px 0 10px; }
.actions form, form.action { display:inline-flex; align-items:center; gap:6px; margin:0; }
.actions button, form.action button, form.fleet button { font: inherit; font-size:.9em; padding:3px 10px;
  border-radius:6px; border:1px solid var(--line); background:#fff; color:var(--ink); cursor:pointer; }
.actions button.drain, button.delete { border-color: var(--bad); color: var(--bad); }
.actions button:disabled, form.action button:disabled, form.fleet button:disabled { opacity:.45; cursor:not-allowed; }
form.action.edit input { width:5em; font: inherit; }
td.name .actions { margin:4px 0 0; }
.notice { background: var(--infobg); border:1px solid var(--info); border-radius:6px; padding:6px 10px; }
form.fleet { display:flex; flex-direction:column; gap:6px; max-width:60em; }
form.fleet textarea { font-family: ui-monospace, monospace; font-size:.9em; }
.empty { color: var(--muted); padding: 24px 0; }
"#;

/// Reloads the page every 5 s while it is visible, unless the filter box has the focus.
pub(crate) const REFRESH: &str = r#"
setInterval(function () {
  var a = document.activeElement;
  if (document.visibilityState === 'visible' && !(a && (a.tagName === 'INPUT' || a.tagName === 'SELECT'))) {
    location.reload();
  }
}, 5000);
"#;

/// A whole page: `title`, `body`, a sign-out button when `signed_in`, and the auto-refresh
/// script when `refresh`.
pub(crate) fn page(title: &str, body: &Markup, signed_in: bool, refresh: bool) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · scaleset" }
                link rel="stylesheet" href="/static/status.css";
            }
            body {
                header {
                    h1 { a href="/" { "scaleset" } }
                    span.meta { "runner scale sets" }
                    span.spacer {}
                    @if refresh {
                        span.meta id="refresh" { "refreshes every 5 s" }
                    }
                    @if signed_in {
                        form method="post" action="/logout" { button type="submit" { "Sign out" } }
                    }
                }
                main { (body) }
                @if refresh {
                    script src="/static/refresh.js" {}
                }
            }
        }
    }
    .into_string()
}

/// The status page's Content-Security-Policy: scripts and styles only from this origin (no
/// inline ones), no plugins, forms only back to it, never framed.
pub(crate) const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// Sets the headers every status-page response carries: the CSP, no framing (both the CSP's
/// `frame-ancestors` and the older `X-Frame-Options`), no MIME sniffing, the referrer only to
/// this origin; and `Cache-Control: no-store` unless the response set its own (the pages show
/// what a token may read, and a shared or back-button cache must not keep them).
pub(crate) fn harden(headers: &mut HeaderMap) {
    let set = [
        (header::CONTENT_SECURITY_POLICY, CSP),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "same-origin"),
    ];
    for (name, value) in set {
        headers.insert(name, HeaderValue::from_static(value));
    }
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_title_is_escaped() {
        let page = page(r#"<script>"x" & 'y'</script>"#, &html! {}, false, false);
        assert!(
            page.contains(
                "<title>&lt;script&gt;&quot;x&quot; &amp; 'y'&lt;/script&gt; · scaleset</title>"
            ),
            "{page}"
        );
        assert!(!page.contains("<script>\"x"), "{page}");
    }

    #[test]
    fn times_read_as_utc_and_relative() {
        let at = Timestamp::from_unix_millis(1_796_205_600_123);
        assert_eq!(rfc3339(at), "2026-12-02T10:00:00Z");
        let now = UNIX_EPOCH + Duration::from_millis(1_796_205_600_123 + 75_000);
        assert_eq!(ago(at, now), "1 min ago");
        let before = UNIX_EPOCH + Duration::from_millis(1_796_205_600_123 - 30_000);
        assert_eq!(ago(at, before), "in 30 s", "a deadline ahead");
    }
}
