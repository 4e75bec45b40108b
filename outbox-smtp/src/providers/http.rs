//! One HTTP/1.1 request to a provider's API: hyper's client over tokio-rustls on ring
//! (the TLS stack SMTP already uses), trusting the webpki roots, or plain HTTP to a
//! loopback test server. A connection per request, closed after the answer.

use std::{sync::Arc, time::Duration};

use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Bytes;

/// The most an answer's body may hold (an API's JSON answer is a few hundred bytes).
const MAX_ANSWER: usize = 1024 * 1024;

/// Where and how requests go.
pub(crate) struct HttpClient {
    host: String,
    port: u16,
    tls: Option<tokio_rustls::TlsConnector>,
    connect_timeout: Duration,
    timeout: Duration,
}

/// An answer.
#[derive(Debug)]
pub(crate) struct HttpAnswer {
    pub(crate) status: u16,
    /// The `Retry-After` header, as sent.
    pub(crate) retry_after: Option<String>,
    pub(crate) body: Vec<u8>,
}

/// Why no answer came.
#[derive(Debug)]
pub(crate) enum HttpFailure {
    /// Nothing listens (connection refused).
    Refused(String),
    /// Connecting failed otherwise (no route, DNS, TLS), or the connection broke.
    Connection(String),
    /// No whole answer in time.
    Timeout(Duration),
}

impl HttpClient {
    /// A client for `host:port`, over TLS when `tls`.
    pub(crate) fn new(
        host: &str,
        port: u16,
        tls: bool,
        connect_timeout: Duration,
        timeout: Duration,
    ) -> Result<Self, String> {
        let tls = if tls {
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| e.to_string())?
                .with_root_certificates(rustls::RootCertStore {
                    roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
                })
                .with_no_client_auth();
            Some(tokio_rustls::TlsConnector::from(Arc::new(config)))
        } else {
            None
        };
        Ok(Self {
            host: host.to_owned(),
            port,
            tls,
            connect_timeout,
            timeout,
        })
    }

    /// POSTs `body` (JSON) to `path` with `headers`.
    pub(crate) async fn post_json(
        &self,
        path: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> Result<HttpAnswer, HttpFailure> {
        tokio::time::timeout(self.timeout, self.exchange(path, headers, body))
            .await
            .unwrap_or(Err(HttpFailure::Timeout(self.timeout)))
    }

    async fn exchange(
        &self,
        path: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> Result<HttpAnswer, HttpFailure> {
        let (host, port) = (self.host.as_str(), self.port);
        let tcp = tokio::time::timeout(
            self.connect_timeout,
            tokio::net::TcpStream::connect((host, port)),
        )
        .await
        .map_err(|_| HttpFailure::Timeout(self.connect_timeout))?
        .map_err(|e| {
            let what = format!("cannot connect to {host}:{port}: {e}");
            match e.kind() {
                std::io::ErrorKind::ConnectionRefused => HttpFailure::Refused(what),
                _ => HttpFailure::Connection(what),
            }
        })?;
        let authority = match (self.tls.is_some(), port) {
            (true, 443) | (false, 80) => host.to_owned(),
            _ if host.contains(':') => format!("[{host}]:{port}"),
            _ => format!("{host}:{port}"),
        };
        let request = hyper::Request::post(path)
            .header(hyper::header::HOST, authority)
            .header(hyper::header::CONNECTION, "close")
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header(
                hyper::header::USER_AGENT,
                concat!("outbox-smtp/", env!("CARGO_PKG_VERSION")),
            );
        let request = headers
            .iter()
            .fold(request, |r, (name, value)| r.header(*name, *value))
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| HttpFailure::Connection(format!("cannot build the request: {e}")))?;
        let broken = |e: hyper::Error| HttpFailure::Connection(format!("{host}:{port}: {e}"));
        let response = match &self.tls {
            Some(tls) => {
                let name = rustls::pki_types::ServerName::try_from(host.to_owned())
                    .map_err(|e| HttpFailure::Connection(format!("{host}: {e}")))?;
                let stream = tls
                    .connect(name, tcp)
                    .await
                    .map_err(|e| HttpFailure::Connection(format!("TLS with {host}: {e}")))?;
                let (mut sender, connection) =
                    hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                        .await
                        .map_err(broken)?;
                tokio::spawn(connection);
                sender.send_request(request).await.map_err(broken)?
            }
            None => {
                let (mut sender, connection) =
                    hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp))
                        .await
                        .map_err(broken)?;
                tokio::spawn(connection);
                sender.send_request(request).await.map_err(broken)?
            }
        };
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(hyper::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = Limited::new(response.into_body(), MAX_ANSWER)
            .collect()
            .await
            .map_err(|e| HttpFailure::Connection(format!("reading the answer of {host}: {e}")))?
            .to_bytes()
            .to_vec();
        Ok(HttpAnswer {
            status,
            retry_after,
            body,
        })
    }
}
