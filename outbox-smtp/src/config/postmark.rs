//! Postmark settings (feature `providers`): the server token, the API host and the
//! message stream.

use std::fmt;

use super::endpoint::ApiEndpoint;
use crate::ConfigError;

/// Postmark's API host.
pub const POSTMARK_API_HOST: &str = "api.postmarkapp.com";

/// Sending through Postmark's Email API (`POST /email`), feature `providers`: from the URL
/// `postmark://SERVER_TOKEN@api.postmarkapp.com?stream=outbound`.
///
/// `Display` and `Debug` never show the server token.
#[derive(Clone, PartialEq, Eq)]
pub struct PostmarkConfig {
    pub(crate) token: String,
    pub(crate) endpoint: ApiEndpoint,
    pub(crate) stream: Option<String>,
}

impl PostmarkConfig {
    /// Sends with the server token `token` to `api.postmarkapp.com` over HTTPS, on the
    /// server's default message stream.
    pub fn new(token: impl Into<String>) -> Self {
        Self {
            token: token.into(),
            endpoint: ApiEndpoint::new(POSTMARK_API_HOST),
            stream: None,
        }
    }

    /// The message stream (`MessageStream`, e.g. `outbound` or `broadcast`).
    pub fn stream(mut self, stream: impl Into<String>) -> Self {
        self.stream = Some(stream.into());
        self
    }

    super::endpoint::api_endpoint_methods!();

    /// The message stream, if one is set.
    pub fn message_stream(&self) -> Option<&str> {
        self.stream.as_deref()
    }

    pub(crate) fn check(&self) -> Result<(), ConfigError> {
        if self.token.trim().is_empty() {
            return Err(ConfigError::new(
                "token",
                "the Postmark server token is empty: postmark://SERVER_TOKEN@api.postmarkapp.com",
            ));
        }
        self.endpoint.check("Postmark", "server token")
    }
}

/// As a URL with the token replaced by `***`.
impl fmt::Display for PostmarkConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let host = &self.endpoint.host;
        match host.contains(':') {
            true => write!(f, "postmark://***@[{host}]")?,
            false => write!(f, "postmark://***@{host}")?,
        }
        if let Some(port) = self.endpoint.port {
            write!(f, ":{port}")?;
        }
        f.write_str("?")?;
        if let Some(stream) = &self.stream {
            write!(f, "stream={stream}&")?;
        }
        self.endpoint.write_params(f, false)
    }
}

impl fmt::Debug for PostmarkConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostmarkConfig")
            .field("token", &"***")
            .field("endpoint", &self.endpoint)
            .field("stream", &self.stream)
            .finish()
    }
}
