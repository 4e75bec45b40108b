//! The layer that moves given-up messages into the dead letters.

use std::sync::Arc;

use tower::Layer;

use super::DeadLetterService;
use crate::{backend::RetryStore, worker::Counters};

/// Adds [`DeadLetterService`] around a service.
#[derive(Clone)]
pub struct DeadLetterLayer {
    pub(crate) store: Arc<dyn RetryStore>,
    pub(crate) counters: Arc<Counters>,
}

impl DeadLetterLayer {
    /// Moves given-up messages through `store`.
    pub fn new(store: Arc<dyn RetryStore>) -> Self {
        Self {
            store,
            counters: Arc::default(),
        }
    }
}

impl<S> Layer<S> for DeadLetterLayer {
    type Service = DeadLetterService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        DeadLetterService {
            inner,
            layer: self.clone(),
        }
    }
}
