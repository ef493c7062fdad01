//! The status page's pictures: small SVG line charts of a scale set's last hour, drawn on the
//! server from its stored samples (no script, no image files: the SVG is part of the page, so
//! it shows with scripts off and under a CSP that allows no inline style). Pure: samples and
//! `now` in, markup out. The x axis is always the hour before `now`, so charts of different
//! scale sets compare; the y axis runs from 0 to the largest value drawn (at least 1).

use maud::{Markup, html};
use scaleset_store::{SAMPLE_WINDOW, Sample, Timestamp};

/// One line: its name (for the legend), its colour, and its points (`(unix ms, value)`).
pub(crate) struct Series {
    pub(crate) name: &'static str,
    pub(crate) colour: &'static str,
    pub(crate) points: Vec<(i64, f64)>,
}

/// Where a chart's window starts and how long it is, in unix milliseconds.
fn window(now: Timestamp) -> (i64, f64) {
    let span = i64::try_from(SAMPLE_WINDOW.as_millis()).unwrap_or(i64::MAX);
    (now.unix_millis().saturating_sub(span), span as f64)
}

/// The polyline points of `points` in a `width` × `height` box for the hour before `now`, on a
/// y scale whose top is `top`; points outside the hour are left out.
pub(crate) fn polyline(
    points: &[(i64, f64)],
    now: Timestamp,
    top: f64,
    width: f64,
    height: f64,
) -> String {
    let (start, span) = window(now);
    let top = if top > 0.0 { top } else { 1.0 };
    points
        .iter()
        .filter(|(at, _)| *at >= start && *at <= now.unix_millis())
        .map(|(at, value)| {
            let x = (*at - start) as f64 / span * width;
            let y = height - (value.max(0.0) / top).min(1.0) * height;
            format!("{x:.1},{y:.1}")
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The largest value among the series' points in the hour (at least 1, so a flat zero line
/// sits on the axis).
fn top(series: &[Series], now: Timestamp) -> f64 {
    let (start, _) = window(now);
    series
        .iter()
        .flat_map(|s| s.points.iter())
        .filter(|(at, _)| *at >= start)
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

/// A titled chart of `series` over the hour before `now`, with its legend.
pub(crate) fn chart(id: &str, title: &str, series: &[Series], now: Timestamp) -> Markup {
    let top = top(series, now);
    let empty = series.iter().all(|s| s.points.is_empty());
    html! {
        figure.chart id=(id) {
            figcaption { (title) }
            svg xmlns="http://www.w3.org/2000/svg" viewBox={ "0 0 " (W + 40.0) " " (H + 18.0) }
                width=(W + 40.0) height=(H + 18.0) role="img" aria-label=(title) {
                title { (title) ", last hour" }
                line x1="0" y1=(H) x2=(W) y2=(H) stroke="#d1d9e0" {}
                line x1="0" y1="0" x2=(W) y2="0" stroke="#eef1f4" {}
                text x=(W + 4.0) y="10" font-size="10" fill="#59636e" { (fmt_top(top)) }
                text x=(W + 4.0) y=(H) font-size="10" fill="#59636e" { "0" }
                text x="0" y=(H + 14.0) font-size="10" fill="#59636e" { "60 min ago" }
                text x=(W) y=(H + 14.0) font-size="10" fill="#59636e" text-anchor="end" { "now" }
                @for s in series {
                    polyline.line data-series=(s.name) fill="none" stroke=(s.colour)
                        stroke-width="1.8" points=(polyline(&s.points, now, top, W, H)) {}
                }
            }
            @if empty {
                div.sub { "no samples in the last hour yet" }
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

/// The overview's sparkline: jobs waiting and busy runners over the last hour.
pub(crate) fn sparkline(samples: &[Sample], now: Timestamp) -> Markup {
    const SW: f64 = 100.0;
    const SH: f64 = 22.0;
    let mut series = waiting_series(samples);
    series.push(Series {
        name: "busy",
        colour: "#8250df",
        points: samples
            .iter()
            .map(|s| (s.at.unix_millis(), f64::from(s.busy)))
            .collect(),
    });
    let top = top(&series, now);
    html! {
        svg.spark xmlns="http://www.w3.org/2000/svg" viewBox={ "0 0 " (SW) " " (SH) } width=(SW)
            height=(SH) role="img" aria-label="jobs waiting (red) and busy runners (purple), last hour" {
            title { "last hour: jobs waiting (red), busy runners (purple); top " (fmt_top(top)) }
            line x1="0" y1=(SH) x2=(SW) y2=(SH) stroke="#d1d9e0" {}
            @for s in &series {
                polyline fill="none" stroke=(s.colour) stroke-width="1.5"
                    points=(polyline(&s.points, now, top, SW, SH)) {}
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

    #[test]
    fn points_span_the_hour_and_scale_to_the_top() {
        let now = Timestamp::from_unix_millis(NOW);
        let points = [(NOW - 3_600_000, 0.0), (NOW - 1_800_000, 2.0), (NOW, 4.0)];
        assert_eq!(
            polyline(&points, now, 4.0, 100.0, 50.0),
            "0.0,50.0 50.0,25.0 100.0,0.0"
        );
    }

    #[test]
    fn points_outside_the_hour_are_left_out_and_values_clamped() {
        let now = Timestamp::from_unix_millis(NOW);
        let points = [
            (NOW - 3_600_001, 9.0),
            (NOW + 1, 9.0),
            (NOW, -3.0),
            (NOW, 8.0),
        ];
        assert_eq!(
            polyline(&points, now, 4.0, 100.0, 50.0),
            "100.0,50.0 100.0,0.0"
        );
        assert_eq!(polyline(&[(NOW, 0.0)], now, 0.0, 10.0, 10.0), "10.0,10.0");
    }

    #[test]
    fn the_top_is_the_largest_value_in_the_hour_and_at_least_one() {
        let now = Timestamp::from_unix_millis(NOW);
        let old = Series {
            name: "a",
            colour: "#000",
            points: vec![(NOW - 4_000_000, 50.0), (NOW - 60_000, 3.0)],
        };
        assert_eq!(top(&[old], now), 3.0);
        assert_eq!(top(&[], now), 1.0);
        assert_eq!(fmt_top(3.0), "3");
        assert_eq!(fmt_top(2.5), "2.5");
        assert_eq!(fmt_top(12.34), "12");
    }

    #[test]
    fn a_chart_draws_a_line_per_series_and_says_when_it_has_nothing() {
        let now = Timestamp::from_unix_millis(NOW);
        let samples = [sample(30, 2, 1), sample(0, 4, 3)];
        let drawn = chart("runners", "Runners", &runner_series(&samples), now).into_string();
        assert_eq!(drawn.matches("<polyline").count(), 3, "{drawn}");
        assert!(drawn.contains(r#"data-series="busy""#), "{drawn}");
        assert!(!drawn.contains("no samples"), "{drawn}");
        let latency = latency_series(&samples);
        assert_eq!(
            latency[0].points,
            vec![(NOW - 1_800_000, 30.0), (NOW, 30.0)]
        );
        let none = chart("w", "Jobs waiting", &waiting_series(&[]), now).into_string();
        assert!(none.contains("no samples in the last hour yet"), "{none}");
        let spark = sparkline(&samples, now).into_string();
        assert_eq!(spark.matches("<polyline").count(), 2, "{spark}");
        assert!(
            spark.contains("50.0,11.0 100.0,0.0"),
            "waiting 2 then 4 of 4: {spark}"
        );
    }
}
