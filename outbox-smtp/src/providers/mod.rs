//! Providers' HTTP APIs (feature `providers`): Postmark and Mailgun so far.
//!
//! Shape for the next ones (SES v2, SendGrid, Resend): a `config/<name>.rs` with its
//! settings and URL, a module here that turns the email into the provider's request, a
//! pure `classify` of its answers into an [`ApiVerdict`](crate::ApiVerdict), and one
//! variant of [`ApiSender`] (with its arms in the methods below); [`http`] carries the
//! request. A provider takes the email either as fields ([`ApiEmail`], Postmark) or as
//! the rendered MIME bytes ([`Rendered`], Mailgun: signed when DKIM is configured).

use crate::{
    config::Transport,
    render::{ApiEmail, Rendered},
    ConfigError, Email, SendError,
};

pub(crate) mod http;
pub(crate) mod mailgun;
pub(crate) mod postmark;

/// The mailer's sender for a provider's API.
pub(crate) enum ApiSender {
    Postmark(postmark::PostmarkSender),
    Mailgun(mailgun::MailgunSender),
}

impl ApiSender {
    /// The sender for `transport`, a provider's API.
    pub(crate) fn new(transport: &Transport) -> Result<Self, ConfigError> {
        Ok(match transport {
            Transport::Postmark(c) => Self::Postmark(postmark::PostmarkSender::new(c)?),
            Transport::Mailgun(c) => Self::Mailgun(mailgun::MailgunSender::new(c)?),
            other => {
                return Err(ConfigError::new(
                    "url",
                    format!("not a provider's API: {other:?}"),
                ))
            }
        })
    }

    /// The provider's name, for logs.
    pub(crate) fn provider(&self) -> &'static str {
        match self {
            Self::Postmark(_) => "postmark",
            Self::Mailgun(_) => "mailgun",
        }
    }

    /// True when the provider takes the email as fields ([`send_fields`](Self::send_fields)),
    /// false when it takes the rendered bytes ([`send_mime`](Self::send_mime)).
    pub(crate) fn takes_fields(&self) -> bool {
        match self {
            Self::Postmark(_) => true,
            Self::Mailgun(_) => false,
        }
    }

    /// Sends `email` (prepared as `api`); the provider's id of it.
    pub(crate) async fn send_fields(
        &self,
        email: &Email,
        api: &ApiEmail,
    ) -> Result<String, SendError> {
        match self {
            Self::Postmark(postmark) => postmark.send(email, api).await,
            Self::Mailgun(_) => Err(self.cannot("an email as fields")),
        }
    }

    /// Sends the rendered bytes to the envelope recipients; the provider's id of it.
    pub(crate) async fn send_mime(&self, rendered: &Rendered) -> Result<String, SendError> {
        match self {
            Self::Mailgun(mailgun) => mailgun.send(rendered).await,
            Self::Postmark(_) => Err(SendError::Unsupported(
                "a raw email (lettre message) cannot be sent through Postmark's Email API \
                 yet: send it through SMTP (Postmark's SMTP server works too)"
                    .to_owned(),
            )),
        }
    }

    fn cannot(&self, what: &str) -> SendError {
        SendError::Unsupported(format!("{} does not take {what}", self.provider()))
    }
}
