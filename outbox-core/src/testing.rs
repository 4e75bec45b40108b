//! Test helpers (feature `testing`): assert that code under test enqueued a message, read
//! enqueued messages back typed, and run one handler on a message without workers.
//!
//! * [`assert_enqueued`] / [`refute_enqueued`] / [`queued`] read through the connection
//!   the test passes: the test's own open transaction (its uncommitted messages included)
//!   or a connection from the pool (what was committed). A failure panics at the test's
//!   own line (where it is awaited), listing what is queued.
//! * [`perform`] runs a handler on one message at a given attempt number and says how the
//!   attempt ended, as the worker would classify it (delivered, retried, given up, snoozed,
//!   "down", panicked, timed out).
//! * To deliver everything due in-process and get counts, call
//!   [`Outbox::drain`](crate::Outbox::drain): it returns a
//!   [`DrainReport`](crate::DrainReport) with delivered, failed and given-up counts.
//!
//! ```no_run
//! # use outbox_core::{testing, Enqueue, OutboxMessage};
//! # #[derive(serde::Serialize, serde::Deserialize)] struct WelcomeMail { user_id: i64 }
//! # impl OutboxMessage for WelcomeMail { const TYPE: &'static str = "welcome_mail"; }
//! # async fn signup(_: &mut sqlx::SqliteConnection, _: i64) {}
//! # async fn demo(pool: sqlx::SqlitePool) {
//! let mut tx = pool.begin().await.unwrap();
//! signup(&mut tx, 7).await; // the code under test
//! let mail = testing::assert_enqueued::<WelcomeMail, _>(&mut *tx, |m| m.message.user_id == 7).await;
//! assert_eq!(mail.max_attempts, 10);
//! # }
//! ```

use std::{
    future::Future,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::{Duration, SystemTime},
};

use futures::future::BoxFuture;

use crate::{
    clock::system_now,
    enqueue::{EnqueueConnection, InsertMessages, MessageId, QueuedRow},
    handler::{invoke, HandlerErrorKind, HandlerFn, Interrupted, MessageContext},
    layers::retry::{decide, Decision, RetrySchedule},
    message::{decode_payload, OutboxMessage},
};

/// A queued message of type `M`, read back typed.
#[derive(Debug, Clone, PartialEq)]
pub struct Queued<M> {
    /// Its id.
    pub id: MessageId,
    /// The message as enqueued.
    pub message: M,
    /// Its group, if any.
    pub group: Option<String>,
    /// When it is due.
    pub due_at: SystemTime,
    /// Its priority.
    pub priority: i64,
    /// Attempts counted so far.
    pub attempts: u32,
    /// Attempts it may use.
    pub max_attempts: u32,
    /// Its idempotency key, if any.
    pub idempotency_key: Option<String>,
}

impl<M> Queued<M> {
    /// True when it is in group `name`.
    pub fn in_group(&self, name: &str) -> bool {
        self.group.as_deref() == Some(name)
    }

    /// True when it is due later than `delay` from now (a delayed message), by the
    /// process's clock ([`system_now`]).
    pub fn due_after(&self, delay: Duration) -> bool {
        self.due_at > system_now() + delay
    }
}

/// Every queued (or running) message of type `M` that `conn` sees, oldest first: pass the
/// test's open transaction (`&mut *tx`) to see its uncommitted messages, or a pooled
/// connection (`&mut *pool.acquire().await?`) for committed ones. Panics if the read fails
/// or a payload does not decode as `M` (a test helper: the failure is the message).
/// A failure panics at the line that awaits it.
pub fn queued<'a, M, C>(conn: C) -> Assertion<'a, Vec<Queued<M>>>
where
    M: OutboxMessage,
    C: EnqueueConnection + 'a,
{
    Assertion::new(queued_rows::<M, C>(conn))
}

fn typed<M: OutboxMessage>(row: QueuedRow) -> Result<Queued<M>, String> {
    let message = decode_payload::<M>(&row.payload).map_err(|e| {
        format!(
            "queued message {} does not decode as `{}`: {e}",
            row.id,
            std::any::type_name::<M>()
        )
    })?;
    Ok(Queued {
        id: row.id,
        message,
        group: row.group,
        due_at: row.due_at,
        priority: row.priority,
        attempts: row.attempts,
        max_attempts: row.max_attempts,
        idempotency_key: row.idempotency_key,
    })
}

/// The first queued message of type `M` that `matching` accepts (pass `|_| true` for
/// any); panics, listing what is queued, when there is none. Reads through `conn` as
/// [`queued`] does. A failure is reported at the test's line (the `.await`), not in
/// this crate.
pub fn assert_enqueued<'a, M, C>(
    conn: C,
    matching: impl Fn(&Queued<M>) -> bool + Send + 'a,
) -> Assertion<'a, Queued<M>>
where
    M: OutboxMessage,
    C: EnqueueConnection + 'a,
{
    Assertion::new(async move {
        let all = queued_rows::<M, C>(conn).await?;
        match all.iter().position(&matching) {
            Some(i) => Ok(all.into_iter().nth(i).expect("found above")),
            None => Err(format!(
                "no queued `{}` message matches; queued: {}",
                M::TYPE,
                listing(&all)
            )),
        }
    })
}

/// Panics, naming them, when a queued message of type `M` matches `matching` (pass
/// `|_| true` to refute any). Reads through `conn` as [`queued`] does. A failure is
/// reported at the test's line (the `.await`), not in this crate.
pub fn refute_enqueued<'a, M, C>(
    conn: C,
    matching: impl Fn(&Queued<M>) -> bool + Send + 'a,
) -> Assertion<'a, ()>
where
    M: OutboxMessage,
    C: EnqueueConnection + 'a,
{
    Assertion::new(async move {
        let all = queued_rows::<M, C>(conn).await?;
        let found: Vec<Queued<M>> = all.into_iter().filter(|m| matching(m)).collect();
        match found.is_empty() {
            true => Ok(()),
            false => Err(format!(
                "expected no matching `{}` message; queued: {}",
                M::TYPE,
                listing(&found)
            )),
        }
    })
}

/// What [`queued`] reads, with a failure as the message to panic with.
async fn queued_rows<M, C>(mut conn: C) -> Result<Vec<Queued<M>>, String>
where
    M: OutboxMessage,
    C: EnqueueConnection,
{
    let rows = conn
        .connection()
        .queued_rows(M::TYPE)
        .await
        .map_err(|e| format!("cannot read the queued `{}` messages: {e}", M::TYPE))?;
    rows.into_iter().map(typed::<M>).collect()
}

/// A test assertion that reads the database: await it. Its failure panics at the line that
/// awaits it (the test's own line), not inside this crate.
///
/// (A `#[track_caller]` async function does not pass its caller's location on; a
/// `#[track_caller]` `poll` does, and `.await` calls `poll` from the test's line.)
#[must_use = "an assertion checks nothing until it is awaited"]
pub struct Assertion<'a, T> {
    check: BoxFuture<'a, Result<T, String>>,
}

impl<'a, T> Assertion<'a, T> {
    fn new(check: impl Future<Output = Result<T, String>> + Send + 'a) -> Self {
        Self {
            check: Box::pin(check),
        }
    }
}

impl<T> std::fmt::Debug for Assertion<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Assertion")
    }
}

impl<T> Future for Assertion<'_, T> {
    type Output = T;

    #[track_caller]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        match self.check.as_mut().poll(cx) {
            Poll::Ready(Ok(value)) => Poll::Ready(value),
            Poll::Ready(Err(failure)) => panic!("{failure}"),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// The messages, one per line: id and JSON.
fn listing<M: OutboxMessage>(all: &[Queued<M>]) -> String {
    if all.is_empty() {
        return "none".into();
    }
    all.iter()
        .map(|m| {
            let json = serde_json::to_string(&m.message).unwrap_or_else(|e| e.to_string());
            format!("\n  {} {json}", m.id)
        })
        .collect()
}

/// How one handler call ended, as the worker classifies it ([`perform`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Performed {
    /// The handler returned `Ok`: delivered.
    Delivered,
    /// The handler failed: `kind` says what the worker does next (retry on the schedule,
    /// at a time, snooze, give up, or "the downstream is down"), `reason` is what is
    /// recorded with the message.
    Failed {
        /// What the worker does next.
        kind: HandlerErrorKind,
        /// The error's text.
        reason: String,
    },
    /// The handler panicked (the worker retries it on the schedule).
    Panicked(String),
    /// The handler ran longer than the type's time limit (retried on the schedule).
    TimedOut(Duration),
}

impl Performed {
    /// True when delivered.
    pub fn is_delivered(&self) -> bool {
        matches!(self, Performed::Delivered)
    }

    /// True when the worker would give the message up now: a permanent failure, or a
    /// retried one on its last attempt (the retry layer's own decision function). "Down"
    /// counts as held by an open circuit breaker, which never gives a message up (below
    /// the breaker's threshold, a "down" failure on the last attempt is given up like a
    /// retry).
    pub fn gives_up(&self, attempt: u32, max_attempts: u32) -> bool {
        let kind = match self {
            Performed::Delivered => return false,
            Performed::Failed {
                kind: HandlerErrorKind::Down | HandlerErrorKind::DestinationDown,
                ..
            } => return false,
            Performed::Failed { kind, .. } => *kind,
            // The worker retries both on the schedule.
            Performed::Panicked(_) | Performed::TimedOut(_) => HandlerErrorKind::Retry,
        };
        // Whether it gives up does not depend on the schedule nor on the message.
        let decision = decide(kind, attempt, max_attempts, &RetrySchedule::default(), "");
        matches!(decision, Decision::GiveUp { .. })
    }
}

/// Runs `handler` on `message` as attempt `attempt` of its type's `max_attempts` (from the
/// type's defaults, [`OutboxMessage::DEFAULTS`], not the options it is registered with),
/// with `state`, and says how it ended — no database, no worker. The time limit is the
/// type's default timeout. For a handler without state pass `()`. The handler is what
/// `register` takes ([`HandlerFn`]): an `async fn(M)`, an `async fn(M, MessageContext<S>)`
/// or a [`Handler`](crate::Handler).
pub async fn perform<M, S, Args, H>(handler: &H, message: M, attempt: u32, state: S) -> Performed
where
    M: OutboxMessage,
    S: Send + Sync + 'static,
    H: HandlerFn<M, S, Args>,
{
    let ctx = MessageContext {
        id: MessageId::generate(),
        type_tag: M::TYPE,
        attempt: attempt.max(1),
        max_attempts: M::DEFAULTS.max_attempts,
        group: None,
        state: Arc::new(state),
        suppressions: Default::default(),
        events: Default::default(),
    };
    // Guarded as the worker guards it: its synchronous start, its future and its time.
    match invoke(|| handler.call(message, ctx), M::DEFAULTS.timeout).await {
        Ok(Ok(())) => Performed::Delivered,
        Ok(Err(e)) => Performed::Failed {
            kind: e.kind(),
            reason: e.to_string(),
        },
        Err(Interrupted::TimedOut(limit)) => Performed::TimedOut(limit),
        Err(Interrupted::Panicked(panic)) => Performed::Panicked(panic.to_string()),
    }
}
