//! The statement texts a database gives the shared store: one field per statement, each
//! database's from its `.sql` files (`queries/<area>/`, by port area).

/// The statement texts of one database (its `.sql` files), by what they do. A verb whose
/// move takes several statements lists them in the order they run in one transaction.
#[derive(Debug)]
pub struct Queries {
    /// Grouped delivered messages counted in their groups' rows (settlement, before the
    /// delete or keep).
    pub settle_count_delivered: &'static str,
    /// Delivered messages deleted (settlement).
    pub settle_delete: &'static str,
    /// Delivered messages kept as done rows (settlement).
    pub settle_done: &'static str,
    /// Messages back in the queue, due later (settlement).
    pub settle_retry: &'static str,
    /// Messages a suppression stopped, kept as suppressed rows (settlement).
    pub settle_suppressed: &'static str,
    /// Messages back in the queue unchanged (settlement).
    pub settle_release: &'static str,
    /// Messages moved to the dead letters (settlement); the last decides the count (it
    /// removes them from the queue).
    pub settle_bury: &'static [&'static str],
    /// Which of a batch's claims are still leased to the settling worker, locked until
    /// the transaction ends (only when a batch was partly fenced).
    pub settle_owned: &'static str,
    /// Where a batch's messages are now (id, claims, status, last error), read back after
    /// a settlement commit went unanswered.
    pub settle_read_back: &'static str,
    /// Registry row of a worker.
    pub worker_heartbeat: &'static str,
    /// Removes a worker from the registry.
    pub worker_delete: &'static str,
    /// Extends the leases a worker holds.
    pub extend_leases: &'static str,
    /// Requeues messages whose lease expired.
    pub rescue_expired: &'static str,
    /// Which types have a due message.
    pub due_types: &'static str,
    /// Deletes old done rows.
    pub prune_done: &'static str,
    /// Whether a drain has anything left.
    pub count_unfinished: &'static str,
    /// Queued messages of unregistered types, per type.
    pub unregistered_pending: &'static str,
    /// Moves queued messages of unregistered types to the dead letters; the first decides
    /// the count.
    pub unregistered_bury: &'static [&'static str],
    /// Takes a token.
    pub bucket_take: &'static str,
    /// Creates or changes a bucket.
    pub bucket_set: &'static str,
    /// One bucket.
    pub bucket_get: &'static str,
    /// Every bucket.
    pub bucket_list: &'static str,
    /// Pauses a type.
    pub pause: &'static str,
    /// Resumes a type.
    pub resume: &'static str,
    /// Every paused type.
    pub paused: &'static str,
    /// A page of dead letters.
    pub dead_letters_list: &'static str,
    /// How many dead letters match.
    pub dead_letters_count: &'static str,
    /// Deletes matching dead letters.
    pub dead_letters_purge: &'static str,
    /// Moves matching dead letters back to the queue; the last decides the count.
    pub requeue: &'static [&'static str],
    /// Counts per type and state.
    pub status_counts: &'static str,
    /// A keyset page of live messages.
    pub live_list: &'static str,
    /// How many live messages match.
    pub live_count: &'static str,
    /// Order keys held by a dead or failing message.
    pub live_held_keys: &'static str,
    /// A keyset page of live messages to one recipient (through its index).
    pub live_list_by_recipient: &'static str,
    /// How many live messages to one recipient match (through its index).
    pub live_count_by_recipient: &'static str,
    /// Makes a batch of matching queued messages due now.
    pub live_retry_now: &'static str,
    /// A batch of matching queued messages to cancel, with their groups, locked.
    pub live_cancel_select: &'static str,
    /// A batch of a group's queued messages to cancel, locked.
    pub group_cancel_select: &'static str,
    /// Records a group's cancel time (`group_cancel_mark.sql`).
    pub group_cancel_mark: &'static str,
    /// Deletes the messages a cancel selected.
    pub cancel_delete: &'static str,
    /// Adds cancelled messages to their groups' counts.
    pub groups_cancelled: &'static str,
    /// Pauses a group.
    pub group_pause: &'static str,
    /// Resumes a group.
    pub group_resume: &'static str,
    /// The paused groups.
    pub paused_groups: &'static str,
    /// One group's progress.
    pub group_show: &'static str,
    /// Every group's progress.
    pub groups_list: &'static str,
    /// Sets a group's completion hook.
    pub group_hook_set: &'static str,
    /// The groups whose hook is due.
    pub groups_finished: &'static str,
    /// Marks a group's hook fired (once).
    pub group_complete: &'static str,
    /// Enqueues a group's hook message.
    pub group_hook_enqueue: &'static str,
    /// Adds outcomes to the current minute's history rows.
    pub stats_add: &'static str,
    /// Deletes old history rows.
    pub stats_prune: &'static str,
    /// History rows from a minute on.
    pub stats_list: &'static str,
    /// The newest worker heartbeat, and now.
    pub workers_seen: &'static str,
    /// Creates a breaker's row, closed, unless it exists.
    pub breaker_insert: &'static str,
    /// Opens a closed breaker.
    pub breaker_open: &'static str,
    /// Gives an open breaker's due probe to one owner.
    pub breaker_take_probe: &'static str,
    /// The probe just taken: failed probes so far, time since the last WARN.
    pub breaker_probe_grant: &'static str,
    /// Records a failed probe and when the next is due.
    pub breaker_probe_failed: &'static str,
    /// Closes an open breaker.
    pub breaker_close: &'static str,
    /// Makes an open breaker's next probe due now.
    pub breaker_probe_now: &'static str,
    /// Every breaker.
    pub breakers_list: &'static str,
    /// The paused types and groups and the open breakers, in one read.
    pub steering: &'static str,
    /// Adds or replaces suppressions.
    pub suppression_add: &'static str,
    /// Removes one suppression.
    pub suppression_remove: &'static str,
    /// A page of suppressions.
    pub suppressions_list: &'static str,
    /// How many suppressions match.
    pub suppressions_count: &'static str,
    /// The suppressions that stop probed messages.
    pub suppression_check: &'static str,
    /// The messages kept as suppressed.
    pub suppressed_list: &'static str,
    /// Old suppressed rows with their groups, locked.
    pub prune_suppressed_select: &'static str,
    /// Deletes suppressed rows by id.
    pub prune_suppressed_delete: &'static str,
    /// Adds pruned suppressed messages to their groups' counts.
    pub groups_suppressed: &'static str,
    /// Records a single-use token unless it was used.
    pub token_use: &'static str,
    /// Which of a batch of tokens were used before (locked where the database can).
    pub tokens_used: &'static str,
    /// Records a batch of single-use tokens, leaving those used before.
    pub tokens_use: &'static str,
    /// Entries whose address holds a non-ASCII character, in key order.
    pub suppressions_unnormalized: &'static str,
    /// Writes one entry as it was unless its address and scope exist.
    pub suppression_keep: &'static str,
    /// Forgets old used tokens of one kind.
    pub tokens_forget: &'static str,
    /// Run first in the transactions of a site's grant and release, or empty: shaping
    /// state is soft (a lost slot frees itself after its lease), so PostgreSQL commits it
    /// without waiting for the WAL flush.
    pub site_soft_commit: &'static str,
    /// Gives a site a token back.
    pub site_refund: &'static str,
    /// The sites with limits or actions in force, and the time of the read.
    pub sites_in_force: &'static str,
    /// Forgets rule-created sites idle for a day.
    pub sites_prune: &'static str,
    /// Forgets rule matches older than a year.
    pub site_hits_prune: &'static str,
    /// Writes a configured site's limits.
    pub site_configure: &'static str,
    /// Drops every site's configured limits.
    pub sites_unconfigure: &'static str,
    /// One site's row, locked, and the time of the read.
    pub site_lock: &'static str,
    /// A site's messages in flight.
    pub site_slots_count: &'static str,
    /// A site's tokens after a grant.
    pub site_spend: &'static str,
    /// Takes (or renews) a slot of a site.
    pub site_slot_take: &'static str,
    /// Frees a slot of a site.
    pub site_slot_release: &'static str,
    /// Every site with its live slots.
    pub sites_list: &'static str,
    /// A row for a site a rule acts on.
    pub site_ensure: &'static str,
    /// A rule slows a site.
    pub site_slow: &'static str,
    /// A rule suspends a site.
    pub site_suspend: &'static str,
    /// Ends a site's slowdown and suspension.
    pub site_resume: &'static str,
    /// Records a rule's match.
    pub site_hit: &'static str,
    /// Forgets a rule's old matches.
    pub site_hits_forget: &'static str,
    /// Counts a rule's recent matches.
    pub site_hits_count: &'static str,
    /// Adds or replaces a shaping rule.
    pub rule_put: &'static str,
    /// Removes a shaping rule.
    pub rule_remove: &'static str,
    /// Every shaping rule.
    pub rules_list: &'static str,
    /// Records message events (a repeat skipped).
    pub events_record: &'static str,
    /// The message a provider's receipt names.
    pub events_message_of: &'static str,
    /// The events of one message.
    pub events_of_message: &'static str,
    /// Deletes old message events.
    pub events_prune: &'static str,
    /// Stores an endpoint (new: enabled; known: new settings).
    pub endpoint_put: &'static str,
    /// One endpoint.
    pub endpoint_get: &'static str,
    /// The endpoints of a kind.
    pub endpoints_list: &'static str,
    /// Disables an endpoint.
    pub endpoint_disable: &'static str,
    /// Enables an endpoint.
    pub endpoint_enable: &'static str,
    /// Starts an endpoint's failure clock.
    pub endpoint_failing: &'static str,
    /// Stops an endpoint's failure clock.
    pub endpoint_healthy: &'static str,
    /// Forgets an endpoint.
    pub endpoint_remove: &'static str,
    /// Sends kept done messages again.
    pub replay_done: &'static str,
    /// Deletes old inbox rows.
    pub inbox_prune: &'static str,
    /// Inbox rows per consumer.
    pub inbox_counts: &'static str,
}
