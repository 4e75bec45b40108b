//! The layer that holds a worker while its type is paused.

use std::sync::Arc;

use tower::Layer;

use super::{PauseService, PauseSwitch};

/// Adds [`PauseService`] around a service.
#[derive(Clone)]
pub struct PauseLayer {
    switch: Arc<PauseSwitch>,
}

impl PauseLayer {
    /// Holds the service (not ready) while `switch` is on. Cannot fail.
    pub fn new(switch: Arc<PauseSwitch>) -> Self {
        Self { switch }
    }
}

impl<S> Layer<S> for PauseLayer {
    type Service = PauseService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        PauseService {
            inner,
            switch: Arc::clone(&self.switch),
        }
    }
}
