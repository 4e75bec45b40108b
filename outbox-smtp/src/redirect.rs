//! Test mode: every recipient rewritten to a test address or domain, the originals kept
//! in `X-Outbox-Original-To/-Cc/-Bcc` headers.
//!
//! Off unless configured ([`MailerConfig::test_redirect`](crate::MailerConfig::test_redirect)
//! or `?test_redirect=...` in the URL); when off, nothing about an email is changed.

use std::fmt;

use crate::{ConfigError, Email, Mailbox};

/// Where test mode sends mail instead of to the real recipients.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RedirectTarget {
    /// Every email goes to this one address (To); Cc and Bcc are dropped.
    Address(String),
    /// Each recipient keeps its local part and gets this domain
    /// (`ada@example.com` → `ada@test.example`); To, Cc and Bcc keep their roles.
    Domain(String),
}

/// Rewrites the recipients of emails for a test or staging system.
///
/// ```
/// use outbox_smtp::TestRedirect;
///
/// let all = TestRedirect::to_address("qa@example.com");
/// let some = TestRedirect::to_domain("sink.test").only(["registration.user"]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestRedirect {
    target: RedirectTarget,
    only: Vec<String>,
}

/// What the redirect did to one email: the recipients to use, and the headers that
/// record the originals.
pub(crate) struct Redirected {
    pub(crate) to: Vec<Mailbox>,
    pub(crate) cc: Vec<Mailbox>,
    pub(crate) bcc: Vec<Mailbox>,
    pub(crate) original_headers: Vec<(&'static str, String)>,
}

impl TestRedirect {
    /// Sends every email to `address` instead.
    pub fn to_address(address: impl Into<String>) -> Self {
        Self {
            target: RedirectTarget::Address(address.into()),
            only: Vec::new(),
        }
    }

    /// Replaces the domain of every recipient with `domain`.
    pub fn to_domain(domain: impl Into<String>) -> Self {
        Self {
            target: RedirectTarget::Domain(domain.into()),
            only: Vec::new(),
        }
    }

    /// Redirects only emails that carry one of these tags ([`Email::tags`]) or whose
    /// message type tag is one of them; others go to their real recipients.
    pub fn only<I, T>(mut self, tags: I) -> Self
    where
        I: IntoIterator<Item = T>,
        T: Into<String>,
    {
        self.only = tags.into_iter().map(Into::into).collect();
        self
    }

    /// Where redirected mail goes.
    pub fn target(&self) -> &RedirectTarget {
        &self.target
    }

    /// True when this email is redirected.
    pub fn applies(&self, email: &Email, type_tag: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|t| t == type_tag || email.has_tag(t))
    }

    /// True when the redirect applies to a message of `type_tag` that carries no tags (a
    /// raw email): always without an `only` list, else when the list names the type.
    pub fn applies_to_type(&self, type_tag: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|t| t == type_tag)
    }

    /// Envelope addresses rewritten as the redirect says: all to the one address, or each
    /// to the same local part at the test domain.
    pub(crate) fn rewrite_addresses(&self, addresses: &[String]) -> Vec<String> {
        match &self.target {
            RedirectTarget::Address(a) => vec![a.clone()],
            RedirectTarget::Domain(d) => addresses
                .iter()
                .map(|a| {
                    let local = a.rsplit_once('@').map_or(a.as_str(), |(l, _)| l);
                    format!("{local}@{d}")
                })
                .collect(),
        }
    }

    pub(crate) fn check(&self) -> Result<(), ConfigError> {
        match &self.target {
            RedirectTarget::Address(a) => Mailbox::from(a.as_str())
                .check()
                .map_err(|why| ConfigError::new("test_redirect", why)),
            RedirectTarget::Domain(d) => {
                Mailbox::address(format!("test@{d}")).check().map_err(|_| {
                    ConfigError::new("test_redirect_domain", format!("{d:?} is not a domain"))
                })
            }
        }
    }

    /// The recipients `email` gets in test mode.
    pub(crate) fn apply(&self, email: &Email) -> Redirected {
        let mut original_headers = Vec::new();
        for (name, list) in [
            ("X-Outbox-Original-To", &email.to),
            ("X-Outbox-Original-Cc", &email.cc),
            ("X-Outbox-Original-Bcc", &email.bcc),
        ] {
            if !list.is_empty() {
                let joined = list.iter().map(|m| m.address.as_str()).collect::<Vec<_>>();
                original_headers.push((name, joined.join(", ")));
            }
        }
        let (to, cc, bcc) = match &self.target {
            RedirectTarget::Address(a) => (vec![Mailbox::from(a.as_str())], vec![], vec![]),
            RedirectTarget::Domain(d) => {
                let rewrite = |list: &[Mailbox]| {
                    list.iter()
                        .map(|m| {
                            let local = m.address.rsplit_once('@').map_or("", |(l, _)| l);
                            Mailbox {
                                name: m.name.clone(),
                                address: format!("{local}@{d}"),
                            }
                        })
                        .collect()
                };
                (rewrite(&email.to), rewrite(&email.cc), rewrite(&email.bcc))
            }
        };
        Redirected {
            to,
            cc,
            bcc,
            original_headers,
        }
    }
}

/// As URL query parameters.
impl fmt::Display for TestRedirect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.target {
            RedirectTarget::Address(a) => write!(f, "test_redirect={a}")?,
            RedirectTarget::Domain(d) => write!(f, "test_redirect_domain={d}")?,
        }
        if !self.only.is_empty() {
            write!(f, "&test_redirect_only={}", self.only.join(","))?;
        }
        Ok(())
    }
}
