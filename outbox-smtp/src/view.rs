//! The email kind's admin view: an `outbox.email` payload shown as the email it is
//! (headers, Message-ID, text body, HTML body), its failures grouped by the server's reply,
//! and its attempts' errors named as replies. The operator surfaces ask for it by type tag
//! ([`Views`](outbox_core::kind::Views)); the web admin registers it for `outbox.email`.

use std::sync::LazyLock;

use outbox_core::{
    kind::{Body, BodyFormat, Field, KindView, PayloadView},
    MessageId,
};
use regex::Regex;

use crate::{Email, Mailbox};

/// Shows `outbox.email` messages ([`Email`]).
#[derive(Debug, Clone, Default)]
pub struct EmailView {
    message_id_domain: Option<String>,
}

impl EmailView {
    /// The view, showing the Message-ID each email is sent with: on the domain
    /// `message_id_domain` when given (the mailer's setting of the same name), else on the
    /// sender's domain, as the mailer does.
    pub fn new(message_id_domain: Option<String>) -> Self {
        Self { message_id_domain }
    }
}

impl KindView for EmailView {
    fn show(&self, id: &MessageId, payload: &[u8]) -> Option<PayloadView> {
        let email: Email = serde_json::from_slice(payload).ok()?;
        let boxes = |list: &[Mailbox]| {
            list.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut fields = vec![
            Field::new(
                "Message-ID",
                email.message_id(id, self.message_id_domain.as_deref()),
            ),
            Field::new("From", email.from.to_string()),
        ];
        for (name, list) in [("To", &email.to), ("Cc", &email.cc), ("Bcc", &email.bcc)] {
            if !list.is_empty() {
                fields.push(Field::new(name, boxes(list)));
            }
        }
        if let Some(r) = &email.reply_to {
            fields.push(Field::new("Reply-To", r.to_string()));
        }
        fields.push(Field::new("Subject", email.subject.clone()));
        fields.extend(
            email
                .headers
                .iter()
                .map(|h| Field::new(h.name.clone(), h.value.clone())),
        );
        if !email.tags.is_empty() {
            fields.push(
                Field::new("Tags", format!("{} (never sent)", email.tags.join(", "))).muted(),
            );
        }
        for a in &email.attachments {
            fields.push(Field::new(
                "Attachment",
                format!(
                    "{} · {} · {} bytes",
                    a.file_name,
                    a.content_type,
                    a.bytes.len()
                ),
            ));
        }
        let mut bodies = Vec::new();
        if let Some(text) = email.text {
            bodies.push(Body {
                title: "Text body".into(),
                anchor: "text-body".into(),
                content: text,
                format: BodyFormat::Text,
            });
        }
        if let Some(html) = email.html {
            bodies.push(Body {
                title: "HTML body".into(),
                anchor: "html-body".into(),
                content: html,
                format: BodyFormat::Html,
            });
        }
        Some(PayloadView {
            title: "Email".into(),
            anchor: "email".into(),
            fields,
            bodies,
        })
    }

    /// `CODE [X.Y.Z] @domain` from an SMTP error: the first refused recipient's reply, or
    /// the server's reply to the message with the first recipient's domain from the payload;
    /// `None` for an error without a reply (the generic signature then).
    fn signature(&self, payload: &[u8], error: &str) -> Option<String> {
        reply_signature(payload, error)
    }

    fn attempts_label(&self) -> &str {
        "Error (the server's reply)"
    }
}

fn reply_signature(payload: &[u8], error: &str) -> Option<String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_recipients_give_code_and_domain() {
        let error = "the SMTP server refused every recipient: bob@Bad.Example: 550 5.1.1 \
                     User unknown; not retried; fix the cause, then requeue it";
        assert_eq!(
            EmailView::default().signature(b"{}", error).as_deref(),
            Some("550 5.1.1 @bad.example")
        );
    }

    #[test]
    fn message_replies_take_the_domain_from_the_payload() {
        let view = EmailView::default();
        let payload = br#"{"from":{"address":"a@shop.example"},"to":[{"address":"x@mx.example"}]}"#;
        let error = "the SMTP server replied 554 5.7.1 Spam detected at end of DATA; not retried";
        assert_eq!(
            view.signature(payload, error).as_deref(),
            Some("554 5.7.1 @mx.example")
        );
        assert_eq!(
            view.signature(payload, "the SMTP server replied 552 Too big at DATA")
                .as_deref(),
            Some("552 @mx.example")
        );
        assert_eq!(
            view.signature(b"{}", "the email is invalid: to[0]: no @"),
            None
        );
    }

    #[test]
    fn an_email_shows_its_headers_and_bodies_and_other_payloads_nothing() {
        let email = Email::builder()
            .from("Shop <shop@shop.example>")
            .to("ann@example.com")
            .subject("Your order")
            .text("Thanks")
            .html("<p>Thanks</p>")
            .build()
            .unwrap();
        let payload = serde_json::to_vec(&email).unwrap();
        let id = MessageId::from_string("01J0000000000000000000TEST");
        let view = EmailView::new(Some("mail.example".into()))
            .show(&id, &payload)
            .unwrap();
        assert_eq!(view.anchor, "email");
        let get = |name: &str| {
            view.fields
                .iter()
                .find(|f| f.name == name)
                .map(|f| f.value.clone())
        };
        assert_eq!(
            get("Message-ID").as_deref(),
            Some("<01J0000000000000000000TEST@mail.example>")
        );
        assert_eq!(get("Subject").as_deref(), Some("Your order"));
        assert_eq!(view.bodies.len(), 2);
        assert_eq!(view.bodies[1].format, BodyFormat::Html);
        assert!(EmailView::default().show(&id, b"{\"order\": 1}").is_none());
    }
}
