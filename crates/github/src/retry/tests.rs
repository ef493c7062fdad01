//! Unit tests of the retry policy: backoff, Retry-After, retryable statuses.

use std::time::{Duration, SystemTime};

use super::*;

#[test]
fn default_backoff_is_1_2_4_8_capped_at_30() {
    let policy = RetryPolicy::default();
    let waits: Vec<u64> = (1..=7).map(|a| policy.backoff(a).as_secs()).collect();
    assert_eq!(waits, vec![1, 2, 4, 8, 16, 30, 30]);
    assert_eq!(policy.max_attempts, 5);
}

#[test]
fn retry_after_applies_to_429_and_503_only() {
    let policy = RetryPolicy::default();
    let after = Some(Duration::from_secs(7));
    assert_eq!(
        policy.delay(1, Some(429), after, 1.0),
        Duration::from_secs(7)
    );
    assert_eq!(
        policy.delay(1, Some(503), after, 1.0),
        Duration::from_secs(7)
    );
    assert_eq!(
        policy.delay(1, Some(500), after, 1.0),
        Duration::from_secs(1)
    );
    assert_eq!(
        policy.delay(1, Some(429), Some(Duration::from_secs(9999)), 1.0),
        policy.max_retry_after
    );
}

#[test]
fn the_backoff_is_jittered_and_an_advertised_wait_is_not() {
    let policy = RetryPolicy::default();
    let after = Some(Duration::from_secs(7));
    // The backoff: between half of it and all of it, by the draw.
    assert_eq!(policy.delay(3, None, None, 0.0), Duration::from_secs(2));
    assert_eq!(policy.delay(3, None, None, 0.5), Duration::from_secs(3));
    assert_eq!(
        policy.delay(3, Some(500), after, 0.0),
        Duration::from_secs(2)
    );
    assert_eq!(
        policy.delay(3, Some(429), None, 0.25),
        Duration::from_millis(2500)
    );
    // A server's wait is its schedule: as given, whatever the draw.
    assert_eq!(
        policy.delay(3, Some(429), after, 0.0),
        Duration::from_secs(7)
    );
    assert_eq!(
        policy.delay(3, Some(503), after, 0.0),
        Duration::from_secs(7)
    );
}

#[test]
fn jitter_stays_in_the_upper_half_and_never_exceeds_the_ceiling() {
    let ceiling = Duration::from_secs(10);
    assert_eq!(jittered(ceiling, 0.0), Duration::from_secs(5));
    assert_eq!(jittered(ceiling, 1.0), ceiling);
    assert_eq!(jittered(ceiling, 0.5), Duration::from_millis(7500));
    assert_eq!(jittered(ceiling, 7.0), ceiling, "a bad draw is clamped");
    assert_eq!(jittered(ceiling, -1.0), Duration::from_secs(5));
    assert_eq!(jittered(ceiling, f64::NAN), ceiling);
    assert_eq!(jittered(ceiling, f64::INFINITY), ceiling);
    assert_eq!(jittered(Duration::ZERO, 0.3), Duration::ZERO);
    let odd = Duration::from_nanos(3);
    assert_eq!(jittered(odd, 0.0), Duration::from_nanos(1));
    assert_eq!(jittered(odd, 1.0), odd);
}

#[test]
fn the_default_random_source_draws_spread_units() {
    let random = thread_random();
    let draws: Vec<f64> = (0..64).map(|_| random()).collect();
    assert!(draws.iter().all(|d| (0.0..1.0).contains(d)), "{draws:?}");
    assert!(
        draws.iter().any(|d| *d != draws[0]),
        "the draws differ: {draws:?}"
    );
}

#[test]
fn retryable_statuses() {
    for status in [429, 500, 502, 503, 504, 599] {
        assert!(is_retryable_status(status), "{status}");
    }
    for status in [200, 400, 401, 403, 404, 409, 422, 501] {
        assert!(!is_retryable_status(status), "{status}");
    }
}

#[test]
fn retry_after_parses_seconds_and_http_dates() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    assert_eq!(
        parse_retry_after(" 12 ", now),
        Some(Duration::from_secs(12))
    );
    let later = httpdate::fmt_http_date(now + Duration::from_secs(90));
    assert_eq!(
        parse_retry_after(&later, now),
        Some(Duration::from_secs(90))
    );
    let earlier = httpdate::fmt_http_date(now - Duration::from_secs(90));
    assert_eq!(parse_retry_after(&earlier, now), Some(Duration::ZERO));
    assert_eq!(parse_retry_after("soon", now), None);
}

#[test]
fn a_rate_limit_answer_advertises_its_wait() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let reset_in_40 = "1700000040";
    // Retry-After wins over the reset time.
    assert_eq!(
        rate_limit_wait(Some("7"), Some("0"), Some(reset_in_40), now),
        Some(Duration::from_secs(7))
    );
    assert_eq!(
        rate_limit_wait(None, Some("0"), Some(reset_in_40), now),
        Some(Duration::from_secs(40))
    );
    assert_eq!(
        rate_limit_wait(None, Some(" 0 "), Some("1699999990"), now),
        Some(Duration::ZERO),
        "a reset in the past means retry now"
    );
    // Budget left, no reset, or an unreadable reset: nothing advertised.
    assert_eq!(
        rate_limit_wait(None, Some("12"), Some(reset_in_40), now),
        None
    );
    assert_eq!(rate_limit_wait(None, Some("0"), None, now), None);
    assert_eq!(rate_limit_wait(None, None, Some(reset_in_40), now), None);
    assert_eq!(rate_limit_wait(None, Some("0"), Some("soon"), now), None);
    assert_eq!(rate_limit_wait(Some("soon"), None, None, now), None);
}

#[test]
fn an_advertised_wait_is_capped() {
    let policy = RetryPolicy::default().with_max_retry_after(Duration::from_secs(60));
    assert_eq!(
        policy.advertised(Duration::from_secs(59)),
        Duration::from_secs(59)
    );
    assert_eq!(
        policy.advertised(Duration::from_secs(61)),
        Duration::from_secs(60)
    );
}
