//! The outbox benchmark: our figures beside the baselines they must beat.
//!
//! ```sh
//! cargo run --release -p outbox-bench --bin bench -- \
//!     [--backend sqlite|postgres|mysql] [--workload NAME] [--n N] [--runs 3] [--json FILE]
//! scripts/bench.sh        # every backend and workload, with postfix's smtp-sink for `email`
//! ```
//!
//! Workloads: enqueue, fanout, drain (N = 5,000 and 200,000, plus the raw
//! SQL floor), latency, email, ratelimit, memory, idle (K = 1 and 50 registered types),
//! manytypes (50 types' backlogs against one type's), multiproc (1, 2 and 4 worker
//! processes), ordered (50,000 messages over 1,000 order keys, interleaved and in bursts,
//! against the same messages unkeyed). Each figure is the median of `--runs` runs, each on a fresh database.
//! Method and results: BENCHMARKS.md.

mod db;
#[cfg(feature = "smtp")]
mod email;
mod many;
mod pools;
mod workloads;

use std::fmt::Write as _;

use db::{Db, Kind};
use serde::Serialize;
use workloads::DrainPart;

/// One measured figure, with its baseline and target when it has them.
#[derive(Debug, Clone, Serialize)]
pub struct Figure {
    workload: String,
    backend: String,
    n: u64,
    value: f64,
    unit: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline: Option<String>,
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
    pub fn new(workload: &str, n: u64, value: f64, unit: &str) -> Self {
        Figure {
            workload: workload.into(),
            backend: String::new(),
            n,
            value,
            unit: unit.into(),
            baseline: None,
            baseline_value: None,
            ratio: None,
            target: None,
            met: None,
            runs: vec![value],
        }
    }

    pub fn baseline(mut self, name: &str, value: f64) -> Self {
        self.baseline = Some(name.into());
        self.baseline_value = Some(value);
        self
    }
}

struct Args {
    backends: Vec<Kind>,
    workloads: Vec<String>,
    n: Option<u64>,
    runs: usize,
    json: Option<String>,
}

const ALL: [&str; 14] = [
    "enqueue",
    "fanout",
    "fanout.stream",
    "drain",
    "drain.sleep20ms",
    "startup",
    "latency",
    "email",
    "ratelimit",
    "memory",
    "idle",
    "manytypes",
    "multiproc",
    "ordered",
];

/// Parts of the workloads above a run may name alone (`drain.ours`: the drain without its
/// floors).
const SINGLE: &[&str] = &[
    "drain.ours",
    "drain.unkeyed",
    "drain.ordered",
    "drain.ordered_bursts",
];

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        backends: vec![],
        workloads: vec![],
        n: None,
        runs: 3,
        json: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--backend" => args.backends.push(Kind::parse(&value()?)?),
            "--workload" => {
                let w = value()?;
                if !ALL.contains(&w.as_str()) && !SINGLE.contains(&w.as_str()) {
                    return Err(format!(
                        "unknown workload `{w}`; one of {}, or one part alone: {}",
                        ALL.join(", "),
                        SINGLE.join(", ")
                    ));
                }
                args.workloads.push(w);
            }
            "--n" => args.n = Some(value()?.parse().map_err(|e| format!("--n: {e}"))?),
            "--runs" => args.runs = value()?.parse().map_err(|e| format!("--runs: {e}"))?,
            "--json" => args.json = Some(value()?),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    if args.backends.is_empty() {
        args.backends.push(Kind::Sqlite);
    }
    if args.workloads.is_empty() {
        args.workloads = ALL.iter().map(|s| s.to_string()).collect();
    }
    Ok(args)
}

/// The benchmark's targets (BENCHMARKS.md), by backend and workload: ratios to a baseline
/// measured in the same run wherever the machine's speed matters.
fn target(kind: Kind, f: &Figure) -> Option<(String, bool)> {
    let v = f.value;
    let at_least = |t: f64| Some((format!("≥ {t}"), v >= t));
    let at_most = |t: f64| Some((format!("≤ {t}"), v <= t));
    let ratio_at_least = |t: f64| {
        let base = f.baseline.clone().unwrap_or_default();
        f.ratio.map(|r| (format!("≥ {t} × {base}"), r >= t))
    };
    match (f.workload.as_str(), kind) {
        ("drain", Kind::Sqlite) if f.n <= 5_000 => ratio_at_least(0.5),
        ("drain", Kind::Postgres) if f.n <= 5_000 => ratio_at_least(1.0),
        ("drain", Kind::Mysql) if f.n <= 5_000 => ratio_at_least(0.8),
        ("drain.scale", _) => ratio_at_least(0.9),
        ("drain.sleep20ms", _) => ratio_at_least(0.8),
        ("enqueue", Kind::Sqlite) => ratio_at_least(0.75),
        ("enqueue", _) => ratio_at_least(0.85),
        ("fanout" | "fanout.stream", Kind::Sqlite) if f.n >= 200_000 => at_least(150_000.0),
        ("fanout.stream.rss_growth", _) => at_most(20.0),
        ("latency.p50", Kind::Sqlite | Kind::Postgres) => at_most(5.0),
        ("startup.first_delivery", Kind::Sqlite | Kind::Postgres) => at_most(5.0),
        // No commit signal: the process's due probe, every 50 ms after work, finds them.
        ("latency.p50", Kind::Mysql) => at_most(50.0),
        ("latency.p99", _) => at_most(100.0),
        ("email.end_to_end", _) => ratio_at_least(0.6),
        ("ratelimit.max_1s_window" | "ratelimit.max_1s_window_starts", _) => {
            f.baseline_value.map(|b| (format!("≤ {b}"), v <= b))
        }
        ("ratelimit.utilisation", _) => at_least(95.0),
        ("memory.peak_rss", _) => at_most(50.0),
        ("idle.cpu", _) => at_most(1.0),
        ("idle.statements", Kind::Postgres | Kind::Mysql) => at_most(10.0),
        ("manytypes", _) => ratio_at_least(0.9),
        ("drain.ordered" | "drain.ordered_bursts", _) => ratio_at_least(0.7),
        ("multiproc.p2" | "multiproc.p4", Kind::Postgres | Kind::Mysql) => ratio_at_least(0.9),
        _ => None,
    }
}

/// Runs one workload once on a fresh database.
async fn run_once(kind: Kind, workload: &str, n: Option<u64>) -> Vec<Figure> {
    let db = Db::fresh(kind).await;
    let figures = match &db {
        Db::Sqlite(p, _) => run_on(p, &db, workload, n).await,
        #[cfg(feature = "postgres")]
        Db::Postgres(p, _) => run_on(p, &db, workload, n).await,
        #[cfg(feature = "mysql")]
        Db::Mysql(p, _) => run_on(p, &db, workload, n).await,
    };
    db.cleanup().await;
    figures
}

/// Runs one workload, or one part of one (a baseline, one setting), on `pool`.
async fn run_on<P: pools::BenchPool>(
    pool: &P,
    db: &Db,
    workload: &str,
    n: Option<u64>,
) -> Vec<Figure> {
    match workload {
        "enqueue" => workloads::enqueue(pool, n.unwrap_or(2_000)).await,
        "fanout" => workloads::fanout(pool, n.unwrap_or(200_000)).await,
        "fanout.stream" => workloads::fanout_stream(pool, n.unwrap_or(200_000)).await,
        "drain" | "drain.200k" => {
            workloads::drain(pool, db, n.unwrap_or(5_000), DrainPart::Full).await
        }
        "drain.floor" => workloads::drain(pool, db, n.unwrap_or(5_000), DrainPart::Floor).await,
        "drain.lean_floor" => {
            workloads::drain(pool, db, n.unwrap_or(5_000), DrainPart::LeanFloor).await
        }
        "drain.sleep20ms" => workloads::drain_slow(pool, n.unwrap_or(10_000)).await,
        "startup" => workloads::startup(pool, n.unwrap_or(50_000)).await,
        "latency" => workloads::latency(pool, n.unwrap_or(200), 20.0).await,
        "ratelimit" => workloads::ratelimit(pool, 100.0, 10, 30.0).await,
        "memory" => workloads::memory(pool, db, n.unwrap_or(200_000)).await,
        "idle" => workloads::idle(pool, db, n.unwrap_or(1) as usize).await,
        "manytypes" => workloads::manytypes(pool, n.unwrap_or(100_000)).await,
        "manytypes.one_type" => workloads::manytypes_one_type(pool, n.unwrap_or(100_000)).await,
        "drain.unkeyed" | "drain.ordered" | "drain.ordered_bursts" => {
            let layout = match workload {
                "drain.unkeyed" => workloads::KeyLayout::None,
                "drain.ordered" => workloads::KeyLayout::Interleaved,
                _ => workloads::KeyLayout::Contiguous,
            };
            workloads::drain_keyed(pool, n.unwrap_or(50_000), 1_000, layout).await
        }
        "multiproc.p1" => workloads::multiproc(pool, db, n.unwrap_or(200_000), 1).await,
        "multiproc.p2" => workloads::multiproc(pool, db, n.unwrap_or(200_000), 2).await,
        "multiproc.p4" => workloads::multiproc(pool, db, n.unwrap_or(200_000), 4).await,
        #[cfg(feature = "smtp")]
        "email" => {
            if !email::sink_is_up().await {
                eprintln!(
                    "email: no SMTP sink at {:?}; start one with scripts/bench.sh",
                    email::sink()
                );
                return vec![];
            }
            let alone = email::sender_alone(n.unwrap_or(20_000)).await;
            let mut f = email::end_to_end(pool, n.unwrap_or(20_000)).await;
            if let (Some(e), Some(a)) = (f.first_mut(), alone.first()) {
                *e = e.clone().baseline("sender alone", a.value);
            }
            f.extend(alone);
            f
        }
        other => {
            eprintln!("{other}: needs a cargo feature this build lacks (email needs `smtp`)");
            vec![]
        }
    }
}

/// The medians of several runs, figure by figure.
fn medians(runs: Vec<Vec<Figure>>) -> Vec<Figure> {
    let Some(first) = runs.first() else {
        return vec![];
    };
    first
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let mut values: Vec<f64> = runs
                .iter()
                .filter_map(|r| r.get(i).map(|x| x.value))
                .collect();
            let mut baselines: Vec<f64> = runs
                .iter()
                .filter_map(|r| r.get(i).and_then(|x| x.baseline_value))
                .collect();
            let raw = values.clone();
            values.sort_by(f64::total_cmp);
            baselines.sort_by(f64::total_cmp);
            let mut m = f.clone();
            m.value = values[values.len() / 2];
            m.baseline_value = baselines.get(baselines.len() / 2).copied();
            m.runs = raw;
            m
        })
        .collect()
}

fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .next()
                .map(|l| l.split_whitespace().nth(1).unwrap_or("0").to_owned())
        })
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0 / 1024.0);
    let rustc = std::process::Command::new("rustc")
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    format!(
        "machine: {cores} cores, {mem:.1} GiB; {rustc}; outbox {} (apalis 1.0, sqlx 0.9, lettre 0.11); {} build",
        env!("CARGO_PKG_VERSION"),
        if cfg!(debug_assertions) { "DEBUG" } else { "release" }
    )
}

/// The worker processes of the `multiproc` workload: `--drain-worker BACKEND URL` drains
/// what it can of the backlog at URL beside its siblings and prints `delivered=…`.
async fn drain_worker(args: &[String]) {
    let [kind, url] = args else {
        panic!("usage: bench --drain-worker BACKEND URL");
    };
    match Kind::parse(kind).expect("backend") {
        Kind::Sqlite => workloads::drain_worker(&outbox::sqlite::connect(url).await.unwrap()).await,
        #[cfg(feature = "postgres")]
        Kind::Postgres => {
            workloads::drain_worker(&outbox::postgres::connect(url).await.unwrap()).await
        }
        #[cfg(feature = "mysql")]
        Kind::Mysql => workloads::drain_worker(&outbox::mysql::connect(url).await.unwrap()).await,
        #[allow(unreachable_patterns)]
        other => panic!("backend `{}` needs its cargo feature", other.name()),
    }
}

/// The worker process of the `memory` workload: `--memory-worker BACKEND URL N` drains the
/// backlog the parent enqueued at URL and prints `peak_rss_mb=…`.
async fn memory_worker(args: &[String]) {
    let [kind, url, n] = args else {
        panic!("usage: bench --memory-worker BACKEND URL N");
    };
    let n: u64 = n.parse().expect("N");
    match Kind::parse(kind).expect("backend") {
        Kind::Sqlite => {
            workloads::memory_worker(&outbox::sqlite::connect(url).await.unwrap(), n).await
        }
        #[cfg(feature = "postgres")]
        Kind::Postgres => {
            workloads::memory_worker(&outbox::postgres::connect(url).await.unwrap(), n).await
        }
        #[cfg(feature = "mysql")]
        Kind::Mysql => {
            workloads::memory_worker(&outbox::mysql::connect(url).await.unwrap(), n).await
        }
        #[allow(unreachable_patterns)]
        other => panic!("backend `{}` needs its cargo feature", other.name()),
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some("--memory-worker") {
        return memory_worker(&argv[2..]).await;
    }
    if argv.get(1).map(String::as_str) == Some("--drain-worker") {
        return drain_worker(&argv[2..]).await;
    }
    workloads::grants::install();
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}\nusage: bench [--backend sqlite|postgres|mysql] [--workload NAME] [--n N] [--runs K] [--json FILE]");
            std::process::exit(2);
        }
    };
    println!("{}", machine());
    let mut all = Vec::new();
    for &kind in &args.backends {
        for w in &args.workloads {
            let parts: Vec<(&str, Option<u64>)> = match (w.as_str(), args.n) {
                ("drain", None) => vec![
                    ("drain", Some(5_000)),
                    ("drain.floor", Some(5_000)),
                    ("drain.lean_floor", Some(5_000)),
                    ("drain", Some(200_000)),
                    ("drain.floor", Some(200_000)),
                ],
                ("drain", n) => vec![("drain", n), ("drain.floor", n), ("drain.lean_floor", n)],
                ("drain.ours", n) => vec![("drain", n)],
                (w, n) if SINGLE.contains(&w) => vec![(w, n)],
                ("idle", None) => vec![("idle", Some(1)), ("idle", Some(50))],
                ("manytypes", n) => vec![("manytypes", n), ("manytypes.one_type", n)],
                ("ordered", n) => vec![
                    ("drain.unkeyed", n),
                    ("drain.ordered", n),
                    ("drain.ordered_bursts", n),
                ],
                // SQLite lets one process write at a time: four add nothing to two.
                ("multiproc", n) if kind == Kind::Sqlite => {
                    vec![("multiproc.p1", n), ("multiproc.p2", n)]
                }
                ("multiproc", n) => vec![
                    ("multiproc.p1", n),
                    ("multiproc.p2", n),
                    ("multiproc.p4", n),
                ],
                (w, n) => vec![(w, n)],
            };
            for (part, n) in parts {
                let mut runs = Vec::new();
                for run in 0..args.runs.max(1) {
                    eprintln!(
                        "[{}] {part} n={n:?} run {}/{}",
                        kind.name(),
                        run + 1,
                        args.runs
                    );
                    runs.push(run_once(kind, part, n).await);
                }
                for mut f in medians(runs) {
                    f.backend = kind.name().into();
                    all.push(f);
                }
            }
        }
        link_baselines(&mut all, kind);
        // Partial results survive a long run being cut short.
        print_table(&all);
        if let Some(path) = &args.json {
            let _ = std::fs::write(path, serde_json::to_string_pretty(&all).unwrap());
        }
    }
    for f in all.iter_mut() {
        let kind = Kind::parse(&f.backend).expect("backend name");
        if let Some((t, met)) = target(kind, f) {
            f.target = Some(t);
            f.met = Some(met);
        }
    }
    println!("\n== all backends, with targets");
    print_table(&all);
    if let Some(path) = args.json {
        std::fs::write(&path, serde_json::to_string_pretty(&all).unwrap())
            .expect("write --json file");
        println!("\nwrote {path}");
    }
}

/// The drain's baselines are separate runs: attach them to the full-stack figure (SQLite
/// against the lean floor, the servers against the claim-10-then-delete floor on the
/// outbox's own table), and add the 200,000-against-5,000 scale figure. Likewise the idle
/// figures of K types against those of one type, the many types' drain against one
/// type's, and more worker processes against one.
fn link_baselines(all: &mut Vec<Figure>, kind: Kind) {
    let find = |all: &[Figure], w: &str, n: u64| {
        all.iter()
            .find(|f| f.backend == kind.name() && f.workload == w && f.n == n)
            .map(|f| f.value)
    };
    let (floor, name) = match kind {
        Kind::Sqlite => ("drain.lean_floor", "lean floor"),
        _ => ("drain.floor", "claim-10-then-delete floor"),
    };
    let pairs: Vec<(usize, Option<f64>, Option<f64>)> = all
        .iter()
        .enumerate()
        .filter(|(_, f)| f.backend == kind.name() && f.workload == "drain")
        .map(|(i, f)| (i, find(all, floor, f.n), find(all, "drain.floor", f.n)))
        .collect();
    for (i, chosen, plain) in pairs {
        if let Some(fl) = chosen {
            all[i].baseline = Some(name.into());
            all[i].baseline_value = Some(fl);
        } else if let Some(fl) = plain {
            all[i].baseline = Some("claim-10-then-delete floor".into());
            all[i].baseline_value = Some(fl);
        }
    }
    if let (Some(small), Some(large)) = (find(all, "drain", 5_000), find(all, "drain", 200_000)) {
        let mut f =
            Figure::new("drain.scale", 200_000, large, "msgs/s").baseline("drain n=5000", small);
        f.backend = kind.name().into();
        all.push(f);
    }
    // Each figure with a baseline among this backend's figures: (index, baseline's name,
    // its value).
    let links: Vec<(usize, String, Option<f64>)> = all
        .iter()
        .enumerate()
        .filter(|(_, f)| f.backend == kind.name())
        .filter_map(|(i, f)| {
            let (w, n, name) = match f.workload.as_str() {
                w @ ("idle.cpu" | "idle.statements") if f.n != 1 => (w, 1, "1 type".to_owned()),
                "manytypes" => ("manytypes.one_type", f.n, format!("1 type × {}", f.n)),
                "drain.ordered" | "drain.ordered_bursts" => {
                    ("drain.unkeyed", f.n, "the same unkeyed".to_owned())
                }
                "multiproc.p2" | "multiproc.p4" => ("multiproc.p1", f.n, "1 process".to_owned()),
                _ => return None,
            };
            Some((i, name, find(all, w, n)))
        })
        .collect();
    for (i, name, value) in links {
        if let Some(v) = value {
            all[i].baseline = Some(name);
            all[i].baseline_value = Some(v);
        }
    }
    for f in all.iter_mut().filter(|f| f.backend == kind.name()) {
        if let Some(b) = f.baseline_value {
            f.ratio = Some(f.value / b);
        }
    }
}

fn print_table(all: &[Figure]) {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n{:<9} {:<28} {:>8} {:>12} {:<7} {:<18} {:>10} {:>7} {:<16} met",
        "backend", "workload", "n", "value", "unit", "baseline", "base", "ratio", "target"
    );
    for f in all {
        let _ = writeln!(
            out,
            "{:<9} {:<28} {:>8} {:>12.1} {:<7} {:<18} {:>10} {:>7} {:<16} {}",
            f.backend,
            f.workload,
            f.n,
            f.value,
            f.unit,
            f.baseline.as_deref().unwrap_or("-"),
            f.baseline_value.map_or("-".into(), |b| format!("{b:.1}")),
            f.ratio.map_or("-".into(), |r| format!("{r:.2}")),
            f.target.as_deref().unwrap_or("-"),
            f.met.map_or("", |m| if m { "yes" } else { "NO" }),
        );
    }
    print!("{out}");
}
