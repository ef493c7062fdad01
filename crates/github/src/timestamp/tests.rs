//! Unit tests of date parsing: .NET seven-digit fractions, offsets, the zero date, round trips.

use proptest::prelude::*;

use super::*;

#[test]
fn seven_fraction_digits_parse() {
    let t = Timestamp::parse("2024-05-06T07:08:09.1234567Z").unwrap();
    assert_eq!(t.unix_seconds(), 1_714_979_289);
    assert_eq!(t.subsec_nanos(), 123_456_700);
    assert_eq!(t.to_string(), "2024-05-06T07:08:09.123456700Z");
}

#[test]
fn offsets_and_missing_zone_are_handled() {
    let utc = Timestamp::parse("2024-05-06T07:08:09Z").unwrap();
    assert_eq!(Timestamp::parse("2024-05-06T09:08:09+02:00").unwrap(), utc);
    assert_eq!(Timestamp::parse("2024-05-06T07:08:09").unwrap(), utc);
    assert_eq!(Timestamp::parse("2024-05-06T06:08:09-0100").unwrap(), utc);
}

#[test]
fn zero_date_is_unset() {
    assert!(Timestamp::parse("0001-01-01T00:00:00Z").unwrap().is_unset());
    assert!(
        Timestamp::parse("0001-01-01T00:00:00")
            .unwrap()
            .to_system_time()
            .is_none()
    );
}

#[test]
fn a_leap_day_parses_and_prints_back() {
    let t = Timestamp::parse("2024-02-29T23:59:59Z").unwrap();
    assert_eq!(t.unix_seconds(), 1_709_251_199);
    assert_eq!(t.to_string(), "2024-02-29T23:59:59Z");
}

#[test]
fn garbage_is_rejected() {
    for bad in [
        "",
        "yesterday",
        "2024-13-01T00:00:00Z",
        // No such day (before the `time` crate computed dates, this rolled into March).
        "2023-02-29T00:00:00Z",
        "2024-04-31T00:00:00Z",
        "2024-05-06T07:08:09.Z",
        "2024-05-06T07:08:09Zjunk",
    ] {
        assert_eq!(Timestamp::parse(bad), None, "{bad}");
    }
}

proptest! {
    #[test]
    fn parse_never_panics(text in ".{0,40}") {
        let _ = Timestamp::parse(&text);
    }

    #[test]
    fn display_round_trips(secs in 0i64..4_000_000_000, nanos in 0u32..1_000_000_000) {
        let t = Timestamp { unix_seconds: secs, nanos };
        prop_assert_eq!(Timestamp::parse(&t.to_string()), Some(t));
    }
}
