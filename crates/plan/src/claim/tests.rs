use std::collections::{BTreeMap, BTreeSet, HashSet};

use proptest::prelude::*;

use super::*;

const OURS: &str = "c_5";

fn asked(name: &str) -> Asked<'_> {
    Asked {
        name,
        pool_key: OURS,
    }
}

fn answer<'a>(name: &'a str, provider_id: &'a str, pool_id: Option<&'a str>) -> Answer<'a> {
    Answer {
        name,
        provider_id,
        pool_id,
    }
}

fn row<'a>(name: &'a str, provider_id: Option<&'a str>) -> Recorded<'a> {
    Recorded { name, provider_id }
}

fn none() -> HashSet<String> {
    HashSet::new()
}

/// Why `answer` to `asked` is refused, and whom it disowns.
fn refused(
    name: &str,
    answer: &Answer<'_>,
    rows: &[Recorded<'_>],
    before: &HashSet<String>,
) -> (Refusal, Vec<String>) {
    let refused = judge(&asked(name), answer, rows, before).expect_err("refused");
    (refused.reason, refused.disowns)
}

#[test]
fn an_answer_naming_what_was_asked_in_our_pool_with_a_fresh_id_is_ours() {
    let rows = [row("r-1", None), row("r-2", Some("i-2"))];
    let before = HashSet::from(["i-9".to_owned()]);
    assert_eq!(
        judge(&asked("r-1"), &answer("r-1", "i-1", None), &rows, &before),
        Ok(())
    );
    assert_eq!(
        judge(
            &asked("r-1"),
            &answer("r-1", "i-1", Some(OURS)),
            &rows,
            &none()
        ),
        Ok(()),
        "our own pool key reported"
    );
    // The asked row itself, already recorded with this id (an answer recorded again).
    let again = [row("r-1", Some("i-1"))];
    assert_eq!(
        judge(&asked("r-1"), &answer("r-1", "i-1", None), &again, &none()),
        Ok(())
    );
    // An id that is the asked name (a provider addressing instances by name).
    assert_eq!(
        judge(&asked("r-1"), &answer("r-1", "r-1", None), &rows, &none()),
        Ok(())
    );
}

#[test]
fn an_answer_naming_another_instance_is_refused() {
    let rows = [row("r-2", Some("i-2")), row("r-3", Some("i-1"))];
    let (reason, disowns) = refused("r-1", &answer("r-9", "i-1", Some(OURS)), &rows, &none());
    assert_eq!(
        reason,
        Refusal::OtherName {
            asked: "r-1".to_owned(),
            answered: "r-9".to_owned(),
        }
    );
    assert_eq!(disowns, ["r-3"], "the row recorded with the refused id");
    assert_eq!(reason.code(), "answered_other_name");
    assert_eq!(
        reason.to_string(),
        "asked to create \"r-1\", the provider answered with an instance named \"r-9\""
    );
}

#[test]
fn an_answer_reporting_another_pool_is_refused() {
    let (reason, disowns) = refused(
        "r-1",
        &answer("r-1", "victim-foreign-1", Some("11111111_7")),
        &[row("r-1", Some("victim-foreign-1"))],
        &none(),
    );
    assert_eq!(
        reason,
        Refusal::OtherPool {
            ours: OURS.to_owned(),
            answered: "11111111_7".to_owned(),
        }
    );
    assert!(
        disowns.is_empty(),
        "the asked row disowns nothing of itself"
    );
    assert_eq!(reason.code(), "answered_other_pool");
    assert_eq!(
        reason.to_string(),
        "the provider answered with an instance of pool \"11111111_7\", not ours (\"c_5\")"
    );
}

#[test]
fn an_answer_whose_id_another_row_claims_is_refused_and_disowns_that_row() {
    let rows = [row("r-1", None), row("r-2", Some("victim-foreign-1"))];
    let (reason, disowns) = refused(
        "r-1",
        &answer("r-1", "victim-foreign-1", None),
        &rows,
        &none(),
    );
    assert_eq!(
        reason,
        Refusal::IdClaimed {
            provider_id: "victim-foreign-1".to_owned(),
            by: "r-2".to_owned(),
        }
    );
    assert_eq!(disowns, ["r-2"]);
    assert_eq!(reason.code(), "answered_claimed_id");
    assert_eq!(
        reason.to_string(),
        "the provider answered with provider id \"victim-foreign-1\", which instance \"r-2\" \
         already claims"
    );
    // An id that is another row's name: that row is deleted by it (and keeps its own id).
    let named = [row("r-2", Some("i-2"))];
    let (reason, disowns) = refused("r-1", &answer("r-1", "r-2", None), &named, &none());
    assert_eq!(
        reason,
        Refusal::IdClaimed {
            provider_id: "r-2".to_owned(),
            by: "r-2".to_owned(),
        }
    );
    assert!(disowns.is_empty());
}

#[test]
fn an_id_that_came_with_a_refused_answer_is_refused_again() {
    let before = HashSet::from(["victim-foreign-1".to_owned()]);
    let (reason, disowns) = refused(
        "r-1",
        &answer("r-1", "victim-foreign-1", None),
        &[],
        &before,
    );
    assert_eq!(
        reason,
        Refusal::RefusedBefore {
            provider_id: "victim-foreign-1".to_owned()
        }
    );
    assert!(disowns.is_empty());
    assert_eq!(reason.code(), "answered_refused_id");
    assert_eq!(
        reason.to_string(),
        "the provider answered with provider id \"victim-foreign-1\", which came with an \
         answer refused before"
    );
}

#[test]
fn the_name_is_judged_before_the_pool_and_the_pool_before_the_id() {
    let rows = [row("r-2", Some("i-1"))];
    let before = HashSet::from(["i-1".to_owned()]);
    let all = refused("r-1", &answer("r-9", "i-1", Some("x_1")), &rows, &before);
    assert_eq!(all.0.code(), "answered_other_name");
    let pool = refused("r-1", &answer("r-1", "i-1", Some("x_1")), &rows, &before);
    assert_eq!(pool.0.code(), "answered_other_pool");
    let claimed = refused("r-1", &answer("r-1", "i-1", None), &rows, &before);
    assert_eq!(claimed.0.code(), "answered_claimed_id");
}

#[test]
fn a_delete_goes_by_the_recorded_id_while_undisputed_else_by_the_name() {
    let me = row("r-1", Some("i-1"));
    assert_eq!(delete_id(&me, &[], &none()), "i-1");
    assert_eq!(delete_id(&row("r-1", None), &[], &none()), "r-1");
    // The row itself among the claims, and rows claiming other ids.
    let claims = [me, row("r-2", Some("i-2")), row("i-3", None)];
    assert_eq!(delete_id(&me, &claims, &none()), "i-1");
    // Another row recorded with it, or named it.
    assert_eq!(
        delete_id(&me, &[me, row("r-2", Some("i-1"))], &none()),
        "r-1"
    );
    assert_eq!(delete_id(&me, &[row("i-1", None)], &none()), "r-1");
    // An id that came with a refused answer.
    let before = HashSet::from(["i-1".to_owned()]);
    assert_eq!(delete_id(&me, &[], &before), "r-1");
    assert_eq!(delete_id(&row("r-1", None), &[], &before), "r-1");
}

/// One answer in the property's world: for the `asked`-th runner, the provider answers
/// `name` (an index of the runners so far, or the one asked for), `id` and `pool`.
#[derive(Debug, Clone)]
struct Step {
    batch: bool,
    other_name: Option<usize>,
    id: IdChoice,
    pool: PoolChoice,
}

#[derive(Debug, Clone)]
enum IdChoice {
    Fixed(usize),
    /// The name of a runner asked before.
    NameOf(usize),
}

#[derive(Debug, Clone)]
enum PoolChoice {
    None,
    Ours,
    Foreign,
}

fn step() -> impl Strategy<Value = Step> {
    (
        any::<bool>(),
        proptest::option::weighted(0.2, 0usize..8),
        prop_oneof![
            (0usize..3).prop_map(IdChoice::Fixed),
            (0usize..8).prop_map(IdChoice::NameOf)
        ],
        prop_oneof![
            Just(PoolChoice::None),
            Just(PoolChoice::Ours),
            Just(PoolChoice::Foreign)
        ],
    )
        .prop_map(|(batch, other_name, id, pool)| Step {
            batch,
            other_name,
            id,
            pool,
        })
}

proptest! {
    /// Whatever a provider answers, no delete is ever sent with a provider id that was answered
    /// for another name, answered for two runners (recorded twice), answered under a pool key
    /// not ours, or that names another row; a delete by a runner's own name is always ours.
    #[test]
    fn no_delete_instance_for_a_provider_id_answered_for_another_name_twice_or_in_a_foreign_pool(
        steps in proptest::collection::vec(step(), 1..12),
    ) {
        let names: Vec<String> = (0..steps.len()).map(|i| format!("r-{i}")).collect();
        // The executor's rows: name -> recorded id.
        let mut rows: BTreeMap<String, Option<String>> = BTreeMap::new();
        let mut bad: BTreeSet<String> = BTreeSet::new();
        let mut answered_for: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut deletes: Vec<(String, String)> = Vec::new();
        let mut refused_ids: HashSet<String> = HashSet::new();
        // Batches: consecutive steps with `batch` set land together.
        let mut i = 0;
        while i < steps.len() {
            let mut end = i + 1;
            while end < steps.len() && steps[end].batch && end - i < 3 {
                end += 1;
            }
            let batch: Vec<(usize, String, String, Option<String>)> = (i..end)
                .map(|k| {
                    let s = &steps[k];
                    let name = match s.other_name {
                        Some(o) => format!("r-{o}"),
                        None => names[k].clone(),
                    };
                    let id = match s.id {
                        IdChoice::Fixed(0) => "victim-foreign-1".to_owned(),
                        IdChoice::Fixed(n) => format!("i-{n}"),
                        // Only runners asked for before this batch (names are random in
                        // the scaler: a provider cannot know one before it is asked).
                        IdChoice::NameOf(n) => names[n.min(i.saturating_sub(1))].clone(),
                    };
                    let pool = match s.pool {
                        PoolChoice::None => None,
                        PoolChoice::Ours => Some(OURS.to_owned()),
                        PoolChoice::Foreign => Some("11111111_7".to_owned()),
                    };
                    (k, name, id, pool)
                })
                .collect();
            for (k, name, id, pool) in &batch {
                rows.insert(names[*k].clone(), None);
                if name != &names[*k] || pool.as_deref().is_some_and(|p| p != OURS) {
                    bad.insert(id.clone());
                }
                answered_for.entry(id.clone()).or_default().insert(names[*k].clone());
            }
            // Ids that name a row present when the batch is judged.
            for (k, _, id, _) in &batch {
                if rows.contains_key(id) && &names[*k] != id {
                    bad.insert(id.clone());
                }
            }
            // The scaler: each answer judged against the rows and the batch's other answers.
            let mut verdicts = Vec::new();
            for (k, name, id, pool) in &batch {
                let mut recorded: Vec<Recorded<'_>> = rows
                    .iter()
                    .map(|(n, id)| Recorded { name: n, provider_id: id.as_deref() })
                    .collect();
                recorded.extend(
                    batch
                        .iter()
                        .filter(|(other, ..)| other != k)
                        .map(|(other, _, id, _)| Recorded {
                            name: &names[*other],
                            provider_id: Some(id),
                        }),
                );
                let verdict = judge(
                    &Asked { name: &names[*k], pool_key: OURS },
                    &Answer { name, provider_id: id, pool_id: pool.as_deref() },
                    &recorded,
                    &refused_ids,
                );
                verdicts.push((k, id.clone(), verdict));
            }
            for (k, id, verdict) in verdicts {
                let me = names[*k].clone();
                match verdict {
                    Ok(()) => {
                        rows.insert(me, Some(id));
                    }
                    Err(refused) => {
                        for by in &refused.disowns {
                            if let Some(recorded) = rows.get_mut(by) {
                                *recorded = Some(by.clone());
                            }
                        }
                        refused_ids.insert(id.clone());
                        // Removed as a failed create's: deleted by the name asked for.
                        rows.remove(&me);
                        let asked = Recorded { name: &me, provider_id: None };
                        deletes.push((me.clone(), delete_id(&asked, &[], &refused_ids).to_owned()));
                    }
                }
            }
            i = end;
        }
        let claims: Vec<Recorded<'_>> = rows
            .iter()
            .map(|(n, id)| Recorded { name: n, provider_id: id.as_deref() })
            .collect();
        for row in &claims {
            deletes.push((row.name.to_owned(), delete_id(row, &claims, &refused_ids).to_owned()));
        }
        for (name, sent) in &deletes {
            if sent == name {
                continue;
            }
            prop_assert!(!bad.contains(sent), "delete of {name} by unverified id {sent}: {deletes:?}");
            prop_assert!(
                answered_for.get(sent).is_some_and(|n| n.len() == 1 && n.contains(name)),
                "delete of {name} by {sent}, answered for {:?}",
                answered_for.get(sent)
            );
        }
    }
}
