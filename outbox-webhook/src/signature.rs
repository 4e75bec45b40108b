//! Standard Webhooks signatures, the sending side: keys, their serialized forms, and the three
//! headers of a signed delivery.
//!
//! A delivery carries `webhook-id` (the same on every retry), `webhook-timestamp` (the unix
//! seconds of this attempt) and `webhook-signature`, a space-separated list of
//! `version,base64(signature)` over the exact bytes `{id}.{timestamp}.{body}`
//! ([the specification](https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md)).
//! Two schemes:
//!
//! | | symmetric | asymmetric |
//! |---|---|---|
//! | algorithm | HMAC-SHA256 | Ed25519 |
//! | secret | `whsec_` + base64 of 24 to 64 random bytes | `whsk_` + base64 of the key pair |
//! | given to the receiver | the same `whsec_` secret | the public key, `whpk_` + base64 of 32 bytes |
//! | signature version | `v1` | `v1a` |
//!
//! A [`Signer`] holds every key that is active for an endpoint and signs with each of them,
//! so that a secret can be rotated without a moment when receivers reject deliveries: the
//! receiver accepts a delivery when any one signature in the list verifies.
//!
//! ```
//! use outbox_webhook::signature::{Signer, SigningKey, WebhookId};
//!
//! let key = SigningKey::generate_hmac();
//! let stored = key.to_secret_string(); // "whsec_…": keep it in the endpoint's row
//! let signer = Signer::new(vec![SigningKey::parse(&stored)?])?;
//! let id = WebhookId::new("msg_2KWPBgLlAfxdpx2AI54pPJ85f4W")?;
//! let headers = signer.headers(&id, 1_674_087_231, br#"{"type":"contact.created"}"#);
//! assert!(headers.signature.starts_with("v1,"));
//! for (name, value) in headers.into_pairs() {
//!     // request.header(name, value)
//!     # let _ = (name, value);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::sync::Arc;

use base64::alphabet;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use base64::engine::DecodePaddingMode;
use base64::{DecodeError, Engine as _};
use hmac::{KeyInit, Mac};
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{Ed25519KeyPair, KeyPair as _};

/// The header that carries the delivery's id, the same on every attempt.
pub const ID_HEADER: &str = "webhook-id";
/// The header that carries the attempt's time, integer unix seconds.
pub const TIMESTAMP_HEADER: &str = "webhook-timestamp";
/// The header that carries the space-separated list of `version,base64` signatures.
pub const SIGNATURE_HEADER: &str = "webhook-signature";

/// The longest [`WebhookId`], in bytes.
pub const MAX_ID_LEN: usize = 256;

const HMAC_PREFIX: &str = "whsec_";
const ED25519_SECRET_PREFIX: &str = "whsk_";
const ED25519_PUBLIC_PREFIX: &str = "whpk_";

/// The bytes of a generated HMAC secret (the specification asks for 24 to 64).
const GENERATED_HMAC_LEN: usize = 32;
/// The lengths of an HMAC secret this crate signs with: the specification's range.
const HMAC_SIGNING_LEN: std::ops::RangeInclusive<usize> = 24..=64;
/// The lengths of an HMAC secret this crate verifies with. At least the specification's
/// minimum (a shorter string is far more likely a truncated paste than a secret); above its
/// maximum of 64 only a sanity bound, because some senders issue longer secrets (Svix's
/// server accepts up to 75 bytes) and a receiver has to use the secret it was given.
const HMAC_VERIFYING_LEN: std::ops::RangeInclusive<usize> = 24..=1024;

/// Base64 as the specification's libraries read it: the standard alphabet, with or without
/// the trailing `=` (the reference Python library appends padding before decoding, so it
/// accepts both).
const LENIENT_BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// Which signature scheme a key belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// HMAC-SHA256 with a shared `whsec_` secret; signatures are tagged `v1`.
    HmacSha256,
    /// Ed25519 with a `whsk_` secret key and a `whpk_` public key; signatures are tagged `v1a`.
    Ed25519,
}

impl Algorithm {
    /// The version tag of this scheme's signatures in `webhook-signature`: `v1` or `v1a`.
    pub fn version(self) -> &'static str {
        match self {
            Algorithm::HmacSha256 => "v1",
            Algorithm::Ed25519 => "v1a",
        }
    }
}

/// Why a key string, or a set of keys, was refused. The messages never contain key material.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The string does not start with a prefix this place accepts.
    #[error(
        "a {wanted} must start with {expected}, and this one does not (the key is not shown). \
         Standard Webhooks keys look like `whsec_<base64>` (HMAC), `whsk_<base64>` (Ed25519 \
         secret key) or `whpk_<base64>` (Ed25519 public key); a bare base64 HMAC secret is \
         written with `whsec_` in front of it"
    )]
    WrongPrefix {
        /// What was being parsed: "signing key" or "verifying key".
        wanted: &'static str,
        /// The accepted prefixes, e.g. "`whsec_` or `whsk_`".
        expected: &'static str,
    },
    /// A `whpk_` public key was given where a secret key is needed to sign.
    #[error(
        "a `whpk_` key is an Ed25519 public key, which can only verify; signing needs the \
         secret key it belongs to (`whsk_…`)"
    )]
    PublicKeyCannotSign,
    /// A `whsk_` secret key was given where a receiver's key is expected.
    #[error(
        "a `whsk_` key is the sender's Ed25519 secret key and should stay with the sender; \
         verify with its public key (`whpk_…`, from `SigningKey::verifying_key()` on the \
         sending side)"
    )]
    SecretKeyForVerifying,
    /// The text after the prefix is not base64.
    #[error(
        "the text after `{prefix}` is not valid base64 ({reason}); copy the key again, whole \
         and on one line: standard base64 uses A-Z, a-z, 0-9, `+` and `/`, with optional `=` \
         at the end"
    )]
    Base64 {
        /// The key's prefix.
        prefix: &'static str,
        /// What was wrong, without the key's characters.
        reason: String,
    },
    /// The key decodes to a number of bytes its kind cannot have.
    #[error(
        "a `{prefix}` key must decode to {expected} bytes, and this one decodes to {got}; \
         check that it was copied whole, or generate a new one"
    )]
    Length {
        /// The key's prefix.
        prefix: &'static str,
        /// The accepted lengths, e.g. "24 to 64".
        expected: &'static str,
        /// The decoded length.
        got: usize,
    },
    /// A 64-byte `whsk_` key whose second half is not the public key of its first half.
    #[error(
        "the 64-byte `whsk_` key is not a seed followed by its own public key (the last 32 \
         bytes do not match the first 32): it is damaged or pieced together from two keys; \
         use the original key, or generate a new one"
    )]
    PublicKeyMismatch,
    /// A [`Signer`] or a verifier was given no keys at all.
    #[error("no keys: a {0} needs at least one key (for a rotation, the new key and the old one)")]
    NoKeys(&'static str),
}

/// Why a string cannot be a [`WebhookId`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IdError {
    /// The id is empty.
    #[error("a webhook id cannot be empty")]
    Empty,
    /// The id is longer than [`MAX_ID_LEN`] bytes.
    #[error("a webhook id is at most {max} bytes; this one is {len}")]
    TooLong {
        /// The id's length in bytes.
        len: usize,
        /// [`MAX_ID_LEN`].
        max: usize,
    },
    /// The id contains a `.`, which would make the signed content `{id}.{timestamp}.{body}`
    /// ambiguous.
    #[error(
        "a webhook id cannot contain '.' (at byte {at}): the signed content is \
         `id.timestamp.body`, and a '.' in the id would let one signature stand for another \
         split of the same bytes; use e.g. '_' or '-' instead"
    )]
    Dot {
        /// The byte offset of the first `.`.
        at: usize,
    },
    /// The id contains whitespace.
    #[error("a webhook id cannot contain whitespace (at byte {at})")]
    Whitespace {
        /// The byte offset of the first whitespace character.
        at: usize,
    },
    /// The id contains a control character or a non-ASCII character.
    #[error(
        "a webhook id is sent as an HTTP header and must be printable ASCII; byte {at} is not"
    )]
    NotPrintableAscii {
        /// The byte offset of the first such character.
        at: usize,
    },
}

/// A delivery's `webhook-id`: non-empty, at most [`MAX_ID_LEN`] bytes, printable ASCII without
/// `.` or spaces. It is the same on every attempt of a delivery, so that the receiver can use it
/// as an idempotency key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WebhookId(String);

impl WebhookId {
    /// Checks `id` and wraps it.
    pub fn new(id: impl Into<String>) -> Result<WebhookId, IdError> {
        let id = id.into();
        check_id(&id)?;
        Ok(WebhookId(id))
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The id, as an owned string.
    pub fn into_string(self) -> String {
        self.0
    }
}

/// The rule of [`WebhookId`], for the receiving side too.
pub(crate) fn check_id(id: &str) -> Result<(), IdError> {
    if id.is_empty() {
        return Err(IdError::Empty);
    }
    if id.len() > MAX_ID_LEN {
        return Err(IdError::TooLong {
            len: id.len(),
            max: MAX_ID_LEN,
        });
    }
    for (at, byte) in id.bytes().enumerate() {
        match byte {
            b'.' => return Err(IdError::Dot { at }),
            b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c' => {
                return Err(IdError::Whitespace { at })
            }
            0x21..=0x7e => {}
            _ => return Err(IdError::NotPrintableAscii { at }),
        }
    }
    Ok(())
}

impl fmt::Display for WebhookId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for WebhookId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for WebhookId {
    type Err = IdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        WebhookId::new(s)
    }
}

impl TryFrom<&str> for WebhookId {
    type Error = IdError;
    fn try_from(s: &str) -> Result<Self, Self::Error> {
        WebhookId::new(s)
    }
}

impl TryFrom<String> for WebhookId {
    type Error = IdError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        WebhookId::new(s)
    }
}

/// A key that signs deliveries: an HMAC-SHA256 secret (`whsec_…`) or an Ed25519 secret key
/// (`whsk_…`).
///
/// `Debug` shows the kind and size, never the secret: `SigningKey(whsec_…(32 bytes))`.
#[derive(Clone)]
pub struct SigningKey(SigningInner);

#[derive(Clone)]
enum SigningInner {
    Hmac(Vec<u8>),
    Ed25519 {
        seed: [u8; 32],
        pair: Arc<Ed25519KeyPair>,
    },
}

impl SigningKey {
    /// Reads a serialized secret: `whsec_` + base64 of 24 to 64 bytes, or `whsk_` + base64 of
    /// either the 32-byte Ed25519 seed or the 64 bytes of seed followed by public key
    /// (libsodium's layout, the one Svix's server hands out). Surrounding whitespace is
    /// ignored; `=` padding is optional.
    pub fn parse(key: &str) -> Result<SigningKey, KeyError> {
        let key = key.trim();
        if let Some(b64) = key.strip_prefix(HMAC_PREFIX) {
            let secret = decode(HMAC_PREFIX, b64)?;
            if !HMAC_SIGNING_LEN.contains(&secret.len()) {
                return Err(KeyError::Length {
                    prefix: HMAC_PREFIX,
                    expected: "24 to 64",
                    got: secret.len(),
                });
            }
            Ok(SigningKey(SigningInner::Hmac(secret)))
        } else if let Some(b64) = key.strip_prefix(ED25519_SECRET_PREFIX) {
            let bytes = decode(ED25519_SECRET_PREFIX, b64)?;
            match bytes.len() {
                32 => Ok(SigningKey::ed25519_from_seed(
                    bytes.as_slice().try_into().expect("32 bytes"),
                )),
                64 => {
                    let (seed, public) = bytes.split_at(32);
                    let pair = Ed25519KeyPair::from_seed_and_public_key(seed, public)
                        .map_err(|_| KeyError::PublicKeyMismatch)?;
                    Ok(SigningKey(SigningInner::Ed25519 {
                        seed: seed.try_into().expect("32 bytes"),
                        pair: Arc::new(pair),
                    }))
                }
                got => Err(KeyError::Length {
                    prefix: ED25519_SECRET_PREFIX,
                    expected: "32 (the seed) or 64 (seed and public key)",
                    got,
                }),
            }
        } else if key.starts_with(ED25519_PUBLIC_PREFIX) {
            Err(KeyError::PublicKeyCannotSign)
        } else {
            Err(KeyError::WrongPrefix {
                wanted: "signing key",
                expected: "`whsec_` or `whsk_`",
            })
        }
    }

    /// A new HMAC-SHA256 secret of 32 random bytes from the operating system.
    pub fn generate_hmac() -> SigningKey {
        SigningKey(SigningInner::Hmac(random::<GENERATED_HMAC_LEN>().to_vec()))
    }

    /// A new Ed25519 key pair; its seed is 32 random bytes from the operating system.
    pub fn generate_ed25519() -> SigningKey {
        SigningKey::ed25519_from_seed(random::<32>())
    }

    fn ed25519_from_seed(seed: [u8; 32]) -> SigningKey {
        let pair = Ed25519KeyPair::from_seed_unchecked(&seed).expect("a seed is 32 bytes");
        SigningKey(SigningInner::Ed25519 {
            seed,
            pair: Arc::new(pair),
        })
    }

    /// The scheme this key signs with.
    pub fn algorithm(&self) -> Algorithm {
        match self.0 {
            SigningInner::Hmac(_) => Algorithm::HmacSha256,
            SigningInner::Ed25519 { .. } => Algorithm::Ed25519,
        }
    }

    /// The serialized secret, the form to store: `whsec_<base64>`, or for Ed25519
    /// `whsk_<base64 of seed ‖ public key>` (64 bytes). This is the secret itself: keep it
    /// out of logs.
    ///
    /// The 64-byte form is the one Svix's server serializes (`whsk_` + base64 of
    /// ed25519-compact's 64-byte secret key, seed then public key) and libsodium's layout; the
    /// specification's reference libraries read a 32-byte seed instead, which
    /// [`SigningKey::parse`] accepts too.
    pub fn to_secret_string(&self) -> String {
        match &self.0 {
            SigningInner::Hmac(secret) => format!("{HMAC_PREFIX}{}", STANDARD.encode(secret)),
            SigningInner::Ed25519 { seed, pair } => {
                let mut both = [0u8; 64];
                both[..32].copy_from_slice(seed);
                both[32..].copy_from_slice(pair.public_key().as_ref());
                format!("{ED25519_SECRET_PREFIX}{}", STANDARD.encode(both))
            }
        }
    }

    /// What the receiver verifies with: for HMAC the same secret, for Ed25519 the public key
    /// (`whpk_…`).
    pub fn verifying_key(&self) -> VerifyingKey {
        match &self.0 {
            SigningInner::Hmac(secret) => VerifyingKey(VerifyingInner::Hmac(secret.clone())),
            SigningInner::Ed25519 { pair, .. } => VerifyingKey(VerifyingInner::Ed25519(
                pair.public_key()
                    .as_ref()
                    .try_into()
                    .expect("an Ed25519 public key is 32 bytes"),
            )),
        }
    }

    /// One signature, `v1,<base64>` or `v1a,<base64>`, over `{id}.{timestamp}.{body}`.
    pub fn sign(&self, id: &WebhookId, timestamp: u64, body: &[u8]) -> String {
        let raw = match &self.0 {
            SigningInner::Hmac(secret) => {
                STANDARD.encode(hmac_sha256(secret, id.as_str(), timestamp, body))
            }
            SigningInner::Ed25519 { pair, .. } => {
                STANDARD.encode(pair.sign(&signed_content(id.as_str(), timestamp, body)))
            }
        };
        format!("{},{raw}", self.algorithm().version())
    }
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            SigningInner::Hmac(secret) => {
                write!(f, "SigningKey({HMAC_PREFIX}…({} bytes))", secret.len())
            }
            SigningInner::Ed25519 { pair, .. } => write!(
                f,
                "SigningKey({ED25519_SECRET_PREFIX}…, public {ED25519_PUBLIC_PREFIX}{})",
                STANDARD.encode(pair.public_key().as_ref())
            ),
        }
    }
}

/// A key that verifies deliveries: an HMAC-SHA256 secret (`whsec_…`, the sender's own
/// secret) or an Ed25519 public key (`whpk_…`).
///
/// `Debug` never shows an HMAC secret (`VerifyingKey(whsec_…(32 bytes))`); a public key is
/// shown whole.
#[derive(Clone)]
pub struct VerifyingKey(VerifyingInner);

#[derive(Clone)]
enum VerifyingInner {
    Hmac(Vec<u8>),
    Ed25519([u8; 32]),
}

/// A verifying key's bytes, for the receiving side of this crate.
pub(crate) enum KeyMaterial<'a> {
    Hmac(&'a [u8]),
    Ed25519(&'a [u8; 32]),
}

impl VerifyingKey {
    /// Reads `whsec_` + base64 of the HMAC secret (at least 24 bytes), or `whpk_` + base64 of
    /// a 32-byte Ed25519 public key. Surrounding whitespace is ignored; `=` padding is
    /// optional. A `whsk_` secret key is refused: a receiver verifies with the public key.
    pub fn parse(key: &str) -> Result<VerifyingKey, KeyError> {
        let key = key.trim();
        if let Some(b64) = key.strip_prefix(HMAC_PREFIX) {
            let secret = decode(HMAC_PREFIX, b64)?;
            if !HMAC_VERIFYING_LEN.contains(&secret.len()) {
                return Err(KeyError::Length {
                    prefix: HMAC_PREFIX,
                    expected: "at least 24 (the specification's minimum)",
                    got: secret.len(),
                });
            }
            Ok(VerifyingKey(VerifyingInner::Hmac(secret)))
        } else if let Some(b64) = key.strip_prefix(ED25519_PUBLIC_PREFIX) {
            let bytes = decode(ED25519_PUBLIC_PREFIX, b64)?;
            let public: [u8; 32] = bytes.as_slice().try_into().map_err(|_| KeyError::Length {
                prefix: ED25519_PUBLIC_PREFIX,
                expected: "32",
                got: bytes.len(),
            })?;
            Ok(VerifyingKey(VerifyingInner::Ed25519(public)))
        } else if key.starts_with(ED25519_SECRET_PREFIX) {
            Err(KeyError::SecretKeyForVerifying)
        } else {
            Err(KeyError::WrongPrefix {
                wanted: "verifying key",
                expected: "`whsec_` or `whpk_`",
            })
        }
    }

    /// The scheme this key verifies.
    pub fn algorithm(&self) -> Algorithm {
        match self.0 {
            VerifyingInner::Hmac(_) => Algorithm::HmacSha256,
            VerifyingInner::Ed25519(_) => Algorithm::Ed25519,
        }
    }

    /// The serialized key: `whpk_<base64>` for Ed25519 (public, safe to publish), or
    /// `whsec_<base64>` for HMAC, which is the shared secret itself.
    pub fn to_key_string(&self) -> String {
        match &self.0 {
            VerifyingInner::Hmac(secret) => format!("{HMAC_PREFIX}{}", STANDARD.encode(secret)),
            VerifyingInner::Ed25519(public) => {
                format!("{ED25519_PUBLIC_PREFIX}{}", STANDARD.encode(public))
            }
        }
    }

    pub(crate) fn material(&self) -> KeyMaterial<'_> {
        match &self.0 {
            VerifyingInner::Hmac(secret) => KeyMaterial::Hmac(secret),
            VerifyingInner::Ed25519(public) => KeyMaterial::Ed25519(public),
        }
    }
}

impl fmt::Debug for VerifyingKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            VerifyingInner::Hmac(secret) => {
                write!(f, "VerifyingKey({HMAC_PREFIX}…({} bytes))", secret.len())
            }
            VerifyingInner::Ed25519(public) => write!(
                f,
                "VerifyingKey({ED25519_PUBLIC_PREFIX}{})",
                STANDARD.encode(public)
            ),
        }
    }
}

/// The keys an endpoint's deliveries are signed with: normally one; during a rotation the new
/// key and the old one, for as long as receivers may still hold the old one.
///
/// Every key signs every delivery, in the order given (newest first, by convention), and the
/// signatures go space-separated into one `webhook-signature` header, so a receiver that knows
/// either key accepts the delivery.
#[derive(Clone, Debug)]
pub struct Signer {
    keys: Vec<SigningKey>,
}

impl Signer {
    /// A signer with `keys`, newest first. An empty list is refused.
    pub fn new(keys: Vec<SigningKey>) -> Result<Signer, KeyError> {
        if keys.is_empty() {
            return Err(KeyError::NoKeys("signer"));
        }
        Ok(Signer { keys })
    }

    /// The keys, in signing order.
    pub fn keys(&self) -> &[SigningKey] {
        &self.keys
    }

    /// The keys receivers verify with, in the same order.
    pub fn verifying_keys(&self) -> Vec<VerifyingKey> {
        self.keys.iter().map(SigningKey::verifying_key).collect()
    }

    /// The `webhook-signature` value: every key's signature, space-separated.
    pub fn sign(&self, id: &WebhookId, timestamp: u64, body: &[u8]) -> String {
        let signatures: Vec<String> = self
            .keys
            .iter()
            .map(|key| key.sign(id, timestamp, body))
            .collect();
        signatures.join(" ")
    }

    /// The three header values of a delivery attempt made at `timestamp` (unix seconds).
    pub fn headers(&self, id: &WebhookId, timestamp: u64, body: &[u8]) -> SignatureHeaders {
        SignatureHeaders {
            id: id.as_str().to_owned(),
            timestamp: timestamp.to_string(),
            signature: self.sign(id, timestamp, body),
        }
    }
}

/// The header values of one signed delivery attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureHeaders {
    /// The value of `webhook-id`.
    pub id: String,
    /// The value of `webhook-timestamp`.
    pub timestamp: String,
    /// The value of `webhook-signature`.
    pub signature: String,
}

impl SignatureHeaders {
    /// The headers as `(name, value)` pairs: `webhook-id`, `webhook-timestamp`,
    /// `webhook-signature`.
    pub fn into_pairs(self) -> [(&'static str, String); 3] {
        [
            (ID_HEADER, self.id),
            (TIMESTAMP_HEADER, self.timestamp),
            (SIGNATURE_HEADER, self.signature),
        ]
    }
}

/// The signed content, `{id}.{timestamp}.{body}`, in one buffer (Ed25519 signs a whole message).
pub(crate) fn signed_content(id: &str, timestamp: u64, body: &[u8]) -> Vec<u8> {
    let timestamp = timestamp.to_string();
    let mut content = Vec::with_capacity(id.len() + timestamp.len() + body.len() + 2);
    content.extend_from_slice(id.as_bytes());
    content.push(b'.');
    content.extend_from_slice(timestamp.as_bytes());
    content.push(b'.');
    content.extend_from_slice(body);
    content
}

/// HMAC-SHA256 over `{id}.{timestamp}.{body}`, fed in pieces (no copy of the body).
pub(crate) fn hmac_sha256(secret: &[u8], id: &str, timestamp: u64, body: &[u8]) -> [u8; 32] {
    let mut mac = HmacSha256::new_from_slice(secret).expect("HMAC takes a key of any length");
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac.finalize().into_bytes().into()
}

/// Base64 as the specification's libraries read it (padding optional).
pub(crate) fn decode_base64(b64: &str) -> Result<Vec<u8>, DecodeError> {
    LENIENT_BASE64.decode(b64)
}

fn decode(prefix: &'static str, b64: &str) -> Result<Vec<u8>, KeyError> {
    decode_base64(b64).map_err(|e| KeyError::Base64 {
        prefix,
        // DecodeError's own message quotes the offending character, a character of the key.
        reason: match e {
            DecodeError::InvalidByte(at, _) => format!("a character that is not base64 at {at}"),
            DecodeError::InvalidLength(_) => "its length is not that of base64 text".to_owned(),
            DecodeError::InvalidLastSymbol(at, _) => {
                format!("the last character, at {at}, is not a possible ending")
            }
            DecodeError::InvalidPadding => "its `=` padding is wrong".to_owned(),
        },
    })
}

fn random<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    SystemRandom::new()
        .fill(&mut bytes)
        .expect("the operating system's random number generator failed");
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    // The signing tests of the Go library in the standard-webhooks repository
    // (libraries/go/webhook_symmetric_test.go and webhook_asymmetric_test.go): fixed keys, id,
    // timestamp and body, and the signatures they expect. Checked with Python's hmac and
    // PyNaCl too.
    const VECTOR_ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const VECTOR_TIMESTAMP: u64 = 1_614_265_330;
    const VECTOR_BODY: &[u8] = br#"{"test": 2432232314}"#;
    const VECTOR_HMAC_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const VECTOR_HMAC_SIGNATURE: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
    /// The Go library's asymmetric key is a bare 32-byte seed ("TESTSIGNINGKEYDONOTUSETHISFORANY").
    const VECTOR_ED25519_SEED: &str = "VEVTVFNJR05JTkdLRVlET05PVFVTRVRISVNGT1JBTlk=";
    const VECTOR_ED25519_PUBLIC: &str = "whpk_ZlN4eg7dSSqi0moX9hQUk3orrOouK3QVQSlJa248c/g=";
    const VECTOR_ED25519_SIGNATURE: &str = "v1a,tQ9V2XOqn7jL/DQenEFpqIugdBVtiMmER5mhSkXBNwM0mkATuDe6KYYUuxqtaiHeYGb7KaaBRdM5WqyeFiL8Ag==";

    fn vector_id() -> WebhookId {
        WebhookId::new(VECTOR_ID).unwrap()
    }

    #[test]
    fn hmac_vector_of_the_reference_library() {
        let key = SigningKey::parse(VECTOR_HMAC_SECRET).unwrap();
        assert_eq!(key.algorithm(), Algorithm::HmacSha256);
        assert_eq!(
            key.sign(&vector_id(), VECTOR_TIMESTAMP, VECTOR_BODY),
            VECTOR_HMAC_SIGNATURE
        );
        assert_eq!(key.to_secret_string(), VECTOR_HMAC_SECRET);
        assert_eq!(key.verifying_key().to_key_string(), VECTOR_HMAC_SECRET);
    }

    #[test]
    fn ed25519_vector_of_the_reference_library_in_both_whsk_forms() {
        let seed_form = SigningKey::parse(&format!("whsk_{VECTOR_ED25519_SEED}")).unwrap();
        assert_eq!(seed_form.algorithm(), Algorithm::Ed25519);
        assert_eq!(
            seed_form.sign(&vector_id(), VECTOR_TIMESTAMP, VECTOR_BODY),
            VECTOR_ED25519_SIGNATURE
        );
        assert_eq!(
            seed_form.verifying_key().to_key_string(),
            VECTOR_ED25519_PUBLIC
        );

        // What it serializes to: seed then public key, 64 bytes; read back, the same key.
        let stored = seed_form.to_secret_string();
        let bytes = decode_base64(stored.strip_prefix("whsk_").unwrap()).unwrap();
        assert_eq!(bytes.len(), 64);
        assert_eq!(&bytes[..32], b"TESTSIGNINGKEYDONOTUSETHISFORANY");
        assert_eq!(
            format!("whpk_{}", STANDARD.encode(&bytes[32..])),
            VECTOR_ED25519_PUBLIC
        );
        let long_form = SigningKey::parse(&stored).unwrap();
        assert_eq!(
            long_form.sign(&vector_id(), VECTOR_TIMESTAMP, VECTOR_BODY),
            VECTOR_ED25519_SIGNATURE
        );
        assert_eq!(long_form.to_secret_string(), stored);
    }

    #[test]
    fn a_64_byte_whsk_with_a_foreign_public_key_is_refused() {
        let mut bytes = b"TESTSIGNINGKEYDONOTUSETHISFORANY".to_vec();
        bytes.extend_from_slice(&[7u8; 32]);
        let key = format!("whsk_{}", STANDARD.encode(&bytes));
        assert_eq!(
            SigningKey::parse(&key).unwrap_err(),
            KeyError::PublicKeyMismatch
        );
    }

    #[test]
    fn generated_keys_round_trip_and_differ() {
        let a = SigningKey::generate_hmac();
        let b = SigningKey::generate_hmac();
        assert_ne!(a.to_secret_string(), b.to_secret_string());
        let secret = a.to_secret_string();
        assert!(secret.starts_with("whsec_"));
        assert_eq!(decode_base64(&secret[6..]).unwrap().len(), 32);
        assert_eq!(
            SigningKey::parse(&secret).unwrap().to_secret_string(),
            secret
        );

        let e = SigningKey::generate_ed25519();
        let f = SigningKey::generate_ed25519();
        assert_ne!(e.to_secret_string(), f.to_secret_string());
        let stored = e.to_secret_string();
        let parsed = SigningKey::parse(&stored).unwrap();
        assert_eq!(parsed.to_secret_string(), stored);
        assert_eq!(
            parsed.verifying_key().to_key_string(),
            e.verifying_key().to_key_string()
        );
        let id = WebhookId::new("msg_1").unwrap();
        assert_eq!(parsed.sign(&id, 1, b"x"), e.sign(&id, 1, b"x"));
    }

    #[test]
    fn key_parsing_errors_say_what_is_wrong() {
        let no_prefix = SigningKey::parse("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap_err();
        assert!(matches!(no_prefix, KeyError::WrongPrefix { .. }));
        let message = no_prefix.to_string();
        assert!(message.contains("whsec_"), "{message}");
        assert!(!message.contains("MfKQ9r8G"), "the key leaked: {message}");

        let bad = SigningKey::parse("whsec_MfKQ9r8GKYqrTwjU!D8ILPZIo2LaLaSw").unwrap_err();
        assert!(matches!(bad, KeyError::Base64 { .. }), "{bad:?}");
        assert!(bad.to_string().contains("not valid base64"), "{bad}");

        let short =
            SigningKey::parse(&format!("whsec_{}", STANDARD.encode([1u8; 23]))).unwrap_err();
        assert_eq!(
            short,
            KeyError::Length {
                prefix: "whsec_",
                expected: "24 to 64",
                got: 23
            }
        );
        let long = SigningKey::parse(&format!("whsec_{}", STANDARD.encode([1u8; 65]))).unwrap_err();
        assert!(matches!(long, KeyError::Length { got: 65, .. }));
        assert!(SigningKey::parse(&format!("whsec_{}", STANDARD.encode([1u8; 24]))).is_ok());
        assert!(SigningKey::parse(&format!("whsec_{}", STANDARD.encode([1u8; 64]))).is_ok());

        let odd = SigningKey::parse(&format!("whsk_{}", STANDARD.encode([1u8; 48]))).unwrap_err();
        assert!(matches!(odd, KeyError::Length { got: 48, .. }));

        assert_eq!(
            SigningKey::parse(VECTOR_ED25519_PUBLIC).unwrap_err(),
            KeyError::PublicKeyCannotSign
        );
        assert_eq!(
            VerifyingKey::parse(&format!("whsk_{VECTOR_ED25519_SEED}")).unwrap_err(),
            KeyError::SecretKeyForVerifying
        );
        let short_public =
            VerifyingKey::parse(&format!("whpk_{}", STANDARD.encode([1u8; 31]))).unwrap_err();
        assert!(matches!(short_public, KeyError::Length { got: 31, .. }));
        assert!(matches!(
            VerifyingKey::parse("pk_live_123").unwrap_err(),
            KeyError::WrongPrefix { .. }
        ));
        assert_eq!(
            Signer::new(Vec::new()).unwrap_err(),
            KeyError::NoKeys("signer")
        );
    }

    #[test]
    fn parsing_is_lenient_about_padding_and_surrounding_whitespace() {
        let unpadded = format!("whsec_{}", STANDARD.encode([9u8; 32]).trim_end_matches('='));
        let a = SigningKey::parse(&format!("  {unpadded}\n")).unwrap();
        assert_eq!(
            a.to_secret_string(),
            format!("whsec_{}", STANDARD.encode([9u8; 32]))
        );
        let public = VerifyingKey::parse(VECTOR_ED25519_PUBLIC.trim_end_matches('=')).unwrap();
        assert_eq!(public.to_key_string(), VECTOR_ED25519_PUBLIC);
        // A verifying HMAC secret may be longer than the specification's 64 bytes (Svix: 75).
        assert!(VerifyingKey::parse(&format!("whsec_{}", STANDARD.encode([1u8; 75]))).is_ok());
        assert!(VerifyingKey::parse(&format!("whsec_{}", STANDARD.encode([1u8; 23]))).is_err());
    }

    #[test]
    fn debug_never_shows_a_secret() {
        let hmac = SigningKey::parse(VECTOR_HMAC_SECRET).unwrap();
        let ed = SigningKey::parse(&format!("whsk_{VECTOR_ED25519_SEED}")).unwrap();
        let signer = Signer::new(vec![hmac.clone(), ed.clone()]).unwrap();
        let printed = format!(
            "{hmac:?} {ed:?} {signer:?} {:?} {:?} {:#?}",
            hmac.verifying_key(),
            ed.verifying_key(),
            signer
        );
        assert_eq!(format!("{hmac:?}"), "SigningKey(whsec_…(24 bytes))");
        assert_eq!(
            format!("{:?}", hmac.verifying_key()),
            "VerifyingKey(whsec_…(24 bytes))"
        );
        for secret in [
            "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            VECTOR_ED25519_SEED,
            &ed.to_secret_string()[5..],
        ] {
            assert!(!printed.contains(secret), "{printed}");
            assert!(!printed.contains(&secret[..12]), "{printed}");
        }
        assert!(printed.contains(VECTOR_ED25519_PUBLIC), "{printed}");
    }

    #[test]
    fn webhook_ids_are_checked() {
        assert!(WebhookId::new("msg_2KWPBgLlAfxdpx2AI54pPJ85f4W").is_ok());
        assert!(WebhookId::new("a".repeat(256)).is_ok());
        assert_eq!(WebhookId::new("").unwrap_err(), IdError::Empty);
        assert_eq!(
            WebhookId::new("a".repeat(257)).unwrap_err(),
            IdError::TooLong { len: 257, max: 256 }
        );
        assert_eq!(WebhookId::new("msg.1").unwrap_err(), IdError::Dot { at: 3 });
        assert_eq!(
            WebhookId::new("msg 1").unwrap_err(),
            IdError::Whitespace { at: 3 }
        );
        assert_eq!(
            WebhookId::new("msg\t1").unwrap_err(),
            IdError::Whitespace { at: 3 }
        );
        assert_eq!(
            WebhookId::new("msg\u{0}").unwrap_err(),
            IdError::NotPrintableAscii { at: 3 }
        );
        assert_eq!(
            WebhookId::new("msgé").unwrap_err(),
            IdError::NotPrintableAscii { at: 3 }
        );
        assert!(IdError::Dot { at: 3 }.to_string().contains("'.'"));
        let parsed: WebhookId = "msg_1".parse().unwrap();
        assert_eq!(parsed.to_string(), "msg_1");
    }

    #[test]
    fn a_signer_signs_with_every_key_in_order() {
        let new = SigningKey::generate_hmac();
        let old = SigningKey::parse(VECTOR_HMAC_SECRET).unwrap();
        let ed = SigningKey::parse(&format!("whsk_{VECTOR_ED25519_SEED}")).unwrap();
        let signer = Signer::new(vec![new.clone(), old, ed]).unwrap();
        let headers = signer.headers(&vector_id(), VECTOR_TIMESTAMP, VECTOR_BODY);
        let expected = format!(
            "{} {VECTOR_HMAC_SIGNATURE} {VECTOR_ED25519_SIGNATURE}",
            new.sign(&vector_id(), VECTOR_TIMESTAMP, VECTOR_BODY)
        );
        assert_eq!(headers.signature, expected);
        assert_eq!(headers.id, VECTOR_ID);
        assert_eq!(headers.timestamp, "1614265330");
        let pairs = headers.into_pairs();
        assert_eq!(pairs[0], ("webhook-id", VECTOR_ID.to_owned()));
        assert_eq!(pairs[1], ("webhook-timestamp", "1614265330".to_owned()));
        assert_eq!(pairs[2], ("webhook-signature", expected));
        assert_eq!(signer.verifying_keys().len(), 3);
    }
}
