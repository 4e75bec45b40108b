//! One-click unsubscribe (RFC 8058): the signed token in a bulk email's `List-Unsubscribe`
//! URL, and the configuration that makes the mailer add both headers.
//!
//! A bulk email (one with a [`list`](crate::EmailBuilder::list)) sent by a mailer with
//! [`MailerConfig::unsubscribe`](crate::MailerConfig::unsubscribe) carries
//!
//! ```text
//! List-Unsubscribe: <https://example.com/u/TOKEN>, <mailto:unsubscribe@example.com?subject=unsubscribe%20TOKEN>
//! List-Unsubscribe-Post: List-Unsubscribe=One-Click
//! ```
//!
//! where `TOKEN` names the address, the list and the outbox message, signed with
//! HMAC-SHA256 under a key id. Receivers POST `List-Unsubscribe=One-Click` to the URL with no
//! cookies and no login, so the token must carry (signed) everything the handler needs.
//! Keys rotate: sign with a new key and keep accepting the old ones
//! ([`UnsubscribeKeys::also_accept`]) until the mail signed with them is old enough.
//! Both headers are in the DKIM signature's header list, as RFC 8058 requires; receivers
//! ignore them in mail that is not DKIM-signed (feature `dkim`), and a mailer configured
//! without a signer says so at WARN when it is built.
//!
//! Failure modes: a key shorter than 32 bytes or a base URL that is not `https://` is a
//! [`ConfigError`]; a token that was changed, cut, signed by an unknown key or not a token
//! at all is a [`TokenError`] that says which.

use std::{fmt, time::SystemTime};

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine as _};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::ConfigError;

/// Shortest key accepted, in bytes.
pub const MIN_KEY_BYTES: usize = 32;

/// Domain separation for the MAC, so a key shared by mistake with another use cannot
/// produce tokens.
const CONTEXT: &[u8] = b"outbox-unsubscribe-v1\n";

/// What an unsubscribe token says: who, from which list, and from which message.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UnsubscribeToken {
    /// The outbox id of the email the token was sent in (a ULID: it also says when).
    pub message_id: String,
    /// The list (the email's [`list`](crate::Email::list)).
    pub list: String,
    /// The recipient address, lowercased.
    pub address: String,
}

impl UnsubscribeToken {
    /// A token for `address` on `list`, sent in outbox message `message_id`.
    pub fn new(
        message_id: impl Into<String>,
        list: impl Into<String>,
        address: impl Into<String>,
    ) -> Self {
        Self {
            message_id: message_id.into(),
            list: list.into(),
            address: address.into().trim().to_ascii_lowercase(),
        }
    }

    /// When the email carrying it was enqueued (read from the message id; `None` when the id
    /// is not a ULID).
    pub fn issued_at(&self) -> Option<SystemTime> {
        ulid::Ulid::from_string(&self.message_id)
            .ok()
            .map(|u| u.datetime())
    }
}

/// Why a token was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// Not of the form `kid.payload.mac`, or not base64.
    #[error("not an unsubscribe token (expected key-id.payload.signature)")]
    Malformed,
    /// Signed with a key id that is not configured (an old key no longer accepted, or a
    /// forgery).
    #[error("the token is signed with key `{0}`, which is not accepted")]
    UnknownKey(String),
    /// The signature does not match: the token was changed or forged.
    #[error("the token's signature does not match (changed or forged)")]
    BadSignature,
}

/// The HMAC keys unsubscribe tokens are signed with: the first signs, all verify.
///
/// `Debug` shows the key ids, never the keys.
#[derive(Clone)]
pub struct UnsubscribeKeys {
    keys: Vec<(String, Vec<u8>)>,
}

impl UnsubscribeKeys {
    /// Signs with `secret` under key id `kid` (1 to 16 ASCII letters, digits, `-`, `_`; say
    /// `2026-11`). The secret must be at least [`MIN_KEY_BYTES`] random bytes; keep it
    /// out of the repository.
    pub fn new(kid: impl Into<String>, secret: impl AsRef<[u8]>) -> Result<Self, ConfigError> {
        Self { keys: Vec::new() }.also_accept(kid, secret)
    }

    /// Also accepts tokens signed with `secret` under `kid` (a previous key, while mail
    /// signed with it may still be clicked). New tokens are signed with the first key.
    pub fn also_accept(
        mut self,
        kid: impl Into<String>,
        secret: impl AsRef<[u8]>,
    ) -> Result<Self, ConfigError> {
        let kid = kid.into();
        let secret = secret.as_ref();
        let kid_ok = (1..=16).contains(&kid.len())
            && kid
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !kid_ok {
            return Err(ConfigError::new(
                "unsubscribe key id",
                format!("{kid:?} must be 1 to 16 ASCII letters, digits, '-' or '_'"),
            ));
        }
        if secret.len() < MIN_KEY_BYTES {
            return Err(ConfigError::new(
                "unsubscribe key",
                format!(
                    "key `{kid}` is {} bytes; use at least {MIN_KEY_BYTES} random bytes \
                     (e.g. `openssl rand -base64 32`, decoded)",
                    secret.len()
                ),
            ));
        }
        if self.keys.iter().any(|(k, _)| *k == kid) {
            return Err(ConfigError::new(
                "unsubscribe key id",
                format!("key id `{kid}` is given twice"),
            ));
        }
        self.keys.push((kid, secret.to_vec()));
        Ok(self)
    }

    /// The token text for `token`, safe in a URL path and a mailto subject.
    pub fn sign(&self, token: &UnsubscribeToken) -> String {
        let (kid, secret) = &self.keys[0];
        let payload = URL_SAFE_NO_PAD.encode(format!(
            "{}\n{}\n{}",
            token.message_id, token.list, token.address
        ));
        let mac = URL_SAFE_NO_PAD.encode(mac(secret, kid, &payload).finalize().into_bytes());
        format!("{kid}.{payload}.{mac}")
    }

    /// Checks `text` and reads the token; the signature is compared in constant time.
    /// `text` may be the subject of a `mailto:` unsubscribe (`unsubscribe TOKEN`).
    pub fn verify(&self, text: &str) -> Result<UnsubscribeToken, TokenError> {
        let text = text.trim();
        let text = match text.get(..12) {
            Some(p) if p.eq_ignore_ascii_case("unsubscribe ") => text[12..].trim_start(),
            _ => text,
        };
        let mut parts = text.split('.');
        let (Some(kid), Some(payload), Some(sig), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(TokenError::Malformed);
        };
        let sig = URL_SAFE_NO_PAD
            .decode(sig)
            .map_err(|_| TokenError::Malformed)?;
        let (_, secret) = self
            .keys
            .iter()
            .find(|(k, _)| k == kid)
            .ok_or_else(|| TokenError::UnknownKey(kid.chars().take(16).collect()))?;
        mac(secret, kid, payload)
            .verify_slice(&sig)
            .map_err(|_| TokenError::BadSignature)?;
        let bytes = URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|_| TokenError::Malformed)?;
        let text = String::from_utf8(bytes).map_err(|_| TokenError::Malformed)?;
        let mut fields = text.splitn(3, '\n');
        match (fields.next(), fields.next(), fields.next()) {
            (Some(id), Some(list), Some(address)) => Ok(UnsubscribeToken {
                message_id: id.to_owned(),
                list: list.to_owned(),
                address: address.to_owned(),
            }),
            _ => Err(TokenError::Malformed),
        }
    }
}

fn mac(secret: &[u8], kid: &str, payload: &str) -> Hmac<Sha256> {
    let mut mac =
        <Hmac<Sha256> as KeyInit>::new_from_slice(secret).expect("HMAC takes a key of any length");
    mac.update(CONTEXT);
    mac.update(kid.as_bytes());
    mac.update(b".");
    mac.update(payload.as_bytes());
    mac
}

impl fmt::Debug for UnsubscribeKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UnsubscribeKeys")
            .field(
                "kids",
                &self.keys.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// Where a bulk email's unsubscribe headers point, and the keys their tokens are signed
/// with: give it to [`MailerConfig::unsubscribe`](crate::MailerConfig::unsubscribe).
///
/// ```
/// use outbox_smtp::{Unsubscribe, UnsubscribeKeys};
///
/// let keys = UnsubscribeKeys::new("2026-11", [7u8; 32])?;
/// let unsubscribe = Unsubscribe::new("https://example.com/outbox/u/", keys)?
///     .mailto("unsubscribe@example.com");
/// # Ok::<(), outbox_smtp::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Unsubscribe {
    base_url: String,
    mailto: Option<String>,
    keys: UnsubscribeKeys,
}

impl Unsubscribe {
    /// One-click URLs are `base_url` followed by the token: an `https://` URL where the
    /// unsubscribe handler is mounted (a `/` is added when missing).
    pub fn new(base_url: impl Into<String>, keys: UnsubscribeKeys) -> Result<Self, ConfigError> {
        let mut base_url = base_url.into().trim().to_owned();
        let host_ok = base_url
            .strip_prefix("https://")
            .and_then(|rest| rest.split('/').next())
            .is_some_and(|host| !host.is_empty());
        // Printable ASCII only (it goes into a header unencoded), short enough that the
        // header line stays far below 998 bytes with the token.
        let chars_ok = base_url.len() <= 200
            && base_url.bytes().all(|b| (0x21..=0x7e).contains(&b))
            && !base_url.contains(['?', '#', '<', '>', ',', '"']);
        if !host_ok || !chars_ok {
            return Err(ConfigError::new(
                "unsubscribe url",
                format!(
                    "{base_url:?} must be an https:// URL of at most 200 printable ASCII \
                     characters, without query or fragment (RFC 8058 requires HTTPS), e.g. \
                     https://example.com/outbox/u/"
                ),
            ));
        }
        if !base_url.ends_with('/') {
            base_url.push('/');
        }
        Ok(Self {
            base_url,
            mailto: None,
            keys,
        })
    }

    /// Also offers a `mailto:` unsubscribe to `address` (the token is its subject), for
    /// clients that do not do one-click.
    pub fn mailto(mut self, address: impl Into<String>) -> Self {
        self.mailto = Some(address.into().trim().to_owned());
        self
    }

    /// The keys tokens are signed and checked with.
    pub fn keys(&self) -> &UnsubscribeKeys {
        &self.keys
    }

    /// The two header values (`List-Unsubscribe`, `List-Unsubscribe-Post`) for `token`.
    pub fn headers(&self, token: &UnsubscribeToken) -> (String, String) {
        let signed = self.keys.sign(token);
        let mut value = format!("<{}{signed}>", self.base_url);
        if let Some(to) = &self.mailto {
            value.push_str(&format!(", <mailto:{to}?subject=unsubscribe%20{signed}>"));
        }
        (value, "List-Unsubscribe=One-Click".to_owned())
    }

    /// Explains a setting that cannot work.
    pub(crate) fn check(&self) -> Result<(), ConfigError> {
        match &self.mailto {
            Some(m) if m.parse::<lettre::Address>().is_err() => Err(ConfigError::new(
                "unsubscribe mailto",
                format!("{m:?} is not an email address"),
            )),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> UnsubscribeKeys {
        UnsubscribeKeys::new("k2", [2u8; 32]).unwrap()
    }

    #[test]
    fn a_signed_token_reads_back_and_any_change_is_refused() {
        let token = UnsubscribeToken::new("01JD0000000000000000000000", "news", " Ada@Example.com");
        assert_eq!(token.address, "ada@example.com");
        let text = keys().sign(&token);
        assert!(
            text.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)),
            "{text}"
        );
        assert_eq!(keys().verify(&text), Ok(token.clone()));
        assert!(token.issued_at().is_some());

        // Every single-character change is refused.
        for i in 0..text.len() {
            let mut changed = text.clone().into_bytes();
            changed[i] = if changed[i] == b'A' { b'B' } else { b'A' };
            let changed = String::from_utf8(changed).unwrap();
            if changed != text {
                assert!(keys().verify(&changed).is_err(), "accepted {changed}");
            }
        }
        // Another key with the same id: a forgery.
        let forged = UnsubscribeKeys::new("k2", [3u8; 32]).unwrap().sign(&token);
        assert_eq!(keys().verify(&forged), Err(TokenError::BadSignature));
        assert_eq!(keys().verify("nonsense"), Err(TokenError::Malformed));
        // The subject of the mailto: unsubscribe.
        assert_eq!(
            keys().verify(&format!("Unsubscribe {text}")),
            Ok(token.clone())
        );
    }

    #[test]
    fn keys_rotate_new_signs_old_still_verifies_until_dropped() {
        let token = UnsubscribeToken::new("01JD0000000000000000000000", "news", "a@b.example");
        let old = UnsubscribeKeys::new("k1", [1u8; 32]).unwrap();
        let old_token = old.sign(&token);
        let rotated = UnsubscribeKeys::new("k2", [2u8; 32])
            .unwrap()
            .also_accept("k1", [1u8; 32])
            .unwrap();
        assert!(rotated.sign(&token).starts_with("k2."));
        assert_eq!(rotated.verify(&old_token), Ok(token.clone()));
        assert_eq!(
            keys().verify(&old_token),
            Err(TokenError::UnknownKey("k1".into()))
        );
    }

    #[test]
    fn weak_keys_and_plain_http_are_refused() {
        assert!(UnsubscribeKeys::new("k", [0u8; 16]).is_err());
        assert!(UnsubscribeKeys::new("a key", [0u8; 32]).is_err());
        assert!(keys().also_accept("k2", [9u8; 32]).is_err(), "duplicate id");
        assert!(Unsubscribe::new("http://example.com/u/", keys()).is_err());
        assert!(Unsubscribe::new("https:///u/", keys()).is_err());
        assert!(Unsubscribe::new("https://exämple.com/u/", keys()).is_err());
        assert!(Unsubscribe::new("https://example.com/\tu/", keys()).is_err());
        let long = format!("https://example.com/{}/", "a".repeat(200));
        assert!(Unsubscribe::new(long, keys()).is_err());
        let u = Unsubscribe::new("https://example.com/u", keys()).unwrap();
        let (list, post) = u.headers(&UnsubscribeToken::new("id", "news", "a@b.example"));
        assert!(list.starts_with("<https://example.com/u/k2."), "{list}");
        assert_eq!(post, "List-Unsubscribe=One-Click");
    }
}
