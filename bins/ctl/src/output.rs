//! What a command prints: pretty JSON (`--output json`, the API's own bodies, for scripts) or
//! tables for people. Tables wrap to the terminal's width (or `COLUMNS`); colour is used only
//! when stdout is a terminal (`--color auto`, the default), never under `NO_COLOR` or
//! `TERM=dumb`, and always under `--color always`.

use std::collections::BTreeMap;
use std::io::IsTerminal as _;

use clap::ValueEnum;
use comfy_table::{Attribute, Cell, Color, ContentArrangement, Table, presets};
use serde::Serialize;

/// How results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// Tables and key/value lists for people.
    Table,
    /// The API's JSON, pretty-printed, for scripts.
    Json,
}

/// When to colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ColorChoice {
    /// Only when stdout is a terminal (and NO_COLOR is unset, TERM is not dumb).
    Auto,
    /// Always (e.g. through `less -R`).
    Always,
    /// Never.
    Never,
}

/// The printer a command writes through.
#[derive(Debug, Clone)]
pub(crate) struct Output {
    pub(crate) format: Format,
    colour: bool,
    width: Option<u16>,
}

/// How a value reads in a coloured cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tone {
    /// Healthy, done.
    Good,
    /// In progress or needs a look.
    Warn,
    /// Refused, failed.
    Bad,
    /// No opinion.
    Plain,
}

impl Output {
    /// Decides colour and width from the choice, stdout and the environment map.
    pub(crate) fn new(format: Format, color: ColorChoice, env: &BTreeMap<String, String>) -> Self {
        let tty = std::io::stdout().is_terminal();
        let colour = match color {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                tty && env.get("NO_COLOR").is_none_or(String::is_empty)
                    && env.get("TERM").is_none_or(|t| t != "dumb")
            }
        };
        // COLUMNS (when exported) wins, so a script or test can ask for a width; else the
        // terminal's; else none: piped output is not wrapped, one record per line.
        let width = env
            .get("COLUMNS")
            .and_then(|c| c.trim().parse::<u16>().ok())
            .filter(|w| *w >= 20)
            .or_else(|| {
                tty.then(|| Table::new().width())
                    .flatten()
                    .filter(|w| *w > 0)
            });
        Self {
            format,
            colour,
            width,
        }
    }

    /// A printer with fixed choices (unit tests).
    #[cfg(test)]
    pub(crate) fn fixed(format: Format, colour: bool, width: Option<u16>) -> Self {
        Self {
            format,
            colour,
            width,
        }
    }

    /// Pretty JSON of a value, with a final newline.
    pub(crate) fn json<T: Serialize + ?Sized>(value: &T) -> String {
        let mut text = serde_json::to_string_pretty(value)
            .unwrap_or_else(|e| format!("{{\"error\": \"cannot print JSON: {e}\"}}"));
        text.push('\n');
        text
    }

    fn table_base(&self) -> Table {
        let mut table = Table::new();
        table
            .load_style(presets::NOTHING)
            .set_content_arrangement(ContentArrangement::Dynamic);
        if self.colour {
            table.enforce_styling();
        } else {
            table.force_no_tty();
        }
        if let Some(width) = self.width {
            table.set_width(width);
        }
        table
    }

    /// A table with a header row; an empty list prints `empty` instead.
    pub(crate) fn table(&self, headers: &[&str], rows: Vec<Vec<Cell>>, empty: &str) -> String {
        if rows.is_empty() {
            return format!("{empty}\n");
        }
        let mut table = self.table_base();
        table.set_header(headers.iter().map(|h| {
            let cell = Cell::new(h);
            if self.colour {
                cell.add_attribute(Attribute::Bold)
            } else {
                cell
            }
        }));
        for row in rows {
            table.add_row(row);
        }
        finish(&mut table)
    }

    /// `key  value` lines (one record, as `show` prints it); long values wrap in their column.
    pub(crate) fn details(&self, pairs: Vec<(&str, Cell)>) -> String {
        let mut table = self.table_base();
        for (key, value) in pairs {
            let key = Cell::new(format!("{key}:"));
            let key = if self.colour {
                key.add_attribute(Attribute::Bold)
            } else {
                key
            };
            table.add_row(vec![key, value]);
        }
        finish(&mut table)
    }

    /// A cell coloured by tone (colour only applies when the printer colours).
    pub(crate) fn toned(&self, text: impl ToString, tone: Tone) -> Cell {
        let cell = Cell::new(text.to_string());
        match tone {
            Tone::Good => cell.fg(Color::Green),
            Tone::Warn => cell.fg(Color::Yellow),
            Tone::Bad => cell.fg(Color::Red),
            Tone::Plain => cell,
        }
    }

    /// A paragraph under a table (a reason, a summary), wrapped to the width like the
    /// tables, coloured by tone.
    pub(crate) fn note(&self, text: &str, tone: Tone) -> String {
        let mut table = self.table_base();
        table.add_row(vec![self.toned(text, tone)]);
        finish(&mut table)
    }
}

/// Columns are separated by two blanks and nothing else (as `kubectl get` prints); lines end
/// without trailing blanks, so copied output is clean.
fn finish(table: &mut Table) -> String {
    for column in table.column_iter_mut() {
        column.set_padding((0, 2));
    }
    let mut text = String::new();
    for line in table.lines() {
        text.push_str(line.trim_end());
        text.push('\n');
    }
    text
}

/// The first 8 characters of a UUID: what tables show (commands accept any unique prefix).
pub(crate) fn short_id(id: &uuid::Uuid) -> String {
    id.simple().to_string()[..8].to_owned()
}

/// An RFC 3339 time as `YYYY-MM-DD HH:MM` (tables); other text is shown as it is.
pub(crate) fn short_time(text: &str) -> String {
    match (text.get(..10), text.get(11..16)) {
        (Some(date), Some(time)) if text.as_bytes().get(10) == Some(&b'T') => {
            format!("{date} {time}")
        }
        _ => text.to_owned(),
    }
}

#[cfg(test)]
mod tests;
