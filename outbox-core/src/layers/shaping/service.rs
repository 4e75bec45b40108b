//! Asks the recipient's site before calling the inner service, and lets the reply rules
//! see how the attempt ended.

use std::task::{Context, Poll};

use apalis_core::task::Task;
use futures::future::BoxFuture;
use tower::Service;

use super::ShapingLayer;
use crate::{error::BoxError, layers::Completion, shaping::domain_of, store::Claimed};

/// Sends a message only when its site has room; turns "too fast" replies into deferrals.
#[derive(Clone)]
pub struct ShapingService<S> {
    pub(super) inner: S,
    pub(super) layer: ShapingLayer,
}

impl<S> Service<Task<Claimed>> for ShapingService<S>
where
    S: Service<Task<Claimed>, Response = Completion, Error = BoxError> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Completion;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Completion, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, task: Task<Claimed>) -> Self::Future {
        let domain =
            (self.layer.recipient_of)(&task.args.payload).and_then(|r| domain_of(&r.address));
        let Some(domain) = domain else {
            // No recipient (or a payload that does not decode: its attempt says so).
            return Box::pin(self.inner.call(task));
        };
        // The instance that was polled ready is the one that must be called.
        let fresh = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, fresh);
        let layer = self.layer.clone();
        Box::pin(async move {
            let shaper = &layer.shaper;
            let site = shaper.site_of(&domain).await;
            let holder = format!("{}#{}", task.args.id, task.args.claim);
            let ticket = shaper.enter(&site, &holder, layer.lease).await?;
            let result = inner.call(task).await;
            if let Some(ticket) = ticket {
                shaper.leave(ticket).await;
            }
            shaper.after(&site, result).await
        })
    }
}
