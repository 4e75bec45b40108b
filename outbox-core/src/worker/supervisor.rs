//! Keeps one type's worker alive: a worker that ends with an error (a panic that escaped
//! every guard) is started again under a fresh name after a growing pause, until shutdown
//! is requested. Database errors do not end a worker: the engine retries them.

use std::time::{Duration, Instant};

use apalis_core::worker::context::WorkerContext;
use futures::FutureExt;
use tokio::sync::watch;

use super::{hub::Process, runner::run_worker, Dispatch, WorkerNames, WorkerSettings};
use crate::{
    handler::{invoke, Interrupted},
    layers::OutboxLayers,
    store::Backend,
};

/// First pause before a restart; doubled per consecutive failure up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(200);
/// Longest pause between restarts.
const MAX_PAUSE: Duration = Duration::from_secs(10);
/// A worker that ran this long before failing resets the pause.
const HEALTHY_RUN: Duration = Duration::from_secs(60);

/// Runs workers for one queue until `shutdown` turns true, then stops the current worker
/// gracefully (in-flight handlers finish, claimed but unstarted messages go back).
pub(crate) async fn supervise<B: Backend>(
    process: Process<B>,
    settings: WorkerSettings,
    layers: OutboxLayers,
    service: Dispatch,
    names: WorkerNames,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut pause = FIRST_PAUSE;
    for restart in 0.. {
        if *shutdown.borrow() {
            return;
        }
        let name = names.worker(settings.type_tag, restart);
        let ctx = WorkerContext::new(&name);
        let started = Instant::now();
        // A panic anywhere in the worker (a user's Deserialize, an orphan check) ends this
        // worker like a backend error would, and it is restarted.
        let worker_run = || {
            run_worker(
                process.clone(),
                ctx.clone(),
                settings.clone().owned_by(name.clone()),
                layers.clone(),
                service.clone(),
            )
        };
        let mut run = Box::pin(invoke(worker_run, None).map(|r| {
            r.unwrap_or_else(|interrupted| {
                let what = match &interrupted {
                    Interrupted::Panicked(panic) => panic.text().unwrap_or("a worker panicked"),
                    // Never: it runs without a time limit.
                    Interrupted::TimedOut(_) => "a worker ran out of time",
                };
                Err(apalis_core::error::WorkerError::PanicError(what.to_owned()))
            })
        }));
        let result = tokio::select! {
            result = &mut run => result,
            _ = stop_requested(&mut shutdown) => {
                if ctx.stop().is_ok() {
                    // Let the worker finish its in-flight messages and write their results.
                    let _ = run.await;
                }
                return;
            }
        };
        match result {
            Ok(()) => {
                tracing::info!(worker = %name, "worker stopped");
                if *shutdown.borrow() {
                    return;
                }
            }
            Err(error) => {
                if started.elapsed() > HEALTHY_RUN {
                    pause = FIRST_PAUSE;
                }
                tracing::warn!(
                    worker = %name, %error, restart_in = ?pause,
                    "worker stopped on an error; restarting (its claimed messages return after the lease)"
                );
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = stop_requested(&mut shutdown) => return,
        }
        pause = (pause * 2).min(MAX_PAUSE);
    }
}

/// Completes once shutdown is requested (or the sender is gone).
async fn stop_requested(shutdown: &mut watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|stop| *stop).await;
}
