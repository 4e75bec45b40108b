//! Notes a given-up message on its way to the dead letters.

use std::task::{Context, Poll};

use apalis_core::task::Task;
use futures::future::BoxFuture;
use tower::Service;

use super::DeadLetterLayer;
use crate::{
    error::BoxError,
    layers::outcome::{Completion, GivenUp},
    store::Claimed,
};

/// Notes [`GivenUp`] errors at DEBUG; the worker's flusher moves their message into the
/// dead letters and logs the move (a WARN) once the database applied it. A worker whose
/// lease was taken over meanwhile moves nothing and logs no move.
#[derive(Clone)]
pub struct DeadLetterService<S> {
    pub(super) inner: S,
    pub(super) layer: DeadLetterLayer,
}

impl<S> Service<Task<Claimed>> for DeadLetterService<S>
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
        let id = task.args.id.clone();
        let layer = self.layer.clone();
        let fut = self.inner.call(task);
        Box::pin(async move {
            let result = fut.await;
            if let Err(error) = &result {
                if let Some(given_up) = error.downcast_ref::<GivenUp>() {
                    tracing::debug!(
                        message.type = layer.type_tag, message.id = %id, attempts = given_up.attempts,
                        reason = %given_up.reason, "giving up; the message goes to the dead letters once its result is recorded"
                    );
                }
            }
            result
        })
    }
}
