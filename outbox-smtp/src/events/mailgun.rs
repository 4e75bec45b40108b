//! Mailgun's webhooks: each body carries `signature.timestamp`, `signature.token` and
//! `signature.signature`, the hex HMAC-SHA256 of the timestamp followed by the token under
//! the account's webhook signing key. A timestamp more than [`MAX_AGE`] away from now is
//! refused; the caller refuses a token it has seen before (the web endpoint records them).

use std::time::{Duration, SystemTime};

use hmac::{Hmac, KeyInit, Mac};
use serde_json::Value;
use sha2::Sha256;

use super::{same, sns::parse_time_unix, EventKind, ProviderEvent, WebhookError};

/// How far a signed timestamp may be from now: Mailgun retries a webhook for about 8 hours,
/// so 9 hours; the web endpoint keeps the tokens it saw for [`TOKENS_KEPT`], longer than
/// that, so a token is refused as long as its timestamp is accepted.
pub const MAX_AGE: Duration = Duration::from_secs(9 * 3600);

/// How long the web endpoint remembers a used token.
pub const TOKENS_KEPT: Duration = Duration::from_secs(10 * 3600);

/// One Mailgun webhook body, its signature checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailgunPost {
    /// The signature's token: used once.
    pub token: String,
    /// The event, if it concerns the recipient's address.
    pub event: Option<ProviderEvent>,
}

/// Checks `body`'s signature with `signing_key` at `now` and reads its event.
pub fn verify(
    signing_key: &[u8],
    body: &[u8],
    now: SystemTime,
) -> Result<MailgunPost, WebhookError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| WebhookError::Body(format!("not a Mailgun webhook body: {e}")))?;
    let s = &v["signature"];
    let (Some(timestamp), Some(token), Some(signature)) = (
        s["timestamp"].as_str(),
        s["token"].as_str(),
        s["signature"].as_str(),
    ) else {
        return Err(WebhookError::Body(
            "the body has no signature.timestamp, token and signature".into(),
        ));
    };
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(signing_key)
        .map_err(|_| WebhookError::Body("the signing key is empty".into()))?;
    mac.update(timestamp.as_bytes());
    mac.update(token.as_bytes());
    let expected: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    if !same(
        expected.as_bytes(),
        signature.trim().to_ascii_lowercase().as_bytes(),
    ) {
        return Err(WebhookError::Signature(
            "the HMAC does not match the timestamp, the token and the key".into(),
        ));
    }
    let at = timestamp
        .parse::<i64>()
        .ok()
        .and_then(parse_time_unix)
        .ok_or_else(|| {
            WebhookError::Body(format!("the timestamp {timestamp:?} is not unix seconds"))
        })?;
    let skew = now
        .duration_since(at)
        .or_else(|e| Ok::<_, ()>(e.duration()))
        .unwrap_or_default();
    if skew > MAX_AGE {
        return Err(WebhookError::Refused(format!(
            "the signed timestamp is {} s away from now (at most {} s)",
            skew.as_secs(),
            MAX_AGE.as_secs()
        )));
    }
    Ok(MailgunPost {
        token: token.to_owned(),
        event: event(&v["event-data"]),
    })
}

fn event(e: &Value) -> Option<ProviderEvent> {
    let kind = match (e["event"].as_str()?, e["severity"].as_str()) {
        ("delivered", _) => EventKind::Delivered,
        ("failed", Some("permanent")) => EventKind::HardBounce,
        ("failed", _) => EventKind::Deferred,
        ("complained", _) => EventKind::Complaint,
        ("unsubscribed", _) => EventKind::Unsubscribe,
        _ => return None,
    };
    let status = &e["delivery-status"];
    let detail = [
        status["code"].as_i64().map(|c| c.to_string()),
        status["message"].as_str().map(str::to_owned),
        e["reason"].as_str().map(str::to_owned),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" ");
    Some(
        ProviderEvent::new(
            "mailgun",
            e["id"].as_str()?,
            kind,
            e["recipient"].as_str()?,
            e["message"]["headers"]["message-id"].as_str(),
        )
        .provider_message_id(e["message"]["headers"]["message-id"].as_str())
        .detail(detail)
        .at(e["timestamp"]
            .as_f64()
            .and_then(|t| parse_time_unix(t as i64))),
    )
}
