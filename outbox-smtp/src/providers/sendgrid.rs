//! SendGrid's v3 Mail Send API: `POST /v3/mail/send` with the API key, and how its
//! answers are classified.
//!
//! Reference: SendGrid's (Twilio's) API reference, "Mail Send" (`POST /v3/mail/send`,
//! `Authorization: Bearer <API key>`; the body's `personalizations` [{`to`, `cc`, `bcc`:
//! [{`email`, `name`}]}], `from` {`email`, `name`}, `reply_to`, `subject`, `content`
//! [{`type`, `value`}] with `text/plain` first, `headers` (an object), `categories` (at
//! most 10), `attachments` [{`content` (base64), `filename`, `type`, `disposition`}],
//! `custom_args` (an object, given back in the event webhook); the answer `202 Accepted`
//! with an empty body and the `X-Message-Id` header), "Mail Send errors" (the error body
//! `{"errors": [{"message", "field", "help"}]}`; 400 bad request, 401 unauthorized, 403
//! forbidden, 413 payload too large, 429 too many requests, 500 and 503; each email's
//! total size under 30 MB and at most 1000 recipients per request, the address unique
//! across `to`, `cc` and `bcc`), "Rate limits" (`X-RateLimit-Reset`, a Unix time) and
//! "Global and EU data residency" (`api.eu.sendgrid.com` for an EU regional subuser).
//!
//! Failure modes: an email over SendGrid's limits (recipients, size) is refused before
//! anything is sent, naming the limit (a dead letter); the answers as in [`classify`].

use std::{
    collections::HashSet,
    time::{Duration, SystemTime},
};

use base64::Engine as _;
use outbox_core::MessageId;
use serde_json::{json, Map, Value};

use super::{
    hints,
    http::{HttpAnswer, HttpClient},
};
use crate::{
    config::SendGridConfig, render::ApiEmail, ApiError, ApiVerdict, ConfigError, Email, Mailbox,
    SendError,
};

const PROVIDER: &str = "sendgrid";
const PATH: &str = "/v3/mail/send";

/// SendGrid's limit on an email's total size, attachments included: 30 MB, checked
/// against the whole request (the base64 attachments with the rest).
pub(crate) const MAX_BYTES: usize = 30_000_000;
/// The most recipients (`to`, `cc` and `bcc` together) one request may name.
pub(crate) const MAX_RECIPIENTS: usize = 1000;
/// The most categories one email may carry; an email's tags beyond these are not sent.
pub(crate) const MAX_CATEGORIES: usize = 10;

/// Sends through one SendGrid account (its API key).
pub(crate) struct SendGridSender {
    client: HttpClient,
    /// `Bearer KEY`.
    authorization: String,
}

impl SendGridSender {
    pub(crate) fn new(config: &SendGridConfig) -> Result<Self, ConfigError> {
        Ok(Self {
            client: HttpClient::for_endpoint(&config.endpoint)?,
            authorization: format!("Bearer {}", config.key),
        })
    }

    /// Sends `email` (prepared as `api`) as outbox message `id`; SendGrid's
    /// `X-Message-Id` on success.
    pub(crate) async fn send(
        &self,
        email: &Email,
        api: &ApiEmail,
        id: &MessageId,
    ) -> Result<String, SendError> {
        let (request, recipients) = request(email, api, id.as_str());
        let body = serde_json::to_vec(&request)
            .map_err(|e| SendError::Unsupported(format!("cannot write the request: {e}")))?;
        check_limits(recipients, body.len())?;
        let headers = [
            ("Accept", "application/json"),
            ("Authorization", self.authorization.as_str()),
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

/// Refuses an email over SendGrid's limits, naming the limit.
fn check_limits(recipients: usize, bytes: usize) -> Result<(), SendError> {
    if recipients > MAX_RECIPIENTS {
        return Err(hints::over_limit(
            PROVIDER,
            format!(
                "the email has {recipients} recipients and SendGrid takes at most \
                 {MAX_RECIPIENTS} per request (to, cc and bcc together): send it as several \
                 emails"
            ),
        ));
    }
    if bytes > MAX_BYTES {
        return Err(hints::over_limit(
            PROVIDER,
            format!(
                "the email is {bytes} bytes as SendGrid's request and SendGrid takes at most \
                 30 MB ({MAX_BYTES} bytes) per email, attachments included: make the body or \
                 the attachments smaller, or link to large files"
            ),
        ));
    }
    Ok(())
}

/// SendGrid's JSON for `email`, sent as outbox message `outbox_id`, and how many
/// recipients it names. The addresses and headers are those of `api` (redirected, with
/// the Message-ID and the list headers); an address named twice across to, cc and bcc is
/// kept at its first place (SendGrid refuses repeats); headers of one name are joined
/// with `, ` (an object holds a name once); the first [`MAX_CATEGORIES`] tags become
/// categories; `custom_args.outbox_message_id` ties SendGrid's events back to the message.
pub(crate) fn request(email: &Email, api: &ApiEmail, outbox_id: &str) -> (Value, usize) {
    let mut seen = HashSet::new();
    let mut list = |mailboxes: &[Mailbox]| -> Vec<Value> {
        mailboxes
            .iter()
            .filter(|m| seen.insert(m.address.trim().to_ascii_lowercase()))
            .map(address)
            .collect()
    };
    let (to, cc, bcc) = (list(&api.to), list(&api.cc), list(&api.bcc));
    let recipients = to.len() + cc.len() + bcc.len();
    let mut personalization = Map::new();
    personalization.insert("to".into(), to.into());
    for (name, list) in [("cc", cc), ("bcc", bcc)] {
        if !list.is_empty() {
            personalization.insert(name.into(), list.into());
        }
    }
    let mut m = Map::new();
    m.insert(
        "personalizations".into(),
        Value::Array(vec![Value::Object(personalization)]),
    );
    m.insert("from".into(), address(&email.from));
    if let Some(reply_to) = &email.reply_to {
        m.insert("reply_to".into(), address(reply_to));
    }
    m.insert("subject".into(), email.subject.clone().into());
    let mut content = Vec::new();
    if let Some(text) = &email.text {
        content.push(json!({ "type": "text/plain", "value": text }));
    }
    if let Some(html) = &email.html {
        content.push(json!({ "type": "text/html", "value": html }));
    }
    m.insert("content".into(), content.into());
    m.insert("headers".into(), headers_object(&api.headers));
    let mut categories: Vec<&str> = Vec::new();
    for tag in email
        .tags
        .iter()
        .map(|t| t.trim())
        .filter(|t| !t.is_empty())
    {
        if categories.len() < MAX_CATEGORIES && !categories.contains(&tag) {
            categories.push(tag);
        }
    }
    if !categories.is_empty() {
        m.insert("categories".into(), categories.into());
    }
    if !email.attachments.is_empty() {
        let attachments: Vec<Value> = email
            .attachments
            .iter()
            .map(|a| {
                json!({
                    "content": base64::engine::general_purpose::STANDARD.encode(&a.bytes),
                    "filename": a.file_name.trim(),
                    "type": a.content_type.trim(),
                    "disposition": "attachment",
                })
            })
            .collect();
        m.insert("attachments".into(), attachments.into());
    }
    m.insert(
        "custom_args".into(),
        json!({ "outbox_message_id": outbox_id }),
    );
    (Value::Object(m), recipients)
}

/// `{"email": ..., "name": ...}` (no name when there is none).
fn address(mailbox: &Mailbox) -> Value {
    let mut o = Map::new();
    o.insert("email".into(), mailbox.address.trim().into());
    if let Some(name) = mailbox.name.as_deref().map(str::trim) {
        if !name.is_empty() {
            o.insert("name".into(), name.into());
        }
    }
    Value::Object(o)
}

/// `headers` as a JSON object, in order; the values of a name given twice joined with
/// `, ` (names compared without case).
pub(crate) fn headers_object(headers: &[(String, String)]) -> Value {
    let mut object = Map::new();
    let mut names: Vec<(String, String)> = Vec::new(); // (lowercase, as first written)
    for (name, value) in headers {
        let lower = name.to_ascii_lowercase();
        match names.iter().find(|(l, _)| *l == lower) {
            Some((_, first)) => {
                if let Some(Value::String(joined)) = object.get_mut(first) {
                    joined.push_str(", ");
                    joined.push_str(value);
                }
            }
            None => {
                names.push((lower, name.clone()));
                object.insert(name.clone(), value.clone().into());
            }
        }
    }
    Value::Object(object)
}

/// An answer at `now`: SendGrid's `X-Message-Id` for a success, else the classified error.
fn answered(
    answer: &HttpAnswer,
    headers: &hyper::HeaderMap,
    now: SystemTime,
) -> Result<String, SendError> {
    if (200..300).contains(&answer.status) {
        return Ok(hints::header(headers, "x-message-id")
            .unwrap_or_default()
            .to_owned());
    }
    let hint = answer
        .retry_after
        .as_deref()
        .and_then(|v| hints::retry_after(v, now))
        .or_else(|| {
            hints::header(headers, "x-ratelimit-reset").and_then(|v| hints::unix_reset(v, now))
        });
    Err(SendError::Api(ApiError {
        provider: PROVIDER,
        status: Some(answer.status),
        code: None,
        message: errors(&answer.body),
        verdict: classify(answer.status, hint),
    }))
}

/// SendGrid's error messages (`field: message (see help)`, joined with `; `), or the body
/// as it came.
fn errors(body: &[u8]) -> String {
    let json: Option<Value> = serde_json::from_slice(body).ok();
    let listed: Vec<String> = json
        .as_ref()
        .and_then(|j| j.get("errors"))
        .and_then(Value::as_array)
        .map(|errors| {
            errors
                .iter()
                .filter_map(|e| {
                    let message = e.get("message").and_then(Value::as_str)?.trim();
                    let mut one = match e.get("field").and_then(Value::as_str) {
                        Some(field) if !field.is_empty() => format!("{field}: {message}"),
                        _ => message.to_owned(),
                    };
                    if let Some(help) = e.get("help").and_then(Value::as_str) {
                        if !help.is_empty() {
                            one.push_str(&format!(" (see {help})"));
                        }
                    }
                    Some(one)
                })
                .collect()
        })
        .unwrap_or_default();
    match listed.is_empty() {
        true => hints::body_text(body),
        false => listed.join("; "),
    }
}

/// Classifies SendGrid's answer `status` (not a 2xx), with the wait its `Retry-After` or
/// `X-RateLimit-Reset` asked for:
///
/// | answer | verdict |
/// | --- | --- |
/// | HTTP 401 (bad or revoked key, credits exhausted), 403 (no Mail Send permission, sender not verified, account blocked), 404 (not SendGrid's API) | down |
/// | HTTP 429 | slow down: one per the hint (else 1 s) |
/// | HTTP 5xx | retry |
/// | HTTP 400 (an invalid request), 413 (too large), 422, any other 4xx | permanent |
/// | anything else | retry |
pub(crate) fn classify(status: u16, hint: Option<Duration>) -> ApiVerdict {
    match status {
        401 | 403 | 404 => ApiVerdict::Down,
        429 => hints::slow_down(hint, Duration::from_secs(1)),
        500..=599 => ApiVerdict::Retry,
        400..=499 => ApiVerdict::Permanent,
        _ => ApiVerdict::Retry,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use outbox_core::HandlerErrorKind;

    const NOW: u64 = 1_764_288_000; // 2025-11-28T00:00:00Z

    fn now() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(NOW)
    }

    fn answer(status: u16, body: &str, retry_after: Option<&str>) -> HttpAnswer {
        HttpAnswer {
            status,
            retry_after: retry_after.map(str::to_owned),
            body: body.as_bytes().to_vec(),
        }
    }

    fn headers(pairs: &[(&'static str, &str)]) -> hyper::HeaderMap {
        let mut map = hyper::HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, value.parse().unwrap());
        }
        map
    }

    fn error(status: u16, body: &str, retry_after: Option<&str>) -> ApiError {
        match answered(&answer(status, body, retry_after), &headers(&[]), now()) {
            Err(SendError::Api(e)) => e,
            other => panic!("not an API error: {other:?}"),
        }
    }

    fn kind(status: u16, body: &str) -> HandlerErrorKind {
        SendError::Api(error(status, body, None))
            .into_handler_error()
            .kind()
    }

    #[test]
    fn sendgrid_accepted_keeps_the_x_message_id() {
        let id = answered(
            &answer(202, "", None),
            &headers(&[("x-message-id", "W9e0XJbJSNaJqVjk-aN1fA")]),
            now(),
        );
        assert_eq!(id.unwrap(), "W9e0XJbJSNaJqVjk-aN1fA");
        assert_eq!(
            answered(&answer(202, "", None), &headers(&[]), now()).unwrap(),
            ""
        );
    }

    #[test]
    fn sendgrid_classification_table() {
        for status in [401, 403, 404] {
            assert_eq!(classify(status, None), ApiVerdict::Down, "{status}");
        }
        for status in [400, 413, 422, 405, 415] {
            assert_eq!(classify(status, None), ApiVerdict::Permanent, "{status}");
        }
        for status in [500, 502, 503, 504, 302] {
            assert_eq!(classify(status, None), ApiVerdict::Retry, "{status}");
        }
        assert_eq!(
            classify(429, None),
            ApiVerdict::SlowDown(Duration::from_secs(1))
        );
        assert_eq!(
            classify(429, Some(Duration::from_secs(30))),
            ApiVerdict::SlowDown(Duration::from_secs(30))
        );
    }

    #[test]
    fn sendgrid_400_is_a_dead_letter_with_sendgrids_messages() {
        let body = r#"{"errors":[{"message":"The from email does not contain a valid address.","field":"from.email","help":"http://sendgrid.com/docs/API_Reference/Web_API_v3/Mail/errors.html#message.from"},{"message":"The subject is required.","field":"subject","help":null}]}"#;
        let e = error(400, body, None);
        assert_eq!(e.verdict, ApiVerdict::Permanent);
        assert_eq!(
            e.message,
            "from.email: The from email does not contain a valid address. (see \
             http://sendgrid.com/docs/API_Reference/Web_API_v3/Mail/errors.html#message.from); \
             subject: The subject is required."
        );
        let error = SendError::Api(e);
        assert!(
            error
                .to_string()
                .starts_with("sendgrid answered HTTP 400: from.email: The from email"),
            "{error}"
        );
        assert_eq!(
            error.into_handler_error().kind(),
            HandlerErrorKind::Permanent
        );
        assert_eq!(
            kind(413, r#"{"errors":[{"message":"too large","field":null}]}"#),
            HandlerErrorKind::Permanent
        );
        assert_eq!(error_message(413, "<html>413</html>"), "<html>413</html>");
    }

    fn error_message(status: u16, body: &str) -> String {
        error(status, body, None).message
    }

    #[test]
    fn sendgrid_bad_key_and_forbidden_open_the_breaker() {
        let body = r#"{"errors":[{"field":null,"message":"The provided authorization grant is invalid, expired, or revoked","help":null}]}"#;
        let e = error(401, body, None);
        assert_eq!(e.verdict, ApiVerdict::Down);
        assert_eq!(
            e.message,
            "The provided authorization grant is invalid, expired, or revoked"
        );
        assert_eq!(kind(401, body), HandlerErrorKind::Down);
        assert_eq!(
            kind(
                403,
                r#"{"errors":[{"field":"from","message":"The from address does not match a verified Sender Identity."}]}"#
            ),
            HandlerErrorKind::Down
        );
    }

    #[test]
    fn sendgrid_429_slows_down_by_retry_after_or_the_rate_limit_reset() {
        let body = r#"{"errors":[{"field":null,"message":"too many requests"}]}"#;
        assert_eq!(
            error(429, body, Some("20")).verdict,
            ApiVerdict::SlowDown(Duration::from_secs(20))
        );
        assert_eq!(
            error(429, body, Some("Fri, 28 Nov 2025 00:01:00 GMT")).verdict,
            ApiVerdict::SlowDown(Duration::from_secs(60))
        );
        let reset = headers(&[("x-ratelimit-reset", &(NOW + 45).to_string())]);
        let e = match answered(&answer(429, body, None), &reset, now()) {
            Err(SendError::Api(e)) => e,
            other => panic!("{other:?}"),
        };
        assert_eq!(e.verdict, ApiVerdict::SlowDown(Duration::from_secs(45)));
        assert_eq!(
            SendError::Api(e).into_handler_error().kind(),
            HandlerErrorKind::SlowDown {
                one_per: Duration::from_secs(45),
                during: Duration::from_secs(600)
            }
        );
        assert_eq!(
            error(429, "", None).verdict,
            ApiVerdict::SlowDown(Duration::from_secs(1))
        );
    }

    #[test]
    fn sendgrid_5xx_is_retried() {
        assert_eq!(kind(500, ""), HandlerErrorKind::Retry);
        assert_eq!(kind(503, "Service Unavailable"), HandlerErrorKind::Retry);
    }

    #[test]
    fn sendgrid_limits_are_checked_before_sending() {
        assert!(check_limits(MAX_RECIPIENTS, MAX_BYTES).is_ok());
        let many = check_limits(MAX_RECIPIENTS + 1, 10).unwrap_err();
        assert!(many.is_permanent());
        assert!(
            many.to_string()
                .contains("1001 recipients and SendGrid takes at most 1000 per request"),
            "{many}"
        );
        let large = check_limits(1, MAX_BYTES + 1).unwrap_err();
        assert!(large.is_permanent());
        assert!(large.to_string().contains("at most 30 MB"), "{large}");
        assert_eq!(
            large.into_handler_error().kind(),
            HandlerErrorKind::Permanent
        );
    }

    fn api_of(email: &Email) -> ApiEmail {
        ApiEmail {
            message_id: "<01J@example.com>".into(),
            to: email.to.clone(),
            cc: email.cc.clone(),
            bcc: email.bcc.clone(),
            headers: vec![
                ("Message-ID".into(), "<01J@example.com>".into()),
                ("X-Campaign".into(), "november".into()),
                ("x-campaign".into(), "second".into()),
            ],
            redirected: false,
        }
    }

    #[test]
    fn sendgrid_request_fields() {
        let mut builder = Email::builder()
            .from("Shop <shop@example.com>")
            .to("Ann <ann@example.org>")
            .to("ben@example.org")
            .cc("cc@example.org")
            .cc("ANN@example.org")
            .bcc("bcc@example.org")
            .reply_to("Help <help@example.com>")
            .subject("Hi")
            .text("t")
            .html("<p>h</p>")
            .attach("a.txt", "text/plain", b"hello".to_vec());
        for i in 0..12 {
            builder = builder.tag(format!("tag{}", i % 11));
        }
        let email = builder.build().unwrap();
        let (json, recipients) = request(&email, &api_of(&email), "01JOUTBOXID");
        assert_eq!(recipients, 4, "ANN@example.org is Ann's address again");
        let p = &json["personalizations"];
        assert_eq!(p.as_array().unwrap().len(), 1);
        assert_eq!(
            p[0]["to"],
            json!([{"email": "ann@example.org", "name": "Ann"}, {"email": "ben@example.org"}])
        );
        assert_eq!(p[0]["cc"], json!([{"email": "cc@example.org"}]));
        assert_eq!(p[0]["bcc"], json!([{"email": "bcc@example.org"}]));
        assert_eq!(
            json["from"],
            json!({"email": "shop@example.com", "name": "Shop"})
        );
        assert_eq!(
            json["reply_to"],
            json!({"email": "help@example.com", "name": "Help"})
        );
        assert_eq!(json["subject"], "Hi");
        assert_eq!(
            json["content"],
            json!([{"type": "text/plain", "value": "t"}, {"type": "text/html", "value": "<p>h</p>"}])
        );
        assert_eq!(
            json["headers"],
            json!({"Message-ID": "<01J@example.com>", "X-Campaign": "november, second"})
        );
        let categories = json["categories"].as_array().unwrap();
        assert_eq!(categories.len(), MAX_CATEGORIES);
        assert_eq!(categories[0], "tag0");
        assert_eq!(categories[9], "tag9");
        assert_eq!(
            json["attachments"],
            json!([{"content": "aGVsbG8=", "filename": "a.txt", "type": "text/plain", "disposition": "attachment"}])
        );
        assert_eq!(
            json["custom_args"],
            json!({"outbox_message_id": "01JOUTBOXID"})
        );
        let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), 9, "{keys:?}");
    }

    #[test]
    fn sendgrid_request_leaves_out_what_the_email_lacks() {
        let email = Email::builder()
            .from("shop@example.com")
            .to("ann@example.org")
            .subject("Hi")
            .html("<p>h</p>")
            .build()
            .unwrap();
        let (json, recipients) = request(&email, &api_of(&email), "01J");
        assert_eq!(recipients, 1);
        assert_eq!(
            json["personalizations"],
            json!([{"to": [{"email": "ann@example.org"}]}])
        );
        assert_eq!(json["from"], json!({"email": "shop@example.com"}));
        assert_eq!(
            json["content"],
            json!([{"type": "text/html", "value": "<p>h</p>"}])
        );
        for absent in ["reply_to", "categories", "attachments"] {
            assert!(json.get(absent).is_none(), "{absent}");
        }
    }

    #[test]
    fn sendgrid_sender_sends_the_key_as_a_bearer_token() {
        let sender = SendGridSender::new(&SendGridConfig::new("SG.key-1")).unwrap();
        assert_eq!(sender.authorization, "Bearer SG.key-1");
    }
}
