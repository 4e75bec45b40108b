//! Acts on what a failed attempt leads to ([`decide`]): the next due time, or giving up.

use std::task::{Context, Poll};

use apalis_core::task::Task;
use futures::future::BoxFuture;
use tower::Service;

use super::{decide, Decision, RetryLayer};
use crate::{
    layers::outcome::{Completion, GivenUp, Rescheduled, Stop},
    store::Claimed,
};

/// Turns failed attempts into [`Rescheduled`] (on the schedule, or at the handler's time)
/// or [`GivenUp`]; the worker's flusher writes the decision. Deferrals and decisions made
/// further in pass through unchanged.
#[derive(Clone)]
pub struct RetryService<S> {
    pub(super) inner: S,
    pub(super) layer: RetryLayer,
}

impl<S> Service<Task<Claimed>> for RetryService<S>
where
    S: Service<Task<Claimed>, Response = Completion, Error = Stop>,
    S::Future: Send + 'static,
{
    type Response = Completion;
    type Error = Stop;
    type Future = BoxFuture<'static, Result<Completion, Stop>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Stop>> {
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
            return Box::pin(std::future::ready(Err(Stop::GivenUp(GivenUp {
                reason: format!(
                    "attempts exhausted ({max} of {max}): the worker running the last attempt \
                     stopped without reporting (crash, or a stall past its lease)"
                ),
                attempts: max,
                lost_attempt: true,
            }))));
        }
        let fut = self.inner.call(task);
        Box::pin(async move {
            let failed = match fut.await {
                Ok(done) => return Ok(done),
                Err(Stop::Failed(failed)) => failed,
                // Not attempted (a deferral), or decided further in (the circuit breaker).
                Err(stop @ (Stop::Deferred(_) | Stop::Rescheduled(_) | Stop::GivenUp(_))) => {
                    return Err(stop)
                }
            };
            let reason = failed.reason;
            let next = match decide(failed.kind, attempts, max, &layer.schedule, id.as_str()) {
                Decision::Retry(due) => Stop::Rescheduled(Rescheduled {
                    due,
                    reason,
                    give_back_attempt: false,
                }),
                Decision::Snooze(due) => Stop::Rescheduled(Rescheduled {
                    due,
                    reason,
                    give_back_attempt: true,
                }),
                Decision::GiveUp { exhausted } => Stop::GivenUp(GivenUp {
                    reason: match exhausted {
                        true => format!("{reason} (attempts exhausted: {attempts} of {max})"),
                        false => reason,
                    },
                    attempts,
                    lost_attempt: false,
                }),
            };
            Err(next)
        })
    }
}
