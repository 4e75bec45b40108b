//! Webhook endpoints: a URL and its signing secrets, stored in the outbox's
//! `outbox_endpoints` table (kind `webhook`) so every process sends with the same ones.
//!
//! Secrets rotate without downtime: [`WebhookEndpoints::rotate`] adds a new key and every
//! key of the endpoint signs each delivery (the newest first), so a receiver that still
//! knows only the old key verifies, and one that knows only the new key verifies too;
//! [`WebhookEndpoints::retire_old_secrets`] removes the old ones once the receiver moved.

use std::{
    fmt,
    time::{SystemTime, UNIX_EPOCH},
};

use outbox_core::{admin::Endpoints, store::Backend, Admin, Error, MessageId, ReplayFilter};
use serde::{Deserialize, Serialize};
use url::Url;

use crate::signature::{Algorithm, SigningKey};

/// The settings of an endpoint as stored (the endpoint table's JSON).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndpointSettings {
    /// Where deliveries are POSTed.
    pub url: String,
    /// Its signing secrets, newest first: every one signs each delivery.
    pub secrets: Vec<StoredSecret>,
    /// Deliver its events one at a time, in enqueue order (a failing one holds the next).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ordered: bool,
}

impl fmt::Debug for EndpointSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EndpointSettings")
            .field("url", &self.url)
            .field("secrets", &self.secrets.len())
            .field("ordered", &self.ordered)
            .finish()
    }
}

/// A signing secret as stored.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredSecret {
    /// The secret in its Standard Webhooks form (`whsec_…` or `whsk_…`).
    pub key: String,
    /// When it was added, in unix seconds.
    pub added_at: u64,
}

impl fmt::Debug for StoredSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = self.key.split('_').next().unwrap_or("?");
        write!(f, "StoredSecret({kind}_…, added_at: {})", self.added_at)
    }
}

/// An endpoint as the webhook kind reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookEndpoint {
    /// Its name (unique among webhook endpoints).
    pub name: String,
    /// Where deliveries go.
    pub url: Url,
    /// Its signing keys, newest first.
    pub secrets: Vec<StoredSecret>,
    /// Why it is disabled, when it is (its messages wait, parked, until it is enabled).
    pub disabled: Option<(SystemTime, String)>,
    /// Since when every delivery to it has failed, while that lasts.
    pub failing_since: Option<SystemTime>,
    /// Its events are delivered one at a time, in enqueue order.
    pub ordered: bool,
}

impl WebhookEndpoint {
    /// Reads stored endpoint `e`.
    pub fn from_stored(e: &outbox_core::store::Endpoint) -> Result<Self, String> {
        let settings: EndpointSettings = serde_json::from_str(&e.settings).map_err(|err| {
            format!(
                "webhook endpoint `{}`: its settings do not read: {err}",
                e.name
            )
        })?;
        let url = check_url(&settings.url)
            .map_err(|why| format!("webhook endpoint `{}`: {why}", e.name))?;
        Ok(Self {
            name: e.name.clone(),
            url,
            secrets: settings.secrets,
            disabled: e
                .disabled_at
                .map(|at| (at, e.disabled_reason.clone().unwrap_or_default())),
            failing_since: e.failing_since,
            ordered: settings.ordered,
        })
    }

    /// The key its messages are shaped by: the URL's host, with the port when it is not
    /// the scheme's default.
    pub fn host_key(&self) -> String {
        host_key(&self.url)
    }

    /// Whether deliveries to it go out.
    pub fn is_enabled(&self) -> bool {
        self.disabled.is_none()
    }

    /// Its signing keys, newest first (secrets that do not parse are skipped).
    pub fn signing_keys(&self) -> Vec<SigningKey> {
        self.secrets
            .iter()
            .filter_map(|s| SigningKey::parse(&s.key).ok())
            .collect()
    }
}

/// The group of the messages to endpoint `name` (paused while it is disabled).
pub fn group_of(name: &str) -> String {
    format!("webhook:{name}")
}

/// Longest webhook endpoint name, in bytes (its group, `webhook:` and the name, must fit a
/// group name).
pub const MAX_ENDPOINT_NAME_LEN: usize = 192;

/// Checks a webhook endpoint's name: 1 to [`MAX_ENDPOINT_NAME_LEN`] bytes, no control
/// characters.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > MAX_ENDPOINT_NAME_LEN {
        return Err(format!(
            "a webhook endpoint's name is 1 to {MAX_ENDPOINT_NAME_LEN} bytes, not {} (`{}`)",
            name.len(),
            name.chars().take(40).collect::<String>()
        ));
    }
    if name.chars().any(char::is_control) {
        return Err(format!(
            "a webhook endpoint's name may not hold control characters: {name:?}"
        ));
    }
    Ok(())
}

/// How an endpoint's URL is shown in logs, attempt logs and dead letters: its scheme, host
/// and port, and `/…` for a path or query (which often carry a token).
pub fn shown_url(url: &Url) -> String {
    let rest = if url.path() == "/" && url.query().is_none() {
        ""
    } else {
        "/…"
    };
    format!("{}://{}{rest}", url.scheme(), host_key(url))
}

/// The URL's host, lowercased, with `:port` when not the scheme's default.
pub(crate) fn host_key(url: &Url) -> String {
    let host = url.host_str().unwrap_or("").to_ascii_lowercase();
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host,
    }
}

/// Checks an endpoint URL as given: `https` (or `http`, which the delivery's address
/// policy refuses unless allowed), a host, no user name or password, no fragment.
pub fn check_url(url: &str) -> Result<Url, String> {
    let parsed = Url::parse(url).map_err(|e| format!("`{url}` is not a URL: {e}"))?;
    if !matches!(parsed.scheme(), "https" | "http") {
        return Err(format!(
            "`{url}`: a webhook URL is https:// (or http:// where the address policy allows it)"
        ));
    }
    if parsed.host_str().unwrap_or("").is_empty() {
        return Err(format!("`{url}` has no host"));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(format!(
            "`{}`: a webhook URL may not hold a user name or password (the signatures \
             authenticate deliveries)",
            parsed.host_str().unwrap_or("")
        ));
    }
    if parsed.fragment().is_some() {
        return Err(format!("`{url}`: a webhook URL has no #fragment"));
    }
    Ok(parsed)
}

/// A new endpoint's secret, to hand to the receiver once: for HMAC the `whsec_` secret
/// itself, for Ed25519 the `whpk_` public key.
#[derive(Clone, PartialEq, Eq)]
pub struct NewSecret {
    /// What the receiver verifies with.
    pub verify_with: String,
    /// The signature scheme.
    pub algorithm: Algorithm,
}

impl fmt::Debug for NewSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NewSecret({:?})", self.algorithm)
    }
}

/// The webhook endpoints of an outbox's database, from any process.
#[derive(Clone)]
pub struct WebhookEndpoints<B> {
    admin: Admin<B>,
    endpoints: Endpoints<B>,
}

impl<B: Backend> WebhookEndpoints<B> {
    /// The webhook endpoints stored through `admin`.
    pub fn new(admin: &Admin<B>) -> Self {
        Self {
            admin: admin.clone(),
            endpoints: admin.endpoints(crate::KIND),
        }
    }

    /// Stores endpoint `name` at `url` with a new HMAC-SHA256 secret (a known endpoint
    /// keeps its secrets and takes the URL); the secret to hand to the receiver.
    pub async fn create(&self, name: &str, url: &str) -> Result<NewSecret, Error> {
        self.create_with(name, url, SigningKey::generate_hmac())
            .await
    }

    /// Stores endpoint `name` at `url` signing with `key` (e.g.
    /// [`SigningKey::generate_ed25519`]); a known endpoint takes the URL and the key
    /// as its newest. What the receiver verifies with.
    pub async fn create_with(
        &self,
        name: &str,
        url: &str,
        key: SigningKey,
    ) -> Result<NewSecret, Error> {
        check_name(name).map_err(Error::Config)?;
        check_url(url).map_err(Error::Config)?;
        let mut settings = match self.settings(name).await? {
            Some(s) => s,
            None => EndpointSettings {
                url: url.to_owned(),
                secrets: Vec::new(),
                ordered: false,
            },
        };
        settings.url = url.to_owned();
        let answer = add_key(&mut settings, &key);
        self.store(name, &settings).await?;
        Ok(answer)
    }

    /// Endpoint `name`, if stored.
    pub async fn get(&self, name: &str) -> Result<Option<WebhookEndpoint>, Error> {
        match self.endpoints.get(name).await? {
            Some(e) => WebhookEndpoint::from_stored(&e)
                .map(Some)
                .map_err(Error::Config),
            None => Ok(None),
        }
    }

    /// Every webhook endpoint, by name (one whose settings do not read is an error naming
    /// it).
    pub async fn list(&self) -> Result<Vec<WebhookEndpoint>, Error> {
        let stored = self.endpoints.list().await?;
        stored
            .iter()
            .map(|e| WebhookEndpoint::from_stored(e).map_err(Error::Config))
            .collect()
    }

    /// Points endpoint `name` at `url`; queued messages go there too.
    pub async fn set_url(&self, name: &str, url: &str) -> Result<(), Error> {
        check_url(url).map_err(Error::Config)?;
        let mut settings = self.existing(name).await?;
        settings.url = url.to_owned();
        self.store(name, &settings).await
    }

    /// Delivers the events enqueued for endpoint `name` from now on one at a time, in
    /// enqueue order, in every process (`ordered`), or as fast as its limits allow. A
    /// failing event of an ordered endpoint holds the later ones until it is delivered, or
    /// — given up — until its dead letter is requeued or purged.
    pub async fn set_ordered(&self, name: &str, ordered: bool) -> Result<(), Error> {
        let mut settings = self.existing(name).await?;
        settings.ordered = ordered;
        self.store(name, &settings).await
    }

    /// Adds a new secret of the same scheme as the newest to endpoint `name`: from now on
    /// every delivery carries a signature by each key, so the receiver may switch at its
    /// own pace. What it verifies with.
    pub async fn rotate(&self, name: &str) -> Result<NewSecret, Error> {
        let mut settings = self.existing(name).await?;
        let algorithm = settings
            .secrets
            .first()
            .and_then(|s| SigningKey::parse(&s.key).ok())
            .map(|k| k.algorithm());
        let key = match algorithm {
            Some(Algorithm::Ed25519) => SigningKey::generate_ed25519(),
            _ => SigningKey::generate_hmac(),
        };
        let answer = add_key(&mut settings, &key);
        self.store(name, &settings).await?;
        Ok(answer)
    }

    /// Removes every secret of endpoint `name` but the newest: deliveries are signed by it
    /// alone. How many were removed.
    pub async fn retire_old_secrets(&self, name: &str) -> Result<usize, Error> {
        let mut settings = self.existing(name).await?;
        let removed = settings.secrets.len().saturating_sub(1);
        settings.secrets.truncate(1);
        self.store(name, &settings).await?;
        Ok(removed)
    }

    /// Disables endpoint `name` for `reason`: its messages, queued and new, wait (parked,
    /// not dead letters) until it is enabled. False if it is not stored.
    pub async fn disable(&self, name: &str, reason: &str) -> Result<bool, Error> {
        let done = self.endpoints.disable(name, reason).await?.is_some();
        if done {
            self.park(name).await?;
        }
        Ok(done)
    }

    /// Enables endpoint `name`: its parked messages go out, and its failure clock starts
    /// over. False if it is not stored.
    pub async fn enable(&self, name: &str) -> Result<bool, Error> {
        let done = self.endpoints.enable(name).await?.is_some();
        if done {
            self.park(name).await?;
        }
        Ok(done)
    }

    /// Makes endpoint `name`'s group follow its state as stored now: paused while it is
    /// disabled, resumed while it is enabled. Called after every change, so a disable and
    /// an enable racing in two processes end with the group as the endpoint says; the
    /// sender calls it too when it meets a disabled endpoint. Whether it is disabled.
    pub async fn park(&self, name: &str) -> Result<bool, Error> {
        let group = group_of(name);
        let Some(e) = self.endpoints.get(name).await? else {
            return Ok(false);
        };
        match e.disabled_reason.filter(|_| e.disabled_at.is_some()) {
            Some(reason) => {
                let why = format!("webhook endpoint `{name}` disabled: {reason}");
                self.admin.groups().pause(&group, &why).await?;
                // Enabled meanwhile (another process): the group follows the enable.
                if self
                    .endpoints
                    .get(name)
                    .await?
                    .is_some_and(|e| e.is_enabled())
                {
                    self.admin.groups().resume(&group).await?;
                    return Ok(false);
                }
                Ok(true)
            }
            None if e.disabled_at.is_some() => {
                self.admin
                    .groups()
                    .pause(&group, "webhook endpoint disabled")
                    .await?;
                Ok(true)
            }
            None => {
                self.admin.groups().resume(&group).await?;
                // Disabled meanwhile: the group follows the disable.
                if self
                    .endpoints
                    .get(name)
                    .await?
                    .is_some_and(|e| !e.is_enabled())
                {
                    self.admin
                        .groups()
                        .pause(&group, "webhook endpoint disabled")
                        .await?;
                    return Ok(true);
                }
                Ok(false)
            }
        }
    }

    /// Records whether deliveries to `name` fail (its failure clock starts unless it runs)
    /// or go through again (the clock stops). The sender calls it when health changes.
    pub async fn health(&self, name: &str, failing: bool) -> Result<(), Error> {
        self.endpoints.health(name, failing).await
    }

    /// Sends again the events to endpoint `name` delivered in `[after, before)` (either
    /// bound optional): those kept for the outbox's retention window
    /// ([`Retention::keep_for`](outbox_core::Retention::keep_for)), in place, with their
    /// `webhook-id`s (receivers that deduplicate on it skip them). How many.
    pub async fn replay(
        &self,
        name: &str,
        after: Option<SystemTime>,
        before: Option<SystemTime>,
    ) -> Result<u64, Error> {
        let filter = ReplayFilter {
            type_tag: Some(crate::WEBHOOK_TYPE.to_owned()),
            group: Some(group_of(name)),
            done_after: after,
            done_before: before,
            ..ReplayFilter::default()
        };
        self.admin.messages().replay(&filter).await
    }

    /// Sends webhook message `id` again: a delivered one kept for the retention window is
    /// queued again in place, a dead letter is requeued. False when it is neither (still
    /// queued, or gone).
    pub async fn replay_message(&self, id: &MessageId) -> Result<bool, Error> {
        let filter = ReplayFilter {
            id: Some(id.to_string()),
            type_tag: Some(crate::WEBHOOK_TYPE.to_owned()),
            ..ReplayFilter::default()
        };
        if self.admin.messages().replay(&filter).await? > 0 {
            return Ok(true);
        }
        self.admin.dead_letters().requeue(id).await
    }

    /// Forgets endpoint `name` (its queued messages then fail: their endpoint is gone).
    pub async fn remove(&self, name: &str) -> Result<bool, Error> {
        self.endpoints.remove(name).await
    }

    async fn settings(&self, name: &str) -> Result<Option<EndpointSettings>, Error> {
        let Some(e) = self.endpoints.get(name).await? else {
            return Ok(None);
        };
        serde_json::from_str(&e.settings).map(Some).map_err(|err| {
            Error::Config(format!(
                "webhook endpoint `{name}`: its settings do not read: {err}"
            ))
        })
    }

    async fn existing(&self, name: &str) -> Result<EndpointSettings, Error> {
        self.settings(name).await?.ok_or_else(|| {
            Error::Config(format!(
                "no webhook endpoint `{name}`: create it first (WebhookEndpoints::create)"
            ))
        })
    }

    async fn store(&self, name: &str, settings: &EndpointSettings) -> Result<(), Error> {
        let json = serde_json::to_string(settings)
            .map_err(|e| Error::Config(format!("webhook endpoint `{name}`: {e}")))?;
        self.endpoints.put(name, &json).await
    }
}

/// Adds `key` as the newest secret of `settings`; what the receiver verifies with.
fn add_key(settings: &mut EndpointSettings, key: &SigningKey) -> NewSecret {
    let added_at = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    settings.secrets.insert(
        0,
        StoredSecret {
            key: key.to_secret_string(),
            added_at,
        },
    );
    NewSecret {
        verify_with: key.verifying_key().to_key_string(),
        algorithm: key.algorithm(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked() {
        assert!(check_url("https://hooks.example.com/in").is_ok());
        assert!(check_url("http://127.0.0.1:8080/in").is_ok());
        assert!(check_url("ftp://x.example/").unwrap_err().contains("https"));
        assert!(check_url("https://user:pw@x.example/")
            .unwrap_err()
            .contains("password"));
        assert!(check_url("https://x.example/#a")
            .unwrap_err()
            .contains("fragment"));
        assert!(check_url("not a url").is_err());
    }

    #[test]
    fn the_host_key_has_the_port_unless_it_is_the_default() {
        let key = |u: &str| host_key(&Url::parse(u).unwrap());
        assert_eq!(key("https://Hooks.Example.com/in"), "hooks.example.com");
        assert_eq!(key("https://hooks.example.com:443/in"), "hooks.example.com");
        assert_eq!(key("http://127.0.0.1:8080/in"), "127.0.0.1:8080");
    }

    #[test]
    fn shown_urls_hide_the_path() {
        let shown = |u: &str| shown_url(&Url::parse(u).unwrap());
        assert_eq!(
            shown("https://hooks.slack.example/services/T0/B0/secret"),
            "https://hooks.slack.example/…"
        );
        assert_eq!(shown("http://127.0.0.1:8080/"), "http://127.0.0.1:8080");
        assert_eq!(shown("https://a.example/?token=x"), "https://a.example/…");
    }

    #[test]
    fn debug_shows_no_secret() {
        let key = SigningKey::generate_hmac();
        let s = StoredSecret {
            key: key.to_secret_string(),
            added_at: 1,
        };
        let shown = format!("{s:?}");
        assert!(!shown.contains(&key.to_secret_string()[6..]), "{shown}");
    }
}
