//! The values that travel up the layer stack: how an attempt ended, as errors the outer
//! layers recognise by type (apalis passes errors as `BoxError`).

use std::{fmt, time::SystemTime};

use serde::{Deserialize, Serialize};

use crate::handler::HandlerErrorKind;

/// How a message was completed without error; recorded as the row's last result.
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
}

/// The message was not started and should come back at `until`; not an attempt.
#[derive(Debug)]
pub struct Deferred {
    /// When to try again.
    pub until: SystemTime,
    /// Why, in words recorded with the message.
    pub reason: String,
}

/// The message will not be tried again; the dead-letter layer moves it out of the queue.
#[derive(Debug)]
pub struct GivenUp {
    /// Why, in words recorded with the dead letter.
    pub reason: String,
    /// Attempts made, including the last.
    pub attempts: u32,
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
