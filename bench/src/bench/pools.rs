//! What the workloads need from a backend's pool, once per database.

use futures::future::BoxFuture;
use outbox::{
    backend::Backend, enqueue_iter, enqueue_many, Enqueue, EnqueueOptions, OutboxMessage,
};

/// A pool the bench can enqueue through, with and without the outbox.
pub trait BenchPool: Clone + Send + Sync + 'static {
    type Backend: Backend;
    fn backend(&self) -> Self::Backend;
    /// One transaction: a business row, plus what `extra` says.
    fn order_tx<'a, M: OutboxMessage>(&'a self, id: i64, extra: Extra<'a, M>) -> BoxFuture<'a, ()>;
    /// One transaction holding every message of `msgs`.
    fn fan_out<'a, M: OutboxMessage>(&'a self, msgs: &'a [M]) -> BoxFuture<'a, ()>;
    /// Deletes every queued message (between two fan-outs that should start alike).
    fn clear(&self) -> BoxFuture<'_, ()>;
    /// One transaction holding every message `msgs` yields, written with `enqueue_iter`
    /// (one chunk in memory at a time); returns how many were inserted.
    fn fan_out_iter<'a, M, I>(&'a self, msgs: I) -> BoxFuture<'a, u64>
    where
        M: OutboxMessage + 'a,
        I: Iterator<Item = M> + Send + 'a;
}

/// What an `order_tx` writes beside its business row.
pub enum Extra<'a, M> {
    /// Nothing: the floor.
    Nothing,
    /// One outbox message.
    Message(&'a M),
    /// A second plain row of the message's size in the index-free `order_notes` table:
    /// what any extra insert costs, outbox or not.
    PlainRow,
}

macro_rules! bench_pool {
    ($pool:ty, $backend:ty, $insert:literal, $note:literal) => {
        impl BenchPool for $pool {
            type Backend = $backend;
            fn backend(&self) -> $backend {
                <$backend>::new(self.clone())
            }
            fn order_tx<'a, M: OutboxMessage>(
                &'a self,
                id: i64,
                extra: Extra<'a, M>,
            ) -> BoxFuture<'a, ()> {
                Box::pin(async move {
                    let mut tx = self.begin().await.unwrap();
                    sqlx::query($insert)
                        .bind(id)
                        .bind("buyer@example.com")
                        .execute(&mut *tx)
                        .await
                        .unwrap();
                    match extra {
                        Extra::Nothing => {}
                        Extra::Message(m) => drop(m.enqueue(&mut *tx).await.unwrap()),
                        Extra::PlainRow => drop(
                            sqlx::query($note)
                                .bind(id)
                                .bind(r#"{"n":1,"template":"order_confirmation"}"#)
                                .execute(&mut *tx)
                                .await
                                .unwrap(),
                        ),
                    }
                    tx.commit().await.unwrap();
                })
            }
            fn fan_out<'a, M: OutboxMessage>(&'a self, msgs: &'a [M]) -> BoxFuture<'a, ()> {
                Box::pin(async move {
                    let mut tx = self.begin().await.unwrap();
                    enqueue_many(&mut *tx, msgs).await.unwrap();
                    tx.commit().await.unwrap();
                })
            }
            fn clear(&self) -> BoxFuture<'_, ()> {
                Box::pin(async move {
                    sqlx::query("DELETE FROM outbox_messages")
                        .execute(self)
                        .await
                        .unwrap();
                })
            }
            fn fan_out_iter<'a, M, I>(&'a self, msgs: I) -> BoxFuture<'a, u64>
            where
                M: OutboxMessage + 'a,
                I: Iterator<Item = M> + Send + 'a,
            {
                Box::pin(async move {
                    let mut tx = self.begin().await.unwrap();
                    let written = enqueue_iter(&mut *tx, msgs, EnqueueOptions::new())
                        .await
                        .unwrap();
                    tx.commit().await.unwrap();
                    written.inserted
                })
            }
        }
    };
}

bench_pool!(
    sqlx::SqlitePool,
    outbox::SqliteBackend,
    "INSERT INTO orders (id, email) VALUES (?, ?)",
    "INSERT INTO order_notes (id, body) VALUES (?, ?)"
);
#[cfg(feature = "postgres")]
bench_pool!(
    sqlx::PgPool,
    outbox::PostgresBackend,
    "INSERT INTO orders (id, email) VALUES ($1, $2)",
    "INSERT INTO order_notes (id, body) VALUES ($1, $2)"
);
#[cfg(feature = "mysql")]
bench_pool!(
    sqlx::MySqlPool,
    outbox::MySqlBackend,
    "INSERT INTO orders (id, email) VALUES (?, ?)",
    "INSERT INTO order_notes (id, body) VALUES (?, ?)"
);
