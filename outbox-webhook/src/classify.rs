//! What a delivery's outcome means, as a value the outbox acts on: a pure function of the
//! receiver's answer (or why there was none), with the texts the attempt log keeps.

use std::time::{Duration, SystemTime};

use outbox_core::HandlerError;

use crate::client::{Failure, Response};

/// The shortest and longest wait a `Retry-After` may ask for (a longer one is cut).
pub const RETRY_AFTER_BOUNDS: (Duration, Duration) =
    (Duration::from_secs(1), Duration::from_secs(3600));

/// How long a `429` slows the endpoint's host when the receiver names no wait.
pub const SLOW_DOWN_DEFAULT: Duration = Duration::from_secs(1);

/// How long a `429`'s slowdown lasts.
pub const SLOW_DOWN_FOR: Duration = Duration::from_secs(60);

/// The most of a response body the attempt log keeps, in bytes.
pub const LOGGED_BODY: usize = 4096;

/// What one delivery came to.
#[derive(Debug)]
pub enum Verdict {
    /// Delivered (`2xx`).
    Delivered,
    /// `410 Gone`: the receiver wants no more deliveries; the endpoint is disabled and its
    /// messages parked.
    Gone(String),
    /// A failure, as the outbox should treat it.
    Failed(HandlerError),
}

/// The verdict on `answer` from `url` at `now`.
pub fn classify(url: &str, answer: &Result<Response, Failure>, now: SystemTime) -> Verdict {
    match answer {
        Ok(r) if r.is_success() => Verdict::Delivered,
        Ok(r) => {
            let said = describe(url, r);
            let retry_after = r.retry_after.map(|ra| {
                ra.delay(now)
                    .clamp(RETRY_AFTER_BOUNDS.0, RETRY_AFTER_BOUNDS.1)
            });
            Verdict::Failed(match r.status {
                410 => return Verdict::Gone(said),
                429 => HandlerError::slow_down(
                    retry_after.unwrap_or(SLOW_DOWN_DEFAULT),
                    SLOW_DOWN_FOR,
                    said,
                ),
                // Busy or failing on its side, or a request timeout: tried again, as asked.
                408 | 500..=599 => match retry_after {
                    Some(wait) => HandlerError::retry_after(wait, said),
                    None => HandlerError::retry(said),
                },
                // Not followed: the endpoint's URL needs updating, which may happen before the
                // attempts run out.
                300..=399 => HandlerError::retry(format!(
                    "{said} (redirects are not followed: update the endpoint's URL)"
                )),
                // The receiver refuses this delivery: sending it again changes nothing.
                400..=499 => HandlerError::permanent(said),
                // 1xx as a final answer, or nonsense.
                _ => HandlerError::retry(said),
            })
        }
        Err(f @ Failure::Refused { .. }) | Err(f @ Failure::InvalidRequest(_)) => {
            Verdict::Failed(HandlerError::permanent(format!("{url}: {f}")))
        }
        Err(f) if f.is_down() => {
            Verdict::Failed(HandlerError::destination_down(format!("{url}: {f}")))
        }
        Err(f) => Verdict::Failed(HandlerError::retry(format!("{url}: {f}"))),
    }
}

/// The answer as the attempt log keeps it: status, the kept headers and at most
/// [`LOGGED_BODY`] bytes of the body (as text; the surfaces escape it).
pub fn describe(url: &str, r: &Response) -> String {
    let mut text = format!("HTTP {} from {url}", r.status);
    for (name, value) in &r.headers {
        text.push_str(&format!("; {name}: {value}"));
    }
    let body = &r.body[..r.body.len().min(LOGGED_BODY)];
    if !body.is_empty() {
        let cut = if r.truncated || r.body.len() > LOGGED_BODY {
            ", cut"
        } else {
            ""
        };
        text.push_str(&format!(
            "\nbody ({} bytes{cut}): {}",
            body.len(),
            String::from_utf8_lossy(body)
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use outbox_core::HandlerErrorKind;

    use super::*;
    use crate::client::RetryAfter;

    fn answer(status: u16, retry_after: Option<u64>, body: &[u8]) -> Result<Response, Failure> {
        Ok(Response {
            status,
            headers: retry_after
                .map(|s| vec![("retry-after".to_owned(), s.to_string())])
                .unwrap_or_default(),
            retry_after: retry_after.map(|s| RetryAfter::Delay(Duration::from_secs(s))),
            body: body.to_vec(),
            truncated: false,
            address: SocketAddr::from(([127, 0, 0, 1], 80)),
        })
    }

    fn kind(v: Verdict) -> HandlerErrorKind {
        match v {
            Verdict::Failed(e) => e.kind(),
            other => panic!("not a failure: {other:?}"),
        }
    }

    const URL: &str = "https://hooks.example/in";

    #[test]
    fn statuses_are_classified() {
        let now = SystemTime::now();
        assert!(matches!(
            classify(URL, &answer(204, None, b""), now),
            Verdict::Delivered
        ));
        assert!(matches!(
            classify(URL, &answer(410, None, b""), now),
            Verdict::Gone(_)
        ));
        assert_eq!(
            kind(classify(URL, &answer(429, Some(30), b""), now)),
            HandlerErrorKind::SlowDown {
                one_per: Duration::from_secs(30),
                during: SLOW_DOWN_FOR
            }
        );
        assert_eq!(
            kind(classify(URL, &answer(503, Some(99_999), b""), now)),
            HandlerErrorKind::RetryAfter(RETRY_AFTER_BOUNDS.1),
            "a long Retry-After is cut"
        );
        assert_eq!(
            kind(classify(URL, &answer(502, None, b""), now)),
            HandlerErrorKind::Retry
        );
        assert_eq!(
            kind(classify(URL, &answer(404, None, b""), now)),
            HandlerErrorKind::Permanent
        );
        assert_eq!(
            kind(classify(URL, &answer(302, None, b""), now)),
            HandlerErrorKind::Retry
        );
    }

    #[test]
    fn no_answer_is_classified() {
        let now = SystemTime::now();
        let refused = Err(Failure::ConnectionRefused {
            address: SocketAddr::from(([127, 0, 0, 1], 9)),
        });
        assert_eq!(
            kind(classify(URL, &refused, now)),
            HandlerErrorKind::DestinationDown
        );
        let tls = Err(Failure::Tls("certificate not trusted".into()));
        assert_eq!(
            kind(classify(URL, &tls, now)),
            HandlerErrorKind::DestinationDown
        );
        let timeout = Err(Failure::Timeout {
            after: Duration::from_secs(15),
        });
        assert_eq!(kind(classify(URL, &timeout, now)), HandlerErrorKind::Retry);
        let policy = Err(Failure::Refused {
            host: "metadata".into(),
            address: None,
            why: "link-local".into(),
        });
        assert_eq!(
            kind(classify(URL, &policy, now)),
            HandlerErrorKind::Permanent
        );
    }

    #[test]
    fn the_log_keeps_status_headers_and_4_kib_of_the_body() {
        let big = vec![b'x'; 10_000];
        let Ok(r) = answer(500, Some(5), &big) else {
            unreachable!()
        };
        let text = describe(URL, &r);
        assert!(text.starts_with("HTTP 500 from https://hooks.example/in; retry-after: 5"));
        assert!(text.contains("body (4096 bytes, cut)"), "{text}");
        assert!(text.len() < 4096 + 200);
    }
}
