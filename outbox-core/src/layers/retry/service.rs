//! Decides what a failed attempt leads to: the next due time, or giving up.

use std::task::{Context, Poll};

use apalis_core::task::Task;
use futures::future::BoxFuture;
use tower::Service;

use super::RetryLayer;
use crate::{
    clock::Due,
    error::BoxError,
    handler::HandlerErrorKind,
    layers::outcome::{AttemptFailed, Completion, Deferred, GivenUp, Rescheduled},
    store::Claimed,
};

/// Turns failed attempts into [`Rescheduled`] (on the schedule, or at the handler's time)
/// or [`GivenUp`]; the worker's flusher writes the decision.
#[derive(Clone)]
pub struct RetryService<S> {
    pub(super) inner: S,
    pub(super) layer: RetryLayer,
}

impl<S> Service<Task<Claimed>> for RetryService<S>
where
    S: Service<Task<Claimed>, Response = Completion, Error = BoxError>,
    S::Future: Send + 'static,
{
    type Response = Completion;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Completion, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, task: Task<Claimed>) -> Self::Future {
        let (id, attempts, max) = (
            task.args.id.clone(),
            task.args.attempt,
            task.args.max_attempts,
        );
        let layer = self.layer.clone();
        if attempts > max {
            // The previous attempt's worker stopped without reporting (a crash, or a stall
            // past its lease) and it was the last one.
            return Box::pin(std::future::ready(Err(Box::new(GivenUp {
                reason: format!(
                    "attempts exhausted ({max} of {max}): the worker running the last attempt \
                     stopped without reporting (crash, or a stall past its lease)"
                ),
                attempts: max,
                lost_attempt: true,
            }) as BoxError)));
        }
        let fut = self.inner.call(task);
        Box::pin(async move {
            let error = match fut.await {
                Ok(done) => return Ok(done),
                Err(error) => error,
            };
            // Not attempted (a deferral), or decided below (the circuit breaker).
            if error.downcast_ref::<Deferred>().is_some()
                || error.downcast_ref::<Rescheduled>().is_some()
            {
                return Err(error);
            }
            let (kind, reason) = match error.downcast_ref::<AttemptFailed>() {
                Some(failed) => (failed.kind, failed.reason.clone()),
                None => (HandlerErrorKind::Retry, error.to_string()),
            };
            let next = match kind {
                HandlerErrorKind::Snooze(d) => Rescheduled {
                    due: Due::After(d),
                    reason,
                    give_back_attempt: true,
                },
                HandlerErrorKind::Permanent => {
                    return Err(Box::new(GivenUp {
                        reason,
                        attempts,
                        lost_attempt: false,
                    }) as BoxError)
                }
                _ if attempts >= max => {
                    return Err(Box::new(GivenUp {
                        reason: format!("{reason} (attempts exhausted: {attempts} of {max})"),
                        attempts,
                        lost_attempt: false,
                    }) as BoxError)
                }
                HandlerErrorKind::RetryAt(at) => Rescheduled {
                    due: Due::At(at),
                    reason,
                    give_back_attempt: false,
                },
                HandlerErrorKind::RetryAfter(delay) => Rescheduled {
                    due: Due::After(delay),
                    reason,
                    give_back_attempt: false,
                },
                _ => Rescheduled {
                    due: Due::After(layer.schedule.delay(attempts, id.as_str())),
                    reason,
                    give_back_attempt: false,
                },
            };
            Err(Box::new(next) as BoxError)
        })
    }
}
