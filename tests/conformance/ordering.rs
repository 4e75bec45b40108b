//! Order per key across processes: 100 keys × 10 steps, drained by two worker processes at
//! once (eight handlers each). Every key's steps start in enqueue order, each after the one
//! before it was settled; a poisoned key (its first step always fails) holds only its own
//! later steps, which stay queued behind its dead letter while every other key finishes.

use std::{
    collections::HashMap,
    process::Child,
    sync::Arc,
    time::{Duration, Instant},
};

use outbox::{enqueue_many_with, prelude::*, EnqueueOptions, Retention};
use serde::{Deserialize, Serialize};

use super::{harness::Harness, processes::spawn_child};

/// Keys, and steps per key.
const KEYS: usize = 100;
const STEPS: usize = 10;

/// One step of a key's sequence.
#[derive(Debug, Clone, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "conf.step", max_attempts = 2, ordered)]
pub struct Step {
    pub key: String,
    pub seq: u32,
}

/// The worker process: records each step (the database's time), holds it 3 ms, then
/// settles it — so a step that started after the one before it settled is recorded at a
/// later millisecond. The poisoned key's first step fails for good.
pub async fn ordered_child<H: Harness>(h: Arc<H>) {
    let outbox = Outbox::with_state(h.backend(), Arc::clone(&h))
        .register_with::<Step, _>(
            |step: Step, ctx: MessageContext<Arc<H>>| async move {
                if step.key == "poison" && step.seq == 0 {
                    return Err(HandlerError::permanent("poisoned"));
                }
                ctx.state().record_delivery(ctx.id().as_str()).await;
                tokio::time::sleep(Duration::from_millis(3)).await;
                Ok::<(), HandlerError>(())
            },
            QueueOptions::new().concurrency(8),
        )
        .retention(Retention::keep_for(Duration::from_secs(3600)))
        .shutdown_timeout(Duration::from_secs(1));
    outbox.drain().await.unwrap();
}

pub async fn two_processes_keep_each_keys_order_and_a_poisoned_key_holds_only_itself<H: Harness>() {
    let h = H::new().await;
    let mut keys: Vec<String> = (0..KEYS).map(|k| format!("account-{k}")).collect();
    keys.push("poison".into());
    // Round by round (step 0 of every key, then step 1, …): ids grow with the step.
    let mut ids: HashMap<(String, u32), String> = HashMap::new();
    for seq in 0..STEPS as u32 {
        let mut tx = h.pool().begin().await.unwrap();
        for key in &keys {
            let step = Step {
                key: key.clone(),
                seq,
            };
            let options = EnqueueOptions::new().order_key(key.clone());
            let done = enqueue_many_with(&mut *tx, std::iter::once(&step), options)
                .await
                .unwrap();
            ids.insert((key.clone(), seq), done[0].id().to_string());
        }
        tx.commit().await.unwrap();
    }
    let started = Instant::now();
    let children: Vec<Child> = (0..2)
        .map(|_| spawn_child(H::NAME, "ordered", &h.url()))
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "worker process failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let times: HashMap<String, (i64, i64)> = h
        .delivery_times()
        .await
        .into_iter()
        .map(|(id, pid, at)| (id, (pid, at)))
        .collect();
    let pids: std::collections::HashSet<i64> = times.values().map(|(p, _)| *p).collect();
    for key in &keys[..KEYS] {
        let mut last = i64::MIN;
        for seq in 0..STEPS as u32 {
            let id = &ids[&(key.clone(), seq)];
            let (_, at) = times
                .get(id)
                .unwrap_or_else(|| panic!("{key} step {seq} was delivered"));
            assert!(
                *at > last,
                "{key}: step {seq} started at {at}, not after step {} (at {last})",
                seq - 1
            );
            last = *at;
        }
    }
    assert_eq!(
        times.len(),
        KEYS * STEPS,
        "every step of every healthy key, once"
    );
    for seq in 1..STEPS as u32 {
        assert!(
            !times.contains_key(&ids[&("poison".to_owned(), seq)]),
            "the poisoned key's later steps wait behind its dead letter"
        );
    }
    let held = h.count_messages("conf.step").await;
    assert_eq!(
        held,
        (KEYS * STEPS + STEPS - 1) as i64,
        "delivered rows kept, and the poisoned key's 9 later steps still queued"
    );
    println!(
        "{}: {} keys × {STEPS} steps in order by {} processes in {:?}",
        H::NAME,
        KEYS,
        pids.len(),
        started.elapsed()
    );
}

/// A type not declared ordered.
#[derive(Debug, Clone, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "conf.unordered")]
pub struct Unordered {
    pub n: u32,
}

pub async fn a_type_not_declared_ordered_refuses_a_key<H: Harness>() {
    let h = H::new().await;
    let mut tx = h.pool().begin().await.unwrap();
    let err = Unordered { n: 1 }
        .enqueue_with(&mut *tx, EnqueueOptions::new().order_key("account-1"))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("order_key") && text.contains("#[outbox(ordered)]"),
        "{text}"
    );
    // Nothing was written; the transaction goes on.
    let _ = Unordered { n: 2 }.enqueue(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(h.count_messages("conf.unordered").await, 1);
}
