//! One message over an open connection: `MAIL FROM`, one `RCPT TO` per recipient,
//! `DATA`, the message — with lettre's commands, but our own handling of refused
//! recipients (lettre's `send` gives up the whole message at the first refusal).
//!
//! Partial recipients: when some recipients are refused and at least one is accepted, the
//! message is sent to the accepted ones and counts as delivered; the refusals are returned
//! for logging. Retrying instead would send it a second time to everyone who accepted it.
//! When every recipient is refused, the transaction is reset (`RSET`) and the refusals
//! decide: all 5xx → permanent, any 4xx → retried.

use std::{future::Future, time::Duration};

use lettre::transport::smtp::{
    client::AsyncSmtpConnection,
    commands::{Data, Mail, Rcpt, Rset},
    extension::{Extension, MailBodyParameter, MailParameter},
};

use crate::{
    error::{is_session_reply, RefusedRecipient},
    render::Rendered,
    SendError, Stage,
};

/// How one attempt on a connection went, and what to do with the connection.
pub(crate) struct Attempt {
    /// Delivered (accepted recipients, refused ones) or the error.
    pub(crate) result: Result<Accepted, SendError>,
    /// The connection can take the next message.
    pub(crate) reusable: bool,
    /// The connection was found dead before anything of the message was accepted: the
    /// same message may go at once over a fresh connection.
    pub(crate) stale: bool,
}

/// The recipients the server took, and those it refused.
pub(crate) struct Accepted {
    pub(crate) accepted: Vec<String>,
    pub(crate) refused: Vec<RefusedRecipient>,
}

/// What a single command returned.
enum Step<T> {
    Ok(T),
    /// A negative reply; the connection is in a known state.
    Reply(SendError),
    /// No usable reply (timeout, broken connection, 421): drop the connection.
    Broken(SendError),
}

async fn step<T, F>(stage: Stage, limit: Duration, command: F) -> Step<T>
where
    F: Future<Output = Result<T, lettre::transport::smtp::Error>>,
{
    match tokio::time::timeout(limit, command).await {
        Err(_) => Step::Broken(SendError::Timeout {
            stage,
            after: limit,
        }),
        Ok(Ok(value)) => Step::Ok(value),
        Ok(Err(e)) => match SendError::from_lettre(stage, e) {
            // 421 (closing), 503 (still in an earlier transaction), …: the session, not
            // the message, is at fault; the connection cannot be trusted any more.
            e @ SendError::Refused { code, .. } if is_session_reply(stage, code) => Step::Broken(e),
            e @ SendError::Refused { .. } => Step::Reply(e),
            e => Step::Broken(e),
        },
    }
}

/// Sends `message` over `conn`, each command within `limit`.
pub(crate) async fn send(
    conn: &mut AsyncSmtpConnection,
    message: &Rendered,
    limit: Duration,
) -> Attempt {
    let mut options = Vec::new();
    let ascii = |a: &lettre::Address| <lettre::Address as AsRef<str>>::as_ref(a).is_ascii();
    let non_ascii_address = !ascii(&message.from) || !message.recipients.iter().all(ascii);
    if non_ascii_address {
        if !conn.server_info().supports_feature(Extension::SmtpUtfEight) {
            return failed(
                SendError::Unsupported(
                    "an address is not ASCII and the server does not support SMTPUTF8".into(),
                ),
                true,
            );
        }
        options.push(MailParameter::SmtpUtfEight);
    }
    if !message.bytes.is_ascii() {
        if !conn.server_info().supports_feature(Extension::EightBitMime) {
            return failed(
                SendError::Unsupported(
                    "the message is not ASCII and the server does not support 8BITMIME".into(),
                ),
                true,
            );
        }
        options.push(MailParameter::Body(MailBodyParameter::EightBitMime));
    }

    let mail = conn.command(Mail::new(Some(message.from.clone()), options));
    match step(Stage::MailFrom, limit, mail).await {
        Step::Ok(_) => {}
        Step::Reply(e) => return after_reply(conn, e, limit).await,
        Step::Broken(e) => {
            return Attempt {
                result: Err(e),
                reusable: false,
                stale: true,
            }
        }
    }

    let mut accepted = Vec::new();
    let mut refused = Vec::new();
    for to in &message.recipients {
        match step(
            Stage::RcptTo,
            limit,
            conn.command(Rcpt::new(to.clone(), vec![])),
        )
        .await
        {
            Step::Ok(_) => accepted.push(to.to_string()),
            Step::Reply(SendError::Refused { code, reply, .. }) => refused.push(RefusedRecipient {
                address: to.to_string(),
                code,
                reply,
            }),
            Step::Reply(e) => return failed(e, false),
            Step::Broken(e) => return broken_before_data(e),
        }
    }
    if accepted.is_empty() {
        return after_reply(conn, SendError::RecipientsRefused(refused), limit).await;
    }

    match step(Stage::Data, limit, conn.command(Data)).await {
        Step::Ok(_) => {}
        Step::Reply(e) => return after_reply(conn, e, limit).await,
        Step::Broken(e) => return broken_before_data(e),
    }
    match step(Stage::Message, limit, conn.message(&message.bytes)).await {
        Step::Ok(_) => Attempt {
            result: Ok(Accepted { accepted, refused }),
            reusable: true,
            stale: false,
        },
        // A refusal of the data should end the transaction, but some servers keep its
        // state and answer the next MAIL FROM with `503`: reset before reuse.
        Step::Reply(e) => after_reply(conn, e, limit).await,
        Step::Broken(e) => failed(e, false),
    }
}

/// The connection broke before the message data was sent: nothing was delivered, so a
/// session-level reply (the server out of step with us) may be retried at once on a new
/// connection. A timeout is not: the server may be overloaded, and the outbox retries later.
fn broken_before_data(error: SendError) -> Attempt {
    let session =
        matches!(&error, SendError::Refused { stage, code, .. } if is_session_reply(*stage, *code));
    Attempt {
        result: Err(error),
        reusable: false,
        stale: session,
    }
}

fn failed(error: SendError, reusable: bool) -> Attempt {
    Attempt {
        result: Err(error),
        reusable,
        stale: false,
    }
}

/// A refusal in the middle of a transaction: reset it so the connection can be reused.
async fn after_reply(conn: &mut AsyncSmtpConnection, error: SendError, limit: Duration) -> Attempt {
    let reset = matches!(
        step(Stage::MailFrom, limit, conn.command(Rset)).await,
        Step::Ok(_)
    );
    failed(error, reset)
}
