//! The engine's own middleware (outermost, around the outbox layers): turns how each
//! attempt ended ([`Completion`] or [`Stop`]) into a settlement for the flusher, with what it
//! counts as (the one place every attempt's end is seen once). Nothing is written or
//! counted on this path: the flusher counts and logs an outcome once the database applied
//! its settlement.
//!
//! A message the retry layer gave up (permanent failure, attempts exhausted, undecodable
//! payload) is noted here at DEBUG, and the flusher moves it into `outbox_dead_letters` in
//! one transaction — type, payload, attempts, last error, enqueued and failed times — out
//! of the queue, then counts it and logs the move (a WARN). A worker whose lease was taken
//! over meanwhile moves, counts and logs nothing. If the move cannot be written, the
//! flusher keeps trying; if the process dies first, the message comes back after its lease
//! and is given up again. Nothing is lost.
//!
//! This is where the layers' typed [`Stop`] becomes apalis' boxed error: apalis only
//! passes it on.

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
    layers::{Completion, Deferred, Stop},
    store::{Backend, Claimed, Due, Settle, Settlement},
};

/// When a failed attempt the retry layer did not decide comes back (it never should), the
/// message is retried after this long.
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

/// Reports every attempt's end to the flusher, then passes the result on (its [`Stop`]
/// boxed, as apalis takes errors).
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
    S: Service<Task<Claimed>, Response = Completion, Error = Stop>,
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
            return Box::pin(std::future::ready(Err(Stop::Deferred(deferred).into())));
        }
        let (id, attempt, claim) = (task.args.id.clone(), task.args.attempt, task.args.claim);
        let grouped = task.args.group.is_some();
        // A message put back for want of a token goes back to the buffer's front.
        let kept = self.shared.settings.rate_limited.then(|| task.args.clone());
        let shared = Arc::clone(&self.shared);
        let fut = self.inner.call(task);
        Box::pin(async move {
            let result = fut.await;
            if let (Some(claimed), Err(Stop::Deferred(Deferred { until: None, .. }))) =
                (kept, &result)
            {
                // No token: it keeps its place in this worker, still claimed, and starts
                // before anything claimed after it once a token is near.
                shared.put_back(claimed);
                return result.map_err(BoxError::from);
            }
            if let Err(Stop::GivenUp(given_up)) = &result {
                tracing::debug!(
                    message.type = shared.settings.type_tag, message.id = %id,
                    attempts = given_up.attempts, reason = %given_up.reason,
                    "giving up; the message goes to the dead letters once its result is recorded"
                );
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
            result.map_err(BoxError::from)
        })
    }
}

/// What an attempt's result means for its row, and what it counts as.
fn settlement_of(result: &Result<Completion, Stop>, keep: bool) -> (Settle, Outcome) {
    let (mut settle, outcome) = classify(result, keep);
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
/// rescheduled without an attempt; a failed attempt no layer decided (never: the retry
/// layer decides them all) is retried after [`UNCLASSIFIED_RETRY`].
fn classify(result: &Result<Completion, Stop>, keep: bool) -> (Settle, Outcome) {
    let stop = match result {
        Ok(done) => {
            let (note, outcome) = match done {
                Completion::Delivered => (None, Outcome::Delivered),
                Completion::Orphaned { reason } => {
                    (Some(format!("orphaned: {reason}")), Outcome::Orphaned)
                }
            };
            return (Settle::Done { keep, note }, outcome);
        }
        Err(stop) => stop,
    };
    match stop {
        Stop::GivenUp(given_up) => {
            let settle = Settle::Bury {
                reason: given_up.reason.clone(),
            };
            let outcome = Outcome::GivenUp {
                lost_attempt: given_up.lost_attempt,
                attempts: given_up.attempts,
            };
            (settle, outcome)
        }
        Stop::Rescheduled(r) => {
            let outcome = match r.give_back_attempt {
                true => Outcome::Deferred,
                false => Outcome::FailedAttempt,
            };
            let settle = Settle::Retry {
                due: r.due,
                error: r.reason.clone(),
                give_back_attempt: r.give_back_attempt,
            };
            (settle, outcome)
        }
        Stop::Deferred(d) => {
            let settle = match d.until {
                None => Settle::Release,
                Some(due) => Settle::Retry {
                    due,
                    error: d.reason.clone(),
                    give_back_attempt: true,
                },
            };
            (settle, Outcome::Deferred)
        }
        Stop::Failed(failed) => {
            let settle = Settle::Retry {
                due: Due::After(UNCLASSIFIED_RETRY),
                error: failed.reason.clone(),
                give_back_attempt: false,
            };
            (settle, Outcome::FailedAttempt)
        }
    }
}
