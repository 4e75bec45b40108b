//! The providers' HTTP API transports (feature `providers`) against real parts on
//! loopback, one test binary: Postmark and Mailgun ([`postmark_mailgun`]), Amazon SES
//! against moto and credential stand-ins ([`ses`]), SendGrid ([`sendgrid`]), Resend
//! ([`resend`]), and the providers' receipts and events tied to their messages
//! ([`message_events`]). Each module's doc names the provider reference it follows.

#[path = "../common/api_stand.rs"]
mod api_stand;
#[path = "../common/mod.rs"]
mod common;

mod message_events;
mod postmark_mailgun;
mod resend;
mod sendgrid;
mod ses;
