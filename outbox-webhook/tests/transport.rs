//! The delivery transport against real loopback servers: the address policy before any
//! connection (literal addresses, names from a DNS server written here, DNS rebinding),
//! redirects not followed, TLS with a certificate made at test time, timeouts, a huge
//! answer, refused connections and kept-alive connections.

use std::{
    collections::HashMap,
    net::{IpAddr, SocketAddr},
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use outbox_webhook::{
    client::{Bytes, Failure, WebhookClient, MAX_BODY},
    resolve::DnsResolver,
    ssrf::AddressPolicy,
};
use tokio::{
    io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt},
    net::{TcpListener, UdpSocket},
};
use url::Url;

// ---------------------------------------------------------------------------------------
// A receiver: a raw HTTP/1.1 server, so that it can misbehave exactly as told.

/// What a receiver does with each request.
#[derive(Clone)]
enum Behaviour {
    /// Answers every request with these bytes (a whole HTTP answer), keeping the
    /// connection open for the next.
    Answer(&'static str),
    /// Answers the first request of each connection, then closes it (without saying so).
    AnswerThenClose(&'static str),
    /// Reads the request and never answers.
    Silent,
    /// Sends headers announcing 100 bytes and no body.
    HeadersOnly,
    /// Streams 10 MB, 64 KiB at a time, 100 ms apart (16 s for the whole).
    Huge,
}

/// A request as received.
#[derive(Clone, Debug)]
struct Received {
    head: String,
    body: Vec<u8>,
}

#[derive(Clone, Default)]
struct Counters {
    accepted: Arc<AtomicUsize>,
    requests: Arc<Mutex<Vec<Received>>>,
    /// The SNI of each TLS connection (TLS receivers only).
    sni: Arc<Mutex<Vec<Option<String>>>>,
}

impl Counters {
    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    fn requests(&self) -> Vec<Received> {
        self.requests.lock().unwrap().clone()
    }
}

/// A plain HTTP receiver on `ip`, port `port` (0: any).
async fn receiver_on(ip: &str, port: u16, behaviour: Behaviour) -> (SocketAddr, Counters) {
    let listener = TcpListener::bind((ip, port)).await.unwrap();
    let address = listener.local_addr().unwrap();
    let counters = Counters::default();
    let c = counters.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            c.accepted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(serve(stream, behaviour.clone(), c.clone()));
        }
    });
    (address, counters)
}

async fn receiver(behaviour: Behaviour) -> (SocketAddr, Counters) {
    receiver_on("127.0.0.1", 0, behaviour).await
}

/// A listener that only counts the connections it accepts.
async fn counting_listener(ip: &str, port: u16) -> (SocketAddr, Counters) {
    receiver_on(ip, port, Behaviour::Silent).await
}

/// Reads one request (head and `Content-Length` body); `None` at the end of the stream.
async fn read_request<S: AsyncRead + Unpin>(
    stream: &mut S,
    buffer: &mut Vec<u8>,
) -> Option<Received> {
    let end = loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..end]).into_owned();
    let length = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    while buffer.len() < end + length {
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    let body = buffer[end..end + length].to_vec();
    buffer.drain(..end + length);
    Some(Received { head, body })
}

async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    behaviour: Behaviour,
    c: Counters,
) {
    let mut buffer = Vec::new();
    while let Some(request) = read_request(&mut stream, &mut buffer).await {
        c.requests.lock().unwrap().push(request);
        match &behaviour {
            Behaviour::Answer(answer) => {
                if stream.write_all(answer.as_bytes()).await.is_err() {
                    return;
                }
            }
            Behaviour::AnswerThenClose(answer) => {
                let _ = stream.write_all(answer.as_bytes()).await;
                let _ = stream.shutdown().await;
                return;
            }
            Behaviour::Silent => {
                tokio::time::sleep(Duration::from_secs(60)).await;
                return;
            }
            Behaviour::HeadersOnly => {
                let _ = stream
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n")
                    .await;
                tokio::time::sleep(Duration::from_secs(60)).await;
                return;
            }
            Behaviour::Huge => {
                let size = 10 * 1024 * 1024;
                let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {size}\r\n\r\n");
                if stream.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let chunk = vec![b'x'; 64 * 1024];
                for _ in 0..size / chunk.len() {
                    if stream.write_all(&chunk).await.is_err() {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                return;
            }
        }
    }
}

const NO_CONTENT: &str = "HTTP/1.1 204 No Content\r\n\r\n";
const OK: &str = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nX-Other: dropped\r\n\r\nok";

// ---------------------------------------------------------------------------------------
// A DNS server: UDP, A and AAAA queries answered from a table.

/// Answers by name: the addresses of the first query (A or AAAA) for it, of the second,
/// ... (the last one over again). Unknown names get NXDOMAIN.
#[derive(Clone, Default)]
struct Dns {
    table: Arc<Mutex<HashMap<String, Vec<Vec<IpAddr>>>>>,
    /// Every query: (name, type) with 1 = A, 28 = AAAA.
    queries: Arc<Mutex<Vec<(String, u16)>>>,
}

impl Dns {
    fn set(&self, name: &str, answers: &[&[&str]]) {
        let answers = answers
            .iter()
            .map(|set| set.iter().map(|a| a.parse().unwrap()).collect())
            .collect();
        self.table.lock().unwrap().insert(name.to_owned(), answers);
    }

    fn queries_of(&self, name: &str, kind: u16) -> usize {
        self.queries
            .lock()
            .unwrap()
            .iter()
            .filter(|(n, k)| n == name && *k == kind)
            .count()
    }

    /// Starts the server: its address.
    async fn start(&self) -> SocketAddr {
        let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let address = socket.local_addr().unwrap();
        let dns = self.clone();
        tokio::spawn(async move {
            let mut packet = [0u8; 1500];
            loop {
                let Ok((n, from)) = socket.recv_from(&mut packet).await else {
                    return;
                };
                if let Some(answer) = dns.answer(&packet[..n]) {
                    let _ = socket.send_to(&answer, from).await;
                }
            }
        });
        address
    }

    fn answer(&self, query: &[u8]) -> Option<Vec<u8>> {
        // The question: labels from byte 12, then type and class.
        let mut at = 12;
        let mut labels = Vec::new();
        loop {
            let len = usize::from(*query.get(at)?);
            at += 1;
            if len == 0 {
                break;
            }
            labels.push(String::from_utf8_lossy(query.get(at..at + len)?).to_ascii_lowercase());
            at += len;
        }
        let kind = u16::from_be_bytes([*query.get(at)?, *query.get(at + 1)?]);
        let question_end = at + 4;
        let name = labels.join(".");
        self.queries.lock().unwrap().push((name.clone(), kind));

        let known = self.table.lock().unwrap().get(&name).cloned();
        let addresses = match &known {
            Some(answers) => {
                // The n-th query of this type for the name.
                let n = self.queries_of(&name, kind) - 1;
                answers[n.min(answers.len() - 1)].clone()
            }
            None => Vec::new(),
        };
        let records: Vec<Vec<u8>> = addresses
            .iter()
            .filter_map(|address| match (address, kind) {
                (IpAddr::V4(v4), 1) => Some((1u16, v4.octets().to_vec())),
                (IpAddr::V6(v6), 28) => Some((28u16, v6.octets().to_vec())),
                _ => None,
            })
            .map(|(kind, data)| {
                let mut record = vec![0xc0, 12]; // the name: a pointer to the question's
                record.extend_from_slice(&kind.to_be_bytes());
                record.extend_from_slice(&1u16.to_be_bytes()); // IN
                record.extend_from_slice(&0u32.to_be_bytes()); // TTL 0
                record.extend_from_slice(&(data.len() as u16).to_be_bytes());
                record.extend_from_slice(&data);
                record
            })
            .collect();

        let mut answer = Vec::new();
        answer.extend_from_slice(&query[..2]); // the id
        let recursion_desired = query[2] & 0x01;
        answer.push(0x84 | recursion_desired); // response, authoritative
        answer.push(if known.is_some() { 0x80 } else { 0x83 }); // RA; NOERROR or NXDOMAIN
        answer.extend_from_slice(&1u16.to_be_bytes());
        answer.extend_from_slice(&(records.len() as u16).to_be_bytes());
        answer.extend_from_slice(&[0, 0, 0, 0]);
        answer.extend_from_slice(&query[12..question_end]);
        for record in records {
            answer.extend_from_slice(&record);
        }
        Some(answer)
    }
}

// ---------------------------------------------------------------------------------------
// Clients.

fn loopback_allowed() -> AddressPolicy {
    AddressPolicy::default()
        .allow("127.0.0.1/32".parse().unwrap())
        .allow_http(true)
}

fn client(policy: AddressPolicy, dns: Option<SocketAddr>) -> WebhookClient {
    let builder = WebhookClient::builder().policy(policy);
    let builder = match dns {
        Some(server) => builder.resolver(DnsResolver::new([server]).unwrap()),
        None => builder,
    };
    builder.build().unwrap()
}

async fn post(
    client: &WebhookClient,
    url: &str,
) -> Result<outbox_webhook::client::Response, Failure> {
    client
        .post(
            &Url::parse(url).unwrap(),
            &[("webhook-id", "msg_1".to_owned())],
            Bytes::from_static(b"{\"type\":\"ping\"}"),
        )
        .await
}

fn refused_address(result: &Result<outbox_webhook::client::Response, Failure>) -> Option<IpAddr> {
    match result {
        Err(Failure::Refused { address, .. }) => *address,
        other => panic!("not refused: {other:?}"),
    }
}

/// Lets a connection that was (wrongly) made reach the counting listener.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(200)).await;
}

// ---------------------------------------------------------------------------------------
// The address policy.

#[tokio::test]
async fn literal_addresses_are_refused_before_any_connection() {
    let (listener, counted) = counting_listener("127.0.0.1", 0).await;
    let port = listener.port();
    let default = client(AddressPolicy::default(), None);
    for (url, address) in [
        (format!("https://127.0.0.1:{port}/hook"), "127.0.0.1"),
        (
            "https://169.254.169.254/latest/meta-data/".into(),
            "169.254.169.254",
        ),
        (format!("https://[::1]:{port}/"), "::1"),
        (
            format!("https://[::ffff:127.0.0.1]:{port}/"),
            "::ffff:127.0.0.1",
        ),
        ("https://10.0.0.1/".into(), "10.0.0.1"),
        (format!("https://2130706433:{port}/"), "127.0.0.1"),
    ] {
        let result = post(&default, &url).await;
        assert_eq!(
            refused_address(&result),
            Some(address.parse().unwrap()),
            "{url}"
        );
        let failure = result.unwrap_err();
        assert!(!failure.is_down() && failure.is_refused());
        assert!(
            failure.to_string().contains("AddressPolicy::allow("),
            "{failure}"
        );
    }
    settle().await;
    assert_eq!(counted.accepted(), 0, "no connection was attempted");

    // Allowed: delivered.
    let (receiver, received) = receiver(Behaviour::Answer(NO_CONTENT)).await;
    let allowed = client(loopback_allowed(), None);
    let answer = post(
        &allowed,
        &format!("http://127.0.0.1:{}/in?x=1", receiver.port()),
    )
    .await
    .unwrap();
    assert_eq!(answer.status, 204);
    assert_eq!(answer.address, receiver);
    let requests = received.requests();
    assert_eq!(requests.len(), 1);
    let head = requests[0].head.to_ascii_lowercase();
    assert!(head.starts_with("post /in?x=1 http/1.1\r\n"), "{head}");
    assert!(
        head.contains(&format!("\r\nhost: 127.0.0.1:{}\r\n", receiver.port())),
        "{head}"
    );
    assert!(head.contains("\r\nwebhook-id: msg_1\r\n"), "{head}");
    assert!(
        head.contains("\r\ncontent-type: application/json\r\n"),
        "{head}"
    );
    assert_eq!(requests[0].body, b"{\"type\":\"ping\"}");
    // Other loopback addresses stay refused.
    let other = post(&allowed, &format!("http://127.0.0.2:{}/", receiver.port())).await;
    assert_eq!(refused_address(&other), Some("127.0.0.2".parse().unwrap()));
}

#[tokio::test]
async fn names_are_refused_by_any_address_they_resolve_to() {
    let dns = Dns::default();
    dns.set("loop.test", &[&["127.0.0.1"]]);
    dns.set("metadata.test", &[&["169.254.169.254"]]);
    dns.set("v6loop.test", &[&["::1"]]);
    dns.set("mapped.test", &[&["::ffff:127.0.0.1"]]);
    dns.set("private.test", &[&["10.0.0.1"]]);
    dns.set("mixed.test", &[&["93.184.216.34", "10.0.0.1"]]);
    let server = dns.start().await;
    let (listener, counted) = counting_listener("127.0.0.1", 0).await;
    let port = listener.port();

    let default = client(AddressPolicy::default().allow_http(true), Some(server));
    for (host, address) in [
        ("loop.test", "127.0.0.1"),
        ("metadata.test", "169.254.169.254"),
        ("v6loop.test", "::1"),
        ("mapped.test", "::ffff:127.0.0.1"),
        ("private.test", "10.0.0.1"),
        ("mixed.test", "10.0.0.1"),
    ] {
        let result = post(&default, &format!("http://{host}:{port}/")).await;
        assert_eq!(
            refused_address(&result),
            Some(address.parse().unwrap()),
            "{host}"
        );
        let text = result.unwrap_err().to_string();
        assert!(
            text.contains(host) && text.contains(address) && text.contains("AddressPolicy::allow("),
            "{text}"
        );
    }
    settle().await;
    assert_eq!(counted.accepted(), 0, "no connection was attempted");

    // A name that does not exist.
    let missing = post(&default, "http://missing.test/").await.unwrap_err();
    assert!(
        matches!(missing, Failure::Resolve(_)) && missing.is_down(),
        "{missing:?}"
    );

    // Allowed, the name is delivered to.
    let (receiver, received) = receiver(Behaviour::Answer(NO_CONTENT)).await;
    let allowed = client(loopback_allowed(), Some(server));
    let answer = post(&allowed, &format!("http://loop.test:{}/", receiver.port()))
        .await
        .unwrap();
    assert_eq!(answer.status, 204);
    let head = received.requests()[0].head.to_ascii_lowercase();
    assert!(
        head.contains(&format!("\r\nhost: loop.test:{}\r\n", receiver.port())),
        "{head}"
    );
}

#[tokio::test]
async fn dns_rebinding_cannot_move_a_delivery() {
    // The first answer for rebind.test is 127.0.0.1 (allowed), every later one 127.0.0.2
    // (loopback, not allowed), where a listener waits on the receiver's port.
    let dns = Dns::default();
    dns.set("rebind.test", &[&["127.0.0.1"], &["127.0.0.2"]]);
    let server = dns.start().await;
    let (receiver, received) = receiver(Behaviour::Answer(NO_CONTENT)).await;
    let (_, elsewhere) = counting_listener("127.0.0.2", receiver.port()).await;
    let client = client(loopback_allowed(), Some(server));
    let url = format!("http://rebind.test:{}/hook", receiver.port());

    let first = post(&client, &url).await.unwrap();
    assert_eq!(first.status, 204);
    assert_eq!(first.address, receiver);
    assert_eq!(received.requests().len(), 1);
    assert_eq!(
        dns.queries_of("rebind.test", 1),
        1,
        "resolved once, not again to connect"
    );

    let second = post(&client, &url).await;
    assert_eq!(refused_address(&second), Some("127.0.0.2".parse().unwrap()));
    assert_eq!(
        dns.queries_of("rebind.test", 1),
        2,
        "a new request resolves anew"
    );
    settle().await;
    assert_eq!(elsewhere.accepted(), 0, "nothing reached 127.0.0.2");
    assert_eq!(received.requests().len(), 1);
}

#[tokio::test]
async fn redirects_are_answers_not_followed() {
    let (receiver, received) = receiver(Behaviour::Answer(
        "HTTP/1.1 302 Found\r\nLocation: http://169.254.169.254/latest/meta-data/\r\n\
         Retry-After: 30\r\nContent-Length: 0\r\n\r\n",
    ))
    .await;
    let client = client(loopback_allowed(), None);
    let answer = post(&client, &format!("http://127.0.0.1:{}/", receiver.port()))
        .await
        .unwrap();
    assert_eq!(answer.status, 302);
    assert_eq!(
        answer.header("location"),
        Some("http://169.254.169.254/latest/meta-data/")
    );
    assert_eq!(
        answer.retry_after,
        Some(outbox_webhook::client::RetryAfter::Delay(
            Duration::from_secs(30)
        ))
    );
    settle().await;
    assert_eq!(received.requests().len(), 1, "nothing followed");
}

#[tokio::test]
async fn only_a_few_answer_headers_are_kept() {
    let (receiver, _) = receiver(Behaviour::Answer(OK)).await;
    let client = client(loopback_allowed(), None);
    let answer = post(&client, &format!("http://127.0.0.1:{}/", receiver.port()))
        .await
        .unwrap();
    assert_eq!(
        (answer.status, answer.body.as_slice(), answer.truncated),
        (200, &b"ok"[..], false)
    );
    assert_eq!(
        answer.headers,
        [
            ("content-type".to_owned(), "text/plain".to_owned()),
            ("content-length".to_owned(), "2".to_owned())
        ]
    );
}

// ---------------------------------------------------------------------------------------
// TLS.

struct TlsReceiver {
    address: SocketAddr,
    counters: Counters,
    certificate: rustls::pki_types::CertificateDer<'static>,
}

/// A TLS receiver on 127.0.0.1 with a self-signed certificate for `hooks.test` and
/// 127.0.0.1, answering [`OK`].
async fn tls_receiver() -> TlsReceiver {
    let rcgen::CertifiedKey { cert, signing_key } =
        rcgen::generate_simple_self_signed(vec!["hooks.test".to_owned(), "127.0.0.1".to_owned()])
            .unwrap();
    let certificate = cert.der().clone();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(signing_key.serialize_der().into());
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![certificate.clone()], key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let counters = Counters::default();
    let c = counters.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            c.accepted.fetch_add(1, Ordering::SeqCst);
            let (acceptor, c) = (acceptor.clone(), c.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(stream).await else {
                    return;
                };
                let sni = tls.get_ref().1.server_name().map(str::to_owned);
                c.sni.lock().unwrap().push(sni);
                serve(tls, Behaviour::Answer(OK), c).await;
            });
        }
    });
    TlsReceiver {
        address,
        counters,
        certificate,
    }
}

#[tokio::test]
async fn https_is_required_and_verified() {
    let dns = Dns::default();
    dns.set("hooks.test", &[&["127.0.0.1"]]);
    dns.set("other.test", &[&["127.0.0.1"]]);
    let server = dns.start().await;
    let tls = tls_receiver().await;
    let port = tls.address.port();
    let https_only = AddressPolicy::default().allow("127.0.0.1/32".parse().unwrap());

    // Plain http:// is refused unless allowed, before resolving or connecting.
    let (plain, plain_counters) = counting_listener("127.0.0.1", 0).await;
    let strict = client(https_only.clone(), Some(server));
    let refused = post(&strict, &format!("http://hooks.test:{}/", plain.port()))
        .await
        .unwrap_err();
    match &refused {
        Failure::Refused {
            address: None, why, ..
        } => assert!(why.contains("allow_http(true)"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(dns.queries_of("hooks.test", 1), 0);

    // Trusted through the added root: the name (sent as SNI) and the address.
    let trusting = WebhookClient::builder()
        .policy(https_only.clone())
        .resolver(DnsResolver::new([server]).unwrap())
        .add_root_certificate(tls.certificate.clone())
        .build()
        .unwrap();
    let answer = post(&trusting, &format!("https://hooks.test:{port}/in"))
        .await
        .unwrap();
    assert_eq!((answer.status, answer.body.as_slice()), (200, &b"ok"[..]));
    let answer = post(&trusting, &format!("https://127.0.0.1:{port}/in"))
        .await
        .unwrap();
    assert_eq!(answer.status, 200);
    assert_eq!(
        *tls.counters.sni.lock().unwrap(),
        [Some("hooks.test".to_owned()), None],
        "SNI is the URL's name, none for an address"
    );
    let head = tls.counters.requests()[0].head.to_ascii_lowercase();
    assert!(
        head.contains(&format!("\r\nhost: hooks.test:{port}\r\n")),
        "{head}"
    );

    // A certificate not for the name.
    let wrong = post(&trusting, &format!("https://other.test:{port}/"))
        .await
        .unwrap_err();
    assert!(
        matches!(wrong, Failure::Tls(_)) && wrong.is_down(),
        "{wrong:?}"
    );

    // A certificate nobody trusts.
    let untrusting = client(https_only, Some(server));
    let untrusted = post(&untrusting, &format!("https://hooks.test:{port}/"))
        .await
        .unwrap_err();
    assert!(
        matches!(untrusted, Failure::Tls(_)) && untrusted.is_down(),
        "{untrusted:?}"
    );
    assert!(untrusted.to_string().contains("hooks.test"), "{untrusted}");

    settle().await;
    assert_eq!(plain_counters.accepted(), 0);
    assert_eq!(tls.counters.requests().len(), 2);
}

// ---------------------------------------------------------------------------------------
// Time limits and sizes.

fn impatient() -> WebhookClient {
    WebhookClient::builder()
        .policy(loopback_allowed())
        .request_timeout(Duration::from_secs(1))
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_receiver_that_never_answers_times_out() {
    let (receiver, received) = receiver(Behaviour::Silent).await;
    let started = Instant::now();
    let failure = post(
        &impatient(),
        &format!("http://127.0.0.1:{}/", receiver.port()),
    )
    .await
    .unwrap_err();
    let took = started.elapsed();
    assert!(
        matches!(failure, Failure::Timeout { .. }) && !failure.is_down(),
        "{failure:?}"
    );
    assert!(
        took >= Duration::from_millis(950) && took < Duration::from_secs(3),
        "{took:?}"
    );
    assert_eq!(received.requests().len(), 1);
}

#[tokio::test]
async fn an_answer_without_its_body_times_out() {
    let (receiver, _) = receiver(Behaviour::HeadersOnly).await;
    let started = Instant::now();
    let failure = post(
        &impatient(),
        &format!("http://127.0.0.1:{}/", receiver.port()),
    )
    .await
    .unwrap_err();
    assert!(matches!(failure, Failure::Timeout { .. }), "{failure:?}");
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn a_huge_answer_is_cut_short_without_waiting_for_it() {
    // The whole answer would take 160 × 100 ms = 16 s to arrive.
    let (receiver, _) = receiver(Behaviour::Huge).await;
    let client = client(loopback_allowed(), None);
    let started = Instant::now();
    let answer = post(&client, &format!("http://127.0.0.1:{}/", receiver.port()))
        .await
        .unwrap();
    let took = started.elapsed();
    assert!(took < Duration::from_secs(2), "{took:?}");
    assert_eq!(answer.status, 200);
    assert_eq!(answer.body.len(), MAX_BODY);
    assert!(answer.truncated);
    assert_eq!(answer.header("content-length"), Some("10485760"));
}

#[tokio::test]
async fn nothing_listening_is_connection_refused() {
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        listener.local_addr().unwrap().port()
    };
    let client = client(loopback_allowed(), None);
    let failure = post(&client, &format!("http://127.0.0.1:{port}/"))
        .await
        .unwrap_err();
    match &failure {
        Failure::ConnectionRefused { address } => {
            assert_eq!(*address, SocketAddr::from(([127, 0, 0, 1], port)))
        }
        other => panic!("{other:?}"),
    }
    assert!(failure.is_down());
}

// ---------------------------------------------------------------------------------------
// Kept-alive connections.

#[tokio::test]
async fn requests_to_a_receiver_share_a_connection() {
    let (receiver, received) = receiver(Behaviour::Answer(OK)).await;
    let client = client(loopback_allowed(), None);
    let url = format!("http://127.0.0.1:{}/", receiver.port());
    for _ in 0..3 {
        assert_eq!(post(&client, &url).await.unwrap().status, 200);
    }
    // A clone shares the kept connections.
    assert_eq!(post(&client.clone(), &url).await.unwrap().status, 200);
    assert_eq!(received.requests().len(), 4);
    assert_eq!(received.accepted(), 1, "one TCP connection");
}

#[tokio::test]
async fn a_kept_connection_the_receiver_closed_is_replaced() {
    let (receiver, received) = receiver(Behaviour::AnswerThenClose(OK)).await;
    let client = client(loopback_allowed(), None);
    let url = format!("http://127.0.0.1:{}/", receiver.port());
    assert_eq!(post(&client, &url).await.unwrap().status, 200);
    settle().await;
    assert_eq!(post(&client, &url).await.unwrap().status, 200);
    assert_eq!(received.requests().len(), 2);
    assert_eq!(received.accepted(), 2);
}

#[tokio::test]
async fn a_cut_short_answer_does_not_keep_its_connection() {
    let (receiver, received) = receiver(Behaviour::Huge).await;
    let client = client(loopback_allowed(), None);
    let url = format!("http://127.0.0.1:{}/", receiver.port());
    assert!(post(&client, &url).await.unwrap().truncated);
    assert!(post(&client, &url).await.unwrap().truncated);
    assert_eq!(received.accepted(), 2, "a fresh connection for the second");
}
