//! The capture transport: messages kept in memory, rendered exactly as they would go on
//! the wire, for tests to read back and assert on.

use std::sync::Mutex;

use mail_parser::{MessageParser, PartType};

use crate::render::Rendered;

/// One email the capture transport took: its envelope and its RFC 5322 bytes. Read it
/// decoded with [`subject`](SentEmail::subject), [`text`](SentEmail::text) and
/// [`html`](SentEmail::html); its `Debug` (what a failed `assert!(…, "{email:?}")`
/// prints) shows those decoded, not the encoded bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct SentEmail {
    /// The outbox message id it was sent for.
    pub outbox_id: String,
    /// The `Message-ID` header value, `<ulid@domain>`.
    pub message_id: String,
    /// The envelope sender (MAIL FROM).
    pub from: String,
    /// The envelope recipients (RCPT TO): to, cc and bcc, after any test redirect.
    pub to: Vec<String>,
    /// The message as it would be sent (CRLF line ends, no `Bcc` header).
    pub data: Vec<u8>,
    /// True when the test-mode redirect rewrote the recipients.
    pub redirected: bool,
}

impl SentEmail {
    /// The value of header `name` (case-insensitive; folded lines joined), if present. An
    /// encoded word (`=?utf-8?…?=`) is returned as written.
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers()
            .into_iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    }

    /// Every header, in order, as (name, value) with folded lines joined.
    pub fn headers(&self) -> Vec<(String, String)> {
        let text = String::from_utf8_lossy(&self.data);
        let head = text.split("\r\n\r\n").next().unwrap_or_default();
        let mut headers: Vec<(String, String)> = Vec::new();
        for line in head.split("\r\n") {
            if line.starts_with([' ', '\t']) {
                if let Some((_, value)) = headers.last_mut() {
                    value.push(' ');
                    value.push_str(line.trim());
                }
            } else if let Some((name, value)) = line.split_once(':') {
                headers.push((name.trim().to_owned(), value.trim().to_owned()));
            }
        }
        headers
    }

    /// True when the envelope names `address` (ASCII case-insensitive).
    pub fn is_to(&self, address: &str) -> bool {
        self.to.iter().any(|a| a.eq_ignore_ascii_case(address))
    }

    /// The `Subject`, decoded (an encoded word such as `=?utf-8?b?…?=` becomes its text).
    pub fn subject(&self) -> Option<String> {
        let parsed = MessageParser::default().parse(&self.data)?;
        parsed.subject().map(str::to_owned)
    }

    /// The plain-text body, decoded (base64 or quoted-printable undone); `None` when the
    /// email has no text/plain part.
    pub fn text(&self) -> Option<String> {
        let parsed = MessageParser::default().parse(&self.data)?;
        match &parsed.text_part(0)?.body {
            PartType::Text(text) => Some(text.to_string()),
            _ => None,
        }
    }

    /// The HTML body, decoded; `None` when the email has no text/html part.
    pub fn html(&self) -> Option<String> {
        let parsed = MessageParser::default().parse(&self.data)?;
        match &parsed.html_part(0)?.body {
            PartType::Html(html) => Some(html.to_string()),
            _ => None,
        }
    }

    /// One line for a failure message: recipients, decoded subject and the start of the
    /// decoded text.
    pub(crate) fn summary(&self) -> String {
        let mut text = self.text().or_else(|| self.html()).unwrap_or_default();
        if text.chars().count() > 80 {
            text = text.chars().take(80).collect::<String>() + "…";
        }
        format!(
            "to {:?}, subject {:?}, text {:?}",
            self.to,
            self.subject().unwrap_or_default(),
            text
        )
    }
}

impl std::fmt::Debug for SentEmail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentEmail")
            .field("outbox_id", &self.outbox_id)
            .field("message_id", &self.message_id)
            .field("from", &self.from)
            .field("to", &self.to)
            .field("redirected", &self.redirected)
            .field("subject", &self.subject())
            .field("text", &self.text())
            .field("html", &self.html())
            .field("headers", &self.headers())
            .field("data", &format_args!("<{} bytes>", self.data.len()))
            .finish()
    }
}

/// The emails a capture mailer took, in order.
#[derive(Debug, Default)]
pub(crate) struct Captured(Mutex<Vec<SentEmail>>);

impl Captured {
    pub(crate) fn push(&self, outbox_id: &str, message: &Rendered) {
        let sent = SentEmail {
            outbox_id: outbox_id.to_owned(),
            message_id: message.message_id.clone(),
            from: message.from.to_string(),
            to: message.recipients.iter().map(|a| a.to_string()).collect(),
            data: message.bytes.clone(),
            redirected: message.redirected,
        };
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(sent);
    }

    pub(crate) fn all(&self) -> Vec<SentEmail> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}
