use std::time::Duration;

use proptest::prelude::*;

use super::*;

const SECOND: Duration = Duration::from_secs(1);

fn policy() -> BootPolicy {
    BootPolicy {
        base: 10 * SECOND,
        max: 600 * SECOND,
    }
}

fn at(seconds: u64) -> Timestamp {
    Timestamp::from_unix_millis(1_800_000_000_000).saturating_add(Duration::from_secs(seconds))
}

#[test]
fn the_wait_doubles_per_round_up_to_the_cap_jittered_between_half_and_all_of_it() {
    let p = policy();
    assert_eq!(delay(&p, 1, 1.0), 10 * SECOND);
    assert_eq!(delay(&p, 2, 1.0), 20 * SECOND);
    assert_eq!(delay(&p, 4, 1.0), 80 * SECOND);
    assert_eq!(delay(&p, 7, 1.0), 600 * SECOND, "capped at max");
    assert_eq!(delay(&p, u32::MAX, 1.0), 600 * SECOND, "no overflow");
    assert_eq!(delay(&p, 2, 0.0), 10 * SECOND, "half of 20 s");
}

#[test]
fn no_runner_is_created_before_the_wait_after_a_failed_bootstrap_is_over() {
    let healthy = Boots::default();
    assert!(healthy.may_create(at(0)));
    let (waiting, shown) = healthy.failed(&policy(), at(0), 1.0);
    assert_eq!(
        shown,
        Shown::BackingOff {
            failures: 1,
            retry_in: 10 * SECOND
        }
    );
    assert!(!waiting.may_create(at(0)));
    assert!(!waiting.may_create(at(9)));
    assert!(waiting.may_create(at(10)), "at the deadline");
    // The next failure, after the wait: a second round, twice as long.
    let (waiting, shown) = waiting.failed(&policy(), at(30), 1.0);
    assert_eq!(
        shown,
        Shown::BackingOff {
            failures: 2,
            retry_in: 20 * SECOND
        }
    );
    assert!(!waiting.may_create(at(49)));
    assert!(waiting.may_create(at(50)));
}

#[test]
fn a_failure_at_the_very_end_of_a_wait_starts_the_next_round() {
    // At its deadline the wait is over (a create may go), so a failure found then belongs to
    // the next round and doubles the wait, like one found later.
    let (waiting, _) = Boots::default().failed(&policy(), at(0), 1.0);
    assert!(waiting.may_create(at(10)));
    let (next, shown) = waiting.failed(&policy(), at(10), 1.0);
    assert_eq!(
        shown,
        Shown::BackingOff {
            failures: 2,
            retry_in: 20 * SECOND
        }
    );
    assert!(!next.may_create(at(29)));
    assert!(next.may_create(at(30)));
}

#[test]
fn failures_landing_during_a_wait_are_counted_without_doubling_it() {
    let (mut boots, _) = Boots::default().failed(&policy(), at(0), 1.0);
    // Nine more runners of the same burst fail over the next seconds.
    for s in 1..=9 {
        let (next, shown) = boots.failed(&policy(), at(s), 1.0);
        assert_eq!(
            shown,
            Shown::BackingOff {
                failures: u32::try_from(s).unwrap() + 1,
                retry_in: Duration::from_secs(10 - s)
            }
        );
        boots = next;
    }
    assert_eq!((boots.failures, boots.rounds), (10, 1));
    assert!(
        boots.may_create(at(10)),
        "one round waits as one failure does"
    );
}

#[test]
fn only_a_runner_coming_online_ends_the_back_off_and_resets_the_count() {
    let (boots, _) = Boots::default().failed(&policy(), at(0), 1.0);
    let (boots, _) = boots.failed(&policy(), at(20), 1.0);
    let (reset, shown) = boots.online();
    assert_eq!(shown, Shown::Recovered { failures: 2 });
    assert_eq!(reset, Boots::default());
    assert!(reset.may_create(at(20)));
    // The next failure starts from the first round again.
    let (again, shown) = reset.failed(&policy(), at(21), 1.0);
    assert_eq!(
        shown,
        Shown::BackingOff {
            failures: 1,
            retry_in: 10 * SECOND
        }
    );
    assert_eq!(again.rounds, 1);
    // A runner online with nothing failing shows nothing.
    assert_eq!(Boots::default().online().1, Shown::Unchanged);
}

#[test]
fn a_retry_request_ends_the_wait_and_keeps_the_count() {
    let (boots, _) = Boots::default().failed(&policy(), at(0), 1.0);
    let (boots, _) = boots.failed(&policy(), at(20), 1.0);
    let asked = boots.retry_now(at(25));
    assert!(asked.may_create(at(25)));
    assert_eq!((asked.failures, asked.rounds), (2, 2));
    let (next, shown) = asked.failed(&policy(), at(26), 1.0);
    assert_eq!(
        shown,
        Shown::BackingOff {
            failures: 3,
            retry_in: 40 * SECOND
        }
    );
    assert_eq!(next.rounds, 3);
    // A wait already over is not moved back.
    assert_eq!(next.retry_now(at(100)), next);
}

/// One fact of a scale set's life.
#[derive(Debug, Clone, Copy)]
enum Fact {
    Failed { after_ms: u64, random: f64 },
    Online { after_ms: u64 },
    Retry { after_ms: u64 },
}

fn fact() -> impl Strategy<Value = Fact> {
    prop_oneof![
        6 => (0u64..700_000, 0.0f64..1.0).prop_map(|(after_ms, random)| Fact::Failed { after_ms, random }),
        1 => (0u64..700_000).prop_map(|after_ms| Fact::Online { after_ms }),
        1 => (0u64..700_000).prop_map(|after_ms| Fact::Retry { after_ms }),
    ]
}

/// The fewest seconds `creates` creates can span when each boot fails: each create after the
/// first waits at least half of its round's ceiling.
fn least_span(p: &BootPolicy, creates: u32) -> Duration {
    (1..creates).map(|round| delay(p, round, 0.0)).sum()
}

proptest! {
    /// Whatever happens, a failure is always followed by a wait of at least half its round's
    /// ceiling and at most `max`, the count only grows until a runner comes online, and
    /// coming online always resets it.
    #[test]
    fn every_failure_waits_at_most_max_and_only_coming_online_resets(
        facts in proptest::collection::vec(fact(), 1..60),
        base_ms in 1u64..20_000,
        max_factor in 1u32..100,
    ) {
        let p = BootPolicy {
            base: Duration::from_millis(base_ms),
            max: Duration::from_millis(base_ms) * max_factor,
        };
        let mut boots = Boots::default();
        let mut now = at(0);
        for fact in facts {
            match fact {
                Fact::Failed { after_ms, random } => {
                    now = now.saturating_add(Duration::from_millis(after_ms));
                    let (next, shown) = boots.failed(&p, now, random);
                    prop_assert_eq!(next.failures, boots.failures + 1);
                    prop_assert!(next.rounds >= 1 && next.rounds <= next.failures);
                    let Shown::BackingOff { failures, retry_in } = shown else {
                        panic!("a failure shows a back-off: {shown:?}");
                    };
                    prop_assert_eq!(failures, next.failures);
                    prop_assert!(retry_in <= p.max);
                    prop_assert!(!next.may_create(now) || retry_in.is_zero());
                    if next.rounds > boots.rounds {
                        // The store keeps whole milliseconds: half a ceiling of an odd number
                        // of them is shown a fraction short.
                        let half = p.base.min(p.max) / 2;
                        prop_assert!(retry_in >= half.saturating_sub(Duration::from_millis(1)));
                        prop_assert!(!next.may_create(now));
                    }
                    boots = next;
                }
                Fact::Online { after_ms } => {
                    now = now.saturating_add(Duration::from_millis(after_ms));
                    let (next, shown) = boots.online();
                    prop_assert_eq!(next, Boots::default());
                    prop_assert_eq!(shown == Shown::Unchanged, boots.failures == 0);
                    boots = next;
                }
                Fact::Retry { after_ms } => {
                    now = now.saturating_add(Duration::from_millis(after_ms));
                    let next = boots.retry_now(now);
                    prop_assert!(next.may_create(now));
                    prop_assert_eq!((next.failures, next.rounds), (boots.failures, boots.rounds));
                    boots = next;
                }
            }
        }
    }

    /// A scale set whose every boot fails (each found failed some time after its create)
    /// creates no more runners in a span than the back-off allows: the waits between creates
    /// add up to at least half of each round's ceiling.
    #[test]
    fn with_every_boot_failing_the_creates_in_a_span_are_bounded(
        boot_ms in proptest::collection::vec(0u64..30_000, 1..40),
        randoms in proptest::collection::vec(0.0f64..1.0, 40),
        step_ms in 1u64..2_000,
    ) {
        let p = policy();
        let mut boots = Boots::default();
        let mut now = at(0);
        let mut creates: Vec<Timestamp> = Vec::new();
        // No wait is longer than `max`: a driver that wakes more often than that finds it
        // over (and a rule that never lets it create fails here, not by hanging the test).
        let most_wakes = p.max.as_millis() / u128::from(step_ms) + 1;
        for (i, boot) in boot_ms.iter().enumerate() {
            // The driver wakes every `step_ms` and creates as soon as it may.
            let mut wakes = 0u128;
            while !boots.may_create(now) {
                wakes += 1;
                prop_assert!(wakes <= most_wakes, "still waiting after {wakes} wakes");
                now = now.saturating_add(Duration::from_millis(step_ms));
            }
            creates.push(now);
            now = now.saturating_add(Duration::from_millis(*boot));
            boots = boots.failed(&p, now, randoms[i]).0;
        }
        let span = until(creates[0], *creates.last().expect("a create"));
        let count = u32::try_from(creates.len()).expect("few creates");
        prop_assert!(span >= least_span(&p, count), "{count} creates in {span:?}");
    }
}
