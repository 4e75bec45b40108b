//! The layer that runs a type's orphan check.

use std::sync::Arc;

use tower::Layer;

use super::{OrphanCheck, OrphanService};

/// Adds [`OrphanService`] around a service.
#[derive(Clone)]
pub struct OrphanLayer {
    pub(super) check: Arc<dyn OrphanCheck>,
}

impl OrphanLayer {
    /// Runs `check` before each message; an orphan completes without the inner service
    /// (the settle step counts it), and a check that fails or panics defers its message.
    pub fn new(check: Arc<dyn OrphanCheck>) -> Self {
        Self { check }
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
