//! What a provider's answer says about when to try again, shared by the SendGrid and
//! Resend transports: `Retry-After` as seconds or as an HTTP-date (RFC 9110, section
//! 10.2.3), a reset given in seconds from now (Resend's `ratelimit-reset`) or as a Unix
//! time (SendGrid's `X-RateLimit-Reset`); and what no answer at all means.
//!
//! Failure modes: a hint that does not parse is ignored (the caller's default applies);
//! a date in the past counts as "now" and a wait is never shorter than a second nor longer
//! than a day (the most a slow-down keeps).

use std::time::{Duration, SystemTime};

use super::http::HttpFailure;
use crate::{ApiError, ApiVerdict};

/// The longest wait a hint may ask for: a slow-down keeps at most a day.
const LONGEST: Duration = Duration::from_secs(24 * 3600);

/// The value of header `name` in `headers`, when it is text.
pub(crate) fn header<'a>(headers: &'a hyper::HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
}

/// A `Retry-After` value at `now`: whole seconds, or an HTTP-date
/// (`Wed, 21 Oct 2015 07:28:00 GMT`).
pub(crate) fn retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Some(wait) = seconds(value) {
        return Some(wait);
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Whole seconds from now (`ratelimit-reset: 30`).
pub(crate) fn seconds(value: &str) -> Option<Duration> {
    value.trim().parse::<u64>().ok().map(Duration::from_secs)
}

/// A Unix time in seconds (`X-RateLimit-Reset: 1392815263`), as a wait from `now`.
pub(crate) fn unix_reset(value: &str, now: SystemTime) -> Option<Duration> {
    let at = SystemTime::UNIX_EPOCH + Duration::from_secs(value.trim().parse::<u64>().ok()?);
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Slow down to one per `hint`, else one per `otherwise`; at least a second, at most a day.
pub(crate) fn slow_down(hint: Option<Duration>, otherwise: Duration) -> ApiVerdict {
    let wait = hint.unwrap_or(otherwise);
    // Round a part of a second up: the provider asked for at least that long.
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    ApiVerdict::SlowDown(Duration::from_secs(secs.max(1)).min(LONGEST))
}

/// The answer's body as a message, when it carries no message field: its first 300
/// characters, or `(no message)`.
pub(crate) fn body_text(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    match text.is_empty() {
        true => "(no message)".to_owned(),
        false => text.chars().take(300).collect(),
    }
}

/// No answer from `provider`: a refused connection means it (or the test server) is down;
/// a broken connection or a timeout is retried.
pub(crate) fn unreachable(provider: &'static str, failure: HttpFailure) -> ApiError {
    let (message, verdict) = match failure {
        HttpFailure::Refused(what) => (what, ApiVerdict::Down),
        HttpFailure::Connection(what) => (what, ApiVerdict::Retry),
        HttpFailure::Timeout(after) => (format!("no answer within {after:?}"), ApiVerdict::Retry),
    };
    ApiError {
        provider,
        status: None,
        code: None,
        message,
        verdict,
    }
}

/// An email `provider` cannot take (over one of its limits): permanent, with `message`
/// naming the limit, and nothing sent.
pub(crate) fn over_limit(provider: &'static str, message: String) -> crate::SendError {
    crate::SendError::Api(ApiError {
        provider,
        status: None,
        code: None,
        message,
        verdict: ApiVerdict::Permanent,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_is_seconds_or_an_http_date() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_480); // 07:28:00
        assert_eq!(retry_after("120", now), Some(Duration::from_secs(120)));
        assert_eq!(retry_after(" 7 ", now), Some(Duration::from_secs(7)));
        assert_eq!(
            retry_after("Wed, 21 Oct 2015 07:30:00 GMT", now),
            Some(Duration::from_secs(120))
        );
        // The obsolete forms RFC 9110 still asks a recipient to read.
        assert_eq!(
            retry_after("Wednesday, 21-Oct-15 07:29:00 GMT", now),
            Some(Duration::from_secs(60))
        );
        assert_eq!(
            retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now),
            Some(Duration::ZERO),
            "a date in the past"
        );
        assert_eq!(retry_after("soon", now), None);
        assert_eq!(retry_after("-5", now), None);
        assert_eq!(unix_reset("1445412540", now), Some(Duration::from_secs(60)));
        assert_eq!(unix_reset("1000", now), Some(Duration::ZERO));
        assert_eq!(unix_reset("x", now), None);
        assert_eq!(seconds("30"), Some(Duration::from_secs(30)));
    }

    #[test]
    fn a_slow_down_is_at_least_a_second_and_at_most_a_day() {
        let secs = |s| ApiVerdict::SlowDown(Duration::from_secs(s));
        assert_eq!(slow_down(None, Duration::from_secs(1)), secs(1));
        assert_eq!(
            slow_down(Some(Duration::ZERO), Duration::from_secs(9)),
            secs(1)
        );
        assert_eq!(
            slow_down(Some(Duration::from_millis(1500)), Duration::ZERO),
            secs(2)
        );
        assert_eq!(
            slow_down(Some(Duration::from_secs(7 * 24 * 3600)), Duration::ZERO),
            secs(24 * 3600)
        );
    }

    #[test]
    fn no_answer_is_down_when_refused_and_retried_otherwise() {
        assert_eq!(
            unreachable("x", HttpFailure::Refused("refused".into())).verdict,
            ApiVerdict::Down
        );
        assert_eq!(
            unreachable("x", HttpFailure::Connection("reset".into())).verdict,
            ApiVerdict::Retry
        );
        let timeout = unreachable("x", HttpFailure::Timeout(Duration::from_secs(30)));
        assert_eq!(timeout.verdict, ApiVerdict::Retry);
        assert_eq!(timeout.message, "no answer within 30s");
        assert_eq!(body_text(b"  "), "(no message)");
        assert_eq!(body_text(b" Forbidden\n"), "Forbidden");
    }
}
