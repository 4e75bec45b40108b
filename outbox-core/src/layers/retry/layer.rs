//! The layer that adds durable retries to a worker's service.

use std::sync::Arc;

use tower::Layer;

use super::{RetrySchedule, RetryService};
use crate::{clock::Clock, counters::Tally};

/// Adds [`RetryService`] around a service.
#[derive(Clone)]
pub struct RetryLayer {
    pub(crate) schedule: Arc<RetrySchedule>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) counters: Tally,
}

impl RetryLayer {
    /// Retries on `schedule`, reading the time from `clock`.
    pub fn new(schedule: RetrySchedule, clock: Arc<dyn Clock>) -> Self {
        Self {
            schedule: Arc::new(schedule),
            clock,
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
