//! Amazon SES's v2 API: `SendEmail` with the rendered MIME as `Raw` content, signed with
//! AWS Signature Version 4 ([`crate::sigv4`]), and how its answers are classified.
//!
//! Reference: the Amazon SES API v2 reference, "SendEmail" (`POST
//! /v2/email/outbound-emails` on `email.REGION.amazonaws.com`, JSON: `Content.Raw.Data`
//! the MIME message, base64 (a blob); `Destination` {`ToAddresses`, `CcAddresses`,
//! `BccAddresses`}; `FromEmailAddress` optional for a raw message, whose `From` header SES
//! then uses; `ConfigurationSetName`; `EmailTags` [{`Name`, `Value`}]; the answer 200
//! `{"MessageId": "..."}`; errors `AccountSuspendedException`, `BadRequestException`,
//! `LimitExceededException`, `MailFromDomainNotVerifiedException`, `MessageRejected`,
//! `SendingPausedException` (HTTP 400), `NotFoundException` (404),
//! `TooManyRequestsException` (429)) and "Common errors" (`AccessDeniedException`,
//! `ExpiredTokenException`, `IncompleteSignature`, `InvalidClientTokenId`,
//! `UnrecognizedClientException`, `SignatureDoesNotMatch` with 400 or 403;
//! `ThrottlingException` 400; `InternalFailure` 500; `ServiceUnavailable` 503). An error
//! names its type in the `x-amzn-ErrorType` header (`TooManyRequestsException:http://...`:
//! the part before `:`), or in the body's `__type` or `code`, with `message`. Service quotas:
//! 40 MB per message (SES v2 and SMTP), 50 recipients per message (To, Cc and Bcc).

use std::{sync::Arc, time::Duration, time::SystemTime};

use base64::Engine as _;
use serde_json::{json, Map, Value};

use super::{
    aws_credentials::{xml_text, AwsCredentials, CredentialChain, Env},
    http::{HttpClient, HttpFailure},
};
use crate::{
    config::SesConfig, render::Rendered, sigv4, ApiError, ApiVerdict, ConfigError, SendError,
};

const PROVIDER: &str = "ses";

/// SendEmail's path.
const PATH: &str = "/v2/email/outbound-emails";

/// The most recipients (To, Cc and Bcc) SES takes in one message.
pub(crate) const MAX_RECIPIENTS: usize = 50;

/// The largest message SES's v2 API takes: 40 MB (as SES counts them, 2^20 bytes each).
pub(crate) const MAX_MESSAGE_BYTES: usize = 40 * 1024 * 1024;

/// Without a `Retry-After`, a throttled sender slows to one email a second; one whose
/// sending quota (the 24-hour count) is used up, to one a minute.
const THROTTLED_PACE: Duration = Duration::from_secs(1);
const QUOTA_PACE: Duration = Duration::from_secs(60);

/// Sends through SES in one region.
pub(crate) struct SesSender {
    client: HttpClient,
    /// The URL that is signed: the client's origin and [`PATH`].
    url: String,
    region: String,
    configuration_set: Option<String>,
    tags: Vec<(String, String)>,
    credentials: Credentials,
}

/// Where the keys come from.
enum Credentials {
    /// Given by the program.
    Given(Arc<AwsCredentials>),
    /// Found by the chain (and kept until they are about to expire).
    Chain(Box<CredentialChain>),
}

impl SesSender {
    pub(crate) fn new(config: &SesConfig) -> Result<Self, ConfigError> {
        let client = HttpClient::for_endpoint(&config.resolved_endpoint())?;
        let url = format!("{}{PATH}", client.origin());
        let credentials = match &config.credentials {
            Some(c) => Credentials::Given(Arc::new(AwsCredentials {
                access_key_id: c.access_key_id.trim().to_owned(),
                secret_access_key: c.secret_access_key.clone(),
                session_token: c.session_token.clone().filter(|t| !t.is_empty()),
                expiration: None,
                source: "SesConfig::credentials".to_owned(),
            })),
            None => {
                let env = match &config.environment {
                    Some(vars) => Env::Vars(vars.clone()),
                    None => Env::Process,
                };
                Credentials::Chain(Box::new(CredentialChain::new(env, &config.region)))
            }
        };
        Ok(Self {
            client,
            url,
            region: config.region.clone(),
            configuration_set: config.configuration_set.clone(),
            tags: config.tags.clone(),
            credentials,
        })
    }

    /// Sends `rendered` (the bytes SMTP would send, signed when DKIM is configured) to its
    /// envelope recipients; SES's `MessageId` on success.
    pub(crate) async fn send(&self, rendered: &Rendered) -> Result<String, SendError> {
        check_limits(rendered)?;
        let body = serde_json::to_vec(&request(
            rendered,
            self.configuration_set.as_deref(),
            &self.tags,
        ))
        .map_err(|e| SendError::Unsupported(format!("cannot write the request: {e}")))?;
        let credentials = match &self.credentials {
            Credentials::Given(c) => c.clone(),
            Credentials::Chain(chain) => chain
                .credentials()
                .await
                .map_err(|message| SendError::Api(error(None, message, ApiVerdict::Down)))?,
        };
        let signed = sigv4::sign(
            &sigv4::Request {
                method: "POST",
                url: &self.url,
                headers: &[("Content-Type", "application/json")],
                payload: sigv4::Payload::Bytes(&body),
            },
            &credentials.for_signing(),
            &sigv4::SigningParams::new(&self.region, "ses", SystemTime::now()),
        )
        .map_err(|e| {
            SendError::Api(error(
                None,
                format!("{e} (credentials from {})", credentials.source),
                ApiVerdict::Down,
            ))
        })?;
        let mut headers = vec![("Content-Type", "application/json")];
        headers.extend(signed.headers.iter().map(|(n, v)| (*n, v.as_str())));
        match self
            .client
            .request(hyper::Method::POST, PATH, &headers, body)
            .await
        {
            Ok((answer, answer_headers)) => {
                let result = answered(answer.status, &answer_headers, &answer.body);
                if let Err(SendError::Api(e)) = &result {
                    if e.status.is_some_and(|s| s == 401 || s == 403)
                        || e.message.split(':').next().is_some_and(is_auth_error)
                    {
                        // AWS refused the keys (expired, revoked): look again next time.
                        if let Credentials::Chain(chain) = &self.credentials {
                            chain.forget();
                        }
                        tracing::warn!(
                            credentials.source = %credentials.source,
                            access_key_id = %credentials.access_key_id,
                            error = %e, "SES refused the AWS credentials"
                        );
                    }
                }
                result
            }
            Err(failure) => Err(SendError::Api(unreachable(failure))),
        }
    }
}

/// Refuses an email SES would refuse for its size or its number of recipients, before
/// anything is sent: a permanent error naming the limit.
pub(crate) fn check_limits(rendered: &Rendered) -> Result<(), SendError> {
    let recipients = rendered.recipients.len();
    if recipients > MAX_RECIPIENTS {
        return Err(SendError::Unsupported(format!(
            "the email has {recipients} recipients (To, Cc and Bcc) and Amazon SES takes at \
             most {MAX_RECIPIENTS} per message: send it as several emails"
        )));
    }
    let size = rendered.bytes.len();
    if size > MAX_MESSAGE_BYTES {
        return Err(SendError::Unsupported(format!(
            "the message is {size} bytes and Amazon SES takes at most 40 MB \
             ({MAX_MESSAGE_BYTES} bytes) per message, attachments included"
        )));
    }
    Ok(())
}

/// SendEmail's JSON for `rendered`: the MIME as `Raw` content, every envelope recipient
/// (Bcc included: they are not in the message's headers) as `ToAddresses`, the
/// configuration set and the tags.
pub(crate) fn request(
    rendered: &Rendered,
    configuration_set: Option<&str>,
    tags: &[(String, String)],
) -> Value {
    let mut m = Map::new();
    m.insert(
        "Content".into(),
        json!({ "Raw": {
            "Data": base64::engine::general_purpose::STANDARD.encode(&rendered.bytes)
        } }),
    );
    let to: Vec<String> = rendered
        .recipients
        .iter()
        .map(ToString::to_string)
        .collect();
    m.insert("Destination".into(), json!({ "ToAddresses": to }));
    if let Some(set) = configuration_set {
        m.insert("ConfigurationSetName".into(), set.into());
    }
    if !tags.is_empty() {
        let tags: Vec<Value> = tags
            .iter()
            .map(|(name, value)| json!({ "Name": name, "Value": value }))
            .collect();
        m.insert("EmailTags".into(), tags.into());
    }
    Value::Object(m)
}

/// An answer: SES's `MessageId` for a success, else the classified error (its message
/// is `ErrorType: message (request id ...)`).
fn answered(status: u16, headers: &hyper::HeaderMap, body: &[u8]) -> Result<String, SendError> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty())
    };
    let json: Option<Value> = serde_json::from_slice(body).ok();
    let field = |names: &[&str]| {
        names.iter().find_map(|name| {
            json.as_ref()
                .and_then(|j| j.get(*name))
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        })
    };
    if (200..300).contains(&status) {
        return Ok(field(&["MessageId"]).unwrap_or_default());
    }
    let text = String::from_utf8_lossy(body);
    let error_type = header("x-amzn-errortype")
        .map(str::to_owned)
        .or_else(|| field(&["__type", "code", "Code"]))
        .or_else(|| xml_text(&text, "Code"))
        .map(|t| {
            // `TooManyRequestsException:http://internal.amazon.com/...`,
            // `com.amazonaws.sesv2#MessageRejected`.
            let t = t.split(':').next().unwrap_or_default();
            t.rsplit('#').next().unwrap_or_default().trim().to_owned()
        })
        .filter(|t| !t.is_empty());
    let message = field(&["message", "Message"])
        .or_else(|| xml_text(&text, "Message"))
        .unwrap_or_else(|| {
            let text = text.trim();
            match text.is_empty() {
                true => "(no message)".to_owned(),
                false => text.chars().take(300).collect(),
            }
        });
    let mut message = match &error_type {
        Some(t) => format!("{t}: {message}"),
        None => message,
    };
    if let Some(id) = header("x-amzn-requestid") {
        message.push_str(&format!(" (request id {id})"));
    }
    let retry_after = header("retry-after").and_then(|v| v.parse::<u64>().ok());
    Err(SendError::Api(error(
        Some(status),
        message,
        classify(status, error_type.as_deref(), retry_after),
    )))
}

fn error(status: Option<u16>, message: String, verdict: ApiVerdict) -> ApiError {
    ApiError {
        provider: PROVIDER,
        status,
        code: None,
        message,
        verdict,
    }
}

/// No answer: a refused connection means SES (or the test server) is down; the rest is
/// retried.
fn unreachable(failure: HttpFailure) -> ApiError {
    let (message, verdict) = match failure {
        HttpFailure::Refused(what) => (what, ApiVerdict::Down),
        HttpFailure::Connection(what) => (what, ApiVerdict::Retry),
        HttpFailure::Timeout(after) => (format!("no answer within {after:?}"), ApiVerdict::Retry),
    };
    error(None, message, verdict)
}

/// True for the error types of keys AWS does not take (unknown, expired, bad signature,
/// not allowed).
fn is_auth_error(error_type: &str) -> bool {
    matches!(
        error_type,
        "UnrecognizedClientException"
            | "InvalidClientTokenId"
            | "InvalidSignatureException"
            | "SignatureDoesNotMatch"
            | "IncompleteSignature"
            | "IncompleteSignatureException"
            | "MissingAuthenticationToken"
            | "MissingAuthenticationTokenException"
            | "AccessDeniedException"
            | "AccessDenied"
            | "ExpiredTokenException"
            | "ExpiredToken"
            | "RequestExpired"
    )
}

/// Classifies SES's answer `status` (not a 2xx) with its error type and `Retry-After`
/// seconds:
///
/// | answer | verdict |
/// | --- | --- |
/// | `TooManyRequestsException`, `ThrottlingException`, `Throttling`, HTTP 429 | slow down: one per `Retry-After` s (else 1 s) |
/// | `LimitExceededException` (the sending quota) | slow down: one per `Retry-After` s (else 60 s) |
/// | `SendingPausedException`, `AccountSuspendedException` | down |
/// | keys refused: `UnrecognizedClientException`, `InvalidSignatureException`, `SignatureDoesNotMatch`, `AccessDeniedException`, `ExpiredTokenException` (and the like), HTTP 401, 403 | down |
/// | `NotFoundException`, HTTP 404 (an unknown configuration set) | down |
/// | `MessageRejected`, `BadRequestException`, `MailFromDomainNotVerifiedException`, any other 4xx | permanent |
/// | HTTP 5xx, anything else | retry |
pub(crate) fn classify(
    status: u16,
    error_type: Option<&str>,
    retry_after: Option<u64>,
) -> ApiVerdict {
    let slow = |default: Duration| {
        ApiVerdict::SlowDown(
            retry_after
                .map(|s| Duration::from_secs(s.max(1)))
                .unwrap_or(default),
        )
    };
    match error_type.unwrap_or_default() {
        "TooManyRequestsException" | "ThrottlingException" | "Throttling" => slow(THROTTLED_PACE),
        "LimitExceededException" => slow(QUOTA_PACE),
        "SendingPausedException" | "AccountSuspendedException" | "NotFoundException" => {
            ApiVerdict::Down
        }
        t if is_auth_error(t) => ApiVerdict::Down,
        "MessageRejected" | "BadRequestException" | "MailFromDomainNotVerifiedException" => {
            ApiVerdict::Permanent
        }
        _ => match status {
            429 => slow(THROTTLED_PACE),
            401 | 403 | 404 => ApiVerdict::Down,
            500..=599 => ApiVerdict::Retry,
            400..=499 => ApiVerdict::Permanent,
            _ => ApiVerdict::Retry,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use outbox_core::HandlerErrorKind;

    fn rendered(recipients: usize, bytes: &[u8]) -> Rendered {
        Rendered {
            message_id: "<01J0@example.com>".to_owned(),
            from: "shop@example.com".parse().unwrap(),
            recipients: (0..recipients)
                .map(|i| format!("user{i}@example.org").parse().unwrap())
                .collect(),
            bytes: bytes.to_vec(),
            redirected: false,
            from_domain: Some("example.com".to_owned()),
        }
    }

    fn headers(pairs: &[(&str, &str)]) -> hyper::HeaderMap {
        let mut map = hyper::HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                hyper::header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                value.parse().unwrap(),
            );
        }
        map
    }

    fn error_of(status: u16, pairs: &[(&str, &str)], body: &str) -> ApiError {
        match answered(status, &headers(pairs), body.as_bytes()) {
            Err(SendError::Api(e)) => e,
            other => panic!("not an API error: {other:?}"),
        }
    }

    fn kind(status: u16, error_type: &str, message: &str) -> HandlerErrorKind {
        let body = json!({ "message": message }).to_string();
        SendError::Api(error_of(status, &[("x-amzn-ErrorType", error_type)], &body))
            .into_handler_error()
            .kind()
    }

    #[test]
    fn the_request_carries_the_raw_mime_every_recipient_the_set_and_the_tags() {
        let mime = b"From: shop@example.com\r\nSubject: Hi\r\n\r\nbody\r\n";
        let r = rendered(3, mime);
        let tags = vec![
            ("campaign".to_owned(), "nov".to_owned()),
            ("kind".to_owned(), "receipt".to_owned()),
        ];
        let body = request(&r, Some("transactional"), &tags);
        assert_eq!(
            body,
            json!({
                "Content": { "Raw": { "Data":
                    base64::engine::general_purpose::STANDARD.encode(mime) } },
                "Destination": { "ToAddresses":
                    ["user0@example.org", "user1@example.org", "user2@example.org"] },
                "ConfigurationSetName": "transactional",
                "EmailTags": [
                    { "Name": "campaign", "Value": "nov" },
                    { "Name": "kind", "Value": "receipt" }
                ]
            })
        );
        // Neither set nor tags: the fields are left out; no FromEmailAddress (the raw
        // message's From header is the sender).
        let body = request(&r, None, &[]);
        let keys: Vec<&String> = body.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["Content", "Destination"]);
    }

    #[test]
    fn limits_are_checked_before_sending_and_named() {
        assert!(check_limits(&rendered(50, b"x")).is_ok());
        let e = check_limits(&rendered(51, b"x")).unwrap_err();
        assert!(e.is_permanent());
        assert!(e.to_string().contains("51 recipients"), "{e}");
        assert!(e.to_string().contains("at most 50 per message"), "{e}");
        let big = vec![b'a'; MAX_MESSAGE_BYTES + 1];
        let e = check_limits(&rendered(1, &big)).unwrap_err();
        assert!(e.is_permanent());
        assert!(e.to_string().contains("at most 40 MB"), "{e}");
        assert!(check_limits(&rendered(1, &big[1..])).is_ok());
    }

    #[test]
    fn ses_ok_keeps_the_message_id() {
        let body =
            r#"{"MessageId":"0102018f3c2a7d1e-5d1c9a1b-0f0e-4a6b-9a1e-2b8f3c4d5e6f-000000"}"#;
        assert_eq!(
            answered(200, &headers(&[]), body.as_bytes()).unwrap(),
            "0102018f3c2a7d1e-5d1c9a1b-0f0e-4a6b-9a1e-2b8f3c4d5e6f-000000"
        );
        assert_eq!(answered(200, &headers(&[]), b"").unwrap(), "");
    }

    #[test]
    fn the_error_type_comes_from_the_header_or_the_body() {
        let e = error_of(
            429,
            &[
                (
                    "x-amzn-ErrorType",
                    "TooManyRequestsException:http://internal.amazon.com/coral/com.amazon.coral.availability/",
                ),
                ("x-amzn-RequestId", "5c8a0a8e-1f2b-4c3d-9e4f-0a1b2c3d4e5f"),
            ],
            r#"{"message":"Too Many Requests"}"#,
        );
        assert_eq!(
            e.message,
            "TooManyRequestsException: Too Many Requests (request id \
             5c8a0a8e-1f2b-4c3d-9e4f-0a1b2c3d4e5f)"
        );
        assert_eq!(e.verdict, ApiVerdict::SlowDown(Duration::from_secs(1)));
        // `__type` with a namespace, `Message` capitalized (as an emulator writes it).
        let e = error_of(
            400,
            &[],
            r#"{"__type":"com.amazonaws.sesv2#MessageRejected","Message":"Email address is not verified."}"#,
        );
        assert_eq!(e.message, "MessageRejected: Email address is not verified.");
        assert_eq!(e.verdict, ApiVerdict::Permanent);
        let e = error_of(
            400,
            &[],
            r#"{"code":"SendingPausedException","message":"Sending is paused for this account."}"#,
        );
        assert_eq!(e.verdict, ApiVerdict::Down);
        // An XML error (a proxy, an older endpoint).
        let e = error_of(
            403,
            &[],
            "<ErrorResponse><Error><Type>Sender</Type><Code>SignatureDoesNotMatch</Code>\
             <Message>The request signature we calculated does not match</Message></Error>\
             </ErrorResponse>",
        );
        assert_eq!(
            e.message,
            "SignatureDoesNotMatch: The request signature we calculated does not match"
        );
        assert_eq!(e.verdict, ApiVerdict::Down);
        // Nothing but a status and a body.
        let e = error_of(502, &[], "<html>Bad Gateway</html>");
        assert_eq!(e.message, "<html>Bad Gateway</html>");
        assert_eq!(e.verdict, ApiVerdict::Retry);
        assert_eq!(error_of(500, &[], "").message, "(no message)");
    }

    #[test]
    fn ses_classification() {
        let slow = |s: u64| ApiVerdict::SlowDown(Duration::from_secs(s));
        let table: &[(u16, &str, Option<u64>, ApiVerdict)] = &[
            (429, "TooManyRequestsException", None, slow(1)),
            (429, "TooManyRequestsException", Some(20), slow(20)),
            (400, "ThrottlingException", None, slow(1)),
            (400, "LimitExceededException", None, slow(60)),
            (400, "LimitExceededException", Some(5), slow(5)),
            (429, "", None, slow(1)),
            (400, "SendingPausedException", None, ApiVerdict::Down),
            (400, "AccountSuspendedException", None, ApiVerdict::Down),
            (403, "AccountSuspendedException", None, ApiVerdict::Down),
            (403, "UnrecognizedClientException", None, ApiVerdict::Down),
            (403, "InvalidSignatureException", None, ApiVerdict::Down),
            (403, "SignatureDoesNotMatch", None, ApiVerdict::Down),
            (403, "AccessDeniedException", None, ApiVerdict::Down),
            (403, "ExpiredTokenException", None, ApiVerdict::Down),
            (400, "ExpiredTokenException", None, ApiVerdict::Down),
            (403, "", None, ApiVerdict::Down),
            (401, "", None, ApiVerdict::Down),
            (404, "NotFoundException", None, ApiVerdict::Down),
            (400, "MessageRejected", None, ApiVerdict::Permanent),
            (400, "BadRequestException", None, ApiVerdict::Permanent),
            (
                400,
                "MailFromDomainNotVerifiedException",
                None,
                ApiVerdict::Permanent,
            ),
            (400, "SerializationException", None, ApiVerdict::Permanent),
            (413, "", None, ApiVerdict::Permanent),
            (500, "InternalFailure", None, ApiVerdict::Retry),
            (503, "ServiceUnavailable", None, ApiVerdict::Retry),
            (504, "", None, ApiVerdict::Retry),
            (302, "", None, ApiVerdict::Retry),
        ];
        for (status, error_type, retry_after, verdict) in table {
            let error_type = Some(*error_type).filter(|t| !t.is_empty());
            assert_eq!(
                classify(*status, error_type, *retry_after),
                *verdict,
                "{status} {error_type:?}"
            );
        }
    }

    #[test]
    fn verdicts_reach_the_outbox_as_its_failure_classes() {
        assert_eq!(
            kind(
                429,
                "TooManyRequestsException",
                "Maximum sending rate exceeded."
            ),
            HandlerErrorKind::SlowDown {
                one_per: Duration::from_secs(1),
                during: Duration::from_secs(600)
            }
        );
        assert_eq!(
            kind(400, "AccountSuspendedException", "suspended"),
            HandlerErrorKind::Down
        );
        assert_eq!(
            kind(
                404,
                "NotFoundException",
                "Configuration set <x> does not exist."
            ),
            HandlerErrorKind::Down
        );
        assert_eq!(
            kind(400, "MessageRejected", "Email address is not verified."),
            HandlerErrorKind::Permanent
        );
        assert_eq!(
            kind(500, "InternalFailure", "oops"),
            HandlerErrorKind::Retry
        );
        let e = SendError::Api(error_of(
            400,
            &[(
                "x-amzn-ErrorType",
                "MessageRejected:http://internal.amazon.com/",
            )],
            r#"{"message":"Email address is not verified. The following identities failed the check in region EU-WEST-1: shop@example.com"}"#,
        ));
        assert_eq!(
            e.to_string(),
            "ses answered HTTP 400: MessageRejected: Email address is not verified. The \
             following identities failed the check in region EU-WEST-1: shop@example.com; \
             not retried; fix the cause, then requeue it from the dead letters"
        );
        assert_eq!(
            unreachable(HttpFailure::Refused("x".into())).verdict,
            ApiVerdict::Down
        );
        let timeout = unreachable(HttpFailure::Timeout(Duration::from_secs(30)));
        assert_eq!(timeout.verdict, ApiVerdict::Retry);
        assert!(SendError::Api(timeout)
            .to_string()
            .starts_with("ses API: no answer within 30s; "));
    }

    #[test]
    fn the_signed_url_is_the_one_the_client_sends_to() {
        let sender =
            SesSender::new(&SesConfig::new("eu-west-1").credentials("AKID", "s", None)).unwrap();
        assert_eq!(
            sender.url,
            "https://email.eu-west-1.amazonaws.com/v2/email/outbound-emails"
        );
        let sender = SesSender::new(
            &SesConfig::new("eu-west-1")
                .host("127.0.0.1", Some(8025))
                .plain_http(),
        )
        .unwrap();
        assert_eq!(sender.url, "http://127.0.0.1:8025/v2/email/outbound-emails");
        let sender = SesSender::new(&SesConfig::new("cn-north-1")).unwrap();
        assert_eq!(
            sender.url,
            "https://email.cn-north-1.amazonaws.com.cn/v2/email/outbound-emails"
        );
    }
}
