//! Mailgun settings (feature `providers`): the API key, the sending domain and the API
//! host (its region).

use std::{fmt, time::Duration};

use super::postmark::is_loopback;
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
    pub(crate) host: String,
    pub(crate) port: Option<u16>,
    pub(crate) tls: bool,
    pub(crate) connect_timeout: Duration,
    pub(crate) timeout: Duration,
}

impl MailgunConfig {
    /// Sends with the API key `key` for the sending domain `domain` (as registered at
    /// Mailgun, e.g. `mg.example.com`) to `api.mailgun.net` (the US region) over HTTPS.
    pub fn new(key: impl Into<String>, domain: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            domain: domain.into(),
            host: MAILGUN_API_HOST.to_owned(),
            port: None,
            tls: true,
            connect_timeout: Duration::from_secs(10),
            timeout: Duration::from_secs(30),
        }
    }

    /// The EU region's API host, `api.eu.mailgun.net` (a domain lives in one region).
    pub fn eu(self) -> Self {
        self.host(MAILGUN_EU_API_HOST, None)
    }

    /// Another API host (and port), e.g. a test server; HTTPS unless
    /// [`plain_http`](Self::plain_http) is set.
    pub fn host(mut self, host: impl Into<String>, port: Option<u16>) -> Self {
        self.host = host.into();
        self.port = port;
        self
    }

    /// Plain HTTP instead of HTTPS (`?tls=none`): refused for any host that is not
    /// loopback (`127.0.0.0/8`, `::1`, `localhost`), for tests only.
    pub fn plain_http(mut self) -> Self {
        self.tls = false;
        self
    }

    /// How long connecting may take (default 10 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long one request may take, from connecting to the whole answer (default 30 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The sending domain.
    pub fn domain(&self) -> &str {
        &self.domain
    }

    /// The API host.
    pub fn api_host(&self) -> &str {
        &self.host
    }

    /// The port: the one given, else 443 (HTTPS) or 80.
    pub fn effective_port(&self) -> u16 {
        self.port.unwrap_or(if self.tls { 443 } else { 80 })
    }

    /// True when requests go over HTTPS.
    pub fn is_tls(&self) -> bool {
        self.tls
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
        if self.host.is_empty() {
            return Err(ConfigError::new("host", "the Mailgun API host is empty"));
        }
        if !self.tls && !is_loopback(&self.host) {
            return Err(ConfigError::new(
                "tls",
                format!(
                    "tls=none (plain HTTP) is only for a test server on loopback, not for {:?}: \
                     the API key would travel in clear",
                    self.host
                ),
            ));
        }
        Ok(())
    }
}

/// As a URL with the key replaced by `***`.
impl fmt::Display for MailgunConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "mailgun://***@{}?", self.domain)?;
        match (self.host.as_str(), self.port) {
            (MAILGUN_API_HOST, None) => {}
            (MAILGUN_EU_API_HOST, None) => f.write_str("region=eu&")?,
            (host, port) => {
                match host.contains(':') {
                    true => write!(f, "host=[{host}]")?,
                    false => write!(f, "host={host}")?,
                }
                if let Some(port) = port {
                    write!(f, ":{port}")?;
                }
                f.write_str("&")?;
            }
        }
        if !self.tls {
            f.write_str("tls=none&")?;
        }
        write!(
            f,
            "connect_timeout={:?}&timeout={:?}",
            self.connect_timeout, self.timeout
        )
    }
}

impl fmt::Debug for MailgunConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MailgunConfig")
            .field("key", &"***")
            .field("domain", &self.domain)
            .field("host", &self.host)
            .field("port", &self.port)
            .field("tls", &self.tls)
            .field("connect_timeout", &self.connect_timeout)
            .field("timeout", &self.timeout)
            .finish()
    }
}
