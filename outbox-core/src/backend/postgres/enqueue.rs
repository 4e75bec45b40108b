//! Transactional enqueue on PostgreSQL: one statement per chunk (`jsonb_to_recordset`,
//! `ON CONFLICT DO NOTHING RETURNING`): a duplicate key never raises 23505, so the
//! caller's transaction stays usable. The statements NOTIFY the written types themselves
//! (`pg_notify` on their `RETURNING` rows); PostgreSQL delivers it at commit. Due and
//! enqueue times come from the database's clock (`now()`).

use futures::future::BoxFuture;
use sqlx::PgConnection;

use crate::{
    backend::sql::{
        bind,
        enqueue::{encode_rows, one_args, resolve, FindByKeys, Written},
        Arg,
    },
    enqueue::{Enqueued, InsertMessages, NewMessage},
};

impl InsertMessages for PgConnection {
    fn insert_messages<'a>(
        &'a mut self,
        rows: &'a [NewMessage],
    ) -> BoxFuture<'a, Result<Vec<Enqueued>, sqlx::Error>> {
        Box::pin(async move {
            let ids: Vec<String> = match rows {
                // One message (the common case): a plain one-row insert.
                [m] => {
                    let args = one_args(m, None);
                    let query = bind(sqlx::query(include_str!("queries/enqueue_one.sql")), &args);
                    query
                        .try_map(|row| sqlx::Row::try_get(&row, 0))
                        .fetch_all(&mut *self)
                        .await?
                }
                _ => {
                    let encoded = encode_rows(rows)?;
                    let args = [Arg::Text(&encoded), Arg::OptInt(None)];
                    let query = bind(sqlx::query(include_str!("queries/enqueue.sql")), &args);
                    query
                        .try_map(|row| sqlx::Row::try_get(&row, 0))
                        .fetch_all(&mut *self)
                        .await?
                }
            };
            // Ids are fresh: as many written as given means all of them.
            let written = if ids.len() == rows.len() {
                Written::All
            } else {
                Written::Ids(ids.into_iter().collect())
            };
            resolve(self, rows, written).await
        })
    }
}

impl FindByKeys for PgConnection {
    fn find_by_keys<'a>(
        &'a mut self,
        queue: &'a str,
        keys: String,
    ) -> BoxFuture<'a, Result<Vec<(String, String)>, sqlx::Error>> {
        Box::pin(async move {
            sqlx::query_as(include_str!("queries/find_by_keys.sql"))
                .bind(queue)
                .bind(keys)
                .fetch_all(&mut *self)
                .await
        })
    }
}
