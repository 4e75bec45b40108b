//! Postmark's webhooks: one JSON record per request (`RecordType` `Delivery`, `Bounce`,
//! `SpamComplaint` or `SubscriptionChange`). Postmark signs nothing; it sends the
//! credentials of the webhook's URL as HTTP basic authentication, which the endpoint checks
//! ([`check_basic_auth`]).

use base64::Engine as _;
use serde_json::Value;

use super::{same, sns::parse_time, EventKind, ProviderEvent, WebhookError};

/// Bounce types that mean the address is gone for good. (`Blocked`, an ISP blocking the
/// sender, says nothing about the address: a soft bounce.)
const HARD: [&str; 3] = ["HardBounce", "BadEmailAddress", "ManuallyDeactivated"];

/// Checks an `Authorization` header against `user` and `password` (in constant time).
pub fn check_basic_auth(
    header: Option<&str>,
    user: &str,
    password: &str,
) -> Result<(), WebhookError> {
    let expected = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    let given = header
        .and_then(|h| {
            h.strip_prefix("Basic ")
                .or_else(|| h.strip_prefix("basic "))
        })
        .map(str::trim)
        .unwrap_or_default();
    if same(given.as_bytes(), expected.as_bytes()) {
        Ok(())
    } else {
        Err(WebhookError::Signature(
            "missing or wrong basic authentication".into(),
        ))
    }
}

/// The event of one record, if it concerns the recipient's address.
pub fn event(body: &[u8]) -> Result<Option<ProviderEvent>, WebhookError> {
    let r: Value = serde_json::from_slice(body)
        .map_err(|e| WebhookError::Body(format!("not a Postmark webhook record: {e}")))?;
    let record = r["RecordType"].as_str().unwrap_or_default();
    let (kind, recipient, at) = match record {
        "Delivery" => (
            EventKind::Delivered,
            r["Recipient"].as_str(),
            r["DeliveredAt"].as_str(),
        ),
        "Bounce" => {
            let hard = HARD.contains(&r["Type"].as_str().unwrap_or_default());
            let kind = if hard {
                EventKind::HardBounce
            } else {
                EventKind::SoftBounce
            };
            (kind, r["Email"].as_str(), r["BouncedAt"].as_str())
        }
        "SpamComplaint" => (
            EventKind::Complaint,
            r["Email"].as_str(),
            r["BouncedAt"].as_str(),
        ),
        "SubscriptionChange" if r["SuppressSending"].as_bool() == Some(true) => (
            EventKind::Unsubscribe,
            r["Recipient"].as_str(),
            r["ChangedAt"].as_str(),
        ),
        _ => return Ok(None),
    };
    let Some(recipient) = recipient else {
        return Err(WebhookError::Body(format!(
            "a {record} record without a recipient"
        )));
    };
    let id = match &r["ID"] {
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        // No id (a suppression change made at Postmark): its time makes it one event.
        _ => format!(
            "{}:{record}:{recipient}:{}",
            r["MessageID"].as_str().unwrap_or_default(),
            at.unwrap_or_default()
        ),
    };
    // Postmark reports its own MessageID; ours travels in the metadata when the
    // application puts it there (`outbox_message_id`).
    let ours = r["Metadata"]["outbox_message_id"].as_str();
    let detail = [
        r["Type"].as_str(),
        r["Description"].as_str(),
        r["Details"].as_str(),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" ");
    Ok(Some(
        ProviderEvent::new("postmark", id, kind, recipient, ours)
            .provider_message_id(r["MessageID"].as_str())
            .detail(detail)
            .at(at.and_then(parse_time)),
    ))
}
