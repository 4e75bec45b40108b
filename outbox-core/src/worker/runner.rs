//! The one worker runner every database uses: an apalis worker over the [`Engine`], with
//! the outbox layers around the handler.

use std::sync::Arc;

use apalis_core::{
    error::WorkerError,
    worker::{builder::WorkerBuilder, context::WorkerContext},
};

use super::{engine::Engine, shared::EngineSettings, Dispatch, QueueSettings};
use crate::{clock::Clock, layers::OutboxLayers, store::Backend};

/// Runs one worker for `settings.type_tag` until it is stopped through `worker` (`Ok`),
/// or fails (`Err`; the supervisor restarts it under a new name).
pub(crate) async fn run_worker<B: Backend>(
    backend: B,
    worker: WorkerContext,
    settings: QueueSettings,
    layers: OutboxLayers,
    service: Dispatch,
    clock: Arc<dyn Clock>,
) -> Result<(), WorkerError> {
    let engine = Engine::start(
        backend,
        EngineSettings {
            type_tag: settings.type_tag,
            owner: worker.name().to_owned(),
            batch_size: settings.batch_size,
            max_batch_size: settings.max_batch_size,
            poll_interval: settings.poll_interval,
            heartbeat_interval: settings.heartbeat_interval,
            lease: settings.lease(),
            keep_done: settings.keep_done,
        },
        clock,
    );
    WorkerBuilder::new(&worker)
        .backend(engine)
        .layer(layers)
        .build(service)
        .run()
        .await
}
