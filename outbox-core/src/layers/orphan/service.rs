//! Completes orphans without calling the inner service.

use std::{
    task::{Context, Poll},
    time::Duration,
};

use apalis_core::task::Task;
use futures::{future::BoxFuture, FutureExt};
use tower::Service;

use super::{OrphanLayer, Relevance};
use crate::{
    clock::Due,
    layers::outcome::{Completion, Deferred, Stop},
    store::Claimed,
};

/// How long a message waits when its orphan check failed.
const CHECK_ERROR_DEFER: Duration = Duration::from_secs(60);

/// Runs the orphan check, then the inner service only for relevant messages.
#[derive(Clone)]
pub struct OrphanService<S> {
    pub(super) inner: S,
    pub(super) layer: OrphanLayer,
}

impl<S> Service<Task<Claimed>> for OrphanService<S>
where
    S: Service<Task<Claimed>, Response = Completion, Error = Stop> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Completion;
    type Error = Stop;
    type Future = BoxFuture<'static, Result<Completion, Stop>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Stop>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, task: Task<Claimed>) -> Self::Future {
        let fresh = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, fresh);
        let layer = self.layer.clone();
        Box::pin(async move {
            // A panicking check (or Deserialize) is a failed check, not a dead worker.
            let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                layer.check.check(&task.args.payload)
            }));
            let verdict = match checked {
                Ok(fut) => std::panic::AssertUnwindSafe(fut)
                    .catch_unwind()
                    .await
                    .unwrap_or_else(|_| Err("the orphan check panicked".into())),
                Err(_) => Err("the orphan check panicked".into()),
            };
            match verdict {
                Ok(Relevance::Relevant) => inner.call(task).await,
                Ok(Relevance::Orphan(reason)) => {
                    let id = &task.args.id;
                    tracing::debug!(message.id = %id, %reason, "orphan dropped without calling the handler");
                    Ok(Completion::Orphaned { reason })
                }
                Err(e) => {
                    tracing::warn!(error = %e, "orphan check failed; the message is deferred");
                    Err(Stop::Deferred(Deferred {
                        until: Some(Due::After(CHECK_ERROR_DEFER)),
                        reason: format!("orphan check failed: {e}"),
                    }))
                }
            }
        })
    }
}
