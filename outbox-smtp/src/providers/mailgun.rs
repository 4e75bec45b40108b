//! Mailgun's `messages.mime` API: `POST /v3/{domain}/messages.mime` with the rendered
//! email as a MIME file, and how its answers are classified.
//!
//! Reference: Mailgun's API docs, "Sending > messages.mime" (send a message in MIME
//! format: `POST /v3/{domain_name}/messages.mime`, `multipart/form-data` with the fields
//! `to` (the recipients, comma-separated; Bcc recipients too, as they are not in the
//! message's headers) and `message` (the MIME string, sent as a file); HTTP basic auth
//! with the user `api` and the API key; the answer 200
//! `{"id": "<...@domain>", "message": "Queued. Thank you."}`, errors as
//! `{"message": "..."}`: 400 bad request, 401 unauthorized, 403 forbidden, 404 not found
//! (an unknown domain), 413 request too large, 429 too many requests, 500 internal error).

use std::time::Duration;

use base64::Engine as _;
use serde_json::Value;

use super::http::{form, FilePart, HttpAnswer, HttpClient, HttpFailure};
use crate::{
    config::MailgunConfig, render::Rendered, ApiError, ApiVerdict, ConfigError, SendError,
};

const PROVIDER: &str = "mailgun";

/// Mailgun's limit on one message, attachments included: 25 MB.
pub(crate) const MAX_BYTES: usize = 25 * 1024 * 1024;
/// Mailgun's limit on recipients per message: 1000.
pub(crate) const MAX_RECIPIENTS: usize = 1000;

/// Sends through one Mailgun sending domain (with its API key).
pub(crate) struct MailgunSender {
    client: HttpClient,
    /// `Basic base64(api:KEY)`.
    authorization: String,
    path: String,
}

impl MailgunSender {
    pub(crate) fn new(config: &MailgunConfig) -> Result<Self, ConfigError> {
        let client = HttpClient::for_endpoint(&config.endpoint)?;
        let credentials =
            base64::engine::general_purpose::STANDARD.encode(format!("api:{}", config.key));
        Ok(Self {
            client,
            authorization: format!("Basic {credentials}"),
            path: format!("/v3/{}/messages.mime", config.domain),
        })
    }

    /// Sends `rendered` (the bytes SMTP would send, signed when DKIM is configured) to its
    /// envelope recipients; Mailgun's `id` on success.
    pub(crate) async fn send(&self, rendered: &Rendered) -> Result<String, SendError> {
        let to = rendered
            .recipients
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        let form = form(
            &[("to", &to)],
            &FilePart {
                name: "message",
                file_name: "message.mime",
                content_type: "message/rfc822",
                bytes: &rendered.bytes,
            },
        );
        let headers = [
            ("Accept", "application/json"),
            ("Authorization", self.authorization.as_str()),
        ];
        match self
            .client
            .post(&self.path, &form.content_type, &headers, form.body)
            .await
        {
            Ok(answer) => answered(&answer),
            Err(failure) => Err(SendError::Api(unreachable(failure))),
        }
    }
}

/// An answer: Mailgun's `id` for a success, else the classified error.
fn answered(answer: &HttpAnswer) -> Result<String, SendError> {
    let json: Option<Value> = serde_json::from_slice(&answer.body).ok();
    let field = |name: &str| {
        json.as_ref()
            .and_then(|j| j.get(name))
            .and_then(Value::as_str)
    };
    if (200..300).contains(&answer.status) {
        // Without angle brackets, as Mailgun's events name the message.
        let id = field("id").unwrap_or_default();
        return Ok(id.trim_start_matches('<').trim_end_matches('>').to_owned());
    }
    let message = field("message").map(str::to_owned).unwrap_or_else(|| {
        let text = String::from_utf8_lossy(&answer.body);
        let text = text.trim();
        match text.is_empty() {
            true => "(no message)".to_owned(),
            false => text.chars().take(300).collect(),
        }
    });
    // Seconds, or an HTTP-date.
    let retry_after = answer
        .retry_after
        .as_deref()
        .and_then(|v| super::hints::retry_after(v, std::time::SystemTime::now()))
        .map(|wait| wait.as_secs());
    Err(SendError::Api(ApiError {
        provider: PROVIDER,
        status: Some(answer.status),
        code: None,
        message,
        verdict: classify(answer.status, retry_after),
    }))
}

/// No answer: a refused connection means Mailgun (or the test server) is down; the rest
/// is retried.
fn unreachable(failure: HttpFailure) -> ApiError {
    let (message, verdict) = match failure {
        HttpFailure::Refused(what) => (what, ApiVerdict::Down),
        HttpFailure::Connection(what) => (what, ApiVerdict::Retry),
        HttpFailure::Timeout(after) => (format!("no answer within {after:?}"), ApiVerdict::Retry),
    };
    ApiError {
        provider: PROVIDER,
        status: None,
        code: None,
        message,
        verdict,
    }
}

/// Classifies Mailgun's answer `status` (not a 2xx) with its `Retry-After` seconds:
///
/// | answer | verdict |
/// | --- | --- |
/// | HTTP 401, 403 (bad key, domain not allowed), 404 (unknown domain) | down |
/// | HTTP 429 | slow down: one per `Retry-After` s (else 1 s) |
/// | HTTP 5xx | retry |
/// | HTTP 400 (a bad request), 413 (too large), any other 4xx | permanent |
/// | anything else | retry |
pub(crate) fn classify(status: u16, retry_after: Option<u64>) -> ApiVerdict {
    match status {
        401 | 403 | 404 => ApiVerdict::Down,
        429 => ApiVerdict::SlowDown(Duration::from_secs(retry_after.unwrap_or(1).max(1))),
        500..=599 => ApiVerdict::Retry,
        400..=499 => ApiVerdict::Permanent,
        _ => ApiVerdict::Retry,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use outbox_core::HandlerErrorKind;

    fn answer(status: u16, body: &str, retry_after: Option<&str>) -> HttpAnswer {
        HttpAnswer {
            status,
            retry_after: retry_after.map(str::to_owned),
            body: body.as_bytes().to_vec(),
        }
    }

    fn error(status: u16, body: &str, retry_after: Option<&str>) -> ApiError {
        match answered(&answer(status, body, retry_after)) {
            Err(SendError::Api(e)) => e,
            other => panic!("not an API error: {other:?}"),
        }
    }

    #[test]
    fn mailgun_ok_keeps_the_id_without_brackets_as_its_events_name_it() {
        let body =
            r#"{"id":"<20240501100000.1.ABCDEF@mg.example.com>","message":"Queued. Thank you."}"#;
        assert_eq!(
            answered(&answer(200, body, None)).unwrap(),
            "20240501100000.1.ABCDEF@mg.example.com"
        );
        assert_eq!(answered(&answer(200, "", None)).unwrap(), "");
    }

    #[test]
    fn mailgun_classification() {
        for status in [401, 403, 404] {
            assert_eq!(classify(status, None), ApiVerdict::Down, "{status}");
        }
        assert_eq!(
            classify(429, Some(7)),
            ApiVerdict::SlowDown(Duration::from_secs(7))
        );
        assert_eq!(
            classify(429, None),
            ApiVerdict::SlowDown(Duration::from_secs(1))
        );
        assert_eq!(
            classify(429, Some(0)),
            ApiVerdict::SlowDown(Duration::from_secs(1))
        );
        for status in [400, 413, 405, 422] {
            assert_eq!(classify(status, None), ApiVerdict::Permanent, "{status}");
        }
        for status in [500, 502, 503, 504, 302] {
            assert_eq!(classify(status, None), ApiVerdict::Retry, "{status}");
        }
    }

    #[test]
    fn mailgun_400_is_a_dead_letter_with_mailguns_message() {
        let e = error(
            400,
            r#"{"message":"to parameter is not a valid address. please check documentation"}"#,
            None,
        );
        assert_eq!(e.verdict, ApiVerdict::Permanent);
        assert_eq!((e.status, e.code), (Some(400), None));
        let error = SendError::Api(e);
        assert_eq!(
            error.to_string(),
            "mailgun answered HTTP 400: to parameter is not a valid address. please check \
             documentation; not retried; fix the cause, then requeue it from the dead letters"
        );
        assert_eq!(
            error.into_handler_error().kind(),
            HandlerErrorKind::Permanent
        );
        let too_large = error_kind(413, r#"{"message":"Request Entity Too Large"}"#, None);
        assert_eq!(too_large, HandlerErrorKind::Permanent);
    }

    fn error_kind(status: u16, body: &str, retry_after: Option<&str>) -> HandlerErrorKind {
        SendError::Api(error(status, body, retry_after))
            .into_handler_error()
            .kind()
    }

    #[test]
    fn mailgun_bad_key_and_unknown_domain_open_the_breaker() {
        // Mailgun answers a bad key with a plain-text body.
        let e = error(401, "Forbidden", None);
        assert_eq!(e.verdict, ApiVerdict::Down);
        assert_eq!(e.message, "Forbidden");
        assert!(SendError::Api(e)
            .to_string()
            .starts_with("mailgun answered HTTP 401: Forbidden; "));
        assert_eq!(error_kind(401, "Forbidden", None), HandlerErrorKind::Down);
        assert_eq!(
            error_kind(
                403,
                r#"{"message":"Domain mg.example.com is not allowed to send"}"#,
                None
            ),
            HandlerErrorKind::Down
        );
        let unknown = error(
            404,
            r#"{"message":"Domain not found: mg.example.com"}"#,
            None,
        );
        assert_eq!(unknown.message, "Domain not found: mg.example.com");
        assert_eq!(unknown.verdict, ApiVerdict::Down);
    }

    #[test]
    fn mailgun_429_slows_down_for_ten_minutes() {
        assert_eq!(
            error_kind(429, r#"{"message":"Too many requests"}"#, Some("30")),
            HandlerErrorKind::SlowDown {
                one_per: Duration::from_secs(30),
                during: Duration::from_secs(600)
            }
        );
        assert_eq!(
            error_kind(429, "", Some("Wed, 21 Oct 2015 07:28:00 GMT")),
            HandlerErrorKind::SlowDown {
                one_per: Duration::from_secs(1),
                during: Duration::from_secs(600)
            }
        );
        assert_eq!(error(429, "", None).message, "(no message)");
    }

    #[test]
    fn mailgun_5xx_timeouts_and_broken_connections_retry_and_refused_is_down() {
        assert_eq!(error_kind(500, "", None), HandlerErrorKind::Retry);
        assert_eq!(
            error_kind(503, "<html>busy</html>", None),
            HandlerErrorKind::Retry
        );
        assert_eq!(
            unreachable(HttpFailure::Refused("x".into())).verdict,
            ApiVerdict::Down
        );
        assert_eq!(
            unreachable(HttpFailure::Connection("x".into())).verdict,
            ApiVerdict::Retry
        );
        let timeout = unreachable(HttpFailure::Timeout(Duration::from_secs(30)));
        assert_eq!(timeout.verdict, ApiVerdict::Retry);
        assert!(SendError::Api(timeout)
            .to_string()
            .starts_with("mailgun API: no answer within 30s; "));
    }

    #[test]
    fn mailgun_sender_authenticates_as_api_with_the_key() {
        let sender = MailgunSender::new(&MailgunConfig::new("key-1", "mg.example.com")).unwrap();
        assert_eq!(sender.path, "/v3/mg.example.com/messages.mime");
        // base64("api:key-1")
        assert_eq!(sender.authorization, "Basic YXBpOmtleS0x");
    }
}
