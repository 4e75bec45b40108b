//! The first-come, first-served turn of this process's SQLite writers.
//!
//! SQLite's busy handler is not a queue: a connection that has waited long polls the lock
//! ever more rarely (up to every 100 ms) while newcomers poll every few milliseconds, so
//! with many writers in one process one type's claims could lose for seconds in a row.

use std::sync::Arc;

use sqlx::{Sqlite, SqliteConnection, Transaction};
use tokio::sync::{Mutex, OwnedMutexGuard};

/// The turn of this process's writers (claims, settlements, heartbeats, admin writes):
/// first come, first served (tokio's mutex queues its waiters in order), so no worker's
/// write waits behind writers that asked after it. The caller's own transactions do not
/// take a turn: they wait on SQLite's lock as before, against one of ours at most.
#[derive(Debug, Clone, Default)]
pub(super) struct WriteGate(Arc<Mutex<()>>);

impl WriteGate {
    /// Waits for this writer's turn; the turn lasts as long as the guard.
    pub(super) async fn turn(&self) -> OwnedMutexGuard<()> {
        Arc::clone(&self.0).lock_owned().await
    }
}

/// A write transaction holding its writer's turn (see [`WriteGate`]): the transaction is
/// dropped (rolled back unless committed) before the turn passes on.
/// Public only inside this private module (the backend's transaction type), so no one
/// outside can name it.
#[derive(Debug)]
pub struct GatedTx {
    // Dropped in this order: the transaction first, then the turn.
    tx: Transaction<'static, Sqlite>,
    _turn: OwnedMutexGuard<()>,
}

impl GatedTx {
    /// `tx`, begun in `turn`.
    pub(super) fn new(tx: Transaction<'static, Sqlite>, turn: OwnedMutexGuard<()>) -> Self {
        Self { tx, _turn: turn }
    }

    /// The transaction's connection.
    pub(super) fn conn(&mut self) -> &mut SqliteConnection {
        &mut self.tx
    }

    /// Commits; the turn passes on after the commit.
    pub(super) async fn commit(self) -> Result<(), sqlx::Error> {
        self.tx.commit().await
    }

    /// Rolls back; the turn passes on after the rollback.
    pub(super) async fn rollback(self) -> Result<(), sqlx::Error> {
        self.tx.rollback().await
    }
}
