//! SendGrid settings (feature `providers`): the API key and the API host (its region).

use std::fmt;

use super::endpoint::ApiEndpoint;
use crate::ConfigError;

/// SendGrid's API host (the global region, the default).
pub const SENDGRID_API_HOST: &str = "api.sendgrid.com";
/// SendGrid's API host for EU data residency (`?region=eu`; the API key must belong to an
/// EU regional subuser).
pub const SENDGRID_EU_API_HOST: &str = "api.eu.sendgrid.com";

/// Sending through SendGrid's v3 Mail Send API (`POST /v3/mail/send`), feature
/// `providers`: from the URL `sendgrid://API_KEY` (`?region=eu` for EU data residency).
///
/// `Display` and `Debug` never show the API key.
#[derive(Clone, PartialEq, Eq)]
pub struct SendGridConfig {
    pub(crate) key: String,
    pub(crate) endpoint: ApiEndpoint,
}

impl SendGridConfig {
    /// Sends with the API key `key` (it needs the Mail Send permission) to
    /// `api.sendgrid.com` over HTTPS.
    pub fn new(key: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            endpoint: ApiEndpoint::new(SENDGRID_API_HOST),
        }
    }

    /// The EU data residency host, `api.eu.sendgrid.com` (for an EU regional subuser's
    /// key).
    pub fn eu(self) -> Self {
        self.host(SENDGRID_EU_API_HOST, None)
    }

    super::endpoint::api_endpoint_methods!();

    pub(crate) fn check(&self) -> Result<(), ConfigError> {
        if self.key.trim().is_empty() {
            return Err(ConfigError::new(
                "key",
                "the SendGrid API key is empty: sendgrid://API_KEY",
            ));
        }
        if self.key.chars().any(|c| c.is_control() || c == ' ') {
            return Err(ConfigError::new(
                "key",
                "the SendGrid API key holds a space or a control character; copy it again \
                 from SendGrid's API Keys page",
            ));
        }
        self.endpoint.check("SendGrid", "API key")
    }
}

/// As a URL with the key replaced by `***`.
impl fmt::Display for SendGridConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("sendgrid://***?")?;
        let mut endpoint = self.endpoint.clone();
        if endpoint.host == SENDGRID_EU_API_HOST && endpoint.port.is_none() {
            f.write_str("region=eu&")?;
            endpoint.default_host = SENDGRID_EU_API_HOST;
        }
        endpoint.write_params(f, true)
    }
}

impl fmt::Debug for SendGridConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SendGridConfig")
            .field("key", &"***")
            .field("endpoint", &self.endpoint)
            .finish()
    }
}
