//! The innermost service of every worker: decode the stored payload, call the typed
//! handler under a time limit and a panic guard, and report how the attempt ended.
//!
//! What to do about a failure is decided by the retry layer further out, from the
//! [`AttemptFailed`] it gets; how the attempt ended is counted by the settle step.

use std::{
    marker::PhantomData,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use apalis_core::task::Task;
use futures::{future::BoxFuture, FutureExt};
use tower::Service;

use crate::{
    counters::names,
    enqueue::MessageId,
    handler::{
        context::{EventLog, SuppressionList},
        invoke, Handler, HandlerErrorKind, Interrupted, MessageContext,
    },
    layers::{
        pause::{HeldBack, PausedGroups},
        AttemptFailed, Completion, Deferred, Stop,
    },
    message::OutboxMessage,
    store::Claimed,
    suppression::{NewSuppression, SuppressionReason, SuppressionScope},
};

/// What one delivery attempt needs to know about its message.
pub(crate) struct Delivery {
    pub(crate) id: MessageId,
    pub(crate) attempt: u32,
    pub(crate) max_attempts: u32,
    /// The message's group, if it was enqueued into one.
    pub(crate) group: Option<String>,
    /// Where the handler's [`MessageContext::suppress`] writes.
    pub(crate) suppressions: SuppressionList,
    /// Where the handler's [`MessageContext::record_receipt`] writes.
    pub(crate) events: EventLog,
}

/// A handler with its message type erased, so one service type serves every queue.
pub(crate) trait ErasedHandler: Send + Sync {
    fn handle(
        &self,
        payload: Vec<u8>,
        delivery: Delivery,
    ) -> BoxFuture<'static, Result<(), AttemptFailed>>;

    /// The downstream the handler names for its circuit breaker ([`Handler::downstream`]).
    fn downstream(&self) -> Option<String>;

    /// Whether the handler may refuse a message at start ([`Handler::refuses_some`]).
    fn refuses_some(&self) -> bool;

    /// Why the handler can never deliver the message stored as `payload`
    /// ([`Handler::refuses`]); `None` too for a payload that does not decode (the worker
    /// deals with it).
    fn refuses(&self, payload: &[u8]) -> Option<String>;
}

/// A typed handler, its state and the type's time limit.
pub(crate) struct TypedHandler<M, S, H> {
    handler: Arc<H>,
    state: Arc<S>,
    timeout: Option<Duration>,
    _message: PhantomData<fn() -> M>,
}

impl<M, S, H> TypedHandler<M, S, H> {
    pub(crate) fn new(handler: H, state: Arc<S>, timeout: Option<Duration>) -> Self {
        Self {
            handler: Arc::new(handler),
            state,
            timeout,
            _message: PhantomData,
        }
    }
}

fn retry(reason: String) -> AttemptFailed {
    AttemptFailed {
        kind: HandlerErrorKind::Retry,
        reason,
        from_handler: false,
    }
}

/// Longest reason recorded with a message (the backends' text columns hold it easily).
const MAX_REASON: usize = 4_000;

/// `reason`, cut at [`MAX_REASON`] bytes on a character boundary.
pub(crate) fn bounded(mut reason: String) -> String {
    if reason.len() > MAX_REASON {
        let mut cut = MAX_REASON;
        while !reason.is_char_boundary(cut) {
            cut -= 1;
        }
        reason.truncate(cut);
        reason.push_str(" …[truncated]");
    }
    reason
}

impl<M, S, H> ErasedHandler for TypedHandler<M, S, H>
where
    M: OutboxMessage,
    S: Send + Sync + 'static,
    H: Handler<M, S>,
{
    fn downstream(&self) -> Option<String> {
        self.handler.downstream()
    }

    fn refuses_some(&self) -> bool {
        self.handler.refuses_some()
    }

    fn refuses(&self, payload: &[u8]) -> Option<String> {
        let message = crate::message::decode_payload::<M>(payload).ok()?;
        self.handler.refuses(&message)
    }

    fn handle(
        &self,
        payload: Vec<u8>,
        delivery: Delivery,
    ) -> BoxFuture<'static, Result<(), AttemptFailed>> {
        // A user Deserialize impl may panic: that is an undecodable payload too.
        let decoded = crate::message::decode_payload::<M>(&payload);
        let message = match decoded {
            Ok(message) => message,
            Err(e) => {
                let failed = AttemptFailed {
                    kind: HandlerErrorKind::Permanent,
                    reason: crate::message::undecodable::<M>(&e),
                    from_handler: false,
                };
                return futures::future::ready(Err(failed)).boxed();
            }
        };
        let ctx = MessageContext {
            id: delivery.id,
            type_tag: M::TYPE,
            attempt: delivery.attempt,
            max_attempts: delivery.max_attempts,
            group: delivery.group,
            state: Arc::clone(&self.state),
            suppressions: delivery.suppressions,
            events: delivery.events,
        };
        let handler = Arc::clone(&self.handler);
        let timeout = self.timeout;
        let list = ctx.suppressions.clone();
        async move {
            // The handler's synchronous part and its future are both guarded.
            match invoke(|| handler.call(message, ctx), timeout).await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => {
                    let mut reason = bounded(e.to_string());
                    if let HandlerErrorKind::Suppress(why) = e.kind() {
                        reason = suppress_recipient::<M>(&payload, why, &list, reason).await;
                    }
                    Err(AttemptFailed {
                        kind: e.kind(),
                        reason,
                        from_handler: true,
                    })
                }
                Err(Interrupted::TimedOut(limit)) => {
                    Err(retry(format!("handler timed out after {limit:?}")))
                }
                Err(Interrupted::Panicked(panic)) => {
                    Err(retry(format!("handler panicked: {panic}")))
                }
            }
        }
        .boxed()
    }
}

/// Writes the suppression a [`HandlerErrorKind::Suppress`] failure asks for: the recipient
/// `payload` names, for everything, with `why`. Returns `reason` with what was done on a
/// line of its own (error signatures read the first line), for the dead letter; a message without a recipient, or a list that cannot be written, is
/// logged at WARN and only goes to the dead letters.
async fn suppress_recipient<M: OutboxMessage>(
    payload: &[u8],
    why: SuppressionReason,
    list: &SuppressionList,
    reason: String,
) -> String {
    let Some(recipient) = crate::message::recipient_of::<M>(payload) else {
        tracing::warn!(
            message.type = M::TYPE,
            "the handler asked to suppress the destination, but the message names no \
             recipient (OutboxMessage::recipient); nothing was suppressed"
        );
        return format!("{reason}\nnot suppressed: the message names no recipient");
    };
    let written = match NewSuppression::new(&recipient.address, SuppressionScope::All, why) {
        Ok(entry) => {
            let entry = entry.source(format!("handler of {}", M::TYPE));
            list.write(entry).await.map_err(|e| e.to_string())
        }
        Err(e) => Err(e),
    };
    match written {
        Ok(()) => format!("{reason}\nsuppressed {}: {why}", recipient.address),
        Err(e) => {
            tracing::warn!(
                message.type = M::TYPE, address = %recipient.address, error = %e,
                "cannot suppress the destination the handler refused for good"
            );
            format!("{reason}\nnot suppressed: {e}")
        }
    }
}

/// The service that runs one queue's handler, at the bottom of that queue's apalis
/// worker. It counts nothing: the settle step counts how each attempt ended.
#[derive(Clone)]
pub struct Dispatch {
    queue: &'static str,
    handler: Arc<dyn ErasedHandler>,
    paused_groups: Arc<PausedGroups>,
    suppressions: SuppressionList,
    events: EventLog,
}

impl std::fmt::Debug for Dispatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatch")
            .field("queue", &self.queue)
            .finish_non_exhaustive()
    }
}

impl Dispatch {
    /// The dispatch of `queue` to `handler`; a message of a group in `paused_groups` is
    /// given back instead of handled (the last check before its side effect); handlers
    /// suppress addresses into `suppressions` and record receipts into `events`.
    pub(crate) fn new(
        queue: &'static str,
        handler: Arc<dyn ErasedHandler>,
        paused_groups: Arc<PausedGroups>,
        suppressions: SuppressionList,
        events: EventLog,
    ) -> Self {
        Self {
            queue,
            handler,
            paused_groups,
            suppressions,
            events,
        }
    }
}

impl Service<Task<Claimed>> for Dispatch {
    type Response = Completion;
    type Error = Stop;
    type Future = BoxFuture<'static, Result<Completion, Stop>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, task: Task<Claimed>) -> Self::Future {
        use tracing::Instrument;

        let claimed = task.args;
        let queue = self.queue;
        if let Some(group) = claimed.group.as_deref() {
            if let Some(held) = self.paused_groups.holds_back(group, claimed.enqueued_at) {
                // Paused after it was claimed: back unchanged, keeping its place in line.
                // Cancelled: back, and deleted as cancelled by the process's next sweep.
                let reason = match held {
                    HeldBack::Paused => format!("group `{group}` is paused"),
                    HeldBack::Cancelled => format!("group `{group}` was cancelled"),
                };
                let deferred = Deferred {
                    until: None,
                    reason,
                };
                return Box::pin(futures::future::ready(Err(Stop::Deferred(deferred))));
            }
        }
        let handler = Arc::clone(&self.handler);
        let suppressions = self.suppressions.clone();
        let events = self.events.clone();
        let id = claimed.id;
        let attempt = claimed.attempt.max(1);
        // OpenTelemetry's messaging conventions, so `tracing-opentelemetry` exports a
        // consumer span per attempt.
        let span = tracing::info_span!(
            "outbox.process",
            otel.name = %format_args!("process {queue}"),
            otel.kind = "consumer",
            messaging.system = "outbox",
            messaging.operation.type = "process",
            messaging.operation.name = "process",
            messaging.destination.name = queue,
            messaging.message.id = %id,
            outbox.attempt = attempt,
            outbox.max_attempts = claimed.max_attempts,
        );
        // By this process's clock (the due time is the database's: skew shows here).
        let late = crate::clock::system_now()
            .duration_since(claimed.due_at)
            .unwrap_or_default();
        metrics::histogram!(names::PICKUP_LATENCY, "type" => queue).record(late.as_secs_f64());
        Box::pin(
            async move {
                let delivery = Delivery {
                    id: id.clone(),
                    attempt,
                    max_attempts: claimed.max_attempts,
                    group: claimed.group,
                    suppressions,
                    events,
                };
                let started = std::time::Instant::now();
                let result = handler.handle(claimed.payload, delivery).await;
                let outcome = if result.is_ok() { "ok" } else { "error" };
                metrics::histogram!(names::HANDLER_DURATION, "type" => queue, "outcome" => outcome)
                    .record(started.elapsed().as_secs_f64());
                match result {
                    Ok(()) => {
                        tracing::debug!(message.type = queue, message.id = %id, attempt, "delivered");
                        Ok(Completion::Delivered)
                    }
                    Err(failed) => {
                        // The retry schedule (or the dead letters, which log a WARN) takes
                        // it from here: nothing for an operator yet.
                        tracing::debug!(message.type = queue, message.id = %id, attempt, reason = %failed.reason, "attempt failed");
                        Err(Stop::Failed(failed))
                    }
                }
            }
            .instrument(span),
        )
    }
}
