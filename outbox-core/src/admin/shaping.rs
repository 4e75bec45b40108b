//! Traffic shaping from code: the sites and what the rules did to them, and the rules
//! themselves, changed at runtime in every process.

use std::sync::Arc;

use crate::{
    clock::Clock,
    error::Error,
    shaping::MAX_SHAPING_RULES,
    store::{Backend, ShapingRule, SiteState},
};

/// Steer traffic shaping from any process on the database, with or without workers
/// running. A rule added or removed here is used by every running outbox within 5 s; a
/// resumed site is sent to again within a second.
#[derive(Clone)]
pub struct ShapingAdmin<B> {
    backend: B,
    clock: Arc<dyn Clock>,
}

impl<B: Backend> ShapingAdmin<B> {
    pub(crate) fn new(backend: B, clock: Arc<dyn Clock>) -> Self {
        Self { backend, clock }
    }

    /// Every site with a row, by name: its configured limits, tokens, messages in flight
    /// (live slots by the database's clock), and the slowdown or suspension a rule put on it
    /// (with the rule and reply).
    pub async fn sites(&self) -> Result<Vec<SiteState>, Error> {
        self.backend.sites(self.clock.database_now()).await
    }

    /// Ends the slowdown and suspension of `site` (the receiver is known to take mail
    /// again); false when the site has no row.
    pub async fn resume(&self, site: &str) -> Result<bool, Error> {
        self.backend.resume_site(site.trim()).await
    }

    /// Every stored rule, by name; a row that does not read as a rule (edited by hand) is
    /// an `Err` that names it and says what is wrong.
    ///
    /// Patterns are not compiled here (a listing stays fast): they are compiled when a rule
    /// is added ([`put_rule`](Self::put_rule)) and by the workers, which skip one that does
    /// not compile with a warning that names it.
    pub async fn rules(&self) -> Result<Vec<Result<ShapingRule, String>>, Error> {
        self.backend.shaping_rules().await
    }

    /// Adds `rule`, or replaces the rule of the same name. A rule that cannot work is
    /// refused with the reason ([`ShapingRule::check`]: its pattern compiles within
    /// [`MAX_PATTERN_SIZE`](crate::shaping::MAX_PATTERN_SIZE)), and so is a new rule when
    /// [`MAX_SHAPING_RULES`] are stored already.
    pub async fn put_rule(&self, rule: &ShapingRule) -> Result<(), Error> {
        rule.check().map_err(Error::Config)?;
        let stored = self.backend.shaping_rules().await?;
        let names = stored
            .iter()
            .map(|r| match r {
                Ok(r) => r.name.as_str(),
                Err(_) => "",
            })
            .collect::<Vec<_>>();
        if !names.contains(&rule.name.as_str()) && stored.len() >= MAX_SHAPING_RULES {
            return Err(Error::Config(format!(
                "cannot add rule `{}`: {} shaping rules are stored and at most \
                 {MAX_SHAPING_RULES} may be (MAX_SHAPING_RULES); remove one first \
                 (`outbox shaping remove-rule NAME`) or merge patterns into fewer rules",
                rule.name,
                stored.len()
            )));
        }
        self.backend.put_rules(std::slice::from_ref(rule)).await
    }

    /// Removes the rule `name`; false when there was none. A rule of an outbox's
    /// configuration comes back when that outbox starts again.
    pub async fn remove_rule(&self, name: &str) -> Result<bool, Error> {
        self.backend.remove_rule(name.trim()).await
    }
}
