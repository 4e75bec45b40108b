//! Provider webhooks (feature `webhooks`): delivery events from Amazon SES (through SNS),
//! SendGrid, Mailgun and Postmark, verified, normalised and applied to the suppression list.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, SystemTime},
};

use axum::{
    body::Bytes,
    extract::State,
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    routing::post,
    Router,
};
use futures::future::BoxFuture;
use sha2::{Digest, Sha256};

use crate::{
    backend::Backend,
    message_events::MAX_EVENT_KEY_LEN,
    smtp::events::{
        mailgun, postmark,
        sendgrid::{self, SendGridKey},
        sns::{check_sns_cert_url, check_sns_url, SnsMessage},
        EventPolicy, ProviderEvent, WebhookError,
    },
    Admin, LiveMessages, NewMessageEvent, Suppressions,
};

/// The kind under which applied events are recorded (each suppressing event once).
pub const EVENT_TOKEN_KIND: &str = "event";
/// The kind under which Mailgun's signature tokens are recorded (each accepted once).
pub const MAILGUN_TOKEN_KIND: &str = "mailgun";

/// Fetches what SNS names by URL (its signing certificates, its subscription confirmations),
/// only ever called with an `https://sns.<region>.amazonaws.com/…` URL.
pub trait SnsFetch: Send + Sync + 'static {
    /// The body of a GET of `url`.
    fn get<'a>(&'a self, url: &'a url::Url) -> BoxFuture<'a, Result<Vec<u8>, String>>;
}

/// [`SnsFetch`] over HTTPS (hyper's HTTP/1 client on rustls with ring, trusting the webpki
/// root certificates), 10 s per request, at most 256 KiB, no redirects.
pub struct HttpsFetch {
    tls: tokio_rustls::TlsConnector,
}

/// The most a fetched body may hold (a certificate is about 2 KiB).
const MAX_FETCH: usize = 256 * 1024;

impl HttpsFetch {
    /// A client that trusts the webpki roots.
    pub fn new() -> Result<Self, String> {
        Self::with_roots(rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        })
    }

    /// A client that trusts `roots` only (a proxy's own certificate authority).
    pub fn with_roots(roots: rustls::RootCertStore) -> Result<Self, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Self {
            tls: tokio_rustls::TlsConnector::from(Arc::new(tls)),
        })
    }

    async fn fetch(&self, url: &url::Url) -> Result<Vec<u8>, String> {
        use http_body_util::BodyExt as _;
        let host = url.host_str().ok_or("no host")?.to_owned();
        let port = url.port_or_known_default().unwrap_or(443);
        let tcp = tokio::net::TcpStream::connect((host.as_str(), port))
            .await
            .map_err(|e| format!("connect to {host}:{port}: {e}"))?;
        let name =
            rustls::pki_types::ServerName::try_from(host.clone()).map_err(|e| e.to_string())?;
        let tls = self
            .tls
            .connect(name, tcp)
            .await
            .map_err(|e| format!("TLS with {host}: {e}"))?;
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls))
                .await
                .map_err(|e| e.to_string())?;
        tokio::spawn(connection);
        let target = match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_owned(),
        };
        let request = hyper::Request::get(target)
            .header(hyper::header::HOST, host)
            .header(hyper::header::CONNECTION, "close")
            .body(http_body_util::Empty::<Bytes>::new())
            .map_err(|e| e.to_string())?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| e.to_string())?;
        if !response.status().is_success() {
            return Err(format!("GET {url} answered {}", response.status()));
        }
        let body = http_body_util::Limited::new(response.into_body(), MAX_FETCH)
            .collect()
            .await
            .map_err(|e| format!("reading {url}: {e}"))?;
        Ok(body.to_bytes().to_vec())
    }
}

impl SnsFetch for HttpsFetch {
    fn get<'a>(&'a self, url: &'a url::Url) -> BoxFuture<'a, Result<Vec<u8>, String>> {
        Box::pin(async move {
            tokio::time::timeout(Duration::from_secs(10), self.fetch(url))
                .await
                .unwrap_or_else(|_| Err(format!("GET {url} took longer than 10 s")))
        })
    }
}

/// What the endpoint does with each event, besides the suppressions its policy calls for.
pub type EventHook = Arc<dyn Fn(&ProviderEvent) + Send + Sync>;

/// The provider webhooks over one database: an axum router with one POST route per
/// configured provider (`/sns`, `/sendgrid`, `/mailgun`, `/postmark`).
///
/// Each request is verified first — SNS's RSA signature with the certificate fetched from
/// an SNS host (once per URL, kept; at most 10 fetches a minute) and the topic checked, a
/// signed `Timestamp` more than 2 hours old refused; SendGrid's ECDSA P-256 signature, a
/// timestamp more than 25 hours old refused; Mailgun's HMAC-SHA256 (a timestamp more than 9
/// hours off, or a token seen before, is refused); Postmark's basic authentication — and
/// refused with 400 (not the provider's body), 401 or 403 (not
/// verified) or 406 (a replayed Mailgun token: Mailgun does not retry it) before anything
/// is written. Its events are
/// then read into [`ProviderEvent`]s: hard bounces, complaints and unsubscribes suppress
/// the recipient as the [`EventPolicy`] says, once per event (a provider's retry of the
/// same event changes nothing), and every event goes to the [`on_event`](Self::on_event)
/// hook. A database that cannot be written gets 503, so the provider sends it again.
/// SNS subscription confirmations are confirmed (a GET of their `SubscribeURL`, on an SNS
/// host only).
///
/// ```no_run
/// # async fn serve(admin: outbox::Admin<outbox::SqliteBackend>) -> Result<(), Box<dyn std::error::Error>> {
/// use outbox::smtp::events::sendgrid::SendGridKey;
/// use outbox::web::Webhooks;
///
/// let hooks = Webhooks::new(admin)
///     .sns(["arn:aws:sns:eu-west-1:123456789012:ses-events"])?
///     .sendgrid(SendGridKey::from_base64(&std::env::var("SENDGRID_KEY")?)?)
///     .mailgun(std::env::var("MAILGUN_SIGNING_KEY")?)
///     .postmark("postmark", std::env::var("POSTMARK_HOOK_PASSWORD")?);
/// let app = axum::Router::new().nest("/hooks", hooks.into_router());
/// let listener = tokio::net::TcpListener::bind("0.0.0.0:8080").await?;
/// axum::serve(listener, app).await?;
/// # Ok(()) }
/// ```
pub struct Webhooks<B> {
    suppressions: Suppressions<B>,
    messages: LiveMessages<B>,
    policy: EventPolicy,
    sns: Option<Sns>,
    sendgrid: Option<SendGridKey>,
    mailgun: Option<Vec<u8>>,
    postmark: Option<(String, String)>,
    on_event: Option<EventHook>,
    /// When old Mailgun tokens were last forgotten.
    tokens_forgotten: Mutex<Option<std::time::Instant>>,
}

impl<B: Backend> Webhooks<B> {
    /// Forgets Mailgun tokens older than their timestamps are accepted, at most once a
    /// minute, in the background (the table would otherwise grow by a row per webhook).
    fn forget_old_mailgun_tokens(&self) {
        let now = std::time::Instant::now();
        let mut last = self
            .tokens_forgotten
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if last.is_some_and(|at| now.duration_since(at) < Duration::from_secs(60)) {
            return;
        }
        *last = Some(now);
        let suppressions = self.suppressions.clone();
        tokio::spawn(async move {
            if let Err(e) = suppressions
                .forget_tokens(MAILGUN_TOKEN_KIND, mailgun::TOKENS_KEPT)
                .await
            {
                tracing::warn!(error = %e, "cannot forget old Mailgun tokens; trying again later");
            }
        });
    }
}

struct Sns {
    topics: Vec<String>,
    fetch: Arc<dyn SnsFetch>,
    /// Certificates fetched from SNS hosts, by URL.
    certificates: Mutex<CertificateCache>,
    /// Held while a certificate is fetched: concurrent requests naming the same new URL
    /// wait for the one fetch instead of each fetching.
    fetching: tokio::sync::Mutex<()>,
}

/// Signing certificates kept in memory (SNS uses one or two at a time).
const MAX_CERTIFICATES: usize = 16;

/// How long a kept certificate is trusted before a message it does not verify may fetch
/// its URL again (SNS names a new certificate by a new URL, so this only matters when the
/// file behind a URL is replaced, as when it expires).
const REFETCH_AFTER: Duration = Duration::from_secs(3600);

/// How long a URL whose fetch failed is not fetched again.
const FAILED_FETCH_KEPT: Duration = Duration::from_secs(60);

/// At most this many certificate fetches per [`FETCH_WINDOW`], whatever the URLs.
const MAX_FETCHES: u32 = 10;
/// The window [`MAX_FETCHES`] counts in.
const FETCH_WINDOW: Duration = Duration::from_secs(60);

/// The certificates fetched, the URLs whose fetch failed lately, and the fetch budget.
#[derive(Default)]
struct CertificateCache {
    /// By URL: the body fetched and when.
    kept: HashMap<String, (Arc<Vec<u8>>, std::time::Instant)>,
    /// By URL: when its fetch failed.
    failed: HashMap<String, std::time::Instant>,
    /// When the current fetch window started, and the fetches in it.
    window: Option<(std::time::Instant, u32)>,
}

impl CertificateCache {
    /// Whether `url` may be fetched now (counting the fetch), or why not.
    fn may_fetch(&mut self, url: &str, now: std::time::Instant) -> Result<(), &'static str> {
        self.failed
            .retain(|_, at| now.duration_since(*at) < FAILED_FETCH_KEPT);
        if self.failed.contains_key(url) {
            return Err("fetching the signing certificate failed a moment ago; try again later");
        }
        let (start, used) = match self.window {
            Some((start, used)) if now.duration_since(start) < FETCH_WINDOW => (start, used),
            _ => (now, 0),
        };
        if used >= MAX_FETCHES {
            return Err(
                "too many signing certificates fetched in the last minute; try again later",
            );
        }
        self.window = Some((start, used + 1));
        Ok(())
    }

    /// Keeps what `url` returned.
    fn keep(&mut self, url: &str, certificate: Arc<Vec<u8>>, now: std::time::Instant) {
        if self.kept.len() >= MAX_CERTIFICATES && !self.kept.contains_key(url) {
            let oldest = self
                .kept
                .iter()
                .min_by_key(|(_, (_, at))| *at)
                .map(|(u, _)| u.clone());
            if let Some(oldest) = oldest {
                self.kept.remove(&oldest);
            }
        }
        self.failed.remove(url);
        self.kept.insert(url.to_owned(), (certificate, now));
    }
}

impl Sns {
    /// Verifies `message` with the certificate at `url`. A certificate is fetched once per
    /// URL and kept: a message it does not verify is refused without fetching it again
    /// (forged messages cannot make the endpoint fetch), unless the kept one is older than
    /// [`REFETCH_AFTER`] (the file was replaced when it expired). Fetches are limited to
    /// [`MAX_FETCHES`] a minute, and a URL whose fetch failed is not tried again for a
    /// minute: beyond that the request gets 503, which SNS retries.
    async fn verify(&self, message: &SnsMessage, url: &url::Url) -> Result<(), Response> {
        let now = SystemTime::now();
        let cache = || self.certificates.lock().unwrap_or_else(|e| e.into_inner());
        let kept = cache().kept.get(url.as_str()).cloned();
        let stale = match &kept {
            Some((certificate, fetched)) => match message.verify(certificate, now) {
                Ok(()) => return Ok(()),
                Err(e) if fetched.elapsed() < REFETCH_AFTER => return Err(refused(&e, "sns")),
                Err(_) => fetched.elapsed() >= REFETCH_AFTER,
            },
            None => false,
        };
        let _one_fetch = self.fetching.lock().await;
        // Another request may have fetched it while this one waited.
        if let Some((certificate, fetched)) = cache().kept.get(url.as_str()).cloned() {
            if !stale || fetched.elapsed() < REFETCH_AFTER {
                return message
                    .verify(&certificate, now)
                    .map_err(|e| refused(&e, "sns"));
            }
        }
        if let Err(why) = cache().may_fetch(url.as_str(), std::time::Instant::now()) {
            tracing::warn!(url = %url, "not fetching the SNS signing certificate: {why}");
            return Err((StatusCode::SERVICE_UNAVAILABLE, why).into_response());
        }
        let certificate = match self.fetch.get(url).await {
            Ok(c) => Arc::new(c),
            Err(e) => {
                tracing::warn!(url = %url, error = %e, "cannot fetch the SNS signing certificate");
                cache()
                    .failed
                    .insert(url.to_string(), std::time::Instant::now());
                let why = "cannot fetch the signing certificate";
                return Err((StatusCode::SERVICE_UNAVAILABLE, why).into_response());
            }
        };
        // What an SNS host sent over TLS is its certificate, whether or not this message
        // verifies with it.
        cache().keep(url.as_str(), certificate.clone(), std::time::Instant::now());
        message
            .verify(&certificate, now)
            .map_err(|e| refused(&e, "sns"))
    }
}

struct Shared<B> {
    hooks: Webhooks<B>,
}

impl<B: Backend> Webhooks<B> {
    /// Webhooks that write suppressions through `admin`, under the default policy (hard
    /// bounces, complaints and unsubscribes suppress all mail to the address), with no
    /// provider configured yet.
    pub fn new(admin: Admin<B>) -> Self {
        Self {
            suppressions: admin.suppressions(),
            messages: admin.messages(),
            policy: EventPolicy::default(),
            sns: None,
            sendgrid: None,
            mailgun: None,
            postmark: None,
            on_event: None,
            tokens_forgotten: Mutex::default(),
        }
    }

    /// Which events suppress their recipient, and in which scope.
    pub fn policy(mut self, policy: EventPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Accepts SES events from SNS `topics` (their ARNs) at `/sns`, fetching certificates
    /// and confirming subscriptions over HTTPS.
    pub fn sns<T: Into<String>>(self, topics: impl IntoIterator<Item = T>) -> Result<Self, String> {
        let fetch = HttpsFetch::new()?;
        Ok(self.sns_with_fetcher(topics, Arc::new(fetch)))
    }

    /// As [`sns`](Self::sns), fetching through `fetch` (a proxy, or a test's certificate).
    pub fn sns_with_fetcher<T: Into<String>>(
        mut self,
        topics: impl IntoIterator<Item = T>,
        fetch: Arc<dyn SnsFetch>,
    ) -> Self {
        self.sns = Some(Sns {
            topics: topics.into_iter().map(Into::into).collect(),
            fetch,
            certificates: Mutex::default(),
            fetching: tokio::sync::Mutex::new(()),
        });
        self
    }

    /// Accepts SendGrid's signed event webhook at `/sendgrid`.
    pub fn sendgrid(mut self, key: SendGridKey) -> Self {
        self.sendgrid = Some(key);
        self
    }

    /// Accepts Mailgun's webhooks at `/mailgun`, signed with `signing_key`.
    pub fn mailgun(mut self, signing_key: impl Into<Vec<u8>>) -> Self {
        self.mailgun = Some(signing_key.into());
        self
    }

    /// Accepts Postmark's webhooks at `/postmark` with these basic-authentication
    /// credentials (put them in the webhook's URL at Postmark).
    pub fn postmark(mut self, user: impl Into<String>, password: impl Into<String>) -> Self {
        self.postmark = Some((user.into(), password.into()));
        self
    }

    /// Calls `hook` with every event received (after its suppression, if any, is written).
    /// A provider may send an event more than once; [`ProviderEvent::id`] tells repeats.
    pub fn on_event(mut self, hook: impl Fn(&ProviderEvent) + Send + Sync + 'static) -> Self {
        self.on_event = Some(Arc::new(hook));
        self
    }

    /// The router; nest it where the providers post.
    pub fn into_router(self) -> Router {
        let mut router = Router::new();
        if self.sns.is_some() {
            router = router.route("/sns", post(sns_post::<B>));
        }
        if self.sendgrid.is_some() {
            router = router.route("/sendgrid", post(sendgrid_post::<B>));
        }
        if self.mailgun.is_some() {
            router = router.route("/mailgun", post(mailgun_post::<B>));
        }
        if self.postmark.is_some() {
            router = router.route("/postmark", post(postmark_post::<B>));
        }
        router.with_state(Arc::new(Shared { hooks: self }))
    }
}

/// Applies `events` to the suppression list under `policy`: each event that calls for a
/// suppression writes it once (recorded by the event's id, in the same transaction), so a
/// repeated event changes nothing. Returns how many suppressions were written. Events are
/// written in transactions of up to [`MAX_TOKEN_BATCH`](crate::MAX_TOKEN_BATCH) (a bounce
/// naming 100,000 recipients is 100 transactions). For events read outside the web
/// endpoint, such as bounce reports fed in as mail
/// ([`dsn::events`](crate::smtp::events::dsn::events)).
pub async fn apply_events<B: Backend>(
    suppressions: &Suppressions<B>,
    policy: &EventPolicy,
    events: &[ProviderEvent],
) -> Result<u64, crate::Error> {
    let (applied, uses): (Vec<&ProviderEvent>, Vec<crate::TokenUse>) = events
        .iter()
        .filter_map(|event| {
            let entry = policy.suppression(event)?;
            let token = digest(&format!("{}:{}", event.provider, event.id));
            let entries = vec![entry];
            Some((event, crate::TokenUse { token, entries }))
        })
        .unzip();
    let new = suppressions.redeem_all(EVENT_TOKEN_KIND, &uses).await?;
    let mut written = 0;
    for ((event, used), new) in applied.iter().zip(&uses).zip(new) {
        if !new {
            continue;
        }
        let entry = &used.entries[0];
        tracing::info!(
            provider = event.provider, kind = %event.kind, message.id = event.outbox_id.as_deref(),
            "suppressed {} ({}) after a provider event", entry.address, entry.scope
        );
        written += 1;
    }
    Ok(written)
}

/// Records `events` with the outbox messages they are about, shown on each message's
/// page: the message named by the event's `Message-ID` (ours), else the one whose receipt
/// holds the provider's id of the email. An event that finds no message (mail the outbox
/// did not send, or a receipt pruned) is not recorded; a repeated event is recorded once.
/// Returns how many were new.
pub async fn record_events<B: Backend>(
    messages: &LiveMessages<B>,
    events: &[ProviderEvent],
) -> Result<u64, crate::Error> {
    let mut found = Vec::new();
    for event in events {
        let message = match (&event.outbox_id, &event.provider_message_id) {
            (Some(id), _) => Some(id.clone()),
            (None, Some(theirs)) => messages
                .by_receipt(event.provider, theirs)
                .await?
                .map(|id| id.as_str().to_owned()),
            (None, None) => None,
        };
        let Some(message_id) = message else { continue };
        // Keys longer than a column holds are kept as their digest (the same every time).
        let fit = |key: &str| match key.trim() {
            "" => "unknown".to_owned(),
            k if k.len() <= MAX_EVENT_KEY_LEN => k.to_owned(),
            k => digest(k),
        };
        let external = event
            .provider_message_id
            .as_deref()
            .or(event.message_id.as_deref())
            .unwrap_or_default();
        found.push(NewMessageEvent {
            message_id,
            provider: event.provider.to_owned(),
            event_id: fit(&event.id),
            external_id: fit(external),
            kind: event.kind.as_str().to_owned(),
            recipient: Some(event.recipient.clone()),
            detail: event.detail.clone(),
            at: event.at.unwrap_or_else(std::time::SystemTime::now),
        });
    }
    messages.record_events(&found).await
}

fn digest(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The answer to a refused request.
fn refused(e: &WebhookError, provider: &str) -> Response {
    tracing::info!(provider, error = %e, "refused a webhook request");
    let status = match e {
        WebhookError::Body(_) => StatusCode::BAD_REQUEST,
        WebhookError::Signature(_) => StatusCode::UNAUTHORIZED,
        WebhookError::Refused(_) => StatusCode::FORBIDDEN,
    };
    (status, e.to_string()).into_response()
}

/// Applies verified events and answers.
async fn accept<B: Backend>(
    hooks: &Webhooks<B>,
    provider: &str,
    events: &[ProviderEvent],
) -> Response {
    let applied = match apply_events(&hooks.suppressions, &hooks.policy, events).await {
        Ok(_) => record_events(&hooks.messages, events).await,
        Err(e) => Err(e),
    };
    match applied {
        Ok(_) => {
            if let Some(hook) = &hooks.on_event {
                for e in events {
                    hook(e);
                }
            }
            (StatusCode::OK, format!("{} event(s)", events.len())).into_response()
        }
        Err(e) => {
            tracing::warn!(provider, error = %e, "cannot apply provider events; the provider will send them again");
            (StatusCode::SERVICE_UNAVAILABLE, "try again later").into_response()
        }
    }
}

async fn sns_post<B: Backend>(State(shared): State<Arc<Shared<B>>>, body: Bytes) -> Response {
    let hooks = &shared.hooks;
    let Some(sns) = &hooks.sns else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let message = match SnsMessage::parse(&body) {
        Ok(m) => m,
        Err(e) => return refused(&e, "sns"),
    };
    if let Err(e) = message.check_topic(&sns.topics) {
        return refused(&e, "sns");
    }
    let cert_url = match check_sns_cert_url(&message.signing_cert_url) {
        Ok(url) => url,
        Err(e) => return refused(&e, "sns"),
    };
    if let Err(response) = sns.verify(&message, &cert_url).await {
        return response;
    }
    match message.kind.as_str() {
        "SubscriptionConfirmation" => {
            let url = match message.subscribe_url.as_deref().map(check_sns_url) {
                Some(Ok(url)) => url,
                Some(Err(e)) => return refused(&e, "sns"),
                None => return refused(&WebhookError::Body("no SubscribeURL".into()), "sns"),
            };
            match sns.fetch.get(&url).await {
                Ok(_) => {
                    tracing::info!(topic = %message.topic_arn, "confirmed the SNS subscription");
                    (StatusCode::OK, "subscription confirmed").into_response()
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot confirm the SNS subscription");
                    (
                        StatusCode::SERVICE_UNAVAILABLE,
                        "cannot confirm the subscription",
                    )
                        .into_response()
                }
            }
        }
        "Notification" => match message.ses_events() {
            Ok(events) => accept(hooks, "sns", &events).await,
            Err(e) => refused(&e, "sns"),
        },
        _ => (StatusCode::OK, "noted").into_response(),
    }
}

async fn sendgrid_post<B: Backend>(
    State(shared): State<Arc<Shared<B>>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let hooks = &shared.hooks;
    let Some(key) = &hooks.sendgrid else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    };
    let verified = key.verify(
        header(sendgrid::TIMESTAMP_HEADER),
        &body,
        header(sendgrid::SIGNATURE_HEADER),
        SystemTime::now(),
    );
    if let Err(e) = verified {
        return refused(&e, "sendgrid");
    }
    match sendgrid::events(&body) {
        Ok(events) => accept(hooks, "sendgrid", &events).await,
        Err(e) => refused(&e, "sendgrid"),
    }
}

async fn mailgun_post<B: Backend>(State(shared): State<Arc<Shared<B>>>, body: Bytes) -> Response {
    let hooks = &shared.hooks;
    let Some(key) = &hooks.mailgun else {
        return StatusCode::NOT_FOUND.into_response();
    };
    hooks.forget_old_mailgun_tokens();
    let post = match mailgun::verify(key, &body, SystemTime::now()) {
        Ok(post) => post,
        Err(e) => return refused(&e, "mailgun"),
    };
    // The token and the suppression its event calls for are written in one transaction: a
    // request that fails here can be sent again, one that succeeded cannot.
    let events: Vec<ProviderEvent> = post.event.into_iter().collect();
    let entries: Vec<_> = events
        .iter()
        .filter_map(|e| hooks.policy.suppression(e))
        .collect();
    match hooks
        .suppressions
        .redeem(MAILGUN_TOKEN_KIND, &digest(&post.token), &entries)
        .await
    {
        Ok(true) => {
            if let Some(hook) = &hooks.on_event {
                events.iter().for_each(|e| hook(e));
            }
            (StatusCode::OK, format!("{} event(s)", events.len())).into_response()
        }
        // 406: Mailgun does not send it again.
        Ok(false) => {
            tracing::info!("refused a replayed Mailgun token");
            (
                StatusCode::NOT_ACCEPTABLE,
                "this signature token was used before",
            )
                .into_response()
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot record a Mailgun event; Mailgun will send it again");
            (StatusCode::SERVICE_UNAVAILABLE, "try again later").into_response()
        }
    }
}

async fn postmark_post<B: Backend>(
    State(shared): State<Arc<Shared<B>>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let hooks = &shared.hooks;
    let Some((user, password)) = &hooks.postmark else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let auth = headers.get("authorization").and_then(|v| v.to_str().ok());
    if let Err(e) = postmark::check_basic_auth(auth, user, password) {
        return refused(&e, "postmark");
    }
    match postmark::event(&body) {
        Ok(event) => accept(hooks, "postmark", &event.into_iter().collect::<Vec<_>>()).await,
        Err(e) => refused(&e, "postmark"),
    }
}
