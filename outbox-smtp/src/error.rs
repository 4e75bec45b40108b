//! What can go wrong: a configuration that cannot work ([`ConfigError`]) and a send that
//! failed ([`SendError`]), classified for the outbox's retry policy.
//!
//! How each failure is classified (retried, or a dead letter) is the crate's one failure
//! table: see "Failure handling" in the [crate documentation](crate) and
//! [`SendError::is_permanent`].
//!
//! No error ever contains the SMTP password.

use std::{fmt, path::PathBuf, time::Duration};

use outbox_core::{HandlerError, InvalidMessage};

/// A mail configuration that cannot work; says which setting and why.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
#[error("mail configuration, setting `{setting}`: {reason}")]
pub struct ConfigError {
    /// The setting or URL part at fault (`url`, `tls`, `pool`, ...).
    pub setting: String,
    /// What is wrong and what to do.
    pub reason: String,
}

impl ConfigError {
    pub(crate) fn new(setting: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            setting: setting.into(),
            reason: reason.into(),
        }
    }
}

/// Where in the SMTP conversation something failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Stage {
    /// Opening the TCP connection, reading the greeting, EHLO.
    Connect,
    /// The TLS handshake (implicit TLS or STARTTLS).
    Tls,
    /// Authentication.
    Auth,
    /// `MAIL FROM`.
    MailFrom,
    /// `RCPT TO`.
    RcptTo,
    /// `DATA`.
    Data,
    /// Sending the message data and reading the final reply.
    Message,
}

/// True for a reply about the SMTP session rather than the message: `421` (closing),
/// `503` (bad sequence of commands: the server is still in an earlier transaction) at any
/// stage, and `500`/`502` (command not recognized) to a command of ours, which the server
/// only sends when the two sides are out of step. The connection is dropped and the message
/// retried, never dead-lettered.
pub(crate) fn is_session_reply(stage: Stage, code: u16) -> bool {
    match code {
        421 | 503 => true,
        500 | 502 => matches!(stage, Stage::MailFrom | Stage::RcptTo | Stage::Data),
        _ => false,
    }
}

impl Stage {
    /// True for the stages of one message's transaction (after the connection is set up).
    fn in_transaction(self) -> bool {
        matches!(
            self,
            Stage::MailFrom | Stage::RcptTo | Stage::Data | Stage::Message
        )
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stage::Connect => "connect/EHLO",
            Stage::Tls => "TLS",
            Stage::Auth => "AUTH",
            Stage::MailFrom => "MAIL FROM",
            Stage::RcptTo => "RCPT TO",
            Stage::Data => "DATA",
            Stage::Message => "end of DATA",
        })
    }
}

/// A recipient the server refused, with its reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedRecipient {
    /// The envelope address.
    pub address: String,
    /// The reply code (`550`).
    pub code: u16,
    /// The server's reply text.
    pub reply: String,
}

impl RefusedRecipient {
    /// True for a 4xx refusal (the server may accept later).
    pub fn is_transient(&self) -> bool {
        (400..500).contains(&self.code)
    }
}

impl fmt::Display for RefusedRecipient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} {}", self.address, self.code, self.reply)
    }
}

/// Why an email was not sent.
#[non_exhaustive]
pub enum SendError {
    /// The email does not pass its checks.
    Invalid(InvalidMessage),
    /// The server answered with a negative reply.
    Refused {
        /// Where.
        stage: Stage,
        /// The reply code (`451`, `550`).
        code: u16,
        /// The server's reply text, as sent.
        reply: String,
    },
    /// Every recipient was refused.
    RecipientsRefused(Vec<RefusedRecipient>),
    /// The connection failed, broke, or the TLS handshake failed.
    Connection {
        /// Where.
        stage: Stage,
        /// What happened.
        reason: String,
    },
    /// The server did not answer in time.
    Timeout {
        /// Where.
        stage: Stage,
        /// The limit that passed.
        after: Duration,
    },
    /// The server cannot take this message (e.g. it needs SMTPUTF8).
    Unsupported(String),
    /// The DKIM signature could not be made (feature `dkim`); nothing was sent unsigned.
    Sign(String),
    /// The development file transport could not write.
    File {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        reason: String,
    },
    /// A provider's HTTP API (feature `providers`) refused the email, failed, or could not
    /// be reached; classified by the provider's answer.
    Api(ApiError),
}

/// What a provider's HTTP API answered (or why it could not be asked), and what that
/// means for the message: see [`ApiVerdict`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The provider (`postmark`, `mailgun`).
    pub provider: &'static str,
    /// The HTTP status, when an answer came.
    pub status: Option<u16>,
    /// The provider's own error code (Postmark's `ErrorCode`), when it gave one.
    pub code: Option<i64>,
    /// The provider's message, or what went wrong on the way.
    pub message: String,
    /// What happens to the message.
    pub verdict: ApiVerdict,
}

/// How a provider's answer is classified for the outbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ApiVerdict {
    /// Try again on the retry schedule (5xx, a timeout, a broken connection).
    Retry,
    /// The provider or the account cannot send now (bad token, sending not allowed, the
    /// connection refused): the circuit breaker opens.
    Down,
    /// Retrying cannot help: the message is a dead letter.
    Permanent,
    /// Too many requests: slow down to one per this interval (for ten minutes).
    SlowDown(Duration),
    /// The one recipient is known to bounce: suppressed (hard bounce), dead letter.
    HardBounce,
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.status, self.code) {
            (Some(status), Some(code)) => write!(
                f,
                "{} answered HTTP {status}, ErrorCode {code}: {}",
                self.provider, self.message
            ),
            (Some(status), None) => write!(
                f,
                "{} answered HTTP {status}: {}",
                self.provider, self.message
            ),
            (None, _) => write!(f, "{} API: {}", self.provider, self.message),
        }
    }
}

/// How long a provider's "too many requests" slows the site down.
pub(crate) const API_SLOW_DOWN_FOR: Duration = Duration::from_secs(10 * 60);

impl SendError {
    /// True when retrying cannot help: the message goes to the dead letters.
    pub fn is_permanent(&self) -> bool {
        match self {
            SendError::Invalid(_) | SendError::Unsupported(_) => true,
            SendError::Api(e) => {
                matches!(e.verdict, ApiVerdict::Permanent | ApiVerdict::HardBounce)
            }
            SendError::Refused { stage, code, .. } => {
                *code >= 500 && stage.in_transaction() && !is_session_reply(*stage, *code)
            }
            SendError::RecipientsRefused(refused) => {
                !refused.is_empty() && refused.iter().all(|r| !r.is_transient())
            }
            SendError::Connection { .. }
            | SendError::Timeout { .. }
            | SendError::File { .. }
            | SendError::Sign(_) => false,
        }
    }

    /// True when the server, not this message, is the problem: no session could be set up
    /// (connection refused or unreachable, a TLS failure, a greeting, EHLO, STARTTLS or
    /// AUTH that failed or timed out), an open connection dropped, or a `421` reply
    /// (service not available). The outbox's circuit breaker then holds the type's
    /// messages instead of spending their attempts.
    pub fn is_downstream_down(&self) -> bool {
        match self {
            SendError::Connection { .. } => true,
            SendError::Api(e) => e.verdict == ApiVerdict::Down,
            SendError::Timeout { stage, .. } => !stage.in_transaction(),
            SendError::Refused { stage, code, .. } => *code == 421 || !stage.in_transaction(),
            SendError::Invalid(_)
            | SendError::RecipientsRefused(_)
            | SendError::Unsupported(_)
            | SendError::Sign(_)
            | SendError::File { .. } => false,
        }
    }

    /// The outbox's verdict: [`HandlerError::permanent`], [`HandlerError::down`] (the
    /// server is down: see [`SendError::is_downstream_down`]) or [`HandlerError::retry`],
    /// carrying this error (and so the server's reply text).
    /// A provider's answer ([`SendError::Api`]) gives its [`ApiVerdict`]:
    /// [`HandlerError::slow_down`] for too many requests, [`HandlerError::suppress`] (hard
    /// bounce) for a recipient the provider will not send to.
    pub fn into_handler_error(self) -> HandlerError {
        if let SendError::Api(e) = &self {
            match e.verdict {
                ApiVerdict::SlowDown(one_per) => {
                    return HandlerError::slow_down(one_per, API_SLOW_DOWN_FOR, self)
                }
                ApiVerdict::HardBounce => {
                    return HandlerError::suppress(outbox_core::SuppressionReason::HardBounce, self)
                }
                _ => {}
            }
        }
        if self.is_permanent() {
            HandlerError::permanent(self)
        } else if self.is_downstream_down() {
            HandlerError::down(self)
        } else {
            HandlerError::retry(self)
        }
    }

    /// Maps a lettre error at `stage`; a negative reply keeps its code and text.
    pub(crate) fn from_lettre(stage: Stage, error: lettre::transport::smtp::Error) -> Self {
        if let Some(code) = error.status() {
            let code = code.to_string().parse().unwrap_or(0);
            let reply = std::error::Error::source(&error)
                .map(|s| s.to_string())
                .unwrap_or_default();
            return SendError::Refused { stage, code, reply };
        }
        let stage = if error.is_tls() { Stage::Tls } else { stage };
        SendError::Connection {
            stage,
            reason: error.to_string(),
        }
    }
}

impl fmt::Display for SendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verdict: std::borrow::Cow<'static, str> = match self {
            SendError::Api(ApiError {
                verdict: ApiVerdict::SlowDown(one_per),
                ..
            }) => format!("sending slows down to one per {one_per:?}; it waits its turn").into(),
            SendError::Api(ApiError {
                verdict: ApiVerdict::HardBounce,
                ..
            }) => "the address is suppressed (hard bounce) and the message is not retried".into(),
            _ if self.is_permanent() => {
                "not retried; fix the cause, then requeue it from the dead letters".into()
            }
            _ if self.is_downstream_down() => {
                "it will be sent once the server answers again".into()
            }
            _ => "it will be retried".into(),
        };
        match self {
            SendError::Invalid(e) => write!(f, "the email is invalid: {e}; {verdict}"),
            SendError::Refused { stage, code, reply } => write!(
                f,
                "the SMTP server replied {code} {reply} at {stage}; {verdict}"
            ),
            SendError::RecipientsRefused(refused) => {
                f.write_str("the SMTP server refused every recipient: ")?;
                for (i, r) in refused.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    write!(f, "{r}")?;
                }
                write!(f, "; {verdict}")
            }
            SendError::Connection { stage, reason } => {
                write!(f, "SMTP connection failed at {stage}: {reason}; {verdict}")
            }
            SendError::Timeout { stage, after } => write!(
                f,
                "the SMTP server did not answer within {after:?} at {stage}; {verdict}"
            ),
            SendError::Unsupported(reason) => write!(f, "{reason}; {verdict}"),
            SendError::Sign(reason) => {
                write!(f, "the DKIM signature failed: {reason}; {verdict}")
            }
            SendError::File { path, reason } => {
                write!(f, "cannot write {}: {reason}; {verdict}", path.display())
            }
            SendError::Api(e) => write!(f, "{e}; {verdict}"),
        }
    }
}

impl std::error::Error for SendError {}

impl From<InvalidMessage> for SendError {
    fn from(e: InvalidMessage) -> Self {
        SendError::Invalid(e)
    }
}

// `Debug` prints the `Display` text (what went wrong and what to do), so a `main` that
// returns one of these shows it.
outbox_core::__debug_as_display!(ConfigError, SendError);
