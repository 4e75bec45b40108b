//! Outgoing webhooks (`outbox::webhook`) to a loopback receiver, beside a plain HTTP client
//! loop that signs each request the same way, at the same concurrency, in the same run.
//!
//! ```sh
//! cargo run --release -p outbox-bench --features webhook --bin webhook_bench -- \
//!     [webhooks] [--rounds 3] [--rate 200] [--seconds 10] [--signatures 100000] [--json FILE]
//! ```
//!
//! The receiver: hyper's HTTP/1.1 server (keep-alive) on its own thread and single-threaded
//! runtime, answering `204` as soon as a request's body is read; it counts requests and,
//! during the latency run, the arrival time of each `webhook-id`.
//!
//! Figures (webhooks per second, wall time, concurrency 32, `webhooks` per measure, default
//! 20,000; each the median of `--rounds` rounds, the measures of a round run one after the
//! other, so they alternate):
//!
//! * `plain`: hyper-util's pooled client (kept-alive connections, `TCP_NODELAY` as the
//!   webhook client sets it) POSTing the same ~300-byte body, each request signed with one
//!   HMAC key (Standard Webhooks, a fresh timestamp and id per request);
//! * `client`: the same through `WebhookClient::post` (the sender's transport: address
//!   policy, its own pool of at most 8 idle connections per host, by default) — no queue;
//! * `outbox`: webhooks enqueued on a SQLite file (1,000 per transaction, in their
//!   endpoint's group, as `Webhook::enqueue` does), then `drain()` with `WebhookSender` at
//!   concurrency 32 behind `Shaping::new()`; rate = webhooks / drain time;
//! * `outbox.idle32`: the same with `max_idle_per_host(32)` on the client;
//! * `noop`: the same queue and message type drained with a handler that does nothing (the
//!   queue's own cost).
//!
//! Each ratio to `plain` is the median of the rounds' own ratios. Beside each rate: the CPU
//! time per webhook (the whole process: clients, receiver and SQLite, from
//! `/proc/self/stat`), the cores each kind of thread kept busy (tokio's workers with the
//! main thread, sqlx's SQLite threads, the receiver) and the connections the receiver
//! accepted. `WEBHOOK_BENCH_ONLY=noop` runs `plain` and that one measure (for a profiler).
//!
//! Then the latency run (a running outbox; one webhook per transaction at `--rate` per
//! second for `--seconds`: commit → arrival at the receiver, p50/p99) and the signing cost
//! per signature (`Signer::headers` over the body: HMAC-SHA256, Ed25519, and two keys of
//! each, a rotation). Every figure also goes to `--json FILE` (default
//! `bench-results-webhook.json`) in the shape of the main bench's figures.

use std::{
    collections::HashMap,
    convert::Infallible,
    hint::black_box,
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use http_body_util::{BodyExt as _, Empty, Full};
use hyper::{
    body::{Bytes, Incoming},
    server::conn::http1,
    service::service_fn,
    Request, Response, StatusCode,
};
use hyper_util::{
    client::legacy::{connect::HttpConnector, Client},
    rt::{TokioExecutor, TokioIo},
};
use outbox::{
    prelude::*,
    webhook::{
        deliver::body_of,
        message::group_of,
        signature::{Signer, SigningKey, WebhookId},
        AddressPolicy, Webhook, WebhookClient, WebhookEndpoint, WebhookEndpoints, WebhookSender,
    },
    EnqueueOptions, Shaping, SqliteBackend,
};
use serde::Serialize;

const CONCURRENCY: usize = 32;
const EVENT_TYPE: &str = "invoice.paid";
const TARGET: f64 = 0.8;

/// What the receiver saw.
#[derive(Default)]
struct Seen {
    count: AtomicU64,
    connections: AtomicU64,
    recording: AtomicBool,
    arrivals: Mutex<Vec<(String, Instant)>>,
}

/// Starts the receiver on its own thread and runtime: its port and what it sees.
fn receiver() -> (u16, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let shared = Arc::clone(&seen);
    let (tx, rx) = std::sync::mpsc::channel();
    let thread = std::thread::Builder::new().name("receiver".into());
    thread
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                tx.send(listener.local_addr().unwrap().port()).unwrap();
                loop {
                    let Ok((tcp, _)) = listener.accept().await else {
                        continue;
                    };
                    let _ = tcp.set_nodelay(true);
                    shared.connections.fetch_add(1, Ordering::Relaxed);
                    let seen = Arc::clone(&shared);
                    tokio::spawn(async move {
                        let service = service_fn(move |request: Request<Incoming>| {
                            let seen = Arc::clone(&seen);
                            async move {
                                let at = Instant::now();
                                seen.count.fetch_add(1, Ordering::Relaxed);
                                if seen.recording.load(Ordering::Relaxed) {
                                    if let Some(id) = request.headers().get("webhook-id") {
                                        let id = id.to_str().unwrap_or("").to_owned();
                                        seen.arrivals.lock().unwrap().push((id, at));
                                    }
                                }
                                let _ = request.into_body().collect().await;
                                let mut answer = Response::new(Empty::<Bytes>::new());
                                *answer.status_mut() = StatusCode::NO_CONTENT;
                                Ok::<_, Infallible>(answer)
                            }
                        });
                        let _ = http1::Builder::new()
                            .serve_connection(TokioIo::new(tcp), service)
                            .await;
                    });
                }
            });
        })
        .expect("the receiver's thread");
    (rx.recv().unwrap(), seen)
}

/// The event's data: with the envelope, a body of about 300 bytes.
fn data(i: u64) -> serde_json::Value {
    serde_json::json!({
        "invoice": format!("in_{i:012}"),
        "customer": format!("cus_{:012}", i % 997),
        "amount_paid": 4200 + i % 100,
        "currency": "eur",
        "paid_at": "2026-11-29T10:00:00Z",
        "lines": [
            { "description": "Pro plan, monthly", "amount": 3900, "quantity": 1 },
            { "description": "Extra seat", "amount": 300, "quantity": 1 }
        ],
    })
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
}

/// User + system CPU time in a `/proc/…/stat` line.
fn stat_cpu(stat: &str) -> Duration {
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // Fields 14 and 15 (utime, stime), counted from the state (field 3) at index 0.
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

/// The threads whose CPU time is told apart.
const GROUPS: [&str; 3] = ["runtime", "SQLite", "receiver"];

/// CPU time so far: the whole process (`/proc/self/stat`), and its live threads by
/// [`GROUPS`]: tokio's workers and the main thread, sqlx's SQLite threads, the receiver.
#[derive(Clone, Copy)]
struct Cpu {
    total: Duration,
    groups: [Duration; 3],
}

fn cpu() -> Cpu {
    let mut groups = [Duration::ZERO; 3];
    for task in std::fs::read_dir("/proc/self/task").into_iter().flatten() {
        let Ok(task) = task else { continue };
        let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        let comm = stat.split_once('(').map_or("", |(_, rest)| rest);
        let group = if comm.starts_with("sqlx-sqlite") {
            1
        } else if comm.starts_with("receiver") {
            2
        } else {
            0
        };
        groups[group] += stat_cpu(&stat);
    }
    Cpu {
        total: stat_cpu(&std::fs::read_to_string("/proc/self/stat").unwrap_or_default()),
        groups,
    }
}

/// A measure's result: webhooks per second and CPU µs per webhook.
#[derive(Clone, Copy)]
struct Rate {
    per_second: f64,
    cpu_us: f64,
    /// Cores busy on average in each of [`GROUPS`].
    cores: [f64; 3],
    /// Connections the receiver accepted during the measure.
    connections: f64,
}

/// Runs `n` jobs, `CONCURRENCY` at a time.
async fn at_concurrency<F, Fut>(n: u64, job: F) -> Rate
where
    F: Fn(u64) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let job = Arc::new(job);
    let next = Arc::new(AtomicU64::new(0));
    let (started, cpu) = (Instant::now(), cpu());
    let workers: Vec<_> = (0..CONCURRENCY)
        .map(|_| {
            let (job, next) = (Arc::clone(&job), Arc::clone(&next));
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        break;
                    }
                    job(i).await;
                }
            })
        })
        .collect();
    for w in workers {
        w.await.expect("worker");
    }
    rate(n, started, cpu)
}

fn rate(n: u64, started: Instant, before: Cpu) -> Rate {
    let wall = started.elapsed().as_secs_f64();
    let after = cpu();
    let core = |g: usize| (after.groups[g].saturating_sub(before.groups[g])).as_secs_f64() / wall;
    Rate {
        per_second: n as f64 / wall,
        cpu_us: (after.total - before.total).as_secs_f64() * 1e6 / n as f64,
        cores: [core(0), core(1), core(2)],
        connections: 0.0,
    }
}

/// A 26-character id, as long as the outbox's (ULIDs).
fn webhook_id(i: u64) -> WebhookId {
    WebhookId::new(format!("msg_{i:022}")).unwrap()
}

/// The baseline: hyper-util's pooled client, each request signed as the sender signs.
async fn plain(port: u16, key: &SigningKey, body: &Bytes, n: u64) -> Rate {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(CONCURRENCY)
        .build(connector);
    let uri: hyper::Uri = format!("http://127.0.0.1:{port}/hooks").parse().unwrap();
    let signer = Arc::new(Signer::new(vec![key.clone()]).unwrap());
    let body = body.clone();
    at_concurrency(n, move |i| {
        let headers = signer
            .headers(&webhook_id(i), unix_now(), &body)
            .into_pairs();
        let mut request = Request::post(uri.clone())
            .header("content-type", "application/json")
            .header("user-agent", "outbox-webhook/bench");
        for (name, value) in headers {
            request = request.header(name, value);
        }
        let request = request.body(Full::new(body.clone())).unwrap();
        let client = client.clone();
        async move {
            let answer = client.request(request).await.expect("baseline request");
            assert_eq!(answer.status(), StatusCode::NO_CONTENT);
            answer.into_body().collect().await.expect("answer");
        }
    })
    .await
}

/// The webhook client alone, each request signed as the sender signs (no queue).
async fn client_only(endpoint: &WebhookEndpoint, key: &SigningKey, body: &Bytes, n: u64) -> Rate {
    let client = webhook_client(None);
    let url = endpoint.url.clone();
    let signer = Arc::new(Signer::new(vec![key.clone()]).unwrap());
    let body = body.clone();
    at_concurrency(n, move |i| {
        let headers = signer
            .headers(&webhook_id(i), unix_now(), &body)
            .into_pairs();
        let (client, url, body) = (client.clone(), url.clone(), body.clone());
        async move {
            let answer = client.post(&url, &headers, body).await.expect("post");
            assert_eq!(answer.status, 204);
        }
    })
    .await
}

/// The sender's client, allowed to reach loopback over plain HTTP.
fn webhook_client(max_idle: Option<usize>) -> WebhookClient {
    let mut builder = WebhookClient::builder().policy(
        AddressPolicy::new()
            .allow("127.0.0.1/32".parse().unwrap())
            .allow_http(true),
    );
    if let Some(max) = max_idle {
        builder = builder.max_idle_per_host(max);
    }
    builder.build().unwrap()
}

/// A fresh SQLite file with its endpoint at the receiver.
struct Queue {
    _dir: tempfile::TempDir,
    pool: outbox::sqlx::SqlitePool,
    backend: SqliteBackend,
    endpoint: WebhookEndpoint,
}

async fn queue(port: u16) -> Queue {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("bench.db").display());
    let pool = outbox::sqlite::connect(&url).await.unwrap();
    let backend = SqliteBackend::new(pool.clone());
    let outbox = Outbox::new(backend.clone());
    outbox.migrate().await.unwrap();
    let endpoints = WebhookEndpoints::new(&outbox.admin());
    endpoints
        .create("bench", &format!("http://127.0.0.1:{port}/hooks"))
        .await
        .unwrap();
    let endpoint = endpoints.get("bench").await.unwrap().unwrap();
    Queue {
        _dir: dir,
        pool,
        backend,
        endpoint,
    }
}

/// `n` webhooks enqueued 1,000 per transaction, in their endpoint's group.
async fn enqueue(q: &Queue, n: u64) {
    let events: Vec<Webhook> = (0..n)
        .map(|i| Webhook::new(&q.endpoint, EVENT_TYPE, data(i)))
        .collect();
    let options = EnqueueOptions::new().group(group_of(&q.endpoint.name));
    for chunk in events.chunks(1000) {
        let mut tx = q.pool.begin().await.unwrap();
        outbox::enqueue_many_with(&mut *tx, chunk, options.clone())
            .await
            .unwrap();
        tx.commit().await.unwrap();
    }
}

async fn noop(_: Webhook, _: MessageContext) -> Result<(), HandlerError> {
    Ok(())
}

/// How the queued webhooks are handled.
#[derive(Clone, Copy, PartialEq)]
enum Drain {
    Sender(Option<usize>),
    Noop,
}

/// `n` webhooks enqueued on a fresh SQLite file, then drained; the drain's rate.
async fn drained(port: u16, seen: &Seen, n: u64, how: Drain) -> Rate {
    let q = queue(port).await;
    enqueue(&q, n).await;
    let outbox = Outbox::new(q.backend.clone()).shaping(Shaping::new());
    let options = QueueOptions::new().concurrency(CONCURRENCY);
    let outbox = match how {
        Drain::Sender(max_idle) => {
            let sender = WebhookSender::new(&outbox.admin(), webhook_client(max_idle));
            outbox.register_with::<Webhook, _>(sender, options)
        }
        Drain::Noop => outbox.register_with::<Webhook, _>(noop, options),
    };
    let before = seen.count.load(Ordering::Relaxed);
    let (started, cpu) = (Instant::now(), cpu());
    let report = outbox.drain().await.unwrap();
    let rate = rate(n, started, cpu);
    assert_eq!(report.counts.delivered, n, "{report:?}");
    let received = seen.count.load(Ordering::Relaxed) - before;
    let expected = if how == Drain::Noop { 0 } else { n };
    assert_eq!(received, expected, "requests the receiver got");
    rate
}

/// Commit → arrival of webhooks committed one per transaction at `per_second` for
/// `seconds`, with the outbox running: p50, p99 and max in ms, webhooks arrived, committed.
async fn latency(
    port: u16,
    seen: &Seen,
    per_second: u64,
    seconds: u64,
) -> (f64, f64, f64, usize, usize) {
    let q = queue(port).await;
    let outbox = Outbox::new(q.backend.clone()).shaping(Shaping::new());
    let sender = WebhookSender::new(&outbox.admin(), webhook_client(None));
    let outbox =
        outbox.register_with::<Webhook, _>(sender, QueueOptions::new().concurrency(CONCURRENCY));
    seen.arrivals.lock().unwrap().clear();
    seen.recording.store(true, Ordering::Relaxed);
    let total = per_second * seconds;
    let committed = Mutex::new(HashMap::new());
    outbox
        .run_until(async {
            // The worker's first claim and the endpoint's first read, before the clock.
            tokio::time::sleep(Duration::from_millis(500)).await;
            let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / per_second as f64));
            for i in 0..total {
                tick.tick().await;
                let event = Webhook::new(&q.endpoint, EVENT_TYPE, data(i));
                let mut tx = q.pool.begin().await.unwrap();
                let id = event.enqueue(&mut *tx).await.unwrap().id().to_string();
                tx.commit().await.unwrap();
                committed.lock().unwrap().insert(id, Instant::now());
            }
            let deadline = Instant::now() + Duration::from_secs(10);
            while seen.arrivals.lock().unwrap().len() < total as usize && Instant::now() < deadline
            {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .unwrap();
    seen.recording.store(false, Ordering::Relaxed);
    let committed = committed.into_inner().unwrap();
    let arrivals = std::mem::take(&mut *seen.arrivals.lock().unwrap());
    let mut ms: Vec<f64> = arrivals
        .iter()
        .filter_map(|(id, at)| {
            let commit = committed.get(id)?;
            // An arrival seen before the enqueuer took its clock reading counts as 0.
            Some(at.saturating_duration_since(*commit).as_secs_f64() * 1e3)
        })
        .collect();
    ms.sort_by(f64::total_cmp);
    let pct = |p: f64| ms[((ms.len() as f64 * p).ceil() as usize).clamp(1, ms.len()) - 1];
    (
        pct(0.5),
        pct(0.99),
        *ms.last().unwrap(),
        ms.len(),
        committed.len(),
    )
}

/// µs per signature over `iterations` (`Signer::headers`, as the sender calls it).
fn signing(keys: Vec<SigningKey>, body: &[u8], iterations: u64) -> f64 {
    let signer = Signer::new(keys).unwrap();
    let id = webhook_id(1);
    let timestamp = unix_now();
    for _ in 0..iterations / 100 {
        black_box(signer.headers(&id, timestamp, body));
    }
    let started = Instant::now();
    for i in 0..iterations {
        black_box(signer.headers(black_box(&id), timestamp + (i & 1), black_box(body)));
    }
    started.elapsed().as_secs_f64() * 1e6 / iterations as f64
}

/// One figure, in the shape of the main bench's JSON.
#[derive(Serialize)]
struct Figure {
    workload: String,
    backend: &'static str,
    n: u64,
    value: f64,
    unit: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline_value: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ratio: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    target: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    met: Option<bool>,
    runs: Vec<f64>,
}

impl Figure {
    fn new(workload: &str, n: u64, runs: Vec<f64>, unit: &'static str) -> Self {
        Figure {
            workload: workload.into(),
            backend: "sqlite",
            n,
            value: median(&runs),
            unit,
            baseline: None,
            baseline_value: None,
            ratio: None,
            target: None,
            met: None,
            runs,
        }
    }
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

struct Args {
    n: u64,
    rounds: usize,
    rate: u64,
    seconds: u64,
    signatures: u64,
    json: String,
}

fn args() -> Args {
    let mut args = Args {
        n: 20_000,
        rounds: 3,
        rate: 200,
        seconds: 10,
        signatures: 100_000,
        json: "bench-results-webhook.json".into(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{a} takes a value"));
        match a.as_str() {
            "--rounds" => args.rounds = value().parse().expect("rounds"),
            "--rate" => args.rate = value().parse().expect("rate"),
            "--seconds" => args.seconds = value().parse().expect("seconds"),
            "--signatures" => args.signatures = value().parse().expect("signatures"),
            "--json" => args.json = value(),
            n => args.n = n.parse().expect("usage: webhook_bench [webhooks] [--rounds K] [--rate R] [--seconds S] [--signatures I] [--json FILE]"),
        }
    }
    args
}

#[tokio::main]
async fn main() {
    let args = args();
    let n = args.n;
    let (port, seen) = receiver();
    let key = SigningKey::generate_hmac();
    let endpoint = queue(port).await.endpoint;
    let sample = Webhook::new(&endpoint, EVENT_TYPE, data(123_456_789));
    let body = Bytes::from(body_of(&sample, Some(SystemTime::now())));
    println!(
        "{n} webhooks per measure, concurrency {CONCURRENCY}, body {} bytes, {} rounds; receiver on 127.0.0.1:{port}",
        body.len(),
        args.rounds
    );

    // Warm: the connections of a first client, the allocator, the page cache.
    plain(port, &key, &body, 2_000).await;

    const MEASURES: [&str; 5] = ["plain", "client", "outbox", "outbox.idle32", "noop"];
    let mut runs: HashMap<&str, Vec<Rate>> = HashMap::new();
    for round in 1..=args.rounds {
        let mut line = format!("round {round}:");
        // `WEBHOOK_BENCH_ONLY=noop` measures `plain` and that one (for a profiler).
        let only = std::env::var("WEBHOOK_BENCH_ONLY").ok();
        for m in MEASURES {
            if only.as_deref().is_some_and(|o| m != "plain" && m != o) {
                continue;
            }
            let opened = seen.connections.load(Ordering::Relaxed);
            let mut r = match m {
                "plain" => plain(port, &key, &body, n).await,
                "client" => client_only(&endpoint, &key, &body, n).await,
                "outbox" => drained(port, &seen, n, Drain::Sender(None)).await,
                "outbox.idle32" => drained(port, &seen, n, Drain::Sender(Some(32))).await,
                _ => drained(port, &seen, n, Drain::Noop).await,
            };
            r.connections = (seen.connections.load(Ordering::Relaxed) - opened) as f64;
            let [a, b, c] = r.cores;
            line += &format!(
                "\n  {m:<14} {:>6.0}/s  {:>5.1} µs CPU  cores {a:.2}/{b:.2}/{c:.2}  {:>5} connections",
                r.per_second, r.cpu_us, r.connections
            );
            runs.entry(m).or_default().push(r);
        }
        println!("{line}");
    }

    let mut figures = Vec::new();
    let plain_runs: Vec<f64> = runs["plain"].iter().map(|r| r.per_second).collect();
    let plain_median = median(&plain_runs);
    println!();
    println!(
        "| measure | webhooks/s | of plain (median of per-round ratios) | CPU µs per webhook | cores: {} | connections opened |",
        GROUPS.join(" / ")
    );
    println!("|---|---|---|---|---|---|");
    for m in MEASURES.into_iter().filter(|m| runs.contains_key(m)) {
        let rates: Vec<f64> = runs[m].iter().map(|r| r.per_second).collect();
        let cpu: Vec<f64> = runs[m].iter().map(|r| r.cpu_us).collect();
        let connections: Vec<f64> = runs[m].iter().map(|r| r.connections).collect();
        let cores: Vec<Figure> = (0..GROUPS.len())
            .map(|g| {
                let busy: Vec<f64> = runs[m].iter().map(|r| r.cores[g]).collect();
                Figure::new(
                    &format!("webhook.{m}.cores.{}", GROUPS[g]),
                    n,
                    busy,
                    "cores",
                )
            })
            .collect();
        let ratios: Vec<f64> = rates.iter().zip(&plain_runs).map(|(r, p)| r / p).collect();
        let ratio = median(&ratios);
        let mut f = Figure::new(&format!("webhook.{m}"), n, rates, "msgs/s");
        if m != "plain" {
            f.baseline = Some("webhook.plain");
            f.baseline_value = Some(plain_median);
            f.ratio = Some(ratio);
        }
        if m == "outbox" {
            f.target = Some(format!(">= {TARGET}"));
            f.met = Some(ratio >= TARGET);
        }
        println!(
            "| {m} | {:.0} | {} | {:.1} | {} | {:.0} |",
            f.value,
            if m == "plain" {
                "1.00".to_owned()
            } else {
                format!("{ratio:.2}")
            },
            median(&cpu),
            cores
                .iter()
                .map(|c| format!("{:.2}", c.value))
                .collect::<Vec<_>>()
                .join(" / "),
            median(&connections)
        );
        figures.push(f);
        figures.extend(cores);
        figures.push(Figure::new(&format!("webhook.{m}.cpu"), n, cpu, "us/msg"));
        figures.push(Figure::new(
            &format!("webhook.{m}.connections"),
            n,
            connections,
            "connections",
        ));
    }
    let outbox_ratio = figures
        .iter()
        .find(|f| f.workload == "webhook.outbox")
        .and_then(|f| f.ratio);
    if let Some(ratio) = outbox_ratio {
        let verdict = if ratio >= TARGET { "met" } else { "MISSED" };
        println!("outbox / plain = {ratio:.2} (target >= {TARGET}: {verdict})");
    }

    if args.seconds > 0 {
        let (p50, p99, max, delivered, sent) = latency(port, &seen, args.rate, args.seconds).await;
        println!(
            "latency, {} webhooks at {}/s, one per transaction: commit -> arrival p50 {p50:.2} ms, p99 {p99:.2} ms, max {max:.2} ms ({delivered} of {sent} arrived)",
            sent, args.rate
        );
        for (w, v) in [
            ("webhook.latency.p50", p50),
            ("webhook.latency.p99", p99),
            ("webhook.latency.max", max),
        ] {
            figures.push(Figure::new(w, sent as u64, vec![v], "ms"));
        }
    }

    if args.signatures > 0 {
        let body = body.to_vec();
        let i = args.signatures;
        let mut line = format!("signing, {} bytes, {i} signatures each:", body.len());
        let hmac: fn() -> SigningKey = SigningKey::generate_hmac;
        let ed25519: fn() -> SigningKey = SigningKey::generate_ed25519;
        let cases = [
            ("hmac", hmac, 1),
            ("ed25519", ed25519, 1),
            ("hmac.rotation", hmac, 2),
            ("ed25519.rotation", ed25519, 2),
        ];
        for (name, key, count) in cases {
            let keys = (0..count).map(|_| key()).collect();
            let us = signing(keys, &body, i);
            line += &format!(" {name} {us:.2} µs");
            figures.push(Figure::new(
                &format!("webhook.sign.{name}"),
                i,
                vec![us],
                "us",
            ));
        }
        println!("{line}");
    }

    std::fs::write(&args.json, serde_json::to_string_pretty(&figures).unwrap())
        .expect("write the JSON file");
    println!("figures written to {}", args.json);
}
