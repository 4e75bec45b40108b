//! Message events of the shared SQL store: receipts and later events, per message.

use std::time::Duration;

use futures::future::BoxFuture;
use serde::Serialize;

use super::{rows::json, rows::millis_ceil, write, Arg, Dialect, SqlRow};
use crate::{
    clock::{from_unix_millis, unix_millis, Now},
    error::Error,
    store::{EventStore, MessageEvent, NewMessageEvent},
};

/// One event as `events_record.sql` reads it.
#[derive(Serialize)]
struct Row<'a> {
    message_id: &'a str,
    provider: &'a str,
    event_id: &'a str,
    external_id: &'a str,
    kind: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    recipient: Option<&'a str>,
    detail: &'a str,
    at: i64,
}

impl<D: Dialect> EventStore for D {
    fn record_events<'a>(
        &'a self,
        events: &'a [NewMessageEvent],
        now: Now,
    ) -> BoxFuture<'a, Result<u64, Error>> {
        Box::pin(async move {
            if events.is_empty() {
                return Ok(0);
            }
            let mut rows = Vec::with_capacity(events.len());
            for e in events {
                e.check().map_err(Error::Config)?;
                rows.push(Row {
                    message_id: &e.message_id,
                    provider: &e.provider,
                    event_id: &e.event_id,
                    external_id: &e.external_id,
                    kind: &e.kind,
                    recipient: e.recipient.as_deref(),
                    detail: &e.detail,
                    at: unix_millis(e.at),
                });
            }
            let rows = json(&rows)?;
            let args = [Arg::Text(&rows), Arg::OptInt(self.now_ms(now))];
            let changed = write(self, &[(self.queries().events_record, &args)]).await?;
            Ok(changed[0])
        })
    }

    fn message_of<'a>(
        &'a self,
        provider: &'a str,
        external_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, Error>> {
        Box::pin(async move {
            let args = [Arg::Text(provider), Arg::Text(external_id)];
            let rows = self
                .fetch(None, self.queries().events_message_of, &args)
                .await?;
            Ok(rows.first().map(|r| r.text(0)).transpose()?)
        })
    }

    fn events_of<'a>(
        &'a self,
        message_id: &'a str,
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<MessageEvent>, Error>> {
        Box::pin(async move {
            let args = [Arg::Text(message_id), Arg::Int(i64::from(limit))];
            let rows = self
                .fetch(None, self.queries().events_of_message, &args)
                .await?;
            let read = |r: &D::Row| -> Result<MessageEvent, sqlx::Error> {
                Ok(MessageEvent {
                    provider: r.text(0)?,
                    event_id: r.text(1)?,
                    external_id: r.text(2)?,
                    kind: r.text(3)?,
                    recipient: r.opt_text(4)?,
                    detail: r.text(5)?,
                    at: from_unix_millis(r.int(6)?),
                })
            };
            Ok(rows.iter().map(read).collect::<Result<_, _>>()?)
        })
    }

    fn prune_events(
        &self,
        window: Duration,
        now: Now,
        limit: u32,
    ) -> BoxFuture<'_, Result<u64, Error>> {
        Box::pin(async move {
            let args = [
                Arg::OptInt(self.now_ms(now)),
                Arg::Int(millis_ceil(window)),
                Arg::Int(i64::from(limit)),
            ];
            Ok(self
                .execute(None, self.queries().events_prune, &args)
                .await?)
        })
    }
}
