//! SendGrid's signed event webhook: an ECDSA P-256 signature (SHA-256, DER, base64 in
//! `X-Twilio-Email-Event-Webhook-Signature`) over the timestamp header followed by the raw
//! body, checked with the verification key SendGrid shows (base64 DER public key).

use std::time::{Duration, SystemTime};

use base64::Engine as _;
use p256::ecdsa::{signature::Verifier, DerSignature, VerifyingKey};
use p256::pkcs8::DecodePublicKey;
use serde_json::Value;

use super::{check_fresh, sns::parse_time_unix, EventKind, ProviderEvent, WebhookError};

/// The oldest signed timestamp accepted: SendGrid retries an event for up to 24 hours after
/// it occurred, so 25 hours. (Repeats inside the window change nothing: each event is
/// applied once, by its `sg_event_id`.)
pub const MAX_AGE: Duration = Duration::from_secs(25 * 3600);

/// The header carrying the signature.
pub const SIGNATURE_HEADER: &str = "X-Twilio-Email-Event-Webhook-Signature";
/// The header carrying the signed timestamp.
pub const TIMESTAMP_HEADER: &str = "X-Twilio-Email-Event-Webhook-Timestamp";

/// SendGrid's verification key.
#[derive(Clone, Debug)]
pub struct SendGridKey(VerifyingKey);

impl SendGridKey {
    /// The key as SendGrid shows it: base64 of the DER public key (PEM is accepted too).
    pub fn from_base64(key: &str) -> Result<Self, WebhookError> {
        let body: String = key
            .lines()
            .filter(|l| !l.starts_with("-----"))
            .collect::<String>()
            .split_whitespace()
            .collect();
        let der = base64::engine::general_purpose::STANDARD
            .decode(body)
            .map_err(|e| WebhookError::Body(format!("the SendGrid key is not base64: {e}")))?;
        VerifyingKey::from_public_key_der(&der)
            .map(Self)
            .map_err(|e| {
                WebhookError::Body(format!("the SendGrid key is not a P-256 public key: {e}"))
            })
    }

    /// Verifies `signature` (the header, base64 DER) over `timestamp` followed by `body`,
    /// then that `timestamp` (unix seconds) is at most [`MAX_AGE`] old at `now` and not more
    /// than [`MAX_CLOCK_AHEAD`](super::MAX_CLOCK_AHEAD) ahead of it.
    pub fn verify(
        &self,
        timestamp: &str,
        body: &[u8],
        signature: &str,
        now: SystemTime,
    ) -> Result<(), WebhookError> {
        let bad = |why: &str| WebhookError::Signature(why.to_owned());
        let sig = base64::engine::general_purpose::STANDARD
            .decode(signature.trim())
            .map_err(|_| bad("the signature is not base64"))?;
        let sig = DerSignature::try_from(sig.as_slice())
            .map_err(|_| bad("the signature is not DER ECDSA"))?;
        let mut signed = Vec::with_capacity(timestamp.len() + body.len());
        signed.extend_from_slice(timestamp.as_bytes());
        signed.extend_from_slice(body);
        self.0
            .verify(&signed, &sig)
            .map_err(|_| bad("the signature does not match the timestamp, the body and the key"))?;
        let at = timestamp
            .trim()
            .parse::<i64>()
            .ok()
            .and_then(parse_time_unix)
            .ok_or_else(|| {
                WebhookError::Body(format!(
                    "the signed timestamp {timestamp:?} is not unix seconds"
                ))
            })?;
        check_fresh(at, now, MAX_AGE)
    }
}

/// The events of a verified body (a JSON array), one per item that concerns a recipient's
/// address: delivered, deferred, bounce (`blocked` is a soft bounce), spam report,
/// unsubscribe.
pub fn events(body: &[u8]) -> Result<Vec<ProviderEvent>, WebhookError> {
    let items: Vec<Value> = serde_json::from_slice(body)
        .map_err(|e| WebhookError::Body(format!("not a SendGrid event array: {e}")))?;
    Ok(items
        .iter()
        .filter_map(|e| {
            let kind = match (e["event"].as_str()?, e["type"].as_str()) {
                ("delivered", _) => EventKind::Delivered,
                ("deferred", _) => EventKind::Deferred,
                ("bounce", Some("blocked")) => EventKind::SoftBounce,
                ("bounce", _) => EventKind::HardBounce,
                ("spamreport", _) => EventKind::Complaint,
                ("unsubscribe" | "group_unsubscribe", _) => EventKind::Unsubscribe,
                _ => return None,
            };
            let recipient = e["email"].as_str()?;
            let id = e["sg_event_id"].as_str()?;
            let detail = ["reason", "response", "status"]
                .iter()
                .filter_map(|k| e[*k].as_str())
                .collect::<Vec<_>>()
                .join(" ");
            // `sg_message_id` is the `X-Message-Id` the API answered, then `.filter…`.
            let sent_as = e["sg_message_id"]
                .as_str()
                .map(|id| id.split(".filter").next().unwrap_or(id));
            Some(
                ProviderEvent::new("sendgrid", id, kind, recipient, e["smtp-id"].as_str())
                    .provider_message_id(sent_as)
                    .detail(detail)
                    .at(e["timestamp"].as_i64().and_then(parse_time_unix)),
            )
        })
        .collect())
}
