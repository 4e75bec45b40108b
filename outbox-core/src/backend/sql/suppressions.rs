//! The suppression list of the shared SQL store, the suppressed rows it leaves in the
//! queue (listed and pruned here), and single-use tokens.

use std::{collections::BTreeMap, time::Duration};

use futures::future::BoxFuture;
use serde::Serialize;

use super::{
    delete_counting_groups, rows::json, rows::millis_ceil, transient_retries, write, Arg, Dialect,
    SqlRow,
};
use crate::{
    clock::{from_unix_millis, unix_millis, Now},
    error::Error,
    store::{
        normalize_address, NewSuppression, SuppressedMessage, Suppression, SuppressionFilter,
        SuppressionProbe, SuppressionScope, SuppressionStore, TokenUse, MAX_TOKEN_BATCH,
    },
};

/// One entry as `suppression_add.sql` reads it.
#[derive(Serialize)]
struct Entry<'a> {
    address: &'a str,
    scope: &'a str,
    reason: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    source: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    expires: Option<i64>,
}

/// `entries` as the JSON parameter of `suppression_add.sql`: one per address and scope (the
/// last given wins), so no statement updates a row twice; and how many that is.
fn entries_json(entries: &[NewSuppression]) -> Result<(String, u64), Error> {
    let mut last: BTreeMap<(String, String), &NewSuppression> = BTreeMap::new();
    for e in entries {
        // The fields are public: an entry built by hand is checked (and lowercased) here.
        let address = normalize_address(&e.address).map_err(Error::Config)?;
        let scope = e.scope.key();
        scope.parse::<SuppressionScope>().map_err(Error::Config)?;
        last.insert((address, scope), e);
    }
    let rows: Vec<Entry<'_>> = last
        .iter()
        .map(|((address, scope), e)| Entry {
            address,
            scope,
            reason: e.reason.as_str(),
            source: e.source.as_deref(),
            expires: e.expires_at.map(unix_millis),
        })
        .collect();
    Ok((json(&rows)?, rows.len() as u64))
}

/// One probe as `suppression_check.sql` reads it.
#[derive(Serialize)]
struct Probe<'a> {
    i: usize,
    a: &'a str,
    d: &'a str,
    s0: Option<&'a str>,
    s1: Option<&'a str>,
    s2: Option<&'a str>,
    s3: Option<&'a str>,
    u: u8,
}

fn probes_json(probes: &[SuppressionProbe]) -> Result<String, sqlx::Error> {
    let rows: Vec<Probe<'_>> = probes
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let s = |k: usize| p.scopes[k].as_deref();
            Probe {
                i,
                a: &p.address,
                d: &p.domain,
                s0: s(0),
                s1: s(1),
                s2: s(2),
                s3: s(3),
                u: u8::from(p.honour_unsubscribe),
            }
        })
        .collect();
    json(&rows)
}

/// A suppression from the columns `at..at + 6`: address, scope, reason, source, created at,
/// expires at.
fn suppression<R: SqlRow>(r: &R, at: usize) -> Result<Suppression, sqlx::Error> {
    let decode = |what: &str, e: String| sqlx::Error::Decode(format!("{what}: {e}").into());
    Ok(Suppression {
        address: r.text(at)?,
        scope: r
            .text(at + 1)?
            .parse()
            .map_err(|e| decode("outbox_suppressions.scope", e))?,
        reason: r
            .text(at + 2)?
            .parse()
            .map_err(|e| decode("outbox_suppressions.reason", e))?,
        source: r.opt_text(at + 3)?,
        created_at: from_unix_millis(r.int(at + 4)?),
        expires_at: r.opt_int(at + 5)?.map(from_unix_millis),
    })
}

/// The address and domain parameters of a filter: an address matches its own entries and
/// its domain's; an `@domain` its own.
fn filter_keys(filter: &SuppressionFilter) -> Result<(Option<String>, Option<String>), Error> {
    let Some(address) = &filter.address else {
        return Ok((None, None));
    };
    let address = normalize_address(address).map_err(Error::Config)?;
    let domain = address
        .rsplit_once('@')
        .map(|(_, d)| format!("@{d}"))
        .unwrap_or_default();
    Ok((Some(address), Some(domain)))
}

/// Rewrites the entries written before addresses were normalized ([`normalize_address`]
/// maps a domain by IDNA since): every entry whose address holds a non-ASCII character is
/// read, in pages of 500 by key, and one that normalizes to another address is moved there
/// with its reason, source and dates, in one transaction each (when an entry of the
/// normalized address and scope exists already, it is kept and the old one dropped). An
/// address that cannot be normalized is left as it is (listed and removable by its stored
/// text). Run by every backend's `migrate`; returns how many entries moved.
pub(crate) async fn normalize_stored_addresses<D: Dialect>(db: &D) -> Result<u64, Error> {
    const PAGE: i64 = 500;
    let q = db.queries();
    let (mut after_address, mut after_scope) = (String::new(), String::new());
    let mut moved = 0;
    loop {
        let args = [
            Arg::Text(&after_address),
            Arg::Text(&after_scope),
            Arg::Int(PAGE),
        ];
        let rows = db.fetch(None, q.suppressions_unnormalized, &args).await?;
        for r in &rows {
            let (address, scope) = (r.text(0)?, r.text(1)?);
            if let Ok(normal) = normalize_address(&address) {
                if normal != address {
                    let (reason, source) = (r.text(2)?, r.opt_text(3)?);
                    let keep = [
                        Arg::Text(&normal),
                        Arg::Text(&scope),
                        Arg::Text(&reason),
                        Arg::OptText(source.as_deref()),
                        Arg::Int(r.int(4)?),
                        Arg::OptInt(r.opt_int(5)?),
                    ];
                    let remove = [Arg::Text(&address), Arg::Text(&scope)];
                    write(
                        db,
                        &[(q.suppression_keep, &keep), (q.suppression_remove, &remove)],
                    )
                    .await?;
                    moved += 1;
                }
            }
            (after_address, after_scope) = (address, scope);
        }
        if (rows.len() as i64) < PAGE {
            break;
        }
    }
    if moved > 0 {
        tracing::info!("normalized the addresses of {moved} suppression entries written before");
    }
    Ok(moved)
}

impl<D: Dialect> SuppressionStore for D {
    fn add_suppressions<'a>(
        &'a self,
        entries: &'a [NewSuppression],
        now: Now,
    ) -> BoxFuture<'a, Result<u64, Error>> {
        Box::pin(async move {
            if entries.is_empty() {
                return Ok(0);
            }
            let (rows, distinct) = entries_json(entries)?;
            let args = [Arg::Text(&rows), Arg::OptInt(self.now_ms(now))];
            write(self, &[(self.queries().suppression_add, &args)]).await?;
            Ok(distinct)
        })
    }

    fn remove_suppression<'a>(
        &'a self,
        address: &'a str,
        scope: &'a SuppressionScope,
    ) -> BoxFuture<'a, Result<bool, Error>> {
        Box::pin(async move {
            // An entry written before addresses were normalized whose address cannot be
            // (left as it was by the migration) is removed by its stored text.
            let address =
                normalize_address(address).unwrap_or_else(|_| address.trim().to_lowercase());
            let scope = scope.key();
            let args = [Arg::Text(&address), Arg::Text(&scope)];
            let changed = write(self, &[(self.queries().suppression_remove, &args)]).await?;
            Ok(changed[0] > 0)
        })
    }

    fn list_suppressions<'a>(
        &'a self,
        filter: &'a SuppressionFilter,
        limit: u32,
        offset: u64,
    ) -> BoxFuture<'a, Result<Vec<Suppression>, Error>> {
        Box::pin(async move {
            let (address, domain) = filter_keys(filter)?;
            let args = [
                Arg::OptText(address.as_deref()),
                Arg::OptText(domain.as_deref()),
                Arg::OptText(filter.reason.map(|r| r.as_str())),
                Arg::Int(i64::from(limit)),
                Arg::Int(i64::try_from(offset).unwrap_or(i64::MAX)),
            ];
            let rows = self
                .fetch(None, self.queries().suppressions_list, &args)
                .await?;
            let list = rows.iter().map(|r| suppression(r, 0));
            Ok(list.collect::<Result<_, sqlx::Error>>()?)
        })
    }

    fn count_suppressions<'a>(
        &'a self,
        filter: &'a SuppressionFilter,
    ) -> BoxFuture<'a, Result<u64, Error>> {
        Box::pin(async move {
            let (address, domain) = filter_keys(filter)?;
            let args = [
                Arg::OptText(address.as_deref()),
                Arg::OptText(domain.as_deref()),
                Arg::OptText(filter.reason.map(|r| r.as_str())),
            ];
            let rows = self
                .fetch(None, self.queries().suppressions_count, &args)
                .await?;
            let n = match rows.first() {
                Some(r) => r.int(0)?.max(0) as u64,
                None => 0,
            };
            Ok(n)
        })
    }

    fn check_suppressions<'a>(
        &'a self,
        probes: &'a [SuppressionProbe],
        now: Now,
    ) -> BoxFuture<'a, Result<Vec<Option<Suppression>>, Error>> {
        Box::pin(async move {
            let mut found: Vec<Option<Suppression>> = vec![None; probes.len()];
            if probes.is_empty() {
                return Ok(found);
            }
            let json = probes_json(probes)?;
            let args = [Arg::Text(&json), Arg::OptInt(self.now_ms(now))];
            let rows = self
                .fetch(None, self.queries().suppression_check, &args)
                .await?;
            for r in &rows {
                let i = usize::try_from(r.int(0)?).unwrap_or(usize::MAX);
                if let Some(slot @ None) = found.get_mut(i) {
                    *slot = Some(suppression(r, 1)?);
                }
            }
            Ok(found)
        })
    }

    fn suppressed_messages(
        &self,
        limit: u32,
    ) -> BoxFuture<'_, Result<Vec<SuppressedMessage>, Error>> {
        Box::pin(async move {
            let args = [Arg::Int(i64::from(limit))];
            let rows = self
                .fetch(None, self.queries().suppressed_list, &args)
                .await?;
            let list = rows.iter().map(|r| {
                Ok(SuppressedMessage {
                    id: r.text(0)?,
                    type_tag: r.text(1)?,
                    group: r.opt_text(2)?,
                    reason: r.text(3)?,
                    at: from_unix_millis(r.opt_int(4)?.unwrap_or(0)),
                })
            });
            Ok(list.collect::<Result<_, sqlx::Error>>()?)
        })
    }

    fn prune_suppressed(
        &self,
        window: Duration,
        now: Now,
        limit: u32,
    ) -> BoxFuture<'_, Result<u64, Error>> {
        Box::pin(async move {
            let q = self.queries();
            let args = [
                Arg::OptInt(self.now_ms(now)),
                Arg::Int(millis_ceil(window)),
                Arg::Int(i64::from(limit)),
            ];
            let (select, delete, count) = (
                q.prune_suppressed_select,
                q.prune_suppressed_delete,
                q.groups_suppressed,
            );
            delete_counting_groups(self, select, &args, delete, count).await
        })
    }

    fn forget_tokens<'a>(
        &'a self,
        kind: &'a str,
        window: Duration,
        now: Now,
    ) -> BoxFuture<'a, Result<u64, Error>> {
        Box::pin(async move {
            let args = [
                Arg::Text(kind),
                Arg::OptInt(self.now_ms(now)),
                Arg::Int(millis_ceil(window)),
            ];
            let changed = write(self, &[(self.queries().tokens_forget, &args)]).await?;
            Ok(changed[0])
        })
    }

    fn use_token<'a>(
        &'a self,
        kind: &'a str,
        token: &'a str,
        entries: &'a [NewSuppression],
        now: Now,
    ) -> BoxFuture<'a, Result<bool, Error>> {
        Box::pin(async move {
            let q = self.queries();
            let now = self.now_ms(now);
            let rows = if entries.is_empty() {
                None
            } else {
                Some(entries_json(entries)?.0)
            };
            let (use_args, rows) = ([Arg::Text(kind), Arg::Text(token), Arg::OptInt(now)], &rows);
            let use_args = &use_args;
            transient_retries::<D, _, _, _>(|| async move {
                let mut tx = self.begin_write().await?;
                if self.execute(Some(&mut tx), q.token_use, use_args).await? == 0 {
                    D::rollback(tx).await?;
                    return Ok(false);
                }
                if let Some(rows) = rows {
                    let args = [Arg::Text(rows), Arg::OptInt(now)];
                    self.execute(Some(&mut tx), q.suppression_add, &args)
                        .await?;
                }
                D::commit(tx).await?;
                Ok(true)
            })
            .await
        })
    }

    fn use_tokens<'a>(
        &'a self,
        kind: &'a str,
        uses: &'a [TokenUse],
        now: Now,
    ) -> BoxFuture<'a, Result<Vec<bool>, Error>> {
        Box::pin(async move {
            if uses.len() > MAX_TOKEN_BATCH {
                return Err(Error::Config(format!(
                    "{} token uses in one batch; at most {MAX_TOKEN_BATCH}",
                    uses.len()
                )));
            }
            if uses.is_empty() {
                return Ok(Vec::new());
            }
            // Check every entry before anything is written.
            for u in uses {
                entries_json(&u.entries)?;
            }
            let q = self.queries();
            let now = self.now_ms(now);
            let tokens: Vec<&str> = uses.iter().map(|u| u.token.as_str()).collect();
            let tokens = json(&tokens)?;
            let tokens = &tokens;
            transient_retries::<D, _, _, _>(|| async move {
                let mut tx = self.begin_write().await?;
                let args = [Arg::Text(kind), Arg::Text(tokens)];
                let rows = self.fetch(Some(&mut tx), q.tokens_used, &args).await?;
                let mut seen = std::collections::HashSet::with_capacity(rows.len());
                for r in &rows {
                    seen.insert(r.text(0)?);
                }
                let args = [Arg::Text(kind), Arg::Text(tokens), Arg::OptInt(now)];
                self.execute(Some(&mut tx), q.tokens_use, &args).await?;
                let mut new = Vec::with_capacity(uses.len());
                let mut entries = Vec::new();
                for u in uses {
                    // A token named twice in the batch is new the first time only.
                    let first = seen.insert(u.token.clone());
                    if first {
                        entries.extend(u.entries.iter().cloned());
                    }
                    new.push(first);
                }
                if !entries.is_empty() {
                    let (rows, _) = entries_json(&entries).map_err(|e| {
                        sqlx::Error::Protocol(format!("entries checked above: {e}"))
                    })?;
                    let args = [Arg::Text(&rows), Arg::OptInt(now)];
                    self.execute(Some(&mut tx), q.suppression_add, &args)
                        .await?;
                }
                D::commit(tx).await?;
                Ok(new)
            })
            .await
        })
    }
}
