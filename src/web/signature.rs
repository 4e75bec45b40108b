//! Error signatures: what dead letters that failed for the same reason have in common,
//! so that they can be grouped, requeued and purged together.
//!
//! For an email (`outbox.email`) the signature is the SMTP reply code, its enhanced
//! status code if any, and the refused recipient's domain (`550 5.1.1 @bad.example`);
//! for anything else it is the error's first line with numbers, ids and quoted values
//! replaced (`order # not found`), at most 120 characters.

use std::sync::LazyLock;

use regex::Regex;

/// The type tag of `outbox_smtp::Email`.
pub(crate) const EMAIL_TYPE: &str = "outbox.email";

/// The signature of a dead letter's error.
pub(crate) fn signature(type_tag: &str, payload: &[u8], error: &str) -> String {
    if type_tag == EMAIL_TYPE {
        if let Some(s) = smtp_signature(payload, error) {
            return s;
        }
    }
    generic(error)
}

/// `CODE [X.Y.Z] @domain` from an SMTP error: the first refused recipient's reply, or
/// the server's reply to the message with the first recipient's domain from the payload.
fn smtp_signature(payload: &[u8], error: &str) -> Option<String> {
    static RECIPIENT: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"[^\s:;<>]+@([A-Za-z0-9.\-\[\]]+): ([245]\d\d)(?: ([245]\.\d{1,3}\.\d{1,3}))?")
            .expect("valid regex")
    });
    static REPLY: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\b([245]\d\d)(?:[ -]([245]\.\d{1,3}\.\d{1,3}))?\b").expect("valid regex")
    });
    let code = |c: &str, enhanced: Option<regex::Match<'_>>| match enhanced {
        Some(e) => format!("{c} {}", e.as_str()),
        None => c.to_string(),
    };
    if let Some(m) = RECIPIENT.captures(error) {
        return Some(format!(
            "{} @{}",
            code(&m[2], m.get(3)),
            m[1].to_ascii_lowercase()
        ));
    }
    let m = REPLY.captures(error)?;
    let domain = first_recipient_domain(payload).unwrap_or_else(|| "?".into());
    Some(format!("{} @{domain}", code(&m[1], m.get(2))))
}

/// The domain of the email's first recipient, read from the JSON payload.
fn first_recipient_domain(payload: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(payload).ok()?;
    ["to", "cc", "bcc"].iter().find_map(|field| {
        let address = v.get(field)?.get(0)?.get("address")?.as_str()?;
        let (_, domain) = address.rsplit_once('@')?;
        Some(domain.to_ascii_lowercase())
    })
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

    #[test]
    fn refused_recipients_give_code_and_domain() {
        let error = "the SMTP server refused every recipient: bob@Bad.Example: 550 5.1.1 \
                     User unknown; not retried; fix the cause, then requeue it";
        assert_eq!(
            signature(EMAIL_TYPE, b"{}", error),
            "550 5.1.1 @bad.example"
        );
    }

    #[test]
    fn message_replies_take_the_domain_from_the_payload() {
        let payload = br#"{"from":{"address":"a@shop.example"},"to":[{"address":"x@mx.example"}]}"#;
        let error = "the SMTP server replied 554 5.7.1 Spam detected at end of DATA; not retried";
        assert_eq!(
            signature(EMAIL_TYPE, payload, error),
            "554 5.7.1 @mx.example"
        );
        assert_eq!(
            signature(
                EMAIL_TYPE,
                payload,
                "the SMTP server replied 552 Too big at DATA"
            ),
            "552 @mx.example"
        );
    }

    #[test]
    fn other_errors_are_normalised() {
        let a = signature(
            "shop.order",
            b"{}",
            "order 1234 not found in shop 'north'\nmore",
        );
        let b = signature("shop.order", b"{}", "order 98 not found in shop 'south'");
        assert_eq!(a, "order # not found in shop \"…\"");
        assert_eq!(a, b);
        assert_eq!(
            signature(
                "x",
                b"{}",
                "message 01JAB3C4D5E6F7G8H9JKMNPQRS failed: 3f2a9c1d"
            ),
            "message {id} failed: {id}"
        );
        // An email error without an SMTP reply falls back to the generic form.
        assert_eq!(
            signature(EMAIL_TYPE, b"{}", "the email is invalid: to[0]: no @"),
            "the email is invalid: to[#]: no @"
        );
    }
}
