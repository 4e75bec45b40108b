//! The one worker runner every database uses: an apalis worker over the [`Engine`], with
//! the outbox layers around the handler.

use apalis_core::{
    error::WorkerError,
    worker::{builder::WorkerBuilder, context::WorkerContext},
};

use super::{engine::Engine, hub::Process, Dispatch, WorkerSettings};
use crate::{layers::OutboxLayers, store::Backend};

/// Runs one worker for `settings.type_tag` (leases owned by `settings.owner`) until it is
/// stopped through `worker` (`Ok`), or fails (`Err`; the supervisor restarts it under a new name).
pub(crate) async fn run_worker<B: Backend>(
    process: Process<B>,
    worker: WorkerContext,
    settings: WorkerSettings,
    layers: OutboxLayers,
    service: Dispatch,
) -> Result<(), WorkerError> {
    let engine = Engine::start(process, settings);
    WorkerBuilder::new(&worker)
        .backend(engine)
        .layer(layers)
        .build(service)
        .run()
        .await
}
