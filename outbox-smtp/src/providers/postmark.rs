//! Postmark's Email API: `POST /email` with the server token, and how its answers are
//! classified.
//!
//! Reference: postmarkapp.com's developer docs, "Email API" (send a single email: the
//! request fields `From`, `To`, `Cc`, `Bcc`, `ReplyTo`, `Subject`, `Tag`, `HtmlBody`,
//! `TextBody`, `Headers` [{Name, Value}], `Attachments` [{Name, Content, ContentType}],
//! `MessageStream`; the `X-Postmark-Server-Token` header; the answer
//! `{"To", "SubmittedAt", "MessageID", "ErrorCode": 0, "Message": "OK"}`) and "API error
//! codes" (10 bad or missing token, 300 invalid email request, 405 not allowed to send,
//! 406 inactive recipient, 412 account pending approval, 413 stream or account inactive;
//! HTTP 401 unauthorized, 422 unprocessable with an ErrorCode, 429 rate limited, 500
//! internal error).

use std::time::Duration;

use base64::Engine as _;
use serde_json::{json, Map, Value};

use super::{
    http::{HttpAnswer, HttpClient, HttpFailure},
    ApiAccepted,
};
use crate::{
    config::PostmarkConfig, render::ApiEmail, ApiError, ApiVerdict, ConfigError, Email, SendError,
};

const PROVIDER: &str = "postmark";

/// Postmark's limit on one email with its attachments: 10 MB ("Email API": a message of
/// at most 10 MB, attachments included).
pub(crate) const MAX_BYTES: usize = 10 * 1024 * 1024;
/// Postmark's limit on recipients per email, To, Cc and Bcc together: 50.
pub(crate) const MAX_RECIPIENTS: usize = 50;

/// Sends through one Postmark server (its token).
pub(crate) struct PostmarkSender {
    client: HttpClient,
    token: String,
    stream: Option<String>,
}

impl PostmarkSender {
    pub(crate) fn new(config: &PostmarkConfig) -> Result<Self, ConfigError> {
        let client = HttpClient::for_endpoint(&config.endpoint)?;
        Ok(Self {
            client,
            token: config.token.clone(),
            stream: config.stream.clone(),
        })
    }

    /// Sends `email` (prepared as `api`); Postmark's `MessageID` on success.
    pub(crate) async fn send(
        &self,
        email: &Email,
        api: &ApiEmail,
    ) -> Result<ApiAccepted, SendError> {
        let body = serde_json::to_vec(&request(email, api, self.stream.as_deref()))
            .map_err(|e| SendError::Unsupported(format!("cannot write the request: {e}")))?;
        let headers = [
            ("Accept", "application/json"),
            ("X-Postmark-Server-Token", self.token.as_str()),
        ];
        let recipients = api.recipients().count();
        match self.client.post_json("/email", &headers, body).await {
            Ok(answer) => answered(&answer, recipients),
            Err(failure) => Err(SendError::Api(unreachable(failure))),
        }
    }
}

/// Postmark's JSON for `email`: the addresses and headers of `api` (redirected, with the
/// Message-ID and the list headers), the first tag, the stream.
pub(crate) fn request(email: &Email, api: &ApiEmail, stream: Option<&str>) -> Value {
    let join = |list: &[crate::Mailbox]| {
        list.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut m = Map::new();
    m.insert("From".into(), email.from.to_string().into());
    m.insert("To".into(), join(&api.to).into());
    if !api.cc.is_empty() {
        m.insert("Cc".into(), join(&api.cc).into());
    }
    if !api.bcc.is_empty() {
        m.insert("Bcc".into(), join(&api.bcc).into());
    }
    if let Some(reply_to) = &email.reply_to {
        m.insert("ReplyTo".into(), reply_to.to_string().into());
    }
    m.insert("Subject".into(), email.subject.clone().into());
    if let Some(text) = &email.text {
        m.insert("TextBody".into(), text.clone().into());
    }
    if let Some(html) = &email.html {
        m.insert("HtmlBody".into(), html.clone().into());
    }
    let headers: Vec<Value> = api
        .headers
        .iter()
        .map(|(name, value)| json!({ "Name": name, "Value": value }))
        .collect();
    m.insert("Headers".into(), headers.into());
    if let Some(tag) = email.tags.first() {
        m.insert("Tag".into(), tag.clone().into());
    }
    if let Some(stream) = stream {
        m.insert("MessageStream".into(), stream.into());
    }
    if !email.attachments.is_empty() {
        let attachments: Vec<Value> = email
            .attachments
            .iter()
            .map(|a| {
                json!({
                    "Name": a.file_name.trim(),
                    "Content": base64::engine::general_purpose::STANDARD.encode(&a.bytes),
                    "ContentType": a.content_type.trim(),
                })
            })
            .collect();
        m.insert("Attachments".into(), attachments.into());
    }
    Value::Object(m)
}

/// An answer: Postmark's `MessageID` for a success, else the classified error.
fn answered(answer: &HttpAnswer, recipients: usize) -> Result<ApiAccepted, SendError> {
    let json: Option<Value> = serde_json::from_slice(&answer.body).ok();
    let field = |name: &str| json.as_ref().and_then(|j| j.get(name));
    let code = field("ErrorCode").and_then(Value::as_i64);
    let message = field("Message")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| {
            let text = String::from_utf8_lossy(&answer.body);
            let text = text.trim();
            match text.is_empty() {
                true => "(no message)".to_owned(),
                false => text.chars().take(300).collect(),
            }
        });
    if (200..300).contains(&answer.status) && code.unwrap_or(0) == 0 {
        let id = field("MessageID")
            .and_then(Value::as_str)
            .unwrap_or_default();
        return Ok(ApiAccepted {
            id: id.to_owned(),
            inactive: inactive_in(&message)
                .into_iter()
                .map(|address| (address, message.clone()))
                .collect(),
        });
    }
    // Seconds, or an HTTP-date.
    let retry_after = answer
        .retry_after
        .as_deref()
        .and_then(|v| super::hints::retry_after(v, std::time::SystemTime::now()))
        .map(|wait| wait.as_secs());
    Err(SendError::Api(ApiError {
        provider: PROVIDER,
        status: Some(answer.status),
        code,
        message,
        verdict: classify(answer.status, code, retry_after, recipients),
    }))
}

/// The addresses a success's `Message` says Postmark will not deliver to: "Message OK, but
/// will not deliver to these inactive addresses: a@example.com, b@example.com. Inactive
/// recipients are ones that have generated a hard bounce or a spam complaint."
fn inactive_in(message: &str) -> Vec<String> {
    const SAID: &str = "will not deliver to these inactive addresses:";
    let Some(at) = message.find(SAID) else {
        return Vec::new();
    };
    let rest = &message[at + SAID.len()..];
    let list = rest.split(". ").next().unwrap_or(rest);
    list.split(',')
        .map(|a| a.trim().trim_end_matches('.').to_owned())
        .filter(|a| a.contains('@'))
        .collect()
}

/// No answer: a refused connection means Postmark (or the test server) is down; the rest
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

/// Classifies Postmark's answer `status` with its `ErrorCode` `code`, its `Retry-After`
/// seconds, for an email to `recipients` addresses:
///
/// | answer | verdict |
/// | --- | --- |
/// | HTTP 401, or ErrorCode 10 (bad token) | down |
/// | ErrorCode 405 (not allowed to send), 412 (account pending), 413 (inactive) | down |
/// | HTTP 429 | slow down: one per `Retry-After` s (else 1 s) |
/// | HTTP 5xx | retry |
/// | ErrorCode 406 (inactive recipient), one recipient | suppress (hard bounce) |
/// | ErrorCode 406, several recipients | permanent |
/// | ErrorCode 300 (invalid request), any other 4xx | permanent |
/// | anything else | retry |
pub(crate) fn classify(
    status: u16,
    code: Option<i64>,
    retry_after: Option<u64>,
    recipients: usize,
) -> ApiVerdict {
    match (status, code) {
        (401, _) | (_, Some(10 | 405 | 412 | 413)) => ApiVerdict::Down,
        (429, _) => ApiVerdict::SlowDown(Duration::from_secs(retry_after.unwrap_or(1).max(1))),
        (500..=599, _) => ApiVerdict::Retry,
        (_, Some(406)) if recipients == 1 => ApiVerdict::HardBounce,
        (_, Some(406)) => ApiVerdict::Permanent,
        (400..=499, _) => ApiVerdict::Permanent,
        // A 2xx with an ErrorCode other than 0: Postmark's codes are request errors.
        (200..=299, Some(_)) => ApiVerdict::Permanent,
        _ => ApiVerdict::Retry,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Mailbox;

    fn answer(status: u16, body: &str, retry_after: Option<&str>) -> HttpAnswer {
        HttpAnswer {
            status,
            retry_after: retry_after.map(str::to_owned),
            body: body.as_bytes().to_vec(),
        }
    }

    fn verdict(status: u16, body: &str, retry_after: Option<&str>, recipients: usize) -> ApiError {
        match answered(&answer(status, body, retry_after), recipients) {
            Err(SendError::Api(e)) => e,
            other => panic!("not an API error: {other:?}"),
        }
    }

    #[test]
    fn postmark_ok_keeps_the_message_id() {
        let body = r#"{"To":"a@example.com","SubmittedAt":"2024-01-01T00:00:00Z","MessageID":"b7bc2f4a-e38e-4336-af7d-e6c392c2f817","ErrorCode":0,"Message":"OK"}"#;
        let accepted = answered(&answer(200, body, None), 1).unwrap();
        assert_eq!(accepted.id, "b7bc2f4a-e38e-4336-af7d-e6c392c2f817");
        assert!(accepted.inactive.is_empty());
    }

    #[test]
    fn postmark_ok_names_the_inactive_recipients_it_will_not_deliver_to() {
        let body = r#"{"To":"a@example.com, gone@example.com","SubmittedAt":"2024-01-01T00:00:00Z","MessageID":"m-1","ErrorCode":0,"Message":"Message OK, but will not deliver to these inactive addresses: gone@example.com, Old@Example.org. Inactive recipients are ones that have generated a hard bounce or a spam complaint."}"#;
        let accepted = answered(&answer(200, body, None), 3).unwrap();
        let who: Vec<&str> = accepted.inactive.iter().map(|(a, _)| a.as_str()).collect();
        assert_eq!(who, ["gone@example.com", "Old@Example.org"]);
        assert!(accepted.inactive[0].1.contains("hard bounce"));
    }

    #[test]
    fn postmark_401_is_down() {
        let e = verdict(
            401,
            r#"{"ErrorCode":10,"Message":"Bad or missing Server API token."}"#,
            None,
            1,
        );
        assert_eq!(e.verdict, ApiVerdict::Down);
        let text = SendError::Api(e).to_string();
        assert!(
            text.contains("HTTP 401") && text.contains("ErrorCode 10"),
            "{text}"
        );
        assert!(text.contains("Bad or missing Server API token."), "{text}");
        assert_eq!(
            SendError::Api(verdict(401, "", None, 1))
                .into_handler_error()
                .kind(),
            outbox_core::HandlerErrorKind::Down
        );
    }

    #[test]
    fn postmark_error_code_10_is_down_whatever_the_status() {
        let e = verdict(422, r#"{"ErrorCode":10,"Message":"Bad token"}"#, None, 1);
        assert_eq!(e.verdict, ApiVerdict::Down);
    }

    #[test]
    fn postmark_sending_not_allowed_pending_or_inactive_is_down() {
        for code in [405, 412, 413] {
            let body = format!(r#"{{"ErrorCode":{code},"Message":"no"}}"#);
            assert_eq!(
                verdict(422, &body, None, 1).verdict,
                ApiVerdict::Down,
                "{code}"
            );
        }
    }

    #[test]
    fn postmark_406_to_one_recipient_suppresses_it() {
        let e = verdict(
            422,
            r#"{"ErrorCode":406,"Message":"You tried to send to a recipient that has been marked as inactive."}"#,
            None,
            1,
        );
        assert_eq!(e.verdict, ApiVerdict::HardBounce);
        let kind = SendError::Api(e).into_handler_error().kind();
        assert_eq!(
            kind,
            outbox_core::HandlerErrorKind::Suppress(outbox_core::SuppressionReason::HardBounce)
        );
    }

    #[test]
    fn postmark_406_to_several_recipients_is_permanent() {
        let e = verdict(422, r#"{"ErrorCode":406,"Message":"inactive"}"#, None, 3);
        assert_eq!(e.verdict, ApiVerdict::Permanent);
        let error = SendError::Api(e);
        assert!(error.to_string().contains("inactive"));
        assert_eq!(
            error.into_handler_error().kind(),
            outbox_core::HandlerErrorKind::Permanent
        );
    }

    #[test]
    fn postmark_300_and_other_4xx_are_permanent() {
        let e = verdict(
            422,
            r#"{"ErrorCode":300,"Message":"Invalid email request"}"#,
            None,
            1,
        );
        assert_eq!(e.verdict, ApiVerdict::Permanent);
        assert_eq!((e.status, e.code), (Some(422), Some(300)));
        assert_eq!(
            verdict(422, r#"{"ErrorCode":701,"Message":"x"}"#, None, 1).verdict,
            ApiVerdict::Permanent
        );
        assert_eq!(
            verdict(400, "not json", None, 1).verdict,
            ApiVerdict::Permanent
        );
        assert_eq!(verdict(400, "not json", None, 1).message, "not json");
    }

    #[test]
    fn postmark_429_slows_down_by_retry_after() {
        let e = verdict(
            429,
            r#"{"ErrorCode":0,"Message":"Rate limited"}"#,
            Some("7"),
            1,
        );
        assert_eq!(e.verdict, ApiVerdict::SlowDown(Duration::from_secs(7)));
        // An HTTP-date a minute ahead.
        let later = httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(61));
        let dated = verdict(429, "", Some(&later), 1);
        assert!(
            matches!(dated.verdict, ApiVerdict::SlowDown(d) if (59..=61).contains(&d.as_secs())),
            "{:?}",
            dated.verdict
        );
        let no_header = verdict(429, "", None, 1);
        assert_eq!(
            no_header.verdict,
            ApiVerdict::SlowDown(Duration::from_secs(1))
        );
        let kind = SendError::Api(e).into_handler_error().kind();
        assert_eq!(
            kind,
            outbox_core::HandlerErrorKind::SlowDown {
                one_per: Duration::from_secs(7),
                during: Duration::from_secs(600)
            }
        );
    }

    #[test]
    fn postmark_5xx_is_retried() {
        for status in [500, 502, 503] {
            let e = verdict(status, r#"{"ErrorCode":0,"Message":"Internal"}"#, None, 1);
            assert_eq!(e.verdict, ApiVerdict::Retry, "{status}");
        }
        assert_eq!(
            SendError::Api(verdict(500, "", None, 1))
                .into_handler_error()
                .kind(),
            outbox_core::HandlerErrorKind::Retry
        );
    }

    #[test]
    fn postmark_refused_is_down_and_timeouts_and_broken_connections_retry() {
        assert_eq!(
            unreachable(HttpFailure::Refused("x".into())).verdict,
            ApiVerdict::Down
        );
        assert_eq!(
            unreachable(HttpFailure::Connection("x".into())).verdict,
            ApiVerdict::Retry
        );
        assert_eq!(
            unreachable(HttpFailure::Timeout(Duration::from_secs(30))).verdict,
            ApiVerdict::Retry
        );
    }

    #[test]
    fn postmark_request_fields() {
        let email = Email::builder()
            .from("Shop <shop@example.com>")
            .to("Ann <ann@example.org>")
            .cc("cc@example.org")
            .bcc("bcc@example.org")
            .reply_to("help@example.com")
            .subject("Hi")
            .text("t")
            .html("<p>h</p>")
            .tag("welcome")
            .tag("second")
            .attach("a.txt", "text/plain", b"hello".to_vec())
            .build()
            .unwrap();
        let api = ApiEmail {
            message_id: "<id@example.com>".into(),
            to: email.to.clone(),
            cc: email.cc.clone(),
            bcc: vec![Mailbox::from("bcc@example.org")],
            headers: vec![("Message-ID".into(), "<id@example.com>".into())],
            redirected: false,
        };
        let json = request(&email, &api, Some("outbound"));
        assert_eq!(json["From"], "Shop <shop@example.com>");
        assert_eq!(json["To"], "Ann <ann@example.org>");
        assert_eq!(json["Cc"], "cc@example.org");
        assert_eq!(json["Bcc"], "bcc@example.org");
        assert_eq!(json["ReplyTo"], "help@example.com");
        assert_eq!(json["Subject"], "Hi");
        assert_eq!(json["TextBody"], "t");
        assert_eq!(json["HtmlBody"], "<p>h</p>");
        assert_eq!(json["Tag"], "welcome");
        assert_eq!(json["MessageStream"], "outbound");
        assert_eq!(json["Headers"][0]["Name"], "Message-ID");
        assert_eq!(json["Attachments"][0]["Content"], "aGVsbG8=");
        assert_eq!(json["Attachments"][0]["ContentType"], "text/plain");
        assert_eq!(json["Attachments"][0]["Name"], "a.txt");
    }
}
