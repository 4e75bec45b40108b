//! The layer that adds durable retries to a worker's service.

use std::sync::Arc;

use tower::Layer;

use super::{RetrySchedule, RetryService};
use crate::counters::Tally;

/// Adds [`RetryService`] around a service.
#[derive(Clone)]
pub struct RetryLayer {
    pub(crate) schedule: Arc<RetrySchedule>,
    pub(crate) counters: Tally,
}

impl RetryLayer {
    /// Retries on `schedule` (delays counted by the database's clock).
    pub fn new(schedule: RetrySchedule) -> Self {
        Self {
            schedule: Arc::new(schedule),
            counters: Tally::default(),
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
