//! Opening one ready-to-send SMTP connection: TCP (no Nagle), TLS, EHLO, AUTH.
//!
//! Failure modes: every failure here is about the server or the configuration, not a
//! message, so it is transient ([`Stage::Connect`], [`Stage::Tls`], [`Stage::Auth`]).
//! Credentials are never sent over an unencrypted connection unless `tls=none` was chosen.

use std::{net::IpAddr, time::Duration};

use lettre::transport::smtp::{
    authentication::{Credentials as LettreCredentials, Mechanism},
    client::{AsyncSmtpConnection, AsyncTokioStream, Certificate, TlsParameters},
    extension::ClientId,
};

use super::stream;
use crate::{config::Credentials, ConfigError, Security, SendError, SmtpConfig, Stage};

/// Everything needed to open connections to one server, prepared once.
pub(crate) struct Connector {
    host: String,
    port: u16,
    security: Security,
    credentials: Option<Credentials>,
    hello: ClientId,
    tls: Option<TlsParameters>,
    connect_timeout: Duration,
}

impl Connector {
    /// Prepares the TLS parameters (with any extra roots) and the EHLO name.
    pub(crate) fn new(config: &SmtpConfig) -> Result<Self, ConfigError> {
        let tls = match config.security {
            Security::None => None,
            _ => {
                let mut builder = TlsParameters::builder(config.host.clone());
                for (i, root) in config.root_certificates.iter().enumerate() {
                    let cert = Certificate::from_pem(&root.0).map_err(|e| {
                        ConfigError::new(
                            "ca_file",
                            format!(
                                "extra root certificate #{} is not a PEM certificate: {e}",
                                i + 1
                            ),
                        )
                    })?;
                    builder = builder.add_root_certificate(cert);
                }
                Some(builder.build_rustls().map_err(|e| {
                    ConfigError::new("tls", format!("cannot set up TLS for {}: {e}", config.host))
                })?)
            }
        };
        let hello = match &config.hello_name {
            None => ClientId::default(),
            Some(name) => match name.parse::<IpAddr>() {
                Ok(IpAddr::V4(ip)) => ClientId::Ipv4(ip),
                Ok(IpAddr::V6(ip)) => ClientId::Ipv6(ip),
                Err(_) => ClientId::Domain(name.clone()),
            },
        };
        Ok(Self {
            host: config.host.clone(),
            port: config.effective_port(),
            security: config.security,
            credentials: config.credentials.clone(),
            hello,
            tls,
            connect_timeout: config.connect_timeout,
        })
    }

    /// Opens a connection ready for `MAIL FROM`, within the connect timeout.
    pub(crate) async fn connect(&self) -> Result<AsyncSmtpConnection, SendError> {
        tokio::time::timeout(self.connect_timeout, self.open())
            .await
            .map_err(|_| SendError::Timeout {
                stage: Stage::Connect,
                after: self.connect_timeout,
            })?
    }

    async fn open(&self) -> Result<AsyncSmtpConnection, SendError> {
        let tcp = stream::tcp(&self.host, self.port)
            .await
            .map_err(|e| SendError::Connection {
                stage: Stage::Connect,
                reason: format!("cannot connect to {}:{}: {e}", self.host, self.port),
            })?;
        let socket: Box<dyn AsyncTokioStream> = match (&self.security, &self.tls) {
            (Security::Implicit, Some(tls)) => stream::implicit_tls(tcp, tls.clone())
                .await
                .map_err(|e| SendError::from_lettre(Stage::Tls, e))?,
            _ => Box::new(tcp),
        };
        let mut conn = AsyncSmtpConnection::connect_with_transport(socket, &self.hello)
            .await
            .map_err(|e| SendError::from_lettre(Stage::Connect, e))?;
        let mut encrypted = self.security == Security::Implicit;
        if let (Security::Opportunistic | Security::StartTlsRequired, Some(tls)) =
            (&self.security, &self.tls)
        {
            if conn.can_starttls() {
                conn.starttls(tls.clone(), &self.hello)
                    .await
                    .map_err(|e| SendError::from_lettre(Stage::Tls, e))?;
                encrypted = true;
            } else if self.security == Security::StartTlsRequired {
                return Err(SendError::Connection {
                    stage: Stage::Tls,
                    reason: format!(
                        "{} does not offer STARTTLS, which tls=required insists on; use smtps:// \
                         if it speaks TLS on another port",
                        self.host
                    ),
                });
            }
        }
        if let Some(credentials) = &self.credentials {
            if !encrypted && self.security != Security::None {
                return Err(SendError::Connection {
                    stage: Stage::Auth,
                    reason: format!(
                        "{} did not offer STARTTLS, so the password would travel unencrypted and \
                         was not sent; use tls=required or smtps://, or tls=none to allow it",
                        self.host
                    ),
                });
            }
            let lettre_credentials =
                LettreCredentials::new(credentials.user.clone(), credentials.password.clone());
            conn.auth(&[Mechanism::Plain, Mechanism::Login], &lettre_credentials)
                .await
                .map_err(|e| SendError::from_lettre(Stage::Auth, e))?;
        }
        Ok(conn)
    }
}
