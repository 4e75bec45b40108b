//! How results look: plain tables for people, JSON for scripts.

use std::time::{Duration, SystemTime};

use comfy_table::{presets, CellAlignment, ContentArrangement, Table};
use serde_json::Value;

/// A borderless table with `header`; numeric columns (by index) align right.
pub(crate) fn table(header: &[&str], numeric: &[usize]) -> Table {
    let mut t = Table::new();
    t.load_preset(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(header.iter().copied());
    for (i, c) in t.column_iter_mut().enumerate() {
        c.set_padding((0, 2));
        if numeric.contains(&i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}

/// Prints a table on stdout without trailing blanks.
pub(crate) fn print_table(t: &Table) {
    for line in t.lines() {
        println!("{}", line.trim_end());
    }
}

/// A time as RFC 3339 UTC, to the second.
pub(crate) fn time(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()
}

/// How long ago `t` was, to the second ("0s" for the future).
pub(crate) fn age(t: SystemTime, now: SystemTime) -> Duration {
    now.duration_since(t)
        .map(|d| Duration::from_secs(d.as_secs()))
        .unwrap_or_default()
}

/// A duration cut to the second ([`crate::units::duration`]): `1h 2m 3s`, `30d`.
pub(crate) fn duration(d: Duration) -> String {
    crate::units::duration(Duration::from_secs(d.as_secs()))
}

/// `s` (stored text: an SMTP reply, an error, a payload) safe to print on a terminal: each
/// control character (escape sequences, carriage returns, bells, C1 controls) and each
/// bidirectional override is written as `\u{…}` (a tab as `\t`), so a reply cannot move
/// the cursor, rewrite what was printed or change the terminal's title. Line breaks are
/// kept when `keep_newlines`.
pub(crate) fn escape_control(s: &str, keep_newlines: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        let bidi = matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
        match c {
            '\n' if keep_newlines => out.push('\n'),
            '\t' => out.push_str("\\t"),
            c if c.is_control() || bidi => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// Prints stored text (an error, an SMTP reply) indented two spaces a line, its control
/// characters escaped ([`escape_control`]).
pub(crate) fn print_stored_lines(text: &str) {
    for line in escape_control(text, true).lines() {
        println!("  {line}");
    }
}

/// `s` cut to `max` characters on one line, with `…` when cut.
pub(crate) fn one_line(s: &str, max: usize) -> String {
    let flat: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.chars().count() <= max {
        return flat;
    }
    let mut cut: String = flat.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// A stored payload as JSON, or as a string if it is not JSON.
pub(crate) fn payload_value(payload: &[u8]) -> Value {
    serde_json::from_slice(payload)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(payload).into_owned()))
}

/// A stored payload pretty-printed (JSON indented; other bytes as text).
/// Prints a message's failed attempts (if any) and its payload, as `show` commands do.
pub(crate) fn print_attempts_and_payload(log: &[crate::FailedAttempt], payload: &[u8]) {
    if !log.is_empty() {
        println!("attempts' errors:");
        for a in log {
            println!(
                "  #{} {}: {}",
                a.attempt,
                time(a.at),
                escape_control(&one_line(&a.error, 200), false)
            );
        }
    }
    println!("payload:");
    print_stored_lines(&payload_pretty(payload));
}

pub(crate) fn payload_pretty(payload: &[u8]) -> String {
    match serde_json::from_slice::<Value>(payload) {
        Ok(v) => serde_json::to_string_pretty(&v).unwrap_or_else(|_| v.to_string()),
        Err(_) => String::from_utf8_lossy(payload).into_owned(),
    }
}

/// Prints `value` as pretty JSON on stdout.
pub(crate) fn print_json(value: &Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(
            escape_control("550 \u{1b}[31mred\r\u{7}\u{9b}2J\u{202e}x\ty\nz", true),
            "550 \\u{1b}[31mred\\u{d}\\u{7}\\u{9b}2J\\u{202e}x\\ty\nz"
        );
        assert_eq!(escape_control("a\nb", false), "a\\u{a}b");
        assert_eq!(escape_control("plain ünïcode", true), "plain ünïcode");
    }

    #[test]
    fn one_line_cuts_and_flattens() {
        assert_eq!(one_line("a\nb", 10), "a b");
        assert_eq!(one_line("abcdef", 4), "abc…");
    }

    #[test]
    fn payloads_pretty_print_or_fall_back_to_text() {
        assert_eq!(payload_pretty(br#"{"a":1}"#), "{\n  \"a\": 1\n}");
        assert_eq!(payload_pretty(b"not json"), "not json");
        assert_eq!(payload_value(b"x"), Value::String("x".into()));
    }
}
