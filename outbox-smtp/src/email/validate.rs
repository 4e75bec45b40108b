//! The checks behind `Email::validate`: each failure names the field it is about.

use outbox_core::InvalidMessage;

use super::{address::check_header_text, Email, Mailbox, MAX_ATTACHMENT_BYTES};

/// Header names an application may not set as extra headers: the mailer writes them
/// itself (compared without regard to case; `X-Outbox-*` is reserved too).
pub(crate) const RESERVED_HEADERS: &[&str] = &[
    "from",
    "sender",
    "to",
    "cc",
    "bcc",
    "reply-to",
    "subject",
    "message-id",
    "date",
    "mime-version",
    "content-type",
    "content-transfer-encoding",
    "content-disposition",
    "return-path",
    "dkim-signature",
];

/// Longest header name lettre accepts.
const MAX_HEADER_NAME_LEN: usize = 76;

/// Checks every field of `email`; the first problem found is returned.
pub(crate) fn email(email: &Email) -> Result<(), InvalidMessage> {
    mailbox("from", &email.from)?;
    for (list, boxes) in [("to", &email.to), ("cc", &email.cc), ("bcc", &email.bcc)] {
        for (i, m) in boxes.iter().enumerate() {
            mailbox(&format!("{list}[{i}]"), m)?;
        }
    }
    if email.recipients().next().is_none() {
        return Err(InvalidMessage::new(
            "to",
            "the email has no recipient; add at least one with .to(), .cc() or .bcc()",
        ));
    }
    if let Some(m) = &email.reply_to {
        mailbox("reply_to", m)?;
    }
    check_header_text(&email.subject)
        .map_err(|why| InvalidMessage::new("subject", format!("the subject {why}")))?;
    if email.text.is_none() && email.html.is_none() {
        return Err(InvalidMessage::new(
            "text",
            "the email has no body; set .text() and/or .html()",
        ));
    }
    for header in &email.headers {
        let field = format!("headers[{:?}]", header.name);
        header_name(&header.name).map_err(|why| InvalidMessage::new(&field, why))?;
        check_header_text(&header.value)
            .map_err(|why| InvalidMessage::new(&field, format!("the value {why}")))?;
    }
    if let Some(list) = &email.list {
        list_email(email, list)?;
    }
    let mut total = 0usize;
    for (i, a) in email.attachments.iter().enumerate() {
        let field = format!("attachments[{i}]");
        a.check().map_err(|why| InvalidMessage::new(&field, why))?;
        total = total.saturating_add(a.bytes.len());
        if total > MAX_ATTACHMENT_BYTES {
            return Err(InvalidMessage::new(
                field,
                format!(
                    "the attachments add up to {total} bytes with {:?} ({} bytes); the limit is \
                     {MAX_ATTACHMENT_BYTES} bytes in all, because they are stored in the queue; \
                     send a link to large files instead",
                    a.file_name,
                    a.bytes.len()
                ),
            ));
        }
    }
    Ok(())
}

/// Longest list name, in bytes.
const MAX_LIST_NAME_LEN: usize = 100;

/// A list email: a usable list name, one recipient (its unsubscribe token names them) and
/// no unsubscribe headers of its own (the mailer writes them).
fn list_email(email: &Email, list: &str) -> Result<(), InvalidMessage> {
    let name_ok = !list.is_empty()
        && list.len() <= MAX_LIST_NAME_LEN
        && list
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'));
    if !name_ok {
        return Err(InvalidMessage::new(
            "list",
            format!(
                "{list:?} is not a list name: use 1 to {MAX_LIST_NAME_LEN} ASCII letters, \
                 digits, '_', '-', '.' or ':'"
            ),
        ));
    }
    let recipients = email.recipients().count();
    if recipients != 1 {
        return Err(InvalidMessage::new(
            "to",
            format!(
                "a list email goes to exactly one recipient (its unsubscribe link names them); \
                 this one has {recipients}: enqueue one email per recipient"
            ),
        ));
    }
    if let Some(h) = email.headers.iter().find(|h| {
        ["list-unsubscribe", "list-unsubscribe-post", "list-id"]
            .iter()
            .any(|n| h.name.eq_ignore_ascii_case(n))
    }) {
        return Err(InvalidMessage::new(
            format!("headers[{:?}]", h.name),
            "a list email gets its List-Id and unsubscribe headers from the mailer \
             (MailerConfig::unsubscribe); remove this one",
        ));
    }
    Ok(())
}

fn mailbox(field: &str, m: &Mailbox) -> Result<(), InvalidMessage> {
    m.check().map_err(|why| InvalidMessage::new(field, why))
}

/// A header name must be printable ASCII without `:` or spaces, and not one the mailer
/// writes itself.
fn header_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("the header name is empty".into());
    }
    if name.len() > MAX_HEADER_NAME_LEN {
        return Err(format!(
            "the header name is {} bytes long; the limit is {MAX_HEADER_NAME_LEN}",
            name.len()
        ));
    }
    if let Some(c) = name.chars().find(|c| !c.is_ascii_graphic() || *c == ':') {
        return Err(format!(
            "the header name contains {c:?}; use ASCII letters, digits and '-' (X-Campaign)"
        ));
    }
    let lower = name.to_ascii_lowercase();
    if RESERVED_HEADERS.contains(&lower.as_str()) || lower.starts_with("x-outbox-") {
        return Err(format!(
            "{name} is written by the mailer itself; set it with the builder method of the \
             same name (from, to, subject, ...) instead of as an extra header"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Attachment, Header};

    fn valid() -> Email {
        Email::builder()
            .from("a@example.com")
            .to("b@example.com")
            .subject("hi")
            .text("body")
            .build()
            .unwrap()
    }

    fn field_of(e: &Email) -> String {
        email(e).unwrap_err().field
    }

    #[test]
    fn each_bad_field_is_named() {
        let mut e = valid();
        e.to.push(Mailbox::from("not an address"));
        assert_eq!(field_of(&e), "to[1]");

        let mut e = valid();
        e.to.clear();
        assert_eq!(field_of(&e), "to");

        let mut e = valid();
        e.subject = "hi\r\nBcc: x@evil.example".into();
        assert_eq!(field_of(&e), "subject");

        let mut e = valid();
        e.headers.push(Header {
            name: "X-Foo".into(),
            value: "a\nb".into(),
        });
        assert_eq!(field_of(&e), "headers[\"X-Foo\"]");

        let mut e = valid();
        e.headers.push(Header {
            name: "Content-Type".into(),
            value: "text/evil".into(),
        });
        assert_eq!(field_of(&e), "headers[\"Content-Type\"]");

        let mut e = valid();
        e.attachments.push(Attachment::new(
            "big.bin",
            "application/octet-stream",
            vec![0; MAX_ATTACHMENT_BYTES + 1],
        ));
        let err = email(&e).unwrap_err();
        assert_eq!(err.field, "attachments[0]");
        assert!(err.reason.contains("limit"), "{}", err.reason);

        let mut e = valid();
        e.attachments
            .push(Attachment::new("a.txt", "not a type", b"x".to_vec()));
        assert_eq!(field_of(&e), "attachments[0]");

        let mut e = valid();
        e.list = Some("news letter".into());
        assert_eq!(field_of(&e), "list");
        e.list = Some("news".into());
        assert!(email(&e).is_ok());
        e.cc.push(Mailbox::from("c@example.com"));
        assert!(email(&e)
            .unwrap_err()
            .reason
            .contains("exactly one recipient"));
        e.cc.clear();
        e.headers.push(Header {
            name: "List-Unsubscribe".into(),
            value: "<https://x.example/u>".into(),
        });
        assert_eq!(field_of(&e), "headers[\"List-Unsubscribe\"]");
    }
}
