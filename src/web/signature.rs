//! Error signatures: what dead letters that failed for the same reason have in common,
//! so that they can be grouped, requeued and purged together.
//!
//! A kind's view may say it ([`KindView::signature`](crate::kind::KindView::signature):
//! for an email the reply code, its enhanced status code and the refused recipient's domain,
//! `550 5.1.1 @bad.example`); otherwise it is the error's first line with numbers, ids and
//! quoted values replaced (`order # not found`), at most 120 characters.

use std::sync::LazyLock;

use regex::Regex;

use crate::kind::Views;

/// The signature of a dead letter's error: its kind's, else the generic one.
pub(crate) fn signature(views: &Views, type_tag: &str, payload: &[u8], error: &str) -> String {
    views
        .get(type_tag)
        .and_then(|v| v.signature(payload, error))
        .unwrap_or_else(|| generic(error))
}

/// The first line with the parts that differ between messages replaced.
fn generic(error: &str) -> String {
    static IDS: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"(?x)
              [0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}  # UUID
            | \b[0-9A-HJKMNP-TV-Z]{26}\b                                                  # ULID
            | \b[0-9a-fA-F]*[0-9][0-9a-fA-F]*[a-fA-F][0-9a-fA-F]*\b                        # hex with digits and letters
            ",
        )
        .expect("valid regex")
    });
    static QUOTED: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r#""[^"]*"|'[^']*'|`[^`]*`"#).expect("valid regex"));
    static NUMBERS: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\d+(?:[.,]\d+)*").expect("valid regex"));
    let line = error.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let line = IDS.replace_all(line.trim(), "{id}");
    let line = QUOTED.replace_all(&line, "\"…\"");
    let line = NUMBERS.replace_all(&line, "#");
    let mut s: String = line.chars().take(120).collect();
    if line.chars().count() > 120 {
        s.push('…');
    }
    if s.is_empty() {
        "(no error text)".into()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::{KindView, PayloadView};

    /// A kind whose signature is the error's first word, when it starts with `E`.
    struct Coded;

    impl KindView for Coded {
        fn show(&self, _: &crate::MessageId, _: &[u8]) -> Option<PayloadView> {
            None
        }

        fn signature(&self, _: &[u8], error: &str) -> Option<String> {
            error
                .split_whitespace()
                .next()
                .filter(|w| w.starts_with('E'))
                .map(str::to_owned)
        }
    }

    #[test]
    fn a_kinds_signature_comes_first_and_the_generic_one_after() {
        let views = Views::new().with("demo.coded", Coded);
        assert_eq!(signature(&views, "demo.coded", b"{}", "E42 busy 7"), "E42");
        assert_eq!(signature(&views, "demo.coded", b"{}", "busy 7"), "busy #");
        assert_eq!(signature(&views, "other", b"{}", "E42 busy 7"), "E# busy #");
    }

    #[test]
    fn other_errors_are_normalised() {
        let views = Views::new();
        let a = signature(
            &views,
            "shop.order",
            b"{}",
            "order 1234 not found in shop 'north'\nmore",
        );
        let b = signature(
            &views,
            "shop.order",
            b"{}",
            "order 98 not found in shop 'south'",
        );
        assert_eq!(a, "order # not found in shop \"…\"");
        assert_eq!(a, b);
        assert_eq!(
            signature(
                &views,
                "x",
                b"{}",
                "message 01JAB3C4D5E6F7G8H9JKMNPQRS failed: 3f2a9c1d"
            ),
            "message {id} failed: {id}"
        );
        assert_eq!(
            signature(&views, "x", b"{}", "the email is invalid: to[0]: no @"),
            "the email is invalid: to[#]: no @"
        );
    }
}
