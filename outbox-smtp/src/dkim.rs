//! DKIM signing (RFC 6376; Ed25519 keys per RFC 8463) of every email a [`Mailer`] sends,
//! with Stalwart's `mail-auth` over `ring` (feature `dkim`).
//!
//! Configure a [`DkimSigner`] per sending domain with
//! [`MailerConfig::dkim`](crate::MailerConfig::dkim). Each email gets one signature from
//! every signer whose domain is its `From` domain or a parent of it (so `d=` aligns for
//! DMARC): give a domain an RSA and an Ed25519 signer and its mail carries both signatures.
//! An email from a domain no signer covers is signed by the first signer, which still
//! counts as DKIM-signed but does not align (a WARN says so).
//!
//! The signed header list is [`SIGNED_HEADERS`]: besides the usual ones it holds
//! `List-Unsubscribe` and `List-Unsubscribe-Post`, which receivers only honour for
//! one-click unsubscribe when a valid signature covers them (RFC 8058). A listed header
//! that an email lacks is signed as absent, and the headers of [`OVERSIGNED_HEADERS`] are
//! listed once more than they occur, so nobody on the way can add one (a second `From`
//! or `List-Unsubscribe` on top).
//!
//! Failure modes: a key that cannot be read is a [`ConfigError`] when the signer is built,
//! naming the file or the format it expected. Signing itself does not fail for a valid key;
//! if the library reports an error anyway, the send fails as a retryable
//! [`SendError::Sign`](crate::SendError::Sign) and nothing is sent unsigned.
//!
//! [`Mailer`]: crate::Mailer

use std::{fmt, path::Path, sync::Arc};

use base64::Engine as _;
use mail_auth::{
    common::{
        crypto::{DkimKey, Ed25519Key, RsaKey, Sha256},
        headers::HeaderWriter,
    },
    dkim::{DkimSigner as Signer, Done},
};
use rustls_pki_types::{pem::PemObject, PrivateKeyDer};

use crate::ConfigError;

/// The header fields each signature covers (`h=`), in this order. Absent ones are signed as
/// absent (RFC 6376 §5.4), which stops them from being added on the way.
pub const SIGNED_HEADERS: &[&str] = &[
    "From",
    "Reply-To",
    "Subject",
    "Date",
    "To",
    "Cc",
    "Message-ID",
    "In-Reply-To",
    "References",
    "MIME-Version",
    "Content-Type",
    "Content-Transfer-Encoding",
    "List-Id",
    "List-Unsubscribe",
    "List-Unsubscribe-Post",
];

/// The headers listed a second time in `h=` (oversigning, RFC 6376 §8.15): a copy added
/// on the way breaks the signature.
pub const OVERSIGNED_HEADERS: &[&str] = &[
    "From",
    "Reply-To",
    "Subject",
    "Date",
    "To",
    "Cc",
    "Message-ID",
    "List-Unsubscribe",
    "List-Unsubscribe-Post",
];

/// Which kind of key a signer holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DkimAlgorithm {
    /// `rsa-sha256` (RFC 6376); use 2048-bit keys or longer.
    Rsa,
    /// `ed25519-sha256` (RFC 8463): short keys and fast signing; not every receiver checks
    /// it yet, so sign with an RSA key too if you rely on it.
    Ed25519,
}

/// A DKIM key with the domain (`d=`) and selector (`s=`) it is published under.
///
/// Cheap to clone. `Debug` shows the domain, selector and algorithm, never the key.
///
/// ```no_run
/// # fn demo() -> Result<(), outbox_smtp::ConfigError> {
/// use outbox_smtp::{DkimSigner, MailerConfig};
///
/// let signer = DkimSigner::from_pem_file("example.com", "mail2026", "/etc/outbox/dkim.pem")?;
/// // Publish this TXT record: mail2026._domainkey.example.com
/// let (name, value) = signer.dns_record();
/// println!("{name} TXT \"{value}\"");
/// let config = MailerConfig::from_url("smtp://mail.example.com:587")?.dkim(signer);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct DkimSigner {
    inner: Arc<Inner>,
}

struct Inner {
    domain: String,
    selector: String,
    algorithm: DkimAlgorithm,
    /// The `p=` value of the DNS record (base64).
    public_key: String,
    signer: Signer<DkimKey, Done>,
}

impl DkimSigner {
    /// A signer for `domain` with `selector`, from a private key in PEM: an RSA key as
    /// PKCS#1 (`BEGIN RSA PRIVATE KEY`) or PKCS#8 (`BEGIN PRIVATE KEY`), or an Ed25519 key
    /// as PKCS#8 (`openssl genpkey -algorithm ed25519`).
    ///
    /// Fails with a [`ConfigError`] (setting `dkim`) that says what was found instead.
    pub fn from_pem(
        domain: impl Into<String>,
        selector: impl Into<String>,
        pem: &str,
    ) -> Result<Self, ConfigError> {
        let domain = domain
            .into()
            .trim()
            .trim_end_matches('.')
            .to_ascii_lowercase();
        let selector = selector.into().trim().to_owned();
        check_label("dkim domain", &domain, true)?;
        check_label("dkim selector", &selector, false)?;
        let (key, algorithm, public_key) = read_key(pem)?;
        let signer = Signer::from_key(key)
            .domain(domain.clone())
            .selector(selector.clone())
            .headers(SIGNED_HEADERS.iter().chain(OVERSIGNED_HEADERS).copied());
        Ok(Self {
            inner: Arc::new(Inner {
                domain,
                selector,
                algorithm,
                public_key: base64::engine::general_purpose::STANDARD.encode(public_key),
                signer,
            }),
        })
    }

    /// [`from_pem`](Self::from_pem) with the PEM read from `path`; a file that cannot be
    /// read is a [`ConfigError`] naming it.
    pub fn from_pem_file(
        domain: impl Into<String>,
        selector: impl Into<String>,
        path: impl AsRef<Path>,
    ) -> Result<Self, ConfigError> {
        let path = path.as_ref();
        let pem = std::fs::read_to_string(path).map_err(|e| {
            ConfigError::new(
                "dkim",
                format!("cannot read the key file {}: {e}", path.display()),
            )
        })?;
        Self::from_pem(domain, selector, &pem)
    }

    /// The signing domain (`d=`).
    pub fn domain(&self) -> &str {
        &self.inner.domain
    }

    /// The selector (`s=`).
    pub fn selector(&self) -> &str {
        &self.inner.selector
    }

    /// The key's algorithm.
    pub fn algorithm(&self) -> DkimAlgorithm {
        self.inner.algorithm
    }

    /// The DNS TXT record receivers look the public key up in: its name
    /// (`selector._domainkey.domain`) and value (`v=DKIM1; k=rsa; p=…`). A value longer than
    /// 255 bytes (any RSA key) is published as several strings in one record; DNS hosting
    /// panels usually split it for you.
    pub fn dns_record(&self) -> (String, String) {
        let k = match self.inner.algorithm {
            DkimAlgorithm::Rsa => "rsa",
            DkimAlgorithm::Ed25519 => "ed25519",
        };
        (
            format!("{}._domainkey.{}", self.inner.selector, self.inner.domain),
            format!("v=DKIM1; k={k}; p={}", self.inner.public_key),
        )
    }

    /// True when this signer's domain is `from_domain` or a parent of it (relaxed DMARC
    /// alignment).
    pub(crate) fn covers(&self, from_domain: &str) -> bool {
        let from = from_domain.trim_end_matches('.').to_ascii_lowercase();
        let d = &self.inner.domain;
        from == *d
            || from
                .strip_suffix(d.as_str())
                .is_some_and(|p| p.ends_with('.'))
    }

    /// The `DKIM-Signature` header (with its CRLF) for the complete message `bytes`.
    pub(crate) fn signature(&self, bytes: &[u8]) -> Result<String, String> {
        self.inner
            .signer
            .sign(bytes)
            .map(|s| s.to_header())
            .map_err(|e| e.to_string())
    }
}

/// The signers for an email from `from_domain`, and whether they align: every signer whose
/// domain covers it, else the first one (signed, but not aligned); none without signers.
pub(crate) fn pick<'a>(
    signers: &'a [DkimSigner],
    from_domain: Option<&str>,
) -> (Vec<&'a DkimSigner>, bool) {
    let aligned: Vec<&DkimSigner> = match from_domain {
        Some(d) => signers.iter().filter(|s| s.covers(d)).collect(),
        None => Vec::new(),
    };
    if aligned.is_empty() {
        (signers.first().into_iter().collect(), false)
    } else {
        (aligned, true)
    }
}

impl fmt::Debug for DkimSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DkimSigner")
            .field("domain", &self.inner.domain)
            .field("selector", &self.inner.selector)
            .field("algorithm", &self.inner.algorithm)
            .finish()
    }
}

/// A domain (dot-separated labels) or a selector (labels too, RFC 6376 §3.1) of letters,
/// digits, `-` and `_`.
fn check_label(setting: &str, value: &str, domain: bool) -> Result<(), ConfigError> {
    let ok = !value.is_empty()
        && value.split('.').all(|label| {
            !label.is_empty()
                && label
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        })
        && (!domain || value.contains('.'));
    if ok {
        Ok(())
    } else {
        Err(ConfigError::new(
            "dkim",
            format!(
                "the {setting} {value:?} is not a DNS name of letters, digits, '-' and '_'{}",
                if domain {
                    " with at least one dot (example.com)"
                } else {
                    ""
                }
            ),
        ))
    }
}

/// Reads a PEM private key: the key, its algorithm and its public key as published in `p=`.
fn read_key(pem: &str) -> Result<(DkimKey, DkimAlgorithm, Vec<u8>), ConfigError> {
    let bad = |why: String| ConfigError::new("dkim", why);
    let der = PrivateKeyDer::from_pem_slice(pem.as_bytes()).map_err(|e| {
        bad(format!(
            "the key is not a PEM private key ({e}); give an RSA key (BEGIN RSA PRIVATE KEY or \
             BEGIN PRIVATE KEY) or an Ed25519 key (openssl genpkey -algorithm ed25519)"
        ))
    })?;
    match der {
        PrivateKeyDer::Pkcs1(_) => rsa(der).map_err(bad),
        PrivateKeyDer::Pkcs8(ref pkcs8) => {
            let bytes = pkcs8.secret_pkcs8_der().to_vec();
            match Ed25519Key::from_pkcs8_maybe_unchecked_der(&bytes) {
                Ok(key) => {
                    let public = key.public_key();
                    Ok((DkimKey::Ed25519(key), DkimAlgorithm::Ed25519, public))
                }
                Err(_) => rsa(der)
                    .map_err(|e| bad(format!("the PKCS#8 key is neither Ed25519 nor RSA: {e}"))),
            }
        }
        _ => Err(bad(
            "the key is an EC (SEC1) key; DKIM signs with RSA or Ed25519 keys".to_owned(),
        )),
    }
}

/// An RSA key from PKCS#1 or PKCS#8 DER, with its public key as SubjectPublicKeyInfo.
fn rsa(der: PrivateKeyDer<'_>) -> Result<(DkimKey, DkimAlgorithm, Vec<u8>), String> {
    let key = RsaKey::<Sha256>::from_key_der(der)
        .map_err(|e| format!("not an RSA key of 2048 bits or more: {e}"))?;
    let public = subject_public_key_info_rsa(&key.public_key());
    Ok((DkimKey::Rsa(key), DkimAlgorithm::Rsa, public))
}

/// Wraps a PKCS#1 `RSAPublicKey` into the `SubjectPublicKeyInfo` DKIM records carry (what
/// `openssl rsa -pubout -outform der` writes).
fn subject_public_key_info_rsa(pkcs1: &[u8]) -> Vec<u8> {
    // AlgorithmIdentifier { rsaEncryption (1.2.840.113549.1.1.1), NULL }
    const ALGORITHM: &[u8] = &[
        0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00,
    ];
    let mut bit_string = vec![0x00];
    bit_string.extend_from_slice(pkcs1);
    let mut body = ALGORITHM.to_vec();
    body.extend(der_tlv(0x03, &bit_string));
    der_tlv(0x30, &body)
}

/// One DER tag-length-value.
fn der_tlv(tag: u8, value: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = value.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(value);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signer_covers_its_domain_and_subdomains_only() {
        let pem = test_ed25519_pem();
        let s = DkimSigner::from_pem("Example.com.", "s1", &pem).unwrap();
        assert_eq!(s.domain(), "example.com");
        assert!(s.covers("example.com"));
        assert!(s.covers("News.Example.com"));
        assert!(!s.covers("badexample.com"));
        assert!(!s.covers("example.org"));
        let other = DkimSigner::from_pem("example.org", "s1", &pem).unwrap();
        let second = DkimSigner::from_pem("example.com", "s2", &pem).unwrap();
        let signers = [s.clone(), other, second];
        let names = |(picked, aligned): (Vec<&DkimSigner>, bool)| {
            let names: Vec<String> = picked
                .iter()
                .map(|s| format!("{}/{}", s.domain(), s.selector()))
                .collect();
            (names, aligned)
        };
        assert_eq!(
            names(pick(&signers, Some("example.org"))),
            (vec!["example.org/s1".to_owned()], true)
        );
        assert_eq!(
            names(pick(&signers, Some("news.example.com"))),
            (
                vec!["example.com/s1".to_owned(), "example.com/s2".to_owned()],
                true
            ),
            "every covering signer signs"
        );
        assert_eq!(
            names(pick(&signers, Some("elsewhere.net"))),
            (vec!["example.com/s1".to_owned()], false)
        );
        assert!(pick(&[], Some("example.com")).0.is_empty());
    }

    #[test]
    fn bad_keys_and_names_say_what_was_wrong() {
        let e = DkimSigner::from_pem("example.com", "s1", "not a key").unwrap_err();
        assert!(e.reason.contains("not a PEM private key"), "{e}");
        let e = DkimSigner::from_pem("localhost", "s1", &test_ed25519_pem()).unwrap_err();
        assert!(e.reason.contains("at least one dot"), "{e}");
        let e = DkimSigner::from_pem("example.com", "s 1", &test_ed25519_pem()).unwrap_err();
        assert!(e.reason.contains("selector"), "{e}");
        let e =
            DkimSigner::from_pem_file("example.com", "s1", "/nonexistent/dkim.pem").unwrap_err();
        assert!(e.reason.contains("/nonexistent/dkim.pem"), "{e}");
    }

    #[test]
    fn der_lengths_use_the_long_form_above_127() {
        assert_eq!(der_tlv(0x04, &[1, 2]), vec![0x04, 2, 1, 2]);
        let long = der_tlv(0x04, &[0; 300]);
        assert_eq!(&long[..4], &[0x04, 0x82, 0x01, 0x2c]);
        assert_eq!(long.len(), 304);
    }

    /// A fresh Ed25519 key as PKCS#8 PEM.
    fn test_ed25519_pem() -> String {
        let der = Ed25519Key::generate_pkcs8().unwrap();
        let b64 = base64::engine::general_purpose::STANDARD.encode(der);
        format!("-----BEGIN PRIVATE KEY-----\n{b64}\n-----END PRIVATE KEY-----\n")
    }
}
