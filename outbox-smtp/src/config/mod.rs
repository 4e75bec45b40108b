//! How and where mail is delivered: SMTP (from a URL or a struct), or a development
//! transport that writes files or logs.
//!
//! Failure modes: a URL or setting that cannot work is refused when the [`Mailer`](crate::Mailer)
//! is built, with a [`ConfigError`](crate::ConfigError) that names the setting and never
//! contains the password. Nothing here touches the network.

#[cfg(feature = "providers")]
mod endpoint;
#[cfg(feature = "providers")]
mod mailgun;
#[cfg(feature = "providers")]
mod postmark;
#[cfg(feature = "providers")]
mod resend;
#[cfg(feature = "providers")]
mod sendgrid;
#[cfg(feature = "providers")]
mod ses;
mod smtp;
mod url;
mod values;

use std::{fmt, path::PathBuf};

#[cfg(feature = "providers")]
pub(crate) use endpoint::is_loopback;
#[cfg(feature = "providers")]
pub(crate) use endpoint::ApiEndpoint;
#[cfg(feature = "providers")]
pub use mailgun::{MailgunConfig, MAILGUN_API_HOST, MAILGUN_EU_API_HOST};
#[cfg(feature = "providers")]
pub use postmark::{PostmarkConfig, POSTMARK_API_HOST};
#[cfg(feature = "providers")]
pub use resend::{ResendConfig, RESEND_API_HOST};
#[cfg(feature = "providers")]
pub use sendgrid::{SendGridConfig, SENDGRID_API_HOST, SENDGRID_EU_API_HOST};
#[cfg(feature = "providers")]
pub use ses::SesConfig;
pub use smtp::{Credentials, Security, SmtpConfig};

use crate::{ConfigError, TestRedirect};

/// Where the mailer sends mail.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Transport {
    /// An SMTP server.
    Smtp(SmtpConfig),
    /// A directory: each message becomes `<message id>.eml` (development).
    File(PathBuf),
    /// The log: each message is logged through `tracing` at INFO (development).
    Log,
    /// Memory: each message is kept, rendered, for a test to read back
    /// ([`Mailer::sent`](crate::Mailer::sent)).
    Capture,
    /// Postmark's Email API over HTTPS (feature `providers`).
    #[cfg(feature = "providers")]
    Postmark(PostmarkConfig),
    /// Amazon SES's v2 API (`SendEmail`, raw MIME, SigV4) over HTTPS (feature `providers`).
    #[cfg(feature = "providers")]
    Ses(SesConfig),
    /// Mailgun's `messages.mime` API over HTTPS (feature `providers`).
    #[cfg(feature = "providers")]
    Mailgun(MailgunConfig),
    /// SendGrid's v3 Mail Send API over HTTPS (feature `providers`).
    #[cfg(feature = "providers")]
    SendGrid(SendGridConfig),
    /// Resend's Email API over HTTPS (feature `providers`).
    #[cfg(feature = "providers")]
    Resend(ResendConfig),
}

/// Everything a [`Mailer`](crate::Mailer) needs: the transport, the Message-ID domain
/// and the test-mode redirect.
///
/// `Display` shows the configuration as a URL with the password replaced by `***`; `Debug`
/// hides it too.
#[derive(Debug, Clone)]
pub struct MailerConfig {
    pub(crate) transport: Transport,
    pub(crate) message_id_domain: Option<String>,
    pub(crate) redirect: Option<TestRedirect>,
    #[cfg(feature = "dkim")]
    pub(crate) dkim: Vec<crate::DkimSigner>,
    pub(crate) unsubscribe: Option<crate::Unsubscribe>,
    pub(crate) unknown_users: crate::UnknownUsers,
}

impl MailerConfig {
    /// Reads a configuration from a URL:
    ///
    /// * `smtp://user:password@host:587` — STARTTLS when the server offers it
    ///   (`?tls=required` insists on it, `?tls=none` never upgrades);
    /// * `smtps://user:password@host:465` — TLS from the first byte;
    /// * `file:///var/mail/outbox` or `file://relative/dir` — `.eml` files;
    /// * `log://` — log lines;
    /// * `postmark://SERVER_TOKEN@api.postmarkapp.com?stream=outbound` — Postmark's Email
    ///   API over HTTPS (feature `providers`); the host may be left out
    ///   (`postmark://SERVER_TOKEN@`... defaults to `api.postmarkapp.com`), `stream` is the
    ///   `MessageStream` (default: the server's own), `connect_timeout=10s` and
    ///   `timeout=30s` (the whole request) as for SMTP. `?tls=none` speaks plain HTTP and
    ///   is accepted only for a loopback host (a test server:
    ///   `postmark://TOKEN@127.0.0.1:8025?tls=none`). The token is percent-decoded and
    ///   never shown by `Display` or `Debug`.
    /// * `mailgun://API_KEY@mg.example.com?region=eu` — Mailgun's `messages.mime` API
    ///   over HTTPS (feature `providers`): the host part is the sending domain, the API
    ///   host is `api.mailgun.net` (US) unless `region=eu` (`api.eu.mailgun.net`) or
    ///   `host=HOST[:PORT]` names another; the email goes as the same MIME bytes SMTP
    ///   would send (DKIM-signed when configured; raw emails too), to every envelope
    ///   recipient (Bcc included). `connect_timeout`, `timeout` and `tls=none` (loopback
    ///   only: `mailgun://KEY@mg.example.com?host=127.0.0.1:8025&tls=none`) as for
    ///   Postmark. The key is percent-decoded and never shown by `Display` or `Debug`.
    /// * `sendgrid://API_KEY` — SendGrid's v3 Mail Send API over HTTPS (feature
    ///   `providers`): the email's fields as SendGrid's JSON (tags as categories, the
    ///   outbox message id in `custom_args`), to `api.sendgrid.com`, or
    ///   `api.eu.sendgrid.com` with `region=eu` (EU data residency); `host=HOST[:PORT]`,
    ///   `connect_timeout`, `timeout`, `pool` and `tls=none` (loopback only:
    ///   `sendgrid://KEY?host=127.0.0.1:8025&tls=none`) as for Mailgun. An email over
    ///   SendGrid's limits (30 MB, 1000 recipients) is a dead letter before it is sent.
    /// * `resend://API_KEY` — Resend's Email API over HTTPS (feature `providers`): the
    ///   email's fields as Resend's JSON to `api.resend.com`, with the outbox message id
    ///   as the `Idempotency-Key` (a retry is never sent twice) and as the tag
    ///   `outbox_message_id`; the parameters as for SendGrid but `region`. An email over
    ///   Resend's limits (40 MB, 50 recipients) is a dead letter before it is sent. Both
    ///   keys are percent-decoded and never shown by `Display` or `Debug`.
    /// * `ses://eu-west-1?configuration_set=transactional&tag=campaign:nov` — Amazon
    ///   SES's v2 API (`SendEmail` with the MIME SMTP would send as `Raw` content,
    ///   DKIM-signed when configured, to every envelope recipient; signed with AWS SigV4)
    ///   in that region, at `email.REGION.amazonaws.com` (feature `providers`).
    ///   `configuration_set` is the `ConfigurationSetName`, each `tag=NAME:VALUE` an
    ///   `EmailTags` entry; `host=HOST[:PORT]`, `connect_timeout`, `timeout`, `pool` and
    ///   `tls=none` (loopback only: `ses://eu-west-1?host=127.0.0.1:4566&tls=none`) as for
    ///   Mailgun. AWS keys are never in the URL: they come from the environment
    ///   (`AWS_ACCESS_KEY_ID`...), a web identity (`AWS_WEB_IDENTITY_TOKEN_FILE` and
    ///   `AWS_ROLE_ARN`, through STS), the shared files (`~/.aws/credentials` and
    ///   `~/.aws/config`, static keys only), a container's credentials endpoint (ECS) or
    ///   the EC2 instance's role (IMDSv2), in that order (see `SesConfig`). An email over
    ///   SES's limits (40 MB, 50 recipients) is a dead letter before it is sent.
    ///
    /// Query parameters (SMTP): `pool=4`, `helo=mail.example.com`, `connect_timeout=10s`,
    /// `timeout=60s` (each command), `idle_timeout=60s`, `ca_file=/path/ca.pem` (an extra
    /// trusted root). For every transport: `message_id_domain=example.com`,
    /// `test_redirect=qa@example.com` or `test_redirect_domain=test.example.com`, and
    /// `test_redirect_only=tag1,tag2`. User and password are percent-decoded.
    pub fn from_url(url: &str) -> Result<Self, ConfigError> {
        url::parse(url)
    }

    /// Sends through SMTP.
    pub fn smtp(config: SmtpConfig) -> Self {
        Self::with_transport(Transport::Smtp(config))
    }

    /// Writes each message into `dir` as `<message id>.eml` (created if missing).
    pub fn file(dir: impl Into<PathBuf>) -> Self {
        Self::with_transport(Transport::File(dir.into()))
    }

    /// Sends through Postmark's Email API (feature `providers`).
    #[cfg(feature = "providers")]
    pub fn postmark(config: PostmarkConfig) -> Self {
        Self::with_transport(Transport::Postmark(config))
    }

    /// Sends through Amazon SES's v2 API (feature `providers`).
    #[cfg(feature = "providers")]
    pub fn ses(config: SesConfig) -> Self {
        Self::with_transport(Transport::Ses(config))
    }

    /// Sends through Mailgun's `messages.mime` API (feature `providers`).
    #[cfg(feature = "providers")]
    pub fn mailgun(config: MailgunConfig) -> Self {
        Self::with_transport(Transport::Mailgun(config))
    }

    /// Sends through SendGrid's v3 Mail Send API (feature `providers`).
    #[cfg(feature = "providers")]
    pub fn sendgrid(config: SendGridConfig) -> Self {
        Self::with_transport(Transport::SendGrid(config))
    }

    /// Sends through Resend's Email API (feature `providers`).
    #[cfg(feature = "providers")]
    pub fn resend(config: ResendConfig) -> Self {
        Self::with_transport(Transport::Resend(config))
    }

    /// Logs each message instead of sending it.
    pub fn log() -> Self {
        Self::with_transport(Transport::Log)
    }

    /// Keeps each message in memory instead of sending it, for tests: read them back with
    /// [`Mailer::sent`](crate::Mailer::sent) and [`Mailer::assert_sent_to`](crate::Mailer::assert_sent_to).
    pub fn capture() -> Self {
        Self::with_transport(Transport::Capture)
    }

    /// Uses `transport`.
    pub fn with_transport(transport: Transport) -> Self {
        Self {
            transport,
            message_id_domain: None,
            redirect: None,
            #[cfg(feature = "dkim")]
            dkim: Vec::new(),
            unsubscribe: None,
            unknown_users: crate::UnknownUsers::default(),
        }
    }

    /// The domain of generated Message-IDs (`<ulid@domain>`); default: the domain of each
    /// email's sender.
    pub fn message_id_domain(mut self, domain: impl Into<String>) -> Self {
        self.message_id_domain = Some(domain.into());
        self
    }

    /// Rewrites recipients for testing (default: off); see [`TestRedirect`].
    pub fn test_redirect(mut self, redirect: TestRedirect) -> Self {
        self.redirect = Some(redirect);
        self
    }

    /// Signs every email with DKIM (feature `dkim`). Call once per sending domain: an email
    /// is signed by the signer whose domain is its `From` domain or a parent of it, else by
    /// the first one given (signed, but not aligned for DMARC; a WARN says so). See
    /// [`DkimSigner`](crate::DkimSigner).
    #[cfg(feature = "dkim")]
    pub fn dkim(mut self, signer: crate::DkimSigner) -> Self {
        self.dkim.push(signer);
        self
    }

    /// Gives list emails ([`EmailBuilder::list`](crate::EmailBuilder::list)) one-click
    /// unsubscribe headers (RFC 8058) pointing at `unsubscribe`'s URL. Without it a list
    /// email is not sent: an outbox whose oldest waiting emails include one refuses to
    /// start ([`Handler::refuses`](outbox_core::Handler::refuses)); one enqueued later is
    /// put back by the worker for
    /// [`LIST_WITHOUT_UNSUBSCRIBE_WAIT`](crate::LIST_WITHOUT_UNSUBSCRIBE_WAIT) (no attempt
    /// used, never a dead letter) with a reason, and logs an ERROR, that name this setting;
    /// [`Mailer::deliver`](crate::Mailer::deliver) refuses it.
    pub fn unsubscribe(mut self, unsubscribe: crate::Unsubscribe) -> Self {
        self.unsubscribe = Some(unsubscribe);
        self
    }

    /// Which emails put their recipient on the suppression list when the receiving server
    /// answers that the address does not exist (a permanent `550 5.1.1` "user unknown",
    /// see [`is_unknown_user`](crate::is_unknown_user)); default: list emails
    /// ([`UnknownUsers::SuppressListEmail`](crate::UnknownUsers::SuppressListEmail)). The
    /// message itself becomes a dead letter either way. The addresses are written to the
    /// suppression list of the outbox the message came from
    /// ([`MessageContext::suppress`](outbox_core::MessageContext::suppress)), as soon as the
    /// reply arrives; nothing else needs wiring.
    pub fn unknown_users(mut self, policy: crate::UnknownUsers) -> Self {
        self.unknown_users = policy;
        self
    }

    /// The transport.
    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    /// Explains a setting that cannot work.
    pub(crate) fn check(&self) -> Result<(), ConfigError> {
        if let Some(domain) = &self.message_id_domain {
            let ok = !domain.is_empty()
                && domain
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'));
            if !ok {
                return Err(ConfigError::new(
                    "message_id_domain",
                    format!(
                        "{domain:?} is not a domain name of ASCII letters, digits, '.' and '-'"
                    ),
                ));
            }
        }
        if let Some(redirect) = &self.redirect {
            redirect.check()?;
        }
        if let Some(unsubscribe) = &self.unsubscribe {
            unsubscribe.check()?;
        }
        match &self.transport {
            Transport::Smtp(smtp) => smtp.check(),
            #[cfg(feature = "providers")]
            Transport::Postmark(postmark) => postmark.check(),
            #[cfg(feature = "providers")]
            Transport::Ses(ses) => ses.check(),
            #[cfg(feature = "providers")]
            Transport::Mailgun(mailgun) => mailgun.check(),
            #[cfg(feature = "providers")]
            Transport::SendGrid(sendgrid) => sendgrid.check(),
            #[cfg(feature = "providers")]
            Transport::Resend(resend) => resend.check(),
            Transport::File(dir) if dir.as_os_str().is_empty() => Err(ConfigError::new(
                "file",
                "the directory is empty; write file:///absolute/dir or file://relative/dir",
            )),
            _ => Ok(()),
        }
    }
}

impl fmt::Display for MailerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut sep = '?';
        match &self.transport {
            Transport::Smtp(smtp) => {
                fmt::Display::fmt(smtp, f)?;
                sep = '&';
            }
            #[cfg(feature = "providers")]
            Transport::Postmark(postmark) => {
                fmt::Display::fmt(postmark, f)?;
                sep = '&';
            }
            #[cfg(feature = "providers")]
            Transport::Ses(ses) => {
                fmt::Display::fmt(ses, f)?;
                sep = '&';
            }
            #[cfg(feature = "providers")]
            Transport::Mailgun(mailgun) => {
                fmt::Display::fmt(mailgun, f)?;
                sep = '&';
            }
            #[cfg(feature = "providers")]
            Transport::SendGrid(sendgrid) => {
                fmt::Display::fmt(sendgrid, f)?;
                sep = '&';
            }
            #[cfg(feature = "providers")]
            Transport::Resend(resend) => {
                fmt::Display::fmt(resend, f)?;
                sep = '&';
            }
            Transport::File(dir) => write!(f, "file://{}", dir.display())?,
            Transport::Log => f.write_str("log://")?,
            Transport::Capture => f.write_str("capture://")?,
        }
        if let Some(domain) = &self.message_id_domain {
            write!(f, "{sep}message_id_domain={domain}")?;
            sep = '&';
        }
        if let Some(redirect) = &self.redirect {
            write!(f, "{sep}{redirect}")?;
        }
        Ok(())
    }
}
