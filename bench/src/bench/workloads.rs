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
    many,
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

/// A fan-out of `n` from a lazy iterator with `enqueue_iter` (one chunk in memory at a
/// time), against `enqueue_many` of the same messages collected first (the `fanout`
/// workload), each into an empty table: rate, and this process's RSS growth (its peak
/// during the fan-out, minus its RSS before; the peak is reset through
/// `/proc/self/clear_refs` first). The stream goes first: memory the baseline freed would
/// be reused by whatever came after it, hiding its growth.
pub async fn fanout_stream<P: BenchPool>(pool: &P, n: u64) -> Vec<Figure> {
    let before = reset_peak_rss();
    let started = Instant::now();
    let lazy = (0..n).map(|n| Noop {
        n,
        template: "order_confirmation".into(),
    });
    let inserted = pool.fan_out_iter(lazy).await;
    let rate = n as f64 / started.elapsed().as_secs_f64();
    let growth = peak_rss_mb() - before;
    assert_eq!(inserted, n, "the fan-out inserted everything");
    pool.clear().await;
    let before = reset_peak_rss();
    let started = Instant::now();
    pool.fan_out(&noops(n)).await;
    let batch_rate = n as f64 / started.elapsed().as_secs_f64();
    let batch_growth = peak_rss_mb() - before;
    vec![
        Figure::new("fanout.stream", n, rate, "msgs/s").baseline("enqueue_many", batch_rate),
        Figure::new("fanout.stream.rss_growth", n, growth, "MB")
            .baseline("enqueue_many", batch_growth),
    ]
}

/// Resets this process's peak RSS to its current RSS (Linux's `clear_refs` 5); returns the
/// current RSS in MB.
fn reset_peak_rss() -> f64 {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
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

/// Start-up with a backlog: `n` messages wait; the time from the `run_until` call to the
/// first handler start, in ms. Target: ≤ 5 ms on SQLite and PostgreSQL.
pub async fn startup<P: BenchPool>(pool: &P, n: u64) -> Vec<Figure> {
    pool.fan_out(&noops(n)).await;
    let first: Arc<Mutex<Option<Instant>>> = Arc::default();
    let started = Arc::new(tokio::sync::Notify::new());
    let (seen, signal) = (Arc::clone(&first), Arc::clone(&started));
    let outbox = Outbox::new(pool.backend()).register_with::<Noop, _>(
        move |_: Noop| {
            let (seen, signal) = (Arc::clone(&seen), Arc::clone(&signal));
            async move {
                let mut at = seen.lock().unwrap();
                if at.is_none() {
                    *at = Some(Instant::now());
                    signal.notify_one();
                }
                Ok::<(), HandlerError>(())
            }
        },
        drain_options(),
    );
    let called = Instant::now();
    outbox
        .run_until(async { started.notified().await })
        .await
        .unwrap();
    let at = first.lock().unwrap().expect("a handler ran");
    let ms = at.duration_since(called).as_secs_f64() * 1000.0;
    vec![Figure::new("startup.first_delivery", n, ms, "ms")]
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

/// The `idle` warm-up, not measured: the workers' start and first polls. Longer than
/// PostgreSQL's 10 s interval at which an idle connection reports its transactions to
/// `pg_stat_database`, so the start's burst is not counted in the window.
const IDLE_WARMUP: Duration = Duration::from_secs(12);

/// How long the `idle` workload measures.
const IDLE_FOR: Duration = Duration::from_secs(20);

/// A process running `Outbox::run_until` with `k` registered types (of [`many::TYPES`])
/// and nothing to deliver: after a 2 s warm-up, for 20 s, this process's CPU (as % of
/// one core) and what the database saw, per second: PostgreSQL's transactions in the
/// bench's database, MariaDB's statements (server-wide, less the meter's own). SQLite
/// has no server to ask, so it gets the CPU figure only.
pub async fn idle<P: BenchPool>(pool: &P, db: &Db, k: usize) -> Vec<Figure> {
    assert!(
        (1..=many::TYPES).contains(&k),
        "idle registers 1 to {} types, not {k}",
        many::TYPES
    );
    let mut outbox = Outbox::new(pool.backend());
    for i in 0..k {
        outbox = many::register(outbox, i, drain_options());
    }
    let mut meter = db.meter().await;
    let others_before = meter.others().await;
    let mut measured = None;
    outbox
        .run_until(async {
            tokio::time::sleep(IDLE_WARMUP).await;
            let before = (Instant::now(), cpu_seconds(), meter.read().await);
            tokio::time::sleep(IDLE_FOR).await;
            let after = (Instant::now(), cpu_seconds(), meter.read().await);
            measured = Some((before, after));
        })
        .await
        .unwrap();
    let others = others_before.max(meter.others().await);
    if others > 0 {
        eprintln!(
            "idle: {others} other client connection(s) on the server: the statement count includes theirs"
        );
    }
    let ((t0, cpu0, db0), (t1, cpu1, db1)) = measured.expect("the measurement ran");
    let secs = t1.duration_since(t0).as_secs_f64();
    let k = k as u64;
    let mut figures = vec![Figure::new(
        "idle.cpu",
        k,
        100.0 * (cpu1 - cpu0) / secs,
        "%",
    )];
    if let (Some(a), Some(b)) = (db0, db1) {
        let seen = b.saturating_sub(a).saturating_sub(meter.own_per_interval());
        figures.push(Figure::new(
            "idle.statements",
            k,
            seen as f64 / secs,
            meter.unit(),
        ));
    }
    figures
}

/// This process's CPU time so far (user + system, all threads), in seconds, from
/// `/proc/self/stat` (in clock ticks of 1/100 s, Linux's `USER_HZ`).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // The fields after the command name, which is in parentheses and may hold spaces:
    // utime and stime are the 14th and 15th fields, here the 12th and 13th.
    let after_name = &stat[stat.rfind(')').expect("a stat line") + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks = |i: usize| fields[i].parse::<u64>().expect("clock ticks");
    (ticks(11) + ticks(12)) as f64 / 100.0
}

/// [`many::TYPES`] types with a backlog of `n / TYPES` each (each type enqueued in one
/// transaction), drained by one `outbox.drain()` with concurrency 10 per type; its
/// baseline is [`manytypes_one_type`]. Besides the rate: how evenly the types moved
/// (each type's share of its backlog delivered when half of all messages were, the least
/// and the most) and the seconds between the first and the last type to finish.
pub async fn manytypes<P: BenchPool>(pool: &P, n: u64) -> Vec<Figure> {
    let types = many::TYPES;
    let each = n / types as u64;
    let total = each * types as u64;
    for i in 0..types {
        many::fan_out(pool, i, each).await;
    }
    let fair = Arc::new(many::Fair::new(types, each));
    let mut outbox = Outbox::with_state(pool.backend(), Arc::clone(&fair));
    for i in 0..types {
        outbox = many::register(outbox, i, drain_options());
    }
    let started = Instant::now();
    let report = outbox.drain().await.unwrap();
    let rate = total as f64 / started.elapsed().as_secs_f64();
    assert_eq!(
        report.counts.delivered, total,
        "the drain delivered everything"
    );
    let (least, most) = fair.share_at_half();
    vec![
        Figure::new("manytypes", total, rate, "msgs/s"),
        Figure::new("manytypes.share_at_half", total, least, "%"),
        Figure::new("manytypes.share_at_half_max", total, most, "%"),
        Figure::new("manytypes.finish_spread", total, fair.finish_spread(), "s"),
    ]
}

/// The baseline of [`manytypes`]: one of its types with the whole backlog of `n`, drained
/// the same way (same payload, handler and options).
pub async fn manytypes_one_type<P: BenchPool>(pool: &P, n: u64) -> Vec<Figure> {
    many::fan_out(pool, 0, n).await;
    let fair = Arc::new(many::Fair::new(1, n));
    let outbox = many::register(
        Outbox::with_state(pool.backend(), Arc::clone(&fair)),
        0,
        drain_options(),
    );
    let started = Instant::now();
    let report = outbox.drain().await.unwrap();
    let rate = n as f64 / started.elapsed().as_secs_f64();
    assert_eq!(report.counts.delivered, n, "the drain delivered everything");
    vec![Figure::new("manytypes.one_type", n, rate, "msgs/s")]
}

/// A backlog of `n` drained by `procs` worker processes at once: this process enqueues,
/// then starts `procs` copies of this binary (`--drain-worker`, [`drain_worker`]) and
/// times from the first start to the last exit; the children's deliveries must add up to
/// `n` and leave the queue empty. On this 2-core machine the database server and every
/// worker share the same two cores, so more processes cannot add CPU: the target (≥ 0.9 ×
/// one process, PostgreSQL and MariaDB) asks that they cost little, not that they scale.
/// SQLite lets one process write at a time, so its ratio is printed without a target.
pub async fn multiproc<P: BenchPool>(pool: &P, db: &Db, n: u64, procs: usize) -> Vec<Figure> {
    pool.fan_out(&noops(n)).await;
    let exe = std::env::current_exe().expect("own path");
    let args = [
        "--drain-worker".to_owned(),
        db.kind().name().to_owned(),
        db.locator(),
    ];
    let started = Instant::now();
    let children: Vec<std::process::Child> = (0..procs)
        .map(|_| {
            std::process::Command::new(&exe)
                .args(&args)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("start a worker process")
        })
        .collect();
    let exits = futures::future::join_all(children.into_iter().map(|child| {
        tokio::task::spawn_blocking(move || (child.wait_with_output(), Instant::now()))
    }))
    .await;
    let mut last = started;
    let mut delivered = 0;
    for exit in exits {
        let (out, at) = exit.unwrap();
        let out = out.expect("wait for a worker process");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let got = stdout
            .lines()
            .find_map(|l| l.strip_prefix("delivered="))
            .and_then(|v| v.trim().parse::<u64>().ok());
        match got {
            Some(got) if out.status.success() => delivered += got,
            _ => panic!(
                "drain worker failed ({}): {stdout}{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ),
        }
        last = last.max(at);
    }
    let secs = last.duration_since(started).as_secs_f64();
    assert_eq!(delivered, n, "the workers delivered everything, once");
    let left: u64 = Admin::new(pool.backend())
        .status_counts()
        .await
        .unwrap()
        .iter()
        .map(|c| c.pending + c.scheduled + c.running + c.retrying + c.done + c.dead)
        .sum();
    assert_eq!(left, 0, "the queue is empty after the workers");
    vec![Figure::new(
        &format!("multiproc.p{procs}"),
        n,
        n as f64 / secs,
        "msgs/s",
    )]
}

/// The child of [`multiproc`]: drains what it can of the backlog on `pool` with the bench's
/// one type, beside its siblings, and prints how many it delivered.
pub async fn drain_worker<P: BenchPool>(pool: &P) {
    let outbox = Outbox::new(pool.backend()).register_with::<Noop, _>(noop, drain_options());
    let report = outbox.drain().await.unwrap();
    println!("delivered={}", report.counts.delivered);
}

/// A message of the ordered drain: the bench's payload, with an ordering key or none.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Keyed {
    pub n: u64,
    pub template: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

impl outbox::OutboxMessage for Keyed {
    const TYPE: &'static str = "bench.keyed";
    const ORDERED: bool = true;

    fn order_key(&self) -> Option<String> {
        self.key.clone()
    }
}

/// How the ordered drain's messages are enqueued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyLayout {
    /// No keys: the baseline.
    None,
    /// Message `i` has key `i mod keys` (events of many aggregates interleaved).
    Interleaved,
    /// Each key's messages one after another (one aggregate's burst after another's).
    Contiguous,
}

/// The drain of `n` messages over `keys` ordering keys (`layout`), no-op handler,
/// concurrency 10: what order per key costs against the same messages unkeyed.
pub async fn drain_keyed<P: BenchPool>(
    pool: &P,
    n: u64,
    keys: u64,
    layout: KeyLayout,
) -> Vec<Figure> {
    let per_key = n.div_ceil(keys);
    let msgs: Vec<Keyed> = (0..n)
        .map(|i| Keyed {
            n: i,
            template: "order_confirmation".into(),
            key: match layout {
                KeyLayout::None => None,
                KeyLayout::Interleaved => Some(format!("account-{}", i % keys)),
                KeyLayout::Contiguous => Some(format!("account-{}", i / per_key)),
            },
        })
        .collect();
    pool.fan_out(&msgs).await;
    let outbox = Outbox::new(pool.backend()).register_with::<Keyed, _>(
        |_: Keyed| async { Ok::<(), HandlerError>(()) },
        drain_options(),
    );
    let started = Instant::now();
    let report = outbox.drain().await.unwrap();
    let rate = n as f64 / started.elapsed().as_secs_f64();
    assert_eq!(report.counts.delivered, n, "the drain delivered everything");
    let name = match layout {
        KeyLayout::None => "drain.unkeyed",
        KeyLayout::Interleaved => "drain.ordered",
        KeyLayout::Contiguous => "drain.ordered_bursts",
    };
    vec![Figure::new(name, n, rate, "msgs/s")]
}
