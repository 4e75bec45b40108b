//! A loopback stand-in for a provider's HTTP API, shared by the provider tests
//! (`tests/providers/`): an axum server on 127.0.0.1 that records each request (headers
//! and body) and answers it from a script,
//! counting the connections it accepted; and the outbox plumbing around it (enqueue on a
//! real SQLite file, run until a condition holds, and the four outcomes every API
//! transport shares: deferred without an attempt, breaker open, dead letter, retried).
//!
//! Included by `tests/providers/main.rs` beside `common`; each module there names the
//! provider reference its answers follow.
#![allow(dead_code)]

use std::{
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use axum::{
    body::Bytes,
    extract::State,
    http::{HeaderMap, HeaderName, HeaderValue, StatusCode},
    routing::post,
    Router,
};
use outbox::{
    prelude::*,
    smtp::{Email, Mailer},
    DeadLetterFilter, RetrySchedule,
};
use serde_json::Value;

use crate::common::{eventually, TestDb};

/// One request the stand-in received: its headers and body.
#[derive(Clone, Debug)]
pub struct Received {
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Received {
    /// The body as JSON (the test fails, showing the body, when it is not).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "the request is not JSON ({e}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// The value of header `name` (the test fails when it is missing).
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .unwrap_or_else(|| panic!("no header {name}: {:?}", self.headers))
            .to_str()
            .unwrap()
    }
}

/// What the stand-in answers a request with: the status, the body (sent as
/// `application/json`) and extra headers.
#[derive(Clone, Copy, Debug)]
pub struct Answer {
    pub status: u16,
    pub body: &'static str,
    pub headers: &'static [(&'static str, &'static str)],
}

impl Answer {
    /// `status` with `body` and no extra header.
    pub const fn new(status: u16, body: &'static str) -> Self {
        Self {
            status,
            body,
            headers: &[],
        }
    }

    /// The same answer with `headers` (`("retry-after", "120")`).
    pub const fn with_headers(self, headers: &'static [(&'static str, &'static str)]) -> Self {
        Self { headers, ..self }
    }
}

#[derive(Clone)]
struct Script {
    answers: Arc<Vec<Answer>>,
    received: Arc<Mutex<Vec<Received>>>,
}

async fn answer(
    State(script): State<Script>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, HeaderMap, String) {
    let n = {
        let mut received = script.received.lock().unwrap();
        received.push(Received {
            headers,
            body: body.to_vec(),
        });
        received.len() - 1
    };
    let answer = script.answers[n.min(script.answers.len() - 1)];
    let mut out = HeaderMap::new();
    out.insert("content-type", HeaderValue::from_static("application/json"));
    for (name, value) in answer.headers {
        out.insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
    (
        StatusCode::from_u16(answer.status).unwrap(),
        out,
        answer.body.to_owned(),
    )
}

/// A stand-in for a provider's API on 127.0.0.1.
pub struct Stand {
    /// The port it listens on.
    pub port: u16,
    received: Arc<Mutex<Vec<Received>>>,
    connections: Arc<AtomicUsize>,
}

impl Stand {
    /// Serves `POST path`: the first request gets `answers[0]`, the second `answers[1]`…,
    /// and every request after the last answer gets the last one again.
    pub async fn start(path: &str, answers: Vec<Answer>) -> Self {
        use axum::serve::ListenerExt as _;
        assert!(!answers.is_empty(), "a stand-in needs an answer");
        let received = Arc::new(Mutex::new(Vec::new()));
        let app = Router::new().route(path, post(answer)).with_state(Script {
            answers: Arc::new(answers),
            received: received.clone(),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let counter = connections.clone();
        let listener = listener.tap_io(move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
        });
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self {
            port,
            received,
            connections,
        }
    }

    /// [`start`](Self::start) with one answer for every request.
    pub async fn answering(path: &str, answer: Answer) -> Self {
        Self::start(path, vec![answer]).await
    }

    /// The requests received so far, in order.
    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    /// How many requests came.
    pub fn count(&self) -> usize {
        self.received.lock().unwrap().len()
    }

    /// How many connections it accepted.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

/// Enqueues `email` in its own transaction; its outbox id.
pub async fn enqueue(db: &TestDb, email: Email) -> String {
    let mut tx = db.pool.begin().await.unwrap();
    let id = email.enqueue(&mut *tx).await.unwrap().id().to_string();
    tx.commit().await.unwrap();
    id
}

/// An outbox sending `Email` through `mailer`; a retry waits an hour, so a retried
/// message is attempted once in a test.
pub fn outbox_for(db: &TestDb, mailer: &Mailer) -> Outbox<SqliteBackend> {
    Outbox::new(db.backend())
        .retention(outbox::Retention::keep_for(Duration::from_secs(3600)))
        .register_with::<Email, _>(
            mailer.handler(),
            QueueOptions::new().retry(RetrySchedule::fixed([Duration::from_secs(3600)])),
        )
}

/// Runs the outbox until `done` holds (at most 20 s; the test fails with `what`).
pub async fn run_until<F, Fut>(outbox: &Outbox<SqliteBackend>, what: &str, done: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    outbox
        .run_until(async {
            assert!(eventually(Duration::from_secs(20), done).await, "{what}");
        })
        .await
        .unwrap();
}

/// A plain email from the shop to `to`.
pub fn to_one(to: &str) -> Email {
    Email::builder()
        .from("Shop <shop@example.com>")
        .to(to)
        .subject("Your order")
        .text("Thanks")
        .build()
        .unwrap()
}

/// Sends one email through `mailer` to a stand-in that answers "too many requests":
/// checks that the message waits, queued, with no attempt used, was tried once and is
/// no dead letter; its recorded error.
pub async fn deferred_without_an_attempt(db: &TestDb, mailer: &Mailer, stand: &Stand) -> String {
    let id = enqueue(db, to_one("ann@example.org")).await;
    // No `Shaping` configured: the slow-down is a snooze of the provider's hint.
    let outbox = outbox_for(db, mailer);
    run_until(&outbox, "snoozed", || async {
        stand.count() > 0 && db.row(&id).await.2.is_some_and(|e| e.contains("429"))
    })
    .await;
    let (status, attempts, error) = db.row(&id).await;
    assert_eq!((status.as_str(), attempts), ("queued", 0), "{error:?}");
    assert_eq!(stand.count(), 1, "not tried again at once");
    let dead = outbox
        .admin()
        .dead_letters()
        .count(&DeadLetterFilter::all())
        .await
        .unwrap();
    assert_eq!(dead, 0);
    error.unwrap()
}

/// How long from now the one message in the queue waits before it is due (zero when it is
/// due already).
pub async fn waits_for(db: &TestDb) -> Duration {
    let due_ms: i64 = sqlx::query_scalar("SELECT due_at FROM outbox_messages")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    Duration::from_millis((due_ms - now_ms).max(0) as u64)
}

/// Sends one email through `mailer` to a stand-in that refuses its credentials: checks
/// that the breaker `breaker` opens and the message is no dead letter; the breaker's
/// reason.
pub async fn opens_the_breaker(db: &TestDb, mailer: &Mailer, breaker: &str) -> String {
    let id = enqueue(db, to_one("ann@example.org")).await;
    let outbox = outbox_for(db, mailer);
    let admin = outbox.admin();
    run_until(&outbox, "breaker opened", || async {
        admin
            .breakers()
            .await
            .unwrap()
            .iter()
            .any(|b| b.name == breaker && b.times_opened >= 1)
    })
    .await;
    let (status, _, _) = db.row(&id).await;
    assert_ne!(status, "dead", "an outage never makes a dead letter");
    let breakers = admin.breakers().await.unwrap();
    let found = breakers.iter().find(|b| b.name == breaker).unwrap();
    found.reason.clone().unwrap_or_default()
}

/// Sends one email through `mailer` to a stand-in that refuses the request: checks that
/// it was tried once and became the one dead letter; its last error.
pub async fn dead_letter(db: &TestDb, mailer: &Mailer, stand: &Stand) -> String {
    let id = enqueue(db, to_one("ann@example.org")).await;
    let outbox = outbox_for(db, mailer);
    let admin = outbox.admin();
    run_until(&outbox, "dead letter", || async {
        db.status(&id).await.is_none()
    })
    .await;
    assert_eq!(stand.count(), 1);
    let dead = admin
        .dead_letters()
        .list(&DeadLetterFilter::type_tag("outbox.email"), 0, 10)
        .await
        .unwrap();
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(dead[0].id.as_str(), id);
    dead[0].last_error.clone()
}

/// Sends one email through `mailer` to a stand-in that fails: checks that the message is
/// queued again with one attempt used, tried once; its recorded error.
pub async fn retried(db: &TestDb, mailer: &Mailer, stand: &Stand) -> String {
    let id = enqueue(db, to_one("ann@example.org")).await;
    let outbox = outbox_for(db, mailer);
    // The attempt is over once its error is recorded (while it runs, the claim already
    // counts it; stopping the outbox then would hand the attempt back).
    run_until(&outbox, "failed attempt", || async {
        let (status, attempts, error) = db.row(&id).await;
        status == "queued" && attempts == 1 && error.is_some()
    })
    .await;
    let (status, attempts, error) = db.row(&id).await;
    assert_eq!((status.as_str(), attempts), ("queued", 1));
    assert_eq!(stand.count(), 1);
    error.unwrap()
}
