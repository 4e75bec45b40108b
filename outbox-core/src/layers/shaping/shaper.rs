//! The process's side of traffic shaping, shared by every worker: which site a destination
//! belongs to (with its resolver's answers cached), the sites' rows and the rules as last read, and
//! the line of each site's messages waiting for room ([`Pacer`]).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant, SystemTime},
};

use super::{
    outage::{Down, Outages},
    pacer::{Pace, Pacer},
};
use crate::{
    clock::{Clock, Due, Now},
    counters::names,
    handler::HandlerErrorKind,
    layers::{AttemptFailed, Completion, Deferred, Stop},
    shaping::{
        bounded_secs, RuleAction, RuleBook, Shaping, SiteDecision, SiteState, MAX_SHAPING_DURATION,
    },
    store::{ShapingStore, SiteAnswer},
};

/// The sites' rows are read again after this long (when a message needs them).
const SITES_TTL: Duration = Duration::from_secs(1);
/// The rules are read again after this long (when a failure needs them).
const RULES_TTL: Duration = Duration::from_secs(5);
/// How long a message waits when its site could not be asked.
const STORE_ERROR_DEFER: Duration = Duration::from_secs(5);
/// The spacing of deferred messages of a site without a rate (a cap, a suspension).
const MIN_SPACING: Duration = Duration::from_millis(20);

/// A message allowed to its site; a capped site's slot is freed by [`Shaper::leave`].
pub(crate) struct Ticket {
    site: String,
    holder: String,
    token: bool,
    slot: bool,
}

/// Most destinations whose resolved site is remembered; past it the cache starts over.
const RESOLVED_CACHE_MAX: usize = 50_000;

/// A value read from the database, and when.
struct Cached<T> {
    value: T,
    read: Option<Instant>,
    /// A read has succeeded once.
    ever: bool,
}

impl<T> Cached<T> {
    fn fresh(&self, ttl: Duration) -> bool {
        self.read.is_some_and(|at| at.elapsed() < ttl)
    }
}

/// The rules as the store returns them.
type StoredRules = Vec<Result<crate::shaping::ShapingRule, String>>;

/// The process's shaping state.
pub(crate) struct Shaper {
    config: Shaping,
    store: Arc<dyn ShapingStore>,
    clock: Arc<dyn Clock>,
    sites: tokio::sync::Mutex<Cached<HashMap<String, SiteState>>>,
    /// The rules as stored when last read, and their book (compiled once per change).
    rules: tokio::sync::Mutex<Cached<(StoredRules, Arc<RuleBook>)>>,
    resolved: Mutex<HashMap<String, (String, Instant, Duration)>>,
    pacer: Mutex<Pacer>,
    /// The destinations that do not answer, as this process saw them.
    outages: Mutex<Outages>,
    /// The database's clock at the last read of the sites, and when that read came back.
    database_clock: Mutex<Option<(SystemTime, Instant)>>,
}

impl Shaper {
    /// The shaping `config` over `store`, reading time from `clock`.
    pub(crate) fn new(
        config: Shaping,
        store: Arc<dyn ShapingStore>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            config,
            store,
            clock,
            sites: tokio::sync::Mutex::new(Cached {
                value: HashMap::new(),
                read: None,
                ever: false,
            }),
            rules: tokio::sync::Mutex::new(Cached {
                value: (Vec::new(), Arc::default()),
                read: None,
                ever: false,
            }),
            resolved: Mutex::default(),
            pacer: Mutex::default(),
            outages: Mutex::default(),
            database_clock: Mutex::default(),
        }
    }

    /// The site of destination `key`: a configured route, else (with a resolver) the site
    /// it answers, else the key itself.
    pub(crate) async fn site_of(&self, key: &str) -> String {
        if let Some(site) = self.config.static_site(key) {
            return site;
        }
        let Some(resolver) = self.config.resolver.as_ref() else {
            return key.to_owned();
        };
        if let Some((site, at, ttl)) = self.resolved_cache().get(key) {
            if at.elapsed() < *ttl {
                return site.clone();
            }
        }
        let answer = resolver.site(key).await;
        // An answer that is no usable site name leaves the key its own site.
        let site = answer
            .site
            .filter(|s| crate::shaping::check_site(s).is_ok())
            .unwrap_or_else(|| key.to_owned());
        let mut cache = self.resolved_cache();
        if cache.len() >= RESOLVED_CACHE_MAX {
            cache.clear();
        }
        cache.insert(key.to_owned(), (site.clone(), Instant::now(), answer.ttl));
        site
    }

    fn resolved_cache(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, (String, Instant, Duration)>> {
        self.resolved.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The row of `site` as last read (read again when older than [`SITES_TTL`]); `None`
    /// when the site has nothing in force. A failed read keeps the last rows; before the
    /// first read succeeds, the error (nothing may be sent past limits never read).
    async fn site_row(&self, site: &str) -> Result<Option<SiteState>, String> {
        let mut sites = self.sites.lock().await;
        if !sites.fresh(SITES_TTL) {
            match self.store.sites_in_force(self.clock.database_now()).await {
                Ok(read) => {
                    let clock = (read.read_at, Instant::now());
                    *self
                        .database_clock
                        .lock()
                        .unwrap_or_else(|e| e.into_inner()) = Some(clock);
                    sites.value = read
                        .sites
                        .into_iter()
                        .map(|s| (s.site.clone(), s))
                        .collect();
                    sites.ever = true;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read the shaping sites; using the last ones read");
                    if !sites.ever {
                        return Err(e.to_string());
                    }
                }
            }
            sites.read = Some(Instant::now());
        }
        Ok(sites.value.get(site).cloned())
    }

    /// The time `now` stands for in the shaper's own decisions (which sites are in force,
    /// when a deferred message comes back): the time it pins, else the database's clock as
    /// last read with the sites, moved on by the time since.
    fn time_of(&self, now: Now) -> SystemTime {
        match now {
            Now::At(t) => t,
            Now::Database => {
                let read = *self
                    .database_clock
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                // Only before the first read of the sites (which every message waits for)
                // is the process's clock all there is.
                read.map_or_else(|| self.clock.now(), |(at, when)| at + when.elapsed())
            }
        }
    }

    /// Asks `site` for one more message (`id`, held by `holder`): `Ok(None)` when the site
    /// has nothing in force (no database work), a ticket when granted, else the deferral to
    /// return. A message whose token is due within a gap of the site (at most a second) and
    /// that is next in the process's line for the site waits for it here ([`Pacer`]).
    pub(crate) async fn enter(
        &self,
        site: &str,
        id: &str,
        holder: &str,
        lease: Duration,
    ) -> Result<Option<Ticket>, Stop> {
        let mut waited = Duration::ZERO;
        loop {
            match self.ask(site, id, holder, lease, waited).await {
                Asked::Here(until) => {
                    // Counted as waiting until it asks again (or is dropped meanwhile).
                    let _waiting = Waiting { shaper: self, site };
                    let from = tokio::time::Instant::now();
                    tokio::time::sleep_until(until).await;
                    waited += from.elapsed();
                }
                Asked::Done(done) => {
                    if done.is_ok() {
                        self.pacer().forget(id);
                    }
                    return done;
                }
            }
        }
    }

    /// One ask of [`enter`](Self::enter), `waited` into the message's wait here.
    async fn ask(
        &self,
        site: &str,
        id: &str,
        holder: &str,
        lease: Duration,
        waited: Duration,
    ) -> Asked {
        // The wait is from here, not from the answer: the ask's own time is not lost.
        let asked_at = tokio::time::Instant::now();
        let row = match self.site_row(site).await {
            Ok(Some(row)) => row,
            Ok(None) => return Asked::Done(Ok(None)),
            Err(e) => {
                let why = format!("cannot read the limits of site `{site}`: {e}");
                return Asked::Done(Err(deferred_for(STORE_ERROR_DEFER, why)));
            }
        };
        let database_now = self.clock.database_now();
        let now = self.time_of(database_now);
        let in_force = row.limit.per_second.is_some()
            || row.limit.max_concurrent.is_some()
            || row.slowed_at(now)
            || row.suspended_at(now);
        if !in_force {
            return Asked::Done(Ok(None));
        }
        let answer = self
            .store
            .take_site(site, holder, database_now, lease)
            .await;
        Asked::Done(match answer {
            Ok(None) => Ok(None),
            Ok(Some(SiteAnswer {
                decision: SiteDecision::Granted { token, slot, .. },
                ..
            })) => Ok(Some(Ticket {
                site: site.to_owned(),
                holder: holder.to_owned(),
                token,
                slot,
            })),
            Ok(Some(SiteAnswer {
                decision: SiteDecision::Wait { wait, why },
                at,
            })) => {
                // The wait is from the time the site was asked at.
                let gap = spacing(&row, at);
                match self.pacer().no_room(site, id, at, wait, gap, waited) {
                    Pace::Here(wait) => return Asked::Here(asked_at + wait),
                    Pace::Defer(due) => {
                        count_deferred(site, "limit");
                        Err(deferred(due, why))
                    }
                }
            }
            Err(e) => Err(deferred_for(
                STORE_ERROR_DEFER,
                format!("cannot ask site `{site}` for room: {e}"),
            )),
        })
    }

    fn pacer(&self) -> std::sync::MutexGuard<'_, Pacer> {
        self.pacer.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `send` (the message of `ticket`), renewing the ticket's slot every third of
    /// `lease` while it runs, so a slow send keeps its place under the cap.
    pub(crate) async fn hold<F: std::future::Future>(
        &self,
        ticket: &Ticket,
        lease: Duration,
        send: F,
    ) -> F::Output {
        if !ticket.slot {
            return send.await;
        }
        tokio::pin!(send);
        let every = (lease / 3).max(Duration::from_secs(1));
        loop {
            tokio::select! {
                out = &mut send => return out,
                _ = tokio::time::sleep(every) => {
                    let now = self.clock.database_now();
                    if let Err(e) = self.store.renew_site(&ticket.site, &ticket.holder, now, lease).await {
                        tracing::debug!(site = %ticket.site, error = %e, "cannot renew a shaping slot");
                    }
                }
            }
        }
    }

    /// The message of `ticket` ended: its slot (if any) is free; when it was put back
    /// before its side effect (`refund`), its site gets the token back.
    pub(crate) async fn leave(&self, ticket: Ticket, refund: bool) {
        let refund = refund && ticket.token;
        if !ticket.slot && !refund {
            return;
        }
        if let Err(e) = self
            .store
            .release_site(
                &ticket.site,
                &ticket.holder,
                refund,
                self.clock.database_now(),
            )
            .await
        {
            tracing::debug!(
                site = %ticket.site, error = %e,
                "cannot free a shaping slot; it frees itself when its lease runs out"
            );
        }
    }

    /// Lets the failure of an attempt to `site` act on the site. A failure the handler
    /// classed as "slow this destination" slows the site at once and defers the message
    /// (not an attempt). Otherwise the rules see it: a matching slow or suspend rule defers
    /// the message (not an attempt) and, at its threshold, acts on the site; a bounce rule
    /// at its threshold makes the failure permanent.
    pub(crate) async fn after(
        &self,
        site: &str,
        id: &str,
        result: Result<Completion, Stop>,
    ) -> Result<Completion, Stop> {
        let error = match result {
            Ok(done) => {
                self.answered(site);
                return Ok(done);
            }
            Err(error) => error,
        };
        let Stop::Failed(failed) = &error else {
            return Err(error);
        };
        if !failed.from_handler {
            return Err(error);
        }
        if failed.kind == HandlerErrorKind::DestinationDown {
            return Err(self.destination_down(site, id, &failed.reason).await);
        }
        // Any other failure of the handler is an answer of the destination (a snooze is
        // the handler's own decision, not an answer).
        if !matches!(failed.kind, HandlerErrorKind::Snooze(_)) {
            self.answered(site);
        }
        if let HandlerErrorKind::SlowDown { one_per, during } = failed.kind {
            return Err(self
                .slow_down(site, id, &failed.reason, one_per, during)
                .await);
        }
        // A permanent refusal still tells the rules about the site, but the message keeps
        // its fate (a dead letter), never an endless free deferral.
        let permanent = matches!(
            failed.kind,
            HandlerErrorKind::Permanent | HandlerErrorKind::Suppress(_)
        );
        let book = self.rules().await;
        let Some(rule) = book.find(site, &failed.reason) else {
            return Err(error);
        };
        let database_now = self.clock.database_now();
        let now = self.time_of(database_now);
        let hits = match self
            .store
            .record_hit(site, &rule.name, database_now, rule.window)
            .await
        {
            Ok(hits) => hits,
            Err(e) => {
                tracing::warn!(site, rule = %rule.name, error = %e, "cannot record a shaping rule's match");
                0
            }
        };
        let reached = hits >= rule.threshold;
        if reached && rule.action != RuleAction::Bounce {
            let reason = format!("rule `{}`: {}", rule.name, excerpt(&failed.reason));
            let by = format!("rule `{}`", rule.name);
            self.act(site, &rule.name, &rule.action, &reason, &by, database_now)
                .await;
        }
        if permanent {
            return Err(error);
        }
        match rule.action {
            RuleAction::Bounce if reached => Err(Stop::Failed(AttemptFailed {
                kind: HandlerErrorKind::Permanent,
                reason: format!(
                    "{} (bounced by shaping rule `{}`)",
                    failed.reason, rule.name
                ),
                from_handler: true,
            })),
            RuleAction::Bounce => Err(error),
            RuleAction::Slow { per_second, .. } => {
                count_deferred(site, "reply");
                let gap = bounded_secs(1.0 / per_second).max(MIN_SPACING);
                let due = self.spread(site, id, now, gap, gap);
                Err(deferred(due, throttled(&failed.reason, &rule.name, site)))
            }
            RuleAction::Suspend { duration } => {
                count_deferred(site, "reply");
                let wait = if reached {
                    duration
                } else {
                    Duration::from_secs(1)
                };
                let due = self.spread(site, id, now, wait, MIN_SPACING);
                Err(deferred(due, throttled(&failed.reason, &rule.name, site)))
            }
        }
    }

    /// The handler classed a failure as "slow this destination": `site` is slowed to one
    /// message per `one_per` (kept between a millisecond and a day) for `during` (at most
    /// a year) in every process, and message `id` is deferred one gap ahead, not charged
    /// an attempt.
    async fn slow_down(
        &self,
        site: &str,
        id: &str,
        reason: &str,
        one_per: Duration,
        during: Duration,
    ) -> Stop {
        let one_per = one_per.clamp(Duration::from_millis(1), Duration::from_secs(86_400));
        let action = RuleAction::Slow {
            per_second: 1.0 / one_per.as_secs_f64(),
            duration: during.clamp(Duration::from_secs(1), MAX_SHAPING_DURATION),
        };
        let database_now = self.clock.database_now();
        let now = self.time_of(database_now);
        let why = format!("the destination asked: {}", excerpt(reason));
        self.act(
            site,
            "slow_down",
            &action,
            &why,
            "the destination",
            database_now,
        )
        .await;
        count_deferred(site, "reply");
        let gap = one_per.max(MIN_SPACING);
        let due = self.spread(site, id, now, gap, gap);
        deferred(
            due,
            format!(
                "{reason} (site `{site}` slowed at the destination's request: deferred, not \
                 an attempt)"
            ),
        )
    }

    /// The destination `site` answered: an outage this process saw ends.
    fn answered(&self, site: &str) {
        let ended = self
            .outages
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .answered(site, Instant::now());
        if let Some(lasted) = ended {
            tracing::info!(
                site,
                down_for = %crate::units::duration(Duration::from_secs(lasted.as_secs())),
                "the destination answers again; its waiting messages go out"
            );
        }
    }

    /// The handler found destination `site` not answering (message `id`): the site is
    /// suspended for the outage's probe interval in every process (not again while a
    /// suspension lasts), and the message waits for its end, not charged an attempt.
    async fn destination_down(&self, site: &str, id: &str, reason: &str) -> Stop {
        let down = self
            .outages
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .down(site, Instant::now());
        let database_now = self.clock.database_now();
        let now = self.time_of(database_now);
        let why = format!("the destination does not answer: {}", excerpt(reason));
        let wait = match down {
            Down::Began { probe } | Down::ProbeFailed { probe, .. } => {
                let action = RuleAction::Suspend { duration: probe };
                let news = self
                    .act(
                        site,
                        "destination_down",
                        &action,
                        &why,
                        "the destination",
                        database_now,
                    )
                    .await;
                match down {
                    Down::Began { .. } => tracing::warn!(
                        site, reason = %excerpt(reason), news,
                        "a destination does not answer; its messages wait without using \
                         attempts, probing it after 1s, then at doubling intervals up to 1m"
                    ),
                    Down::ProbeFailed { lasted, .. } => tracing::debug!(
                        site,
                        ?probe,
                        ?lasted,
                        "the destination still does not answer"
                    ),
                    Down::During { .. } => {}
                }
                probe
            }
            Down::During { left } => left,
        };
        count_deferred(site, "down");
        let due = self.spread(site, id, now, wait, MIN_SPACING);
        deferred(
            due,
            format!(
                "{reason} (destination `{site}` does not answer: waiting for its next probe, \
                 not an attempt)"
            ),
        )
    }

    /// Applies `action` to `site` with `reason` (what `by` — a rule, or the destination
    /// itself — said), counted under `label`. A store error is logged; the action is tried
    /// again at the next failure.
    async fn act(
        &self,
        site: &str,
        label: &str,
        action: &RuleAction,
        reason: &str,
        by: &str,
        now: Now,
    ) -> bool {
        match self.store.act_on_site(site, action, reason, now).await {
            Ok(news) => {
                if news {
                    metrics::counter!(
                        names::SHAPING_ACTIONS,
                        "site" => site.to_owned(),
                        "rule" => label.to_owned()
                    )
                    .increment(1);
                }
                if news && label != "destination_down" {
                    // (A destination's outage is told by the caller, in its own words.)
                    tracing::warn!(
                        site, by, %action, reason,
                        "the receiving site says we send too fast; shaping it"
                    );
                } else {
                    tracing::debug!(site, by, "shaping extended");
                }
                // Seen by this process at once, by the others within a second.
                self.sites.lock().await.read = None;
                news
            }
            Err(e) => {
                tracing::warn!(
                    site, by, error = %e,
                    "cannot record a shaping action; it is tried again at the next failure"
                );
                false
            }
        }
    }

    /// The rules as last read (read again when older than [`RULES_TTL`], compiled again
    /// only when they changed; a failed read keeps the last ones, and the configured ones
    /// until the first read).
    async fn rules(&self) -> Arc<RuleBook> {
        let mut rules = self.rules.lock().await;
        if !rules.fresh(RULES_TTL) {
            match self.store.shaping_rules().await {
                Ok(stored) if rules.ever && stored == rules.value.0 => {}
                Ok(stored) => {
                    let mut all: Vec<_> = stored.iter().filter_map(|r| r.clone().ok()).collect();
                    all.sort_by(|a, b| a.name.cmp(&b.name));
                    let (book, invalid) = RuleBook::new(all);
                    let bad = stored.iter().filter_map(|r| r.clone().err());
                    for e in bad.chain(invalid) {
                        tracing::warn!("shaping rule skipped: {e}");
                    }
                    rules.value = (stored, Arc::new(book));
                    rules.ever = true;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read the shaping rules; using the last ones read");
                    if rules.read.is_none() {
                        let book = RuleBook::new(self.config.rules.clone()).0;
                        rules.value.1 = Arc::new(book);
                    }
                }
            }
            rules.read = Some(Instant::now());
        }
        Arc::clone(&rules.value.1)
    }

    /// When message `id` of `site`, deferred at `now` for at least `wait`, comes back: in
    /// the process's line for the site, `gap` after the one deferred before it.
    fn spread(
        &self,
        site: &str,
        id: &str,
        now: SystemTime,
        wait: Duration,
        gap: Duration,
    ) -> SystemTime {
        self.pacer().defer(site, id, now, wait, gap)
    }
}

/// A message waiting here for its site ([`Pace::Here`]), until dropped.
struct Waiting<'a> {
    shaper: &'a Shaper,
    site: &'a str,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.shaper.pacer().done(self.site);
    }
}

/// How one ask of a site ended.
enum Asked {
    /// Wait here until then, then ask again.
    Here(tokio::time::Instant),
    /// Granted, nothing in force, or the deferral to return.
    Done(Result<Option<Ticket>, Stop>),
}

/// The gap between deferred messages of a site: its rate's, else [`MIN_SPACING`].
fn spacing(row: &SiteState, now: SystemTime) -> Duration {
    row.rate_at(now)
        .map(|r| bounded_secs(1.0 / r))
        .unwrap_or(MIN_SPACING)
        .max(MIN_SPACING)
}

/// Counts a message shaping deferred at `site` (`why`: `limit` or `reply`).
fn count_deferred(site: &str, why: &'static str) {
    metrics::counter!(names::SHAPING_DEFERRED, "site" => site.to_owned(), "why" => why)
        .increment(1);
}

fn deferred(due: SystemTime, reason: String) -> Stop {
    Stop::Deferred(Deferred {
        until: Some(Due::At(due)),
        reason,
    })
}

/// A deferral for `wait` from the database's clock at the settlement.
fn deferred_for(wait: Duration, reason: String) -> Stop {
    Stop::Deferred(Deferred {
        until: Some(Due::After(wait)),
        reason,
    })
}

fn throttled(reason: &str, rule: &str, site: &str) -> String {
    format!("{reason} (site `{site}` throttled by shaping rule `{rule}`: deferred, not an attempt)")
}

/// The first 300 bytes of a reply, for logs and the site's row.
fn excerpt(text: &str) -> &str {
    let mut cut = text.len().min(300);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    &text[..cut]
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use futures::future::BoxFuture;

    use super::*;
    use crate::{
        clock::SystemClock,
        error::Error,
        shaping::{ShapingRule, SiteLimit},
        store::SitesInForce,
    };

    /// A store that only holds rules (what the other verbs would do is not asked here).
    #[derive(Default)]
    struct Rules {
        stored: Mutex<Vec<ShapingRule>>,
        reads: AtomicUsize,
    }

    impl ShapingStore for Rules {
        fn configure_sites<'a>(
            &'a self,
            _: &'a [(String, SiteLimit)],
            _: Now,
        ) -> BoxFuture<'a, Result<(), Error>> {
            unimplemented!()
        }
        fn sites(&self, _: Now) -> BoxFuture<'_, Result<Vec<SiteState>, Error>> {
            unimplemented!()
        }
        fn sites_in_force(&self, _: Now) -> BoxFuture<'_, Result<SitesInForce, Error>> {
            unimplemented!()
        }
        fn take_site<'a>(
            &'a self,
            _: &'a str,
            _: &'a str,
            _: Now,
            _: Duration,
        ) -> BoxFuture<'a, Result<Option<SiteAnswer>, Error>> {
            unimplemented!()
        }
        fn release_site<'a>(
            &'a self,
            _: &'a str,
            _: &'a str,
            _: bool,
            _: Now,
        ) -> BoxFuture<'a, Result<(), Error>> {
            unimplemented!()
        }
        fn renew_site<'a>(
            &'a self,
            _: &'a str,
            _: &'a str,
            _: Now,
            _: Duration,
        ) -> BoxFuture<'a, Result<(), Error>> {
            unimplemented!()
        }
        fn record_hit<'a>(
            &'a self,
            _: &'a str,
            _: &'a str,
            _: Now,
            _: Duration,
        ) -> BoxFuture<'a, Result<u32, Error>> {
            unimplemented!()
        }
        fn act_on_site<'a>(
            &'a self,
            _: &'a str,
            _: &'a RuleAction,
            _: &'a str,
            _: Now,
        ) -> BoxFuture<'a, Result<bool, Error>> {
            unimplemented!()
        }
        fn resume_site<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<bool, Error>> {
            unimplemented!()
        }
        fn shaping_rules(&self) -> BoxFuture<'_, Result<Vec<Result<ShapingRule, String>>, Error>> {
            self.reads.fetch_add(1, Ordering::SeqCst);
            let rules = self
                .stored
                .lock()
                .unwrap()
                .iter()
                .cloned()
                .map(Ok)
                .collect();
            Box::pin(async move { Ok(rules) })
        }
        fn put_rules<'a>(&'a self, _: &'a [ShapingRule]) -> BoxFuture<'a, Result<(), Error>> {
            unimplemented!()
        }
        fn remove_rule<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<bool, Error>> {
            unimplemented!()
        }
    }

    fn rule(name: &str, pattern: &str) -> ShapingRule {
        ShapingRule::new(name, pattern, RuleAction::Bounce).unwrap()
    }

    /// The rules are read again every few seconds, but compiled only when they changed:
    /// an unchanged read keeps the book it has.
    #[tokio::test]
    async fn rules_are_compiled_once_per_change() {
        let store = Arc::new(Rules::default());
        *store.stored.lock().unwrap() = vec![rule("a", r"\b4\.7\.28\b"), rule("b", "x")];
        let shaper = Shaper::new(Shaping::new(), store.clone(), Arc::new(SystemClock));
        let first = shaper.rules().await;
        assert!(first.find("any", "421 4.7.28").is_some());
        for _ in 0..3 {
            shaper.rules.lock().await.read = None; // as if 5 s passed
            let again = shaper.rules().await;
            assert!(
                Arc::ptr_eq(&first, &again),
                "unchanged rules were compiled again"
            );
        }
        assert_eq!(store.reads.load(Ordering::SeqCst), 4);
        store.stored.lock().unwrap()[1] = rule("b", "y");
        shaper.rules.lock().await.read = None;
        let changed = shaper.rules().await;
        assert!(!Arc::ptr_eq(&first, &changed));
        assert_eq!(changed.find("any", "y").unwrap().name, "b");
    }
}
