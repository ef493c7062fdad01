//! The short reason a scale set shows in the overview's table and in its groups: the reason
//! code's one-line sentence ([`ReasonCode::summary`]), never the full text (a provider's
//! 400-character error is shown once, on the detail page). The code is read from what the
//! store keeps typed: the refusal, the provider's failure, or the newest event whose text is the
//! state's reason (the event and the state are written in one commit). Pure.

use std::collections::BTreeMap;

use scaleset_store::{Event, ReasonCode, ScaleSet, ScaleSetState};

/// A scale set's reason in one line, and the code it came from (`None` when none is known:
/// an older row, or a state no event explains).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Short {
    pub(crate) code: Option<ReasonCode>,
    pub(crate) text: String,
}

/// The longest a reason without a code is shown in a table cell, in characters.
const FALLBACK_CHARS: usize = 80;

/// The short reason of `set`, given its newest events (newest first; may be empty).
pub(crate) fn short(set: &ScaleSet, events: &[Event]) -> Short {
    let provider_failing = || Short {
        code: Some(ReasonCode::ProviderFailing),
        text: format!("provider {} failing", set.spec.provider()),
    };
    let of = |code: ReasonCode| match code {
        ReasonCode::ProviderFailing => provider_failing(),
        code => Short {
            code: Some(code),
            text: beside_badge(code).to_owned(),
        },
    };
    if let Some(refusal) = set.refusal.as_ref().filter(|_| set.state.is_refusal()) {
        return of(ReasonCode::of_refusal(refusal));
    }
    let from_event = events
        .iter()
        .find(|e| !set.state_reason.is_empty() && e.reason == set.state_reason)
        .map(|e| e.code)
        .filter(|code| *code != ReasonCode::Unspecified);
    // The same precedence as the store's attention rule: a state that needs attention is the
    // reason; a provider's failure is the reason of a set whose state is fine.
    let failing = set.provider_error.is_some();
    match (set.state.needs_attention(), from_event) {
        (true, Some(code)) => return of(code),
        (true, None) if failing => return provider_failing(),
        (true, None) => match set.state {
            ScaleSetState::ForeignSession => return of(ReasonCode::SessionHeld),
            ScaleSetState::Dormant => return of(ReasonCode::Dormant),
            _ => {}
        },
        (false, _) if failing => return provider_failing(),
        (false, Some(code)) => return of(code),
        (false, None) => {}
    }
    if set.state_reason.is_empty() {
        return Short {
            code: None,
            text: set.state.as_str().replace('_', " "),
        };
    }
    Short {
        code: None,
        text: clipped(&set.state_reason),
    }
}

/// A code's sentence as it reads beside the state badge: the badge already says `ready`, so
/// a ready code's sentence does not say it again (an event list, with no badge, keeps
/// [`ReasonCode::summary`]).
fn beside_badge(code: ReasonCode) -> &'static str {
    match code {
        ReasonCode::ScaleSetCreated => "created on GitHub by this controller",
        ReasonCode::ScaleSetAdopted => "adopted",
        ReasonCode::ScaleSetConfirmed => "the scale set we knew is still there",
        ReasonCode::SessionOpened => "listening for jobs",
        code => code.summary(),
    }
}

/// `text` cut at a word before [`FALLBACK_CHARS`] characters, with `…` when cut.
fn clipped(text: &str) -> String {
    if text.chars().count() <= FALLBACK_CHARS {
        return text.to_owned();
    }
    let cut: String = text.chars().take(FALLBACK_CHARS).collect();
    let at_word = cut.rfind(' ').filter(|&i| i > FALLBACK_CHARS / 2);
    format!("{}…", &cut[..at_word.unwrap_or(cut.len())])
}

/// Scale sets that need attention for the same reason, two or more (`12 scale sets: provider
/// lxd failing`), with their names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Group {
    pub(crate) text: String,
    pub(crate) names: Vec<String>,
}

/// The groups of `failing` (each scale set's name with its short reason), largest first; a
/// reason only one set has is no group.
pub(crate) fn groups(failing: impl IntoIterator<Item = (String, Short)>) -> Vec<Group> {
    let mut by_text: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, short) in failing {
        by_text.entry(short.text).or_default().push(name);
    }
    let mut groups: Vec<Group> = by_text
        .into_iter()
        .filter(|(_, names)| names.len() > 1)
        .map(|(text, names)| Group { text, names })
        .collect();
    groups.sort_by(|a, b| b.names.len().cmp(&a.names.len()).then(a.text.cmp(&b.text)));
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn short(text: &str) -> Short {
        Short {
            code: None,
            text: text.to_owned(),
        }
    }

    #[test]
    fn sets_failing_for_the_same_reason_are_one_group_largest_first() {
        let failing = (0..12)
            .map(|i| (format!("lxd-{i}"), short("provider lxd failing")))
            .chain((0..3).map(|i| {
                (
                    format!("gpu-{i}"),
                    short("refused: another controller owns it"),
                )
            }))
            .chain([(
                "alone".to_owned(),
                short("its runner group does not exist on GitHub"),
            )]);
        let groups = groups(failing);
        assert_eq!(
            groups
                .iter()
                .map(|g| (g.text.as_str(), g.names.len()))
                .collect::<Vec<_>>(),
            [
                ("provider lxd failing", 12),
                ("refused: another controller owns it", 3)
            ],
            "a reason one set has is no group"
        );
    }

    #[test]
    fn a_ready_reason_does_not_repeat_the_badge() {
        for code in ReasonCode::ALL {
            if code.kind() == scaleset_store::EventKind::Ready || *code == ReasonCode::SessionOpened
            {
                let text = beside_badge(*code);
                assert!(!text.starts_with("ready"), "{code:?}: {text}");
                assert!(
                    code.summary().ends_with(text),
                    "{code:?}: the same sentence"
                );
            }
        }
        assert_eq!(
            beside_badge(ReasonCode::ForeignOwner),
            ReasonCode::ForeignOwner.summary()
        );
    }

    #[test]
    fn a_reason_without_a_code_is_cut_at_a_word() {
        let long = "word ".repeat(80);
        let cut = clipped(&long);
        assert!(cut.ends_with('…'), "{cut}");
        assert!(cut.chars().count() <= FALLBACK_CHARS + 1, "{cut}");
        assert_eq!(clipped("short"), "short");
    }
}
