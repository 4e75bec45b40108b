//! Fails a message that can never be delivered before the inner service runs.

use std::task::{Context, Poll};

use apalis_core::task::Task;
use futures::{future::BoxFuture, FutureExt};
use tower::Service;

use super::PrecheckLayer;
use crate::{
    handler::HandlerErrorKind,
    layers::outcome::{AttemptFailed, Completion, Stop},
    store::Claimed,
};

/// Runs the check, then the inner service only for messages that pass it.
#[derive(Clone)]
pub struct PrecheckService<S> {
    pub(super) inner: S,
    pub(super) layer: PrecheckLayer,
}

impl<S> Service<Task<Claimed>> for PrecheckService<S>
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
        // A panicking check (a user Deserialize or validate) refuses the message too.
        let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            (self.layer.check)(&task.args.payload)
        }))
        .unwrap_or_else(|_| Err("its check panicked".into()));
        match checked {
            Ok(()) => self.inner.call(task).boxed(),
            Err(reason) => {
                let failed = AttemptFailed {
                    kind: HandlerErrorKind::Permanent,
                    reason,
                    from_handler: false,
                };
                futures::future::ready(Err(Stop::Failed(failed))).boxed()
            }
        }
    }
}
