//! The engine's own middleware (outermost, around the outbox layers): turns how each
//! attempt ended into a settlement for the flusher. Nothing is written on this path.

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
    layers::{AttemptFailed, Completion, Deferred, GivenUp, Rescheduled},
    store::{Backend, Claimed, Due, Settle, Settlement},
    BoxError,
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
        let (id, attempt, claim) = (task.args.id.clone(), task.args.attempt, task.args.claim);
        let shared = Arc::clone(&self.shared);
        let fut = self.inner.call(task);
        Box::pin(async move {
            let result = fut.await.map_err(Into::into);
            let settle = settlement_of(&result, shared.settings.keep_done);
            shared.finish(Settlement {
                id,
                attempt,
                claim,
                settle,
            });
            result
        })
    }
}

/// What an attempt's result means for its row.
fn settlement_of(result: &Result<Completion, BoxError>, keep: bool) -> Settle {
    let mut settle = decide(result, keep);
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
    settle
}

/// The settlement a result calls for.
fn decide(result: &Result<Completion, BoxError>, keep: bool) -> Settle {
    let error = match result {
        Ok(done) => {
            let note = match done {
                Completion::Delivered => None,
                Completion::Orphaned { reason } => Some(format!("orphaned: {reason}")),
            };
            return Settle::Done { keep, note };
        }
        Err(error) => error,
    };
    if let Some(given_up) = error.downcast_ref::<GivenUp>() {
        return Settle::Bury {
            reason: given_up.reason.clone(),
        };
    }
    if let Some(r) = error.downcast_ref::<Rescheduled>() {
        return Settle::Retry {
            due: r.due,
            error: r.reason.clone(),
            give_back_attempt: r.give_back_attempt,
        };
    }
    if let Some(d) = error.downcast_ref::<Deferred>() {
        return match d.until {
            None => Settle::Release,
            Some(due) => Settle::Retry {
                due,
                error: d.reason.clone(),
                give_back_attempt: true,
            },
        };
    }
    let reason = match error.downcast_ref::<AttemptFailed>() {
        Some(failed) => failed.reason.clone(),
        None => error.to_string(),
    };
    Settle::Retry {
        due: Due::After(UNCLASSIFIED_RETRY),
        error: reason,
        give_back_attempt: false,
    }
}
