//! The layer that runs a type's orphan check.

use std::sync::Arc;

use tower::Layer;

use super::{OrphanCheck, OrphanService};
use crate::counters::Tally;

/// Adds [`OrphanService`] around a service.
#[derive(Clone)]
pub struct OrphanLayer {
    pub(crate) check: Arc<dyn OrphanCheck>,
    pub(crate) counters: Tally,
}

impl OrphanLayer {
    /// Runs `check` before each message.
    pub fn new(check: Arc<dyn OrphanCheck>) -> Self {
        Self {
            check,
            counters: Tally::default(),
        }
    }
}

impl<S> Layer<S> for OrphanLayer {
    type Service = OrphanService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        OrphanService {
            inner,
            layer: self.clone(),
        }
    }
}
