//! The layer that asks a message's receiving site before it is sent.

use std::{sync::Arc, time::Duration};

use tower::Layer;

use super::{Shaper, ShapingService};
use crate::message::DestinationOf;

/// Adds [`ShapingService`] around a service.
#[derive(Clone)]
pub struct ShapingLayer {
    pub(super) shaper: Arc<Shaper>,
    pub(super) destination_of: DestinationOf,
    pub(super) lease: Duration,
}

impl ShapingLayer {
    /// Shapes the messages whose destination `destination_of` reads, through the
    /// process's `shaper`; a capped site's slot is held at most `lease` (the worker's lease).
    /// Cannot fail.
    pub(crate) fn new(shaper: Arc<Shaper>, destination_of: DestinationOf, lease: Duration) -> Self {
        Self {
            shaper,
            destination_of,
            lease,
        }
    }
}

impl<S> Layer<S> for ShapingLayer {
    type Service = ShapingService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ShapingService {
            inner,
            layer: self.clone(),
        }
    }
}
