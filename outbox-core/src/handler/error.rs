//! How a handler says an attempt failed, and what should happen next.

use std::{
    fmt,
    time::{Duration, SystemTime},
};

use crate::{error::BoxError, suppression::SuppressionReason};

/// The longest a destination that does not answer waits between two probes
/// ([`HandlerErrorKind::DestinationDown`]).
pub const DESTINATION_PROBE_MAX: Duration = Duration::from_secs(60);

/// What should happen after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HandlerErrorKind {
    /// A transient failure: try again on the type's retry schedule while attempts remain
    /// (the default for any error).
    Retry,
    /// A failed attempt, tried again no earlier than the given time instead of the
    /// schedule (the server said "try again in 10 minutes"). Counts as an attempt.
    RetryAt(SystemTime),
    /// A failed attempt, tried again no earlier than this long after it ended (by the
    /// database's clock) instead of the schedule. Counts as an attempt.
    RetryAfter(Duration),
    /// Not a failure: put the message back until the given delay has passed. The attempt
    /// is given back (`max_attempts` grows by one), so snoozing never exhausts a message.
    Snooze(Duration),
    /// Trying again cannot help (a rejected address, a malformed request): the message
    /// goes to the dead letters now.
    Permanent,
    /// The downstream itself is down (the SMTP server refuses connections, the API
    /// answers 503), not this message: the type's circuit breaker opens, so every process
    /// stops starting its messages and one probe at a time tests the downstream. Messages
    /// waiting behind an open breaker use no attempts, an outage never turns one into a
    /// dead letter, and they all start as soon as a probe gets through. With the breaker
    /// turned off ([`Breaker::off`](crate::Breaker::off)) it is an ordinary retry.
    Down,
    /// This message's destination does not answer (its host refuses connections, its TLS
    /// handshake fails), while other destinations of the type may: a circuit breaker per
    /// destination. Traffic shaping suspends the message's site in every process — 1 s
    /// first, doubling at each failed probe up to [`DESTINATION_PROBE_MAX`] — and the
    /// message and the others to that site wait without using attempts; when the
    /// suspension ends the next message is the probe, and the first one that gets an answer
    /// ends the outage. For a type that is not shaped (no [`Shaping`](crate::Shaping)
    /// configured, or no destination) it is [`Down`](Self::Down).
    DestinationDown,
    /// The destination asks to be sent to more slowly (`429 Too Many Requests`, a mail
    /// server's "rate limited" reply): traffic shaping slows the message's site (its
    /// [destination](crate::OutboxMessage::destination)'s) to one message per `one_per` for
    /// `during`, in every process, and the message comes back when the site has room,
    /// without using an attempt. For a type that is not shaped (no
    /// [`Shaping`](crate::Shaping) configured, or no destination) it is a snooze of
    /// `one_per`.
    SlowDown {
        /// At most one message per this interval (at least 1 ms; at most a day is kept).
        one_per: Duration,
        /// How long the slowdown lasts (at most a year is kept).
        during: Duration,
    },
    /// The destination must never be sent to again (the address does not exist, the
    /// person complained): the message's [recipient](crate::OutboxMessage::recipient) is
    /// added to the suppression list for everything, with this reason, and the message goes
    /// to the dead letters. The suppression list holds addresses (`name@domain`): a kind
    /// whose recipients are something else (a phone number, a device) cannot use it yet.
    /// For a type that names no recipient (or when the list cannot be written) it is a
    /// permanent failure, and a WARN and the dead letter say why nothing was suppressed.
    Suppress(SuppressionReason),
}

/// A failed attempt: the reason, and what to do next.
///
/// Any error converts into a retryable `HandlerError`, so `?` works in handlers.
pub struct HandlerError {
    kind: HandlerErrorKind,
    source: BoxError,
}

impl HandlerError {
    /// A transient failure: the message is tried again on the schedule.
    pub fn retry(reason: impl Into<BoxError>) -> Self {
        Self::new(HandlerErrorKind::Retry, reason)
    }

    /// A failed attempt to try again no earlier than `delay` from now.
    pub fn retry_after(delay: Duration, reason: impl Into<BoxError>) -> Self {
        Self::new(HandlerErrorKind::RetryAfter(delay), reason)
    }

    /// A failed attempt to try again no earlier than `at`.
    pub fn retry_at(at: SystemTime, reason: impl Into<BoxError>) -> Self {
        Self::new(HandlerErrorKind::RetryAt(at), reason)
    }

    /// Not a failure: deliver the message again after `delay`, without using an attempt.
    pub fn snooze(delay: Duration) -> Self {
        Self::new(
            HandlerErrorKind::Snooze(delay),
            format!("snoozed for {delay:?}"),
        )
    }

    /// Not a failure: deliver the message again after `delay`, without using an attempt,
    /// recording `reason` as its last error (what it waits for).
    pub fn snooze_because(delay: Duration, reason: impl Into<BoxError>) -> Self {
        Self::new(HandlerErrorKind::Snooze(delay), reason)
    }

    /// The downstream is down, not this message (connection refused, `503 Service
    /// Unavailable`, SMTP `421`): the circuit breaker stops the type's workers in every
    /// process until a probe gets through; see [`HandlerErrorKind::Down`].
    pub fn down(reason: impl Into<BoxError>) -> Self {
        Self::new(HandlerErrorKind::Down, reason)
    }

    /// This message's destination does not answer (refused connection, failed TLS), not
    /// the whole downstream: its site is suspended and probed with backoff, and its messages
    /// wait without using attempts; see [`HandlerErrorKind::DestinationDown`].
    pub fn destination_down(reason: impl Into<BoxError>) -> Self {
        Self::new(HandlerErrorKind::DestinationDown, reason)
    }

    /// The destination says "too fast": its site is slowed to one message per `one_per`
    /// for `during` and the message waits for room, without using an attempt; see
    /// [`HandlerErrorKind::SlowDown`].
    pub fn slow_down(one_per: Duration, during: Duration, reason: impl Into<BoxError>) -> Self {
        Self::new(HandlerErrorKind::SlowDown { one_per, during }, reason)
    }

    /// The destination must never be sent to again: the message's recipient is suppressed
    /// with `why` and the message goes to the dead letters; see
    /// [`HandlerErrorKind::Suppress`].
    pub fn suppress(why: SuppressionReason, reason: impl Into<BoxError>) -> Self {
        Self::new(HandlerErrorKind::Suppress(why), reason)
    }

    /// A failure that retrying cannot fix: the message goes to the dead letters now.
    pub fn permanent(reason: impl Into<BoxError>) -> Self {
        Self::new(HandlerErrorKind::Permanent, reason)
    }

    fn new(kind: HandlerErrorKind, reason: impl Into<BoxError>) -> Self {
        Self {
            kind,
            source: reason.into(),
        }
    }

    /// What should happen next.
    pub fn kind(&self) -> HandlerErrorKind {
        self.kind
    }

    /// The underlying reason.
    pub fn source_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.source
    }

    /// The underlying reason, by value.
    pub fn into_source(self) -> BoxError {
        self.source
    }
}

impl<E: Into<BoxError>> From<E> for HandlerError {
    fn from(error: E) -> Self {
        Self::retry(error)
    }
}

impl fmt::Debug for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandlerError")
            .field("kind", &self.kind)
            .field("source", &self.source)
            .finish()
    }
}

impl fmt::Display for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.source, f)
    }
}
