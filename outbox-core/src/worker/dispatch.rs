//! The innermost service of every worker: decode the stored payload, call the typed
//! handler under a time limit and a panic guard, and turn its outcome into what apalis
//! records.
//!
//! Everything here runs inside apalis' lifecycle service, so the status apalis writes
//! follows our result: `Ok` → done, an `AbortError` → given up (killed), any other error
//! → failed (tried again while attempts remain).

use std::{
    marker::PhantomData,
    panic::AssertUnwindSafe,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use apalis_core::{error::AbortError, task::Task};
use futures::{future::BoxFuture, FutureExt};
use tower::Service;

use super::Counters;
use crate::{
    handler::{Handler, HandlerError, HandlerErrorKind, MessageContext},
    BoxError, MessageId, OutboxMessage,
};

/// What one delivery attempt needs to know about its message.
pub(crate) struct Delivery {
    pub(crate) id: MessageId,
    pub(crate) attempt: u32,
    pub(crate) max_attempts: u32,
}

/// How an attempt ended, before it is mapped onto apalis' statuses.
pub(crate) enum Outcome {
    Delivered,
    Failed { reason: String, give_up: bool },
}

/// A handler with its message type erased, so one service type serves every queue.
pub(crate) trait ErasedHandler: Send + Sync {
    fn handle(&self, payload: Vec<u8>, delivery: Delivery) -> BoxFuture<'static, Outcome>;
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

impl<M, S, H> ErasedHandler for TypedHandler<M, S, H>
where
    M: OutboxMessage,
    S: Send + Sync + 'static,
    H: Handler<M, S>,
{
    fn handle(&self, payload: Vec<u8>, delivery: Delivery) -> BoxFuture<'static, Outcome> {
        let message = match serde_json::from_slice::<M>(&payload) {
            Ok(message) => message,
            Err(e) => {
                let reason = format!(
                    "payload does not decode as `{}` ({}): {e}; it was written by other code or \
                     an older version of the type (fix the data or add #[serde(default)], then requeue)",
                    M::TYPE,
                    std::any::type_name::<M>()
                );
                return futures::future::ready(Outcome::Failed {
                    reason,
                    give_up: true,
                })
                .boxed();
            }
        };
        let last_attempt = delivery.attempt >= delivery.max_attempts;
        let ctx = MessageContext {
            id: delivery.id,
            type_tag: M::TYPE,
            attempt: delivery.attempt,
            max_attempts: delivery.max_attempts,
            state: Arc::clone(&self.state),
        };
        let handler = Arc::clone(&self.handler);
        let timeout = self.timeout;
        async move {
            // The handler's synchronous part and its future are both guarded.
            let call =
                AssertUnwindSafe(async move { handler.call(message, ctx).await }).catch_unwind();
            let result = match timeout {
                Some(limit) => match tokio::time::timeout(limit, call).await {
                    Ok(result) => result,
                    Err(_) => {
                        return Outcome::Failed {
                            reason: format!("handler timed out after {limit:?}"),
                            give_up: last_attempt,
                        }
                    }
                },
                None => call.await,
            };
            match result {
                Ok(Ok(())) => Outcome::Delivered,
                Ok(Err(e)) => outcome_of_error(e, last_attempt),
                Err(panic) => Outcome::Failed {
                    reason: format!("handler panicked: {}", panic_message(&*panic)),
                    give_up: last_attempt,
                },
            }
        }
        .boxed()
    }
}

fn outcome_of_error(e: HandlerError, last_attempt: bool) -> Outcome {
    let give_up = last_attempt || e.kind() == HandlerErrorKind::Permanent;
    let reason = match e.kind() {
        HandlerErrorKind::Permanent => format!("permanent failure: {e}"),
        _ => e.to_string(),
    };
    Outcome::Failed { reason, give_up }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "a non-string panic payload".to_owned()
    }
}

/// The service that runs one queue's handler; backends put it at the bottom of the
/// apalis worker they build for that queue.
#[derive(Clone)]
pub struct Dispatch {
    queue: &'static str,
    handler: Arc<dyn ErasedHandler>,
    counters: Arc<Counters>,
}

impl std::fmt::Debug for Dispatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatch")
            .field("queue", &self.queue)
            .finish_non_exhaustive()
    }
}

impl Dispatch {
    pub(crate) fn new(
        queue: &'static str,
        handler: Arc<dyn ErasedHandler>,
        counters: Arc<Counters>,
    ) -> Self {
        Self {
            queue,
            handler,
            counters,
        }
    }
}

impl Service<Task<Vec<u8>>> for Dispatch {
    type Response = ();
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<(), BoxError>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, task: Task<Vec<u8>>) -> Self::Future {
        let (payload, ctx) = task.take();
        let queue = self.queue;
        let counters = Arc::clone(&self.counters);
        let handler = Arc::clone(&self.handler);
        Box::pin(async move {
            // Read inside the future: apalis counts the attempt when it first polls it.
            let id = ctx
                .task_id()
                .map(|id| MessageId::from_string(id.to_string()))
                .unwrap_or_else(|| MessageId::from_string(""));
            let delivery = Delivery {
                id: id.clone(),
                attempt: u32::try_from(ctx.attempt()).unwrap_or(u32::MAX).max(1),
                max_attempts: ctx
                    .max_attempts()
                    .map_or(1, |m| u32::try_from(m).unwrap_or(u32::MAX)),
            };
            let attempt = delivery.attempt;
            let outcome = handler.handle(payload, delivery);
            match outcome.await {
                Outcome::Delivered => {
                    counters.delivered();
                    tracing::debug!(message.type = queue, message.id = %id, attempt, "delivered");
                    Ok(())
                }
                Outcome::Failed { reason, give_up } => {
                    counters.failed(give_up);
                    if give_up {
                        tracing::warn!(message.type = queue, message.id = %id, attempt, %reason, "given up");
                        Err(Box::new(AbortError::new(reason)) as BoxError)
                    } else {
                        tracing::info!(message.type = queue, message.id = %id, attempt, %reason, "attempt failed");
                        Err(reason.into())
                    }
                }
            }
        })
    }
}
