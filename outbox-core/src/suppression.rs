//! The suppression list's records: addresses (or whole domains) that must not be mailed,
//! each in a scope, with the reason and its source; and which suppressions a message to one
//! recipient answers to ([`SuppressionProbe`]), a pure rule shared by the enqueue statement
//! and the workers' check before sending. A leaf: it names nothing else of the crate, so the
//! enqueue path and the storage port both build on it.

use std::{fmt, str::FromStr, time::SystemTime};

/// Longest address (or `@domain`) kept in the list.
pub const MAX_SUPPRESSION_ADDRESS_LEN: usize = 254;

/// Longest name after `list:`, `type:` or `group:` in a scope.
pub const MAX_SCOPE_NAME_LEN: usize = 200;

/// Which mail a suppression stops.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SuppressionScope {
    /// Every email to the address (`*`). Transactional emails still go when the reason is
    /// an unsubscribe.
    All,
    /// Emails of one mailing list (`list:NAME`, the name an email's `list` gives).
    List(String),
    /// Messages of one type (`type:TAG`).
    Type(String),
    /// Messages of one group (`group:NAME`, a campaign).
    Group(String),
}

impl SuppressionScope {
    /// The scope as stored: `*`, `list:NAME`, `type:TAG` or `group:NAME`.
    pub fn key(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for SuppressionScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SuppressionScope::All => f.write_str("*"),
            SuppressionScope::List(name) => write!(f, "list:{name}"),
            SuppressionScope::Type(tag) => write!(f, "type:{tag}"),
            SuppressionScope::Group(name) => write!(f, "group:{name}"),
        }
    }
}

impl FromStr for SuppressionScope {
    type Err = String;

    /// Reads `*` (or `all`), `list:NAME`, `type:TAG` or `group:NAME`.
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if s == "*" || s.eq_ignore_ascii_case("all") {
            return Ok(SuppressionScope::All);
        }
        let (kind, name) = s.split_once(':').ok_or_else(|| {
            format!("scope {s:?} is not one of `*`, `list:NAME`, `type:TAG` or `group:NAME`")
        })?;
        if name.is_empty() || name.len() > MAX_SCOPE_NAME_LEN || name.chars().any(char::is_control)
        {
            return Err(format!(
                "scope {s:?}: the name after `{kind}:` must be 1 to {MAX_SCOPE_NAME_LEN} bytes \
                 without control characters"
            ));
        }
        let name = name.to_owned();
        match kind {
            "list" => Ok(SuppressionScope::List(name)),
            "type" => Ok(SuppressionScope::Type(name)),
            "group" => Ok(SuppressionScope::Group(name)),
            _ => Err(format!(
                "scope {s:?}: `{kind}` is not a scope kind; use `*`, `list:NAME`, `type:TAG` or \
                 `group:NAME`"
            )),
        }
    }
}

/// Why an address is suppressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SuppressionReason {
    /// The receiving server said the address does not exist (a permanent bounce).
    HardBounce,
    /// The recipient marked a message as spam.
    Complaint,
    /// The recipient unsubscribed (one-click or otherwise).
    Unsubscribe,
    /// An operator added it.
    Manual,
}

impl SuppressionReason {
    /// Every reason, in the order the admin lists them.
    pub const ALL: [SuppressionReason; 4] = [
        SuppressionReason::HardBounce,
        SuppressionReason::Complaint,
        SuppressionReason::Unsubscribe,
        SuppressionReason::Manual,
    ];

    /// The reason as stored: `hard_bounce`, `complaint`, `unsubscribe` or `manual`.
    pub fn as_str(self) -> &'static str {
        match self {
            SuppressionReason::HardBounce => "hard_bounce",
            SuppressionReason::Complaint => "complaint",
            SuppressionReason::Unsubscribe => "unsubscribe",
            SuppressionReason::Manual => "manual",
        }
    }
}

impl fmt::Display for SuppressionReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SuppressionReason {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        SuppressionReason::ALL
            .into_iter()
            .find(|r| r.as_str().eq_ignore_ascii_case(s) || r.as_str().replace('_', "-") == s)
            .ok_or_else(|| {
                format!("reason {s:?} is not one of hard_bounce, complaint, unsubscribe or manual")
            })
    }
}

/// One entry of the suppression list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suppression {
    /// The address, normalized by [`normalize_address`] (`user@example.com`), or a whole
    /// domain (`@example.com`).
    pub address: String,
    /// Which mail it stops.
    pub scope: SuppressionScope,
    /// Why.
    pub reason: SuppressionReason,
    /// Who said so: a provider event, an operator, an unsubscribe link.
    pub source: Option<String>,
    /// When it was added (or last replaced).
    pub created_at: SystemTime,
    /// When it ends; `None`: never.
    pub expires_at: Option<SystemTime>,
}

/// A suppression to add; an entry with the same address and scope is replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSuppression {
    /// The address or `@domain`, as checked by [`normalize_address`].
    pub address: String,
    /// Which mail it stops.
    pub scope: SuppressionScope,
    /// Why.
    pub reason: SuppressionReason,
    /// Who said so.
    pub source: Option<String>,
    /// When it ends; `None`: never.
    pub expires_at: Option<SystemTime>,
}

impl NewSuppression {
    /// A suppression of `address` (checked and normalized by [`normalize_address`]) in
    /// `scope`, for ever.
    pub fn new(
        address: &str,
        scope: SuppressionScope,
        reason: SuppressionReason,
    ) -> Result<Self, String> {
        Ok(Self {
            address: normalize_address(address)?,
            scope,
            reason,
            source: None,
            expires_at: None,
        })
    }

    /// Records who said so.
    pub fn source(mut self, source: impl Into<String>) -> Self {
        let mut source: String = source.into();
        if source.len() > 255 {
            let mut end = 255;
            while !source.is_char_boundary(end) {
                end -= 1;
            }
            source.truncate(end);
        }
        self.source = Some(source);
        self
    }

    /// Ends the suppression at `at`.
    pub fn expires_at(mut self, at: SystemTime) -> Self {
        self.expires_at = Some(at);
        self
    }
}

/// The most token uses [`redeem_all`](crate::Suppressions::redeem_all) writes in one
/// transaction; a longer list is written in transactions of this many.
pub const MAX_TOKEN_BATCH: usize = 1_000;

/// One use of a single-use token and the suppressions it brings (a provider event, an
/// unsubscribe link): written only when the token was not used before.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenUse {
    /// The token's digest (a hash, never the token itself).
    pub token: String,
    /// The suppressions its first use adds.
    pub entries: Vec<NewSuppression>,
}

/// Which suppressions to list: all, or those of one address (its own entries and its
/// domain's), of one reason.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SuppressionFilter {
    /// An address (its entries and its domain's) or an `@domain`.
    pub address: Option<String>,
    /// One reason only.
    pub reason: Option<SuppressionReason>,
}

/// A message kept with status `suppressed`: found suppressed at enqueue or before sending,
/// never sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuppressedMessage {
    /// The message's id.
    pub id: String,
    /// Its type.
    pub type_tag: String,
    /// Its group, if any.
    pub group: Option<String>,
    /// Which suppression stopped it (`suppressed: hard_bounce of user@example.com (*)`).
    pub reason: String,
    /// When it was stopped.
    pub at: SystemTime,
}

/// The one recipient of a message, as the suppression check sees it: its address, the
/// list it is mail of, and whether it is transactional.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuppressionProbe {
    /// The address, normalized by [`normalize_address`].
    pub address: String,
    /// Its domain entry (`@example.com`).
    pub domain: String,
    /// The scopes the message answers to (`*`, its type, and unless transactional its
    /// list and group); unused slots are `None`.
    pub scopes: [Option<String>; 4],
    /// Whether unsubscribes stop it (false for transactional mail).
    pub honour_unsubscribe: bool,
}

impl SuppressionProbe {
    /// The probe of a message of `type_tag` in `group` to `address` on `list`.
    ///
    /// A transactional message (a password reset, a receipt) answers only to suppressions
    /// of all mail and of its own type, and never to an unsubscribe: a recipient who left a
    /// newsletter still gets the mail they asked for. Other mail also answers to its list's
    /// and its group's suppressions. `None` when `address` is not an address.
    pub fn new(
        address: &str,
        list: Option<&str>,
        transactional: bool,
        type_tag: &str,
        group: Option<&str>,
    ) -> Option<Self> {
        let address = normalize_address(address).ok()?;
        let domain = address.rsplit_once('@')?.1;
        if domain.is_empty() || address.starts_with('@') {
            return None;
        }
        let domain = format!("@{domain}");
        let bulk = |scope: Option<SuppressionScope>| scope.filter(|_| !transactional);
        let scopes = [
            Some(SuppressionScope::All.key()),
            Some(SuppressionScope::Type(type_tag.to_owned()).key()),
            bulk(list.map(|l| SuppressionScope::List(l.to_owned()))).map(|s| s.key()),
            bulk(group.map(|g| SuppressionScope::Group(g.to_owned()))).map(|s| s.key()),
        ];
        Some(Self {
            address,
            domain,
            scopes,
            honour_unsubscribe: !transactional,
        })
    }

    /// Whether `suppression`, in force at `now`, stops this message.
    pub fn stopped_by(&self, suppression: &Suppression, now: SystemTime) -> bool {
        (suppression.address == self.address || suppression.address == self.domain)
            && self
                .scopes
                .iter()
                .flatten()
                .any(|s| *s == suppression.scope.key())
            && suppression.expires_at.is_none_or(|at| at > now)
            && (self.honour_unsubscribe || suppression.reason != SuppressionReason::Unsubscribe)
    }
}

/// `address` normalized the way receivers read it, and checked: trimmed, the local part
/// lowercased, the domain mapped by IDNA (UTS 46: full-width letters to ASCII, invisible
/// characters such as a soft hyphen or a zero-width space dropped, `。` to `.`, Unicode
/// labels to their `xn--` form, a final dot dropped), so that every way of writing one
/// mailbox names the same entry. `local@domain` or `@domain`, at most
/// [`MAX_SUPPRESSION_ADDRESS_LEN`] bytes once normalized, without spaces, control
/// characters or brackets; a domain IDNA refuses (or that holds other than letters, digits,
/// `-`, `_` and dots once mapped) is refused with the reason.
pub fn normalize_address(address: &str) -> Result<String, String> {
    let trimmed = address.trim();
    let bad = |why: &str| {
        Err(format!(
            "{address:?} is not an address to suppress: {why}; give `user@example.com`, or \
             `@example.com` for a whole domain"
        ))
    };
    if trimmed.len() > 4 * MAX_SUPPRESSION_ADDRESS_LEN {
        return bad("it is longer than 254 bytes");
    }
    if trimmed
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '<' | '>' | ',' | '"'))
    {
        return bad("it holds a space, a control character, a bracket, a comma or a quote");
    }
    let Some((local, domain)) = trimmed.rsplit_once('@') else {
        return bad("it has no `@`");
    };
    if local.contains('@') {
        return bad("it has more than one `@`");
    }
    let domain = match idna::domain_to_ascii_cow(domain.as_bytes(), idna::AsciiDenyList::URL) {
        Ok(d) => d.into_owned(),
        Err(_) => {
            return bad("its domain is not a valid domain name (IDNA, UTS 46, refuses it)");
        }
    };
    let domain = domain.strip_suffix('.').unwrap_or(&domain);
    if domain.is_empty() || !domain.contains('.') && domain != "localhost" {
        return bad("the domain after `@` is missing or has no dot");
    }
    if domain.starts_with('.') || domain.contains("..") {
        return bad("the domain has an empty label");
    }
    if !domain
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        return bad("its domain holds characters other than letters, digits, `-`, `_` and dots");
    }
    let a = format!("{}@{domain}", local.to_lowercase());
    if a.len() > MAX_SUPPRESSION_ADDRESS_LEN {
        return bad("it is longer than 254 bytes");
    }
    Ok(a)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn entry(address: &str, scope: &str, reason: SuppressionReason) -> Suppression {
        Suppression {
            address: address.into(),
            scope: scope.parse().unwrap(),
            reason,
            source: None,
            created_at: SystemTime::UNIX_EPOCH,
            expires_at: None,
        }
    }

    #[test]
    fn addresses_are_lowercased_and_checked() {
        assert_eq!(
            normalize_address(" Ann@Example.COM ").unwrap(),
            "ann@example.com"
        );
        assert_eq!(normalize_address("@Example.com").unwrap(), "@example.com");
        for bad in [
            "ann",
            "ann@",
            "a@b@c.com",
            "ann smith@x.com",
            "<a@x.com>",
            "a@x",
            "a@.x.com",
        ] {
            let e = normalize_address(bad).unwrap_err();
            assert!(e.contains("user@example.com"), "{bad}: {e}");
        }
    }

    #[test]
    fn domains_are_mapped_as_receivers_resolve_them() {
        for written in [
            "ann@ｅｘａｍｐｌｅ.com", // full-width letters
            "ann@EXAMPLE.COM",
            "ann@exam\u{ad}ple.com",   // a soft hyphen
            "ann@example.com\u{200b}", // a trailing zero-width space
            "ann@example\u{3002}com",  // an ideographic full stop
            "ann@example.com.",        // the root's dot
        ] {
            assert_eq!(
                normalize_address(written).as_deref(),
                Ok("ann@example.com"),
                "{written:?}"
            );
        }
        assert_eq!(
            normalize_address("@Bücher.DE").as_deref(),
            Ok("@xn--bcher-kva.de")
        );
        assert_eq!(
            normalize_address("ann@xn--bcher-kva.de"),
            normalize_address("ann@bücher.de")
        );
        for bad in [
            "ann@exa%mple.com",
            "ann@xn--a.com",
            "ann@ex\u{fffd}ample.com",
        ] {
            let e = normalize_address(bad).unwrap_err();
            assert!(e.contains("domain"), "{bad:?}: {e}");
        }
        let p = SuppressionProbe::new("Ann@ｅｘａｍｐｌｅ.com\u{200b}", None, false, "t", None)
            .unwrap();
        assert_eq!(
            (p.address.as_str(), p.domain.as_str()),
            ("ann@example.com", "@example.com")
        );
    }

    #[test]
    fn scopes_read_back_as_written() {
        for s in ["*", "list:weekly", "type:app.welcome", "group:nov-2026"] {
            assert_eq!(s.parse::<SuppressionScope>().unwrap().key(), s);
        }
        assert_eq!(
            "all".parse::<SuppressionScope>().unwrap(),
            SuppressionScope::All
        );
        assert!("topic:x".parse::<SuppressionScope>().is_err());
        assert!("list:".parse::<SuppressionScope>().is_err());
        assert!("list:a\tb".parse::<SuppressionScope>().is_err());
        let spaced: SuppressionScope = "group:Black Friday".parse().unwrap();
        assert_eq!(spaced, SuppressionScope::Group("Black Friday".into()));
        assert_eq!("hard-bounce".parse(), Ok(SuppressionReason::HardBounce));
        assert!("bounced".parse::<SuppressionReason>().is_err());
    }

    #[test]
    fn bulk_mail_answers_to_its_list_group_type_and_all() {
        let p = SuppressionProbe::new(
            "Ann@Example.com",
            Some("weekly"),
            false,
            "news",
            Some("nov"),
        )
        .unwrap();
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(100);
        use SuppressionReason::*;
        for (address, scope) in [
            ("ann@example.com", "*"),
            ("ann@example.com", "list:weekly"),
            ("ann@example.com", "type:news"),
            ("ann@example.com", "group:nov"),
            ("@example.com", "*"),
        ] {
            assert!(
                p.stopped_by(&entry(address, scope, Unsubscribe), now),
                "{address} {scope}"
            );
        }
        for (address, scope) in [
            ("ann@example.com", "list:daily"),
            ("ann@example.com", "type:other"),
            ("ann@example.com", "group:dec"),
            ("bob@example.com", "*"),
            ("@example.org", "*"),
            ("@ample.com", "*"),
        ] {
            assert!(
                !p.stopped_by(&entry(address, scope, HardBounce), now),
                "{address} {scope}"
            );
        }
    }

    #[test]
    fn transactional_mail_ignores_lists_groups_and_unsubscribes() {
        let p = SuppressionProbe::new("ann@example.com", Some("weekly"), true, "reset", Some("g"))
            .unwrap();
        let now = SystemTime::UNIX_EPOCH;
        use SuppressionReason::*;
        assert_eq!(p.scopes[2], None);
        assert_eq!(p.scopes[3], None);
        assert!(!p.honour_unsubscribe);
        assert!(!p.stopped_by(&entry("ann@example.com", "list:weekly", Complaint), now));
        assert!(!p.stopped_by(&entry("ann@example.com", "group:g", Manual), now));
        assert!(!p.stopped_by(&entry("ann@example.com", "*", Unsubscribe), now));
        assert!(p.stopped_by(&entry("ann@example.com", "*", HardBounce), now));
        assert!(p.stopped_by(&entry("ann@example.com", "type:reset", Manual), now));
        assert!(p.stopped_by(&entry("@example.com", "*", Complaint), now));
    }

    #[test]
    fn an_expired_suppression_stops_nothing() {
        let p = SuppressionProbe::new("ann@example.com", None, false, "t", None).unwrap();
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(10);
        let mut e = entry("ann@example.com", "*", SuppressionReason::HardBounce);
        e.expires_at = Some(at);
        assert!(p.stopped_by(&e, at - Duration::from_secs(1)));
        assert!(!p.stopped_by(&e, at));
        assert!(SuppressionProbe::new("not an address", None, false, "t", None).is_none());
        assert!(SuppressionProbe::new("@example.com", None, false, "t", None).is_none());
    }
}
