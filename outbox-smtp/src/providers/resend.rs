//! Resend's Email API: `POST /emails` with the API key and the outbox message id as the
//! `Idempotency-Key`, and how its answers are classified.
//!
//! Reference: Resend's API reference, "Send Email" (`POST /emails`, `Authorization: Bearer
//! re_...`; the body's `from` (`"Name <address>"`), `to` (at most 50), `cc`, `bcc`,
//! `reply_to`, `subject`, `html`, `text`, `headers` (an object), `attachments`
//! [{`filename`, `content` (base64), `content_type`}] (at most 40 MB per email after
//! base64), `tags` [{`name`, `value`}] (ASCII letters, digits, `_` and `-` only, at most
//! 256 characters each); the `Idempotency-Key` header (at most 256 characters, kept 24
//! hours); the answer `200 {"id": "..."}`), "Errors" (the body `{"statusCode", "name",
//! "message"}`: 400 `validation_error`, `invalid_idempotency_key`; 401 `missing_api_key`,
//! `restricted_api_key`; 403 `invalid_api_key`, `validation_error` (an unverified domain);
//! 404 `not_found`; 409 `invalid_idempotent_request` (the key reused with another body),
//! `concurrent_idempotent_requests` (the same key still in progress); 422
//! `invalid_attachment`, `invalid_from_address`, `missing_required_field`...; 429
//! `rate_limit_exceeded`, `daily_quota_exceeded`, `monthly_quota_exceeded`; 500
//! `application_error`, `internal_server_error`), "Rate limit" (`retry-after` and
//! `ratelimit-reset`, both in seconds) and "Idempotency keys".
//!
//! Failure modes: an email over Resend's limits (recipients, size) is refused before
//! anything is sent, naming the limit (a dead letter); the answers as in [`classify`].

use std::time::{Duration, SystemTime};

use base64::Engine as _;
use outbox_core::MessageId;
use serde_json::{json, Map, Value};

use super::{
    hints,
    http::{HttpAnswer, HttpClient},
    sendgrid::headers_object,
};
use crate::{
    config::ResendConfig, render::ApiEmail, ApiError, ApiVerdict, ConfigError, Email, SendError,
};

const PROVIDER: &str = "resend";
const PATH: &str = "/emails";

/// Resend's limit on an email's size after base64 encoding of its attachments: 40 MB,
/// checked against the whole request.
pub(crate) const MAX_BYTES: usize = 40_000_000;
/// The most recipients (`to`, `cc` and `bcc` together) one email may name.
pub(crate) const MAX_RECIPIENTS: usize = 50;
/// The longest tag name or value Resend takes.
const MAX_TAG: usize = 256;
/// The tag that names the outbox message, so Resend's events tie back to it.
pub(crate) const OUTBOX_TAG: &str = "outbox_message_id";
/// How long a quota Resend says is used up is waited out when it gives no hint.
const QUOTA_WAIT: Duration = Duration::from_secs(10 * 60);

/// Sends through one Resend account (its API key).
pub(crate) struct ResendSender {
    client: HttpClient,
    /// `Bearer KEY`.
    authorization: String,
}

impl ResendSender {
    pub(crate) fn new(config: &ResendConfig) -> Result<Self, ConfigError> {
        Ok(Self {
            client: HttpClient::for_endpoint(&config.endpoint)?,
            authorization: format!("Bearer {}", config.key),
        })
    }

    /// Sends `email` (prepared as `api`) as outbox message `id`, which is the request's
    /// `Idempotency-Key` (the same on every attempt); Resend's `id` on success.
    pub(crate) async fn send(
        &self,
        email: &Email,
        api: &ApiEmail,
        id: &MessageId,
    ) -> Result<String, SendError> {
        check_recipients(api.recipients().count())?;
        let body = serde_json::to_vec(&request(email, api, id.as_str()))
            .map_err(|e| SendError::Unsupported(format!("cannot write the request: {e}")))?;
        check_size(body.len())?;
        let headers = [
            ("Accept", "application/json"),
            ("Authorization", self.authorization.as_str()),
            ("Idempotency-Key", id.as_str()),
        ];
        match self
            .client
            .post_json_with_headers(PATH, &headers, body)
            .await
        {
            Ok((answer, headers)) => answered(&answer, &headers, SystemTime::now()),
            Err(failure) => Err(SendError::Api(hints::unreachable(PROVIDER, failure))),
        }
    }
}

fn check_recipients(recipients: usize) -> Result<(), SendError> {
    if recipients > MAX_RECIPIENTS {
        return Err(hints::over_limit(
            PROVIDER,
            format!(
                "the email has {recipients} recipients and Resend takes at most \
                 {MAX_RECIPIENTS} per email (to, cc and bcc together): send it as several \
                 emails"
            ),
        ));
    }
    Ok(())
}

fn check_size(bytes: usize) -> Result<(), SendError> {
    if bytes > MAX_BYTES {
        return Err(hints::over_limit(
            PROVIDER,
            format!(
                "the email is {bytes} bytes as Resend's request and Resend takes at most \
                 40 MB ({MAX_BYTES} bytes) per email after base64 encoding: make the body or \
                 the attachments smaller, or link to large files"
            ),
        ));
    }
    Ok(())
}

/// Resend's JSON for `email`, sent as outbox message `outbox_id`: the addresses and
/// headers of `api` (redirected, with the Message-ID and the list headers; headers of one
/// name joined with `, `), each tag as a tag named after it (see [`tag`]) and the tag
/// [`OUTBOX_TAG`] with the outbox message id.
pub(crate) fn request(email: &Email, api: &ApiEmail, outbox_id: &str) -> Value {
    let list = |mailboxes: &[crate::Mailbox]| -> Vec<String> {
        mailboxes.iter().map(ToString::to_string).collect()
    };
    let mut m = Map::new();
    m.insert("from".into(), email.from.to_string().into());
    m.insert("to".into(), list(&api.to).into());
    if !api.cc.is_empty() {
        m.insert("cc".into(), list(&api.cc).into());
    }
    if !api.bcc.is_empty() {
        m.insert("bcc".into(), list(&api.bcc).into());
    }
    if let Some(reply_to) = &email.reply_to {
        m.insert("reply_to".into(), reply_to.to_string().into());
    }
    m.insert("subject".into(), email.subject.clone().into());
    if let Some(html) = &email.html {
        m.insert("html".into(), html.clone().into());
    }
    if let Some(text) = &email.text {
        m.insert("text".into(), text.clone().into());
    }
    m.insert("headers".into(), headers_object(&api.headers));
    if !email.attachments.is_empty() {
        let attachments: Vec<Value> = email
            .attachments
            .iter()
            .map(|a| {
                json!({
                    "filename": a.file_name.trim(),
                    "content": base64::engine::general_purpose::STANDARD.encode(&a.bytes),
                    "content_type": a.content_type.trim(),
                })
            })
            .collect();
        m.insert("attachments".into(), attachments.into());
    }
    let mut names: Vec<String> = Vec::new();
    for name in email.tags.iter().filter_map(|t| tag(t)) {
        if name != OUTBOX_TAG && !names.contains(&name) {
            names.push(name);
        }
    }
    let mut tags: Vec<Value> = names
        .into_iter()
        .map(|name| json!({ "name": name, "value": "true" }))
        .collect();
    tags.push(json!({ "name": OUTBOX_TAG, "value": tag(outbox_id).unwrap_or_default() }));
    m.insert("tags".into(), tags.into());
    Value::Object(m)
}

/// A tag name Resend takes for the email's tag `text`: each character other than an
/// ASCII letter, digit, `_` or `-` becomes `_` (`registration.user` is
/// `registration_user`), cut to 256 characters; `None` for an empty tag.
pub(crate) fn tag(text: &str) -> Option<String> {
    let name: String = text
        .trim()
        .chars()
        .take(MAX_TAG)
        .map(
            |c| match c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                true => c,
                false => '_',
            },
        )
        .collect();
    (!name.is_empty()).then_some(name)
}

/// An answer at `now`: Resend's `id` for a success, else the classified error.
fn answered(
    answer: &HttpAnswer,
    headers: &hyper::HeaderMap,
    now: SystemTime,
) -> Result<String, SendError> {
    let json: Option<Value> = serde_json::from_slice(&answer.body).ok();
    let field = |name: &str| {
        json.as_ref()
            .and_then(|j| j.get(name))
            .and_then(Value::as_str)
    };
    if (200..300).contains(&answer.status) {
        return Ok(field("id").unwrap_or_default().to_owned());
    }
    let name = field("name");
    let message = match (name, field("message")) {
        (Some(name), Some(message)) => format!("{name}: {message}"),
        (None, Some(message)) => message.to_owned(),
        (_, None) => hints::body_text(&answer.body),
    };
    let hint = answer
        .retry_after
        .as_deref()
        .and_then(|v| hints::retry_after(v, now))
        .or_else(|| hints::header(headers, "ratelimit-reset").and_then(hints::seconds));
    Err(SendError::Api(ApiError {
        provider: PROVIDER,
        status: Some(answer.status),
        code: None,
        message,
        verdict: classify(answer.status, name, hint),
    }))
}

/// Classifies Resend's answer `status` (not a 2xx) with its error `name`, and the wait its
/// `retry-after` or `ratelimit-reset` asked for:
///
/// | answer | verdict |
/// | --- | --- |
/// | `missing_api_key`, `invalid_api_key`, `restricted_api_key`; HTTP 401, 403 (a bad key, an unverified domain), 404 (not Resend's API) | down |
/// | HTTP 429 `daily_quota_exceeded`, `monthly_quota_exceeded` | slow down: one per the hint (else 10 min); never a dead letter |
/// | HTTP 429, any other | slow down: one per the hint (else 1 s) |
/// | HTTP 409 `concurrent_idempotent_requests` (this message's earlier request is still in progress), any other 409 | retry |
/// | HTTP 409 `invalid_idempotent_request` (the key was used with another body) | permanent |
/// | HTTP 5xx | retry |
/// | HTTP 400, 413, 422 (`validation_error`, `invalid_attachment`...), any other 4xx | permanent |
/// | anything else | retry |
pub(crate) fn classify(status: u16, name: Option<&str>, hint: Option<Duration>) -> ApiVerdict {
    match (status, name) {
        (_, Some("missing_api_key" | "invalid_api_key" | "restricted_api_key"))
        | (401 | 403 | 404, _) => ApiVerdict::Down,
        (429, Some("daily_quota_exceeded" | "monthly_quota_exceeded")) => {
            hints::slow_down(hint, QUOTA_WAIT)
        }
        (429, _) => hints::slow_down(hint, Duration::from_secs(1)),
        (409, Some("invalid_idempotent_request")) => ApiVerdict::Permanent,
        (409, _) => ApiVerdict::Retry,
        (500..=599, _) => ApiVerdict::Retry,
        (400..=499, _) => ApiVerdict::Permanent,
        _ => ApiVerdict::Retry,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use outbox_core::HandlerErrorKind;

    fn now() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_764_288_000) // 2025-11-28T00:00:00Z
    }

    fn answer(status: u16, body: &str, retry_after: Option<&str>) -> HttpAnswer {
        HttpAnswer {
            status,
            retry_after: retry_after.map(str::to_owned),
            body: body.as_bytes().to_vec(),
        }
    }

    fn error_with(
        status: u16,
        body: &str,
        retry_after: Option<&str>,
        headers: &hyper::HeaderMap,
    ) -> ApiError {
        match answered(&answer(status, body, retry_after), headers, now()) {
            Err(SendError::Api(e)) => e,
            other => panic!("not an API error: {other:?}"),
        }
    }

    fn error(status: u16, body: &str) -> ApiError {
        error_with(status, body, None, &hyper::HeaderMap::new())
    }

    fn body(status: u16, name: &str, message: &str) -> String {
        json!({"statusCode": status, "name": name, "message": message}).to_string()
    }

    fn kind(status: u16, name: &str) -> HandlerErrorKind {
        SendError::Api(error(status, &body(status, name, "m")))
            .into_handler_error()
            .kind()
    }

    #[test]
    fn resend_ok_keeps_the_id() {
        let ok = answered(
            &answer(
                200,
                r#"{"id":"49a3999c-0ce1-4ea6-ab68-afcd6dc2e794"}"#,
                None,
            ),
            &hyper::HeaderMap::new(),
            now(),
        );
        assert_eq!(ok.unwrap(), "49a3999c-0ce1-4ea6-ab68-afcd6dc2e794");
    }

    #[test]
    fn resend_classification_table() {
        let secs = |s| ApiVerdict::SlowDown(Duration::from_secs(s));
        for (status, name, verdict) in [
            (401, Some("missing_api_key"), ApiVerdict::Down),
            (401, Some("restricted_api_key"), ApiVerdict::Down),
            (403, Some("invalid_api_key"), ApiVerdict::Down),
            (400, Some("invalid_api_key"), ApiVerdict::Down),
            (403, Some("validation_error"), ApiVerdict::Down),
            (404, Some("not_found"), ApiVerdict::Down),
            (401, None, ApiVerdict::Down),
            (400, Some("validation_error"), ApiVerdict::Permanent),
            (400, Some("invalid_idempotency_key"), ApiVerdict::Permanent),
            (413, None, ApiVerdict::Permanent),
            (422, Some("invalid_attachment"), ApiVerdict::Permanent),
            (422, Some("missing_required_field"), ApiVerdict::Permanent),
            (405, Some("method_not_allowed"), ApiVerdict::Permanent),
            (
                409,
                Some("invalid_idempotent_request"),
                ApiVerdict::Permanent,
            ),
            (
                409,
                Some("concurrent_idempotent_requests"),
                ApiVerdict::Retry,
            ),
            (409, None, ApiVerdict::Retry),
            (429, Some("rate_limit_exceeded"), secs(1)),
            (429, Some("daily_quota_exceeded"), secs(600)),
            (429, Some("monthly_quota_exceeded"), secs(600)),
            (429, None, secs(1)),
            (500, Some("application_error"), ApiVerdict::Retry),
            (500, Some("internal_server_error"), ApiVerdict::Retry),
            (503, None, ApiVerdict::Retry),
            (302, None, ApiVerdict::Retry),
        ] {
            assert_eq!(classify(status, name, None), verdict, "{status} {name:?}");
        }
        assert_eq!(
            classify(
                429,
                Some("daily_quota_exceeded"),
                Some(Duration::from_secs(3600))
            ),
            secs(3600)
        );
    }

    #[test]
    fn resend_errors_keep_the_name_and_message() {
        let e = error(
            422,
            &body(
                422,
                "validation_error",
                "The `to` field must be a `string`.",
            ),
        );
        assert_eq!(e.verdict, ApiVerdict::Permanent);
        let error = SendError::Api(e);
        assert_eq!(
            error.to_string(),
            "resend answered HTTP 422: validation_error: The `to` field must be a `string`.; \
             not retried; fix the cause, then requeue it from the dead letters"
        );
        assert_eq!(
            error.into_handler_error().kind(),
            HandlerErrorKind::Permanent
        );
        assert_eq!(self::error(502, "Bad Gateway").message, "Bad Gateway");
        assert_eq!(kind(403, "invalid_api_key"), HandlerErrorKind::Down);
        assert_eq!(
            kind(409, "concurrent_idempotent_requests"),
            HandlerErrorKind::Retry
        );
        assert_eq!(
            kind(409, "invalid_idempotent_request"),
            HandlerErrorKind::Permanent
        );
        assert_eq!(kind(500, "application_error"), HandlerErrorKind::Retry);
    }

    #[test]
    fn resend_429_waits_by_retry_after_or_ratelimit_reset_and_a_quota_is_never_dead() {
        let mut reset = hyper::HeaderMap::new();
        reset.insert("ratelimit-reset", "3".parse().unwrap());
        let limited = body(429, "rate_limit_exceeded", "Too many requests.");
        let e = error_with(429, &limited, None, &reset);
        assert_eq!(e.verdict, ApiVerdict::SlowDown(Duration::from_secs(3)));
        let e = error_with(429, &limited, Some("9"), &reset);
        assert_eq!(
            e.verdict,
            ApiVerdict::SlowDown(Duration::from_secs(9)),
            "retry-after first"
        );
        let quota = body(
            429,
            "daily_quota_exceeded",
            "You have reached your daily email sending quota.",
        );
        let e = error_with(
            429,
            &quota,
            Some("Fri, 28 Nov 2025 06:00:00 GMT"),
            &hyper::HeaderMap::new(),
        );
        assert_eq!(
            e.verdict,
            ApiVerdict::SlowDown(Duration::from_secs(6 * 3600))
        );
        let error = SendError::Api(e);
        assert!(!error.is_permanent());
        assert_eq!(
            error.into_handler_error().kind(),
            HandlerErrorKind::SlowDown {
                one_per: Duration::from_secs(6 * 3600),
                during: Duration::from_secs(600)
            }
        );
    }

    #[test]
    fn resend_limits_are_checked_before_sending() {
        assert!(check_recipients(MAX_RECIPIENTS).is_ok());
        let many = check_recipients(51).unwrap_err();
        assert!(many.is_permanent());
        assert!(
            many.to_string()
                .contains("51 recipients and Resend takes at most 50 per email"),
            "{many}"
        );
        assert!(check_size(MAX_BYTES).is_ok());
        let large = check_size(MAX_BYTES + 1).unwrap_err();
        assert!(large.to_string().contains("at most 40 MB"), "{large}");
        assert_eq!(
            large.into_handler_error().kind(),
            HandlerErrorKind::Permanent
        );
    }

    #[test]
    fn resend_tags_are_mapped_to_what_resend_takes() {
        assert_eq!(tag("receipt").as_deref(), Some("receipt"));
        assert_eq!(
            tag("registration.user").as_deref(),
            Some("registration_user")
        );
        assert_eq!(tag(" a b/ç-_9 ").as_deref(), Some("a_b__-_9"));
        assert_eq!(tag("  "), None);
        assert_eq!(tag(&"x".repeat(300)).unwrap().len(), 256);
    }

    #[test]
    fn resend_request_fields() {
        let email = Email::builder()
            .from("Shop <shop@example.com>")
            .to("Ann <ann@example.org>")
            .to("ben@example.org")
            .cc("cc@example.org")
            .bcc("bcc@example.org")
            .reply_to("help@example.com")
            .subject("Hi")
            .text("t")
            .html("<p>h</p>")
            .tag("registration.user")
            .tag("registration:user")
            .tag("outbox_message_id")
            .attach("a.txt", "text/plain", b"hello".to_vec())
            .build()
            .unwrap();
        let api = ApiEmail {
            message_id: "<01J@example.com>".into(),
            to: email.to.clone(),
            cc: email.cc.clone(),
            bcc: email.bcc.clone(),
            headers: vec![("Message-ID".into(), "<01J@example.com>".into())],
            redirected: false,
        };
        let json = request(&email, &api, "01JOUTBOXID");
        assert_eq!(json["from"], "Shop <shop@example.com>");
        assert_eq!(
            json["to"],
            json!(["Ann <ann@example.org>", "ben@example.org"])
        );
        assert_eq!(json["cc"], json!(["cc@example.org"]));
        assert_eq!(json["bcc"], json!(["bcc@example.org"]));
        assert_eq!(json["reply_to"], "help@example.com");
        assert_eq!(json["subject"], "Hi");
        assert_eq!(json["html"], "<p>h</p>");
        assert_eq!(json["text"], "t");
        assert_eq!(json["headers"], json!({"Message-ID": "<01J@example.com>"}));
        assert_eq!(
            json["attachments"],
            json!([{"filename": "a.txt", "content": "aGVsbG8=", "content_type": "text/plain"}])
        );
        assert_eq!(
            json["tags"],
            json!([
                {"name": "registration_user", "value": "true"},
                {"name": "outbox_message_id", "value": "01JOUTBOXID"}
            ])
        );
        assert_eq!(json.as_object().unwrap().len(), 11);

        let bare = Email::builder()
            .from("shop@example.com")
            .to("ann@example.org")
            .subject("Hi")
            .text("t")
            .build()
            .unwrap();
        let api = ApiEmail {
            to: bare.to.clone(),
            cc: Vec::new(),
            bcc: Vec::new(),
            ..api
        };
        let json = request(&bare, &api, "01J");
        for absent in ["cc", "bcc", "reply_to", "html", "attachments"] {
            assert!(json.get(absent).is_none(), "{absent}");
        }
        assert_eq!(
            json["tags"],
            json!([{"name": "outbox_message_id", "value": "01J"}])
        );
    }

    #[test]
    fn resend_sender_sends_the_key_as_a_bearer_token() {
        let sender = ResendSender::new(&ResendConfig::new("re_123")).unwrap();
        assert_eq!(sender.authorization, "Bearer re_123");
    }
}
