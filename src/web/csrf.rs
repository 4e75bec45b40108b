//! CSRF protection: a random value in a `SameSite=Strict` cookie, and in every form its
//! HMAC under a key made per router (a signed double-submit cookie). A forged POST from
//! another site carries neither the cookie (SameSite) nor a token it could compute.

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine as _};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// The cookie holding the random value.
pub(crate) const COOKIE: &str = "outbox_admin_csrf";
/// The form field holding the token.
pub(crate) const FIELD: &str = "csrf";

/// The router's key.
pub(crate) struct Csrf {
    key: [u8; 32],
}

impl Csrf {
    /// A fresh random key.
    pub(crate) fn new() -> Self {
        Self { key: random() }
    }

    /// A fresh random cookie value.
    pub(crate) fn new_nonce(&self) -> String {
        URL_SAFE_NO_PAD.encode(random())
    }

    /// The form token for the cookie value `nonce`.
    pub(crate) fn token(&self, nonce: &str) -> String {
        URL_SAFE_NO_PAD.encode(self.mac(nonce))
    }

    /// True when `token` is the token for `nonce`.
    pub(crate) fn verify(&self, nonce: &str, token: &str) -> bool {
        match URL_SAFE_NO_PAD.decode(token) {
            Ok(given) => given.ct_eq(&self.mac(nonce)).into(),
            Err(_) => false,
        }
    }

    fn mac(&self, nonce: &str) -> [u8; 32] {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.key)
            .expect("HMAC takes a key of any length");
        mac.update(b"outbox-admin-csrf:");
        mac.update(nonce.as_bytes());
        mac.finalize().into_bytes().into()
    }
}

/// The signature of a banner text, under the browser's form token: the redirect after an
/// action carries it next to the text, and a page shows the text only with it, so a link
/// from elsewhere cannot put its own words in the admin's banners.
pub(crate) fn flash_sig(token: &str, kind: &str, text: &str) -> String {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(token.as_bytes())
        .expect("HMAC takes a key of any length");
    mac.update(b"outbox-admin-flash:");
    mac.update(kind.as_bytes());
    mac.update(b"\0");
    mac.update(text.as_bytes());
    let full: [u8; 32] = mac.finalize().into_bytes().into();
    URL_SAFE_NO_PAD.encode(&full[..16])
}

/// True when `sig` is [`flash_sig`] of `kind` and `text` under `token`.
pub(crate) fn flash_verify(token: &str, kind: &str, text: &str, sig: &str) -> bool {
    flash_sig(token, kind, text)
        .as_bytes()
        .ct_eq(sig.as_bytes())
        .into()
}

/// 32 random bytes from the operating system.
fn random() -> [u8; 32] {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the operating system's random number source failed");
    bytes
}

/// True for a cookie value this module could have made (43 URL-safe base64 characters).
pub(crate) fn plausible_nonce(value: &str) -> bool {
    value.len() == 43
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_bind_to_the_cookie_and_the_key() {
        let csrf = Csrf::new();
        let nonce = csrf.new_nonce();
        assert!(plausible_nonce(&nonce));
        let token = csrf.token(&nonce);
        assert!(csrf.verify(&nonce, &token));
        assert!(!csrf.verify(&csrf.new_nonce(), &token));
        assert!(!Csrf::new().verify(&nonce, &token));
        assert!(!csrf.verify(&nonce, ""));
        assert!(!csrf.verify(&nonce, "not base64!"));
    }

    #[test]
    fn banner_signatures_bind_to_the_token_kind_and_text() {
        let sig = flash_sig("token", "msg", "Paused web.note: outage");
        assert!(flash_verify(
            "token",
            "msg",
            "Paused web.note: outage",
            &sig
        ));
        assert!(!flash_verify(
            "other",
            "msg",
            "Paused web.note: outage",
            &sig
        ));
        assert!(!flash_verify(
            "token",
            "err",
            "Paused web.note: outage",
            &sig
        ));
        assert!(!flash_verify(
            "token",
            "msg",
            "log in again at evil.example",
            &sig
        ));
        assert!(!flash_verify("token", "msg", "Paused web.note: outage", ""));
    }
}
