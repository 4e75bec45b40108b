//! The layer that adds durable retries to a worker's service.

use std::sync::Arc;

use tower::Layer;

use super::{RetrySchedule, RetryService};
use crate::clock::Clock;

/// Adds [`RetryService`] around a service.
#[derive(Clone)]
pub struct RetryLayer {
    pub(super) schedule: Arc<RetrySchedule>,
    pub(super) clock: Arc<dyn Clock>,
}

impl RetryLayer {
    /// Retries on `schedule`, reading the time from `clock` (the settle step counts the
    /// failed attempts). Cannot fail; a schedule is checked when it is registered.
    pub fn new(schedule: RetrySchedule, clock: Arc<dyn Clock>) -> Self {
        Self {
            schedule: Arc::new(schedule),
            clock,
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
