//! The suppression check before sending: the claimed messages of a type that names
//! recipients are looked up in the suppression list in one statement per batch; those a
//! suppression stops are settled as suppressed (kept, never started, attempt given back)
//! and the rest go on. The enqueue checked them too; this catches suppressions added
//! since (an unsubscribe or a bounce while a campaign is queued).

use std::collections::HashMap;

use super::{settings::RecipientOf, shared::Shared};
use crate::{
    counters::Outcome,
    store::{Backend, Claimed, Settle, Settlement, Suppression, SuppressionProbe},
};

impl<B: Backend> Shared<B> {
    /// Settles the messages of `claimed` that a suppression stops and returns the others,
    /// in order. When the list cannot be read, every message goes on (WARN): the enqueue
    /// checked them, and holding a whole queue back for a read error would stop all mail.
    pub(super) async fn settle_suppressed(
        &self,
        claimed: Vec<Claimed>,
        recipient_of: RecipientOf,
    ) -> Vec<Claimed> {
        let type_tag = self.settings.type_tag;
        let (at, probes): (Vec<usize>, Vec<SuppressionProbe>) = claimed
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let r = recipient_of(&c.payload)?;
                let list = r.list.as_deref();
                let group = c.group.as_deref();
                SuppressionProbe::new(&r.address, list, r.transactional, type_tag, group)
                    .map(|p| (i, p))
            })
            .unzip();
        if probes.is_empty() {
            return claimed;
        }
        let found = match self
            .store
            .check_suppressions(&probes, self.clock.database_now())
            .await
        {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(
                    message.type = type_tag, error = %e,
                    "cannot read the suppression list; sending this batch unchecked"
                );
                return claimed;
            }
        };
        let mut stopped: HashMap<usize, Suppression> = at
            .into_iter()
            .zip(found)
            .filter_map(|(i, s)| s.map(|s| (i, s)))
            .collect();
        if stopped.is_empty() {
            return claimed;
        }
        let mut kept = Vec::with_capacity(claimed.len() - stopped.len());
        for (i, c) in claimed.into_iter().enumerate() {
            let Some(s) = stopped.remove(&i) else {
                kept.push(c);
                continue;
            };
            let reason = describe(&s);
            tracing::debug!(message.id = %c.id, message.type = type_tag, "not sent: {reason}");
            self.suppressed(Settlement {
                id: c.id,
                attempt: c.attempt,
                claim: c.claim,
                settle: Settle::Suppressed { reason },
                grouped: c.group.is_some(),
            });
        }
        kept
    }

    /// Queues the settlement of a message a suppression stopped before it started.
    fn suppressed(&self, settlement: Settlement) {
        self.send_outcome(settlement, Outcome::Suppressed);
    }
}

/// How a suppressed message's row names what stopped it (as the enqueue statements do).
pub(crate) fn describe(s: &Suppression) -> String {
    format!("suppressed: {} of {} ({})", s.reason, s.address, s.scope)
}
