//! Hands stored payloads to the service undecoded, so a payload that does not decode
//! fails its own message instead of killing the worker (apalis decodes in the backend
//! stream, where an error ends the worker: notes/apalis-1.0.md §0.2).

use std::task::{Context, Poll};

use apalis_core::{
    backend::{finalize::Ephemeral, Backend, BackendConfig},
    task::Task,
    worker::context::WorkerContext,
};

/// Wraps an apalis backend whose tasks carry the stored bytes and exposes them as
/// `Task<Vec<u8>>` without decoding.
#[derive(Debug, Clone)]
pub struct RawBytes<B>(pub B);

impl<B> Backend for RawBytes<B>
where
    B: Backend<Task = Task<Vec<u8>>>,
{
    type Task = Task<Vec<u8>>;
    type Error = B::Error;

    fn poll_ready(
        &mut self,
        cx: &mut Context<'_>,
        worker: &WorkerContext,
    ) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx, worker)
    }

    fn poll_next(
        &mut self,
        cx: &mut Context<'_>,
        worker: &WorkerContext,
    ) -> Poll<Option<Result<Self::Task, Self::Error>>> {
        self.0.poll_next(cx, worker)
    }

    fn poll_close(
        &mut self,
        cx: &mut Context<'_>,
        worker: &WorkerContext,
    ) -> Poll<Result<(), Self::Error>> {
        self.0.poll_close(cx, worker)
    }
}

impl<B: BackendConfig> BackendConfig for RawBytes<B> {
    type Args = Vec<u8>;
    type Id = B::Id;
    type Kind = Ephemeral;
    type Config = B::Config;
    type Layer = B::Layer;

    fn config(&self) -> &Self::Config {
        self.0.config()
    }

    fn middleware(&mut self, worker: &mut WorkerContext) -> Self::Layer {
        self.0.middleware(worker)
    }
}
