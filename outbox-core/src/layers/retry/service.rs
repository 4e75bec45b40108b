//! Decides what a failed attempt leads to and writes the next due time.

use std::{
    task::{Context, Poll},
    time::SystemTime,
};

use apalis_core::task::{status::Status, Task};
use futures::future::BoxFuture;
use tower::Service;

use super::RetryLayer;
use crate::{
    handler::HandlerErrorKind,
    layers::outcome::{AttemptFailed, Deferred, GivenUp},
    BoxError,
};

/// Reschedules failed and deferred messages in the database, or gives them up.
#[derive(Clone)]
pub struct RetryService<S> {
    pub(super) inner: S,
    pub(super) layer: RetryLayer,
}

/// What to do with a message after an error.
enum Next {
    Again {
        due: SystemTime,
        give_back_attempt: bool,
        counts_as_failure: bool,
    },
    GiveUp {
        reason: String,
    },
}

impl<S, Args> Service<Task<Args>> for RetryService<S>
where
    S: Service<Task<Args>, Error = BoxError>,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<S::Response, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, task: Task<Args>) -> Self::Future {
        let ctx = task.ctx().clone();
        let layer = self.layer.clone();
        let fut = self.inner.call(task);
        Box::pin(async move {
            let error = match fut.await {
                Ok(done) => return Ok(done),
                Err(error) => error,
            };
            let id = ctx.task_id().map(|t| t.to_string()).unwrap_or_default();
            let attempts = u32::try_from(ctx.attempt()).unwrap_or(u32::MAX);
            let max = ctx
                .max_attempts()
                .map_or(1, |m| u32::try_from(m).unwrap_or(u32::MAX));
            let now = layer.clock.now();
            let next = if let Some(deferred) = error.downcast_ref::<Deferred>() {
                Next::Again {
                    due: deferred.until,
                    give_back_attempt: false,
                    counts_as_failure: false,
                }
            } else {
                let (kind, reason) = match error.downcast_ref::<AttemptFailed>() {
                    Some(failed) => (failed.kind, failed.reason.clone()),
                    None => (HandlerErrorKind::Retry, error.to_string()),
                };
                match kind {
                    HandlerErrorKind::Snooze(d) => Next::Again {
                        due: now + d,
                        give_back_attempt: true,
                        counts_as_failure: false,
                    },
                    HandlerErrorKind::Permanent => Next::GiveUp { reason },
                    _ if attempts >= max => Next::GiveUp {
                        reason: format!("{reason} (attempts exhausted: {attempts} of {max})"),
                    },
                    HandlerErrorKind::RetryAt(at) => Next::Again {
                        due: at.max(now),
                        give_back_attempt: false,
                        counts_as_failure: true,
                    },
                    _ => Next::Again {
                        due: now + layer.schedule.delay(attempts, &id),
                        give_back_attempt: false,
                        counts_as_failure: true,
                    },
                }
            };
            match next {
                Next::GiveUp { reason } => Err(Box::new(GivenUp { reason, attempts }) as BoxError),
                Next::Again {
                    due,
                    give_back_attempt,
                    counts_as_failure,
                } => {
                    // Failed (not Pending) is what the fetch query picks up again when due,
                    // whatever lock the row still carries; the ack writes it after us.
                    ctx.raw_status().store(Status::Failed);
                    if counts_as_failure {
                        layer.counters.failed_attempt();
                    } else {
                        layer.counters.deferred();
                    }
                    if let Err(e) = layer.store.reschedule(&id, due, give_back_attempt).await {
                        tracing::error!(message.id = %id, error = %e, "cannot write the next due time; the message is retried at once");
                    }
                    Err(error)
                }
            }
        })
    }
}
