//! The values that travel up the layer stack: how an attempt ended. A completion is the
//! services' response; every other end is one [`Stop`], the error type of every layer, so
//! the outer layers and the worker's settle step match on it.
//!
//! apalis boxes the error of the service it wraps around the handler (its lifecycle
//! service, below the layers); [`Unboxed`], the innermost of the layers, takes the [`Stop`]
//! back out once, and apalis boxes the settle step's [`Stop`] again at the top.

use std::{
    fmt,
    task::{Context, Poll},
};

use futures::{future::MapErr, TryFutureExt};
use serde::{Deserialize, Serialize};
use tower::Service;

use crate::{clock::Due, error::BoxError, handler::HandlerErrorKind};

/// How a message was completed without error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Completion {
    /// The handler delivered it.
    Delivered,
    /// Its orphan check found the thing it is about gone; the handler was not called.
    Orphaned {
        /// What the check reported.
        reason: String,
    },
}

/// The handler ran (or the payload could not be decoded for it) and the attempt failed.
#[derive(Debug)]
pub struct AttemptFailed {
    /// What should happen next.
    pub kind: HandlerErrorKind,
    /// Why, in words recorded with the message.
    pub reason: String,
    /// The handler returned this error: the downstream may have answered. False when the
    /// worker made it (the payload did not decode, the handler panicked or ran out of
    /// time): then a circuit breaker's probe proves nothing.
    pub from_handler: bool,
}

/// The message was stopped before its side effect; not an attempt. With `until` it comes
/// back then; without, it goes back unchanged, keeping its place in line (a rate limit).
#[derive(Debug)]
pub struct Deferred {
    /// When to try again; `None` keeps its due time.
    pub until: Option<Due>,
    /// Why, in words recorded with the message.
    pub reason: String,
}

/// The retry layer's decision: the message comes back at `due`.
#[derive(Debug)]
pub struct Rescheduled {
    /// When it is due again.
    pub due: Due,
    /// Why the attempt did not complete, recorded with the message.
    pub reason: String,
    /// The attempt did not count (a snooze, a deferral).
    pub give_back_attempt: bool,
}

/// The message will not be tried again; it is moved to the dead letters.
#[derive(Debug)]
pub struct GivenUp {
    /// Why, in words recorded with the dead letter.
    pub reason: String,
    /// Attempts made, including the last.
    pub attempts: u32,
    /// The last attempt's worker stopped without reporting (a crash, or a stall past its
    /// lease), so the handler was not called again: that attempt counts as failed too.
    pub lost_attempt: bool,
}

impl fmt::Display for AttemptFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

impl fmt::Display for Deferred {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "deferred: {}", self.reason)
    }
}

impl fmt::Display for Rescheduled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

impl fmt::Display for GivenUp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "given up after {} attempt(s): {}",
            self.attempts, self.reason
        )
    }
}

impl std::error::Error for AttemptFailed {}
impl std::error::Error for Deferred {}
impl std::error::Error for GivenUp {}
impl std::error::Error for Rescheduled {}

/// How an attempt ended short of a [`Completion`]: the error of every layer's service,
/// matched on by the outer layers and turned into a settlement by the worker's settle step.
#[derive(Debug)]
pub enum Stop {
    /// The attempt failed; the retry layer decides what follows.
    Failed(AttemptFailed),
    /// Stopped before its side effect; not an attempt.
    Deferred(Deferred),
    /// Decided: back at a due time.
    Rescheduled(Rescheduled),
    /// Decided: moved to the dead letters.
    GivenUp(GivenUp),
}

impl Stop {
    /// The [`Stop`] that `error`, boxed by apalis below the layers, carries.
    ///
    /// Default for anything else (apalis' own lifecycle errors, which the features the
    /// outbox builds apalis with never produce): a failed attempt made by the worker, not
    /// the handler ([`AttemptFailed::from_handler`] false, so a circuit breaker's probe
    /// proves nothing), of kind [`HandlerErrorKind::Retry`] with the error's text as its
    /// reason: retried on the schedule, given up once the attempts are used up. Not
    /// silent: logged at WARN here, and the reason is recorded with the message.
    pub(crate) fn from_boxed(error: BoxError) -> Self {
        match error.downcast::<Stop>() {
            Ok(stop) => *stop,
            Err(other) => {
                tracing::warn!(
                    error = %other,
                    "an error the outbox did not make came back from the handler's service; \
                     counted as a failed attempt"
                );
                Stop::Failed(AttemptFailed {
                    kind: HandlerErrorKind::Retry,
                    reason: other.to_string(),
                    from_handler: false,
                })
            }
        }
    }
}

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stop::Failed(e) => fmt::Display::fmt(e, f),
            Stop::Deferred(e) => fmt::Display::fmt(e, f),
            Stop::Rescheduled(e) => fmt::Display::fmt(e, f),
            Stop::GivenUp(e) => fmt::Display::fmt(e, f),
        }
    }
}

impl std::error::Error for Stop {}

/// The innermost of the layers: takes the [`Stop`] back out of the error apalis boxed
/// around the handler's service ([`Stop::from_boxed`], whose default applies to any other
/// error). Readiness errors are converted the same way.
#[derive(Debug, Clone)]
pub struct Unboxed<S> {
    inner: S,
}

impl<S> Unboxed<S> {
    /// Wraps `inner`. Cannot fail.
    pub fn new(inner: S) -> Self {
        Self { inner }
    }
}

impl<S, Req> Service<Req> for Unboxed<S>
where
    S: Service<Req>,
    S::Error: Into<BoxError>,
{
    type Response = S::Response;
    type Error = Stop;
    type Future = MapErr<S::Future, fn(S::Error) -> Stop>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Stop>> {
        self.inner.poll_ready(cx).map_err(unbox)
    }

    fn call(&mut self, req: Req) -> Self::Future {
        self.inner
            .call(req)
            .map_err(unbox::<S::Error> as fn(S::Error) -> Stop)
    }
}

/// [`Stop::from_boxed`] of any error that boxes.
fn unbox<E: Into<BoxError>>(error: E) -> Stop {
    Stop::from_boxed(error.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_boxed_stop_comes_back_whole_and_anything_else_is_a_failed_attempt() {
        let boxed: BoxError = Box::new(Stop::Deferred(Deferred {
            until: None,
            reason: "held".into(),
        }));
        assert!(matches!(
            Stop::from_boxed(boxed),
            Stop::Deferred(Deferred { until: None, reason }) if reason == "held"
        ));
        let Stop::Failed(failed) = Stop::from_boxed("lifecycle".into()) else {
            panic!("not a failed attempt");
        };
        assert_eq!(failed.kind, HandlerErrorKind::Retry);
        assert_eq!(failed.reason, "lifecycle");
        assert!(!failed.from_handler);
    }
}
