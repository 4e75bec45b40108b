//! The values that travel up the layer stack: how an attempt ended, as errors the outer
//! layers recognise by type (apalis passes errors as `BoxError`).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::{clock::Due, handler::HandlerErrorKind};

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
