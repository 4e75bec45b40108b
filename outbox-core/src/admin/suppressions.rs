//! The suppression list from code: list, add and remove entries, see what they stopped,
//! and redeem single-use tokens (one-click unsubscribe links, provider webhooks).

use std::sync::Arc;

use crate::{
    clock::Clock,
    error::Error,
    store::{
        Backend, NewSuppression, SuppressedMessage, Suppression, SuppressionFilter,
        SuppressionScope, TokenUse, MAX_TOKEN_BATCH,
    },
};

/// Longest page [`Suppressions::list`] returns.
pub const MAX_SUPPRESSION_PAGE: u32 = 1_000;

/// Steer the suppression list from any process on the database, with or without workers
/// running. A change is seen by the next enqueue and by every worker's next claimed batch.
#[derive(Clone)]
pub struct Suppressions<B> {
    backend: B,
    clock: Arc<dyn Clock>,
}

impl<B: Backend> Suppressions<B> {
    pub(crate) fn new(backend: B, clock: Arc<dyn Clock>) -> Self {
        Self { backend, clock }
    }

    /// A page of the matching entries, newest first (`limit` at most
    /// [`MAX_SUPPRESSION_PAGE`]).
    pub async fn list(
        &self,
        filter: &SuppressionFilter,
        limit: u32,
        offset: u64,
    ) -> Result<Vec<Suppression>, Error> {
        let limit = limit.min(MAX_SUPPRESSION_PAGE);
        self.backend.list_suppressions(filter, limit, offset).await
    }

    /// How many entries match.
    pub async fn count(&self, filter: &SuppressionFilter) -> Result<u64, Error> {
        self.backend.count_suppressions(filter).await
    }

    /// Adds one entry (replacing the entry of the same address and scope).
    pub async fn add(&self, entry: NewSuppression) -> Result<(), Error> {
        self.add_all(std::slice::from_ref(&entry)).await.map(drop)
    }

    /// Adds entries in one transaction; returns how many distinct entries were written.
    pub async fn add_all(&self, entries: &[NewSuppression]) -> Result<u64, Error> {
        self.backend
            .add_suppressions(entries, self.clock.database_now())
            .await
    }

    /// Removes the entry of `address` (or `@domain`) in `scope`; false if there was none.
    /// Messages it stopped stay suppressed (enqueue them again to send them; one with an
    /// idempotency key needs a new key while the suppressed row is kept).
    pub async fn remove(&self, address: &str, scope: &SuppressionScope) -> Result<bool, Error> {
        self.backend.remove_suppression(address, scope).await
    }

    /// Whether the list stops an email to `address` of `list` (non-transactional, of no
    /// type or group scope), and by which entry.
    pub async fn stops(
        &self,
        address: &str,
        list: Option<&str>,
    ) -> Result<Option<Suppression>, Error> {
        let probe = crate::store::SuppressionProbe::new(address, list, false, "", None)
            .ok_or_else(|| Error::Config(format!("{address:?} is not an address (name@domain)")))?;
        let found = self
            .backend
            .check_suppressions(std::slice::from_ref(&probe), self.clock.database_now())
            .await?;
        Ok(found.into_iter().next().flatten())
    }

    /// The messages kept as suppressed (never sent), newest first, at most `limit`.
    pub async fn stopped_messages(&self, limit: u32) -> Result<Vec<SuppressedMessage>, Error> {
        self.backend
            .suppressed_messages(limit.min(MAX_SUPPRESSION_PAGE))
            .await
    }

    /// Forgets the used tokens of `kind` older than `window` (tokens that carry their own
    /// time, refused once stale anyway); returns how many.
    pub async fn forget_tokens(
        &self,
        kind: &str,
        window: std::time::Duration,
    ) -> Result<u64, Error> {
        self.backend
            .forget_tokens(kind, window, self.clock.database_now())
            .await
    }

    /// Records the single use of a token of `kind` (`digest` names it: a hash, never the
    /// token itself) and adds `entries`, in one transaction; false, writing nothing, when
    /// the token was used before.
    pub async fn redeem(
        &self,
        kind: &str,
        digest: &str,
        entries: &[NewSuppression],
    ) -> Result<bool, Error> {
        self.backend
            .use_token(kind, digest, entries, self.clock.database_now())
            .await
    }

    /// [`redeem`](Self::redeem) for many tokens of `kind`: each use whose token was not
    /// used before records it and adds its entries; for each use, whether it was new. Written
    /// in transactions of at most [`MAX_TOKEN_BATCH`] uses, one statement per table each, so
    /// an event naming 100,000 recipients is 100 transactions, not 100,000. When one fails,
    /// the batches before it stay written (their tokens are spent; a retry of the whole list
    /// writes only the rest).
    pub async fn redeem_all(&self, kind: &str, uses: &[TokenUse]) -> Result<Vec<bool>, Error> {
        let mut new = Vec::with_capacity(uses.len());
        for batch in uses.chunks(MAX_TOKEN_BATCH) {
            let written = self
                .backend
                .use_tokens(kind, batch, self.clock.database_now())
                .await?;
            new.extend(written);
        }
        Ok(new)
    }
}
