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
    assert_eq!(policy.delay(1, Some(429), after), Duration::from_secs(7));
    assert_eq!(policy.delay(1, Some(503), after), Duration::from_secs(7));
    assert_eq!(policy.delay(1, Some(500), after), Duration::from_secs(1));
    assert_eq!(
        policy.delay(1, Some(429), Some(Duration::from_secs(9999))),
        policy.max_retry_after
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
