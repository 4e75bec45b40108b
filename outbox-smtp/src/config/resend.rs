//! Resend settings (feature `providers`): the API key and the API host.

use std::fmt;

use super::endpoint::ApiEndpoint;
use crate::ConfigError;

/// Resend's API host.
pub const RESEND_API_HOST: &str = "api.resend.com";

/// Sending through Resend's Email API (`POST /emails`), feature `providers`: from the URL
/// `resend://API_KEY`. Each request carries the outbox message id as its
/// `Idempotency-Key`, so a retry after a lost answer is not sent twice (Resend keeps a
/// key for 24 hours).
///
/// `Display` and `Debug` never show the API key.
#[derive(Clone, PartialEq, Eq)]
pub struct ResendConfig {
    pub(crate) key: String,
    pub(crate) endpoint: ApiEndpoint,
}

impl ResendConfig {
    /// Sends with the API key `key` (`re_...`; a sending-only key is enough) to
    /// `api.resend.com` over HTTPS.
    pub fn new(key: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            endpoint: ApiEndpoint::new(RESEND_API_HOST),
        }
    }

    super::endpoint::api_endpoint_methods!();

    pub(crate) fn check(&self) -> Result<(), ConfigError> {
        if self.key.trim().is_empty() {
            return Err(ConfigError::new(
                "key",
                "the Resend API key is empty: resend://API_KEY",
            ));
        }
        if self.key.chars().any(|c| c.is_control() || c == ' ') {
            return Err(ConfigError::new(
                "key",
                "the Resend API key holds a space or a control character; copy it again \
                 from Resend's API Keys page",
            ));
        }
        self.endpoint.check("Resend", "API key")
    }
}

/// As a URL with the key replaced by `***`.
impl fmt::Display for ResendConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("resend://***?")?;
        self.endpoint.write_params(f, true)
    }
}

impl fmt::Debug for ResendConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResendConfig")
            .field("key", &"***")
            .field("endpoint", &self.endpoint)
            .finish()
    }
}
