//! Turning an [`Email`] into the bytes and envelope that are sent (lettre's builder).
//!
//! Failure modes: an email that does not pass [`Email`]'s checks (a row written by other
//! code or by an older version) is refused with the field and reason; rendering never
//! panics.

use lettre::message::{
    header::{ContentType, HeaderName, HeaderValue},
    Attachment as LettreAttachment, Message, MultiPart, SinglePart,
};
use outbox_core::{InvalidMessage, MessageId, OutboxMessage};

use crate::{
    queued::RawEmail, redirect::Redirected, Email, Mailbox, TestRedirect, Unsubscribe,
    UnsubscribeToken,
};

/// Domain of Message-IDs when neither the configuration nor the sender gives a usable one.
const FALLBACK_DOMAIN: &str = "outbox.localhost";

/// What is sent: the envelope, the bytes, and the Message-ID they carry.
#[derive(Debug)]
pub(crate) struct Rendered {
    /// The `Message-ID` header value, `<ulid@domain>`.
    pub(crate) message_id: String,
    /// The envelope sender (MAIL FROM).
    pub(crate) from: lettre::Address,
    /// The envelope recipients (RCPT TO): to, cc and bcc.
    pub(crate) recipients: Vec<lettre::Address>,
    /// The formatted message (CRLF line ends, without `Bcc` unless asked to keep it).
    pub(crate) bytes: Vec<u8>,
    /// True when the test-mode redirect rewrote the recipients.
    pub(crate) redirected: bool,
    /// The domain of the `From` header (what DKIM aligns with), when it has one.
    #[cfg_attr(not(feature = "dkim"), allow(dead_code))]
    pub(crate) from_domain: Option<String>,
}

/// How to render: where Message-IDs live, the redirect, and whether `Bcc` stays visible
/// (it does in `.eml` files, never on the wire).
pub(crate) struct RenderOptions<'a> {
    pub(crate) message_id_domain: Option<&'a str>,
    pub(crate) redirect: Option<&'a TestRedirect>,
    pub(crate) keep_bcc: bool,
    /// Where list emails' unsubscribe headers point.
    pub(crate) unsubscribe: Option<&'a Unsubscribe>,
}

/// The stable Message-ID of the message with outbox id `id`.
pub(crate) fn message_id(id: &MessageId, email: &Email, configured: Option<&str>) -> String {
    message_id_at(id, email.from.domain(), configured)
}

/// The stable Message-ID of outbox message `id`, in the configured domain, else the
/// sender's (`sender_domain`), else a fallback.
fn message_id_at(id: &MessageId, sender_domain: Option<&str>, configured: Option<&str>) -> String {
    let usable = |d: &&str| {
        !d.is_empty()
            && d.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'))
    };
    let domain = configured
        .filter(usable)
        .or_else(|| sender_domain.filter(usable))
        .unwrap_or(FALLBACK_DOMAIN);
    format!("<{}@{domain}>", id.as_str())
}

/// Prepares raw email `raw`, sent as outbox message `id`: its own `Message-ID` is kept
/// (one from `id` is put in front when it has none), and `redirect`, when given, rewrites
/// the envelope recipients and puts the original ones in an `X-Outbox-Original-To`
/// header in front.
pub(crate) fn render_raw(
    raw: &RawEmail,
    id: &MessageId,
    configured: Option<&str>,
    redirect: Option<&TestRedirect>,
) -> Result<Rendered, InvalidMessage> {
    let address = |field: String, a: &str| {
        a.parse::<lettre::Address>()
            .map_err(|e| InvalidMessage::new(field, format!("{a:?} is not an address: {e}")))
    };
    let from = match &raw.from {
        Some(a) => address("from".into(), a)?,
        None => {
            return Err(InvalidMessage::new(
                "from",
                "the envelope has no sender (the null sender `<>` is not sent by the outbox)",
            ))
        }
    };
    let mut recipients = raw
        .to
        .iter()
        .enumerate()
        .map(|(i, a)| address(format!("to[{i}]"), a))
        .collect::<Result<Vec<_>, _>>()?;
    let mut front = String::new();
    let message_id = match header_value(&raw.data, "Message-ID") {
        Some(existing) => existing,
        None => {
            let made = message_id_at(id, Some(from.domain()), configured);
            front.push_str(&format!("Message-ID: {made}\r\n"));
            made
        }
    };
    if let Some(r) = redirect {
        let originals: Vec<String> = recipients.iter().map(|a| a.to_string()).collect();
        front.push_str(&format!(
            "X-Outbox-Original-To: {}\r\n",
            originals.join(", ")
        ));
        let mut rewritten = r.rewrite_addresses(&originals);
        // Two recipients may become one (`a@x` and `a@y` at the test domain).
        let mut seen = std::collections::HashSet::new();
        rewritten.retain(|a| seen.insert(a.to_ascii_lowercase()));
        recipients = rewritten
            .iter()
            .enumerate()
            .map(|(i, a)| address(format!("to[{i}] (redirected)"), a))
            .collect::<Result<Vec<_>, _>>()?;
    }
    let mut bytes = front.into_bytes();
    bytes.extend_from_slice(&raw.data);
    Ok(Rendered {
        message_id,
        from,
        recipients,
        bytes,
        redirected: redirect.is_some(),
        from_domain: header_value(&raw.data, "From").and_then(|v| address_domain(&v)),
    })
}

/// The domain of the (first) address in header value `value`: `Name <a@b.example>` or
/// `a@b.example`.
fn address_domain(value: &str) -> Option<String> {
    let address = match (value.find('<'), value.find('>')) {
        (Some(open), Some(close)) if open < close => &value[open + 1..close],
        _ => value.split(',').next().unwrap_or(value),
    };
    let (_, domain) = address.trim().rsplit_once('@')?;
    let domain = domain.trim();
    (!domain.is_empty()).then(|| domain.to_ascii_lowercase())
}

/// The value of header `name` (case-insensitive) in the header section of `data`, folded
/// lines joined.
pub(crate) fn header_value(data: &[u8], name: &str) -> Option<String> {
    let end = data
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(data.len());
    let head = String::from_utf8_lossy(&data[..end]);
    let mut found: Option<String> = None;
    for line in head.split("\r\n") {
        let folded = line.starts_with([' ', '\t']);
        match (&mut found, folded) {
            (Some(value), true) => {
                value.push(' ');
                value.push_str(line.trim());
            }
            (Some(_), false) => break,
            // The rest of another header.
            (None, true) => {}
            (None, false) => {
                if let Some((n, v)) = line.split_once(':') {
                    if n.eq_ignore_ascii_case(name) {
                        found = Some(v.trim().to_owned());
                    }
                }
            }
        }
    }
    found.filter(|v| !v.is_empty())
}

/// Renders `email`, sent as outbox message `id` of type `type_tag`.
pub(crate) fn render(
    email: &Email,
    id: &MessageId,
    type_tag: &str,
    options: &RenderOptions<'_>,
) -> Result<Rendered, InvalidMessage> {
    email.validate()?;
    let redirected = options
        .redirect
        .filter(|r| r.applies(email, type_tag))
        .map(|r| r.apply(email));
    let (to, cc, bcc) = match &redirected {
        Some(r) => (&r.to, &r.cc, &r.bcc),
        None => (&email.to, &email.cc, &email.bcc),
    };
    let lettre_box =
        |field: &str, m: &Mailbox| m.to_lettre().map_err(|why| InvalidMessage::new(field, why));
    let message_id = message_id(id, email, options.message_id_domain);
    let mut builder = Message::builder()
        .from(lettre_box("from", &email.from)?)
        .subject(email.subject.clone())
        .message_id(Some(message_id.clone()));
    for m in to {
        builder = builder.to(lettre_box("to", m)?);
    }
    for m in cc {
        builder = builder.cc(lettre_box("cc", m)?);
    }
    for m in bcc {
        builder = builder.bcc(lettre_box("bcc", m)?);
    }
    if let Some(m) = &email.reply_to {
        builder = builder.reply_to(lettre_box("reply_to", m)?);
    }
    if options.keep_bcc {
        builder = builder.keep_bcc();
    }
    for (field, name, value) in extra_headers(email, id, options, redirected.as_ref()) {
        builder = builder.raw_header(header(&field, &name, &value)?);
    }
    let message = match body(email)? {
        Content::Single(part) => builder.singlepart(part),
        Content::Multi(parts) => builder.multipart(parts),
    }
    .map_err(|e| InvalidMessage::new("to", format!("cannot build the message: {e}")))?;
    Ok(Rendered {
        message_id,
        from: message
            .envelope()
            .from()
            .cloned()
            .ok_or_else(|| InvalidMessage::new("from", "the sender is missing"))?,
        recipients: message.envelope().to().to_vec(),
        bytes: message.formatted(),
        redirected: redirected.is_some(),
        from_domain: email.from.domain().map(str::to_ascii_lowercase),
    })
}

/// The headers an email carries besides the addresses, subject, Message-ID and MIME
/// ones, in order, as `(field, name, value)` (`field` names the email's field at fault):
/// its own headers, the list's one-click unsubscribe and `List-Id`, and the test-mode
/// redirect's record of the original recipients. The SMTP path and the providers' APIs
/// send the same ones.
fn extra_headers(
    email: &Email,
    id: &MessageId,
    options: &RenderOptions<'_>,
    redirected: Option<&Redirected>,
) -> Vec<(String, String, String)> {
    let mut headers: Vec<(String, String, String)> = email
        .headers
        .iter()
        .map(|h| {
            (
                format!("headers[{:?}]", h.name),
                h.name.clone(),
                h.value.clone(),
            )
        })
        .collect();
    let list_header = |name: &str, value: String| ("list".to_owned(), name.to_owned(), value);
    if let (Some(list), Some(unsubscribe)) = (&email.list, options.unsubscribe) {
        // The token names the recipient the list mail is for (before any test redirect).
        let recipient = email.recipients().next().map(|m| m.address.as_str());
        let token = UnsubscribeToken::new(id.as_str(), list, recipient.unwrap_or_default());
        let (list_unsubscribe, post) = unsubscribe.headers(&token);
        headers.push(list_header("List-Unsubscribe", list_unsubscribe));
        headers.push(list_header("List-Unsubscribe-Post", post));
    }
    if let (Some(list), Some(domain)) = (&email.list, email.from.domain()) {
        // RFC 2919: `<list.domain>`, a dot-atom (a list name's ':' becomes '.').
        let id = format!(
            "<{}.{}>",
            list.replace(':', "."),
            domain.to_ascii_lowercase()
        );
        headers.push(list_header("List-Id", id));
    }
    for (name, value) in redirected.iter().flat_map(|r| &r.original_headers) {
        headers.push((name.to_string(), name.to_string(), value.clone()));
    }
    headers
}

/// An email prepared for a provider's HTTP API: the recipients after the test-mode
/// redirect, and every header the SMTP path would add (the `Message-ID` first).
#[cfg(feature = "providers")]
pub(crate) struct ApiEmail {
    pub(crate) message_id: String,
    pub(crate) to: Vec<Mailbox>,
    pub(crate) cc: Vec<Mailbox>,
    pub(crate) bcc: Vec<Mailbox>,
    /// `(name, value)`, `Message-ID` first.
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) redirected: bool,
}

#[cfg(feature = "providers")]
impl ApiEmail {
    /// Every envelope recipient.
    pub(crate) fn recipients(&self) -> impl Iterator<Item = &Mailbox> {
        self.to.iter().chain(&self.cc).chain(&self.bcc)
    }
}

/// Prepares `email`, sent as outbox message `id` of type `type_tag`, for a provider's API:
/// checked as for SMTP, redirected, with the same headers.
#[cfg(feature = "providers")]
pub(crate) fn prepare_api(
    email: &Email,
    id: &MessageId,
    type_tag: &str,
    options: &RenderOptions<'_>,
) -> Result<ApiEmail, InvalidMessage> {
    email.validate()?;
    let redirected = options
        .redirect
        .filter(|r| r.applies(email, type_tag))
        .map(|r| r.apply(email));
    let was_redirected = redirected.is_some();
    let message_id = message_id(id, email, options.message_id_domain);
    let mut headers = vec![("Message-ID".to_owned(), message_id.clone())];
    for (field, name, value) in extra_headers(email, id, options, redirected.as_ref()) {
        // The same check the SMTP path makes (a header name lettre would refuse).
        header(&field, &name, &value)?;
        headers.push((name, value));
    }
    let (to, cc, bcc) = match redirected {
        Some(r) => (r.to, r.cc, r.bcc),
        None => (email.to.clone(), email.cc.clone(), email.bcc.clone()),
    };
    for (field, list) in [("to", &to), ("cc", &cc), ("bcc", &bcc)] {
        for m in list {
            m.to_lettre()
                .map_err(|why| InvalidMessage::new(field, why))?;
        }
    }
    Ok(ApiEmail {
        message_id,
        to,
        cc,
        bcc,
        headers,
        redirected: was_redirected,
    })
}

fn header(field: &str, name: &str, value: &str) -> Result<HeaderValue, InvalidMessage> {
    let name = HeaderName::new_from_ascii(name.to_owned())
        .map_err(|_| InvalidMessage::new(field, "the header name is not valid"))?;
    Ok(HeaderValue::new(name, value.to_owned()))
}

/// The MIME tree: text and/or HTML (as alternatives), then the attachments, if any.
fn body(email: &Email) -> Result<Content, InvalidMessage> {
    let text = email.text.as_deref().map(line_ends);
    let html = email.html.as_deref().map(line_ends);
    let content = match (text, html) {
        (Some(text), Some(html)) => Content::Multi(MultiPart::alternative_plain_html(text, html)),
        (Some(text), None) => Content::Single(SinglePart::plain(text)),
        (None, Some(html)) => Content::Single(SinglePart::html(html)),
        (None, None) => return Err(InvalidMessage::new("text", "the email has no body")),
    };
    if email.attachments.is_empty() {
        return Ok(content);
    }
    let mut mixed = match content {
        Content::Multi(alternative) => MultiPart::mixed().multipart(alternative),
        Content::Single(part) => MultiPart::mixed().singlepart(part),
    };
    for (i, a) in email.attachments.iter().enumerate() {
        let content_type = ContentType::parse(a.content_type.trim()).map_err(|_| {
            InvalidMessage::new(format!("attachments[{i}]"), "the content type is not valid")
        })?;
        let file = LettreAttachment::new(a.file_name.trim().to_owned());
        mixed = mixed.singlepart(file.body(a.bytes.clone(), content_type));
    }
    Ok(Content::Multi(mixed))
}

/// `body` with every line end written as LF, which lettre sends as CRLF.
///
/// lettre turns a bare LF into CRLF but leaves a bare CR (`\r` not followed by `\n`) as
/// it is in a 7bit or 8bit body, and it would reach the SMTP data: RFC 5321 forbids bare
/// CR in the data, and a server that takes `\r.\r` or `\n.\r\n` for the end of the
/// data can be made to run commands smuggled in a body (SMTP smuggling). A lone CR is
/// therefore taken as the line break it was meant as (old Mac line ends).
fn line_ends(body: &str) -> String {
    body.replace("\r\n", "\n").replace('\r', "\n")
}

/// A message body: one part, or several.
enum Content {
    Single(SinglePart),
    Multi(MultiPart),
}

#[cfg(test)]
mod tests {
    use super::{address_domain, header_value};

    #[test]
    fn the_from_domain_is_read_from_either_address_form() {
        assert_eq!(
            address_domain("Ann <ann@News.Example.com>").as_deref(),
            Some("news.example.com")
        );
        assert_eq!(
            address_domain("ann@example.org").as_deref(),
            Some("example.org")
        );
        assert_eq!(
            address_domain("\"a@b\" <c@d.example>").as_deref(),
            Some("d.example")
        );
        assert_eq!(address_domain("undisclosed"), None);
    }

    #[test]
    fn a_header_is_found_by_name_with_its_folded_lines() {
        let data = b"Subject: a long\r\n subject\r\nX-Note: see\r\n Message-ID: <not@this>\r\nmessage-id:  <id@example.com>\r\n\r\nMessage-ID: <body@x>\r\n";
        assert_eq!(
            header_value(data, "Message-ID").as_deref(),
            Some("<id@example.com>")
        );
        assert_eq!(
            header_value(data, "subject").as_deref(),
            Some("a long subject")
        );
        assert_eq!(header_value(data, "X-Missing"), None);
        assert_eq!(
            header_value(b"Message-ID:\r\n\r\nbody", "Message-ID"),
            None,
            "empty"
        );
        assert_eq!(
            header_value(b"Subject: only a head", "Subject").as_deref(),
            Some("only a head")
        );
    }
}
