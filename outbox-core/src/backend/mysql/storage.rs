//! The apalis backend of one MySQL queue: [`MySqlPersistence`] driven by apalis-core's
//! `Persisted`, handing out the stored payload bytes undecoded.

use std::task::{Context, Poll};

use apalis_codec::json::JsonCodec;
use apalis_core::{
    backend::{
        finalize::Ephemeral,
        persistence::{Persisted, TaskPersistLayer},
        Backend, BackendConfig,
    },
    task::Task,
    worker::context::WorkerContext,
};
use serde_json::Value;

use super::persistence::MySqlPersistence;

/// The tasks of one queue in `outbox_jobs`.
#[derive(Debug)]
pub(crate) struct MySqlStorage {
    persistence: Persisted<MySqlPersistence>,
}

impl MySqlStorage {
    pub(crate) fn new(persistence: MySqlPersistence) -> Self {
        Self {
            persistence: Persisted::new(persistence),
        }
    }
}

impl Backend for MySqlStorage {
    type Task = Task<Vec<u8>>;
    type Error = sqlx::Error;

    fn poll_ready(
        &mut self,
        cx: &mut Context<'_>,
        worker: &WorkerContext,
    ) -> Poll<Result<(), sqlx::Error>> {
        let interval = self.persistence.heartbeat_interval;
        self.persistence.poll_ready(cx, worker, interval)
    }

    fn poll_next(
        &mut self,
        cx: &mut Context<'_>,
        worker: &WorkerContext,
    ) -> Poll<Option<Result<Self::Task, sqlx::Error>>> {
        self.persistence.poll_next(cx, worker)
    }

    fn poll_close(
        &mut self,
        cx: &mut Context<'_>,
        worker: &WorkerContext,
    ) -> Poll<Result<(), sqlx::Error>> {
        self.persistence.poll_close(cx, worker)
    }
}

impl BackendConfig for MySqlStorage {
    type Args = Vec<u8>;
    type Id = ulid::Ulid;
    type Kind = Ephemeral;
    type Config = ();
    type Layer = TaskPersistLayer<JsonCodec<Value>, Value>;

    fn config(&self) -> &Self::Config {
        &()
    }

    fn middleware(&mut self, _: &mut WorkerContext) -> Self::Layer {
        let batch = self.persistence.batch_size;
        self.persistence
            .layer(JsonCodec::<Value>::default(), batch)
            .persist_results(true)
            .lock_tasks(true)
    }
}
