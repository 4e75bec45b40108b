//! A small SMTP server on loopback for the SMTP tests: real SMTP over TCP (EHLO, STARTTLS
//! or implicit TLS with a certificate made at test time, AUTH PLAIN/LOGIN, MAIL, RCPT,
//! DATA, RSET, NOOP, QUIT) with scriptable replies, recording what arrived.
#![allow(dead_code)]

use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex},
    time::Duration,
};

use base64::Engine as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::{
    io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader},
    net::{TcpListener, TcpStream},
};

/// Any stream the session can run on: TCP, or TLS over TCP.
trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// What the sink does with one transaction (popped at each MAIL FROM; default: accept).
#[derive(Debug, Clone)]
pub enum Script {
    /// Answer MAIL FROM with this reply line (e.g. `451 4.7.1 greylisted`).
    AtMail(&'static str),
    /// Answer DATA with this reply line.
    AtData(&'static str),
    /// Take the message data, then answer with this reply line instead of 250.
    AfterData(&'static str),
    /// Read part of the message data, then close the connection without a reply.
    DropMidData,
    /// Read the message data, then never answer.
    HangAfterData,
    /// Accept the message, then close the connection (a server ending idle sessions).
    AcceptThenClose,
}

/// A test certificate authority and a server certificate for `localhost`/`127.0.0.1`.
pub struct TestCa {
    /// The CA certificate the client must trust (PEM).
    pub ca_pem: String,
    pub server: Arc<rustls::ServerConfig>,
}

impl TestCa {
    pub fn new() -> Self {
        use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
        let leaf_key = KeyPair::generate().unwrap();
        let leaf = CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .unwrap()
            .signed_by(&leaf_key, &ca)
            .unwrap();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
        let chain: Vec<CertificateDer<'static>> = vec![leaf.der().clone(), ca.der().clone()];
        let server = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
        Self {
            ca_pem: ca.pem(),
            server: Arc::new(server),
        }
    }
}

/// One message the sink accepted.
#[derive(Debug, Clone)]
pub struct Received {
    pub from: String,
    pub rcpt: Vec<String>,
    pub data: Vec<u8>,
    pub tls: bool,
    pub auth_user: Option<String>,
}

/// How the sink behaves; set before [`SmtpSink::start`].
#[derive(Default)]
pub struct SinkOptions {
    /// Offer STARTTLS with this certificate.
    pub starttls: Option<Arc<rustls::ServerConfig>>,
    /// Speak TLS from the first byte with this certificate.
    pub implicit_tls: Option<Arc<rustls::ServerConfig>>,
    /// Require AUTH with this user and password, offering these mechanisms.
    pub auth: Option<(String, String, &'static str)>,
    /// Replies to RCPT TO per address (default `250 2.1.5 ok`).
    pub rcpt_replies: HashMap<String, &'static str>,
}

#[derive(Default)]
struct State {
    script: VecDeque<Script>,
    received: Vec<Received>,
    commands: Vec<String>,
    connections: usize,
}

/// A running sink; it stops when dropped.
pub struct SmtpSink {
    pub port: u16,
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for SmtpSink {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl SmtpSink {
    pub async fn start(options: SinkOptions) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(State::default()));
        let options = Arc::new(options);
        let shared = Arc::clone(&state);
        let task = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                shared.lock().unwrap().connections += 1;
                let (state, options) = (Arc::clone(&shared), Arc::clone(&options));
                tokio::spawn(async move {
                    let _ = session(tcp, state, options).await;
                });
            }
        });
        Self { port, state, task }
    }

    /// Queues scripted behaviours for the next transactions, in order.
    pub fn script(&self, steps: impl IntoIterator<Item = Script>) {
        self.state.lock().unwrap().script.extend(steps);
    }

    pub fn received(&self) -> Vec<Received> {
        self.state.lock().unwrap().received.clone()
    }

    /// Every command verb seen, in order (`EHLO`, `MAIL`, `RSET`, ...; AUTH data hidden).
    pub fn commands(&self) -> Vec<String> {
        self.state.lock().unwrap().commands.clone()
    }

    pub fn connections(&self) -> usize {
        self.state.lock().unwrap().connections
    }
}

/// Ends a session: the connection is closed without a reply.
struct Hangup;

async fn session(
    tcp: TcpStream,
    state: Arc<Mutex<State>>,
    options: Arc<SinkOptions>,
) -> Result<(), Hangup> {
    let mut tls = false;
    let mut io: Box<dyn Io> = match &options.implicit_tls {
        Some(config) => {
            tls = true;
            let acceptor = tokio_rustls::TlsAcceptor::from(Arc::clone(config));
            Box::new(acceptor.accept(tcp).await.map_err(|_| Hangup)?)
        }
        None => Box::new(tcp),
    };
    let mut auth_user: Option<String> = None;
    let mut envelope: Option<(String, Vec<String>)> = None;
    let mut current: Option<Script> = None;
    let mut r = BufReader::new(io);
    send(&mut r, "220 sink.test ESMTP ready").await?;
    loop {
        let line = read_line(&mut r).await?;
        let upper = line.to_ascii_uppercase();
        let verb = upper.split_whitespace().next().unwrap_or("").to_string();
        state.lock().unwrap().commands.push(verb.clone());
        match verb.as_str() {
            "EHLO" | "HELO" => {
                let mut lines = vec!["250-sink.test", "250-PIPELINING", "250-8BITMIME"];
                if options.starttls.is_some() && !tls {
                    lines.push("250-STARTTLS");
                }
                let auth_line = options
                    .auth
                    .as_ref()
                    .map(|(_, _, m)| format!("250-AUTH {m}"));
                if let Some(a) = &auth_line {
                    lines.push(a);
                }
                lines.push("250 SMTPUTF8");
                send(&mut r, &lines.join("\r\n")).await?;
            }
            "STARTTLS" if options.starttls.is_some() && !tls => {
                send(&mut r, "220 2.0.0 go ahead").await?;
                let config = Arc::clone(options.starttls.as_ref().unwrap());
                io = r.into_inner();
                let acceptor = tokio_rustls::TlsAcceptor::from(config);
                r = BufReader::new(Box::new(acceptor.accept(io).await.map_err(|_| Hangup)?));
                tls = true;
            }
            "AUTH" => {
                let (user, pass, _) = options.auth.clone().ok_or(Hangup)?;
                let (got_user, got_pass) = auth(&mut r, &line).await?;
                if got_user == user && got_pass == pass {
                    auth_user = Some(got_user);
                    send(&mut r, "235 2.7.0 authenticated").await?;
                } else {
                    send(&mut r, "535 5.7.8 authentication credentials invalid").await?;
                }
            }
            "MAIL" => {
                if options.auth.is_some() && auth_user.is_none() {
                    send(&mut r, "530 5.7.0 authentication required").await?;
                    continue;
                }
                current = state.lock().unwrap().script.pop_front();
                if let Some(Script::AtMail(reply)) = current {
                    send(&mut r, reply).await?;
                    continue;
                }
                envelope = Some((address_of(&line), Vec::new()));
                send(&mut r, "250 2.1.0 sender ok").await?;
            }
            "RCPT" => {
                let addr = address_of(&line);
                let reply = options
                    .rcpt_replies
                    .get(&addr)
                    .copied()
                    .unwrap_or("250 2.1.5 ok");
                if reply.starts_with('2') {
                    if let Some((_, rcpt)) = envelope.as_mut() {
                        rcpt.push(addr);
                    }
                }
                send(&mut r, reply).await?;
            }
            "DATA" => {
                if let Some(Script::AtData(reply)) = current {
                    send(&mut r, reply).await?;
                    continue;
                }
                send(&mut r, "354 end with <CRLF>.<CRLF>").await?;
                let data = read_data(&mut r, matches!(current, Some(Script::DropMidData))).await?;
                match current.take() {
                    Some(Script::AfterData(reply)) => send(&mut r, reply).await?,
                    Some(Script::HangAfterData) => {
                        tokio::time::sleep(Duration::from_secs(3600)).await;
                    }
                    other => {
                        let (from, rcpt) = envelope.take().unwrap_or_default();
                        state.lock().unwrap().received.push(Received {
                            from,
                            rcpt,
                            data,
                            tls,
                            auth_user: auth_user.clone(),
                        });
                        send(&mut r, "250 2.0.0 queued").await?;
                        if matches!(other, Some(Script::AcceptThenClose)) {
                            return Err(Hangup);
                        }
                    }
                }
                envelope = None;
            }
            "RSET" => {
                envelope = None;
                current = None;
                send(&mut r, "250 2.0.0 reset").await?;
            }
            "NOOP" => send(&mut r, "250 2.0.0 ok").await?,
            "QUIT" => {
                send(&mut r, "221 2.0.0 bye").await?;
                return Ok(());
            }
            _ => send(&mut r, "502 5.5.2 command not recognized").await?,
        }
    }
}

async fn send(r: &mut BufReader<Box<dyn Io>>, reply: &str) -> Result<(), Hangup> {
    let w = r.get_mut();
    w.write_all(format!("{reply}\r\n").as_bytes())
        .await
        .map_err(|_| Hangup)?;
    w.flush().await.map_err(|_| Hangup)
}

async fn read_line(r: &mut BufReader<Box<dyn Io>>) -> Result<String, Hangup> {
    let mut line = String::new();
    match r.read_line(&mut line).await {
        Ok(0) | Err(_) => Err(Hangup),
        Ok(_) => Ok(line.trim_end_matches(['\r', '\n']).to_string()),
    }
}

/// Reads the message data up to `.` alone on a line, undoing dot-stuffing; with `drop`,
/// hangs up after the first line.
async fn read_data(r: &mut BufReader<Box<dyn Io>>, drop: bool) -> Result<Vec<u8>, Hangup> {
    let mut data = Vec::new();
    loop {
        let mut line = Vec::new();
        if r.read_until(b'\n', &mut line).await.map_err(|_| Hangup)? == 0 {
            return Err(Hangup);
        }
        if drop {
            return Err(Hangup);
        }
        if line == b".\r\n" {
            return Ok(data);
        }
        let line = if line.starts_with(b"..") {
            &line[1..]
        } else {
            &line[..]
        };
        data.extend_from_slice(line);
    }
}

/// `MAIL FROM:<a@b> ...` → `a@b`.
fn address_of(line: &str) -> String {
    let start = line.find('<').map_or(0, |i| i + 1);
    let end = line[start..].find('>').map_or(line.len(), |i| start + i);
    line[start..end].to_string()
}

/// Runs AUTH PLAIN or AUTH LOGIN; returns (user, password) as the client sent them.
async fn auth(r: &mut BufReader<Box<dyn Io>>, line: &str) -> Result<(String, String), Hangup> {
    let b64 = |s: &str| {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(s.trim())
            .unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    let mut words = line.split_whitespace().skip(1);
    let mechanism = words.next().unwrap_or("").to_ascii_uppercase();
    let initial = words.next().map(str::to_string);
    match mechanism.as_str() {
        "PLAIN" => {
            let encoded = match initial {
                Some(s) => s,
                None => {
                    send(r, "334 ").await?;
                    read_line(r).await?
                }
            };
            let decoded = b64(&encoded);
            let mut parts = decoded.split('\0').skip(1);
            let user = parts.next().unwrap_or("").to_string();
            Ok((user, parts.next().unwrap_or("").to_string()))
        }
        "LOGIN" => {
            let user = match initial {
                Some(s) => b64(&s),
                None => {
                    send(r, "334 VXNlcm5hbWU6").await?;
                    b64(&read_line(r).await?)
                }
            };
            send(r, "334 UGFzc3dvcmQ6").await?;
            Ok((user, b64(&read_line(r).await?)))
        }
        _ => Ok((String::new(), String::new())),
    }
}
