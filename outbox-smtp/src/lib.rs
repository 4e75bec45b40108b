#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

mod capture;
mod config;
mod dev;
#[cfg(feature = "dkim")]
mod dkim;
mod email;
mod error;
#[cfg(feature = "webhooks")]
pub mod events;
mod mailer;
#[cfg(feature = "mx")]
mod mx;
#[cfg(feature = "providers")]
mod providers;
mod queued;
mod redirect;
mod render;
mod shaping;
pub(crate) mod sigv4;
mod smtp;
mod unknown;
mod unsubscribe;
mod view;

pub use capture::SentEmail;
#[cfg(feature = "providers")]
pub use config::SesConfig;
pub use config::{Credentials, MailerConfig, Security, SmtpConfig, Transport};
#[cfg(feature = "providers")]
pub use config::{
    MailgunConfig, PostmarkConfig, MAILGUN_API_HOST, MAILGUN_EU_API_HOST, POSTMARK_API_HOST,
};
#[cfg(feature = "providers")]
pub use config::{
    ResendConfig, SendGridConfig, RESEND_API_HOST, SENDGRID_API_HOST, SENDGRID_EU_API_HOST,
};
#[cfg(feature = "dkim")]
pub use dkim::{DkimAlgorithm, DkimSigner, OVERSIGNED_HEADERS, SIGNED_HEADERS};
pub use email::{Attachment, Email, EmailBuilder, Header, Mailbox, MAX_ATTACHMENT_BYTES};
pub use error::{ApiError, ApiVerdict, ConfigError, RefusedRecipient, SendError, Stage};
pub use mailer::{Delivery, Mailer, LIST_WITHOUT_UNSUBSCRIBE_WAIT};
#[cfg(feature = "mx")]
pub use mx::{DnsMx, MX_LOOKUP_TIMEOUT};
pub use outbox_core::InvalidMessage;
pub use queued::{QueuedTransport, RawEmail, TxTransport, RAW_EMAIL_MAX_BYTES};
pub use redirect::{RedirectTarget, TestRedirect};
pub use shaping::{
    domain_of, provider_rules, EmailShaping, MxLookup, MxRollup, ProviderSite, PROVIDER_SITES,
};
pub use unknown::{is_unknown_user, UnknownUsers};
pub use unsubscribe::{TokenError, Unsubscribe, UnsubscribeKeys, UnsubscribeToken, MIN_KEY_BYTES};
pub use view::EmailView;
