//! The endpoints of message kinds in the shared SQL store.

use futures::future::BoxFuture;

use super::{write, Arg, Dialect, SqlRow};
use crate::{
    clock::{from_unix_millis, Now},
    endpoints::check_endpoint,
    error::Error,
    store::{Endpoint, EndpointStore},
};

/// An endpoint from the columns of `endpoint_get.sql` / `endpoints_list.sql`.
fn endpoint<R: SqlRow>(r: &R) -> Result<Endpoint, sqlx::Error> {
    Ok(Endpoint {
        kind: r.text(0)?,
        name: r.text(1)?,
        settings: r.text(2)?,
        disabled_at: r.opt_int(3)?.map(from_unix_millis),
        disabled_reason: r.opt_text(4)?,
        failing_since: r.opt_int(5)?.map(from_unix_millis),
        created_at: from_unix_millis(r.int(6)?),
        updated_at: from_unix_millis(r.int(7)?),
    })
}

impl<D: Dialect> EndpointStore for D {
    fn put_endpoint<'a>(
        &'a self,
        kind: &'a str,
        name: &'a str,
        settings: &'a str,
        now: Now,
    ) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            check_endpoint(kind, name, Some(settings)).map_err(Error::Config)?;
            let args = [
                Arg::Text(kind),
                Arg::Text(name),
                Arg::Text(settings),
                Arg::OptInt(self.now_ms(now)),
            ];
            write(self, &[(self.queries().endpoint_put, &args)]).await?;
            Ok(())
        })
    }

    fn endpoint<'a>(
        &'a self,
        kind: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<Endpoint>, Error>> {
        Box::pin(async move {
            let args = [Arg::Text(kind), Arg::Text(name)];
            let rows = self.fetch(None, self.queries().endpoint_get, &args).await?;
            Ok(rows.first().map(endpoint).transpose()?)
        })
    }

    fn endpoints<'a>(&'a self, kind: &'a str) -> BoxFuture<'a, Result<Vec<Endpoint>, Error>> {
        Box::pin(async move {
            let args = [Arg::Text(kind)];
            let rows = self
                .fetch(None, self.queries().endpoints_list, &args)
                .await?;
            Ok(rows.iter().map(endpoint).collect::<Result<_, _>>()?)
        })
    }

    fn disable_endpoint<'a>(
        &'a self,
        kind: &'a str,
        name: &'a str,
        reason: &'a str,
        now: Now,
    ) -> BoxFuture<'a, Result<Option<Endpoint>, Error>> {
        Box::pin(async move {
            let args = [
                Arg::Text(reason),
                Arg::OptInt(self.now_ms(now)),
                Arg::Text(kind),
                Arg::Text(name),
            ];
            write(self, &[(self.queries().endpoint_disable, &args)]).await?;
            self.endpoint(kind, name).await
        })
    }

    fn enable_endpoint<'a>(
        &'a self,
        kind: &'a str,
        name: &'a str,
        now: Now,
    ) -> BoxFuture<'a, Result<Option<Endpoint>, Error>> {
        Box::pin(async move {
            let args = [
                Arg::OptInt(self.now_ms(now)),
                Arg::Text(kind),
                Arg::Text(name),
            ];
            write(self, &[(self.queries().endpoint_enable, &args)]).await?;
            self.endpoint(kind, name).await
        })
    }

    fn endpoint_health<'a>(
        &'a self,
        kind: &'a str,
        name: &'a str,
        failing: bool,
        now: Now,
    ) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            if failing {
                let args = [
                    Arg::OptInt(self.now_ms(now)),
                    Arg::Text(kind),
                    Arg::Text(name),
                ];
                write(self, &[(self.queries().endpoint_failing, &args)]).await?;
            } else {
                let args = [Arg::Text(kind), Arg::Text(name)];
                write(self, &[(self.queries().endpoint_healthy, &args)]).await?;
            }
            Ok(())
        })
    }

    fn remove_endpoint<'a>(
        &'a self,
        kind: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<bool, Error>> {
        Box::pin(async move {
            let args = [Arg::Text(kind), Arg::Text(name)];
            let changed = write(self, &[(self.queries().endpoint_remove, &args)]).await?;
            Ok(changed[0] > 0)
        })
    }
}
