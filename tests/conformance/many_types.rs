//! Fifty message types in one process: each type's messages are delivered exactly once,
//! including messages enqueued after every worker went idle (found by the process's one
//! due probe, or its commit signal), and a paused type's messages are never claimed.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use outbox::{enqueue_many, prelude::*};
use serde::{Deserialize, Serialize};

use super::harness::Harness;

/// Deliveries by (type, n).
#[derive(Default)]
pub struct Deliveries(Mutex<HashMap<(&'static str, i64), u32>>);

impl Deliveries {
    fn record(&self, tag: &'static str, n: i64) {
        *self.0.lock().unwrap().entry((tag, n)).or_default() += 1;
    }
    fn total(&self) -> u32 {
        self.0.lock().unwrap().values().sum()
    }
    fn of(&self, tag: &str) -> Vec<(i64, u32)> {
        let mut v: Vec<_> = self
            .0
            .lock()
            .unwrap()
            .iter()
            .filter(|((t, _), _)| *t == tag)
            .map(|((_, n), c)| (*n, *c))
            .collect();
        v.sort();
        v
    }
}

/// A message with a number, whatever its type.
trait Numbered: OutboxMessage {
    fn n(&self) -> i64;
    fn new(n: i64) -> Self;
}

async fn deliver<M: Numbered>(
    m: M,
    ctx: MessageContext<Arc<Deliveries>>,
) -> Result<(), HandlerError> {
    ctx.state().record(M::TYPE, m.n());
    Ok(())
}

macro_rules! many_types {
    ($($name:ident = $tag:literal),* $(,)?) => {
        $(
            #[derive(Debug, Clone, Serialize, Deserialize, OutboxMessage)]
            #[outbox(type = $tag)]
            struct $name {
                n: i64,
            }
            impl Numbered for $name {
                fn n(&self) -> i64 {
                    self.n
                }
                fn new(n: i64) -> Self {
                    Self { n }
                }
            }
        )*

        /// Every type's tag.
        const TAGS: &[&str] = &[$($tag),*];

        /// `outbox` with every type registered.
        fn register_all<B: outbox::store::Backend>(
            outbox: Outbox<B, Arc<Deliveries>>,
        ) -> Outbox<B, Arc<Deliveries>> {
            outbox$(.register::<$name, _>(deliver::<$name>))*
        }

        /// Enqueues messages `from..to` of every type in one transaction.
        async fn enqueue_all<H: Harness>(h: &H, from: i64, to: i64) {
            let mut tx = h.pool().begin().await.unwrap();
            $(
                let batch: Vec<$name> = (from..to).map(<$name as Numbered>::new).collect();
                enqueue_many(&mut *tx, &batch).await.unwrap();
            )*
            tx.commit().await.unwrap();
        }
    };
}

many_types!(
    T00 = "conf.many.00",
    T01 = "conf.many.01",
    T02 = "conf.many.02",
    T03 = "conf.many.03",
    T04 = "conf.many.04",
    T05 = "conf.many.05",
    T06 = "conf.many.06",
    T07 = "conf.many.07",
    T08 = "conf.many.08",
    T09 = "conf.many.09",
    T10 = "conf.many.10",
    T11 = "conf.many.11",
    T12 = "conf.many.12",
    T13 = "conf.many.13",
    T14 = "conf.many.14",
    T15 = "conf.many.15",
    T16 = "conf.many.16",
    T17 = "conf.many.17",
    T18 = "conf.many.18",
    T19 = "conf.many.19",
    T20 = "conf.many.20",
    T21 = "conf.many.21",
    T22 = "conf.many.22",
    T23 = "conf.many.23",
    T24 = "conf.many.24",
    T25 = "conf.many.25",
    T26 = "conf.many.26",
    T27 = "conf.many.27",
    T28 = "conf.many.28",
    T29 = "conf.many.29",
    T30 = "conf.many.30",
    T31 = "conf.many.31",
    T32 = "conf.many.32",
    T33 = "conf.many.33",
    T34 = "conf.many.34",
    T35 = "conf.many.35",
    T36 = "conf.many.36",
    T37 = "conf.many.37",
    T38 = "conf.many.38",
    T39 = "conf.many.39",
    T40 = "conf.many.40",
    T41 = "conf.many.41",
    T42 = "conf.many.42",
    T43 = "conf.many.43",
    T44 = "conf.many.44",
    T45 = "conf.many.45",
    T46 = "conf.many.46",
    T47 = "conf.many.47",
    T48 = "conf.many.48",
    T49 = "conf.many.49"
);

/// Fifty types, one paused: a backlog of 20 per type, then 5 more per type once every
/// worker is idle. Each message of the 49 running types is delivered exactly once; the
/// paused type's 25 stay queued, none claimed.
pub async fn fifty_types_deliver_once_and_a_paused_type_waits<H: Harness>() {
    let h = H::new().await;
    let paused = "conf.many.07";
    let deliveries = Arc::new(Deliveries::default());
    let outbox = register_all(Outbox::with_state(h.backend(), Arc::clone(&deliveries)));
    outbox
        .admin()
        .pause(paused, "held for the test")
        .await
        .unwrap();
    enqueue_all(&h, 0, 20).await;
    let running = (TAGS.len() as u32 - 1) * 20;
    let later = (TAGS.len() as u32 - 1) * 25;
    outbox
        .run_until(async {
            let deadline = Instant::now() + Duration::from_secs(60);
            while deliveries.total() < running && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
            assert_eq!(deliveries.total(), running, "the backlog of 49 types");
            // Every worker is idle now (the probe backs off): new messages are found.
            tokio::time::sleep(Duration::from_millis(1_500)).await;
            enqueue_all(&h, 20, 25).await;
            let deadline = Instant::now() + Duration::from_secs(30);
            while deliveries.total() < later && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
            // Anything delivered twice or from the paused type would show by now.
            tokio::time::sleep(Duration::from_millis(500)).await;
        })
        .await
        .unwrap();
    for tag in TAGS {
        let got = deliveries.of(tag);
        if *tag == paused {
            assert!(got.is_empty(), "the paused type delivered {got:?}");
        } else {
            let expected: Vec<(i64, u32)> = (0..25).map(|n| (n, 1)).collect();
            assert_eq!(got, expected, "{tag}: every message exactly once");
        }
    }
    let counts = outbox.admin().status_counts().await.unwrap();
    let held = counts
        .iter()
        .find(|c| c.type_tag == paused)
        .expect("paused type counted");
    assert_eq!(
        (held.paused, held.pending, held.running),
        (25, 0, 0),
        "the paused type's messages were never claimed (and count as paused)"
    );
    let others: u64 = counts
        .iter()
        .filter(|c| c.type_tag != paused)
        .map(|c| c.pending + c.running + c.retrying + c.scheduled)
        .sum();
    assert_eq!(others, 0, "nothing else is left: {counts:?}");
}
