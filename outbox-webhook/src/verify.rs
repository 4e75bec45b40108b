//! Standard Webhooks signatures, the receiving side: checking a delivery's headers and body
//! before acting on it.
//!
//! A [`Verifier`] holds the keys a sender may sign with (`whsec_…` secrets and `whpk_…`
//! public keys), accepts a delivery when its timestamp is within the tolerance of the
//! current time (5 minutes by default) and at least one signature in `webhook-signature`
//! verifies with one of the keys, and, with a [`ReplayGuard`], refuses the same delivery
//! a second time.
//!
//! ```
//! use std::time::{Duration, SystemTime, UNIX_EPOCH};
//! use outbox_webhook::signature::{SigningKey, Signer, WebhookId};
//! use outbox_webhook::verify::{MemoryReplayGuard, Verifier, VerifyError};
//!
//! # let key = SigningKey::generate_ed25519();
//! # let signer = Signer::new(vec![key.clone()])?;
//! # let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
//! # let body = br#"{"type":"invoice.paid"}"#;
//! # let h = signer.headers(&WebhookId::new("msg_1")?, 1_700_000_000, body);
//! // The receiver was given the sender's public key, "whpk_…".
//! let verifier = Verifier::new(vec![key.verifying_key()])?
//!     .with_replay_guard(MemoryReplayGuard::new());
//! verifier.verify(&h.id, &h.timestamp, &h.signature, body, now)?;
//! assert!(matches!(
//!     verifier.verify(&h.id, &h.timestamp, &h.signature, body, now),
//!     Err(VerifyError::Replayed)
//! ));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! With the feature `axum`, the extractor `VerifiedWebhook` does this before a handler runs.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ring::signature::{UnparsedPublicKey, ED25519};
use subtle::ConstantTimeEq;

use crate::signature::{
    check_id, decode_base64, hmac_sha256, signed_content, IdError, KeyError, KeyMaterial,
    VerifyingKey, ID_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER,
};

/// How far a delivery's `webhook-timestamp` may be from the receiver's clock, either way, by
/// default: 5 minutes, as in the specification's libraries.
pub const DEFAULT_TOLERANCE: Duration = Duration::from_secs(5 * 60);

/// The most entries of `webhook-signature` looked at. A sender signs with one key, or two or
/// three during a rotation; a longer list is refused rather than verified entry by entry, so a
/// forged header cannot make the receiver run thousands of signature checks.
pub const MAX_SIGNATURES: usize = 32;

/// The largest body the axum extractor reads by default: 1 MiB. The specification asks
/// senders to keep payloads small, well under this.
pub const DEFAULT_MAX_BODY: usize = 1024 * 1024;

/// Why a delivery was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// A required header is absent or empty.
    #[error("the `{0}` header is missing")]
    MissingHeader(&'static str),
    /// A header appears more than once.
    #[error("the `{0}` header appears more than once")]
    DuplicateHeader(&'static str),
    /// A header is not visible ASCII text.
    #[error("the `{0}` header is not text")]
    NotText(&'static str),
    /// `webhook-id` is not an id this verifier accepts.
    #[error("the `webhook-id` header is not a valid id: {0}")]
    InvalidId(IdError),
    /// `webhook-timestamp` is not an integer number of seconds.
    #[error("the `webhook-timestamp` header is not an integer number of unix seconds")]
    InvalidTimestamp,
    /// The timestamp is further in the past than the tolerance.
    #[error(
        "the delivery's timestamp {timestamp} is more than {tolerance_secs} s in the past: \
         a delayed or replayed delivery, or a wrong clock here or at the sender"
    )]
    TooOld {
        /// The `webhook-timestamp`, unix seconds.
        timestamp: u64,
        /// The verifier's tolerance, in seconds.
        tolerance_secs: u64,
    },
    /// The timestamp is further in the future than the tolerance.
    #[error(
        "the delivery's timestamp {timestamp} is more than {tolerance_secs} s in the future: \
         a wrong clock here or at the sender"
    )]
    TooNew {
        /// The `webhook-timestamp`, unix seconds.
        timestamp: u64,
        /// The verifier's tolerance, in seconds.
        tolerance_secs: u64,
    },
    /// `webhook-signature` is not a space-separated list of `version,base64` entries.
    #[error("the `webhook-signature` header is malformed: {0}")]
    MalformedSignatures(&'static str),
    /// No signature in the header verifies with any of the keys.
    #[error("no signature matches: the body, id or timestamp was altered, or it was signed with a key this receiver does not have")]
    NoMatchingSignature,
    /// This delivery (same id and timestamp) was accepted before, within the tolerance window.
    #[error("this delivery was already received (same webhook-id and timestamp): a replay")]
    Replayed,
    /// The replay guard is full and refuses new deliveries until entries expire.
    #[error("too many deliveries to remember for replay protection; try again later")]
    ReplayGuardFull,
}

/// What a [`ReplayGuard`] says about a delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplayCheck {
    /// Not seen before; now remembered.
    FirstTime,
    /// Seen before, within its window: a replay.
    Replayed,
    /// The guard cannot remember one more delivery, so it cannot tell; the delivery is
    /// refused ([`VerifyError::ReplayGuardFull`]).
    Full,
}

/// Remembers the deliveries a [`Verifier`] accepted, to refuse them a second time.
///
/// A replay is the same signed request sent again: the same `webhook-id` and the same
/// `webhook-timestamp` (the timestamp cannot be changed without breaking the signature). A
/// sender's retry carries the same id with a new timestamp and is not a replay: it is the
/// application's to process a delivery once, with the id as the idempotency key (e.g. a
/// unique column written in the same transaction as the delivery's effects).
///
/// The verifier asks only after the signature verified, so forged requests cannot fill the
/// guard or burn a genuine delivery's id.
pub trait ReplayGuard: Send + Sync {
    /// Records the delivery `(id, timestamp)` received at `now` and says whether it was seen
    /// before. It must be remembered at least until `remember_until` (the last instant at
    /// which the verifier's tolerance still accepts this timestamp); after that the
    /// timestamp check refuses it anyway and it may be forgotten.
    fn check(
        &self,
        id: &str,
        timestamp: u64,
        now: SystemTime,
        remember_until: SystemTime,
    ) -> ReplayCheck;
}

/// A [`ReplayGuard`] in this process's memory, for a receiver that runs as one process.
///
/// Each delivery is remembered until its timestamp leaves the tolerance window (at most twice
/// the tolerance after it arrived), and expired entries are dropped as new ones come in. The
/// number of entries is capped ([`MemoryReplayGuard::DEFAULT_CAPACITY`] by default): when the
/// cap is reached, new deliveries are refused ([`VerifyError::ReplayGuardFull`], a 503 from the
/// axum extractor, which senders retry later) until old entries expire. Refusing is safer
/// than forgetting: a forgotten delivery could be replayed.
pub struct MemoryReplayGuard {
    capacity: usize,
    seen: Mutex<Seen>,
}

type SeenKey = (Arc<str>, u64);

#[derive(Default)]
struct Seen {
    until: HashMap<SeenKey, SystemTime>,
    expiries: BinaryHeap<Reverse<(SystemTime, SeenKey)>>,
}

impl MemoryReplayGuard {
    /// The default cap on remembered deliveries: 100,000, a few hundred a second over the
    /// default 10-minute window; with ids of up to 256 bytes, at most a few tens of MB.
    pub const DEFAULT_CAPACITY: usize = 100_000;

    /// An empty guard with the default capacity.
    pub fn new() -> MemoryReplayGuard {
        MemoryReplayGuard::with_capacity(MemoryReplayGuard::DEFAULT_CAPACITY)
    }

    /// An empty guard that remembers at most `capacity` deliveries at a time.
    pub fn with_capacity(capacity: usize) -> MemoryReplayGuard {
        MemoryReplayGuard {
            capacity,
            seen: Mutex::new(Seen::default()),
        }
    }

    /// How many deliveries are remembered now (expired ones included until the next check).
    pub fn len(&self) -> usize {
        self.lock().until.len()
    }

    /// Whether no delivery is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Seen> {
        // The map stays consistent at every step, so a panic elsewhere does not spoil it.
        self.seen.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Default for MemoryReplayGuard {
    fn default() -> Self {
        MemoryReplayGuard::new()
    }
}

impl fmt::Debug for MemoryReplayGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryReplayGuard")
            .field("capacity", &self.capacity)
            .field("len", &self.len())
            .finish()
    }
}

impl ReplayGuard for MemoryReplayGuard {
    fn check(
        &self,
        id: &str,
        timestamp: u64,
        now: SystemTime,
        remember_until: SystemTime,
    ) -> ReplayCheck {
        let mut seen = self.lock();
        let Seen { until, expiries } = &mut *seen;
        while let Some(Reverse((expiry, _))) = expiries.peek() {
            if *expiry >= now {
                break;
            }
            let Some(Reverse((expiry, key))) = expiries.pop() else {
                break;
            };
            // Only if the entry was not renewed since (a later insert of the same key).
            if until.get(&key) == Some(&expiry) {
                until.remove(&key);
            }
        }
        let key: SeenKey = (Arc::from(id), timestamp);
        if let Some(expiry) = until.get(&key) {
            if *expiry >= now {
                return ReplayCheck::Replayed;
            }
        } else if until.len() >= self.capacity {
            return ReplayCheck::Full;
        }
        until.insert(key.clone(), remember_until);
        expiries.push(Reverse((remember_until, key)));
        ReplayCheck::FirstTime
    }
}

/// Checks Standard Webhooks deliveries against a set of keys.
///
/// Time is always an argument (`now`) of [`Verifier::verify`]; [`Verifier::verify_now`] reads
/// the system clock.
#[derive(Clone)]
pub struct Verifier {
    keys: Vec<VerifyingKey>,
    tolerance: Duration,
    replay_guard: Option<Arc<dyn ReplayGuard>>,
    max_body: usize,
}

impl Verifier {
    /// A verifier that accepts signatures by any of `keys` (`whsec_` secrets and `whpk_`
    /// public keys may be mixed, e.g. during a sender's rotation). An empty list is refused.
    pub fn new(keys: Vec<VerifyingKey>) -> Result<Verifier, KeyError> {
        if keys.is_empty() {
            return Err(KeyError::NoKeys("verifier"));
        }
        Ok(Verifier {
            keys,
            tolerance: DEFAULT_TOLERANCE,
            replay_guard: None,
            max_body: DEFAULT_MAX_BODY,
        })
    }

    /// How far the timestamp may be from `now`, in either direction (inclusive);
    /// [`DEFAULT_TOLERANCE`] unless set.
    pub fn tolerance(mut self, tolerance: Duration) -> Verifier {
        self.tolerance = tolerance;
        self
    }

    /// Refuses a delivery seen before ([`VerifyError::Replayed`]), as told by `guard`.
    pub fn with_replay_guard(mut self, guard: impl ReplayGuard + 'static) -> Verifier {
        self.replay_guard = Some(Arc::new(guard));
        self
    }

    /// The largest body the axum extractor reads, in bytes; [`DEFAULT_MAX_BODY`] (1 MiB) unless
    /// set. A larger body is refused with 413 before it is read whole.
    pub fn max_body(mut self, bytes: usize) -> Verifier {
        self.max_body = bytes;
        self
    }

    /// The largest body the axum extractor reads, in bytes.
    pub fn max_body_len(&self) -> usize {
        self.max_body
    }

    /// The keys signatures are checked against.
    pub fn keys(&self) -> &[VerifyingKey] {
        &self.keys
    }

    /// Checks a delivery received at `now`: the three header values (an empty value counts as
    /// missing) and the body exactly as received.
    ///
    /// In order: the headers are present; the id is a valid [`WebhookId`] (no `.`, which
    /// would make the signed content ambiguous); the timestamp is an integer within the
    /// tolerance of `now`; some entry of the signature list verifies with some key (HMAC tags
    /// compared in constant time; entries of versions other than `v1` and `v1a` ignored);
    /// and, with a replay guard, the delivery was not accepted before.
    ///
    /// [`WebhookId`]: crate::signature::WebhookId
    pub fn verify(
        &self,
        id: &str,
        timestamp: &str,
        signature: &str,
        body: &[u8],
        now: SystemTime,
    ) -> Result<(), VerifyError> {
        self.check(id, timestamp, signature, body, now).map(|_| ())
    }

    /// [`Verifier::verify`] at the system clock's current time.
    pub fn verify_now(
        &self,
        id: &str,
        timestamp: &str,
        signature: &str,
        body: &[u8],
    ) -> Result<(), VerifyError> {
        self.verify(id, timestamp, signature, body, SystemTime::now())
    }

    /// [`Verifier::verify`] with the headers of an HTTP request (`http::HeaderMap`, as in
    /// hyper, axum, reqwest). A header that is absent, repeated or not text is refused.
    pub fn verify_headers(
        &self,
        headers: &hyper::HeaderMap,
        body: &[u8],
        now: SystemTime,
    ) -> Result<(), VerifyError> {
        self.check_headers(headers, body, now).map(|_| ())
    }

    /// The checks of `verify_headers`; the verified id and timestamp.
    fn check_headers(
        &self,
        headers: &hyper::HeaderMap,
        body: &[u8],
        now: SystemTime,
    ) -> Result<(String, u64), VerifyError> {
        let id = header(headers, ID_HEADER)?;
        let timestamp = header(headers, TIMESTAMP_HEADER)?;
        let signature = header(headers, SIGNATURE_HEADER)?;
        let timestamp = self.check(id, timestamp, signature, body, now)?;
        Ok((id.to_owned(), timestamp))
    }

    /// The checks of `verify`; the verified timestamp.
    fn check(
        &self,
        id: &str,
        timestamp: &str,
        signature: &str,
        body: &[u8],
        now: SystemTime,
    ) -> Result<u64, VerifyError> {
        for (name, value) in [
            (ID_HEADER, id),
            (TIMESTAMP_HEADER, timestamp),
            (SIGNATURE_HEADER, signature),
        ] {
            if value.is_empty() {
                return Err(VerifyError::MissingHeader(name));
            }
        }
        check_id(id).map_err(VerifyError::InvalidId)?;
        let timestamp = parse_timestamp(timestamp)?;
        let remember_until = self.check_time(timestamp, now)?;
        let entries = parse_signatures(signature)?;
        if !self.any_signature_matches(&entries, id, timestamp, body) {
            return Err(VerifyError::NoMatchingSignature);
        }
        if let Some(guard) = &self.replay_guard {
            match guard.check(id, timestamp, now, remember_until) {
                ReplayCheck::FirstTime => {}
                ReplayCheck::Replayed => return Err(VerifyError::Replayed),
                ReplayCheck::Full => return Err(VerifyError::ReplayGuardFull),
            }
        }
        Ok(timestamp)
    }

    /// Whether `timestamp` is within the tolerance of `now`; the last instant it still is.
    fn check_time(&self, timestamp: u64, now: SystemTime) -> Result<SystemTime, VerifyError> {
        let now = now.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
        let sent = Duration::from_secs(timestamp);
        let tolerance_secs = self.tolerance.as_secs();
        if sent.saturating_add(self.tolerance) < now {
            return Err(VerifyError::TooOld {
                timestamp,
                tolerance_secs,
            });
        }
        if sent > now.saturating_add(self.tolerance) {
            return Err(VerifyError::TooNew {
                timestamp,
                tolerance_secs,
            });
        }
        // Within the tolerance, so neither this sum nor the SystemTime overflows.
        Ok(UNIX_EPOCH + sent + self.tolerance)
    }

    fn any_signature_matches(
        &self,
        entries: &[(&str, &str)],
        id: &str,
        timestamp: u64,
        body: &[u8],
    ) -> bool {
        // Computed once, on the first entry that needs them.
        let mut hmac_tags: Option<Vec<[u8; 32]>> = None;
        let mut content: Option<Vec<u8>> = None;
        for &(version, encoded) in entries {
            if version != "v1" && version != "v1a" {
                continue; // another scheme, or a later version: not ours to judge
            }
            // An entry that is not base64 cannot match; another entry still may.
            let Ok(signature) = decode_base64(encoded) else {
                continue;
            };
            if version == "v1" {
                let tags = hmac_tags.get_or_insert_with(|| {
                    self.keys
                        .iter()
                        .filter_map(|key| match key.material() {
                            KeyMaterial::Hmac(secret) => {
                                Some(hmac_sha256(secret, id, timestamp, body))
                            }
                            KeyMaterial::Ed25519(_) => None,
                        })
                        .collect()
                });
                // Constant-time comparisons, every tag compared whichever matches.
                let matched = tags.iter().fold(subtle::Choice::from(0), |any, tag| {
                    any | tag[..].ct_eq(&signature)
                });
                if bool::from(matched) {
                    return true;
                }
            } else {
                for key in &self.keys {
                    if let KeyMaterial::Ed25519(public) = key.material() {
                        let content =
                            content.get_or_insert_with(|| signed_content(id, timestamp, body));
                        if UnparsedPublicKey::new(&ED25519, public)
                            .verify(content, &signature)
                            .is_ok()
                        {
                            return true;
                        }
                    }
                }
            }
        }
        false
    }
}

impl fmt::Debug for Verifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Verifier")
            .field("keys", &self.keys)
            .field("tolerance", &self.tolerance)
            .field("replay_guard", &self.replay_guard.is_some())
            .field("max_body", &self.max_body)
            .finish()
    }
}

/// One header's value: present once, visible ASCII.
fn header<'a>(headers: &'a hyper::HeaderMap, name: &'static str) -> Result<&'a str, VerifyError> {
    let mut values = headers.get_all(name).iter();
    let value = values.next().ok_or(VerifyError::MissingHeader(name))?;
    if values.next().is_some() {
        return Err(VerifyError::DuplicateHeader(name));
    }
    value.to_str().map_err(|_| VerifyError::NotText(name))
}

/// `webhook-timestamp`: ASCII digits only (no sign, no fraction), fitting a u64.
fn parse_timestamp(value: &str) -> Result<u64, VerifyError> {
    if !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(VerifyError::InvalidTimestamp);
    }
    value.parse().map_err(|_| VerifyError::InvalidTimestamp)
}

/// `webhook-signature`: entries separated by spaces, each `version,signature`.
fn parse_signatures(value: &str) -> Result<Vec<(&str, &str)>, VerifyError> {
    let mut entries = Vec::new();
    for entry in value.split_ascii_whitespace() {
        if entries.len() == MAX_SIGNATURES {
            return Err(VerifyError::MalformedSignatures(
                "more than 32 signatures (a sender signs with one key, or a few while rotating)",
            ));
        }
        let (version, signature) =
            entry
                .split_once(',')
                .ok_or(VerifyError::MalformedSignatures(
                    "an entry without a comma; each entry is `version,base64`, e.g. `v1,K5oZ…=`",
                ))?;
        if version.is_empty() {
            return Err(VerifyError::MalformedSignatures(
                "an entry without a version before its comma",
            ));
        }
        entries.push((version, signature));
    }
    if entries.is_empty() {
        return Err(VerifyError::MalformedSignatures("no signatures"));
    }
    Ok(entries)
}

#[cfg(feature = "axum")]
pub use self::extractor::{VerifiedWebhook, WebhookRejection};

#[cfg(feature = "axum")]
mod extractor {
    use std::sync::Arc;
    use std::time::SystemTime;

    use axum::body::Bytes;
    use axum::extract::{FromRef, FromRequest, Request};
    use axum::http::{header, StatusCode};
    use axum::response::{IntoResponse, Response};
    use http_body_util::{BodyExt, LengthLimitError, Limited};

    use super::{Verifier, VerifyError};

    /// A delivery whose signature verified, as an axum 0.8 extractor (feature `axum`).
    ///
    /// It finds the [`Verifier`] in the router's state as an `Arc<Verifier>` (the state itself,
    /// or a field of it through [`FromRef`]), reads the body up to
    /// [`Verifier::max_body_len`] (1 MiB by default), verifies it at the current time, and
    /// otherwise answers with a short plain-text reason: 413 for a body over the limit, 400 for
    /// missing or malformed headers, 401 for a timestamp out of tolerance, a signature that
    /// does not match, or a replay, and 503 when the replay guard is full. It consumes the
    /// body, so it is the handler's last extractor.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use axum::{routing::post, Router};
    /// use outbox_webhook::signature::VerifyingKey;
    /// use outbox_webhook::verify::{MemoryReplayGuard, VerifiedWebhook, Verifier};
    ///
    /// async fn invoice_paid(hook: VerifiedWebhook) -> &'static str {
    ///     let event: serde_json::Value = match hook.json() {
    ///         Ok(event) => event,
    ///         Err(_) => return "not JSON",
    ///     };
    ///     // process `event` once, keyed by hook.id
    ///     # let _ = event;
    ///     "ok"
    /// }
    ///
    /// # fn app(public_key: &str) -> Result<Router, Box<dyn std::error::Error>> {
    /// let verifier = Verifier::new(vec![VerifyingKey::parse(public_key)?])?
    ///     .with_replay_guard(MemoryReplayGuard::new());
    /// let app = Router::new()
    ///     .route("/webhooks", post(invoice_paid))
    ///     .with_state(Arc::new(verifier));
    /// # Ok(app) }
    /// ```
    #[derive(Debug, Clone)]
    pub struct VerifiedWebhook {
        /// The `webhook-id`: the same on every retry of the delivery, the idempotency key.
        pub id: String,
        /// The `webhook-timestamp` of this attempt, unix seconds.
        pub timestamp: u64,
        /// The body, exactly as received and verified.
        pub body: Bytes,
    }

    impl VerifiedWebhook {
        /// The body read as JSON.
        pub fn json<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
            serde_json::from_slice(&self.body)
        }
    }

    /// Why [`VerifiedWebhook`] refused a request; its response is the status and the reason
    /// as plain text.
    #[derive(Debug)]
    pub struct WebhookRejection {
        status: StatusCode,
        reason: String,
    }

    impl WebhookRejection {
        /// The response's status.
        pub fn status(&self) -> StatusCode {
            self.status
        }

        /// The reason, as sent in the response's body.
        pub fn reason(&self) -> &str {
            &self.reason
        }

        fn new(status: StatusCode, reason: impl Into<String>) -> WebhookRejection {
            WebhookRejection {
                status,
                reason: reason.into(),
            }
        }
    }

    impl From<VerifyError> for WebhookRejection {
        fn from(error: VerifyError) -> WebhookRejection {
            let status = match error {
                VerifyError::MissingHeader(_)
                | VerifyError::DuplicateHeader(_)
                | VerifyError::NotText(_)
                | VerifyError::InvalidId(_)
                | VerifyError::InvalidTimestamp
                | VerifyError::MalformedSignatures(_) => StatusCode::BAD_REQUEST,
                VerifyError::ReplayGuardFull => StatusCode::SERVICE_UNAVAILABLE,
                _ => StatusCode::UNAUTHORIZED,
            };
            WebhookRejection::new(status, error.to_string())
        }
    }

    impl IntoResponse for WebhookRejection {
        fn into_response(self) -> Response {
            (
                self.status,
                [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                self.reason,
            )
                .into_response()
        }
    }

    impl<S> FromRequest<S> for VerifiedWebhook
    where
        S: Send + Sync,
        Arc<Verifier>: FromRef<S>,
    {
        type Rejection = WebhookRejection;

        async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
            let verifier = Arc::<Verifier>::from_ref(state);
            let limit = verifier.max_body_len();
            let too_large = || {
                WebhookRejection::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("the body is larger than {limit} bytes"),
                )
            };
            let (parts, body) = request.into_parts();
            let declared = parts
                .headers
                .get(header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok());
            if declared.is_some_and(|length| length > limit as u64) {
                return Err(too_large());
            }
            let body = match Limited::new(body, limit).collect().await {
                Ok(collected) => collected.to_bytes(),
                Err(e) if e.is::<LengthLimitError>() => return Err(too_large()),
                Err(_) => {
                    return Err(WebhookRejection::new(
                        StatusCode::BAD_REQUEST,
                        "the body could not be read",
                    ))
                }
            };
            let (id, timestamp) =
                verifier.check_headers(&parts.headers, &body, SystemTime::now())?;
            Ok(VerifiedWebhook {
                id,
                timestamp,
                body,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::{Signer, SigningKey, WebhookId};

    const T: u64 = 1_700_000_000;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    fn delivery(signer: &Signer, id: &str, timestamp: u64, body: &[u8]) -> (String, String) {
        let h = signer.headers(&WebhookId::new(id).unwrap(), timestamp, body);
        (h.timestamp, h.signature)
    }

    #[test]
    fn the_reference_vectors_verify() {
        // The Go library's signing vectors (see the signature module's tests).
        let body = br#"{"test": 2432232314}"#;
        let hmac = Verifier::new(vec![VerifyingKey::parse(
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        )
        .unwrap()])
        .unwrap();
        let ed = Verifier::new(vec![VerifyingKey::parse(
            "whpk_ZlN4eg7dSSqi0moX9hQUk3orrOouK3QVQSlJa248c/g=",
        )
        .unwrap()])
        .unwrap();
        let now = at(1_614_265_330 + 10);
        hmac.verify(
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            "1614265330",
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
            body,
            now,
        )
        .unwrap();
        ed.verify(
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            "1614265330",
            "v1a,tQ9V2XOqn7jL/DQenEFpqIugdBVtiMmER5mhSkXBNwM0mkATuDe6KYYUuxqtaiHeYGb7KaaBRdM5WqyeFiL8Ag==",
            body,
            now,
        )
        .unwrap();
        // The HMAC signature is not an Ed25519 one and the other way round.
        assert_eq!(
            ed.verify(
                "msg_p5jXN8AQM9LWM0D4loKWxJek",
                "1614265330",
                "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
                body,
                now,
            ),
            Err(VerifyError::NoMatchingSignature)
        );
    }

    #[test]
    fn tolerance_is_inclusive_at_both_edges() {
        let key = SigningKey::generate_hmac();
        let signer = Signer::new(vec![key.clone()]).unwrap();
        let verifier = Verifier::new(vec![key.verifying_key()]).unwrap();
        let (ts, sig) = delivery(&signer, "msg_1", T, b"{}");
        let check = |now: SystemTime| verifier.verify("msg_1", &ts, &sig, b"{}", now);

        check(at(T)).unwrap();
        check(at(T + 300)).unwrap();
        check(at(T - 300)).unwrap();
        assert_eq!(
            check(at(T + 300) + Duration::from_millis(1)),
            Err(VerifyError::TooOld {
                timestamp: T,
                tolerance_secs: 300
            })
        );
        assert_eq!(
            check(at(T - 301)),
            Err(VerifyError::TooNew {
                timestamp: T,
                tolerance_secs: 300
            })
        );

        let strict = verifier.clone().tolerance(Duration::from_secs(10));
        strict
            .verify("msg_1", &ts, &sig, b"{}", at(T + 10))
            .unwrap();
        assert!(matches!(
            strict.verify("msg_1", &ts, &sig, b"{}", at(T + 11)),
            Err(VerifyError::TooOld { .. })
        ));
        // A timestamp far in the future does not overflow anything.
        let (huge_ts, huge_sig) = delivery(&signer, "msg_1", u64::MAX, b"{}");
        assert!(matches!(
            verifier.verify("msg_1", &huge_ts, &huge_sig, b"{}", at(T)),
            Err(VerifyError::TooNew { .. })
        ));
    }

    #[test]
    fn a_tampered_delivery_does_not_verify() {
        let key = SigningKey::generate_ed25519();
        let signer = Signer::new(vec![key.clone()]).unwrap();
        let verifier = Verifier::new(vec![key.verifying_key()]).unwrap();
        let (ts, sig) = delivery(&signer, "msg_1", T, b"{\"amount\":1}");
        verifier
            .verify("msg_1", &ts, &sig, b"{\"amount\":1}", at(T))
            .unwrap();
        for (id, ts, body) in [
            ("msg_1", ts.as_str(), &b"{\"amount\":9}"[..]),
            ("msg_2", ts.as_str(), &b"{\"amount\":1}"[..]),
            ("msg_1", &(T + 1).to_string()[..], &b"{\"amount\":1}"[..]),
        ] {
            assert_eq!(
                verifier.verify(id, ts, &sig, body, at(T)),
                Err(VerifyError::NoMatchingSignature)
            );
        }
        // Another key of the same kind does not verify it either.
        let other = Verifier::new(vec![SigningKey::generate_ed25519().verifying_key()]).unwrap();
        assert_eq!(
            other.verify("msg_1", &ts, &sig, b"{\"amount\":1}", at(T)),
            Err(VerifyError::NoMatchingSignature)
        );
    }

    #[test]
    fn every_signature_is_tried_against_every_key_and_unknown_versions_are_ignored() {
        let old = SigningKey::generate_hmac();
        let new = SigningKey::generate_ed25519();
        let unrelated = SigningKey::generate_hmac();
        let both = Signer::new(vec![new.clone(), old.clone()]).unwrap();
        let (ts, sig) = delivery(&both, "msg_1", T, b"x");
        // The receiver knows only one of the two, in either position, among other keys.
        for keys in [
            vec![old.verifying_key()],
            vec![new.verifying_key()],
            vec![unrelated.verifying_key(), old.verifying_key()],
            vec![unrelated.verifying_key(), new.verifying_key()],
        ] {
            Verifier::new(keys)
                .unwrap()
                .verify("msg_1", &ts, &sig, b"x", at(T))
                .unwrap();
        }
        let verifier = Verifier::new(vec![old.verifying_key()]).unwrap();
        let only_old = delivery(&Signer::new(vec![old]).unwrap(), "msg_1", T, b"x").1;
        let mixed = format!(
            "v2,AAAA v1,notbase64! v1a,{} {only_old} v9,x",
            "A".repeat(88)
        );
        verifier.verify("msg_1", &ts, &mixed, b"x", at(T)).unwrap();
        assert_eq!(
            verifier.verify("msg_1", &ts, "v2,AAAA v1,", b"x", at(T)),
            Err(VerifyError::NoMatchingSignature)
        );
    }

    #[test]
    fn malformed_headers_are_refused_with_a_reason() {
        let key = SigningKey::generate_hmac();
        let verifier = Verifier::new(vec![key.verifying_key()]).unwrap();
        let (ts, sig) = delivery(&Signer::new(vec![key]).unwrap(), "msg_1", T, b"x");
        let v = |id: &str, ts: &str, sig: &str| verifier.verify(id, ts, sig, b"x", at(T));

        assert_eq!(
            v("", &ts, &sig),
            Err(VerifyError::MissingHeader("webhook-id"))
        );
        assert_eq!(
            v("msg_1", "", &sig),
            Err(VerifyError::MissingHeader("webhook-timestamp"))
        );
        assert_eq!(
            v("msg_1", &ts, ""),
            Err(VerifyError::MissingHeader("webhook-signature"))
        );
        assert_eq!(
            v("msg.1", &ts, &sig),
            Err(VerifyError::InvalidId(IdError::Dot { at: 3 }))
        );
        for bad in [
            "17e8",
            "-1",
            "+1700000000",
            "1700000000.5",
            " 1700000000",
            "99999999999999999999999",
        ] {
            assert_eq!(
                v("msg_1", bad, &sig),
                Err(VerifyError::InvalidTimestamp),
                "{bad}"
            );
        }
        for (bad, why) in [
            ("   ", "no signatures"),
            ("v1", "without a comma"),
            (",AAAA", "without a version"),
        ] {
            match v("msg_1", &ts, bad) {
                Err(VerifyError::MalformedSignatures(reason)) => {
                    assert!(reason.contains(why), "{bad:?}: {reason}")
                }
                other => panic!("{bad:?}: {other:?}"),
            }
        }
        let many = vec![sig.as_str(); MAX_SIGNATURES + 1].join(" ");
        assert!(matches!(
            v("msg_1", &ts, &many),
            Err(VerifyError::MalformedSignatures(_))
        ));
        let enough = vec![sig.as_str(); MAX_SIGNATURES].join(" ");
        v("msg_1", &ts, &enough).unwrap();
        // Extra spaces between entries are tolerated.
        v("msg_1", &ts, &format!("  v2,AAAA   {sig} ")).unwrap();
        assert!(Verifier::new(Vec::new()).is_err());
    }

    #[test]
    fn header_maps_refuse_absent_repeated_and_binary_headers() {
        let key = SigningKey::generate_hmac();
        let verifier = Verifier::new(vec![key.verifying_key()]).unwrap();
        let signer = Signer::new(vec![key]).unwrap();
        let h = signer.headers(&WebhookId::new("msg_1").unwrap(), T, b"x");
        let mut headers = hyper::HeaderMap::new();
        for (name, value) in h.into_pairs() {
            headers.insert(name, value.parse().unwrap());
        }
        verifier.verify_headers(&headers, b"x", at(T)).unwrap();

        let mut repeated = headers.clone();
        repeated.append("webhook-signature", "v1,AAAA".parse().unwrap());
        assert_eq!(
            verifier.verify_headers(&repeated, b"x", at(T)),
            Err(VerifyError::DuplicateHeader("webhook-signature"))
        );
        let mut absent = headers.clone();
        absent.remove("webhook-timestamp");
        assert_eq!(
            verifier.verify_headers(&absent, b"x", at(T)),
            Err(VerifyError::MissingHeader("webhook-timestamp"))
        );
        let mut binary = headers;
        binary.insert(
            "webhook-id",
            hyper::header::HeaderValue::from_bytes(b"msg_\xff").unwrap(),
        );
        assert_eq!(
            verifier.verify_headers(&binary, b"x", at(T)),
            Err(VerifyError::NotText("webhook-id"))
        );
    }

    #[test]
    fn a_replay_is_refused_and_a_retry_is_not() {
        let key = SigningKey::generate_hmac();
        let signer = Signer::new(vec![key.clone()]).unwrap();
        let verifier = Verifier::new(vec![key.verifying_key()])
            .unwrap()
            .with_replay_guard(MemoryReplayGuard::new());
        let (ts, sig) = delivery(&signer, "msg_1", T, b"x");
        verifier.verify("msg_1", &ts, &sig, b"x", at(T)).unwrap();
        assert_eq!(
            verifier.verify("msg_1", &ts, &sig, b"x", at(T + 200)),
            Err(VerifyError::Replayed)
        );
        // The sender's retry: same id, a later timestamp, signed again.
        let (ts2, sig2) = delivery(&signer, "msg_1", T + 30, b"x");
        verifier
            .verify("msg_1", &ts2, &sig2, b"x", at(T + 30))
            .unwrap();
        // A forged request does not reach the guard: the genuine one is still accepted after.
        let (ts3, sig3) = delivery(&signer, "msg_3", T, b"x");
        assert_eq!(
            verifier.verify("msg_3", &ts3, &sig, b"x", at(T)),
            Err(VerifyError::NoMatchingSignature)
        );
        verifier.verify("msg_3", &ts3, &sig3, b"x", at(T)).unwrap();
    }

    #[test]
    fn the_memory_guard_forgets_what_has_expired_and_refuses_when_full() {
        let guard = MemoryReplayGuard::with_capacity(2);
        let until = |secs| at(T + secs);
        assert_eq!(
            guard.check("a", T, at(T), until(300)),
            ReplayCheck::FirstTime
        );
        assert_eq!(
            guard.check("b", T, at(T), until(100)),
            ReplayCheck::FirstTime
        );
        assert_eq!(
            guard.check("a", T, at(T + 100), until(300)),
            ReplayCheck::Replayed
        );
        // Same id, another timestamp: another delivery attempt, and no room for it.
        assert_eq!(
            guard.check("a", T + 1, at(T + 100), until(301)),
            ReplayCheck::Full
        );
        assert_eq!(guard.len(), 2);
        // "b" expires after T + 100: room again.
        assert_eq!(
            guard.check("c", T, at(T + 101), until(400)),
            ReplayCheck::FirstTime
        );
        assert_eq!(guard.len(), 2);
        assert_eq!(
            guard.check("d", T, at(T + 101), until(400)),
            ReplayCheck::Full
        );
        // Everything expired.
        assert_eq!(
            guard.check("a", T, at(T + 1000), until(1300)),
            ReplayCheck::FirstTime
        );
        assert_eq!(guard.len(), 1);
        assert!(!guard.is_empty());
    }

    #[test]
    fn the_guard_remembers_a_delivery_as_long_as_its_timestamp_is_accepted() {
        let key = SigningKey::generate_hmac();
        let signer = Signer::new(vec![key.clone()]).unwrap();
        let verifier = Verifier::new(vec![key.verifying_key()])
            .unwrap()
            .tolerance(Duration::from_secs(60))
            .with_replay_guard(MemoryReplayGuard::new());
        // Sent 60 s "in the future" of the receiver's clock: accepted until T + 120.
        let (ts, sig) = delivery(&signer, "msg_1", T + 60, b"x");
        verifier.verify("msg_1", &ts, &sig, b"x", at(T)).unwrap();
        // Another delivery arriving later evicts what has expired, not this one.
        let (ts2, sig2) = delivery(&signer, "msg_2", T + 119, b"x");
        verifier
            .verify("msg_2", &ts2, &sig2, b"x", at(T + 119))
            .unwrap();
        assert_eq!(
            verifier.verify("msg_1", &ts, &sig, b"x", at(T + 120)),
            Err(VerifyError::Replayed)
        );
        assert!(matches!(
            verifier.verify("msg_1", &ts, &sig, b"x", at(T + 121)),
            Err(VerifyError::TooOld { .. })
        ));
    }

    #[test]
    fn debug_of_a_verifier_shows_no_secret() {
        let key = SigningKey::generate_hmac();
        let secret = key.to_secret_string();
        let verifier = Verifier::new(vec![key.verifying_key()])
            .unwrap()
            .with_replay_guard(MemoryReplayGuard::new());
        let printed = format!("{verifier:?}");
        assert!(!printed.contains(&secret[6..20]), "{printed}");
        assert!(printed.contains("whsec_…(32 bytes)"), "{printed}");
    }
}
