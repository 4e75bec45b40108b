//! The email kind's traffic-shaping presets: the large mailbox providers' sites, the replies
//! by which they say "too fast", and MX rollup (domains served by the same mail exchangers
//! share one site).
//!
//! The outbox's shaping machinery ([`Shaping`]) is neutral: sites, limits, rules and routes
//! from a destination key to a site. Email's destination key is the recipient's domain
//! ([`domain_of`]); this module fills the machinery with what mail needs. Bring it into scope
//! with `use outbox::smtp::EmailShaping;` and write `Shaping::providers()`.
//!
//! Failure modes: none at build time beyond the core's (a bad site name or rule is reported
//! by [`Shaping::problems`] and refused when the outbox starts). A failed MX lookup makes the
//! domain its own site for five minutes and is logged at debug level.

use std::{future::Future, pin::Pin, sync::Arc, time::Duration};

use outbox_core::{Resolved, RuleAction, Shaping, ShapingRule, SiteLimit, SiteResolver};

/// A boxed future, as the lookups return them.
pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// How long a domain's exchangers are remembered.
const MX_TTL: Duration = Duration::from_secs(3600);
/// How long a failed lookup is remembered (the domain is its own site meanwhile).
const MX_FAILED_TTL: Duration = Duration::from_secs(300);
/// Longest site name kept (the core's limit on site names).
const MAX_SITE_LEN: usize = outbox_core::MAX_SHAPING_NAME_LEN;

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

/// The domain of an address, lowercased (`None` without an `@` or with nothing after it):
/// email's destination key.
pub fn domain_of(address: &str) -> Option<String> {
    let (_, domain) = address.trim().rsplit_once('@')?;
    let domain = domain.trim_end_matches('>').trim_end_matches('.');
    (!domain.is_empty()).then(|| domain.to_ascii_lowercase())
}

/// Looks up the mail exchangers of a domain, for MX rollup ([`DnsMx`](crate::DnsMx), feature
/// `mx`, does it over DNS).
pub trait MxLookup: Send + Sync + 'static {
    /// The MX host names of `domain` (lowercase, without the trailing dot), best first; an
    /// empty list when it has none. An error makes the domain its own site for a while.
    fn mx<'a>(&'a self, domain: &'a str) -> BoxFuture<'a, Result<Vec<String>, String>>;
}

/// MX rollup as the shaping's [`SiteResolver`]: a domain whose exchangers end in a known
/// suffix joins that suffix's site (the shipped providers' suffixes, and those added with
/// [`suffix`](Self::suffix)); a domain with other exchangers gets the site `mx:` and its
/// sorted exchangers, so domains on the same exchangers share limits; a domain without
/// exchangers, or whose lookup failed, is its own site.
#[derive(Clone)]
pub struct MxRollup {
    lookup: Arc<dyn MxLookup>,
    suffixes: Vec<(String, String)>,
}

impl std::fmt::Debug for MxRollup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MxRollup")
            .field("suffixes", &self.suffixes)
            .finish_non_exhaustive()
    }
}

impl MxRollup {
    /// Rollup through `lookup`, knowing the shipped providers' exchanger suffixes.
    pub fn new(lookup: Arc<dyn MxLookup>) -> Self {
        let suffixes = PROVIDER_SITES
            .iter()
            .flat_map(|p| {
                p.mx_suffixes
                    .iter()
                    .map(|m| ((*m).to_owned(), p.site.to_owned()))
            })
            .collect();
        Self { lookup, suffixes }
    }

    /// Routes domains whose exchangers end in `suffix` to `site`.
    pub fn suffix(mut self, suffix: &str, site: &str) -> Self {
        let suffix = suffix.trim().trim_end_matches('.').to_ascii_lowercase();
        self.suffixes.retain(|(s, _)| *s != suffix);
        self.suffixes
            .push((suffix, site.trim().to_ascii_lowercase()));
        self
    }

    /// The site of a domain whose exchangers are `mx` (lowercase, no trailing dot): the
    /// site of a matching suffix, else `mx:` and the sorted host names (cut to the longest
    /// site name kept); `None` without exchangers.
    pub fn site_of_mx(&self, mx: &[String]) -> Option<String> {
        if mx.is_empty() {
            return None;
        }
        for host in mx {
            for (suffix, site) in &self.suffixes {
                if host == suffix || host.ends_with(&format!(".{suffix}")) {
                    return Some(site.clone());
                }
            }
        }
        let mut hosts = mx.to_vec();
        hosts.sort();
        hosts.dedup();
        let mut site = format!("mx:{}", hosts.join(","));
        if site.len() > MAX_SITE_LEN {
            let mut cut = MAX_SITE_LEN;
            while !site.is_char_boundary(cut) {
                cut -= 1;
            }
            site.truncate(cut);
        }
        Some(site)
    }
}

impl SiteResolver for MxRollup {
    fn site<'a>(&'a self, domain: &'a str) -> BoxFuture<'a, Resolved> {
        Box::pin(async move {
            match self.lookup.mx(domain).await {
                Ok(hosts) => Resolved {
                    site: self.site_of_mx(&hosts),
                    ttl: MX_TTL,
                },
                Err(e) => {
                    tracing::debug!(domain, error = %e, "MX lookup failed; the domain is its own site for now");
                    Resolved {
                        site: None,
                        ttl: MX_FAILED_TTL,
                    }
                }
            }
        })
    }
}

/// Email's presets on the neutral [`Shaping`]: `use outbox::smtp::EmailShaping;` then
/// `Shaping::providers()`, `.domain(…)`, `.mx_lookup(…)`.
pub trait EmailShaping: Sized {
    /// The shipped sites ([`PROVIDER_SITES`]: Google, Microsoft, Yahoo, Apple, each with
    /// its domains and a cap on messages in flight) and rules ([`provider_rules`]); add to
    /// them or override them with the other methods.
    fn providers() -> Self;

    /// Sends mail to `domain` under the limits of `site` (several domains may share one):
    /// [`Shaping::route`] with the domain lowercased and without a trailing dot.
    fn domain(self, domain: &str, site: &str) -> Self;

    /// Groups domains by their mail exchangers, looked up with `lookup` ([`MxRollup`] with
    /// the shipped providers' suffixes). For suffixes of your own, build an [`MxRollup`]
    /// and pass it to [`Shaping::resolver`].
    fn mx_lookup(self, lookup: Arc<dyn MxLookup>) -> Self;
}

impl EmailShaping for Shaping {
    fn providers() -> Self {
        let mut s = Shaping::new();
        for p in PROVIDER_SITES {
            s = s.site(p.site, SiteLimit::concurrent(p.max_concurrent));
            for d in p.domains {
                s = s.route(d, p.site);
            }
        }
        for r in provider_rules() {
            s = s.rule(r);
        }
        s
    }

    fn domain(self, domain: &str, site: &str) -> Self {
        self.route(
            &domain.trim().trim_end_matches('.').to_ascii_lowercase(),
            site,
        )
    }

    fn mx_lookup(self, lookup: Arc<dyn MxLookup>) -> Self {
        self.resolver(Arc::new(MxRollup::new(lookup)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed(Vec<String>);

    impl MxLookup for Fixed {
        fn mx<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<Vec<String>, String>> {
            Box::pin(async move { Ok(self.0.clone()) })
        }
    }

    #[test]
    fn domains_route_to_sites_and_exchangers_roll_up() {
        let s = Shaping::providers().domain("Example.ORG.", "corp");
        assert_eq!(s.static_site("gmail.com").as_deref(), Some("google"));
        assert_eq!(s.static_site("example.org").as_deref(), Some("corp"));
        assert_eq!(s.static_site("small.example"), None);
        let r = MxRollup::new(Arc::new(Fixed(Vec::new())));
        let google = vec![
            "aspmx.l.google.com".to_owned(),
            "alt1.aspmx.l.google.com".into(),
        ];
        assert_eq!(r.site_of_mx(&google).as_deref(), Some("google"));
        let a = vec!["mx2.host.example".to_owned(), "mx1.host.example".into()];
        let b = vec!["mx1.host.example".to_owned(), "mx2.host.example".into()];
        assert_eq!(r.site_of_mx(&a), r.site_of_mx(&b));
        assert_eq!(
            r.site_of_mx(&a).as_deref(),
            Some("mx:mx1.host.example,mx2.host.example")
        );
        assert_eq!(r.site_of_mx(&[]), None);
        let own = r.suffix("Host.Example.", "hosted");
        assert_eq!(own.site_of_mx(&a).as_deref(), Some("hosted"));
        assert_eq!(domain_of("Ann@GMail.com").as_deref(), Some("gmail.com"));
        assert_eq!(domain_of("nobody"), None);
    }

    #[test]
    fn the_shipped_rules_are_valid_and_the_rollup_resolves_through_its_lookup() {
        for r in provider_rules() {
            r.check().unwrap();
            r.compile().unwrap();
        }
        assert!(Shaping::providers().problems().is_empty());
        let r = MxRollup::new(Arc::new(Fixed(vec!["mx.yahoodns.net".into()])));
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let got = rt.block_on(r.site("aol.example"));
        assert_eq!(got.site.as_deref(), Some("yahoo"));
        assert_eq!(got.ttl, MX_TTL);
    }
}
