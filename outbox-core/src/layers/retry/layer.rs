//! The layer that adds durable retries to a worker's service.

use std::sync::Arc;

use tower::Layer;

use super::{RetrySchedule, RetryService};
use crate::{backend::RetryStore, clock::Clock, worker::Counters};

/// Adds [`RetryService`] around a service.
#[derive(Clone)]
pub struct RetryLayer {
    pub(crate) store: Arc<dyn RetryStore>,
    pub(crate) schedule: Arc<RetrySchedule>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) counters: Arc<Counters>,
}

impl RetryLayer {
    /// Retries on `schedule`, writing due times through `store`.
    pub fn new(store: Arc<dyn RetryStore>, schedule: RetrySchedule, clock: Arc<dyn Clock>) -> Self {
        Self {
            store,
            schedule: Arc::new(schedule),
            clock,
            counters: Arc::default(),
        }
    }
}

impl<S> Layer<S> for RetryLayer {
    type Service = RetryService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RetryService {
            inner,
            layer: self.clone(),
        }
    }
}
