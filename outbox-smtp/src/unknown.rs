//! Addresses the receiving server says do not exist: a permanent "user unknown" reply
//! (`550 5.1.1`) may put its address on the suppression list, so the next campaign does not
//! mail it again (mailing addresses that do not exist is what providers read as a
//! purchased or stale list).
//!
//! Which replies count ([`is_unknown_user`]): a permanent (`5xx`) reply whose enhanced
//! status code (RFC 3463, RFC 7505) says the address cannot exist — `5.1.1` bad destination
//! mailbox address (the mailbox does not exist), `5.1.10` the recipient's domain has a null
//! MX (it accepts no mail at all) — or, without one of those codes (`5.1.0` other address
//! status, `5.0.0`, or none), whose text says so: "user unknown", "unknown user", "no such
//! user", "mailbox does not exist", "no such mailbox", "recipient unknown", "address
//! rejected: user unknown". Policy refusals (`5.7.x`), full mailboxes (`5.2.2`) and
//! temporary replies (`4xx`) never count.
//!
//! Failure modes: the message itself fails as before (a dead letter); a suppression that
//! cannot be written is logged at WARN and the send's outcome is unchanged.

use outbox_core::{MessageContext, NewSuppression, SuppressionReason, SuppressionScope};

/// Which emails' "user unknown" replies suppress their address
/// ([`MailerConfig::unknown_users`](crate::MailerConfig::unknown_users)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum UnknownUsers {
    /// None: the message becomes a dead letter, the address stays as it is.
    Keep,
    /// List emails ([`EmailBuilder::list`](crate::EmailBuilder::list), raw emails with a
    /// `List-Unsubscribe` header): the default.
    #[default]
    SuppressListEmail,
    /// Every email, transactional ones too (a password reset to an address that does not
    /// exist then stops the next one).
    SuppressAll,
}

impl UnknownUsers {
    /// True when an email (`list`: a list email) suppresses its unknown recipients.
    pub fn applies(self, list: bool) -> bool {
        match self {
            UnknownUsers::Keep => false,
            UnknownUsers::SuppressListEmail => list,
            UnknownUsers::SuppressAll => true,
        }
    }
}

/// Enhanced status codes that say the address cannot exist (RFC 3463 `X.1.1`, RFC 7505
/// `X.1.10`).
const UNKNOWN_CODES: [&str; 2] = ["5.1.1", "5.1.10"];

/// Phrases receivers use for an address that does not exist (matched lowercased).
const UNKNOWN_PHRASES: [&str; 8] = [
    "user unknown",
    "unknown user",
    "no such user",
    "mailbox does not exist",
    "no such mailbox",
    "recipient unknown",
    "unknown recipient",
    "user does not exist",
];

/// True for a permanent reply (`code`, with its text `reply`) that says the recipient's
/// address does not exist.
pub fn is_unknown_user(code: u16, reply: &str) -> bool {
    if !(500..600).contains(&code) {
        return false;
    }
    match enhanced_code(reply) {
        Some(enhanced) if UNKNOWN_CODES.contains(&enhanced) => true,
        Some(enhanced) if enhanced != "5.1.0" && enhanced != "5.0.0" => false,
        _ => {
            let text = reply.to_ascii_lowercase();
            UNKNOWN_PHRASES.iter().any(|p| text.contains(p))
        }
    }
}

/// The enhanced status code that starts `reply` (after the basic code, if repeated), if any.
fn enhanced_code(reply: &str) -> Option<&str> {
    let mut words = reply.split_whitespace();
    let mut first = words.next()?;
    if first.len() == 3 && first.bytes().all(|b| b.is_ascii_digit()) {
        first = words.next()?;
    }
    let first = first.trim_end_matches([',', ';', ':']);
    let parts: Vec<&str> = first.split('.').collect();
    let ok = parts.len() == 3
        && matches!(parts[0], "2" | "4" | "5")
        && parts[1..]
            .iter()
            .all(|p| (1..=3).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit()));
    ok.then_some(first)
}

/// Suppresses `address` for every email on the list of the outbox that message `ctx` came
/// from, because of `reply` (`code`).
pub(crate) async fn suppress<S>(ctx: &MessageContext<S>, address: &str, code: u16, reply: &str) {
    let id = ctx.id();
    let entry = match NewSuppression::new(
        address,
        SuppressionScope::All,
        SuppressionReason::HardBounce,
    ) {
        Ok(entry) => entry.source(format!("smtp reply to {id}: {code} {}", reply.trim())),
        Err(e) => {
            tracing::warn!(address, error = %e, "cannot suppress an unknown address");
            return;
        }
    };
    match ctx.suppress(entry).await {
        Ok(()) => tracing::info!(
            address,
            code,
            reply,
            message.id = %id,
            "the receiving server says the address does not exist; suppressed"
        ),
        Err(e) => tracing::warn!(
            address, error = %e,
            "the receiving server says the address does not exist, but the suppression \
             could not be written; the next email to it is sent"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_unknown_replies_are_told_from_other_refusals() {
        for (code, reply) in [
            (
                550,
                "5.1.1 <ann@example.com>: Recipient address rejected: User unknown",
            ),
            (
                550,
                "550 5.1.1 The email account that you tried to reach does not exist.",
            ),
            (
                550,
                "5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup",
            ),
            (550, "5.1.0 Address rejected: no such user here"),
            (550, "No such user - psmtp"),
            (553, "sorry, mailbox does not exist"),
        ] {
            assert!(is_unknown_user(code, reply), "{code} {reply}");
        }
        for (code, reply) in [
            (
                450,
                "4.1.1 <ann@example.com>: Recipient address rejected: User unknown",
            ),
            (
                550,
                "5.7.1 Message rejected as spam; user unknown to us? no: policy",
            ),
            (552, "5.2.2 Mailbox full"),
            (
                550,
                "5.7.26 Unauthenticated email from example.com is not accepted",
            ),
            (554, "Transaction failed"),
            (550, "5.1.0 Address rejected"),
        ] {
            assert!(!is_unknown_user(code, reply), "{code} {reply}");
        }
        assert!(UnknownUsers::default().applies(true));
        assert!(!UnknownUsers::default().applies(false));
        assert!(UnknownUsers::SuppressAll.applies(false));
        assert!(!UnknownUsers::Keep.applies(true));
    }
}
