//! Per-domain traffic shaping: the records and the pure rules behind it.
//!
//! Mail to one receiving site (a recipient domain, or a group of domains served by the same
//! mail exchangers, such as every address hosted by Google) is limited on its own: a token
//! bucket, a cap on messages in flight at once, and replies that slow or suspend the site.
//! The state lives in the database (`outbox_sites`) so every process shares it; which site a
//! domain belongs to, how a site's row grants a message and which rule a reply matches are
//! decided here, without I/O, and pinned by unit tests. A leaf: it names nothing else of the
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
    /// The site's name (`gmail.com`, `google`, `mx:a.example,b.example`).
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

/// `n/s`, `n/min` or `n/h`, whichever reads best.
pub fn describe_rate(per_second: f64) -> String {
    let trim = |x: f64| {
        let s = format!("{x:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    };
    if per_second >= 1.0 {
        format!("{}/s", trim(per_second))
    } else if per_second * 60.0 >= 1.0 {
        format!("{}/min", trim(per_second * 60.0))
    } else {
        format!("{}/h", trim(per_second * 3600.0))
    }
}

/// `90s`, `15min` or `2h`.
pub fn describe_duration(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 && s % 3600 == 0 {
        format!("{}h", s / 3600)
    } else if s >= 60 && s % 60 == 0 {
        format!("{}min", s / 60)
    } else {
        let secs = format!("{:.3}", d.as_secs_f64());
        format!("{}s", secs.trim_end_matches('0').trim_end_matches('.'))
    }
}

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

/// Looks up the mail exchangers of a domain, for MX rollup (the `mx` feature of
/// `outbox-smtp` has one over DNS).
pub trait MxLookup: Send + Sync + 'static {
    /// The MX host names of `domain` (lowercase, without the trailing dot), best first; an
    /// empty list when it has none.
    fn mx<'a>(&'a self, domain: &'a str) -> BoxFuture<'a, Result<Vec<String>, String>>;
}

/// The traffic shaping of an outbox: sites with their limits, which domains (or mail
/// exchangers) belong to which site, and the rules that react to replies.
///
/// A domain's site is, in order: the site a [`domain`](Self::domain) entry names; with an
/// [`MxLookup`], the site whose MX suffix matches one of the domain's mail exchangers, else
/// `mx:` and its sorted MX host names (domains on the same exchangers share limits); else
/// the domain itself. Only sites with configured limits or a rule's action in force are
/// shaped; mail to any other domain goes at full speed.
#[derive(Clone, Default)]
pub struct Shaping {
    pub(crate) sites: Vec<(String, SiteLimit)>,
    pub(crate) domains: HashMap<String, String>,
    pub(crate) mx_suffixes: Vec<(String, String)>,
    pub(crate) rules: Vec<ShapingRule>,
    pub(crate) mx: Option<Arc<dyn MxLookup>>,
    pub(crate) problems: Vec<String>,
}

impl fmt::Debug for Shaping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shaping")
            .field("sites", &self.sites)
            .field("domains", &self.domains.len())
            .field("rules", &self.rules)
            .field("mx", &self.mx.is_some())
            .finish()
    }
}

/// The shipped sites: the large mailbox providers, their domains and exchangers, and a cap
/// on messages in flight to each.
pub const PROVIDER_SITES: &[ProviderSite] = &[
    ProviderSite {
        site: "google",
        domains: &["gmail.com", "googlemail.com"],
        mx_suffixes: &["google.com", "googlemail.com"],
        max_concurrent: 5,
    },
    ProviderSite {
        site: "microsoft",
        domains: &[
            "outlook.com",
            "hotmail.com",
            "live.com",
            "msn.com",
            "hotmail.co.uk",
            "hotmail.fr",
            "outlook.de",
        ],
        mx_suffixes: &["protection.outlook.com", "olc.protection.outlook.com"],
        max_concurrent: 5,
    },
    ProviderSite {
        site: "yahoo",
        domains: &[
            "yahoo.com",
            "ymail.com",
            "rocketmail.com",
            "aol.com",
            "yahoo.co.uk",
            "yahoo.fr",
        ],
        mx_suffixes: &["yahoodns.net"],
        max_concurrent: 5,
    },
    ProviderSite {
        site: "apple",
        domains: &["icloud.com", "me.com", "mac.com"],
        mx_suffixes: &["mail.icloud.com"],
        max_concurrent: 10,
    },
];

/// One shipped provider site.
#[derive(Debug, Clone, Copy)]
pub struct ProviderSite {
    /// The site's name.
    pub site: &'static str,
    /// Its own domains.
    pub domains: &'static [&'static str],
    /// Suffixes of its mail exchangers (for domains it hosts, with MX rollup).
    pub mx_suffixes: &'static [&'static str],
    /// Messages in flight at once.
    pub max_concurrent: u32,
}

/// The shipped rules: replies by which the large providers say "too fast".
pub fn provider_rules() -> Vec<ShapingRule> {
    let hour = Duration::from_secs(3600);
    let rule = |name: &str, pattern: &str, action| {
        ShapingRule::new(name, pattern, action).expect("the shipped rules are valid")
    };
    vec![
        // Gmail: "421 4.7.28 ... has been rate limited", "421 4.7.0 ... unusual rate".
        rule(
            "gmail-rate-limited",
            r"\b4\.7\.28\b|(?i:unusual rate of unsolicited mail)",
            RuleAction::Slow {
                per_second: 1.0,
                duration: hour,
            },
        ),
        // Outlook.com: "451 4.7.650 The mail server [..] has been temporarily rate limited
        // due to IP reputation", "4.7.500 Server busy".
        rule(
            "microsoft-rate-limited",
            r"\b4\.7\.(650|500)\b",
            RuleAction::Slow {
                per_second: 1.0 / 60.0,
                duration: Duration::from_secs(90 * 60),
            },
        ),
        // Yahoo: "421 4.7.0 [TSS04] Messages from .. temporarily deferred due to unexpected
        // volume or user complaints".
        rule(
            "yahoo-deferred",
            r"\[TSS0[49]\]|\[TS0[1-3]\]",
            RuleAction::Suspend { duration: hour },
        ),
    ]
}

impl Shaping {
    /// No sites and no rules: every domain at full speed until configured.
    pub fn new() -> Self {
        Self::default()
    }

    /// The shipped sites ([`PROVIDER_SITES`]: Google, Microsoft, Yahoo, Apple, each with
    /// its domains, exchangers and a cap on messages in flight) and rules
    /// ([`provider_rules`]); add to them or override them with the other methods.
    pub fn providers() -> Self {
        let mut s = Self::new();
        for p in PROVIDER_SITES {
            s = s.site(p.site, SiteLimit::concurrent(p.max_concurrent));
            for d in p.domains {
                s = s.domain(d, p.site);
            }
            for m in p.mx_suffixes {
                s.mx_suffixes.push(((*m).to_owned(), p.site.to_owned()));
            }
        }
        for r in provider_rules() {
            s = s.rule(r);
        }
        s
    }

    /// Limits `site` (a domain, or a site name that [`domain`](Self::domain) entries
    /// route to); replaces earlier limits of the same site.
    pub fn site(mut self, site: &str, limit: SiteLimit) -> Self {
        let site = site.trim().to_ascii_lowercase();
        if let Err(e) = check_site(&site).and_then(|()| limit.check()) {
            self.problems.push(format!("shaping site `{site}`: {e}"));
        }
        self.sites.retain(|(s, _)| *s != site);
        self.sites.push((site, limit));
        self
    }

    /// Sends mail to `domain` under the limits of `site` (several domains may share one).
    pub fn domain(mut self, domain: &str, site: &str) -> Self {
        let site = site.trim().to_ascii_lowercase();
        if let Err(e) = check_site(&site) {
            self.problems
                .push(format!("shaping domain `{domain}`: {e}"));
        }
        self.domains.insert(
            domain.trim().trim_end_matches('.').to_ascii_lowercase(),
            site,
        );
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

    /// Groups domains by their mail exchangers, looked up with `lookup` (MX rollup).
    pub fn mx_lookup(mut self, lookup: Arc<dyn MxLookup>) -> Self {
        self.mx = Some(lookup);
        self
    }

    /// Routes domains whose exchangers end in `suffix` to `site` (with MX rollup).
    pub fn mx_suffix(mut self, suffix: &str, site: &str) -> Self {
        let suffix = suffix.trim().trim_end_matches('.').to_ascii_lowercase();
        self.mx_suffixes.retain(|(s, _)| *s != suffix);
        self.mx_suffixes
            .push((suffix, site.trim().to_ascii_lowercase()));
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

    /// The site of `domain` without looking up its exchangers: a `domain` entry, else the
    /// domain itself.
    pub fn static_site(&self, domain: &str) -> Option<String> {
        self.domains.get(domain).cloned()
    }

    /// The site of a domain whose exchangers are `mx` (lowercase, no trailing dot): the
    /// site of a matching suffix, else `mx:` and the sorted host names; `None` without
    /// exchangers.
    pub fn site_of_mx(&self, mx: &[String]) -> Option<String> {
        if mx.is_empty() {
            return None;
        }
        for host in mx {
            for (suffix, site) in &self.mx_suffixes {
                if host == suffix || host.ends_with(&format!(".{suffix}")) {
                    return Some(site.clone());
                }
            }
        }
        let mut hosts = mx.to_vec();
        hosts.sort();
        hosts.dedup();
        let mut site = format!("mx:{}", hosts.join(","));
        if site.len() > MAX_SHAPING_NAME_LEN {
            let mut cut = MAX_SHAPING_NAME_LEN;
            while !site.is_char_boundary(cut) {
                cut -= 1;
            }
            site.truncate(cut);
        }
        Some(site)
    }
}

/// The domain of an address, lowercased (`None` without an `@` or with nothing after it).
pub fn domain_of(address: &str) -> Option<String> {
    let (_, domain) = address.trim().rsplit_once('@')?;
    let domain = domain.trim_end_matches('>').trim_end_matches('.');
    (!domain.is_empty()).then(|| domain.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: f64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs_f64(secs)
    }

    fn state(limit: SiteLimit) -> SiteState {
        SiteState {
            site: "gmail.com".into(),
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
        s.reason = Some("rule `yahoo-deferred`".into());
        match s.decide(at(1040.0), 0) {
            SiteDecision::Wait { wait, why } => {
                assert_eq!(wait, Duration::from_secs(60));
                assert!(
                    why.contains("suspended") && why.contains("yahoo-deferred"),
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
            ShapingRule::new("a-gmail", r"\b4\.7\.28\b", slow.clone())
                .unwrap()
                .at_site("google"),
            ShapingRule::new("b-any", r"rate limited", RuleAction::Bounce).unwrap(),
            ShapingRule {
                pattern: "(".into(),
                ..ShapingRule::new("c-broken", "x", RuleAction::Bounce).unwrap()
            },
        ]);
        assert_eq!(bad.len(), 1);
        assert!(bad[0].contains("c-broken"), "{bad:?}");
        let reply = "x@gmail.com: 421 4.7.28 [1.2.3.4] Our system has detected an unusual rate";
        assert_eq!(book.find("google", reply).unwrap().name, "a-gmail");
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
        for r in provider_rules() {
            r.check().unwrap();
        }
    }

    #[test]
    fn domains_route_to_sites_and_exchangers_roll_up() {
        let s = Shaping::providers().domain("Example.ORG.", "corp");
        assert_eq!(s.static_site("gmail.com").as_deref(), Some("google"));
        assert_eq!(s.static_site("example.org").as_deref(), Some("corp"));
        assert_eq!(s.static_site("small.example"), None);
        let google = vec![
            "aspmx.l.google.com".to_owned(),
            "alt1.aspmx.l.google.com".into(),
        ];
        assert_eq!(s.site_of_mx(&google).as_deref(), Some("google"));
        let a = vec!["mx2.host.example".to_owned(), "mx1.host.example".into()];
        let b = vec!["mx1.host.example".to_owned(), "mx2.host.example".into()];
        assert_eq!(s.site_of_mx(&a), s.site_of_mx(&b));
        assert_eq!(
            s.site_of_mx(&a).as_deref(),
            Some("mx:mx1.host.example,mx2.host.example")
        );
        assert_eq!(s.site_of_mx(&[]), None);
        assert_eq!(domain_of("Ann@GMail.com").as_deref(), Some("gmail.com"));
        assert_eq!(domain_of("nobody"), None);
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
        for r in provider_rules() {
            r.compile().unwrap();
        }
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

    #[test]
    fn rates_and_durations_read_well() {
        assert_eq!(describe_rate(2.0), "2/s");
        assert_eq!(describe_rate(1.0 / 60.0), "1/min");
        assert_eq!(describe_rate(1.0 / 3600.0), "1/h");
        assert_eq!(describe_duration(Duration::from_secs(5400)), "90min");
        assert_eq!(describe_duration(Duration::from_secs(7200)), "2h");
        assert_eq!(describe_duration(Duration::from_millis(1500)), "1.5s");
    }
}
