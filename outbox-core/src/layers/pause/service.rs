//! Not ready while paused.

use std::{
    sync::Arc,
    task::{Context, Poll},
};

use tower::Service;

use super::PauseSwitch;

/// Passes calls through, but is not ready while its switch is on.
#[derive(Clone)]
pub struct PauseService<S> {
    pub(super) inner: S,
    pub(super) switch: Arc<PauseSwitch>,
}

impl<S, Req> Service<Req> for PauseService<S>
where
    S: Service<Req>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        if self.switch.is_paused() {
            self.switch.wait(cx.waker());
            // Checked again after registering, so a resume in between is not missed.
            if self.switch.is_paused() {
                return Poll::Pending;
            }
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Req) -> Self::Future {
        self.inner.call(req)
    }
}
