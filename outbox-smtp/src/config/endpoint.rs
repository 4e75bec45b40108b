//! Where a provider's HTTP API is reached, shared by every API transport (feature
//! `providers`): the host and port, HTTPS or (to a loopback test server only) plain
//! HTTP, the timeouts and how many connections are kept open. One parser for their URL
//! parameters, one check, one way of showing them.

use std::{fmt, time::Duration};

use crate::ConfigError;

/// URL parameters every API transport takes, for error messages.
pub(crate) const ENDPOINT_PARAMS: &str = "host (HOST[:PORT], e.g. a loopback test server), \
     tls (none, for a loopback test server), connect_timeout, timeout, pool";

/// A provider's API endpoint and the client's limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiEndpoint {
    /// The provider's own host, `host` as long as no other is named.
    pub(crate) default_host: &'static str,
    pub(crate) host: String,
    pub(crate) port: Option<u16>,
    pub(crate) tls: bool,
    pub(crate) connect_timeout: Duration,
    pub(crate) timeout: Duration,
    /// Connections kept open for reuse (keep-alive).
    pub(crate) pool: usize,
}

impl ApiEndpoint {
    /// The provider's API at `host`, over HTTPS, with the default timeouts (10 s to
    /// connect, 30 s per request) and up to 16 kept-alive connections.
    pub(crate) fn new(host: &'static str) -> Self {
        Self {
            default_host: host,
            host: host.to_owned(),
            port: None,
            tls: true,
            connect_timeout: Duration::from_secs(10),
            timeout: Duration::from_secs(30),
            pool: 16,
        }
    }

    /// True when a host other than the provider's own was named.
    pub(crate) fn host_named(&self) -> bool {
        self.port.is_some() || self.host != self.default_host
    }

    /// The port: the one given, else 443 (HTTPS) or 80.
    pub(crate) fn effective_port(&self) -> u16 {
        self.port.unwrap_or(if self.tls { 443 } else { 80 })
    }

    /// Applies the URL parameter `key=value` when it is one of the endpoint's; `Ok(false)`
    /// when it is not (the provider's own parameters, or a mistake).
    pub(crate) fn param(&mut self, key: &str, value: &str) -> Result<bool, ConfigError> {
        match key {
            "host" => {
                if self.host_named() {
                    return Err(ConfigError::new(
                        key,
                        "the API host is named twice: give it once",
                    ));
                }
                let (host, port) = host_port(value)?;
                self.host = host;
                self.port = port;
            }
            "tls" => {
                self.tls = match value {
                    "none" => false,
                    "required" | "https" => true,
                    _ => {
                        return Err(ConfigError::new(
                            "tls",
                            format!("{value:?} is not one of required, none"),
                        ))
                    }
                }
            }
            "connect_timeout" => self.connect_timeout = super::values::duration(key, value)?,
            "timeout" => self.timeout = super::values::duration(key, value)?,
            "pool" => {
                self.pool = value
                    .parse::<usize>()
                    .ok()
                    .filter(|n| (1..=1024).contains(n))
                    .ok_or_else(|| {
                        ConfigError::new("pool", format!("{value:?} is not a number 1 to 1024"))
                    })?
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Why these settings cannot work: no host, or plain HTTP to anything but loopback
    /// (`secret` would travel in clear).
    pub(crate) fn check(&self, provider: &str, secret: &str) -> Result<(), ConfigError> {
        if self.host.is_empty() {
            return Err(ConfigError::new(
                "host",
                format!("the {provider} API host is empty"),
            ));
        }
        if !self.tls && !is_loopback(&self.host) {
            return Err(ConfigError::new(
                "tls",
                format!(
                    "tls=none (plain HTTP) is only for a test server on loopback, not for {:?}: \
                     the {secret} would travel in clear",
                    self.host
                ),
            ));
        }
        if self.pool == 0 {
            return Err(ConfigError::new("pool", "must be at least 1"));
        }
        Ok(())
    }

    /// Writes the parameters that differ from the provider's defaults (the host too when
    /// `with_host`, else the URL shows it before the query), each followed by `&`, then
    /// the timeouts (the last, with no `&` after).
    pub(crate) fn write_params(&self, f: &mut fmt::Formatter<'_>, with_host: bool) -> fmt::Result {
        if with_host && self.host_named() {
            match self.host.contains(':') {
                true => write!(f, "host=[{}]", self.host)?,
                false => write!(f, "host={}", self.host)?,
            }
            if let Some(port) = self.port {
                write!(f, ":{port}")?;
            }
            f.write_str("&")?;
        }
        if !self.tls {
            f.write_str("tls=none&")?;
        }
        if self.pool != 16 {
            write!(f, "pool={}&", self.pool)?;
        }
        write!(
            f,
            "connect_timeout={:?}&timeout={:?}",
            self.connect_timeout, self.timeout
        )
    }
}

/// `HOST` or `HOST:PORT` (an IPv6 address in `[]`).
fn host_port(value: &str) -> Result<(String, Option<u16>), ConfigError> {
    let bad = || {
        ConfigError::new(
            "host",
            format!("{value:?} is not HOST or HOST:PORT (an IPv6 address in [])"),
        )
    };
    let (host, port) = match value.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') || host.ends_with(']') => {
            (host, Some(port.parse::<u16>().map_err(|_| bad())?))
        }
        _ => (value, None),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() || host.contains(['/', '@', '?', '#', ' ']) {
        return Err(bad());
    }
    Ok((host.to_owned(), port))
}

/// True for `localhost` and loopback addresses.
pub(crate) fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The endpoint's builder methods on a provider's config (a struct with an
/// `endpoint: ApiEndpoint` field), written once for every provider.
macro_rules! api_endpoint_builders {
    () => {
        /// Another API host (and port), e.g. a test server; HTTPS unless
        /// [`plain_http`](Self::plain_http) is set (URL: `?host=HOST:PORT`).
        pub fn host(mut self, host: impl Into<String>, port: Option<u16>) -> Self {
            self.endpoint.host = host.into();
            self.endpoint.port = port;
            self
        }

        /// Plain HTTP instead of HTTPS (`?tls=none`): refused for any host that is not
        /// loopback (`127.0.0.0/8`, `::1`, `localhost`), for tests only.
        pub fn plain_http(mut self) -> Self {
            self.endpoint.tls = false;
            self
        }

        /// How long connecting may take (default 10 s; `?connect_timeout=`).
        pub fn connect_timeout(mut self, timeout: std::time::Duration) -> Self {
            self.endpoint.connect_timeout = timeout;
            self
        }

        /// How long one request may take, from connecting to the whole answer (default
        /// 30 s; `?timeout=`).
        pub fn timeout(mut self, timeout: std::time::Duration) -> Self {
            self.endpoint.timeout = timeout;
            self
        }

        /// How many idle connections are kept open for the next requests (default 16;
        /// `?pool=`). More requests at once open more connections; those beyond the pool
        /// are closed after their answer.
        pub fn pool(mut self, connections: usize) -> Self {
            self.endpoint.pool = connections;
            self
        }

        /// The port: the one given, else 443 (HTTPS) or 80.
        pub fn effective_port(&self) -> u16 {
            self.endpoint.effective_port()
        }

        /// True when requests go over HTTPS.
        pub fn is_tls(&self) -> bool {
            self.endpoint.tls
        }
    };
}
pub(crate) use api_endpoint_builders;

/// [`api_endpoint_builders`] and the API host's getter, for a provider whose host is
/// the endpoint's.
macro_rules! api_endpoint_methods {
    () => {
        super::endpoint::api_endpoint_builders!();

        /// The API host.
        pub fn api_host(&self) -> &str {
            &self.endpoint.host
        }
    };
}
pub(crate) use api_endpoint_methods;
