//! Bounces that arrive as mail: a delivery status notification (RFC 3464,
//! `multipart/report; report-type=delivery-status`) read from its raw bytes, one event per
//! recipient block of its `message/delivery-status` part, matched to our message by the
//! `Message-ID` in the returned headers.

use sha2::{Digest, Sha256};

use super::{EventKind, ProviderEvent, WebhookError};

/// The events of a raw DSN message: a `failed` action with a `5.x.x` status is a hard
/// bounce, with `4.x.x` a soft bounce; `delayed` is a deferral; `delivered` and `relayed`
/// are deliveries.
pub fn events(raw: &[u8]) -> Result<Vec<ProviderEvent>, WebhookError> {
    let text = String::from_utf8_lossy(raw).replace("\r\n", "\n");
    let lines = unfold(&text);
    let start = lines
        .iter()
        .position(|l| {
            header(l, "content-type").is_some_and(|v| {
                v.to_ascii_lowercase()
                    .starts_with("message/delivery-status")
            })
        })
        .ok_or_else(|| {
            WebhookError::Body(
                "not a delivery status notification: no message/delivery-status part".into(),
            )
        })?;
    // The part's own headers end at the first blank line; its fields run to the boundary.
    let body_at = lines[start..]
        .iter()
        .position(|l| l.is_empty())
        .map_or(lines.len(), |i| start + i + 1);
    let end = lines[body_at..]
        .iter()
        .position(|l| l.starts_with("--"))
        .map_or(lines.len(), |i| body_at + i);
    let original_id = lines[end..]
        .iter()
        .find_map(|l| header(l, "message-id"))
        .map(str::to_owned);
    let dsn_id = lines[..start]
        .iter()
        .take_while(|l| !l.is_empty())
        .find_map(|l| header(l, "message-id"))
        .map(str::to_owned)
        .unwrap_or_else(|| {
            Sha256::digest(raw)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect()
        });
    let mut events = Vec::new();
    // Blocks are separated by blank lines; the first is about the message, the rest about
    // one recipient each.
    for block in lines[body_at..end].split(|l| l.is_empty()) {
        let field = |name: &str| block.iter().find_map(|l| header(l, name));
        let Some(recipient) = field("final-recipient").or(field("original-recipient")) else {
            continue;
        };
        let recipient = recipient
            .split_once(';')
            .map_or(recipient, |(_, a)| a)
            .trim();
        let action = field("action").unwrap_or_default().to_ascii_lowercase();
        let status = field("status").unwrap_or_default().trim().to_owned();
        let kind = match action.as_str() {
            "failed" if status.starts_with('5') => EventKind::HardBounce,
            "failed" => EventKind::SoftBounce,
            "delayed" => EventKind::Deferred,
            "delivered" | "relayed" => EventKind::Delivered,
            _ => continue,
        };
        let detail = [Some(status.as_str()), field("diagnostic-code")]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" ");
        let id = format!("{dsn_id}:{}", recipient.to_lowercase());
        events.push(
            ProviderEvent::new("dsn", id, kind, recipient, original_id.as_deref()).detail(detail),
        );
    }
    if events.is_empty() {
        return Err(WebhookError::Body(
            "the delivery status part names no recipient".into(),
        ));
    }
    Ok(events)
}

/// Header lines with their continuations joined.
fn unfold(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for line in text.split('\n') {
        match lines.last_mut() {
            Some(last) if !last.is_empty() && line.starts_with([' ', '\t']) => {
                last.push(' ');
                last.push_str(line.trim());
            }
            _ => lines.push(line.trim_end().to_owned()),
        }
    }
    lines
}

/// The value of `line` when it is header `name` (case-insensitive).
fn header<'l>(line: &'l str, name: &str) -> Option<&'l str> {
    let (n, v) = line.split_once(':')?;
    n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DSN: &str = "From: MAILER-DAEMON@mx.example.net\r\nTo: news@example.com\r\nMessage-ID: <dsn-1@mx.example.net>\r\nSubject: Undelivered Mail Returned to Sender\r\nContent-Type: multipart/report; report-type=delivery-status; boundary=\"b1\"\r\n\r\n--b1\r\nContent-Type: text/plain\r\n\r\nYour message could not be delivered.\r\n\r\n--b1\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; mx.example.net\r\nArrival-Date: Tue, 24 Nov 2026 10:00:00 +0000\r\n\r\nFinal-Recipient: rfc822; Gone@Example.net\r\nAction: failed\r\nStatus: 5.1.1\r\nDiagnostic-Code: smtp; 550 5.1.1 <gone@example.net>:\r\n  Recipient address rejected: User unknown\r\n\r\nFinal-Recipient: rfc822; full@example.net\r\nAction: delayed\r\nStatus: 4.2.2\r\n\r\n--b1\r\nContent-Type: text/rfc822-headers\r\n\r\nFrom: news@example.com\r\nMessage-ID: <01JD5Z3Q4V8W6X7Y8Z9A0B1C2D@example.com>\r\nSubject: November\r\n\r\n--b1--\r\n";

    #[test]
    fn a_dsn_gives_one_event_per_recipient_matched_to_our_message() {
        let events = events(DSN.as_bytes()).unwrap();
        assert_eq!(events.len(), 2);
        let gone = &events[0];
        assert_eq!(
            (gone.kind, gone.recipient.as_str()),
            (EventKind::HardBounce, "gone@example.net")
        );
        assert_eq!(
            gone.outbox_id.as_deref(),
            Some("01JD5Z3Q4V8W6X7Y8Z9A0B1C2D")
        );
        assert!(
            gone.detail.starts_with("5.1.1 smtp; 550 5.1.1"),
            "{}",
            gone.detail
        );
        assert!(gone.detail.ends_with("User unknown"), "{}", gone.detail);
        assert_eq!(gone.id, "<dsn-1@mx.example.net>:gone@example.net");
        assert_eq!(events[1].kind, EventKind::Deferred);
        assert!(super::events(b"Subject: hi\r\n\r\nhello").is_err());
    }
}
