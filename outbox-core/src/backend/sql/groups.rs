//! The groups of the shared SQL store: pause and resume, progress, cancel, and the
//! completion hooks, each fired once.

use futures::future::BoxFuture;

use super::{
    live::cancel_batches,
    pauses::{pause_row, resume_row},
    rows, write, write_if, Arg, Dialect, SqlRow,
};
use crate::{
    clock::Now,
    error::Error,
    store::{GroupHook, GroupProgress, GroupStore},
};

impl<D: Dialect> GroupStore for D {
    fn pause_group<'a>(
        &'a self,
        name: &'a str,
        reason: &'a str,
        now: Now,
    ) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(pause_row(
            self,
            self.queries().group_pause,
            name,
            reason,
            now,
        ))
    }

    fn resume_group<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<bool, Error>> {
        Box::pin(resume_row(self, self.queries().group_resume, name))
    }

    fn paused_groups(&self) -> BoxFuture<'_, Result<Vec<String>, Error>> {
        Box::pin(async move {
            let rows = self.fetch(None, self.queries().paused_groups, &[]).await?;
            let names = rows.iter().map(|r| r.text(0));
            Ok(names.collect::<Result<_, sqlx::Error>>()?)
        })
    }

    fn groups(&self, now: Now) -> BoxFuture<'_, Result<Vec<GroupProgress>, Error>> {
        Box::pin(async move {
            let args = [Arg::OptInt(self.now_ms(now))];
            let rows = self.fetch(None, self.queries().groups_list, &args).await?;
            let groups = rows.iter().map(rows::group_progress);
            Ok(groups.collect::<Result<_, sqlx::Error>>()?)
        })
    }

    fn group<'a>(
        &'a self,
        name: &'a str,
        now: Now,
    ) -> BoxFuture<'a, Result<Option<GroupProgress>, Error>> {
        Box::pin(async move {
            let args = [Arg::OptInt(self.now_ms(now)), Arg::Text(name)];
            let rows = self.fetch(None, self.queries().group_show, &args).await?;
            Ok(rows.first().map(rows::group_progress).transpose()?)
        })
    }

    fn cancel_group<'a>(
        &'a self,
        name: &'a str,
        now: Now,
        batch: u32,
    ) -> BoxFuture<'a, Result<u64, Error>> {
        Box::pin(async move {
            let mark = [Arg::Text(name), Arg::OptInt(self.now_ms(now))];
            write(self, &[(self.queries().group_cancel_mark, &mark)]).await?;
            self.cancel_group_leftovers(name, batch).await
        })
    }

    fn cancel_group_leftovers<'a>(
        &'a self,
        name: &'a str,
        batch: u32,
    ) -> BoxFuture<'a, Result<u64, Error>> {
        Box::pin(async move {
            let args = [Arg::Text(name), Arg::Int(i64::from(batch.max(1)))];
            cancel_batches(self, self.queries().group_cancel_select, &args).await
        })
    }

    fn set_group_hook<'a>(
        &'a self,
        name: &'a str,
        hook: &'a GroupHook,
    ) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            let args = [
                Arg::Text(name),
                Arg::Text(&hook.type_tag),
                Arg::Bytes(&hook.payload),
                Arg::Int(i64::from(hook.max_attempts)),
                Arg::Int(i64::from(hook.priority)),
            ];
            write(self, &[(self.queries().group_hook_set, &args)]).await?;
            Ok(())
        })
    }

    fn fire_group_hooks<'a>(
        &'a self,
        now: Now,
        new_id: &'a (dyn Fn() -> String + Send + Sync),
    ) -> BoxFuture<'a, Result<Vec<String>, Error>> {
        Box::pin(async move {
            let q = self.queries();
            let now = self.now_ms(now);
            let rows = self.fetch(None, q.groups_finished, &[]).await?;
            let names = rows.iter().map(|r| r.text(0));
            let names: Vec<String> = names.collect::<Result<_, sqlx::Error>>()?;
            drop(rows);
            let mut fired = Vec::new();
            for name in names {
                let id = new_id();
                let mark = [Arg::Text(&name), Arg::OptInt(now)];
                let enqueue = [Arg::Text(&name), Arg::OptInt(now), Arg::Text(&id)];
                // Only the transaction that marks the hook fired enqueues its message.
                let statements = [
                    (q.group_complete, &mark[..]),
                    (q.group_hook_enqueue, &enqueue[..]),
                ];
                let kept = write_if(self, &statements, |changed| changed[0] == 1).await?;
                if kept.is_some() {
                    fired.push(name);
                }
            }
            Ok(fired)
        })
    }
}
