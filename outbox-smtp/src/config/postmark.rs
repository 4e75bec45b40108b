//! Postmark settings (feature `providers`): the server token, the API host and the
//! message stream.

use std::{fmt, time::Duration};

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
    pub(crate) host: String,
    pub(crate) port: Option<u16>,
    pub(crate) tls: bool,
    pub(crate) stream: Option<String>,
    pub(crate) connect_timeout: Duration,
    pub(crate) timeout: Duration,
}

impl PostmarkConfig {
    /// Sends with the server token `token` to `api.postmarkapp.com` over HTTPS, on the
    /// server's default message stream.
    pub fn new(token: impl Into<String>) -> Self {
        Self {
            token: token.into(),
            host: POSTMARK_API_HOST.to_owned(),
            port: None,
            tls: true,
            stream: None,
            connect_timeout: Duration::from_secs(10),
            timeout: Duration::from_secs(30),
        }
    }

    /// The message stream (`MessageStream`, e.g. `outbound` or `broadcast`).
    pub fn stream(mut self, stream: impl Into<String>) -> Self {
        self.stream = Some(stream.into());
        self
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
        if self.host.is_empty() {
            return Err(ConfigError::new("host", "the Postmark API host is empty"));
        }
        if !self.tls && !is_loopback(&self.host) {
            return Err(ConfigError::new(
                "tls",
                format!(
                    "tls=none (plain HTTP) is only for a test server on loopback, not for {:?}: \
                     the server token would travel in clear",
                    self.host
                ),
            ));
        }
        Ok(())
    }
}

/// True for `localhost` and loopback addresses.
pub(crate) fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// As a URL with the token replaced by `***`.
impl fmt::Display for PostmarkConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "postmark://***@{}", self.host)?;
        if let Some(port) = self.port {
            write!(f, ":{port}")?;
        }
        f.write_str("?")?;
        if !self.tls {
            f.write_str("tls=none&")?;
        }
        if let Some(stream) = &self.stream {
            write!(f, "stream={stream}&")?;
        }
        write!(
            f,
            "connect_timeout={:?}&timeout={:?}",
            self.connect_timeout, self.timeout
        )
    }
}

impl fmt::Debug for PostmarkConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostmarkConfig")
            .field("token", &"***")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("tls", &self.tls)
            .field("stream", &self.stream)
            .field("connect_timeout", &self.connect_timeout)
            .field("timeout", &self.timeout)
            .finish()
    }
}
