//! Outgoing webhooks on every database, against real receivers on loopback:
//!
//! * a Python receiver that verifies each delivery with Standard Webhooks' own Python
//!   package (HMAC, `v1`) and PyNaCl (Ed25519, `v1a`), during a key rotation;
//! * an axum receiver that answers `410 Gone` (the endpoint is disabled, its messages parked
//!   and sent once it is enabled), `429` with `Retry-After` (the host slowed, no attempt),
//!   no answer in time, headers without their body, a 10 MB body (the log keeps 4 KB), and
//!   an address the policy refuses (a dead letter naming it);
//! * a receiver down for 30 s: the host's site suspended, probes at doubling intervals, no
//!   attempt spent, every message delivered once it is back.

use std::{
    collections::{BTreeMap, HashMap},
    io::{BufRead, BufReader, Write},
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use axum::{
    body::{Body, Bytes},
    extract::{Path, State},
    http::{HeaderMap, StatusCode},
    response::Response,
    routing::post,
    Router,
};
use outbox::{
    prelude::*,
    store::{Now, ShapingStore},
    webhook::{
        AddressPolicy, SigningKey, Webhook, WebhookClient, WebhookEndpoints, WebhookSender,
        WEBHOOK_TYPE,
    },
    DeadLetterFilter, Retention, RetrySchedule, Shaping,
};

use super::{cases::eventually, harness::Harness};

/// A client that may reach the receivers on 127.0.0.1 over plain HTTP, and nothing else
/// the default policy refuses.
fn client(request_timeout: Duration) -> WebhookClient {
    WebhookClient::builder()
        .policy(
            AddressPolicy::new()
                .allow("127.0.0.1/32".parse().unwrap())
                .allow_http(true),
        )
        .request_timeout(request_timeout)
        .build()
        .unwrap()
}

/// The Python receiver, its port, and what it printed (one JSON line per delivery).
struct PythonReceiver {
    child: Child,
    port: u16,
    lines: Arc<Mutex<Vec<serde_json::Value>>>,
}

impl PythonReceiver {
    fn start(keys: &BTreeMap<String, Vec<String>>) -> Self {
        let dir = tempfile::tempdir().unwrap().keep();
        let config = dir.join("config.json");
        std::fs::write(&config, serde_json::json!({ "keys": keys }).to_string()).unwrap();
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tools/webhook_receiver.py");
        let mut child = Command::new("python3")
            .arg(script)
            .arg(&config)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the webhook receiver (scripts/test.sh installs its modules)");
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        out.read_line(&mut first).unwrap();
        let port: u16 = first.trim().parse().unwrap_or_else(|_| {
            panic!(
                "the Python receiver did not start (pip install standardwebhooks==1.1.0 pynacl): {first:?}"
            )
        });
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&lines);
        std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str(&line) {
                    sink.lock().unwrap().push(v);
                }
            }
        });
        Self { child, port, lines }
    }

    fn deliveries(&self) -> Vec<serde_json::Value> {
        self.lines.lock().unwrap().clone()
    }
}

impl Drop for PythonReceiver {
    fn drop(&mut self) {
        if let Some(mut stdin) = self.child.stdin.take() {
            let _ = stdin.write_all(b"");
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every delivery verified by the reference libraries: an HMAC endpoint in the middle of
/// a rotation (the receiver knows only the old secret), another whose receiver knows only
/// the new one, and an Ed25519 endpoint; `webhook-id` is the outbox id, the body holds the
/// event type and data.
pub async fn webhooks_are_verified_by_the_reference_libraries_during_a_rotation<H: Harness>() {
    let h = H::new().await;
    let outbox_admin = Outbox::new(h.backend()).admin();
    let endpoints = WebhookEndpoints::new(&outbox_admin);
    // Created first against a placeholder URL: the receiver needs the keys to start.
    let old = endpoints
        .create("old-key", "http://127.0.0.1:9/")
        .await
        .unwrap();
    let new = endpoints.rotate("old-key").await.unwrap();
    endpoints
        .create("new-key", "http://127.0.0.1:9/")
        .await
        .unwrap();
    let newest = endpoints.rotate("new-key").await.unwrap();
    let ed = endpoints
        .create_with(
            "ed25519",
            "http://127.0.0.1:9/",
            SigningKey::generate_ed25519(),
        )
        .await
        .unwrap();
    assert!(old.verify_with.starts_with("whsec_") && ed.verify_with.starts_with("whpk_"));
    assert_ne!(old.verify_with, new.verify_with);
    let keys = BTreeMap::from([
        ("/old-key".to_owned(), vec![old.verify_with.clone()]),
        ("/new-key".to_owned(), vec![newest.verify_with.clone()]),
        ("/ed25519".to_owned(), vec![ed.verify_with.clone()]),
    ]);
    let receiver = PythonReceiver::start(&keys);
    for name in ["old-key", "new-key", "ed25519"] {
        let url = format!("http://127.0.0.1:{}/{name}", receiver.port);
        endpoints.set_url(name, &url).await.unwrap();
    }

    let mut ids = HashMap::new();
    let mut tx = h.pool().begin().await.unwrap();
    for name in ["old-key", "new-key", "ed25519"] {
        let endpoint = endpoints.get(name).await.unwrap().unwrap();
        assert_eq!(
            endpoint.secrets.len(),
            if name == "ed25519" { 1 } else { 2 }
        );
        for i in 0..5 {
            let event = Webhook::new(&endpoint, "invoice.paid", serde_json::json!({ "n": i }));
            let id = event.enqueue(&mut *tx).await.unwrap().id().to_string();
            ids.insert(id, (name, i));
        }
    }
    tx.commit().await.unwrap();

    let sender = WebhookSender::new(&outbox_admin, client(Duration::from_secs(5)));
    let outbox = Outbox::new(h.backend())
        .shaping(Shaping::new())
        .register::<Webhook, _>(sender);
    outbox
        .run_until(async {
            let done = eventually(Duration::from_secs(60), || async {
                receiver.deliveries().len() >= 15
            })
            .await;
            assert!(done, "{} of 15 deliveries", receiver.deliveries().len());
        })
        .await
        .unwrap();

    let deliveries = receiver.deliveries();
    assert_eq!(deliveries.len(), 15, "{deliveries:#?}");
    for d in &deliveries {
        assert_eq!(d["verified"], true, "refused by the reference library: {d}");
        let id = d["id"].as_str().unwrap();
        let (name, i) = ids
            .get(id)
            .unwrap_or_else(|| panic!("webhook-id {id} is an outbox id"));
        assert_eq!(d["path"], format!("/{name}"));
        let body: serde_json::Value = serde_json::from_str(d["body"].as_str().unwrap()).unwrap();
        assert_eq!(body["type"], "invoice.paid");
        assert_eq!(body["data"]["n"], *i);
        assert!(body["timestamp"].as_str().unwrap().ends_with('Z'), "{body}");
    }
    let unique: std::collections::HashSet<_> = deliveries.iter().map(|d| d["id"].clone()).collect();
    assert_eq!(unique.len(), 15, "each message once");
}

/// What the axum receiver answers on each path, and what it saw.
#[derive(Clone, Default)]
struct Receiver {
    /// Calls per path.
    calls: Arc<Mutex<HashMap<String, usize>>>,
    /// Paths that answer 410 while set.
    gone: Arc<Mutex<bool>>,
    /// Deliveries that got a 2xx, per path.
    delivered: Arc<Mutex<HashMap<String, usize>>>,
    /// The `data.n` of each delivery that got a 2xx on `ordered`, in arrival order.
    ordered: Arc<Mutex<Vec<i64>>>,
}

async fn receive(
    State(r): State<Receiver>,
    Path(path): Path<String>,
    _headers: HeaderMap,
    body: Bytes,
) -> Response {
    let call = {
        let mut calls = r.calls.lock().unwrap();
        let n = calls.entry(path.clone()).or_default();
        *n += 1;
        *n
    };
    let ok = |r: &Receiver| {
        *r.delivered.lock().unwrap().entry(path.clone()).or_default() += 1;
        Response::builder().status(204).body(Body::empty()).unwrap()
    };
    match path.as_str() {
        "gone" if *r.gone.lock().unwrap() => Response::builder()
            .status(StatusCode::GONE)
            .body(Body::from("this endpoint was deleted"))
            .unwrap(),
        "throttled" if call == 1 => Response::builder()
            .status(StatusCode::TOO_MANY_REQUESTS)
            .header("retry-after", "2")
            .body(Body::from("slow down"))
            .unwrap(),
        "slow" if call == 1 => {
            tokio::time::sleep(Duration::from_secs(5)).await;
            ok(&r)
        }
        "headers-only" if call == 1 => Response::builder()
            .status(200)
            .header("content-length", "100")
            .body(Body::from_stream(futures::stream::once(async {
                tokio::time::sleep(Duration::from_secs(30)).await;
                Ok::<_, std::io::Error>(Bytes::new())
            })))
            .unwrap(),
        // The first delivery fails: the later events of the ordered endpoint wait for it.
        "ordered" if call == 1 => Response::builder()
            .status(StatusCode::SERVICE_UNAVAILABLE)
            .body(Body::from("warming up"))
            .unwrap(),
        "ordered" => {
            let event: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            let n = event["data"]["n"].as_i64().unwrap_or(-1);
            r.ordered.lock().unwrap().push(n);
            ok(&r)
        }
        "broken" => Response::builder()
            .status(StatusCode::INTERNAL_SERVER_ERROR)
            .body(Body::from("database is down"))
            .unwrap(),
        "big" => {
            // 10 MB, refused: the attempt log keeps 4 KB of it.
            let chunks = (0..160).map(|_| Ok::<_, std::io::Error>(Bytes::from(vec![b'x'; 65_536])));
            Response::builder()
                .status(StatusCode::UNPROCESSABLE_ENTITY)
                .body(Body::from_stream(futures::stream::iter(chunks)))
                .unwrap()
        }
        _ => ok(&r),
    }
}

async fn start_receiver(r: Receiver) -> u16 {
    let app = Router::new().route("/{path}", post(receive)).with_state(r);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    port
}

/// `410 Gone` disables the endpoint and parks its messages (no dead letter, queued in
/// their paused group); enabling it sends them. `429` with `Retry-After` slows the host
/// without an attempt; a receiver that does not answer in time, or sends headers without
/// their body, costs an attempt and is tried again; a 10 MB refusal is a dead letter whose
/// log keeps 4 KB; an address the policy refuses is a dead letter naming it. A delivered
/// event kept for the retention window is replayed.
pub async fn webhook_answers_are_classified<H: Harness>() {
    let r = Receiver::default();
    *r.gone.lock().unwrap() = true;
    let port = start_receiver(r.clone()).await;
    let h = H::new().await;
    let admin = Outbox::new(h.backend()).admin();
    let endpoints = WebhookEndpoints::new(&admin);
    for name in ["gone", "throttled", "slow", "headers-only", "big"] {
        let url = format!("http://127.0.0.1:{port}/{name}");
        endpoints.create(name, &url).await.unwrap();
    }
    endpoints
        .create("metadata", "http://169.254.169.254/latest/meta-data/")
        .await
        .unwrap();

    let mut ids: HashMap<&str, Vec<String>> = HashMap::new();
    let mut tx = h.pool().begin().await.unwrap();
    for name in [
        "gone",
        "gone",
        "gone",
        "throttled",
        "slow",
        "headers-only",
        "big",
        "metadata",
    ] {
        let endpoint = endpoints.get(name).await.unwrap().unwrap();
        let event = Webhook::new(&endpoint, "order.shipped", serde_json::json!({}));
        let id = event.enqueue(&mut *tx).await.unwrap().id().to_string();
        ids.entry(name).or_default().push(id);
    }
    tx.commit().await.unwrap();

    let sender = WebhookSender::new(&admin, client(Duration::from_secs(1)));
    let outbox = Outbox::new(h.backend())
        .retention(Retention::keep_for(Duration::from_secs(3600)))
        .shaping(Shaping::new())
        .register_with::<Webhook, _>(
            sender,
            QueueOptions::new()
                .concurrency(8)
                .retry(RetrySchedule::fixed([Duration::from_millis(500)])),
        );
    let delivered = |name: &'static str| {
        let r = r.clone();
        move || {
            let r = r.clone();
            async move { r.delivered.lock().unwrap().get(name).copied().unwrap_or(0) > 0 }
        }
    };
    outbox
        .run_until(async {
            for name in ["throttled", "slow", "headers-only"] {
                let done = eventually(Duration::from_secs(30), delivered(name)).await;
                assert!(done, "`{name}` delivered after its first answer");
            }
            let disabled = eventually(Duration::from_secs(10), || async {
                endpoints
                    .get("gone")
                    .await
                    .unwrap()
                    .is_some_and(|e| !e.is_enabled())
            })
            .await;
            assert!(disabled, "410 disables the endpoint");
            let dead = eventually(Duration::from_secs(10), || async {
                admin
                    .dead_letters()
                    .count(&DeadLetterFilter::all())
                    .await
                    .unwrap()
                    == 2
            })
            .await;
            assert!(
                dead,
                "the 10 MB refusal and the refused address are dead letters"
            );
            // Parked: in their paused group, not dead.
            let group = admin.groups().show("webhook:gone").await.unwrap().unwrap();
            assert!(group.is_paused(), "{group:?}");
            assert_eq!(group.remaining(), 3, "{group:?}");
            let calls = r.calls.lock().unwrap().get("gone").copied().unwrap_or(0);
            // Then the receiver comes back and the endpoint is enabled: the three are sent.
            *r.gone.lock().unwrap() = false;
            assert!(endpoints.enable("gone").await.unwrap());
            let sent = eventually(Duration::from_secs(20), || async {
                r.delivered
                    .lock()
                    .unwrap()
                    .get("gone")
                    .copied()
                    .unwrap_or(0)
                    == 3
            })
            .await;
            assert!(sent, "enabled, the parked messages go out");
            assert!(calls >= 1, "the 410 came from the receiver");
            // A replay sends what was delivered again (kept for the retention window).
            let replayed = endpoints.replay("slow", None, None).await.unwrap();
            assert_eq!(replayed, 1);
            let again = eventually(Duration::from_secs(10), || async {
                r.delivered.lock().unwrap().get("slow").copied() == Some(2)
            })
            .await;
            assert!(again, "the replayed event arrives again");
        })
        .await
        .unwrap();

    let attempts = |name: &'static str| ids[name].clone();
    for id in attempts("throttled") {
        assert_eq!(h.attempts(&id).await, 1, "a 429 is not an attempt");
    }
    for name in ["slow", "headers-only"] {
        // `slow` was replayed after its delivery: its attempts started over.
        let want = if name == "slow" { 1 } else { 2 };
        for id in attempts(name) {
            assert_eq!(
                h.attempts(&id).await,
                want,
                "`{name}`: the timeout was an attempt"
            );
        }
    }
    let dead = admin
        .dead_letters()
        .list(&DeadLetterFilter::all(), 0, 10)
        .await
        .unwrap();
    let big = dead
        .iter()
        .find(|d| d.id.to_string() == ids["big"][0])
        .expect("the refusal with a 10 MB body is a dead letter");
    assert!(
        big.last_error
            .starts_with("HTTP 422 from http://127.0.0.1:"),
        "{}",
        big.last_error
    );
    assert!(
        big.last_error.contains("body (4096 bytes, cut)"),
        "{}",
        big.last_error
    );
    assert!(
        big.last_error.len() < 5_000,
        "{} bytes kept",
        big.last_error.len()
    );
    let refused = dead
        .iter()
        .find(|d| d.id.to_string() == ids["metadata"][0])
        .expect("the metadata address is a dead letter");
    assert!(
        refused.last_error.contains("169.254.169.254"),
        "{}",
        refused.last_error
    );
    let throttled = h.backend().sites(Now::Database).await.unwrap();
    let site = throttled
        .iter()
        .find(|s| s.site == format!("127.0.0.1:{port}"))
        .expect("the receiver's host is a site");
    assert!(
        site.reason.as_deref().unwrap_or("").contains("429"),
        "the 429 slowed the host: {site:?}"
    );
    assert_eq!(
        h.count_messages(WEBHOOK_TYPE).await,
        6,
        "the 6 delivered, kept for the retention window (the 2 dead letters are in their table)"
    );
}

/// A receiver that is down for 30 s: its host's site is suspended (the breaker per
/// destination), probed at doubling intervals, no attempt spent; once it is back every
/// message arrives, once.
pub async fn an_endpoint_down_for_30_seconds_costs_no_attempts<H: Harness>() {
    // A port nobody listens on until the receiver comes back on it.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let h = H::new().await;
    let admin = Outbox::new(h.backend()).admin();
    let endpoints = WebhookEndpoints::new(&admin);
    endpoints
        .create("later", &format!("http://127.0.0.1:{port}/later"))
        .await
        .unwrap();
    let endpoint = endpoints.get("later").await.unwrap().unwrap();
    let mut ids = Vec::new();
    let mut tx = h.pool().begin().await.unwrap();
    for i in 0..20 {
        let event = Webhook::new(&endpoint, "user.created", serde_json::json!({ "i": i }));
        ids.push(event.enqueue(&mut *tx).await.unwrap().id().to_string());
    }
    tx.commit().await.unwrap();

    let r = Receiver::default();
    let sender = WebhookSender::new(&admin, client(Duration::from_secs(5)));
    let outbox = Outbox::new(h.backend())
        .retention(Retention::keep_for(Duration::from_secs(3600)))
        .shaping(Shaping::new())
        .register_with::<Webhook, _>(sender, QueueOptions::new().concurrency(8));
    let started = Instant::now();
    outbox
        .run_until(async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            let sites = h.backend().sites(Now::Database).await.unwrap();
            let site = sites
                .iter()
                .find(|s| s.site == format!("127.0.0.1:{port}"))
                .expect("the down host's site is in the database");
            assert!(
                site.reason.as_deref().unwrap_or("").contains("refused"),
                "suspended for the refusals: {site:?}"
            );
            // Back on the same port.
            let app = Router::new()
                .route("/{path}", post(receive))
                .with_state(r.clone());
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
                .await
                .unwrap();
            tokio::spawn(async move { axum::serve(listener, app).await });
            let done = eventually(Duration::from_secs(90), || async {
                r.delivered
                    .lock()
                    .unwrap()
                    .get("later")
                    .copied()
                    .unwrap_or(0)
                    == 20
            })
            .await;
            assert!(done, "every message arrives once the receiver is back");
        })
        .await
        .unwrap();
    let counts = outbox.delivery_counts();
    assert_eq!(
        counts.failed_attempts, 0,
        "no attempt spent on the outage: {counts:?}"
    );
    assert_eq!(counts.given_up, 0, "{counts:?}");
    for id in &ids {
        assert_eq!(h.attempts(id).await, 1, "one attempt, the delivery ({id})");
    }
    assert_eq!(
        r.calls.lock().unwrap().get("later").copied(),
        Some(20),
        "each once"
    );
    println!(
        "{}: down 30 s, 20 webhooks delivered {:.1} s after the start, {} deferrals",
        H::NAME,
        started.elapsed().as_secs_f64(),
        counts.deferred
    );
}

/// An endpoint whose deliveries have only failed for longer than allowed (2 s here; five
/// days by default) is disabled with its reason, and its message parked in the paused
/// group, not a dead letter.
pub async fn an_endpoint_that_only_fails_is_disabled_after_the_allowed_time<H: Harness>() {
    let r = Receiver::default();
    let port = start_receiver(r.clone()).await;
    let h = H::new().await;
    let admin = Outbox::new(h.backend()).admin();
    let endpoints = WebhookEndpoints::new(&admin);
    let url = format!("http://127.0.0.1:{port}/broken");
    endpoints.create("broken", &url).await.unwrap();
    let endpoint = endpoints.get("broken").await.unwrap().unwrap();
    let mut tx = h.pool().begin().await.unwrap();
    let event = Webhook::new(&endpoint, "user.deleted", serde_json::json!({}));
    let options = outbox::EnqueueOptions::new().max_attempts(1_000);
    let id = event
        .enqueue_with(&mut *tx, options)
        .await
        .unwrap()
        .id()
        .to_string();
    tx.commit().await.unwrap();

    let sender = WebhookSender::new(&admin, client(Duration::from_secs(5)))
        .disable_after(Duration::from_secs(2));
    let outbox = Outbox::new(h.backend())
        .shaping(Shaping::new())
        .register_with::<Webhook, _>(
            sender,
            QueueOptions::new().retry(RetrySchedule::fixed([Duration::from_millis(300)])),
        );
    outbox
        .run_until(async {
            let disabled = eventually(Duration::from_secs(20), || async {
                endpoints
                    .get("broken")
                    .await
                    .unwrap()
                    .is_some_and(|e| !e.is_enabled())
            })
            .await;
            assert!(disabled, "the failing endpoint is disabled");
            // Parked: its group paused, the message still queued.
            let parked = eventually(Duration::from_secs(5), || async {
                admin
                    .groups()
                    .show("webhook:broken")
                    .await
                    .unwrap()
                    .is_some_and(|g| g.is_paused() && g.remaining() == 1)
            })
            .await;
            assert!(parked, "its message waits in the paused group");
        })
        .await
        .unwrap();
    let e = endpoints.get("broken").await.unwrap().unwrap();
    let (_, reason) = e.disabled.expect("disabled");
    assert!(reason.contains("every delivery failed for"), "{reason}");
    assert_eq!(
        admin
            .dead_letters()
            .count(&DeadLetterFilter::all())
            .await
            .unwrap(),
        0
    );
    let calls = r.calls.lock().unwrap().get("broken").copied().unwrap_or(0);
    assert!(
        calls >= 3,
        "it was tried for the allowed time: {calls} calls"
    );
    assert!(h.attempts(&id).await >= 3);
}

/// An ordered endpoint gets its events one at a time in enqueue order: the first one's
/// failure (a 503) holds the others until its retry is delivered.
pub async fn an_ordered_endpoint_gets_its_events_in_order<H: Harness>() {
    let r = Receiver::default();
    let port = start_receiver(r.clone()).await;
    let h = H::new().await;
    let admin = Outbox::new(h.backend()).admin();
    let endpoints = WebhookEndpoints::new(&admin);
    endpoints
        .create("ordered", &format!("http://127.0.0.1:{port}/ordered"))
        .await
        .unwrap();
    endpoints.set_ordered("ordered", true).await.unwrap();
    let endpoint = endpoints.get("ordered").await.unwrap().unwrap();
    assert!(endpoint.ordered);
    let mut tx = h.pool().begin().await.unwrap();
    for n in 0..10 {
        let event = Webhook::new(&endpoint, "ledger.entry", serde_json::json!({ "n": n }));
        let _queued = event.enqueue(&mut *tx).await.unwrap();
    }
    tx.commit().await.unwrap();
    let sender = WebhookSender::new(&admin, client(Duration::from_secs(5)));
    let outbox = Outbox::new(h.backend())
        .shaping(Shaping::new())
        .register_with::<Webhook, _>(
            sender,
            QueueOptions::new()
                .concurrency(8)
                .retry(RetrySchedule::fixed([Duration::from_millis(300)])),
        );
    outbox
        .run_until(async {
            let done = eventually(Duration::from_secs(30), || async {
                r.ordered.lock().unwrap().len() == 10
            })
            .await;
            assert!(done, "{:?}", r.ordered.lock().unwrap());
        })
        .await
        .unwrap();
    assert_eq!(*r.ordered.lock().unwrap(), (0..10).collect::<Vec<i64>>());
}
