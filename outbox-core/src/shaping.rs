//! Per-destination traffic shaping: the records and the pure rules behind it.
//!
//! Messages to one receiving site (a destination key such as an email's recipient domain or
//! a webhook's host, or a group of keys a kind rolls up, such as every domain whose mail
//! Google hosts) are limited on their own: a token bucket, a cap on messages in flight at
//! once, and failures that slow or suspend the site. The state lives in the database
//! (`outbox_sites`) so every process shares it; which site a key belongs to, how a site's row
//! grants a message and which rule a failure matches are decided here, without I/O, and
//! pinned by unit tests. The kinds bring their presets (email's provider sites, reply rules
//! and MX rollup live with the email kind). A leaf: it names nothing else of the
//! crate, so the storage port and the worker layer both build on it.

use std::{
    collections::HashMap,
    fmt,
    sync::Arc,
    time::{Duration, SystemTime},
};

use futures::future::BoxFuture;

/// Longest site name, rule name or pattern kept.
pub const MAX_SHAPING_NAME_LEN: usize = 200;

/// Longest pattern of a rule.
pub const MAX_PATTERN_LEN: usize = 1_000;

/// Largest compiled form of a rule's pattern, in bytes: 1 MiB. A short pattern can compile
/// to megabytes, and take that long to compile: `\w{60}` (Unicode word characters) is
/// 4 MiB, `(?-u)\w{60}` (ASCII ones) a few KiB, `\w{10}` half a MiB.
pub const MAX_PATTERN_SIZE: usize = 1024 * 1024;

/// Most rules that may be stored (an outbox uses the first ones by name past it).
pub const MAX_SHAPING_RULES: usize = 100;

/// Longest slowdown, suspension or rule window (a year and a day).
pub const MAX_SHAPING_DURATION: Duration = Duration::from_secs(366 * 86_400);

/// Slowest rate a site or a rule may set: one message a day.
pub const MIN_SHAPING_RATE: f64 = 1.0 / 86_400.0;

/// `secs` as a duration, at most [`MAX_SHAPING_DURATION`] (and 0 for NaN or less).
pub fn bounded_secs(secs: f64) -> Duration {
    if secs.is_nan() || secs <= 0.0 {
        return Duration::ZERO;
    }
    Duration::try_from_secs_f64(secs)
        .unwrap_or(MAX_SHAPING_DURATION)
        .min(MAX_SHAPING_DURATION)
}

/// The limits of one site. Without a rate the site takes no tokens; without a cap any number
/// of its messages may be sent at once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SiteLimit {
    /// Messages per second, if limited.
    pub per_second: Option<f64>,
    /// Most tokens saved up (messages that may start at once after a quiet spell).
    pub burst: f64,
    /// Most messages of the site being sent at once, across processes.
    pub max_concurrent: Option<u32>,
}

impl SiteLimit {
    /// No rate and no cap (a rule may still slow or suspend the site).
    pub const fn unlimited() -> Self {
        Self {
            per_second: None,
            burst: 1.0,
            max_concurrent: None,
        }
    }

    /// `n` messages per `period`, burst 1, no cap.
    pub fn per(n: f64, period: Duration) -> Self {
        Self {
            per_second: Some(n / period.as_secs_f64()),
            ..Self::unlimited()
        }
    }

    /// At most `n` messages of the site sent at once, no rate.
    pub const fn concurrent(n: u32) -> Self {
        Self {
            max_concurrent: Some(n),
            ..Self::unlimited()
        }
    }

    /// These limits with at most `n` messages at once.
    pub fn max_concurrent(mut self, n: u32) -> Self {
        self.max_concurrent = Some(n);
        self
    }

    /// These limits with up to `burst` tokens saved up.
    pub fn burst(mut self, burst: u32) -> Self {
        self.burst = f64::from(burst);
        self
    }

    /// Explains limits that cannot work.
    pub fn check(&self) -> Result<(), String> {
        if let Some(rate) = self.per_second {
            if !(rate.is_finite() && rate >= MIN_SHAPING_RATE) {
                return Err(format!(
                    "the rate must be at least one message a day, not {rate} per second"
                ));
            }
        }
        if !(self.burst.is_finite() && self.burst >= 1.0) {
            return Err(format!("the burst must be at least 1, not {}", self.burst));
        }
        if self.max_concurrent == Some(0) {
            return Err("a cap of 0 messages at once would never send; use at least 1".into());
        }
        Ok(())
    }
}

/// A site's row as stored: its limits and what the rules did to it.
#[derive(Debug, Clone, PartialEq)]
pub struct SiteState {
    /// The site's name (a destination key such as `example.com`, or a site name a route or
    /// a resolver gives).
    pub site: String,
    /// Its configured limits (unlimited for a site a rule created).
    pub limit: SiteLimit,
    /// Tokens as of `updated_at`.
    pub tokens: f64,
    /// When the tokens were counted.
    pub updated_at: SystemTime,
    /// A rule's rate, in force until `slowed_until`.
    pub slow_per_second: Option<f64>,
    /// When the slowdown ends.
    pub slowed_until: Option<SystemTime>,
    /// Nothing is sent to the site before this.
    pub suspended_until: Option<SystemTime>,
    /// The rule and reply behind the last slowdown or suspension.
    pub reason: Option<String>,
    /// True when the limits come from configuration (a rule's site has none).
    pub configured: bool,
    /// Messages being sent to it now (live slots), when read with them.
    pub in_flight: u32,
}

/// What a site's row says about one more message at `now`.
#[derive(Debug, Clone, PartialEq)]
pub enum SiteDecision {
    /// Send it: the row's tokens become `tokens` as of `now`; `slot` when the site caps
    /// messages in flight (the message holds one until it ends).
    Granted {
        /// Tokens left.
        tokens: f64,
        /// A token was spent (a rate is in force).
        token: bool,
        /// Take a slot.
        slot: bool,
    },
    /// Not before `wait` from now, for `why`.
    Wait {
        /// How long.
        wait: Duration,
        /// Why, in words recorded with the message.
        why: String,
    },
}

/// How long to wait for a free slot before asking again.
pub const SLOT_WAIT: Duration = Duration::from_millis(100);

impl SiteState {
    /// The rate in force at `now` (a rule's slowdown, else the configured rate).
    pub fn rate_at(&self, now: SystemTime) -> Option<f64> {
        match (self.slow_per_second, self.slowed_until) {
            (Some(slow), Some(until)) if now < until => Some(slow),
            _ => self.limit.per_second,
        }
    }

    /// True while a rule's slowdown is in force.
    pub fn slowed_at(&self, now: SystemTime) -> bool {
        self.slowed_until.is_some_and(|u| now < u) && self.slow_per_second.is_some()
    }

    /// True while a rule's suspension is in force.
    pub fn suspended_at(&self, now: SystemTime) -> bool {
        self.suspended_until.is_some_and(|u| now < u)
    }

    /// The tokens at `now`: those saved plus those earned since, capped at the burst (1
    /// while slowed, so a slowdown never starts with a burst).
    pub fn tokens_at(&self, now: SystemTime) -> f64 {
        let Some(rate) = self.rate_at(now) else {
            return self.tokens;
        };
        let cap = if self.slowed_at(now) {
            1.0
        } else {
            self.limit.burst
        };
        let earned = now
            .duration_since(self.updated_at)
            .unwrap_or_default()
            .as_secs_f64();
        (self.tokens + earned * rate).min(cap)
    }

    /// Whether one more message may start at `now`, with `in_flight` live slots.
    pub fn decide(&self, now: SystemTime, in_flight: u32) -> SiteDecision {
        if let Some(until) = self.suspended_until.filter(|u| now < *u) {
            return SiteDecision::Wait {
                wait: until
                    .duration_since(now)
                    .unwrap_or_default()
                    .min(MAX_SHAPING_DURATION),
                why: format!(
                    "site `{}` is suspended{}",
                    self.site,
                    self.reason
                        .as_deref()
                        .map(|r| format!(" ({r})"))
                        .unwrap_or_default()
                ),
            };
        }
        let tokens = self.tokens_at(now);
        if let Some(rate) = self.rate_at(now) {
            if tokens < 1.0 {
                let wait = bounded_secs((1.0 - tokens) / rate);
                let slowed = if self.slowed_at(now) { " (slowed)" } else { "" };
                return SiteDecision::Wait {
                    wait,
                    why: format!("site `{}` has no token{slowed} for {wait:.1?}", self.site),
                };
            }
        }
        if let Some(cap) = self.limit.max_concurrent {
            if in_flight >= cap {
                return SiteDecision::Wait {
                    wait: SLOT_WAIT,
                    why: format!("site `{}` has {cap} message(s) in flight", self.site),
                };
            }
        }
        let token = self.rate_at(now).is_some();
        SiteDecision::Granted {
            tokens: if token { tokens - 1.0 } else { self.tokens },
            token,
            slot: self.limit.max_concurrent.is_some(),
        }
    }
}

/// What a rule does to a site once its threshold is reached.
#[derive(Debug, Clone, PartialEq)]
pub enum RuleAction {
    /// Send to the site at most `per_second` for `duration` (burst 1).
    Slow {
        /// The slowed rate.
        per_second: f64,
        /// How long.
        duration: Duration,
    },
    /// Send nothing to the site for `duration`.
    Suspend {
        /// How long.
        duration: Duration,
    },
    /// Give the message up (a dead letter) instead of trying again.
    Bounce,
}

impl RuleAction {
    /// The action's name as stored: `slow`, `suspend` or `bounce`.
    pub fn kind(&self) -> &'static str {
        match self {
            RuleAction::Slow { .. } => "slow",
            RuleAction::Suspend { .. } => "suspend",
            RuleAction::Bounce => "bounce",
        }
    }
}

impl fmt::Display for RuleAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuleAction::Slow {
                per_second,
                duration,
            } => write!(
                f,
                "slow to {} for {}",
                describe_rate(*per_second),
                describe_duration(*duration)
            ),
            RuleAction::Suspend { duration } => {
                write!(f, "suspend for {}", describe_duration(*duration))
            }
            RuleAction::Bounce => f.write_str("bounce"),
        }
    }
}

/// The names the shaping texts have always used for [`units::rate`](crate::units::rate)
/// (`2/s`, `30/min`, `100/h`) and [`units::duration`](crate::units::duration) (`1h 30m`).
pub use crate::units::{duration as describe_duration, rate as describe_rate};

/// A rule that reacts to the replies of receiving servers: when the failure text of a
/// message to a site matches `pattern` `threshold` times within `window`, `action` is
/// applied to that site. Every match of a `slow` or `suspend` rule (below the threshold
/// too) defers its message without using an attempt: the reply was about the rate, not
/// the message.
#[derive(Debug, Clone, PartialEq)]
pub struct ShapingRule {
    /// Its unique name, shown in logs and in the site's reason.
    pub name: String,
    /// The one site it applies to; `None`: every site.
    pub site: Option<String>,
    /// A regular expression (Rust `regex` syntax) searched in the failure text, which
    /// holds the server's reply with its code and enhanced status code.
    pub pattern: String,
    /// What to do.
    pub action: RuleAction,
    /// Matches needed within `window` (1: the first match acts).
    pub threshold: u32,
    /// The window the matches are counted in.
    pub window: Duration,
}

impl ShapingRule {
    /// A rule named `name` that applies `action` at the first reply matching `pattern`,
    /// at any site. Refuses a pattern that is not a valid regular expression.
    pub fn new(name: &str, pattern: &str, action: RuleAction) -> Result<Self, String> {
        let rule = Self {
            name: name.to_owned(),
            site: None,
            pattern: pattern.to_owned(),
            action,
            threshold: 1,
            window: Duration::from_secs(3600),
        };
        rule.check()?;
        Ok(rule)
    }

    /// Only for replies about `site`.
    pub fn at_site(mut self, site: &str) -> Self {
        self.site = Some(site.to_owned());
        self
    }

    /// Acts at the `count`th match within `window` ("3 per hour": `(3, 1 h)`).
    pub fn threshold(mut self, count: u32, window: Duration) -> Self {
        self.threshold = count;
        self.window = window;
        self
    }

    /// Explains a rule that cannot work: [`check_fields`](Self::check_fields), and a
    /// pattern that does not compile within [`MAX_PATTERN_SIZE`].
    pub fn check(&self) -> Result<(), String> {
        self.check_fields()?;
        self.compile().map(drop)
    }

    /// The rule's pattern, compiled (at most [`MAX_PATTERN_SIZE`] bytes of it).
    pub fn compile(&self) -> Result<regex::Regex, String> {
        let name = &self.name;
        regex::RegexBuilder::new(&self.pattern)
            .size_limit(MAX_PATTERN_SIZE)
            .build()
            .map_err(|e| match e {
                regex::Error::CompiledTooBig(_) => format!(
                    "rule `{name}`: the pattern compiles to more than {} MiB \
                     (MAX_PATTERN_SIZE); make it simpler: fewer or smaller repetitions, or \
                     `(?-u)` to match ASCII classes only",
                    MAX_PATTERN_SIZE >> 20
                ),
                e => format!("rule `{name}`: the pattern is not a regular expression: {e}"),
            })
    }

    /// Explains a rule that cannot work, all but its pattern's compiling (which is the
    /// costly part: [`check`](Self::check) does it).
    pub fn check_fields(&self) -> Result<(), String> {
        let name = &self.name;
        if name.is_empty()
            || name.len() > MAX_SHAPING_NAME_LEN
            || name.chars().any(char::is_control)
        {
            return Err(format!(
                "rule name {name:?} must be 1 to {MAX_SHAPING_NAME_LEN} printable characters"
            ));
        }
        if let Some(site) = &self.site {
            check_site(site).map_err(|e| format!("rule `{name}`: {e}"))?;
        }
        if self.pattern.len() > MAX_PATTERN_LEN {
            return Err(format!(
                "rule `{name}`: the pattern is longer than {MAX_PATTERN_LEN} bytes"
            ));
        }
        if self.threshold == 0 {
            return Err(format!(
                "rule `{name}`: the threshold must be at least 1 match"
            ));
        }
        if self.window.is_zero() || self.window > MAX_SHAPING_DURATION {
            return Err(format!(
                "rule `{name}`: the window must be longer than 0 and at most a year"
            ));
        }
        match self.action {
            RuleAction::Slow {
                per_second,
                duration,
            } => {
                if !(per_second.is_finite() && per_second >= MIN_SHAPING_RATE) {
                    return Err(format!(
                        "rule `{name}`: the slowed rate must be positive and at least one \
                         message a day, not {per_second}/s"
                    ));
                }
                if duration.is_zero() || duration > MAX_SHAPING_DURATION {
                    return Err(format!(
                        "rule `{name}`: the slowdown must last longer than 0 and at most a year"
                    ));
                }
            }
            RuleAction::Suspend { duration }
                if duration.is_zero() || duration > MAX_SHAPING_DURATION =>
            {
                return Err(format!(
                    "rule `{name}`: the suspension must last longer than 0 and at most a year"
                ))
            }
            _ => {}
        }
        Ok(())
    }
}

impl fmt::Display for ShapingRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}`: /{}/ at {} → {} (after {} in {})",
            self.name,
            self.pattern,
            self.site.as_deref().unwrap_or("any site"),
            self.action,
            self.threshold,
            describe_duration(self.window)
        )
    }
}

/// Checks a site name: 1 to [`MAX_SHAPING_NAME_LEN`] printable characters without spaces.
pub fn check_site(site: &str) -> Result<(), String> {
    if site.is_empty()
        || site.len() > MAX_SHAPING_NAME_LEN
        || site.chars().any(|c| c.is_control() || c.is_whitespace())
    {
        return Err(format!(
            "site {site:?} must be 1 to {MAX_SHAPING_NAME_LEN} printable characters without spaces"
        ));
    }
    Ok(())
}

/// A destination key as shaping compares it: trimmed and lowercased, 1 to
/// [`MAX_SHAPING_NAME_LEN`] bytes of printable characters without spaces (a key is its own
/// site when nothing routes it). An error says what is wrong with it.
pub fn destination_key(key: &str) -> Result<String, String> {
    let key = key.trim().to_ascii_lowercase();
    if key.is_empty()
        || key.len() > MAX_SHAPING_NAME_LEN
        || key.chars().any(|c| c.is_control() || c.is_whitespace())
    {
        return Err(format!(
            "destination {key:?} must be 1 to {MAX_SHAPING_NAME_LEN} printable characters \
             without spaces (a host name, a domain)"
        ));
    }
    Ok(key)
}

/// Rules compiled once, matched against failure texts.
#[derive(Debug, Clone, Default)]
pub struct RuleBook {
    rules: Vec<(ShapingRule, regex::Regex)>,
}

impl RuleBook {
    /// The rules that work, each pattern compiled once (a stored rule that does not work
    /// is skipped, and named in the second list with why); past [`MAX_SHAPING_RULES`]
    /// rules, the rest are skipped and named too.
    pub fn new(rules: Vec<ShapingRule>) -> (Self, Vec<String>) {
        let mut book = Vec::with_capacity(rules.len().min(MAX_SHAPING_RULES));
        let mut bad = Vec::new();
        for rule in rules {
            if book.len() == MAX_SHAPING_RULES {
                bad.push(format!(
                    "rule `{}`: past the {MAX_SHAPING_RULES} rules an outbox uses",
                    rule.name
                ));
                continue;
            }
            match rule.check_fields().and_then(|()| rule.compile()) {
                Ok(re) => book.push((rule, re)),
                Err(e) => bad.push(e),
            }
        }
        (Self { rules: book }, bad)
    }

    /// The first rule (in name order) for `site` whose pattern is found in `text`.
    pub fn find(&self, site: &str, text: &str) -> Option<&ShapingRule> {
        self.rules
            .iter()
            .filter(|(r, _)| r.site.as_deref().is_none_or(|s| s == site))
            .find(|(_, re)| re.is_match(text))
            .map(|(r, _)| r)
    }
}

/// What a [`SiteResolver`] answered for a destination key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The site the key belongs to; `None`: the key is its own site.
    pub site: Option<String>,
    /// How long the answer holds before the key is resolved again.
    pub ttl: Duration,
}

/// Finds the site of a destination key that no [`route`](Shaping::route) names, for a kind
/// whose destinations roll up into shared sites (email's MX rollup: domains served by the
/// same mail exchangers share one site). Answers are cached per key for their `ttl`.
pub trait SiteResolver: Send + Sync + 'static {
    /// The site of destination `key`. It must not fail: a resolver that cannot tell answers
    /// `site: None` (the key is its own site) with a short `ttl`.
    fn site<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Resolved>;
}

/// Every destination at one site ([`Shaping::one_site`]).
#[derive(Debug)]
struct OneSite(String);

impl SiteResolver for OneSite {
    fn site<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Resolved> {
        Box::pin(async move {
            Resolved {
                site: Some(self.0.clone()),
                ttl: Duration::from_secs(3600),
            }
        })
    }
}

/// The traffic shaping of an outbox: sites with their limits, which destinations belong to
/// which site, and the rules that react to failures.
///
/// Each message of a type that names a destination
/// ([`OutboxMessage::destination`](crate::OutboxMessage::destination): for an email its
/// recipient's domain, for a webhook its endpoint's host) is shaped by its site, found in
/// order: the site a [`route`](Self::route) entry names; with a [`SiteResolver`] (email's MX
/// rollup), the site it answers; else the destination key itself. Only sites with configured
/// limits or a rule's action in force are shaped; messages to any other destination go at
/// full speed. The message kinds ship presets (email: the large mailbox providers' sites and
/// reply rules).
#[derive(Clone, Default)]
pub struct Shaping {
    pub(crate) sites: Vec<(String, SiteLimit)>,
    pub(crate) routes: HashMap<String, String>,
    pub(crate) rules: Vec<ShapingRule>,
    pub(crate) resolver: Option<Arc<dyn SiteResolver>>,
    pub(crate) problems: Vec<String>,
}

impl fmt::Debug for Shaping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shaping")
            .field("sites", &self.sites)
            .field("routes", &self.routes.len())
            .field("rules", &self.rules)
            .field("resolver", &self.resolver.is_some())
            .finish()
    }
}

impl Shaping {
    /// No sites and no rules: every destination at full speed until configured.
    pub fn new() -> Self {
        Self::default()
    }

    /// Limits `site` (a destination key, or a site name that [`route`](Self::route)
    /// entries lead to); replaces earlier limits of the same site. A bad name or limit is
    /// reported by [`problems`](Self::problems) and refused when the outbox starts.
    pub fn site(mut self, site: &str, limit: SiteLimit) -> Self {
        let site = site.trim().to_ascii_lowercase();
        if let Err(e) = check_site(&site).and_then(|()| limit.check()) {
            self.problems.push(format!("shaping site `{site}`: {e}"));
        }
        self.sites.retain(|(s, _)| *s != site);
        self.sites.push((site, limit));
        self
    }

    /// Shapes messages whose destination key is `key` under the limits of `site` (several
    /// keys may share one). Keys are compared trimmed and lowercased
    /// ([`destination_key`]); a bad key or site is reported by
    /// [`problems`](Self::problems).
    pub fn route(mut self, key: &str, site: &str) -> Self {
        let site = site.trim().to_ascii_lowercase();
        let key = match destination_key(key) {
            Ok(key) => key,
            Err(e) => {
                self.problems.push(format!("shaping route: {e}"));
                key.trim().to_ascii_lowercase()
            }
        };
        if let Err(e) = check_site(&site) {
            self.problems.push(format!("shaping route `{key}`: {e}"));
        }
        self.routes.insert(key, site);
        self
    }

    /// Adds (or replaces, by name) a rule; configured rules are written to the database at
    /// start, beside those added at runtime.
    pub fn rule(mut self, rule: ShapingRule) -> Self {
        if let Err(e) = rule.check() {
            self.problems.push(e);
        }
        self.rules.retain(|r| r.name != rule.name);
        self.rules.push(rule);
        if self.rules.len() == MAX_SHAPING_RULES + 1 {
            self.problems.push(format!(
                "shaping: more than {MAX_SHAPING_RULES} rules (MAX_SHAPING_RULES); merge \
                 patterns into fewer rules"
            ));
        }
        self
    }

    /// Puts every destination key that no [`route`](Self::route) names at the one site
    /// `site` (a resolver that always answers it): for messages that all go through one
    /// intermediary that paces delivery itself — email through a provider's HTTP API. The
    /// intermediary's "too fast" answers ([`HandlerError::slow_down`](crate::HandlerError::slow_down))
    /// then slow that one site, and every message waits for room; give the site a
    /// [`limit`](Self::site) to stay under the intermediary's rate from the start.
    pub fn one_site(mut self, site: &str) -> Self {
        let site = site.trim().to_ascii_lowercase();
        if let Err(e) = check_site(&site) {
            self.problems
                .push(format!("shaping one_site `{site}`: {e}"));
        }
        self.resolver = Some(Arc::new(OneSite(site)));
        self
    }

    /// Resolves the site of destination keys that no route names (email's MX rollup).
    pub fn resolver(mut self, resolver: Arc<dyn SiteResolver>) -> Self {
        self.resolver = Some(resolver);
        self
    }

    /// The configured sites and their limits.
    pub fn sites(&self) -> &[(String, SiteLimit)] {
        &self.sites
    }

    /// The configured rules.
    pub fn rules(&self) -> &[ShapingRule] {
        &self.rules
    }

    /// Settings that cannot work, one line each.
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    /// The site a [`route`](Self::route) entry names for destination `key`, without asking
    /// the resolver.
    pub fn static_site(&self, key: &str) -> Option<String> {
        self.routes.get(key).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_site_puts_every_unrouted_destination_at_it() {
        let s = Shaping::new()
            .route("special.example", "own")
            .one_site(" API:SES ");
        assert!(s.problems().is_empty(), "{:?}", s.problems());
        let resolver = s.resolver.clone().expect("a resolver");
        let answer = futures::executor::block_on(resolver.site("mail.example"));
        assert_eq!(answer.site.as_deref(), Some("api:ses"));
        assert_eq!(s.static_site("special.example").as_deref(), Some("own"));
        let bad = Shaping::new().one_site("");
        assert_eq!(bad.problems().len(), 1, "{:?}", bad.problems());
    }

    fn at(secs: f64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs_f64(secs)
    }

    fn state(limit: SiteLimit) -> SiteState {
        SiteState {
            site: "big.example".into(),
            limit,
            tokens: limit.burst,
            updated_at: at(1000.0),
            slow_per_second: None,
            slowed_until: None,
            suspended_until: None,
            reason: None,
            configured: true,
            in_flight: 0,
        }
    }

    #[test]
    fn a_rate_spends_tokens_and_says_when_the_next_is_due() {
        let s = state(SiteLimit::per(2.0, Duration::from_secs(1)).burst(2));
        assert_eq!(
            s.decide(at(1000.0), 0),
            SiteDecision::Granted {
                tokens: 1.0,
                token: true,
                slot: false
            }
        );
        let empty = SiteState { tokens: 0.0, ..s };
        match empty.decide(at(1000.25), 0) {
            SiteDecision::Wait { wait, .. } => {
                assert!((wait.as_secs_f64() - 0.25).abs() < 1e-9, "{wait:?}")
            }
            other => panic!("{other:?}"),
        }
        // Saved tokens stop at the burst.
        assert_eq!(empty.tokens_at(at(2000.0)), 2.0);
    }

    #[test]
    fn no_rate_takes_no_token_and_a_cap_counts_slots() {
        let s = state(SiteLimit::concurrent(2));
        assert_eq!(
            s.decide(at(1000.0), 1),
            SiteDecision::Granted {
                tokens: 1.0,
                token: false,
                slot: true
            }
        );
        assert!(matches!(
            s.decide(at(1000.0), 2),
            SiteDecision::Wait { wait, .. } if wait == SLOT_WAIT
        ));
        let free = state(SiteLimit::unlimited());
        assert!(matches!(
            free.decide(at(1000.0), 99),
            SiteDecision::Granted { slot: false, .. }
        ));
    }

    #[test]
    fn a_slowdown_replaces_the_rate_with_burst_one_until_it_ends() {
        let mut s = state(SiteLimit::per(100.0, Duration::from_secs(1)).burst(50));
        s.slow_per_second = Some(0.5);
        s.slowed_until = Some(at(1060.0));
        s.tokens = 0.0;
        // Slowed: 0.5/s, and never more than one token saved.
        assert_eq!(s.rate_at(at(1010.0)), Some(0.5));
        assert_eq!(s.tokens_at(at(1010.0)), 1.0);
        match s.decide(at(1001.0), 0) {
            SiteDecision::Wait { wait, why } => {
                assert!((wait.as_secs_f64() - 1.0).abs() < 1e-9);
                assert!(why.contains("slowed"), "{why}");
            }
            other => panic!("{other:?}"),
        }
        // After it: the configured rate and burst again.
        assert_eq!(s.rate_at(at(1060.0)), Some(100.0));
        assert_eq!(s.tokens_at(at(1061.0)), 50.0);
        // A rule's site without configured limits is free again once the slowdown ends.
        let mut r = state(SiteLimit::unlimited());
        r.slow_per_second = Some(1.0);
        r.slowed_until = Some(at(1060.0));
        r.tokens = 0.0;
        assert!(matches!(r.decide(at(1000.5), 0), SiteDecision::Wait { .. }));
        assert!(matches!(
            r.decide(at(1060.0), 0),
            SiteDecision::Granted { .. }
        ));
    }

    #[test]
    fn a_suspension_waits_until_it_ends_whatever_the_tokens() {
        let mut s = state(SiteLimit::unlimited());
        s.suspended_until = Some(at(1100.0));
        s.reason = Some("rule `big-deferred`".into());
        match s.decide(at(1040.0), 0) {
            SiteDecision::Wait { wait, why } => {
                assert_eq!(wait, Duration::from_secs(60));
                assert!(
                    why.contains("suspended") && why.contains("big-deferred"),
                    "{why}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            s.decide(at(1100.0), 0),
            SiteDecision::Granted { .. }
        ));
    }

    #[test]
    fn rules_match_replies_for_their_site_in_order() {
        let slow = RuleAction::Slow {
            per_second: 1.0,
            duration: Duration::from_secs(60),
        };
        let (book, bad) = RuleBook::new(vec![
            ShapingRule::new("a-big", r"\b4\.7\.28\b", slow.clone())
                .unwrap()
                .at_site("big"),
            ShapingRule::new("b-any", r"rate limited", RuleAction::Bounce).unwrap(),
            ShapingRule {
                pattern: "(".into(),
                ..ShapingRule::new("c-broken", "x", RuleAction::Bounce).unwrap()
            },
        ]);
        assert_eq!(bad.len(), 1);
        assert!(bad[0].contains("c-broken"), "{bad:?}");
        let reply = "x@big.example: 421 4.7.28 [1.2.3.4] Our system has detected an unusual rate";
        assert_eq!(book.find("big", reply).unwrap().name, "a-big");
        // Not this site: the next rule that matches, if any.
        assert!(book.find("example.com", reply).is_none());
        assert_eq!(
            book.find("example.com", "421 you are rate limited")
                .unwrap()
                .name,
            "b-any"
        );
    }

    #[test]
    fn bad_rules_and_limits_say_what_is_wrong() {
        assert!(ShapingRule::new("x", "(", RuleAction::Bounce)
            .unwrap_err()
            .contains("not a regular expression"));
        let zero = ShapingRule::new(
            "x",
            "a",
            RuleAction::Slow {
                per_second: 0.0,
                duration: Duration::from_secs(1),
            },
        );
        assert!(zero.unwrap_err().contains("positive"));
        let forever = ShapingRule::new(
            "x",
            "a",
            RuleAction::Suspend {
                duration: Duration::MAX,
            },
        );
        assert!(forever.unwrap_err().contains("at most a year"));
        let glacial = ShapingRule::new(
            "x",
            "a",
            RuleAction::Slow {
                per_second: 1e-30,
                duration: Duration::from_secs(1),
            },
        );
        assert!(glacial.unwrap_err().contains("one message a day"));
        assert_eq!(bounded_secs(f64::NAN), Duration::ZERO);
        assert_eq!(bounded_secs(1e30), MAX_SHAPING_DURATION);
        let rule = ShapingRule::new("x", "a", RuleAction::Bounce)
            .unwrap()
            .threshold(0, Duration::from_secs(1));
        assert!(rule.check().unwrap_err().contains("at least 1"));
        assert!(SiteLimit::concurrent(0).check().is_err());
        assert!(Shaping::new()
            .site("has space", SiteLimit::unlimited())
            .problems()[0]
            .contains("without spaces"));
    }

    #[test]
    fn destination_keys_are_trimmed_lowercased_and_checked() {
        assert_eq!(
            destination_key(" API.Example.com ").unwrap(),
            "api.example.com"
        );
        assert!(destination_key("has space")
            .unwrap_err()
            .contains("without spaces"));
        assert!(destination_key("").is_err());
        assert!(destination_key(&"x".repeat(MAX_SHAPING_NAME_LEN + 1)).is_err());
    }

    #[test]
    fn routes_lead_keys_to_sites() {
        let s = Shaping::new()
            .site("corp", SiteLimit::concurrent(2))
            .route(" Hooks.Example.org ", "Corp");
        assert_eq!(s.static_site("hooks.example.org").as_deref(), Some("corp"));
        assert_eq!(s.static_site("small.example"), None);
        assert!(s.problems().is_empty());
        assert!(Shaping::new().route("k", "has space").problems()[0].contains("route `k`"));
    }

    #[test]
    fn a_pattern_that_compiles_too_big_and_too_many_rules_are_refused_naming_the_cap() {
        // 6 characters, 4 MiB compiled (Unicode word characters, repeated).
        let heavy = ShapingRule::new("heavy", r"\w{60}", RuleAction::Bounce);
        let e = heavy.unwrap_err();
        assert!(
            e.contains("more than 1 MiB (MAX_PATTERN_SIZE)") && e.contains("heavy"),
            "{e}"
        );
        // The same in ASCII is small enough, and so is a short Unicode repetition.
        ShapingRule::new("ascii", r"(?-u)\w{60}", RuleAction::Bounce).unwrap();
        ShapingRule::new("short", r"\w{10}", RuleAction::Bounce).unwrap();
        // The configuration says when it holds too many rules.
        let mut s = Shaping::new();
        for n in 0..=MAX_SHAPING_RULES {
            s = s.rule(ShapingRule::new(&format!("r{n:03}"), "x", RuleAction::Bounce).unwrap());
        }
        assert!(
            s.problems()[0].contains("more than 100 rules"),
            "{:?}",
            s.problems()
        );
        // A book uses the first 100 and names the rest.
        let (book, skipped) = RuleBook::new(s.rules().to_vec());
        assert_eq!(book.rules.len(), MAX_SHAPING_RULES);
        assert!(skipped[0].contains("r100"), "{skipped:?}");
    }
}
