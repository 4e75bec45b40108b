//! SMTP settings: server, TLS, credentials, pool size and timeouts.

use std::{fmt, time::Duration};

use crate::ConfigError;

/// The largest connection pool accepted. The pool's semaphore cannot hold more than
/// `usize::MAX >> 3` permits (tokio panics above that, e.g. on `?pool=2305843009213693952`),
/// and no SMTP server lets one client open anywhere near this many connections.
pub(crate) const MAX_POOL_SIZE: usize = 1024;

/// How the connection to the server is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Security {
    /// Plain connection upgraded with STARTTLS when the server offers it (`smtp://`, the
    /// default). The certificate is verified whenever TLS is used; credentials are never
    /// sent over a connection that stayed unencrypted.
    #[default]
    Opportunistic,
    /// STARTTLS is required: a server that does not offer it is an error (`?tls=required`).
    StartTlsRequired,
    /// TLS from the first byte (`smtps://`, port 465).
    Implicit,
    /// Never encrypt (`?tls=none`): only for a relay on the same host or network.
    None,
}

impl Security {
    fn url_name(self) -> &'static str {
        match self {
            Security::Opportunistic => "opportunistic",
            Security::StartTlsRequired => "required",
            Security::Implicit => "implicit",
            Security::None => "none",
        }
    }
}

/// A user name and password for SMTP AUTH (PLAIN or LOGIN).
///
/// `Debug` shows the user and hides the password.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub(crate) user: String,
    pub(crate) password: String,
}

impl Credentials {
    /// Credentials for `user`.
    pub fn new(user: impl Into<String>, password: impl Into<String>) -> Self {
        Self {
            user: user.into(),
            password: password.into(),
        }
    }

    /// The user name.
    pub fn user(&self) -> &str {
        &self.user
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("user", &self.user)
            .field("password", &"***")
            .finish()
    }
}

/// An SMTP server and how to talk to it.
///
/// Defaults: STARTTLS when offered, port 587 (465 for implicit TLS), no credentials, a pool
/// of 4 connections, 10 s to connect, 60 s per command, idle connections closed after 60 s.
#[derive(Debug, Clone)]
pub struct SmtpConfig {
    pub(crate) host: String,
    pub(crate) port: Option<u16>,
    pub(crate) security: Security,
    pub(crate) credentials: Option<Credentials>,
    pub(crate) hello_name: Option<String>,
    pub(crate) pool_size: usize,
    pub(crate) connect_timeout: Duration,
    pub(crate) command_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) root_certificates: Vec<RootCertificate>,
}

/// A PEM certificate trusted in addition to the public roots.
#[derive(Clone)]
pub(crate) struct RootCertificate(pub(crate) Vec<u8>);

impl fmt::Debug for RootCertificate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RootCertificate({} PEM bytes)", self.0.len())
    }
}

impl SmtpConfig {
    /// Settings for the server `host` with the defaults above.
    pub fn new(host: impl Into<String>) -> Self {
        Self {
            host: host.into(),
            port: None,
            security: Security::default(),
            credentials: None,
            hello_name: None,
            pool_size: 4,
            connect_timeout: Duration::from_secs(10),
            command_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(60),
            root_certificates: Vec::new(),
        }
    }

    /// The server's port (default 587, or 465 with [`Security::Implicit`]).
    pub fn port(mut self, port: u16) -> Self {
        self.port = Some(port);
        self
    }

    /// How the connection is protected.
    pub fn security(mut self, security: Security) -> Self {
        self.security = security;
        self
    }

    /// Authenticates with these credentials (only over an encrypted connection, unless
    /// [`Security::None`] is chosen).
    pub fn credentials(mut self, user: impl Into<String>, password: impl Into<String>) -> Self {
        self.credentials = Some(Credentials::new(user, password));
        self
    }

    /// The name sent with EHLO (default: `[127.0.0.1]`; set your host's name, some servers
    /// refuse address literals).
    pub fn hello_name(mut self, name: impl Into<String>) -> Self {
        self.hello_name = Some(name.into());
        self
    }

    /// The most connections open at once (messages beyond it wait for one); 1 to 1024.
    pub fn pool_size(mut self, n: usize) -> Self {
        self.pool_size = n;
        self
    }

    /// How long opening a connection (TCP, greeting, TLS, EHLO, AUTH) may take.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long one SMTP command (including the whole message data) may take.
    pub fn command_timeout(mut self, timeout: Duration) -> Self {
        self.command_timeout = timeout;
        self
    }

    /// Pooled connections idle longer than this are closed instead of reused.
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// Trusts this PEM certificate (a private CA) in addition to the public roots.
    /// Certificates are always verified.
    pub fn add_root_certificate_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.root_certificates.push(RootCertificate(pem.into()));
        self
    }

    /// The host name.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port in use: the one set, or the default for the security mode.
    pub fn effective_port(&self) -> u16 {
        self.port.unwrap_or(match self.security {
            Security::Implicit => 465,
            _ => 587,
        })
    }

    pub(crate) fn check(&self) -> Result<(), ConfigError> {
        if self.host.trim().is_empty() {
            return Err(ConfigError::new("host", "the SMTP host is empty"));
        }
        if self.pool_size == 0 {
            return Err(ConfigError::new("pool", "the pool size must be at least 1"));
        }
        if self.pool_size > MAX_POOL_SIZE {
            return Err(ConfigError::new(
                "pool",
                format!(
                    "the pool size {} is more than {MAX_POOL_SIZE} connections to one server",
                    self.pool_size
                ),
            ));
        }
        for (name, value) in [
            ("connect_timeout", self.connect_timeout),
            ("timeout", self.command_timeout),
        ] {
            if value.is_zero() {
                return Err(ConfigError::new(name, "the timeout must be positive"));
            }
        }
        if let Some(name) = &self.hello_name {
            if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c.is_control()) {
                return Err(ConfigError::new(
                    "helo",
                    format!("{name:?} is not a host name"),
                ));
            }
        }
        Ok(())
    }
}

/// The configuration as a URL, password replaced by `***`.
impl fmt::Display for SmtpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = match self.security {
            Security::Implicit => "smtps",
            _ => "smtp",
        };
        write!(f, "{scheme}://")?;
        if let Some(c) = &self.credentials {
            write!(f, "{}:***@", c.user)?;
        }
        write!(f, "{}:{}", self.host, self.effective_port())?;
        write!(
            f,
            "?tls={}&pool={}&connect_timeout={:?}&timeout={:?}",
            self.security.url_name(),
            self.pool_size,
            self.connect_timeout,
            self.command_timeout
        )?;
        if let Some(helo) = &self.hello_name {
            write!(f, "&helo={helo}")?;
        }
        if !self.root_certificates.is_empty() {
            write!(f, "&extra_roots={}", self.root_certificates.len())?;
        }
        Ok(())
    }
}
