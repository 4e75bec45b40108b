//! Asks the destination's site before calling the inner service, and lets the reply rules
//! see how the attempt ended.

use std::task::{Context, Poll};

use apalis_core::task::Task;
use futures::future::BoxFuture;
use tower::Service;

use super::ShapingLayer;
use crate::{
    layers::{Completion, Stop},
    store::Claimed,
};

/// Sends a message only when its site has room; turns "too fast" replies into deferrals.
#[derive(Clone)]
pub struct ShapingService<S> {
    pub(super) inner: S,
    pub(super) layer: ShapingLayer,
}

impl<S> Service<Task<Claimed>> for ShapingService<S>
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
        let Some(destination) = (self.layer.destination_of)(&task.args.payload) else {
            // No destination (or a payload that does not decode: its attempt says so).
            return Box::pin(self.inner.call(task));
        };
        let id = task.args.id.to_string();
        let holder = format!("{id}#{}", task.args.claim);
        // Called now, as the worker starts the message (a rate limit inside takes its place
        // in line in claim order), but run only once the site has room; dropped otherwise.
        let send = self.inner.call(task);
        let layer = self.layer.clone();
        Box::pin(async move {
            let shaper = &layer.shaper;
            let site = shaper.site_of(&destination).await;
            let ticket = shaper.enter(&site, &id, &holder, layer.lease).await?;
            let result = match &ticket {
                Some(ticket) => shaper.hold(ticket, layer.lease, send).await,
                None => send.await,
            };
            if let Some(ticket) = ticket {
                // Put back before its side effect (its type's rate limit): not a send.
                let put_back = matches!(
                    &result,
                    Err(Stop::Deferred(d)) if d.until.is_none()
                );
                shaper.leave(ticket, put_back).await;
            }
            shaper.after(&site, &id, result).await
        })
    }
}
