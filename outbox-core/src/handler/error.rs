//! How a handler says an attempt failed, and whether to try again.

use std::fmt;

use crate::BoxError;

/// Whether a failed attempt should be tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HandlerErrorKind {
    /// A transient failure: try again while attempts remain (the default for any error).
    Retry,
    /// Trying again cannot help (a rejected address, a malformed request): give up now.
    Permanent,
}

/// A failed attempt: the reason, and whether to try again.
///
/// Any error converts into a retryable `HandlerError`, so `?` works in handlers.
pub struct HandlerError {
    kind: HandlerErrorKind,
    source: BoxError,
}

impl HandlerError {
    /// A transient failure: the message is tried again while attempts remain.
    pub fn retry(reason: impl Into<BoxError>) -> Self {
        Self {
            kind: HandlerErrorKind::Retry,
            source: reason.into(),
        }
    }

    /// A failure that retrying cannot fix: the message is given up after this attempt.
    pub fn permanent(reason: impl Into<BoxError>) -> Self {
        Self {
            kind: HandlerErrorKind::Permanent,
            source: reason.into(),
        }
    }

    /// Whether the message should be tried again.
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
