//! Moves a given-up message into the dead letters.

use std::task::{Context, Poll};

use apalis_core::task::{status::Status, Task};
use futures::future::BoxFuture;
use tower::Service;

use super::DeadLetterLayer;
use crate::{layers::outcome::GivenUp, BoxError};

/// Catches [`GivenUp`] errors and moves their message into the dead letters.
#[derive(Clone)]
pub struct DeadLetterService<S> {
    pub(super) inner: S,
    pub(super) layer: DeadLetterLayer,
}

impl<S, Args> Service<Task<Args>> for DeadLetterService<S>
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
            let result = fut.await;
            if let Err(error) = &result {
                if let Some(given_up) = error.downcast_ref::<GivenUp>() {
                    // Final in the queue even if the move below fails.
                    ctx.raw_status().store(Status::Killed);
                    layer.counters.given_up();
                    let id = ctx.task_id().map(|t| t.to_string()).unwrap_or_default();
                    let queue = ctx.queue().map(|q| q.to_string()).unwrap_or_default();
                    match layer
                        .store
                        .dead_letter(&id, &given_up.reason, given_up.attempts)
                        .await
                    {
                        Ok(()) => tracing::warn!(
                            message.type = %queue, message.id = %id, attempts = given_up.attempts,
                            reason = %given_up.reason, "moved to the dead letters"
                        ),
                        Err(e) => tracing::error!(
                            message.type = %queue, message.id = %id, error = %e,
                            "cannot move a given-up message to the dead letters; it stays in the queue marked killed"
                        ),
                    }
                }
            }
            result
        })
    }
}
