//! Delivering a webhook: one HTTP/1.1 `POST` to an address the [`AddressPolicy`] allows.
//!
//! [`WebhookClient::post`] checks the URL, resolves its host **once**, checks every
//! address it resolved to, and connects to a checked address (the next one when a
//! connection cannot be made), never resolving again for that request: an answer that
//! changes in between (DNS rebinding) cannot send it elsewhere. TLS (hyper's HTTP/1 client
//! over tokio-rustls on ring, trusting the webpki roots and any added ones) verifies the
//! certificate for the URL's host, which is also the SNI and the `Host` header.
//!
//! Redirects are never followed (a `3xx` is an answer like any other), at most
//! [`MAX_BODY`] bytes of an answer are read, and the whole request — lookup, connection,
//! request, answer — has a time limit. Connections are kept alive and reused per scheme,
//! host, port and address; a request that a kept connection could not take (it closed
//! before the request was written) goes over a fresh one at once, and nothing else is sent
//! twice by this layer.

use std::{
    collections::HashMap,
    fmt,
    net::{IpAddr, SocketAddr},
    sync::{Arc, Mutex},
    time::{Duration, SystemTime},
};

use http_body_util::{BodyExt as _, Full};
/// The bytes of a request body.
pub use hyper::body::Bytes;
use hyper::{
    body::{Body as _, Incoming},
    client::conn::http1::SendRequest,
    header::{self, HeaderName, HeaderValue},
};
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::{task::AbortHandle, time::Instant};
use url::Url;

use crate::{
    resolve::{Resolve, SystemResolver},
    ssrf::{write_refusal, AddressPolicy, Refusal, Target, TargetHost},
};

/// The most of an answer's body that is read (and kept in [`Response::body`]); the rest is
/// not read, and that connection is closed rather than reused.
pub const MAX_BODY: usize = 4096;

/// The answer headers kept in [`Response::headers`], by their lowercase names.
pub const KEPT_HEADERS: [&str; 5] = [
    "retry-after",
    "content-type",
    "content-length",
    "location",
    "server",
];

/// The headers the client writes itself, refused in a request's headers.
const OWN_HEADERS: [HeaderName; 9] = [
    header::HOST,
    header::CONTENT_LENGTH,
    header::TRANSFER_ENCODING,
    header::CONNECTION,
    header::UPGRADE,
    header::TE,
    header::TRAILER,
    header::EXPECT,
    HeaderName::from_static("keep-alive"),
];

/// Delivers webhooks: cheap to clone (clones share the settings and the kept
/// connections). Made by [`WebhookClient::builder`].
///
/// ```no_run
/// use outbox_webhook::{client::{Bytes, WebhookClient}, ssrf::AddressPolicy};
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let client = WebhookClient::builder().policy(AddressPolicy::default()).build()?;
/// let url = url::Url::parse("https://hooks.example.com/in")?;
/// let answer = client
///     .post(&url, &[("webhook-id", "msg_1".to_owned())], Bytes::from_static(b"{}"))
///     .await?;
/// println!("{} ({} bytes)", answer.status, answer.body.len());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct WebhookClient {
    inner: Arc<Inner>,
}

struct Inner {
    policy: AddressPolicy,
    resolver: Arc<dyn Resolve>,
    connect_timeout: Duration,
    lookup_timeout: Duration,
    request_timeout: Duration,
    idle_timeout: Duration,
    max_idle_per_host: usize,
    tls: tokio_rustls::TlsConnector,
    user_agent: HeaderValue,
    pool: Mutex<Pool>,
}

/// Idle connections by where they go.
struct Pool {
    idle: HashMap<Key, Vec<(Conn, Instant)>>,
    swept: Instant,
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct Key {
    https: bool,
    host: TargetHost,
    address: SocketAddr,
}

/// A connection: the request side, and its task, ended when the connection is dropped.
struct Conn {
    sender: SendRequest<Full<Bytes>>,
    task: AbortHandle,
    address: SocketAddr,
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl fmt::Debug for WebhookClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = &self.inner;
        f.debug_struct("WebhookClient")
            .field("policy", &inner.policy)
            .field("connect_timeout", &inner.connect_timeout)
            .field("lookup_timeout", &inner.lookup_timeout)
            .field("request_timeout", &inner.request_timeout)
            .field("idle_timeout", &inner.idle_timeout)
            .field("max_idle_per_host", &inner.max_idle_per_host)
            .finish_non_exhaustive()
    }
}

/// The settings of a [`WebhookClient`]; every one has a default.
pub struct WebhookClientBuilder {
    policy: AddressPolicy,
    resolver: Arc<dyn Resolve>,
    connect_timeout: Duration,
    lookup_timeout: Duration,
    request_timeout: Duration,
    idle_timeout: Duration,
    max_idle_per_host: usize,
    roots: Vec<CertificateDer<'static>>,
    user_agent: String,
}

impl fmt::Debug for WebhookClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebhookClientBuilder")
            .field("policy", &self.policy)
            .field("connect_timeout", &self.connect_timeout)
            .field("lookup_timeout", &self.lookup_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("max_idle_per_host", &self.max_idle_per_host)
            .field("extra_roots", &self.roots.len())
            .field("user_agent", &self.user_agent)
            .finish_non_exhaustive()
    }
}

impl Default for WebhookClientBuilder {
    fn default() -> Self {
        Self {
            policy: AddressPolicy::default(),
            resolver: Arc::new(SystemResolver),
            connect_timeout: Duration::from_secs(5),
            lookup_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(15),
            idle_timeout: Duration::from_secs(20),
            max_idle_per_host: 64,
            roots: Vec::new(),
            user_agent: concat!("outbox-webhook/", env!("CARGO_PKG_VERSION")).to_owned(),
        }
    }
}

impl WebhookClientBuilder {
    /// Which URLs and addresses may be delivered to (default: [`AddressPolicy::default`],
    /// public addresses over `https://`).
    pub fn policy(mut self, policy: AddressPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// How host names are resolved (default: [`SystemResolver`], the operating system's).
    pub fn resolver(mut self, resolver: impl Resolve + 'static) -> Self {
        self.resolver = Arc::new(resolver);
        self
    }

    /// How long one connection attempt (TCP, then the TLS handshake) may take (default 5 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long resolving the host may take (default 5 s).
    pub fn lookup_timeout(mut self, timeout: Duration) -> Self {
        self.lookup_timeout = timeout;
        self
    }

    /// How long a whole request may take, from the lookup to the last byte of the answer
    /// read (default 15 s).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// How long an idle connection is kept for reuse (default 20 s, shorter than the
    /// keep-alive timeouts of common servers, 60 s and more).
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// How many idle connections are kept per scheme, host, port and address (default 64,
    /// above the sender's usual concurrency, so concurrent deliveries to one host reuse their
    /// connections instead of opening new ones; 0 keeps none).
    pub fn max_idle_per_host(mut self, max: usize) -> Self {
        self.max_idle_per_host = max;
        self
    }

    /// Trusts `certificate` (DER) as a root, besides the webpki roots (a private CA, a
    /// test server's self-signed certificate).
    pub fn add_root_certificate(mut self, certificate: CertificateDer<'static>) -> Self {
        self.roots.push(certificate);
        self
    }

    /// The `User-Agent` header, unless a request gives its own (default
    /// `outbox-webhook/VERSION`).
    pub fn user_agent(mut self, user_agent: impl Into<String>) -> Self {
        self.user_agent = user_agent.into();
        self
    }

    /// The client, or the setting that cannot work (a root certificate that does not
    /// parse, a user agent that is not a header value).
    pub fn build(self) -> Result<WebhookClient, BuildError> {
        let mut roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        for certificate in self.roots {
            roots
                .add(certificate)
                .map_err(|e| BuildError(format!("cannot trust a root certificate: {e}")))?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| BuildError(format!("cannot set up TLS: {e}")))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let user_agent = HeaderValue::from_str(&self.user_agent)
            .map_err(|_| BuildError(format!("not a header value: {:?}", self.user_agent)))?;
        Ok(WebhookClient {
            inner: Arc::new(Inner {
                policy: self.policy,
                resolver: self.resolver,
                connect_timeout: self.connect_timeout,
                lookup_timeout: self.lookup_timeout,
                request_timeout: self.request_timeout,
                idle_timeout: self.idle_timeout,
                max_idle_per_host: self.max_idle_per_host,
                tls: tokio_rustls::TlsConnector::from(Arc::new(config)),
                user_agent,
                pool: Mutex::new(Pool {
                    idle: HashMap::new(),
                    swept: Instant::now(),
                }),
            }),
        })
    }
}

/// A setting of [`WebhookClientBuilder`] that cannot work.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildError(String);

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BuildError {}

/// A receiver's answer (any status: a `3xx` is not followed, a `5xx` is not an error
/// here).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The answer's headers named in [`KEPT_HEADERS`] (`retry-after`, `content-type`,
    /// `content-length`, `location`, `server`) with lowercase names, in that order; the
    /// others are dropped. A value that is not UTF-8 is kept lossily.
    pub headers: Vec<(String, String)>,
    /// The `Retry-After` header, when it is a number of seconds or an HTTP-date.
    pub retry_after: Option<RetryAfter>,
    /// The first [`MAX_BODY`] bytes of the body, at most.
    pub body: Vec<u8>,
    /// Whether the body went on past [`MAX_BODY`] bytes (or its end was not there yet when
    /// they were read): the rest was not read.
    pub truncated: bool,
    /// The address the request went to.
    pub address: SocketAddr,
}

impl Response {
    /// The first kept header named `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Whether the status is a success (`2xx`).
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// A `Retry-After` header: a delay in seconds, or an HTTP-date.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryAfter {
    /// `Retry-After: 120`.
    Delay(Duration),
    /// `Retry-After: Wed, 21 Oct 2015 07:28:00 GMT`.
    At(SystemTime),
}

impl RetryAfter {
    /// Reads a `Retry-After` value; `None` when it is neither a number of seconds nor an
    /// HTTP-date.
    pub fn parse(value: &str) -> Option<Self> {
        let value = value.trim();
        if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
            return Some(Self::Delay(Duration::from_secs(
                value.parse().unwrap_or(u64::MAX),
            )));
        }
        httpdate::parse_http_date(value).ok().map(Self::At)
    }

    /// How long to wait from `now`: the delay, or the time until the date (zero when it is
    /// past).
    pub fn delay(&self, now: SystemTime) -> Duration {
        match self {
            Self::Delay(delay) => *delay,
            Self::At(at) => at.duration_since(now).unwrap_or_default(),
        }
    }
}

/// Why a delivery got no answer.
///
/// [`is_down`](Self::is_down) tells the receiving host being unreachable (nothing of the
/// request was sent) from this request failing on the way (it may have been received).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The [`AddressPolicy`] refused the URL, or an address its host resolves to; nothing
    /// was sent.
    Refused {
        /// The URL's host.
        host: String,
        /// The refused address (none when the URL itself was refused: its scheme, a user
        /// name in it).
        address: Option<IpAddr>,
        /// Why, and how to allow it when it can be.
        why: String,
    },
    /// The host name could not be resolved (no such host, no address, a DNS failure or
    /// timeout).
    Resolve(String),
    /// Nothing listens at the address (connection refused); the last address tried.
    ConnectionRefused {
        /// Where the connection was refused.
        address: SocketAddr,
    },
    /// No connection could be made otherwise (unreachable, timed out).
    Connect(String),
    /// The TLS handshake failed (a certificate not trusted or not for the host, no
    /// common protocol, no handshake in time).
    Tls(String),
    /// The request took longer than the request timeout: no answer, or an answer that
    /// stopped short.
    Timeout {
        /// The request timeout.
        after: Duration,
    },
    /// The connection broke mid-way (closed or reset before the answer was whole).
    Broken(String),
    /// The request cannot be sent as given (a header name or value that is not valid,
    /// or a header the client writes itself).
    InvalidRequest(String),
}

impl Failure {
    /// Whether the receiving host is unreachable: its name does not resolve
    /// ([`Resolve`](Self::Resolve)), nothing listens ([`ConnectionRefused`](Self::ConnectionRefused)),
    /// no connection ([`Connect`](Self::Connect)) or no TLS session
    /// ([`Tls`](Self::Tls)) could be made. Nothing of the request was sent. `false` for a
    /// request that failed on its way ([`Timeout`](Self::Timeout),
    /// [`Broken`](Self::Broken)), which the receiver may have received, and for the
    /// refusals of the policy and invalid requests, which no retry changes.
    pub fn is_down(&self) -> bool {
        matches!(
            self,
            Self::Resolve(_) | Self::ConnectionRefused { .. } | Self::Connect(_) | Self::Tls(_)
        )
    }

    /// Whether the [`AddressPolicy`] refused the delivery.
    pub fn is_refused(&self) -> bool {
        matches!(self, Self::Refused { .. })
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Refused { host, address, why } => write_refusal(f, host, *address, why),
            Self::Resolve(why) => f.write_str(why),
            Self::ConnectionRefused { address } => {
                write!(f, "connection refused by {address}: nothing listens there")
            }
            Self::Connect(why) => f.write_str(why),
            Self::Tls(why) => f.write_str(why),
            Self::Timeout { after } => {
                write!(f, "no whole answer within the request timeout ({after:?})")
            }
            Self::Broken(why) => write!(f, "the connection broke: {why}"),
            Self::InvalidRequest(why) => write!(f, "invalid request: {why}"),
        }
    }
}

impl std::error::Error for Failure {}

impl From<Refusal> for Failure {
    fn from(refusal: Refusal) -> Self {
        Self::Refused {
            host: refusal.host,
            address: refusal.address,
            why: refusal.why,
        }
    }
}

/// An error with its sources (hyper's own messages are terse: "error trying to connect").
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

impl WebhookClient {
    /// A builder with the defaults: [`AddressPolicy::default`], the system's resolver,
    /// connect and lookup timeouts of 5 s, 15 s for a whole request.
    pub fn builder() -> WebhookClientBuilder {
        WebhookClientBuilder::default()
    }

    /// The policy deliveries are checked against.
    pub fn policy(&self) -> &AddressPolicy {
        &self.inner.policy
    }

    /// POSTs `body` to `url` with `headers` (name, value), and reads the answer.
    ///
    /// `Host`, `Content-Length` and the connection's own headers are the client's; a
    /// `Content-Type` of `application/json` and the client's `User-Agent` are sent unless
    /// `headers` give theirs. The URL is checked, its host resolved once and every address
    /// checked before any connection; see the [module](self).
    pub async fn post<N, V>(
        &self,
        url: &Url,
        headers: &[(N, V)],
        body: Bytes,
    ) -> Result<Response, Failure>
    where
        N: AsRef<str>,
        V: AsRef<str>,
    {
        let inner = &*self.inner;
        let started = Instant::now();
        let deadline = started + inner.request_timeout;
        let target = inner.policy.check_url(url)?;
        let request = self.request(url, &target, headers, body)?;
        let addresses = match &target.host {
            TargetHost::Ip(ip) => vec![*ip],
            TargetHost::Name(name) => {
                let limit = deadline.min(started + inner.lookup_timeout);
                let found = tokio::time::timeout_at(limit, inner.resolver.resolve(name)).await;
                let addresses = match found {
                    Err(_) if limit == deadline => {
                        return Err(Failure::Timeout {
                            after: inner.request_timeout,
                        })
                    }
                    Err(_) => {
                        return Err(Failure::Resolve(format!(
                            "cannot resolve {name}: no answer within {:?}",
                            inner.lookup_timeout
                        )))
                    }
                    Ok(Err(e)) => return Err(Failure::Resolve(e.to_string())),
                    Ok(Ok(addresses)) if addresses.is_empty() => {
                        return Err(Failure::Resolve(format!(
                            "cannot resolve {name}: no address"
                        )))
                    }
                    Ok(Ok(addresses)) => addresses,
                };
                inner.policy.check_addresses(name, &addresses)?;
                addresses
            }
        };
        self.exchange(&target, &addresses, request, deadline).await
    }

    fn request<N, V>(
        &self,
        url: &Url,
        target: &Target,
        headers: &[(N, V)],
        body: Bytes,
    ) -> Result<hyper::Request<Full<Bytes>>, Failure>
    where
        N: AsRef<str>,
        V: AsRef<str>,
    {
        let invalid = Failure::InvalidRequest;
        let path = &url[url::Position::BeforePath..url::Position::AfterQuery];
        let mut request = hyper::Request::post(path)
            .body(Full::new(body))
            .map_err(|e| invalid(format!("{url}: {e}")))?;
        let map = request.headers_mut();
        map.insert(
            header::HOST,
            HeaderValue::from_str(&target.authority)
                .map_err(|_| invalid(format!("a host of {url}")))?,
        );
        for (name, value) in headers {
            let (name, value) = (name.as_ref(), value.as_ref());
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| invalid(format!("not a header name: {name:?}")))?;
            if OWN_HEADERS.contains(&name) {
                return Err(invalid(format!(
                    "the client writes the {name} header itself"
                )));
            }
            let value = HeaderValue::from_str(value)
                .map_err(|_| invalid(format!("not a value of the {name} header: {value:?}")))?;
            map.append(name, value);
        }
        if !map.contains_key(header::CONTENT_TYPE) {
            map.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
        }
        if !map.contains_key(header::USER_AGENT) {
            map.insert(header::USER_AGENT, self.inner.user_agent.clone());
        }
        Ok(request)
    }

    async fn exchange(
        &self,
        target: &Target,
        addresses: &[IpAddr],
        mut request: hyper::Request<Full<Bytes>>,
        deadline: Instant,
    ) -> Result<Response, Failure> {
        let inner = &*self.inner;
        let timeout = Failure::Timeout {
            after: inner.request_timeout,
        };
        let mut fresh_only = false;
        loop {
            let kept = if fresh_only {
                None
            } else {
                self.take_idle(target, addresses)
            };
            let reused = kept.is_some();
            let mut conn = match kept {
                Some(conn) => conn,
                None => tokio::time::timeout_at(deadline, self.connect(target, addresses))
                    .await
                    .map_err(|_| {
                        Failure::Connect(format!(
                            "no connection to {} within the request timeout ({:?})",
                            target.host, inner.request_timeout
                        ))
                    })??,
            };
            if reused {
                match tokio::time::timeout_at(deadline, conn.sender.ready()).await {
                    Err(_) => return Err(timeout),
                    // Closed while idle: a fresh connection.
                    Ok(Err(_)) => {
                        fresh_only = true;
                        continue;
                    }
                    Ok(Ok(())) => {}
                }
            }
            let address = conn.address;
            let broken = |e: &dyn std::error::Error| {
                Failure::Broken(format!("{} ({address}): {}", target.host, chain(e)))
            };
            let sent = tokio::time::timeout_at(deadline, conn.sender.try_send_request(request));
            let response = match sent.await {
                Err(_) => return Err(timeout),
                Ok(Ok(response)) => response,
                Ok(Err(mut e)) => match e.take_message() {
                    // The kept connection closed before the request was written: nothing
                    // was sent; once more over a fresh connection.
                    Some(unsent) if reused => {
                        request = unsent;
                        fresh_only = true;
                        continue;
                    }
                    _ => return Err(broken(&e.into_error())),
                },
            };
            let (parts, mut body) = response.into_parts();
            let close = parts
                .headers
                .get(header::CONNECTION)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case("close")));
            let headers = KEPT_HEADERS
                .iter()
                .flat_map(|&name| {
                    parts.headers.get_all(name).iter().map(move |value| {
                        (
                            name.to_owned(),
                            String::from_utf8_lossy(value.as_bytes()).into_owned(),
                        )
                    })
                })
                .collect();
            let retry_after = parts
                .headers
                .get(header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(RetryAfter::parse);
            let (kept_body, whole) = tokio::time::timeout_at(deadline, read_capped(&mut body))
                .await
                .map_err(|_| timeout.clone())?
                .map_err(|e| broken(&e))?;
            drop(body);
            if whole && !close {
                self.put_back(target, conn);
            }
            return Ok(Response {
                status: parts.status.as_u16(),
                headers,
                retry_after,
                body: kept_body,
                truncated: !whole,
                address,
            });
        }
    }

    /// A connection to the first of `addresses` that takes one.
    async fn connect(&self, target: &Target, addresses: &[IpAddr]) -> Result<Conn, Failure> {
        let inner = &*self.inner;
        let mut failure = None;
        for &ip in addresses {
            let address = SocketAddr::new(ip, target.port);
            let connecting = tokio::net::TcpStream::connect(address);
            match tokio::time::timeout(inner.connect_timeout, connecting).await {
                Ok(Ok(tcp)) => return self.handshake(target, address, tcp).await,
                Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                    failure = Some(Failure::ConnectionRefused { address });
                }
                Ok(Err(e)) => {
                    failure = Some(Failure::Connect(format!(
                        "cannot connect to {} ({address}): {e}",
                        target.host
                    )));
                }
                Err(_) => {
                    failure = Some(Failure::Connect(format!(
                        "cannot connect to {} ({address}): no connection within {:?}",
                        target.host, inner.connect_timeout
                    )));
                }
            }
        }
        Err(failure.unwrap_or_else(|| Failure::Resolve(format!("{}: no address", target.host))))
    }

    /// TLS when the URL says so, then HTTP/1.1 over `tcp`.
    async fn handshake(
        &self,
        target: &Target,
        address: SocketAddr,
        tcp: tokio::net::TcpStream,
    ) -> Result<Conn, Failure> {
        let inner = &*self.inner;
        let _ = tcp.set_nodelay(true);
        let mut http = hyper::client::conn::http1::Builder::new();
        http.max_buf_size(64 * 1024);
        let broken = |e: hyper::Error| {
            Failure::Broken(format!("{} ({address}): {}", target.host, chain(&e)))
        };
        let (sender, task) = if target.https {
            // The name the certificate must be for, sent as SNI; an address is verified
            // against the certificate's addresses, and not sent.
            let name = match &target.host {
                TargetHost::Name(name) => ServerName::try_from(name.clone())
                    .map_err(|e| Failure::Tls(format!("{name}: not a TLS server name: {e}")))?,
                TargetHost::Ip(ip) => ServerName::IpAddress((*ip).into()),
            };
            let tls =
                match tokio::time::timeout(inner.connect_timeout, inner.tls.connect(name, tcp))
                    .await
                {
                    Ok(Ok(tls)) => tls,
                    Ok(Err(e)) => {
                        return Err(Failure::Tls(format!(
                            "TLS with {} ({address}): {}",
                            target.host,
                            chain(&e)
                        )))
                    }
                    Err(_) => {
                        return Err(Failure::Tls(format!(
                            "TLS with {} ({address}): no handshake within {:?}",
                            target.host, inner.connect_timeout
                        )))
                    }
                };
            let (sender, connection) = http
                .handshake(hyper_util::rt::TokioIo::new(tls))
                .await
                .map_err(broken)?;
            (sender, tokio::spawn(connection).abort_handle())
        } else {
            let (sender, connection) = http
                .handshake(hyper_util::rt::TokioIo::new(tcp))
                .await
                .map_err(broken)?;
            (sender, tokio::spawn(connection).abort_handle())
        };
        Ok(Conn {
            sender,
            task,
            address,
        })
    }

    /// The most recently used kept connection to one of `addresses` (in their order) that
    /// is open and not too old.
    fn take_idle(&self, target: &Target, addresses: &[IpAddr]) -> Option<Conn> {
        let inner = &*self.inner;
        let mut pool = inner.pool.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        for &ip in addresses {
            let key = Key {
                https: target.https,
                host: target.host.clone(),
                address: SocketAddr::new(ip, target.port),
            };
            let Some(idle) = pool.idle.get_mut(&key) else {
                continue;
            };
            idle.retain(|(conn, since)| {
                !conn.sender.is_closed() && now.duration_since(*since) < inner.idle_timeout
            });
            let conn = idle.pop().map(|(conn, _)| conn);
            if idle.is_empty() {
                pool.idle.remove(&key);
            }
            if conn.is_some() {
                return conn;
            }
        }
        None
    }

    fn put_back(&self, target: &Target, conn: Conn) {
        let inner = &*self.inner;
        if conn.sender.is_closed() || inner.max_idle_per_host == 0 {
            return;
        }
        let mut pool = inner.pool.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        // Now and then, the connections of hosts not delivered to for a while.
        if now.duration_since(pool.swept) >= inner.idle_timeout / 4 {
            pool.swept = now;
            pool.idle.retain(|_, idle| {
                idle.retain(|(conn, since)| {
                    !conn.sender.is_closed() && now.duration_since(*since) < inner.idle_timeout
                });
                !idle.is_empty()
            });
        }
        let key = Key {
            https: target.https,
            host: target.host.clone(),
            address: conn.address,
        };
        let idle = pool.idle.entry(key).or_default();
        if idle.len() < inner.max_idle_per_host {
            idle.push((conn, now));
        }
    }
}

/// Reads at most [`MAX_BODY`] bytes of `body`: those, and whether that was the whole body.
async fn read_capped(body: &mut Incoming) -> Result<(Vec<u8>, bool), hyper::Error> {
    let mut kept = Vec::new();
    loop {
        if body.is_end_stream() {
            return Ok((kept, true));
        }
        let Some(frame) = body.frame().await else {
            return Ok((kept, true));
        };
        let Ok(data) = frame?.into_data() else {
            continue; // trailers
        };
        let room = MAX_BODY - kept.len();
        if data.len() > room {
            kept.extend_from_slice(&data[..room]);
            return Ok((kept, false));
        }
        kept.extend_from_slice(&data);
        if kept.len() == MAX_BODY {
            if body.is_end_stream() {
                return Ok((kept, true));
            }
            // The end of a chunked body may be there already; no waiting for it.
            return match tokio::time::timeout(Duration::ZERO, body.frame()).await {
                Ok(None) => Ok((kept, true)),
                Ok(Some(Ok(frame))) if frame.data_ref().is_none_or(|d| d.is_empty()) => {
                    Ok((kept, body.is_end_stream()))
                }
                _ => Ok((kept, false)),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_is_seconds_or_a_date() {
        let now = httpdate::parse_http_date("Wed, 21 Oct 2015 07:28:00 GMT").unwrap();
        assert_eq!(
            RetryAfter::parse(" 120 "),
            Some(RetryAfter::Delay(Duration::from_secs(120)))
        );
        let later = RetryAfter::parse("Wed, 21 Oct 2015 07:29:00 GMT").unwrap();
        assert_eq!(later.delay(now), Duration::from_secs(60));
        let past = RetryAfter::parse("Wed, 21 Oct 2015 07:27:00 GMT").unwrap();
        assert_eq!(past.delay(now), Duration::ZERO);
        assert_eq!(RetryAfter::parse("soon"), None);
        assert_eq!(RetryAfter::parse("-5"), None);
        assert_eq!(RetryAfter::parse(""), None);
    }

    #[test]
    fn down_is_told_from_a_failed_request() {
        let address: SocketAddr = "192.0.2.1:443".parse().unwrap();
        assert!(Failure::ConnectionRefused { address }.is_down());
        assert!(Failure::Connect("unreachable".into()).is_down());
        assert!(Failure::Tls("unknown issuer".into()).is_down());
        assert!(Failure::Resolve("no such host".into()).is_down());
        assert!(!Failure::Timeout {
            after: Duration::from_secs(1)
        }
        .is_down());
        assert!(!Failure::Broken("reset".into()).is_down());
        let refused = Failure::from(Refusal {
            host: "hooks.example".into(),
            address: Some("10.0.0.1".parse().unwrap()),
            why: "private (10.0.0.0/8)".into(),
        });
        assert!(!refused.is_down() && refused.is_refused());
        assert_eq!(
            refused.to_string(),
            "delivery to hooks.example refused: it resolves to 10.0.0.1, private (10.0.0.0/8)"
        );
    }

    #[tokio::test]
    async fn the_client_writes_its_own_headers() {
        let client = WebhookClient::builder().build().unwrap();
        let url = Url::parse("https://hooks.example.com:8443/in?a=1").unwrap();
        let target = client.policy().check_url(&url).unwrap();
        let request = client
            .request(&url, &target, &[("webhook-id", "msg_1")], Bytes::new())
            .unwrap();
        assert_eq!(request.uri(), "/in?a=1");
        assert_eq!(request.headers()["host"], "hooks.example.com:8443");
        assert_eq!(request.headers()["content-type"], "application/json");
        assert_eq!(request.headers()["webhook-id"], "msg_1");
        for own in ["Host", "content-length", "Transfer-Encoding", "connection"] {
            let refused = client.request(&url, &target, &[(own, "x")], Bytes::new());
            assert!(matches!(refused, Err(Failure::InvalidRequest(_))), "{own}");
        }
        assert!(client
            .request(&url, &target, &[("bad name", "x")], Bytes::new())
            .is_err());
        assert!(client
            .request(&url, &target, &[("x-a", "line\r\nbreak")], Bytes::new())
            .is_err());
    }
}
