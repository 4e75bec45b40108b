//! Email through the providers' HTTP APIs, each to a loopback stand-in that answers every
//! request as the provider's success answer, beside a plain HTTP client loop (hyper's
//! pooled client, keep-alive) replaying the very request our transport sent, at the same
//! concurrency, in the same run.
//!
//! ```sh
//! cargo run --release -p outbox-bench --features providers --bin provider_bench -- [emails] [rate-seconds]
//! ```
//!
//! Figures (emails per second, wall time, concurrency 16): `plain` (the baseline loop),
//! `transport` (`Mailer::deliver_now`: render, provider's request, answer classified),
//! `outbox` (enqueued on a SQLite file, drained through the worker with the mailer's
//! handler) and their ratios to `plain`. Then the rate run: SES under a shared
//! `RateLimit::per_second(100)` for `rate-seconds` (default 60), counting the requests
//! the stand-in received in each second.

use std::{
    collections::BTreeMap,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use axum::{body::Bytes, extract::State, http::HeaderMap, routing::post, Router};
use http_body_util::{BodyExt as _, Full};
use hyper_util::{client::legacy::Client, rt::TokioExecutor};
use outbox::{
    prelude::*,
    smtp::{Email, Mailer, MailerConfig, SesConfig},
    RateLimit, SqliteBackend,
};

const CONCURRENCY: usize = 16;

/// A provider's stand-in: where its API takes an email, and its success answer.
struct Provider {
    name: &'static str,
    path: &'static str,
    status: u16,
    body: &'static str,
    /// The mailer's settings for the stand-in on `port`.
    config: fn(u16) -> MailerConfig,
}

const PROVIDERS: &[Provider] = &[
    Provider {
        name: "postmark",
        path: "/email",
        status: 200,
        body: r#"{"To":"a@example.org","SubmittedAt":"2026-11-28T10:00:00Z","MessageID":"0a129aee-e1cd-480d-b08d-4f48548ff48d","ErrorCode":0,"Message":"OK"}"#,
        config: |port| {
            MailerConfig::from_url(&format!("postmark://token@127.0.0.1:{port}?tls=none")).unwrap()
        },
    },
    Provider {
        name: "mailgun",
        path: "/v3/mg.example.com/messages.mime",
        status: 200,
        body: r#"{"id":"<20261128100000.1.ABCDEF@mg.example.com>","message":"Queued. Thank you."}"#,
        config: |port| {
            MailerConfig::from_url(&format!(
                "mailgun://key@mg.example.com?host=127.0.0.1:{port}&tls=none"
            ))
            .unwrap()
        },
    },
    Provider {
        name: "ses",
        path: "/v2/email/outbound-emails",
        status: 200,
        body: r#"{"MessageId":"0100018c1b2a3c4d-5e6f7a8b-9c0d-1e2f-3a4b-5c6d7e8f9a0b-000000"}"#,
        config: |port| {
            MailerConfig::ses(
                SesConfig::new("us-east-1")
                    .host("127.0.0.1", Some(port))
                    .plain_http()
                    .credentials(
                        "AKIDEXAMPLE",
                        "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                        None,
                    ),
            )
        },
    },
    Provider {
        name: "sendgrid",
        path: "/v3/mail/send",
        status: 202,
        body: "",
        config: |port| {
            MailerConfig::from_url(&format!("sendgrid://key?host=127.0.0.1:{port}&tls=none"))
                .unwrap()
        },
    },
    Provider {
        name: "resend",
        path: "/emails",
        status: 200,
        body: r#"{"id":"49a3999c-0ce1-4ea6-ab68-afcd6dc2e794"}"#,
        config: |port| {
            MailerConfig::from_url(&format!("resend://key?host=127.0.0.1:{port}&tls=none")).unwrap()
        },
    },
];

/// What the stand-in saw: the first request (to replay) and arrivals per second.
#[derive(Default)]
struct Seen {
    first: Mutex<Option<(String, HeaderMap, Bytes)>>,
    count: AtomicU64,
    started: Mutex<Option<Instant>>,
    per_second: Mutex<BTreeMap<u64, u64>>,
}

#[derive(Clone)]
struct Stand {
    status: u16,
    body: &'static str,
    seen: Arc<Seen>,
}

async fn answer(
    State(stand): State<Stand>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Bytes,
) -> (
    axum::http::StatusCode,
    [(&'static str, &'static str); 2],
    &'static str,
) {
    let seen = &stand.seen;
    seen.count.fetch_add(1, Ordering::Relaxed);
    {
        let mut first = seen.first.lock().unwrap();
        if first.is_none() {
            *first = Some((uri.to_string(), headers, body));
        }
    }
    if let Some(t0) = *seen.started.lock().unwrap() {
        let second = t0.elapsed().as_secs();
        *seen.per_second.lock().unwrap().entry(second).or_default() += 1;
    }
    (
        axum::http::StatusCode::from_u16(stand.status).unwrap(),
        [
            ("content-type", "application/json"),
            ("x-message-id", "bench-message-id"),
        ],
        stand.body,
    )
}

/// Starts the stand-in of `p` on loopback: its port and what it saw.
async fn stand(p: &Provider) -> (u16, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let app = Router::new().route(p.path, post(answer)).with_state(Stand {
        status: p.status,
        body: p.body,
        seen: Arc::clone(&seen),
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (port, seen)
}

fn email(i: u64) -> Email {
    Email::builder()
        .from("Shop <shop@example.com>")
        .to(format!("buyer{i}@example.org"))
        .subject(format!("Your order {i}"))
        .text("Thanks for your order! It ships tomorrow.\n".repeat(8))
        .build()
        .expect("valid email")
}

/// Runs `n` jobs, `CONCURRENCY` at a time; emails per second.
async fn at_concurrency<F, Fut>(n: u64, job: F) -> f64
where
    F: Fn(u64) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let job = Arc::new(job);
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
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
    n as f64 / started.elapsed().as_secs_f64()
}

/// The baseline: hyper's pooled client replaying `request` `n` times to `port`.
async fn plain(port: u16, request: &(String, HeaderMap, Bytes), n: u64) -> f64 {
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(CONCURRENCY)
        .build_http();
    let (path, headers, body) = request.clone();
    let uri: axum::http::Uri = format!("http://127.0.0.1:{port}{path}").parse().unwrap();
    at_concurrency(n, move |_| {
        let mut r = axum::http::Request::post(uri.clone());
        for (name, value) in headers.iter() {
            r = r.header(name, value);
        }
        let request = r.body(Full::new(body.clone())).unwrap();
        let client = client.clone();
        async move {
            let response = client.request(request).await.expect("baseline request");
            assert!(response.status().is_success());
            response.into_body().collect().await.expect("answer");
        }
    })
    .await
}

/// A fresh SQLite file with `n` emails enqueued.
async fn queued(n: u64) -> (tempfile::TempDir, SqliteBackend) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("bench.db").display());
    let pool = outbox::sqlite::connect(&url).await.unwrap();
    let backend = SqliteBackend::new(pool.clone());
    Outbox::new(backend.clone()).migrate().await.unwrap();
    let mails: Vec<Email> = (0..n).map(email).collect();
    for chunk in mails.chunks(1000) {
        let mut tx = pool.begin().await.unwrap();
        outbox::enqueue_many(&mut *tx, chunk).await.unwrap();
        tx.commit().await.unwrap();
    }
    (dir, backend)
}

async fn measure(p: &Provider, n: u64) {
    let (port, seen) = stand(p).await;
    let mailer = Mailer::new((p.config)(port)).unwrap();
    // Warm: open the connections, and capture the request to replay.
    let m = mailer.clone();
    at_concurrency(CONCURRENCY as u64, move |i| {
        let m = m.clone();
        async move {
            m.deliver_now(&email(i)).await.expect("warm-up send");
        }
    })
    .await;
    let request = seen.first.lock().unwrap().clone().expect("a request");
    let mut rounds = Vec::new();
    for _ in 0..3 {
        let base = plain(port, &request, n).await;
        // The emails are the application's input, built before the clock starts (as the
        // baseline's request is).
        let mails: Arc<Vec<Email>> = Arc::new((0..n).map(email).collect());
        let m = mailer.clone();
        let transport = at_concurrency(n, move |i| {
            let (m, mails) = (m.clone(), Arc::clone(&mails));
            async move {
                m.deliver_now(&mails[i as usize]).await.expect("send");
            }
        })
        .await;
        if std::env::var_os("PROVIDER_BENCH_TRANSPORT_ONLY").is_some() {
            rounds.push((base, transport, 0.0));
            continue;
        }
        let (_dir, backend) = queued(n).await;
        let outbox = Outbox::new(backend).register_with::<Email, _>(
            mailer.handler(),
            QueueOptions::new().concurrency(CONCURRENCY),
        );
        let started = Instant::now();
        let report = outbox.drain().await.unwrap();
        let drained = n as f64 / started.elapsed().as_secs_f64();
        assert_eq!(report.counts.delivered, n, "{report:?}");
        rounds.push((base, transport, drained));
    }
    rounds.sort_by(|a, b| (a.1 / a.0).total_cmp(&(b.1 / b.0)));
    let (base, transport, drained) = rounds[1];
    println!(
        "{:<9} plain {:>7.0}/s  transport {:>7.0}/s ({:.2} of plain)  outbox {:>7.0}/s ({:.2} of plain)   [median of 3 by transport ratio; {} requests served]",
        p.name,
        base,
        transport,
        transport / base,
        drained,
        drained / base,
        seen.count.load(Ordering::Relaxed)
    );
}

/// The rate run: `per_second` emails per second for `seconds` through `p`'s stand-in.
async fn rate(p: &Provider, per_second: f64, burst: u32, seconds: u64) {
    let (port, seen) = stand(p).await;
    let mailer = Mailer::new((p.config)(port)).unwrap();
    let n = (per_second as u64) * (seconds + 5);
    let (_dir, backend) = queued(n).await;
    let outbox = Outbox::new(backend)
        .rate_limit("provider", RateLimit::per_second(per_second).burst(burst))
        .register_with::<Email, _>(
            mailer.handler(),
            QueueOptions::new()
                .concurrency(CONCURRENCY)
                .rate_limit("provider"),
        );
    *seen.started.lock().unwrap() = Some(Instant::now());
    outbox
        .run_until(tokio::time::sleep(Duration::from_secs(seconds)))
        .await
        .unwrap();
    let per = seen.per_second.lock().unwrap().clone();
    let full: Vec<u64> = (0..seconds)
        .map(|s| per.get(&s).copied().unwrap_or(0))
        .collect();
    let total: u64 = full.iter().sum();
    let (lo, hi) = (full.iter().min().unwrap(), full.iter().max().unwrap());
    println!(
        "{} at {per_second}/s (burst {burst}) for {seconds} s: {total} requests ({:.2}/s), per second min {lo} max {hi}; first 5 s {:?}, last 5 s {:?}",
        p.name,
        total as f64 / seconds as f64,
        &full[..5.min(full.len())],
        &full[full.len().saturating_sub(5)..]
    );
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().map_or(3000, |a| a.parse().expect("emails"));
    let seconds: u64 = args.next().map_or(60, |a| a.parse().expect("seconds"));
    println!("{n} emails per measure, concurrency {CONCURRENCY}");
    // `PROVIDER_BENCH_ONLY=ses` measures one provider (for a profiler).
    let only = std::env::var("PROVIDER_BENCH_ONLY").ok();
    if n > 0 {
        for p in PROVIDERS
            .iter()
            .filter(|p| only.as_deref().is_none_or(|o| o == p.name))
        {
            measure(p, n).await;
        }
    }
    let rated = PROVIDERS
        .iter()
        .find(|p| p.name == "ses")
        .unwrap_or(&PROVIDERS[0]);
    if seconds > 0 {
        for burst in [1, 2, 5] {
            rate(rated, 100.0, burst, seconds).await;
        }
    }
}
