//! HTTP/1.1 requests to a provider's API: hyper's client over tokio-rustls on ring (the
//! TLS stack SMTP already uses), trusting the webpki roots, or plain HTTP to a loopback
//! test server. Connections are kept alive and reused (up to the endpoint's `pool` idle
//! ones, each for at most [`IDLE_FOR`]); a request that a kept connection could not take
//! (it closed before the request was written) goes over a fresh one at once, and nothing
//! else is sent twice by this layer.

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use http_body_util::{BodyExt as _, Full, Limited};
use hyper::{body::Bytes, client::conn::http1::SendRequest};

use crate::config::ApiEndpoint;

/// The most an answer's body may hold (an API's JSON answer is a few hundred bytes).
const MAX_ANSWER: usize = 1024 * 1024;

/// How long an idle connection is kept: shorter than the providers' keep-alive timeouts
/// (60 s and more), so the server rarely closes one just as a request goes out.
const IDLE_FOR: Duration = Duration::from_secs(20);

/// Where and how requests go.
pub(crate) struct HttpClient {
    host: String,
    port: u16,
    /// The `Host` header.
    authority: String,
    tls: Option<tokio_rustls::TlsConnector>,
    connect_timeout: Duration,
    timeout: Duration,
    pool: usize,
    idle: Mutex<Vec<(SendRequest<Full<Bytes>>, Instant)>>,
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
    /// A client for `endpoint`, or the setting that cannot work.
    pub(crate) fn for_endpoint(endpoint: &ApiEndpoint) -> Result<Self, crate::ConfigError> {
        Self::new(endpoint)
            .map_err(|e| crate::ConfigError::new("tls", format!("cannot set up TLS: {e}")))
    }

    /// A client for `endpoint`.
    pub(crate) fn new(endpoint: &ApiEndpoint) -> Result<Self, String> {
        let tls = if endpoint.tls {
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
        let (host, port) = (endpoint.host.clone(), endpoint.effective_port());
        let authority = match (tls.is_some(), port) {
            (true, 443) | (false, 80) => host.clone(),
            _ if host.contains(':') => format!("[{host}]:{port}"),
            _ => format!("{host}:{port}"),
        };
        Ok(Self {
            host,
            port,
            authority,
            tls,
            connect_timeout: endpoint.connect_timeout,
            timeout: endpoint.timeout,
            pool: endpoint.pool,
            idle: Mutex::new(Vec::new()),
        })
    }

    /// POSTs `body` (JSON) to `path` with `headers`.
    pub(crate) async fn post_json(
        &self,
        path: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> Result<HttpAnswer, HttpFailure> {
        self.post(path, "application/json", headers, body).await
    }

    /// POSTs `body`, of type `content_type` (a multipart form's with its boundary, say),
    /// to `path` with `headers`.
    pub(crate) async fn post(
        &self,
        path: &str,
        content_type: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> Result<HttpAnswer, HttpFailure> {
        tokio::time::timeout(
            self.timeout,
            self.exchange(path, content_type, headers, body),
        )
        .await
        .unwrap_or(Err(HttpFailure::Timeout(self.timeout)))
        .map(|(answer, _)| answer)
    }

    /// [`post_json`](Self::post_json), with every header of the answer (a provider that
    /// gives its id or its rate-limit hints in headers).
    pub(crate) async fn post_json_with_headers(
        &self,
        path: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> Result<(HttpAnswer, hyper::HeaderMap), HttpFailure> {
        tokio::time::timeout(
            self.timeout,
            self.exchange(path, "application/json", headers, body),
        )
        .await
        .unwrap_or(Err(HttpFailure::Timeout(self.timeout)))
    }

    /// Sends a `method` request (`GET`, `PUT`, `POST`) to `path` with `headers` and `body`
    /// (no `Content-Type` unless in `headers`): the answer and its headers (the AWS
    /// credential sources: instance metadata, a container's credentials endpoint).
    pub(crate) async fn request(
        &self,
        method: hyper::Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> Result<(HttpAnswer, hyper::HeaderMap), HttpFailure> {
        tokio::time::timeout(
            self.timeout,
            self.exchange_with(method, path, None, headers, body),
        )
        .await
        .unwrap_or(Err(HttpFailure::Timeout(self.timeout)))
    }

    /// `http://` or `https://` and the authority requests go to, as in their `Host`
    /// header (`https://email.eu-west-1.amazonaws.com`, `http://127.0.0.1:8025`): what
    /// the URL of a request that is signed (AWS SigV4) starts with.
    pub(crate) fn origin(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.authority)
    }

    async fn exchange(
        &self,
        path: &str,
        content_type: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> Result<(HttpAnswer, hyper::HeaderMap), HttpFailure> {
        self.exchange_with(hyper::Method::POST, path, Some(content_type), headers, body)
            .await
    }

    async fn exchange_with(
        &self,
        method: hyper::Method,
        path: &str,
        content_type: Option<&str>,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> Result<(HttpAnswer, hyper::HeaderMap), HttpFailure> {
        let (host, port) = (self.host.as_str(), self.port);
        let mut request = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header(hyper::header::HOST, &self.authority)
            .header(
                hyper::header::USER_AGENT,
                concat!("outbox-smtp/", env!("CARGO_PKG_VERSION")),
            );
        if let Some(content_type) = content_type {
            request = request.header(hyper::header::CONTENT_TYPE, content_type);
        }
        let mut request = headers
            .iter()
            .fold(request, |r, (name, value)| r.header(*name, *value))
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| HttpFailure::Connection(format!("cannot build the request: {e}")))?;
        let broken = |e: hyper::Error| HttpFailure::Connection(format!("{host}:{port}: {e}"));
        let mut fresh_only = false;
        loop {
            let kept = if fresh_only { None } else { self.take_idle() };
            let reused = kept.is_some();
            let mut sender = match kept {
                Some(sender) => sender,
                None => self.connect().await?,
            };
            let response = match sender.try_send_request(request).await {
                Ok(response) => response,
                Err(mut e) => match e.take_message() {
                    // The kept connection closed before the request was written: nothing
                    // was sent; once more over a fresh connection.
                    Some(unsent) if reused => {
                        request = unsent;
                        fresh_only = true;
                        continue;
                    }
                    _ => return Err(broken(e.into_error())),
                },
            };
            let status = response.status().as_u16();
            let close = response
                .headers()
                .get(hyper::header::CONNECTION)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.eq_ignore_ascii_case("close"));
            let retry_after = response
                .headers()
                .get(hyper::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let answer_headers = response.headers().clone();
            let body = Limited::new(response.into_body(), MAX_ANSWER)
                .collect()
                .await
                .map_err(|e| HttpFailure::Connection(format!("reading the answer of {host}: {e}")))?
                .to_bytes()
                .to_vec();
            if !close {
                self.put_back(sender);
            }
            return Ok((
                HttpAnswer {
                    status,
                    retry_after,
                    body,
                },
                answer_headers,
            ));
        }
    }

    /// The most recently used kept connection that is open and not too old.
    fn take_idle(&self) -> Option<SendRequest<Full<Bytes>>> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        idle.retain(|(sender, since)| {
            !sender.is_closed() && now.saturating_duration_since(*since) < IDLE_FOR
        });
        idle.pop().map(|(sender, _)| sender)
    }

    fn put_back(&self, sender: SendRequest<Full<Bytes>>) {
        if sender.is_closed() {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < self.pool {
            idle.push((sender, Instant::now()));
        }
    }

    /// A new connection (TCP, then TLS when configured), ready for a request.
    async fn connect(&self) -> Result<SendRequest<Full<Bytes>>, HttpFailure> {
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
        let _ = tcp.set_nodelay(true);
        let broken = |e: hyper::Error| HttpFailure::Connection(format!("{host}:{port}: {e}"));
        match &self.tls {
            Some(tls) => {
                let name = rustls::pki_types::ServerName::try_from(host.to_owned())
                    .map_err(|e| HttpFailure::Connection(format!("{host}: {e}")))?;
                let stream = tls
                    .connect(name, tcp)
                    .await
                    .map_err(|e| HttpFailure::Connection(format!("TLS with {host}: {e}")))?;
                let (sender, connection) =
                    hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                        .await
                        .map_err(broken)?;
                tokio::spawn(connection);
                Ok(sender)
            }
            None => {
                let (sender, connection) =
                    hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp))
                        .await
                        .map_err(broken)?;
                tokio::spawn(connection);
                Ok(sender)
            }
        }
    }
}

/// A `multipart/form-data` body (RFC 7578) of text `fields` and one `file`: its
/// `Content-Type` (with the boundary) and its bytes. The boundary is random and checked
/// against every part, so no part can end the body early.
pub(crate) struct Form {
    pub(crate) content_type: String,
    pub(crate) body: Vec<u8>,
}

/// A file part of a [`form`]: the field name, the file name, its type and bytes.
pub(crate) struct FilePart<'a> {
    pub(crate) name: &'a str,
    pub(crate) file_name: &'a str,
    pub(crate) content_type: &'a str,
    pub(crate) bytes: &'a [u8],
}

/// Writes `fields` (name, value; no CR or LF in a name) and `file` as a multipart form.
pub(crate) fn form(fields: &[(&str, &str)], file: &FilePart<'_>) -> Form {
    let parts = || {
        fields
            .iter()
            .map(|(n, v)| [n.as_bytes(), v.as_bytes()])
            .chain([[file.name.as_bytes(), file.bytes]])
    };
    let boundary = loop {
        let boundary = format!("outbox-{}", ulid::Ulid::generate());
        let b = boundary.as_bytes();
        if !parts()
            .flatten()
            .any(|part| part.windows(b.len()).any(|w| w == b))
        {
            break boundary;
        }
    };
    let quoted = |s: &str| s.replace(['"', '\r', '\n'], "_");
    let size = parts().flatten().map(<[u8]>::len).sum::<usize>();
    let mut body = Vec::with_capacity(size + 200 * (fields.len() + 2));
    for (name, value) in fields {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{}\"\r\n\r\n",
                quoted(name)
            )
            .as_bytes(),
        );
        body.extend_from_slice(value.as_bytes());
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{}\"; filename=\"{}\"\r\n\
             Content-Type: {}\r\n\r\n",
            quoted(file.name),
            quoted(file.file_name),
            quoted(file.content_type),
        )
        .as_bytes(),
    );
    body.extend_from_slice(file.bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    Form {
        content_type: format!("multipart/form-data; boundary={boundary}"),
        body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_holds_its_fields_and_file_between_boundaries() {
        let message = b"Subject: Hi\r\n\r\nbody\r\n";
        let form = form(
            &[("to", "a@example.org, b@example.org")],
            &FilePart {
                name: "message",
                file_name: "message.mime",
                content_type: "message/rfc822",
                bytes: message,
            },
        );
        let boundary = form
            .content_type
            .strip_prefix("multipart/form-data; boundary=")
            .unwrap();
        let body = String::from_utf8(form.body).unwrap();
        assert_eq!(
            body,
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"to\"\r\n\r\n\
                 a@example.org, b@example.org\r\n\
                 --{boundary}\r\nContent-Disposition: form-data; name=\"message\"; \
                 filename=\"message.mime\"\r\nContent-Type: message/rfc822\r\n\r\n\
                 Subject: Hi\r\n\r\nbody\r\n\r\n--{boundary}--\r\n"
            )
        );
        // Another boundary each time.
        let again = super::form(
            &[],
            &FilePart {
                name: "message",
                file_name: "m",
                content_type: "message/rfc822",
                bytes: b"",
            },
        );
        assert_ne!(again.content_type, form.content_type);
    }
}
