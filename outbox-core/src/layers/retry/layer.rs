//! The layer that adds durable retries to a worker's service.

use std::sync::Arc;

use tower::Layer;

use super::{RetrySchedule, RetryService};

/// Adds [`RetryService`] around a service.
#[derive(Clone)]
pub struct RetryLayer {
    pub(super) schedule: Arc<RetrySchedule>,
}

impl RetryLayer {
    /// Retries on `schedule` (delays counted by the database's clock; the settle step
    /// counts the failed attempts). Cannot fail; a schedule is checked when it is
    /// registered.
    pub fn new(schedule: RetrySchedule) -> Self {
        Self {
            schedule: Arc::new(schedule),
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
