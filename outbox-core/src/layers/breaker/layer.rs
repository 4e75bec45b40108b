//! The layer that puts a worker's messages behind its circuit breaker.

use std::sync::Arc;

use tower::Layer;

use super::{BreakerService, BreakerSwitch};
use crate::{clock::Clock, store::BreakerStore};

/// Adds [`BreakerService`] around a service.
#[derive(Clone)]
pub struct BreakerLayer {
    pub(super) switch: Arc<BreakerSwitch>,
    pub(super) store: Arc<dyn BreakerStore>,
    pub(super) clock: Arc<dyn Clock>,
    /// The process, as the holder of a probe.
    pub(super) owner: Arc<str>,
}

impl BreakerLayer {
    /// Guards a worker with `switch`, recording its changes through `store` at `clock`'s
    /// time, on behalf of process `owner`. Cannot fail: a store error is logged, and the
    /// next read of the shared row (every [`BREAKER_POLL`](crate::store::BREAKER_POLL))
    /// sets things right.
    pub fn new(
        switch: Arc<BreakerSwitch>,
        store: Arc<dyn BreakerStore>,
        clock: Arc<dyn Clock>,
        owner: Arc<str>,
    ) -> Self {
        Self {
            switch,
            store,
            clock,
            owner,
        }
    }
}

impl<S> Layer<S> for BreakerLayer {
    type Service = BreakerService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        BreakerService {
            inner,
            layer: self.clone(),
        }
    }
}
