//! The one worker runner every database uses: an apalis worker over the [`Engine`], with
//! the outbox layers around the handler.

use std::sync::Arc;

use apalis_core::{
    error::WorkerError,
    worker::{builder::WorkerBuilder, context::WorkerContext},
};

use super::{engine::Engine, Dispatch, WorkerSettings};
use crate::{clock::Clock, layers::OutboxLayers, store::Backend};

/// Runs one worker for `settings.type_tag` (leases owned by `settings.owner`) until it is
/// stopped through `worker` (`Ok`), or fails (`Err`; the supervisor restarts it under a new name).
pub(crate) async fn run_worker<B: Backend>(
    backend: B,
    worker: WorkerContext,
    settings: WorkerSettings,
    layers: OutboxLayers,
    service: Dispatch,
    clock: Arc<dyn Clock>,
) -> Result<(), WorkerError> {
    let engine = Engine::start(backend, settings, clock);
    WorkerBuilder::new(&worker)
        .backend(engine)
        .layer(layers)
        .build(service)
        .run()
        .await
}
