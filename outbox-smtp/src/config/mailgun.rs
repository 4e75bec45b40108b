//! Mailgun settings (feature `providers`): the API key, the sending domain and the API
//! host (its region).

use std::fmt;

use super::endpoint::ApiEndpoint;
use crate::ConfigError;

/// Mailgun's API host in the US region (the default).
pub const MAILGUN_API_HOST: &str = "api.mailgun.net";
/// Mailgun's API host in the EU region (`?region=eu`).
pub const MAILGUN_EU_API_HOST: &str = "api.eu.mailgun.net";

/// Sending through Mailgun's `messages.mime` API (`POST /v3/DOMAIN/messages.mime`, the
/// rendered email as a MIME file), feature `providers`: from the URL
/// `mailgun://API_KEY@DOMAIN?region=eu`.
///
/// `Display` and `Debug` never show the API key.
#[derive(Clone, PartialEq, Eq)]
pub struct MailgunConfig {
    pub(crate) key: String,
    pub(crate) domain: String,
    pub(crate) endpoint: ApiEndpoint,
}

impl MailgunConfig {
    /// Sends with the API key `key` for the sending domain `domain` (as registered at
    /// Mailgun, e.g. `mg.example.com`) to `api.mailgun.net` (the US region) over HTTPS.
    pub fn new(key: impl Into<String>, domain: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            domain: domain.into(),
            endpoint: ApiEndpoint::new(MAILGUN_API_HOST),
        }
    }

    /// The EU region's API host, `api.eu.mailgun.net` (a domain lives in one region).
    pub fn eu(self) -> Self {
        self.host(MAILGUN_EU_API_HOST, None)
    }

    super::endpoint::api_endpoint_methods!();

    /// The sending domain.
    pub fn domain(&self) -> &str {
        &self.domain
    }

    pub(crate) fn check(&self) -> Result<(), ConfigError> {
        if self.key.trim().is_empty() {
            return Err(ConfigError::new(
                "key",
                "the Mailgun API key is empty: mailgun://API_KEY@DOMAIN",
            ));
        }
        let domain_ok = !self.domain.is_empty()
            && self
                .domain
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'));
        if !domain_ok {
            return Err(ConfigError::new(
                "domain",
                format!(
                    "{:?} is not a sending domain of ASCII letters, digits, '.' and '-': \
                     mailgun://API_KEY@mg.example.com",
                    self.domain
                ),
            ));
        }
        self.endpoint.check("Mailgun", "API key")
    }
}

/// As a URL with the key replaced by `***`.
impl fmt::Display for MailgunConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "mailgun://***@{}?", self.domain)?;
        let mut endpoint = self.endpoint.clone();
        if endpoint.host == MAILGUN_EU_API_HOST && endpoint.port.is_none() {
            f.write_str("region=eu&")?;
            endpoint.default_host = MAILGUN_EU_API_HOST;
        }
        endpoint.write_params(f, true)
    }
}

impl fmt::Debug for MailgunConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MailgunConfig")
            .field("key", &"***")
            .field("domain", &self.domain)
            .field("endpoint", &self.endpoint)
            .finish()
    }
}
