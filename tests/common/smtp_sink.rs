//! A small SMTP server on loopback for the SMTP tests: real SMTP over TCP (EHLO, STARTTLS
//! or implicit TLS with a certificate made at test time, AUTH PLAIN/LOGIN, MAIL, RCPT,
//! DATA, RSET, NOOP, QUIT) with scriptable replies, recording what arrived.
//!
//! Besides scripted replies it has a seeded chaos mode ([`Chaos`]: random 451s, dropped
//! connections, lost 250 replies, stateful 5xx), replies per recipient domain, and an
//! outage switch ([`SmtpSink::outage`]: the listener closes and every session is cut, then
//! it comes back on the same port).
#![allow(dead_code)]

use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use base64::Engine as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::{
    io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader},
    net::{TcpListener, TcpStream},
    sync::{mpsc, oneshot, watch},
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
    /// Like `AfterData`, but keep the transaction open, as some servers do after a
    /// failure: the next `MAIL FROM` without `RSET` gets `503 nested MAIL command`.
    AfterDataKeepState(&'static str),
    /// Answer each RCPT TO of this transaction with this reply line.
    AtRcpt(&'static str),
    /// Read part of the message data, then close the connection without a reply.
    DropMidData,
    /// Read the message data, then close the connection without a reply; the message is
    /// not taken.
    DropAfterData,
    /// Read the message data, then never answer (until the client hangs up).
    HangAfterData,
    /// Accept the message, then close the connection (a server ending idle sessions).
    AcceptThenClose,
    /// Take the message (it is recorded as received), then close the connection before
    /// the `250` is sent: the reply is lost.
    LoseReply,
    /// Take the message (recorded as received), then never answer: the reply is lost.
    LoseReplyAndHang,
}

/// Seeded random faults, one fate drawn per transaction (at `MAIL FROM`) unless a
/// [`Script`] step is queued. Each field is the probability of that fault per transaction;
/// the rest are accepted.
///
/// A fate depends only on the seed, the envelope sender and how many transactions that
/// sender has opened so far: with one sender per message, each message meets the same
/// faults in the same order on every run, however the outbox schedules its attempts.
#[derive(Debug, Clone, Default)]
pub struct Chaos {
    pub seed: u64,
    /// `451` to `MAIL FROM`.
    pub temp_at_mail: f64,
    /// `451` to `RCPT TO`.
    pub temp_at_rcpt: f64,
    /// `451` to `DATA`.
    pub temp_at_data: f64,
    /// `451` after the message data.
    pub temp_after_data: f64,
    /// The connection closed in the middle of the message data.
    pub drop_mid_data: f64,
    /// The connection closed after the data, before the reply; the message is not taken.
    pub drop_before_reply: f64,
    /// The message is taken, then the connection closes before the `250` (a lost reply).
    pub lost_reply_close: f64,
    /// The message is taken, then the server never answers (a lost reply).
    pub lost_reply_hang: f64,
    /// `554` after the data, and the transaction is kept: `MAIL FROM` without `RSET` on
    /// that connection gets `503 nested MAIL command`.
    pub stateful_5xx: f64,
}

/// A fault the sink injected (scripted or drawn by [`Chaos`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Fault {
    TempAtMail,
    TempAtRcpt,
    TempAtData,
    TempAfterData,
    DropMidData,
    DropBeforeReply,
    LostReplyClose,
    LostReplyHang,
    Stateful5xx,
    /// A recipient refused by [`SinkOptions::rcpt_domain_replies`] with a 5xx.
    RefusedDomain,
}

impl Fault {
    /// The message was taken but the client never heard so: a duplicate is allowed.
    pub fn is_lost_reply(self) -> bool {
        matches!(self, Fault::LostReplyClose | Fault::LostReplyHang)
    }
}

/// One injected fault: what, in whose transaction, for which message (when the data had
/// been read).
#[derive(Debug, Clone)]
pub struct FaultEvent {
    pub fault: Fault,
    pub sender: String,
    pub message_id: Option<String>,
}

impl Chaos {
    /// The fate of `sender`'s `n`-th transaction (1-based).
    fn fate(&self, sender: &str, n: u64) -> Option<(Script, Fault)> {
        const TEMP: &str = "451 4.3.0 chaos: try again later";
        // FNV-1a: stable across runs and platforms, unlike the std hasher.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in self
            .seed
            .to_le_bytes()
            .iter()
            .chain(sender.as_bytes())
            .chain(&n.to_le_bytes())
        {
            h = (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        let mut draw = fastrand::Rng::with_seed(h).f64();
        let table = [
            (self.temp_at_mail, Script::AtMail(TEMP), Fault::TempAtMail),
            (self.temp_at_rcpt, Script::AtRcpt(TEMP), Fault::TempAtRcpt),
            (self.temp_at_data, Script::AtData(TEMP), Fault::TempAtData),
            (
                self.temp_after_data,
                Script::AfterData(TEMP),
                Fault::TempAfterData,
            ),
            (self.drop_mid_data, Script::DropMidData, Fault::DropMidData),
            (
                self.drop_before_reply,
                Script::DropAfterData,
                Fault::DropBeforeReply,
            ),
            (
                self.lost_reply_close,
                Script::LoseReply,
                Fault::LostReplyClose,
            ),
            (
                self.lost_reply_hang,
                Script::LoseReplyAndHang,
                Fault::LostReplyHang,
            ),
            (
                self.stateful_5xx,
                Script::AfterDataKeepState("554 5.6.0 chaos: message refused"),
                Fault::Stateful5xx,
            ),
        ];
        for (p, script, fault) in table {
            if draw < p {
                return Some((script, fault));
            }
            draw -= p;
        }
        None
    }
}

/// The fault a scripted step injects, for the record.
fn fault_of(script: &Script) -> Option<Fault> {
    Some(match script {
        Script::AtMail(r) if r.starts_with('4') => Fault::TempAtMail,
        Script::AtRcpt(r) if r.starts_with('4') => Fault::TempAtRcpt,
        Script::AtData(r) if r.starts_with('4') => Fault::TempAtData,
        Script::AfterData(r) if r.starts_with('4') => Fault::TempAfterData,
        Script::AfterDataKeepState(_) => Fault::Stateful5xx,
        Script::DropMidData => Fault::DropMidData,
        Script::DropAfterData | Script::HangAfterData => Fault::DropBeforeReply,
        Script::LoseReply => Fault::LostReplyClose,
        Script::LoseReplyAndHang => Fault::LostReplyHang,
        _ => return None,
    })
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
    /// The `Message-ID` header as written (`<...@...>`), if the message had one.
    pub message_id: Option<String>,
    /// The sink took the message but its `250` was never sent (a lost reply).
    pub lost_reply: bool,
    /// When the data was taken.
    pub at: Instant,
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
    /// Replies to RCPT TO per recipient domain (after `rcpt_replies`, before chaos).
    pub rcpt_domain_replies: HashMap<String, &'static str>,
    /// Seeded random faults for transactions that have no scripted step.
    pub chaos: Option<Chaos>,
    /// Receivers that rate-limit one recipient domain (after `rcpt_domain_replies`).
    pub rcpt_domain_throttles: HashMap<String, Throttle>,
}

/// A receiver's rate limit for one domain, as large providers answer: the first `free`
/// recipients are accepted, then one only when `gap` has passed since the last accepted;
/// the others get `reply` (a `421 4.7.28 ... rate limited`).
#[derive(Debug, Clone)]
pub struct Throttle {
    pub free: usize,
    pub gap: Duration,
    pub reply: &'static str,
}

#[derive(Default)]
struct State {
    script: VecDeque<Script>,
    received: Vec<Received>,
    commands: Vec<String>,
    connections: usize,
    faults: Vec<FaultEvent>,
    /// Transactions opened per envelope sender (the chaos key).
    senders: HashMap<String, u64>,
    outages: Vec<(Instant, Option<Instant>)>,
    /// Per throttled domain: recipients accepted and when the last was.
    throttles: HashMap<String, (usize, Option<Instant>)>,
    /// The recipients a throttle refused, and when.
    throttled: Vec<(String, Instant)>,
}

/// A request to go down for a while; answered once the listener is closed.
type OutageRequest = (Duration, oneshot::Sender<()>);

/// A running sink; it stops when dropped.
pub struct SmtpSink {
    pub port: u16,
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
    control: mpsc::UnboundedSender<OutageRequest>,
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
        let (control, mut requests) = mpsc::unbounded_channel::<OutageRequest>();
        // Bumped to cut every open session; dropped with the task, which cuts them too.
        let (cut, _) = watch::channel(0u64);
        let task = tokio::spawn(async move {
            let mut listener = listener;
            loop {
                let event = tokio::select! {
                    accepted = listener.accept() => Ok(accepted),
                    request = requests.recv() => Err(request),
                };
                match event {
                    Ok(Ok((tcp, _))) => {
                        shared.lock().unwrap().connections += 1;
                        let (state, options) = (Arc::clone(&shared), Arc::clone(&options));
                        let mut cut = cut.subscribe();
                        tokio::spawn(async move {
                            tokio::select! {
                                _ = session(tcp, state, options) => {}
                                _ = cut.changed() => {}
                            }
                        });
                    }
                    Ok(Err(_)) => {}
                    Err(None) => return,
                    Err(Some((down_for, started))) => {
                        drop(listener);
                        cut.send_modify(|n| *n += 1);
                        shared.lock().unwrap().outages.push((Instant::now(), None));
                        let _ = started.send(());
                        tokio::time::sleep(down_for).await;
                        listener = rebind(port).await;
                        if let Some(last) = shared.lock().unwrap().outages.last_mut() {
                            last.1 = Some(Instant::now());
                        }
                    }
                }
            }
        });
        Self {
            port,
            state,
            task,
            control,
        }
    }

    /// Goes down for `down_for`: the listener is closed (connections are refused) and every
    /// open session is cut; then it listens again on the same port. Returns once it is
    /// down; [`outages`](Self::outages) tells when it came back.
    pub async fn outage(&self, down_for: Duration) {
        let (started, down) = oneshot::channel();
        self.control
            .send((down_for, started))
            .expect("the sink is running");
        down.await.expect("the sink went down");
    }

    /// Each outage: when it began, and when the sink listened again (if it has).
    pub fn outages(&self) -> Vec<(Instant, Option<Instant>)> {
        self.state.lock().unwrap().outages.clone()
    }

    /// Every fault injected, in order.
    pub fn faults(&self) -> Vec<FaultEvent> {
        self.state.lock().unwrap().faults.clone()
    }

    /// Queues scripted behaviours for the next transactions, in order.
    pub fn script(&self, steps: impl IntoIterator<Item = Script>) {
        self.state.lock().unwrap().script.extend(steps);
    }

    pub fn received(&self) -> Vec<Received> {
        self.state.lock().unwrap().received.clone()
    }

    /// Every command verb seen, in order (`EHLO`, `MAIL`, `RSET`, ...; AUTH data hidden).
    /// The recipients a [`Throttle`] refused, and when.
    pub fn throttled(&self) -> Vec<(String, Instant)> {
        self.state.lock().unwrap().throttled.clone()
    }

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
    let record = |fault: Fault, sender: &str, message_id: Option<String>| {
        state.lock().unwrap().faults.push(FaultEvent {
            fault,
            sender: sender.to_string(),
            message_id,
        });
    };
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
                if envelope.is_some() {
                    send(&mut r, "503 5.5.1 Error: nested MAIL command").await?;
                    continue;
                }
                let sender = address_of(&line);
                current = {
                    let mut state = state.lock().unwrap();
                    let n = state.senders.entry(sender.clone()).or_insert(0);
                    *n += 1;
                    let n = *n;
                    state.script.pop_front().or_else(|| {
                        let chaos = options.chaos.as_ref()?;
                        chaos.fate(&sender, n).map(|(script, _)| script)
                    })
                };
                if let Some(Script::AtMail(reply)) = current {
                    if let Some(fault) = current.as_ref().and_then(fault_of) {
                        record(fault, &sender, None);
                    }
                    send(&mut r, reply).await?;
                    continue;
                }
                envelope = Some((sender, Vec::new()));
                send(&mut r, "250 2.1.0 sender ok").await?;
            }
            "RCPT" => {
                let addr = address_of(&line);
                let domain = addr.rsplit_once('@').map_or("", |(_, d)| d);
                let sender = envelope
                    .as_ref()
                    .map_or("", |(s, _)| s.as_str())
                    .to_string();
                let reply = if let Some(reply) = options.rcpt_replies.get(&addr) {
                    reply
                } else if let Some(reply) = options.rcpt_domain_replies.get(domain) {
                    if reply.starts_with('5') {
                        record(Fault::RefusedDomain, &sender, None);
                    }
                    reply
                } else if let Some(throttle) = options.rcpt_domain_throttles.get(domain) {
                    let mut st = state.lock().unwrap();
                    let (accepted, last) = st.throttles.entry(domain.to_owned()).or_default();
                    let now = Instant::now();
                    if *accepted < throttle.free || last.is_some_and(|l| now - l >= throttle.gap) {
                        *accepted += 1;
                        *last = Some(now);
                        "250 2.1.5 ok"
                    } else {
                        st.throttled.push((addr.clone(), now));
                        throttle.reply
                    }
                } else if let Some(Script::AtRcpt(reply)) = current {
                    record(Fault::TempAtRcpt, &sender, None);
                    reply
                } else {
                    "250 2.1.5 ok"
                };
                if reply.starts_with('2') {
                    if let Some((_, rcpt)) = envelope.as_mut() {
                        rcpt.push(addr);
                    }
                }
                send(&mut r, reply).await?;
            }
            "DATA" => {
                let sender = envelope
                    .as_ref()
                    .map_or("", |(s, _)| s.as_str())
                    .to_string();
                if let Some(Script::AtData(reply)) = current {
                    if let Some(fault) = current.as_ref().and_then(fault_of) {
                        record(fault, &sender, None);
                    }
                    send(&mut r, reply).await?;
                    continue;
                }
                send(&mut r, "354 end with <CRLF>.<CRLF>").await?;
                let dropping = matches!(current, Some(Script::DropMidData));
                if dropping {
                    record(Fault::DropMidData, &sender, None);
                }
                let data = read_data(&mut r, dropping).await?;
                let message_id = message_id_of(&data);
                let script = current.take();
                if let Some(fault) = script.as_ref().and_then(fault_of) {
                    record(fault, &sender, message_id.clone());
                }
                match script {
                    Some(Script::AfterData(reply)) => send(&mut r, reply).await?,
                    Some(Script::AfterDataKeepState(reply)) => {
                        send(&mut r, reply).await?;
                        continue;
                    }
                    Some(Script::DropAfterData) => return Err(Hangup),
                    Some(Script::HangAfterData) => return hang(r).await,
                    other => {
                        let lost =
                            matches!(other, Some(Script::LoseReply | Script::LoseReplyAndHang));
                        let (from, rcpt) = envelope.take().unwrap_or_default();
                        state.lock().unwrap().received.push(Received {
                            from,
                            rcpt,
                            data,
                            tls,
                            auth_user: auth_user.clone(),
                            message_id,
                            lost_reply: lost,
                            at: Instant::now(),
                        });
                        match other {
                            Some(Script::LoseReply) => return Err(Hangup),
                            Some(Script::LoseReplyAndHang) => return hang(r).await,
                            _ => {}
                        }
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

/// Listens again on `port` after an outage (retrying briefly if the port is still busy).
async fn rebind(port: u16) -> TcpListener {
    for _ in 0..100 {
        match TcpListener::bind(("127.0.0.1", port)).await {
            Ok(listener) => return listener,
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    panic!("the sink could not listen on port {port} again after its outage");
}

/// Never answers again: reads and discards until the client hangs up.
async fn hang(mut r: BufReader<Box<dyn Io>>) -> Result<(), Hangup> {
    let _ = tokio::io::copy(&mut r, &mut tokio::io::sink()).await;
    Err(Hangup)
}

/// The `Message-ID` header of a message, as written (`<...@...>`).
fn message_id_of(data: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(data);
    let head = text.split("\r\n\r\n").next()?;
    let mut lines = head.split("\r\n").peekable();
    while let Some(line) = lines.next() {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        if name.eq_ignore_ascii_case("message-id") {
            let mut value = value.trim().to_string();
            while let Some(folded) = lines.next_if(|l| l.starts_with([' ', '\t'])) {
                value.push_str(folded.trim());
            }
            return Some(value);
        }
    }
    None
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
