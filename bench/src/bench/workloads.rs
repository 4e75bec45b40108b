//! The workloads. Each returns its figures; `main` prints and records them.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use outbox::{prelude::*, RateLimit};
use serde::{Deserialize, Serialize};

use super::{
    db::Db,
    pools::{BenchPool, Extra},
    Figure,
};

/// The bench's message: a small payload, like an id and a template name.
#[derive(Debug, Clone, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "bench.noop")]
pub struct Noop {
    pub n: u64,
    pub template: String,
}

pub fn noops(n: u64) -> Vec<Noop> {
    (0..n)
        .map(|n| Noop {
            n,
            template: "order_confirmation".into(),
        })
        .collect()
}

async fn noop(_: Noop, _: MessageContext) -> Result<(), HandlerError> {
    Ok(())
}

fn drain_options() -> QueueOptions {
    QueueOptions::new().concurrency(10)
}

/// N transactions each inserting a business row and a message, against the rows alone
/// (the floor) and against the row plus a second plain row (any extra insert's cost).
/// The three kinds run interleaved in four rounds, so table and WAL growth and
/// checkpoints fall on all of them alike.
pub async fn enqueue<P: BenchPool>(pool: &P, n: u64) -> Vec<Figure> {
    let msgs = noops(n);
    let (mut floor, mut ours, mut two_rows) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    let rounds = 4;
    for round in 0..rounds {
        let ids = (round * n / rounds)..((round + 1) * n / rounds);
        let t = Instant::now();
        for i in ids.clone() {
            pool.order_tx::<Noop>(i as i64, Extra::Nothing).await;
        }
        floor += t.elapsed();
        let t = Instant::now();
        for i in ids.clone() {
            pool.order_tx(1_000_000 + i as i64, Extra::Message(&msgs[i as usize]))
                .await;
        }
        ours += t.elapsed();
        let t = Instant::now();
        for i in ids {
            pool.order_tx::<Noop>(2_000_000 + i as i64, Extra::PlainRow)
                .await;
        }
        two_rows += t.elapsed();
    }
    let per_s = |d: Duration| n as f64 / d.as_secs_f64();
    vec![
        Figure::new("enqueue", n, per_s(ours), "tx/s").baseline("business row only", per_s(floor)),
        Figure::new("enqueue.two_plain_rows", n, per_s(two_rows), "tx/s")
            .baseline("business row only", per_s(floor)),
    ]
}

/// One transaction with `n` messages.
pub async fn fanout<P: BenchPool>(pool: &P, n: u64) -> Vec<Figure> {
    let msgs = noops(n);
    let started = Instant::now();
    pool.fan_out(&msgs).await;
    vec![Figure::new(
        "fanout",
        n,
        n as f64 / started.elapsed().as_secs_f64(),
        "msgs/s",
    )]
}

/// The full stack draining `n`; with `memory`, the peak RSS during the drain too.
pub async fn drain_full<P: BenchPool>(pool: &P, n: u64) -> f64 {
    pool.fan_out(&noops(n)).await;
    let outbox = Outbox::new(pool.backend()).register_with::<Noop, _>(noop, drain_options());
    let started = Instant::now();
    let report = outbox.drain().await.unwrap();
    let rate = n as f64 / started.elapsed().as_secs_f64();
    assert_eq!(report.counts.delivered, n, "the drain delivered everything");
    rate
}

/// Drain throughput of the full stack and the raw-SQL floor.
pub async fn drain<P: BenchPool>(pool: &P, db: &Db, n: u64, which: DrainPart) -> Vec<Figure> {
    match which {
        DrainPart::Full => {
            let rate = drain_full(pool, n).await;
            vec![Figure::new("drain", n, rate, "msgs/s")]
        }
        DrainPart::LeanFloor => vec![Figure::new(
            "drain.lean_floor",
            n,
            db.lean_floor(n).await,
            "msgs/s",
        )],
        DrainPart::Floor => {
            pool.fan_out(&noops(n)).await;
            let started = Instant::now();
            let got = db.raw_floor(Noop::TYPE).await;
            assert_eq!(got, n);
            vec![Figure::new(
                "drain.floor",
                n,
                n as f64 / started.elapsed().as_secs_f64(),
                "msgs/s",
            )]
        }
    }
}

/// Which drain to run.
#[derive(Debug, Clone, Copy)]
pub enum DrainPart {
    Full,
    Floor,
    LeanFloor,
}

/// A latency-bound drain: every handler sleeps 20 ms (an SMTP or HTTP call), concurrency
/// 100, so the ideal is 100 / 20 ms = 5,000 messages per second.
pub async fn drain_slow<P: BenchPool>(pool: &P, n: u64) -> Vec<Figure> {
    pool.fan_out(&noops(n)).await;
    let outbox = Outbox::new(pool.backend()).register_with::<Noop, _>(
        |_: Noop, _: MessageContext| async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            Ok::<(), HandlerError>(())
        },
        QueueOptions::new().concurrency(100).batch_size(100),
    );
    let started = Instant::now();
    let report = outbox.drain().await.unwrap();
    let rate = n as f64 / started.elapsed().as_secs_f64();
    assert_eq!(report.counts.delivered, n, "the drain delivered everything");
    vec![Figure::new("drain.sleep20ms", n, rate, "msgs/s").baseline("100 / 20 ms", 5_000.0)]
}

/// Commit → handler start, idle worker, `n` messages committed one by one at `per_sec`.
pub async fn latency<P: BenchPool>(pool: &P, n: u64, per_sec: f64) -> Vec<Figure> {
    let started_at: Arc<Mutex<HashMap<u64, Instant>>> = Arc::default();
    let outbox = Outbox::with_state(pool.backend(), Arc::clone(&started_at))
        .register_with::<Noop, _>(
            |m: Noop, ctx: MessageContext<Arc<Mutex<HashMap<u64, Instant>>>>| async move {
                ctx.state().lock().unwrap().insert(m.n, Instant::now());
                Ok::<(), HandlerError>(())
            },
            drain_options(),
        );
    let mut committed = HashMap::new();
    outbox
        .run_until(async {
            tokio::time::sleep(Duration::from_millis(500)).await; // idle
            for m in noops(n) {
                pool.order_tx(m.n as i64, Extra::Message(&m)).await;
                committed.insert(m.n, Instant::now());
                tokio::time::sleep(Duration::from_secs_f64(1.0 / per_sec)).await;
            }
            while started_at.lock().unwrap().len() < n as usize {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .unwrap();
    let started_at = started_at.lock().unwrap();
    let mut ms: Vec<f64> = committed
        .iter()
        .map(|(k, c)| started_at[k].saturating_duration_since(*c).as_secs_f64() * 1000.0)
        .collect();
    ms.sort_by(f64::total_cmp);
    let pick = |q: f64| ms[((ms.len() as f64 - 1.0) * q).round() as usize];
    vec![
        Figure::new("latency.p50", n, pick(0.5), "ms"),
        Figure::new("latency.p99", n, pick(0.99), "ms"),
    ]
}

/// A bucket of `rate`/s (burst `burst`) with a backlog lasting `seconds`.
pub async fn ratelimit<P: BenchPool>(pool: &P, rate: f64, burst: u32, seconds: f64) -> Vec<Figure> {
    let n = (rate * seconds) as u64 + u64::from(burst);
    pool.fan_out(&noops(n)).await;
    // Handler starts on the same clock as the grants (unix seconds, SystemTime).
    let starts: Arc<Mutex<Vec<f64>>> = Arc::default();
    grants::take();
    let outbox = Outbox::with_state(pool.backend(), Arc::clone(&starts))
        .rate_limit("bench", RateLimit::per_second(rate).burst(burst))
        .register_with::<Noop, _>(
            |_: Noop, ctx: MessageContext<Arc<Mutex<Vec<f64>>>>| async move {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap();
                ctx.state().lock().unwrap().push(now.as_secs_f64());
                Ok::<(), HandlerError>(())
            },
            drain_options().rate_limit("bench"),
        );
    outbox.drain().await.unwrap();
    let mut granted = grants::take();
    let mut starts = starts.lock().unwrap().clone();
    granted.sort_by(f64::total_cmp);
    starts.sort_by(f64::total_cmp);
    // The k-th start against the k-th grant: how long after its token a handler began.
    let mut lag_ms: Vec<f64> = starts
        .iter()
        .zip(&granted)
        .map(|(s, g)| (s - g) * 1000.0)
        .collect();
    lag_ms.sort_by(f64::total_cmp);
    let lag_p99 = lag_ms
        .get(lag_ms.len() * 99 / 100)
        .copied()
        .unwrap_or(f64::NAN);
    let (worst_starts, span) = worst_window(starts);
    let (worst_grants, _) = worst_window(granted.clone());
    let bound = f64::from(burst) + rate;
    let budget = f64::from(burst) + rate * span;
    vec![
        Figure::new("ratelimit.started_per_s", n, n as f64 / span, "msgs/s")
            .baseline("bucket rate", rate),
        Figure::new(
            "ratelimit.max_1s_window",
            granted.len() as u64,
            worst_grants as f64,
            "grants",
        )
        .baseline("burst + R", bound),
        Figure::new(
            "ratelimit.max_1s_window_starts",
            n,
            worst_starts as f64,
            "starts",
        )
        .baseline("burst + R", bound),
        Figure::new("ratelimit.utilisation", n, 100.0 * n as f64 / budget, "%"),
        Figure::new("ratelimit.start_lag_p99", n, lag_p99, "ms"),
    ]
}

/// The most events in any window of one second, and the span from first to last (seconds).
fn worst_window(mut t: Vec<f64>) -> (usize, f64) {
    t.sort_by(f64::total_cmp);
    let worst = (0..t.len())
        .map(|i| t[i..].iter().take_while(|u| **u - t[i] < 1.0).count())
        .max()
        .unwrap_or(0);
    let span = t.last().zip(t.first()).map_or(0.0, |(l, f)| l - f);
    (worst, span)
}

/// The rate-limit layer's grant events (`RATE_GRANT_EVENT_TARGET`), recorded by a `tracing`
/// layer: the bucket-clock time of every token granted in this process.
pub mod grants {
    use std::sync::Mutex;

    use outbox::RATE_GRANT_EVENT_TARGET;
    use tracing::field::{Field, Visit};
    use tracing_subscriber::{filter::Targets, prelude::*};

    static GRANTS: Mutex<Vec<f64>> = Mutex::new(Vec::new());

    /// Installs the recorder as the process's subscriber (only the grant events pass).
    pub fn install() {
        let only_grants =
            Targets::new().with_target(RATE_GRANT_EVENT_TARGET, tracing::Level::TRACE);
        // A global filter, not a per-layer one: with a per-layer filter some PostgreSQL
        // runs recorded no grant at all (seen twice, not explained).
        tracing_subscriber::registry()
            .with(only_grants)
            .with(Recorder)
            .init();
    }

    /// The grants recorded since the last call.
    pub fn take() -> Vec<f64> {
        std::mem::take(&mut *GRANTS.lock().unwrap())
    }

    struct Recorder;

    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Recorder {
        fn on_event(
            &self,
            event: &tracing::Event<'_>,
            _: tracing_subscriber::layer::Context<'_, S>,
        ) {
            struct GrantedAt(Option<f64>);
            impl Visit for GrantedAt {
                fn record_f64(&mut self, field: &Field, value: f64) {
                    if field.name() == "granted_at" {
                        self.0 = Some(value);
                    }
                }
                fn record_debug(&mut self, _: &Field, _: &dyn std::fmt::Debug) {}
            }
            let mut at = GrantedAt(None);
            event.record(&mut at);
            if let Some(t) = at.0 {
                GRANTS.lock().unwrap().push(t);
            }
        }
    }
}

/// Peak RSS of a worker-only process draining a backlog of `n`: this process enqueues,
/// a child (this binary, `--memory-worker`) drains and reports its VmHWM, so the figure
/// holds nothing of the enqueuing phase.
pub async fn memory<P: BenchPool>(pool: &P, db: &Db, n: u64) -> Vec<Figure> {
    pool.fan_out(&noops(n)).await;
    let args = [
        "--memory-worker".to_owned(),
        db.kind().name().to_owned(),
        db.locator(),
        n.to_string(),
    ];
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(std::env::current_exe().expect("own path"))
            .args(args)
            .output()
    })
    .await
    .unwrap()
    .expect("start the worker process");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let peak = stdout
        .lines()
        .find_map(|l| l.strip_prefix("peak_rss_mb="))
        .and_then(|v| v.trim().parse::<f64>().ok());
    match peak {
        Some(mb) if out.status.success() => vec![Figure::new("memory.peak_rss", n, mb, "MB")],
        _ => panic!(
            "memory worker failed ({}): {stdout}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// The child of [`memory`]: drains the backlog on `pool` and prints its peak RSS.
pub async fn memory_worker<P: BenchPool>(pool: &P, n: u64) {
    let outbox = Outbox::new(pool.backend()).register_with::<Noop, _>(noop, drain_options());
    let report = outbox.drain().await.unwrap();
    assert_eq!(report.counts.delivered, n, "the drain delivered everything");
    println!("peak_rss_mb={:.1}", peak_rss_mb());
}

/// This process's peak RSS since the last reset, in MB.
fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}
