//! The engine's own middleware (outermost, around the outbox layers): turns how each
//! attempt ended into a settlement for the flusher, with what it counts as (the one place
//! every attempt's end is seen once). Nothing is written or counted on this path: the
//! flusher counts and logs an outcome once the database applied its settlement.

use std::{
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use apalis_core::task::Task;
use futures::future::BoxFuture;
use tower::{Layer, Service};

use super::shared::Shared;
use crate::{
    counters::Outcome,
    error::BoxError,
    layers::{AttemptFailed, Completion, Deferred, GivenUp, Rescheduled},
    store::{Backend, Claimed, Due, Settle, Settlement},
};

/// When an error nobody classified comes back (it never should), the message is retried
/// after this long.
const UNCLASSIFIED_RETRY: Duration = Duration::from_secs(60);

/// Adds [`SettleService`] around the worker's service.
pub(crate) struct SettleLayer<B: Backend> {
    shared: Arc<Shared<B>>,
}

impl<B: Backend> SettleLayer<B> {
    pub(crate) fn new(shared: Arc<Shared<B>>) -> Self {
        Self { shared }
    }
}

impl<B: Backend, S> Layer<S> for SettleLayer<B> {
    type Service = SettleService<B, S>;

    fn layer(&self, inner: S) -> Self::Service {
        SettleService {
            inner,
            shared: Arc::clone(&self.shared),
        }
    }
}

/// Reports every attempt's end to the flusher, then passes the result on.
pub(crate) struct SettleService<B: Backend, S> {
    inner: S,
    shared: Arc<Shared<B>>,
}

impl<B: Backend, S: Clone> Clone for SettleService<B, S> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<B, S> Service<Task<Claimed>> for SettleService<B, S>
where
    B: Backend,
    S: Service<Task<Claimed>, Response = Completion>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Response = Completion;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Completion, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, task: Task<Claimed>) -> Self::Future {
        // Called once the whole chain is ready (a concurrency slot is free): the message
        // starts now, unless its lease may have run out while it waited (the heartbeat
        // could not extend it: the database is out of reach).
        if !self.shared.may_start(&task.args) {
            self.shared.not_started(&task.args);
            tracing::debug!(
                message.type = self.shared.settings.type_tag, message.id = %task.args.id,
                "not started: its lease could not be extended and may have run out; given back"
            );
            let deferred = Deferred {
                until: None,
                reason: "its lease may have run out".into(),
            };
            return Box::pin(std::future::ready(Err(Box::new(deferred) as BoxError)));
        }
        let (id, attempt, claim) = (task.args.id.clone(), task.args.attempt, task.args.claim);
        let grouped = task.args.group.is_some();
        // A message put back for want of a token goes back to the buffer's front.
        let kept = self.shared.settings.rate_limited.then(|| task.args.clone());
        let shared = Arc::clone(&self.shared);
        let fut = self.inner.call(task);
        Box::pin(async move {
            let result = fut.await.map_err(Into::into);
            if let (Some(claimed), Err(e)) = (kept, &result) {
                if e.downcast_ref::<Deferred>()
                    .is_some_and(|d| d.until.is_none())
                {
                    // No token: it keeps its place in this worker, still claimed, and
                    // starts before anything claimed after it once a token is near.
                    shared.put_back(claimed);
                    return result;
                }
            }
            let (settle, outcome) = settlement_of(&result, shared.settings.keep_done);
            let settlement = Settlement {
                id,
                attempt,
                claim,
                settle,
                grouped,
            };
            shared.finish(settlement, outcome);
            result
        })
    }
}

/// What an attempt's result means for its row, and what it counts as.
fn settlement_of(result: &Result<Completion, BoxError>, keep: bool) -> (Settle, Outcome) {
    let (mut settle, outcome) = decide(result, keep);
    // PostgreSQL cannot store NUL in text (nor in the JSON that carries it): a handler's
    // error text with one would make its settlement fail for ever.
    match &mut settle {
        Settle::Done {
            note: Some(text), ..
        }
        | Settle::Retry { error: text, .. }
        | Settle::Bury { reason: text } => *text = text.replace('\0', "\u{FFFD}"),
        _ => {}
    }
    (settle, outcome)
}

/// The settlement a result calls for, and its outcome: a delivery or an orphan is done;
/// a give-up is buried (with the lost last attempt, if that is why); a reschedule is a
/// failed attempt, or a deferral when it gives its attempt back; a deferral is released or
/// rescheduled without an attempt.
fn decide(result: &Result<Completion, BoxError>, keep: bool) -> (Settle, Outcome) {
    let error = match result {
        Ok(done) => {
            let (note, outcome) = match done {
                Completion::Delivered => (None, Outcome::Delivered),
                Completion::Orphaned { reason } => {
                    (Some(format!("orphaned: {reason}")), Outcome::Orphaned)
                }
            };
            return (Settle::Done { keep, note }, outcome);
        }
        Err(error) => error,
    };
    if let Some(given_up) = error.downcast_ref::<GivenUp>() {
        let settle = Settle::Bury {
            reason: given_up.reason.clone(),
        };
        let outcome = Outcome::GivenUp {
            lost_attempt: given_up.lost_attempt,
            attempts: given_up.attempts,
        };
        return (settle, outcome);
    }
    if let Some(r) = error.downcast_ref::<Rescheduled>() {
        let outcome = match r.give_back_attempt {
            true => Outcome::Deferred,
            false => Outcome::FailedAttempt,
        };
        let settle = Settle::Retry {
            due: r.due,
            error: r.reason.clone(),
            give_back_attempt: r.give_back_attempt,
        };
        return (settle, outcome);
    }
    if let Some(d) = error.downcast_ref::<Deferred>() {
        let settle = match d.until {
            None => Settle::Release,
            Some(due) => Settle::Retry {
                due,
                error: d.reason.clone(),
                give_back_attempt: true,
            },
        };
        return (settle, Outcome::Deferred);
    }
    // Not classified by the retry layer (it never should be): a failed attempt.
    let reason = match error.downcast_ref::<AttemptFailed>() {
        Some(failed) => failed.reason.clone(),
        None => error.to_string(),
    };
    let settle = Settle::Retry {
        due: Due::After(UNCLASSIFIED_RETRY),
        error: reason,
        give_back_attempt: false,
    };
    (settle, Outcome::FailedAttempt)
}
