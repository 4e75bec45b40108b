//! Providers' HTTP APIs (feature `providers`): Postmark so far.
//!
//! Shape for the next ones (SES v2, Mailgun, SendGrid, Resend): a `config/<name>.rs` with
//! its settings and URL, a module here that turns an [`ApiEmail`](crate::render::ApiEmail)
//! into the provider's request, and a pure `classify` of its answers into an
//! [`ApiVerdict`](crate::ApiVerdict); [`http`] carries the request.

pub(crate) mod http;
pub(crate) mod postmark;
