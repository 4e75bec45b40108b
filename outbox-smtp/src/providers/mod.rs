//! Providers' HTTP APIs (feature `providers`): Postmark, Mailgun, Amazon SES, SendGrid and
//! Resend so far.
//!
//! Shape of each (and of the next ones): a `config/<name>.rs` with its settings and URL,
//! a module here that turns the email into the provider's request, a pure `classify` of
//! its answers into an [`ApiVerdict`](crate::ApiVerdict), and one variant of
//! [`ApiSender`] (with its arms in the methods below); [`http`] carries the request,
//! [`hints`] reads when to try again. A provider takes the email either as fields
//! ([`ApiEmail`]: Postmark, SendGrid, Resend) or as the rendered MIME bytes
//! ([`Rendered`], Mailgun and Amazon SES: signed when DKIM is configured). SES signs its
//! requests with AWS SigV4 ([`crate::sigv4`]) and finds its keys through
//! [`aws_credentials`].

use outbox_core::MessageId;

use crate::{
    config::Transport,
    render::{ApiEmail, Rendered},
    ConfigError, Email, SendError,
};

pub(crate) mod aws_credentials;
pub(crate) mod hints;
pub(crate) mod http;
pub(crate) mod limits;
pub(crate) mod mailgun;
pub(crate) mod pace;
pub(crate) mod postmark;
pub(crate) mod resend;
pub(crate) mod sendgrid;
pub(crate) mod ses;

/// What a provider said when it took an email.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct ApiAccepted {
    /// Its id of the email.
    pub(crate) id: String,
    /// Recipients it took the email for but will not deliver to (Postmark's inactive
    /// addresses: an earlier hard bounce or spam complaint there), with its words.
    pub(crate) inactive: Vec<(String, String)>,
}

impl ApiAccepted {
    /// Taken for every recipient, as `id`.
    pub(crate) fn id(id: String) -> Self {
        Self {
            id,
            inactive: Vec::new(),
        }
    }
}

/// The mailer's sender for a provider's API.
pub(crate) enum ApiSender {
    Postmark(postmark::PostmarkSender),
    Mailgun(mailgun::MailgunSender),
    Ses(Box<ses::SesSender>),
    SendGrid(sendgrid::SendGridSender),
    Resend(resend::ResendSender),
}

impl ApiSender {
    /// The sender for `transport`, a provider's API.
    pub(crate) fn new(transport: &Transport) -> Result<Self, ConfigError> {
        Ok(match transport {
            Transport::Postmark(c) => Self::Postmark(postmark::PostmarkSender::new(c)?),
            Transport::Mailgun(c) => Self::Mailgun(mailgun::MailgunSender::new(c)?),
            Transport::Ses(c) => Self::Ses(Box::new(ses::SesSender::new(c)?)),
            Transport::SendGrid(c) => Self::SendGrid(sendgrid::SendGridSender::new(c)?),
            Transport::Resend(c) => Self::Resend(resend::ResendSender::new(c)?),
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
            Self::Ses(_) => "ses",
            Self::SendGrid(_) => "sendgrid",
            Self::Resend(_) => "resend",
        }
    }

    /// True when the provider takes the email as fields ([`send_fields`](Self::send_fields)),
    /// false when it takes the rendered bytes ([`send_mime`](Self::send_mime)).
    pub(crate) fn takes_fields(&self) -> bool {
        match self {
            Self::Postmark(_) | Self::SendGrid(_) | Self::Resend(_) => true,
            Self::Mailgun(_) | Self::Ses(_) => false,
        }
    }

    /// Sends `email` (prepared as `api`) as outbox message `id` (Resend's
    /// `Idempotency-Key`, SendGrid's `custom_args`); the provider's id of it.
    pub(crate) async fn send_fields(
        &self,
        email: &Email,
        api: &ApiEmail,
        id: &MessageId,
    ) -> Result<ApiAccepted, SendError> {
        match self {
            Self::Postmark(postmark) => postmark.send(email, api).await,
            Self::SendGrid(sendgrid) => sendgrid.send(email, api, id).await.map(ApiAccepted::id),
            Self::Resend(resend) => resend.send(email, api, id).await.map(ApiAccepted::id),
            Self::Mailgun(_) | Self::Ses(_) => Err(self.cannot("an email as fields")),
        }
    }

    /// Sends the rendered bytes to the envelope recipients; the provider's id of it.
    pub(crate) async fn send_mime(&self, rendered: &Rendered) -> Result<String, SendError> {
        match self {
            Self::Mailgun(mailgun) => mailgun.send(rendered).await,
            Self::Ses(ses) => ses.send(rendered).await,
            Self::Postmark(_) => Err(SendError::Unsupported(
                "a raw email (lettre message) cannot be sent through Postmark's Email API \
                 yet: send it through SMTP (Postmark's SMTP server works too)"
                    .to_owned(),
            )),
            Self::SendGrid(_) | Self::Resend(_) => Err(SendError::Unsupported(format!(
                "a raw email (lettre message) cannot be sent through {}'s API, which takes an \
                 email's fields: send it through SMTP ({} has an SMTP server too)",
                self.provider(),
                self.provider()
            ))),
        }
    }

    fn cannot(&self, what: &str) -> SendError {
        SendError::Unsupported(format!("{} does not take {what}", self.provider()))
    }
}
