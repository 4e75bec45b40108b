//! Each provider's size and recipient limits, checked before an email is sent and, with
//! [`Mailer::check`](crate::Mailer::check), before it is enqueued: an email a provider
//! would refuse is refused here, naming the limit, instead of becoming a dead letter after
//! its first attempt.

use super::{hints, mailgun, postmark, resend, sendgrid, ses, ApiSender};
use crate::{Email, SendError};

/// What one provider takes at most in one email.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// The provider's short name (`ses`), as errors and logs name it.
    pub(crate) provider: &'static str,
    /// The provider's name, as its users write it (`Amazon SES`).
    pub(crate) shown: &'static str,
    /// Bytes of the email as sent (attachments base64-encoded).
    pub(crate) max_bytes: usize,
    /// Recipients, To, Cc and Bcc together.
    pub(crate) max_recipients: usize,
}

impl ApiSender {
    /// The provider's limits.
    pub(crate) fn limits(&self) -> Limits {
        let (max_bytes, max_recipients) = match self {
            Self::Postmark(_) => (postmark::MAX_BYTES, postmark::MAX_RECIPIENTS),
            Self::Mailgun(_) => (mailgun::MAX_BYTES, mailgun::MAX_RECIPIENTS),
            Self::Ses(_) => (ses::MAX_MESSAGE_BYTES, ses::MAX_RECIPIENTS),
            Self::SendGrid(_) => (sendgrid::MAX_BYTES, sendgrid::MAX_RECIPIENTS),
            Self::Resend(_) => (resend::MAX_BYTES, resend::MAX_RECIPIENTS),
        };
        Limits {
            provider: self.provider(),
            shown: match self {
                Self::Postmark(_) => "Postmark",
                Self::Mailgun(_) => "Mailgun",
                Self::Ses(_) => "Amazon SES",
                Self::SendGrid(_) => "SendGrid",
                Self::Resend(_) => "Resend",
            },
            max_bytes,
            max_recipients,
        }
    }
}

impl Limits {
    /// Refuses `recipients` and `bytes` over the limits, naming the limit and what to do.
    pub(crate) fn check(&self, recipients: usize, bytes: usize) -> Result<(), SendError> {
        if recipients > self.max_recipients {
            return Err(hints::over_limit(
                self.provider,
                format!(
                    "{recipients} recipients (To, Cc and Bcc together) and {} takes at most \
                     {} per email: split the email into several",
                    self.shown, self.max_recipients
                ),
            ));
        }
        if bytes > self.max_bytes {
            return Err(hints::over_limit(
                self.provider,
                format!(
                    "the email is about {:.1} MB with its attachments base64-encoded and {} \
                     takes at most {:.1} MB per email: link large files instead of \
                     attaching them",
                    bytes as f64 / 1e6,
                    self.shown,
                    self.max_bytes as f64 / 1e6
                ),
            ));
        }
        Ok(())
    }
}

/// The recipients of `email` and its size as a provider receives it, from above: the
/// bodies, the attachments base64-encoded (4 bytes per 3, with line breaks), and room
/// for the headers.
pub(crate) fn measure(email: &Email) -> (usize, usize) {
    let recipients = email.to.len() + email.cc.len() + email.bcc.len();
    let bodies =
        email.text.as_ref().map_or(0, String::len) + email.html.as_ref().map_or(0, String::len);
    let attachments: usize = email
        .attachments
        .iter()
        .map(|a| a.bytes.len().div_ceil(3) * 4 * 78 / 76 + a.file_name.len() + 200)
        .sum();
    let headers = 2_000 + email.subject.len() + 100 * recipients;
    (recipients, bodies + attachments + headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_name_what_was_over() {
        let postmark = Limits {
            provider: "postmark",
            shown: "Postmark",
            max_bytes: postmark::MAX_BYTES,
            max_recipients: postmark::MAX_RECIPIENTS,
        };
        assert!(postmark.check(50, postmark::MAX_BYTES).is_ok());
        let e = postmark.check(51, 10).unwrap_err();
        assert!(e.is_permanent());
        assert!(
            e.to_string().contains("51 recipients") && e.to_string().contains("at most 50"),
            "{e}"
        );
        let e = postmark.check(1, postmark::MAX_BYTES + 1).unwrap_err();
        assert!(e.to_string().contains("at most 10.5 MB"), "{e}");
    }

    #[test]
    fn an_email_is_measured_from_above() {
        let email = Email::builder()
            .from("a@example.com")
            .to("b@example.org")
            .cc("c@example.org")
            .subject("Hi")
            .text("x".repeat(1000))
            .attach("f.bin", "application/octet-stream", vec![0u8; 600_000])
            .build()
            .unwrap();
        let (recipients, bytes) = measure(&email);
        assert_eq!(recipients, 2);
        assert!(bytes > 800_000 && bytes < 900_000, "{bytes}");
    }
}
