//! Tables fit the width they are given, colour codes appear only when colouring, and the
//! short forms of ids and times.

use super::*;

fn rows(out: &Output) -> Vec<Vec<Cell>> {
    (0..3)
        .map(|i| {
            vec![
                Cell::new(format!("scale-set-with-a-long-name-{i}")),
                out.toned("refused", Tone::Bad),
                Cell::new(
                    "ForeignOwner: another controller's owner label is on this scale set; \
                     rename ours or delete theirs",
                ),
            ]
        })
        .collect()
}

#[test]
fn tables_fit_the_width() {
    for width in [60u16, 80, 120] {
        let out = Output::fixed(Format::Table, false, Some(width));
        let text = out.table(&["NAME", "STATE", "REASON"], rows(&out), "none");
        for line in text.lines() {
            assert!(
                line.chars().count() <= usize::from(width),
                "{width}: {line:?} is {} wide",
                line.chars().count()
            );
        }
        assert!(text.contains("NAME") && text.contains("refused"), "{text}");
        assert!(!text.contains('\x1b'), "no colour codes: {text:?}");
    }
}

#[test]
fn colour_only_when_asked() {
    let out = Output::fixed(Format::Table, true, Some(80));
    let text = out.table(&["NAME", "STATE", "REASON"], rows(&out), "none");
    assert!(text.contains("\x1b["), "colour codes expected: {text:?}");
    assert!(out.note("ok", Tone::Good).contains("\x1b["));
    let plain = Output::fixed(Format::Table, false, Some(80));
    assert_eq!(plain.note("ok", Tone::Good), "ok\n");
}

#[test]
fn empty_tables_say_so() {
    let out = Output::fixed(Format::Table, false, None);
    assert_eq!(
        out.table(&["NAME"], Vec::new(), "no scale sets"),
        "no scale sets\n"
    );
}

#[test]
fn no_trailing_blanks() {
    let out = Output::fixed(Format::Table, false, None);
    let text = out.details(vec![
        ("name", Cell::new("x")),
        ("state", Cell::new("ready")),
    ]);
    assert_eq!(text, "name:   x\nstate:  ready\n", "{text:?}");
}

#[test]
fn short_forms() {
    let id: uuid::Uuid = "0b3c5d7e-1111-4222-8333-944455556666".parse().unwrap();
    assert_eq!(short_id(&id), "0b3c5d7e");
    assert_eq!(short_time("2026-12-03T06:40:12.123Z"), "2026-12-03 06:40");
    assert_eq!(short_time("yesterday"), "yesterday");
    assert_eq!(short_time("2026-12-03"), "2026-12-03");
}

#[test]
fn notes_wrap_to_the_width() {
    let out = Output::fixed(Format::Table, false, Some(40));
    let text = out.note(&"word ".repeat(30), Tone::Bad);
    assert!(text.lines().count() > 3, "{text}");
    assert!(text.lines().all(|l| l.chars().count() <= 40), "{text}");
    let unwrapped = Output::fixed(Format::Table, false, None).note(&"word ".repeat(30), Tone::Bad);
    assert_eq!(unwrapped.lines().count(), 1, "{unwrapped}");
}
