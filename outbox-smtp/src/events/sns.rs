//! Amazon SES events delivered through Amazon SNS.
//!
//! SNS signs each message with an RSA key whose certificate it names by URL: signature
//! version 1 is SHA1withRSA, version 2 SHA256withRSA, over the message's fields in a fixed
//! order. [`check_sns_url`] accepts only `https://sns.<region>.amazonaws.com/…` (and the
//! `.amazonaws.com.cn` regions), so a forged message cannot point at a certificate of its
//! own; the caller fetches the certificate from there (over TLS, which proves the host) and
//! hands it to [`SnsMessage::verify`]. The topic is checked against the ones the
//! application subscribed ([`SnsMessage::check_topic`]); a `SubscriptionConfirmation` is
//! confirmed by fetching its `SubscribeURL`, checked the same way. A message whose signed
//! `Timestamp` is older than [`MAX_AGE`] (or unreadable) is refused.

use std::time::{Duration, SystemTime};

use base64::Engine as _;
use serde::Deserialize;
use serde_json::Value;

use super::{check_fresh, EventKind, ProviderEvent, WebhookError};

/// The oldest signed `Timestamp` accepted: SNS retries a delivery to an HTTPS endpoint for
/// at most an hour (a hard limit of its delivery policies), so two hours.
pub const MAX_AGE: Duration = Duration::from_secs(2 * 3600);

/// One SNS message as posted to an HTTPS subscription.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct SnsMessage {
    /// `Notification`, `SubscriptionConfirmation` or `UnsubscribeConfirmation`.
    #[serde(rename = "Type")]
    pub kind: String,
    /// The SNS message id (repeated deliveries of one message keep it).
    pub message_id: String,
    /// The topic it was published to.
    pub topic_arn: String,
    /// The subject, if the publisher gave one.
    #[serde(default)]
    pub subject: Option<String>,
    /// The payload: for SES, the event as JSON text.
    pub message: String,
    /// When SNS published it (ISO 8601).
    pub timestamp: String,
    /// `1` (SHA1withRSA) or `2` (SHA256withRSA).
    pub signature_version: String,
    /// The signature, base64.
    pub signature: String,
    /// Where the signing certificate is.
    #[serde(rename = "SigningCertURL")]
    pub signing_cert_url: String,
    /// The confirmation token (subscription messages).
    #[serde(default)]
    pub token: Option<String>,
    /// The URL that confirms the subscription (subscription messages).
    #[serde(default, rename = "SubscribeURL")]
    pub subscribe_url: Option<String>,
}

/// Checks that `url` is an HTTPS URL on an SNS host (`sns.<region>.amazonaws.com`, or
/// `.amazonaws.com.cn`), the only place a signing certificate or a confirmation is fetched
/// from.
pub fn check_sns_url(url: &str) -> Result<url::Url, WebhookError> {
    let refused = |why: &str| Err(WebhookError::Refused(format!("{url:?}: {why}")));
    let Ok(parsed) = url::Url::parse(url) else {
        return refused("not a URL");
    };
    if parsed.scheme() != "https" {
        return refused("not https");
    }
    if parsed.port().is_some_and(|p| p != 443) || !parsed.username().is_empty() {
        return refused("a port or credentials in the URL");
    }
    let host = parsed.host_str().unwrap_or_default();
    let region = host.strip_prefix("sns.").and_then(|h| {
        h.strip_suffix(".amazonaws.com")
            .or_else(|| h.strip_suffix(".amazonaws.com.cn"))
    });
    let region_ok = region.is_some_and(|r| {
        !r.is_empty()
            && r.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    });
    if !region_ok {
        return refused("not an SNS host (sns.<region>.amazonaws.com)");
    }
    Ok(parsed)
}

/// Checks that `url` is where SNS keeps a signing certificate: [`check_sns_url`], a path
/// `/SimpleNotificationService-….pem`, no query.
pub fn check_sns_cert_url(url: &str) -> Result<url::Url, WebhookError> {
    let parsed = check_sns_url(url)?;
    let name = parsed.path().strip_prefix("/SimpleNotificationService-");
    let name_ok = name.and_then(|n| n.strip_suffix(".pem")).is_some_and(|n| {
        !n.is_empty() && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    });
    if !name_ok || parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(WebhookError::Refused(format!(
            "{url:?}: not an SNS signing certificate (/SimpleNotificationService-….pem)"
        )));
    }
    Ok(parsed)
}

impl SnsMessage {
    /// Reads the posted body.
    pub fn parse(body: &[u8]) -> Result<Self, WebhookError> {
        serde_json::from_slice(body)
            .map_err(|e| WebhookError::Body(format!("not an SNS message: {e}")))
    }

    /// The text SNS signed: the message's fields, each name and value on its own line, in
    /// the order its type defines.
    pub fn string_to_sign(&self) -> Result<String, WebhookError> {
        let mut fields: Vec<(&str, &str)> =
            vec![("Message", &self.message), ("MessageId", &self.message_id)];
        match self.kind.as_str() {
            "Notification" => {
                if let Some(subject) = &self.subject {
                    fields.push(("Subject", subject));
                }
                fields.extend([
                    ("Timestamp", self.timestamp.as_str()),
                    ("TopicArn", &self.topic_arn),
                    ("Type", &self.kind),
                ]);
            }
            "SubscriptionConfirmation" | "UnsubscribeConfirmation" => {
                let missing = |f: &str| WebhookError::Body(format!("a {} without {f}", self.kind));
                let url = self
                    .subscribe_url
                    .as_deref()
                    .ok_or_else(|| missing("SubscribeURL"))?;
                let token = self.token.as_deref().ok_or_else(|| missing("Token"))?;
                fields.extend([
                    ("SubscribeURL", url),
                    ("Timestamp", self.timestamp.as_str()),
                    ("Token", token),
                    ("TopicArn", &self.topic_arn),
                    ("Type", &self.kind),
                ]);
            }
            other => {
                return Err(WebhookError::Body(format!(
                    "unknown SNS message type {other:?}"
                )))
            }
        }
        Ok(fields
            .into_iter()
            .map(|(name, value)| format!("{name}\n{value}\n"))
            .collect())
    }

    /// Verifies the signature with `certificate` (PEM or DER; fetched from
    /// `signing_cert_url` after [`check_sns_cert_url`]), which must be valid at `now`; then
    /// that the signed `Timestamp` is at most [`MAX_AGE`] old at `now` and not more than
    /// [`MAX_CLOCK_AHEAD`](super::MAX_CLOCK_AHEAD) ahead of it.
    pub fn verify(&self, certificate: &[u8], now: SystemTime) -> Result<(), WebhookError> {
        check_sns_cert_url(&self.signing_cert_url)?;
        let bad = |why: String| WebhookError::Signature(why);
        let der = match x509_parser::pem::parse_x509_pem(certificate) {
            Ok((_, pem)) => pem.contents,
            Err(_) => certificate.to_vec(),
        };
        let (_, cert) = x509_parser::parse_x509_certificate(&der)
            .map_err(|e| bad(format!("the signing certificate does not parse: {e}")))?;
        let unix = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let at = x509_parser::time::ASN1Time::from_timestamp(unix)
            .map_err(|e| bad(format!("the time cannot be compared: {e}")))?;
        if !cert.validity().is_valid_at(at) {
            return Err(bad(
                "the signing certificate has expired or is not valid yet".into(),
            ));
        }
        let algorithm: &dyn ring::signature::VerificationAlgorithm =
            match self.signature_version.as_str() {
                "1" => &ring::signature::RSA_PKCS1_2048_8192_SHA1_FOR_LEGACY_USE_ONLY,
                "2" => &ring::signature::RSA_PKCS1_2048_8192_SHA256,
                v => return Err(bad(format!("unknown signature version {v:?}"))),
            };
        let signature = base64::engine::general_purpose::STANDARD
            .decode(self.signature.trim())
            .map_err(|e| bad(format!("the signature is not base64: {e}")))?;
        let key = &cert.public_key().subject_public_key.data;
        ring::signature::UnparsedPublicKey::new(algorithm, key.as_ref())
            .verify(self.string_to_sign()?.as_bytes(), &signature)
            .map_err(|_| {
                bad("the signature does not match the message and the certificate".into())
            })?;
        let at = parse_time(&self.timestamp).ok_or_else(|| {
            WebhookError::Body(format!(
                "the signed Timestamp {:?} is not an ISO 8601 time",
                self.timestamp
            ))
        })?;
        check_fresh(at, now, MAX_AGE)
    }

    /// Refuses a message from a topic not in `topics` (the ARNs the application
    /// subscribed).
    pub fn check_topic(&self, topics: &[String]) -> Result<(), WebhookError> {
        if topics.contains(&self.topic_arn) {
            Ok(())
        } else {
            Err(WebhookError::Refused(format!(
                "topic {} is not one this endpoint accepts",
                self.topic_arn
            )))
        }
    }

    /// The SES events of a `Notification` (SES notifications or event publishing: bounce,
    /// complaint, delivery, delivery delay), one per recipient.
    pub fn ses_events(&self) -> Result<Vec<ProviderEvent>, WebhookError> {
        let v: Value = serde_json::from_str(&self.message)
            .map_err(|e| WebhookError::Body(format!("the SNS message is not an SES event: {e}")))?;
        let kind = v["notificationType"]
            .as_str()
            .or(v["eventType"].as_str())
            .unwrap_or_default();
        let message_id = message_id_of(&v["mail"]);
        let event = |recipient: &str, kind: EventKind, detail: String, at: &Value| {
            ProviderEvent::new(
                "ses",
                format!("{}:{}", self.message_id, recipient.to_lowercase()),
                kind,
                recipient,
                message_id.as_deref(),
            )
            .provider_message_id(v["mail"]["messageId"].as_str())
            .detail(detail)
            .at(at.as_str().and_then(parse_time))
        };
        let addresses = |list: &Value, field: &str| -> Vec<(String, String)> {
            list.as_array()
                .into_iter()
                .flatten()
                .filter_map(|r| {
                    let address = r.get(field).and_then(Value::as_str).or(r.as_str())?;
                    let code = r["diagnosticCode"].as_str().unwrap_or_default();
                    Some((address.to_owned(), code.to_owned()))
                })
                .collect()
        };
        let events = match kind {
            "Bounce" => {
                let b = &v["bounce"];
                let hard = b["bounceType"].as_str() == Some("Permanent");
                let kind = if hard {
                    EventKind::HardBounce
                } else {
                    EventKind::SoftBounce
                };
                let what = format!(
                    "{} {}",
                    b["bounceType"].as_str().unwrap_or("?"),
                    b["bounceSubType"].as_str().unwrap_or("?")
                );
                addresses(&b["bouncedRecipients"], "emailAddress")
                    .into_iter()
                    .map(|(a, code)| {
                        event(
                            &a,
                            kind,
                            format!("{what}: {code}").trim_end_matches(": ").to_owned(),
                            &b["timestamp"],
                        )
                    })
                    .collect()
            }
            "Complaint" => {
                let c = &v["complaint"];
                let what = c["complaintFeedbackType"]
                    .as_str()
                    .unwrap_or("complaint")
                    .to_owned();
                addresses(&c["complainedRecipients"], "emailAddress")
                    .into_iter()
                    .map(|(a, _)| event(&a, EventKind::Complaint, what.clone(), &c["timestamp"]))
                    .collect()
            }
            "Delivery" => {
                let d = &v["delivery"];
                let reply = d["smtpResponse"].as_str().unwrap_or_default().to_owned();
                addresses(&d["recipients"], "emailAddress")
                    .into_iter()
                    .map(|(a, _)| event(&a, EventKind::Delivered, reply.clone(), &d["timestamp"]))
                    .collect()
            }
            "DeliveryDelay" => {
                let d = &v["deliveryDelay"];
                addresses(&d["delayedRecipients"], "emailAddress")
                    .into_iter()
                    .map(|(a, code)| event(&a, EventKind::Deferred, code, &d["timestamp"]))
                    .collect()
            }
            // Sends, opens, clicks and rejects say nothing about the recipient's address.
            _ => Vec::new(),
        };
        Ok(events)
    }
}

/// The `Message-ID` SES reports for the email: its common headers, else its headers.
fn message_id_of(mail: &Value) -> Option<String> {
    if let Some(id) = mail["commonHeaders"]["messageId"].as_str() {
        return Some(id.to_owned());
    }
    mail["headers"].as_array()?.iter().find_map(|h| {
        let name = h["name"].as_str()?;
        name.eq_ignore_ascii_case("message-id")
            .then(|| h["value"].as_str().map(str::to_owned))
            .flatten()
    })
}

/// A time in unix seconds.
pub(crate) fn parse_time_unix(secs: i64) -> Option<SystemTime> {
    let secs = u64::try_from(secs).ok()?;
    SystemTime::UNIX_EPOCH.checked_add(std::time::Duration::from_secs(secs))
}

/// An ISO 8601 time (`2026-11-24T10:00:00.000Z`).
pub(crate) fn parse_time(s: &str) -> Option<SystemTime> {
    humantime::parse_rfc3339_weak(s.trim_end_matches('Z')).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_sns_hosts_over_https_are_fetched() {
        for ok in [
            "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-abc.pem",
            "https://sns.cn-north-1.amazonaws.com.cn/x.pem",
        ] {
            assert!(check_sns_url(ok).is_ok(), "{ok}");
        }
        for bad in [
            "http://sns.us-east-1.amazonaws.com/x.pem",
            "https://sns.us-east-1.amazonaws.com.evil.example/x.pem",
            "https://evil.example/sns.us-east-1.amazonaws.com/x.pem",
            "https://sns..amazonaws.com/x.pem",
            "https://sns.us-east-1.amazonaws.com:8443/x.pem",
            "https://user@sns.us-east-1.amazonaws.com/x.pem",
            "https://s3.amazonaws.com/x.pem",
        ] {
            assert!(check_sns_url(bad).is_err(), "{bad}");
        }
        assert!(check_sns_cert_url(
            "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-0123abcd.pem"
        )
        .is_ok());
        for bad in [
            "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-x.pem?n=1",
            "https://sns.us-east-1.amazonaws.com/other.pem",
            "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-.pem",
            "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-a/b.pem",
        ] {
            assert!(check_sns_cert_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_signed_text_follows_the_type() {
        let m = SnsMessage {
            kind: "Notification".into(),
            message_id: "m1".into(),
            topic_arn: "arn:t".into(),
            subject: None,
            message: "{}".into(),
            timestamp: "2026-11-24T10:00:00.000Z".into(),
            signature_version: "1".into(),
            signature: String::new(),
            signing_cert_url: String::new(),
            token: None,
            subscribe_url: None,
        };
        assert_eq!(
            m.string_to_sign().unwrap(),
            "Message\n{}\nMessageId\nm1\nTimestamp\n2026-11-24T10:00:00.000Z\nTopicArn\narn:t\nType\nNotification\n"
        );
        assert!(parse_time(&m.timestamp).is_some());
    }
}
