//! The status page's pictures: small SVG line charts of a scale set's last hour, drawn on the
//! server from its stored samples (no script, no image files: the SVG is part of the page, so
//! it shows with scripts off and under a CSP that allows no inline style). Pure: samples and
//! `now` in, markup out. The x axis runs from the first sample of the last hour to `now` (at
//! least [`MIN_SPAN`]), so the first hour after a start, or after a rehearsal wiped the
//! samples, fills the chart instead of a sliver at its right; a chart that does not cover the
//! hour says since when it collects. The y axis runs from 0 to the largest value drawn (at
//! least 1).

use maud::{Markup, html};
use scaleset_store::{SAMPLE_HELD_AT_MOST, SAMPLE_WINDOW, Sample, Timestamp};

/// How far apart the held minutes are drawn.
const MINUTE: i64 = 60_000;

/// The samples as the charts draw them. A listener writes a sample only when its figures
/// change (and at least every [`SAMPLE_HELD_AT_MOST`]), so each stored sample's figures are
/// repeated once a minute until the next sample, for [`SAMPLE_HELD_AT_MOST`] at most and never
/// past `now`: a scale set nobody serves any more shows a gap, not figures nobody measured. A
/// repeated minute carries no start latency (no job started in it). `stored` is oldest first;
/// its samples before `since` only lend their figures to the minutes from `since` on.
pub(crate) fn held_each_minute(stored: &[Sample], since: Timestamp, now: Timestamp) -> Vec<Sample> {
    let held_at_most = i64::try_from(SAMPLE_HELD_AT_MOST.as_millis()).unwrap_or(i64::MAX);
    let (since, now) = (since.unix_millis(), now.unix_millis());
    let mut drawn = Vec::new();
    for (at, sample) in stored.iter().enumerate() {
        let from = sample.at.unix_millis();
        if from >= since && from <= now {
            drawn.push(*sample);
        }
        let next = stored
            .get(at + 1)
            .map_or(i64::MAX, |next| next.at.unix_millis());
        let last = from.saturating_add(held_at_most).min(now);
        let mut minute = from.saturating_add(MINUTE);
        while minute < next && minute <= last {
            if minute >= since {
                drawn.push(Sample {
                    at: Timestamp::from_unix_millis(minute),
                    start_latency: None,
                    ..*sample
                });
            }
            minute = minute.saturating_add(MINUTE);
        }
    }
    drawn
}

/// One line: its name (for the legend), its colour, and its points (`(unix ms, value)`).
pub(crate) struct Series {
    pub(crate) name: &'static str,
    pub(crate) colour: &'static str,
    pub(crate) points: Vec<(i64, f64)>,
}

/// The shortest time axis drawn, so a handful of samples a minute apart is not stretched
/// across the chart.
pub(crate) const MIN_SPAN: std::time::Duration = std::time::Duration::from_secs(5 * 60);

/// A chart's time axis, in unix milliseconds: from the first sample of the last hour (or
/// [`MIN_SPAN`] before `now`, whichever is earlier) to `now`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Window {
    pub(crate) start: i64,
    pub(crate) end: i64,
    /// The first sample's time, when it is later than the hour's start: collecting since.
    pub(crate) collecting_since: Option<Timestamp>,
}

impl Window {
    /// The axis for `samples` (oldest first) at `now`.
    pub(crate) fn of(samples: &[Sample], now: Timestamp) -> Self {
        let millis = |d: std::time::Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        let end = now.unix_millis();
        let hour_start = end.saturating_sub(millis(SAMPLE_WINDOW));
        let first = samples
            .iter()
            .map(|s| s.at.unix_millis())
            .filter(|at| *at >= hour_start && *at <= end)
            .min();
        let start = first
            .unwrap_or(hour_start)
            .min(end.saturating_sub(millis(MIN_SPAN)));
        // A minute of slack: a sample taken just after the hour's start covers it.
        let collecting_since = first
            .filter(|at| *at > hour_start + 60_000)
            .map(Timestamp::from_unix_millis);
        Self {
            start,
            end,
            collecting_since,
        }
    }

    fn span(&self) -> f64 {
        (self.end - self.start).max(1) as f64
    }

    /// The left end's label: `60 min ago`, `7 min ago`.
    fn start_label(&self) -> String {
        let minutes = (self.end - self.start + 30_000) / 60_000;
        format!("{minutes} min ago")
    }
}

/// The polyline points of `points` in a `width` × `height` box for `window`, on a y scale
/// whose top is `top`; points outside the window are left out.
pub(crate) fn polyline(
    points: &[(i64, f64)],
    window: Window,
    top: f64,
    width: f64,
    height: f64,
) -> String {
    let span = window.span();
    let top = if top > 0.0 { top } else { 1.0 };
    points
        .iter()
        .filter(|(at, _)| *at >= window.start && *at <= window.end)
        .map(|(at, value)| {
            let x = (*at - window.start) as f64 / span * width;
            let y = height - (value.max(0.0) / top).min(1.0) * height;
            format!("{x:.1},{y:.1}")
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The largest value among the series' points in the window (at least 1, so a flat zero line
/// sits on the axis).
fn top(series: &[Series], window: Window) -> f64 {
    series
        .iter()
        .flat_map(|s| s.points.iter())
        .filter(|(at, _)| *at >= window.start)
        .map(|(_, v)| *v)
        .fold(1.0, f64::max)
}

/// The figures a sample holds, as series.
pub(crate) fn runner_series(samples: &[Sample]) -> Vec<Series> {
    let line = |name, colour, value: fn(&Sample) -> u32| Series {
        name,
        colour,
        points: samples
            .iter()
            .map(|s| (s.at.unix_millis(), f64::from(value(s))))
            .collect(),
    };
    vec![
        line("idle", "#1a7f37", |s| s.idle),
        line("busy", "#8250df", |s| s.busy),
        line("starting", "#9a6700", |s| s.starting),
    ]
}

/// Jobs waiting, as a series.
pub(crate) fn waiting_series(samples: &[Sample]) -> Vec<Series> {
    vec![Series {
        name: "jobs waiting",
        colour: "#cf222e",
        points: samples
            .iter()
            .map(|s| (s.at.unix_millis(), f64::from(s.jobs_waiting)))
            .collect(),
    }]
}

/// The job start latency (queued to started, seconds), where a minute had one.
pub(crate) fn latency_series(samples: &[Sample]) -> Vec<Series> {
    vec![Series {
        name: "start latency (s)",
        colour: "#0969da",
        points: samples
            .iter()
            .filter_map(|s| Some((s.at.unix_millis(), s.start_latency?.as_secs_f64())))
            .collect(),
    }]
}

const W: f64 = 320.0;
const H: f64 = 90.0;

/// A titled chart of `series` over `window`, with its legend; `empty` says what an empty
/// chart means (no sample yet, or samples but no job started).
pub(crate) fn chart(
    id: &str,
    title: &str,
    series: &[Series],
    window: Window,
    empty: &str,
) -> Markup {
    let top = top(series, window);
    let nothing = series.iter().all(|s| s.points.is_empty());
    html! {
        figure.chart id=(id) {
            figcaption { (title) }
            svg xmlns="http://www.w3.org/2000/svg" viewBox={ "0 0 " (W + 40.0) " " (H + 18.0) }
                width=(W + 40.0) height=(H + 18.0) role="img" aria-label=(title) {
                title { (title) ", the last " (window.start_label().trim_end_matches(" ago")) }
                line x1="0" y1=(H) x2=(W) y2=(H) stroke="#d1d9e0" {}
                line x1="0" y1="0" x2=(W) y2="0" stroke="#eef1f4" {}
                text x=(W + 4.0) y="10" font-size="10" fill="#59636e" { (fmt_top(top)) }
                text x=(W + 4.0) y=(H) font-size="10" fill="#59636e" { "0" }
                text.axis-start x="0" y=(H + 14.0) font-size="10" fill="#59636e" { (window.start_label()) }
                text x=(W) y=(H + 14.0) font-size="10" fill="#59636e" text-anchor="end" { "now" }
                @for s in series {
                    polyline.line data-series=(s.name) fill="none" stroke=(s.colour)
                        stroke-width="1.8" points=(polyline(&s.points, window, top, W, H)) {}
                }
            }
            @if nothing {
                div.sub.empty-chart { (empty) }
            } @else {
                div.legend {
                    @for s in series {
                        span {
                            svg width="10" height="10" aria-hidden="true" {
                                rect width="10" height="10" fill=(s.colour) {}
                            }
                            " " (s.name)
                        }
                    }
                }
            }
        }
    }
}

/// Under the charts: since when samples are collected, when that is within the hour.
pub(crate) fn collecting_since(window: Window) -> Markup {
    html! {
        @if let Some(since) = window.collecting_since {
            p.sub id="collecting-since" {
                "collecting since " (super::html::utc(since))
                " (a sample a minute, kept for an hour)"
            }
        }
    }
}

/// The overview's sparkline: jobs waiting and busy runners over the window; with fewer than
/// two samples (nothing a line can be drawn through), a hint instead of an empty grey line.
pub(crate) fn sparkline(samples: &[Sample], now: Timestamp) -> Markup {
    const SW: f64 = 100.0;
    const SH: f64 = 22.0;
    if samples.len() < 2 {
        return html! {
            span.sub.spark-empty title="the worker serving it writes a sample a minute" {
                @if samples.is_empty() { "no samples yet" } @else { "collecting: one sample so far" }
            }
        };
    }
    let window = Window::of(samples, now);
    let mut series = waiting_series(samples);
    series.push(Series {
        name: "busy",
        colour: "#8250df",
        points: samples
            .iter()
            .map(|s| (s.at.unix_millis(), f64::from(s.busy)))
            .collect(),
    });
    let top = top(&series, window);
    html! {
        svg.spark xmlns="http://www.w3.org/2000/svg" viewBox={ "0 0 " (SW) " " (SH) } width=(SW)
            height=(SH) role="img" aria-label="jobs waiting (red) and busy runners (purple)" {
            title { "the last " (window.start_label().trim_end_matches(" ago")) ": jobs waiting (red), busy runners (purple); top " (fmt_top(top)) }
            line x1="0" y1=(SH) x2=(SW) y2=(SH) stroke="#d1d9e0" {}
            @for s in &series {
                polyline fill="none" stroke=(s.colour) stroke-width="1.5"
                    points=(polyline(&s.points, window, top, SW, SH)) {}
            }
        }
    }
}

/// The y axis' top, as a short number.
fn fmt_top(top: f64) -> String {
    if top >= 10.0 || top.fract() == 0.0 {
        format!("{top:.0}")
    } else {
        format!("{top:.1}")
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const NOW: i64 = 1_796_205_600_000;

    fn sample(minutes_ago: i64, waiting: u32, busy: u32) -> Sample {
        Sample {
            at: Timestamp::from_unix_millis(NOW - minutes_ago * 60_000),
            jobs_waiting: waiting,
            idle: 1,
            busy,
            starting: 0,
            start_latency: (waiting > 0).then(|| Duration::from_secs(30)),
        }
    }

    fn hour(now: Timestamp) -> Window {
        Window {
            start: now.unix_millis() - 3_600_000,
            end: now.unix_millis(),
            collecting_since: None,
        }
    }

    fn at(minutes_ago: i64) -> Timestamp {
        Timestamp::from_unix_millis(NOW - minutes_ago * 60_000)
    }

    #[test]
    fn a_sample_is_drawn_each_minute_until_the_next_one() {
        let stored = [sample(10, 2, 1), sample(7, 0, 3)];
        let drawn = held_each_minute(&stored, at(60), at(5));
        let minutes: Vec<(Timestamp, u32, u32)> = drawn
            .iter()
            .map(|s| (s.at, s.jobs_waiting, s.busy))
            .collect();
        assert_eq!(
            minutes,
            [
                (at(10), 2, 1),
                (at(9), 2, 1),
                (at(8), 2, 1),
                (at(7), 0, 3),
                (at(6), 0, 3),
                (at(5), 0, 3),
            ]
        );
        assert_eq!(drawn[0].start_latency, Some(Duration::from_secs(30)));
        assert!(
            drawn[1..3].iter().all(|s| s.start_latency.is_none()),
            "a held minute started no job"
        );
    }

    #[test]
    fn a_sample_is_held_for_fifteen_minutes_at_most_then_the_chart_shows_a_gap() {
        let held = i64::try_from(SAMPLE_HELD_AT_MOST.as_secs() / 60).unwrap();
        let drawn = held_each_minute(&[sample(40, 1, 1)], at(60), at(0));
        assert_eq!(drawn.len(), usize::try_from(held + 1).unwrap());
        assert_eq!(drawn.last().map(|s| s.at), Some(at(40 - held)));
    }

    #[test]
    fn a_sample_before_the_window_lends_its_figures_to_the_window_only() {
        let drawn = held_each_minute(&[sample(65, 4, 2), sample(55, 0, 0)], at(60), at(54));
        let minutes: Vec<(Timestamp, u32)> = drawn.iter().map(|s| (s.at, s.jobs_waiting)).collect();
        assert_eq!(
            minutes,
            [
                (at(60), 4),
                (at(59), 4),
                (at(58), 4),
                (at(57), 4),
                (at(56), 4),
                (at(55), 0),
                (at(54), 0),
            ]
        );
    }

    #[test]
    fn nothing_is_drawn_past_now_or_from_nothing() {
        assert!(held_each_minute(&[], at(60), at(0)).is_empty());
        let drawn = held_each_minute(&[sample(2, 1, 1)], at(60), at(0));
        assert_eq!(drawn.last().map(|s| s.at), Some(at(0)));
        assert!(drawn.iter().all(|s| s.at <= at(0)));
    }

    #[test]
    fn points_span_the_window_and_scale_to_the_top() {
        let now = Timestamp::from_unix_millis(NOW);
        let points = [(NOW - 3_600_000, 0.0), (NOW - 1_800_000, 2.0), (NOW, 4.0)];
        assert_eq!(
            polyline(&points, hour(now), 4.0, 100.0, 50.0),
            "0.0,50.0 50.0,25.0 100.0,0.0"
        );
    }

    #[test]
    fn points_outside_the_window_are_left_out_and_values_clamped() {
        let now = Timestamp::from_unix_millis(NOW);
        let points = [
            (NOW - 3_600_001, 9.0),
            (NOW + 1, 9.0),
            (NOW, -3.0),
            (NOW, 8.0),
        ];
        assert_eq!(
            polyline(&points, hour(now), 4.0, 100.0, 50.0),
            "100.0,50.0 100.0,0.0"
        );
        assert_eq!(
            polyline(&[(NOW, 0.0)], hour(now), 0.0, 10.0, 10.0),
            "10.0,10.0"
        );
    }

    #[test]
    fn the_axis_starts_at_the_first_sample_and_says_since_when_it_collects() {
        let now = Timestamp::from_unix_millis(NOW);
        // Twenty minutes of samples: the axis is those twenty minutes, not the hour.
        let samples: Vec<Sample> = (0..=20).rev().map(|m| sample(m, 1, 1)).collect();
        let window = Window::of(&samples, now);
        assert_eq!(window.start, NOW - 20 * 60_000);
        assert_eq!(window.start_label(), "20 min ago");
        assert_eq!(
            window.collecting_since,
            Some(Timestamp::from_unix_millis(NOW - 20 * 60_000))
        );
        let first = polyline(
            &waiting_series(&samples)[0].points,
            window,
            1.0,
            100.0,
            10.0,
        );
        assert!(
            first.starts_with("0.0,"),
            "the first sample is at the left: {first}"
        );
        let said = collecting_since(window).into_string();
        assert!(
            said.contains("collecting since 2026-12-02 09:40:00 UTC"),
            "{said}"
        );
        // A full hour: the hour, and nothing to say.
        let full: Vec<Sample> = (0..60).rev().map(|m| sample(m, 1, 1)).collect();
        let window = Window::of(&full, now);
        assert_eq!(window.start_label(), "59 min ago");
        assert_eq!(window.collecting_since, None);
        assert_eq!(collecting_since(window).into_string(), "");
        // One sample just now: at least five minutes, so one point is not the whole width.
        let window = Window::of(&[sample(0, 1, 1)], now);
        assert_eq!(window.start, NOW - 5 * 60_000);
        // None: the hour.
        assert_eq!(Window::of(&[], now).start, NOW - 3_600_000);
    }

    #[test]
    fn the_top_is_the_largest_value_in_the_window_and_at_least_one() {
        let now = Timestamp::from_unix_millis(NOW);
        let old = Series {
            name: "a",
            colour: "#000",
            points: vec![(NOW - 4_000_000, 50.0), (NOW - 60_000, 3.0)],
        };
        assert_eq!(top(&[old], hour(now)), 3.0);
        assert_eq!(top(&[], hour(now)), 1.0);
        assert_eq!(fmt_top(3.0), "3");
        assert_eq!(fmt_top(2.5), "2.5");
        assert_eq!(fmt_top(12.34), "12");
    }

    #[test]
    fn a_chart_draws_a_line_per_series_and_says_when_it_has_nothing() {
        let now = Timestamp::from_unix_millis(NOW);
        let samples = [sample(30, 2, 1), sample(0, 4, 3)];
        let window = Window::of(&samples, now);
        let drawn = chart(
            "runners",
            "Runners",
            &runner_series(&samples),
            window,
            "nothing yet",
        )
        .into_string();
        assert_eq!(drawn.matches("<polyline").count(), 3, "{drawn}");
        assert!(drawn.contains(r#"data-series="busy""#), "{drawn}");
        assert!(!drawn.contains("nothing yet"), "{drawn}");
        let latency = latency_series(&samples);
        assert_eq!(
            latency[0].points,
            vec![(NOW - 1_800_000, 30.0), (NOW, 30.0)]
        );
        let none = chart(
            "w",
            "Jobs waiting",
            &waiting_series(&[]),
            window,
            "no samples yet",
        )
        .into_string();
        assert!(none.contains("no samples yet"), "{none}");
        let spark = sparkline(&samples, now).into_string();
        assert_eq!(spark.matches("<polyline").count(), 2, "{spark}");
        assert!(
            spark.contains("0.0,11.0 100.0,0.0"),
            "waiting 2 then 4 of 4, the axis from the first sample: {spark}"
        );
    }

    #[test]
    fn an_empty_sparkline_says_so_instead_of_a_grey_line() {
        let now = Timestamp::from_unix_millis(NOW);
        let spark = sparkline(&[], now).into_string();
        assert!(spark.contains("no samples yet"), "{spark}");
        assert!(!spark.contains("<svg"), "{spark}");
        let one = sparkline(&[sample(0, 1, 1)], now).into_string();
        assert!(one.contains("collecting: one sample so far"), "{one}");
        assert!(!one.contains("<svg"), "{one}");
    }
}
