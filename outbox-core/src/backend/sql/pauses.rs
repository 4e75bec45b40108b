//! Paused types of the shared SQL store, and the steering read (paused types and groups,
//! cancelled groups, open breakers) the workers poll.

use futures::future::BoxFuture;

use super::{breakers, write, Arg, Dialect, SqlRow};
use crate::{
    clock::Now,
    error::Error,
    store::{CancelledGroup, PauseStore, PausedType, Steering},
};

/// Pauses `name` (a type or a group, by `sql`) at `now` with `reason`.
pub(super) async fn pause_row<D: Dialect>(
    db: &D,
    sql: &'static str,
    name: &str,
    reason: &str,
    now: Now,
) -> Result<(), Error> {
    let args = [
        Arg::Text(name),
        Arg::OptInt(db.now_ms(now)),
        Arg::Text(reason),
    ];
    write(db, &[(sql, &args)]).await?;
    Ok(())
}

/// Resumes `name` (a type or a group, by `sql`); false if it was not paused.
pub(super) async fn resume_row<D: Dialect>(
    db: &D,
    sql: &'static str,
    name: &str,
) -> Result<bool, Error> {
    let args = [Arg::Text(name)];
    let changed = write(db, &[(sql, &args)]).await?;
    Ok(changed[0] > 0)
}

impl<D: Dialect> PauseStore for D {
    fn pause<'a>(
        &'a self,
        type_tag: &'a str,
        reason: &'a str,
        now: Now,
    ) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(pause_row(self, self.queries().pause, type_tag, reason, now))
    }

    fn resume<'a>(&'a self, type_tag: &'a str) -> BoxFuture<'a, Result<bool, Error>> {
        Box::pin(resume_row(self, self.queries().resume, type_tag))
    }

    fn steering(&self, now: Now) -> BoxFuture<'_, Result<Steering, Error>> {
        Box::pin(async move {
            let args = [Arg::OptInt(self.now_ms(now))];
            let rows = self.fetch(None, self.queries().steering, &args).await?;
            let mut steering = Steering::default();
            for r in &rows {
                match r.int(0)? {
                    0 => steering.paused_types.push(PausedType {
                        type_tag: r.text(1)?,
                        paused_at: crate::clock::from_unix_millis(r.int(2)?),
                        reason: r.text(3)?,
                    }),
                    1 => steering.paused_groups.push(r.text(1)?),
                    3 => steering.cancelled_groups.push(CancelledGroup {
                        name: r.text(1)?,
                        cancelled_at: crate::clock::from_unix_millis(r.int(2)?),
                    }),
                    _ => steering.open_breakers.push(breakers::breaker_state(r, 1)?),
                }
            }
            Ok(steering)
        })
    }

    fn paused(&self) -> BoxFuture<'_, Result<Vec<PausedType>, Error>> {
        Box::pin(async move {
            let rows = self.fetch(None, self.queries().paused, &[]).await?;
            let paused = rows.iter().map(|r| {
                Ok(PausedType {
                    type_tag: r.text(0)?,
                    paused_at: crate::clock::from_unix_millis(r.int(1)?),
                    reason: r.text(2)?,
                })
            });
            Ok(paused.collect::<Result<_, sqlx::Error>>()?)
        })
    }
}
