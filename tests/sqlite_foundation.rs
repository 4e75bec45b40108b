//! The foundation on a real SQLite file: transactional enqueue, workers, drain and run.

mod common;

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicU32, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant, SystemTime},
};

use common::{eventually, ulid, TestDb};
use outbox::prelude::*;
use outbox::{enqueue_many_with, DeadLetterFilter, EnqueueError, Error, MessageId};
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

#[derive(Debug, Clone, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "test.welcome", key(user_id))]
struct Welcome {
    user_id: i64,
    email: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "test.reminder")]
struct Reminder {
    user_id: i64,
}

#[derive(Debug, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "test.nobody_handles")]
struct Orphaned {
    n: u32,
}

#[derive(Debug, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "test.unserializable")]
struct Unserializable {
    by_pair: HashMap<(u32, u32), String>,
}

/// Records every delivered message id with the time it was handled.
#[derive(Default)]
struct Seen {
    deliveries: Mutex<Vec<(String, SystemTime)>>,
    calls: AtomicU32,
}

impl Seen {
    fn ids(&self) -> Vec<String> {
        self.deliveries
            .lock()
            .unwrap()
            .iter()
            .map(|(id, _)| id.clone())
            .collect()
    }
    fn record(&self, id: &MessageId) {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.deliveries
            .lock()
            .unwrap()
            .push((id.to_string(), SystemTime::now()));
    }
}

type Ctx = MessageContext<Arc<Seen>>;

async fn welcome(_: Welcome, ctx: Ctx) -> Result<(), HandlerError> {
    ctx.state().record(ctx.id());
    Ok(())
}

async fn reminder(_: Reminder, ctx: Ctx) -> Result<(), HandlerError> {
    ctx.state().record(ctx.id());
    Ok(())
}

fn outbox(db: &TestDb, seen: &Arc<Seen>) -> Outbox<SqliteBackend, Arc<Seen>> {
    Outbox::with_state(db.backend(), Arc::clone(seen))
        .register::<Welcome, _>(welcome)
        .register::<Reminder, _>(reminder)
}

async fn insert_user(tx: &mut sqlx::SqliteConnection, id: i64) {
    sqlx::query("INSERT INTO users (id, email) VALUES (?, ?)")
        .bind(id)
        .bind(format!("u{id}@example.test"))
        .execute(tx)
        .await
        .unwrap();
}

#[tokio::test]
async fn rollback_writes_no_message_and_commit_writes_exactly_one() {
    let db = TestDb::new().await;

    let mut tx = db.pool.begin().await.unwrap();
    insert_user(&mut tx, 1).await;
    let _ = Welcome {
        user_id: 1,
        email: "a@example.test".into(),
    }
    .enqueue(&mut *tx)
    .await
    .unwrap();
    tx.rollback().await.unwrap();
    assert_eq!(
        db.count("test.welcome").await,
        0,
        "rolled back message must not exist"
    );

    let mut tx = db.pool.begin().await.unwrap();
    insert_user(&mut tx, 1).await;
    let done = Welcome {
        user_id: 1,
        email: "a@example.test".into(),
    }
    .enqueue(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
    assert!(matches!(done, Enqueued::New(_)));
    assert_eq!(db.count("test.welcome").await, 1);

    let seen = Arc::new(Seen::default());
    let report = outbox(&db, &seen).drain().await.unwrap();
    assert_eq!(report.counts.delivered, 1);
    assert_eq!(seen.ids(), vec![done.id().to_string()]);
}

#[tokio::test]
async fn duplicate_key_is_reported_and_the_transaction_stays_usable() {
    let db = TestDb::new().await;
    let mut tx = db.pool.begin().await.unwrap();
    let first = Welcome {
        user_id: 7,
        email: "x@example.test".into(),
    }
    .enqueue(&mut *tx)
    .await
    .unwrap();
    let second = Welcome {
        user_id: 7,
        email: "other@example.test".into(),
    }
    .enqueue(&mut *tx)
    .await
    .unwrap();
    assert_eq!(
        second,
        Enqueued::Duplicate {
            existing: first.id().clone()
        }
    );
    // The transaction is still usable after the duplicate.
    insert_user(&mut tx, 7).await;
    tx.commit().await.unwrap();
    assert_eq!(db.count("test.welcome").await, 1);
    let users: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM users")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(users, 1);

    // A later transaction sees the committed key as taken too.
    let mut tx = db.pool.begin().await.unwrap();
    let third = Welcome {
        user_id: 7,
        email: "x@example.test".into(),
    }
    .enqueue(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
    assert!(third.is_duplicate());
    assert_eq!(third.id(), first.id());

    // Opting out of the key writes a second message.
    let mut tx = db.pool.begin().await.unwrap();
    let fourth = Welcome {
        user_id: 7,
        email: "x@example.test".into(),
    }
    .enqueue_with(&mut *tx, EnqueueOptions::new().without_idempotency_key())
    .await
    .unwrap();
    tx.commit().await.unwrap();
    assert!(!fourth.is_duplicate());
    assert_eq!(db.count("test.welcome").await, 2);
}

#[tokio::test]
async fn delayed_message_is_not_delivered_before_its_time() {
    let db = TestDb::new().await;
    let seen = Arc::new(Seen::default());
    let mut tx = db.pool.begin().await.unwrap();
    let enqueued_at = SystemTime::now();
    let delayed = Reminder { user_id: 1 }
        .enqueue_with(
            &mut *tx,
            EnqueueOptions::new().after(Duration::from_secs(2)),
        )
        .await
        .unwrap();
    tx.commit().await.unwrap();

    // A drain now finds nothing due and leaves the message queued.
    let report = outbox(&db, &seen).drain().await.unwrap();
    assert_eq!(report.counts.delivered, 0);
    assert_eq!(db.row(delayed.id().as_str()).await.0, "queued");

    // A running worker delivers it once due, and not before.
    let outbox = outbox(&db, &seen);
    let run = outbox.run_until(async {
        eventually(Duration::from_secs(10), || async {
            seen.calls.load(Ordering::SeqCst) == 1
        })
        .await;
    });
    run.await.unwrap();
    let (_, delivered_at) = seen.deliveries.lock().unwrap()[0].clone();
    let waited = delivered_at.duration_since(enqueued_at).unwrap();
    assert!(
        waited >= Duration::from_secs(2),
        "delivered after {waited:?}, before the 2 s delay"
    );
}

#[tokio::test]
async fn enqueue_many_writes_ten_thousand_messages_in_one_transaction() {
    let db = TestDb::new().await;
    let messages: Vec<Welcome> = (0..10_000)
        .map(|i| Welcome {
            user_id: i,
            email: format!("u{i}@example.test"),
        })
        .collect();
    let mut tx = db.pool.begin().await.unwrap();
    let started = Instant::now();
    let results = enqueue_many(&mut *tx, &messages).await.unwrap();
    println!("enqueue_many: 10,000 messages in {:?}", started.elapsed());
    // Keys already taken (in the same transaction) come back as duplicates, in order.
    let again = enqueue_many(&mut *tx, &messages[..3]).await.unwrap();
    tx.commit().await.unwrap();

    assert_eq!(results.len(), 10_000);
    assert!(results.iter().all(|r| !r.is_duplicate()));
    for (i, r) in again.iter().enumerate() {
        assert_eq!(
            r,
            &Enqueued::Duplicate {
                existing: results[i].id().clone()
            }
        );
    }
    assert_eq!(db.count("test.welcome").await, 10_000);
    let mut conn = db.pool.acquire().await.unwrap();
    let last = outbox::testing::queued::<Welcome, _>(&mut *conn)
        .await
        .pop()
        .unwrap();
    assert_eq!(
        (&last.id, last.message.user_id),
        (results[9_999].id(), 9_999)
    );
}

#[tokio::test]
async fn invalid_input_is_refused_with_a_clear_error_and_nothing_is_written() {
    let db = TestDb::new().await;
    let mut tx = db.pool.begin().await.unwrap();

    let bad = Unserializable {
        by_pair: HashMap::from([((1, 2), "x".to_string())]),
    };
    let err = bad.enqueue(&mut *tx).await.unwrap_err();
    assert!(
        matches!(
            err,
            EnqueueError::Serialize {
                type_tag: "test.unserializable",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("cannot be serialized"), "{err}");

    let long = "k".repeat(300);
    let err = Reminder { user_id: 1 }
        .enqueue_with(&mut *tx, EnqueueOptions::new().idempotency_key(long))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("300 bytes long; the limit is 255"),
        "{err}"
    );

    let err = Reminder { user_id: 1 }
        .enqueue_with(&mut *tx, EnqueueOptions::new().idempotency_key(""))
        .await
        .unwrap_err();
    assert!(matches!(err, EnqueueError::InvalidKey { .. }), "{err}");

    let err = Reminder { user_id: 1 }
        .enqueue_with(&mut *tx, EnqueueOptions::new().max_attempts(0))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("`max_attempts`"), "{err}");

    // One bad message in a batch refuses the whole batch before anything is written.
    let batch = vec![Reminder { user_id: 1 }, Reminder { user_id: 2 }];
    let err = enqueue_many_with(
        &mut *tx,
        &batch,
        EnqueueOptions::new().idempotency_key("a\u{7}b"),
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("control characters"), "{err}");

    // The transaction is still usable and holds no message.
    insert_user(&mut tx, 1).await;
    tx.commit().await.unwrap();
    let total: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM outbox_messages")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(total, 0);
}

#[tokio::test]
async fn undecodable_payloads_fail_their_message_and_the_worker_goes_on() {
    let db = TestDb::new().await;
    let wrong_shape = ulid();
    let not_json = ulid();
    db.insert_raw(&wrong_shape, "test.welcome", br#"{"user":"renamed field"}"#)
        .await;
    db.insert_raw(&not_json, "test.welcome", &[0xff, 0x00, 0x13])
        .await;
    let mut tx = db.pool.begin().await.unwrap();
    let good = Welcome {
        user_id: 1,
        email: "a@example.test".into(),
    }
    .enqueue(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();

    let seen = Arc::new(Seen::default());
    let outbox = outbox(&db, &seen);
    let report = outbox.drain().await.unwrap();
    assert_eq!(
        seen.ids(),
        vec![good.id().to_string()],
        "the good message is delivered"
    );
    assert_eq!(report.counts.given_up, 2);
    for id in [&wrong_shape, &not_json] {
        let filter = DeadLetterFilter::id(id.as_str());
        let dead = outbox
            .admin()
            .dead_letters()
            .list(&filter, 0, 10)
            .await
            .unwrap();
        assert_eq!(
            dead.len(),
            1,
            "an undecodable payload goes to the dead letters at once"
        );
        assert_eq!(dead[0].attempts, 1);
        assert!(
            dead[0]
                .last_error
                .contains("does not decode as `test.welcome`"),
            "{}",
            dead[0].last_error
        );
        assert_eq!(db.count_id(id).await, 0, "and leaves the queue");
    }
}

#[tokio::test]
async fn unregistered_types_are_reported_and_optionally_given_up() {
    let db = TestDb::new().await;
    let mut tx = db.pool.begin().await.unwrap();
    let orphan = Orphaned { n: 1 }.enqueue(&mut *tx).await.unwrap();
    let good = Reminder { user_id: 1 }.enqueue(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();

    let seen = Arc::new(Seen::default());
    let report = outbox(&db, &seen).drain().await.unwrap();
    assert_eq!(seen.ids(), vec![good.id().to_string()]);
    assert_eq!(report.unregistered.len(), 1);
    assert_eq!(report.unregistered[0].type_tag, "test.nobody_handles");
    assert_eq!(report.unregistered[0].pending, 1);
    assert_eq!(
        db.row(orphan.id().as_str()).await.0,
        "queued",
        "left for a process that handles it"
    );

    let outbox = outbox(&db, &seen).fail_unregistered_types(true);
    outbox.drain().await.unwrap();
    let dead = outbox
        .admin()
        .dead_letters()
        .list(&DeadLetterFilter::all(), 0, 10)
        .await
        .unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].id, *orphan.id());
    assert!(
        dead[0].last_error.contains("no handler is registered"),
        "{}",
        dead[0].last_error
    );
}

#[tokio::test]
async fn graceful_shutdown_finishes_the_in_flight_handler() {
    let db = TestDb::new().await;
    let mut tx = db.pool.begin().await.unwrap();
    let slow = Reminder { user_id: 1 }.enqueue(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();

    let started = Arc::new(Notify::new());
    let finished = Arc::new(AtomicU32::new(0));
    let state = (Arc::clone(&started), Arc::clone(&finished));
    let outbox = Outbox::with_state(db.backend(), state).register::<Reminder, _>(
        |_: Reminder, ctx: MessageContext<(Arc<Notify>, Arc<AtomicU32>)>| async move {
            ctx.state().0.notify_one();
            tokio::time::sleep(Duration::from_millis(800)).await;
            ctx.state().1.fetch_add(1, Ordering::SeqCst);
            Ok::<(), HandlerError>(())
        },
    );
    let began = Instant::now();
    // The shutdown signal fires as soon as the handler has started.
    outbox
        .run_until(async move { started.notified().await })
        .await
        .unwrap();
    assert_eq!(
        finished.load(Ordering::SeqCst),
        1,
        "run_until returned before the handler finished"
    );
    assert!(began.elapsed() >= Duration::from_millis(800));
    assert_eq!(
        db.count_id(slow.id().as_str()).await,
        0,
        "the result (delivered: row deleted) was written before returning"
    );
}

#[tokio::test]
async fn drain_returns_at_once_when_nothing_is_due() {
    let db = TestDb::new().await;
    let seen = Arc::new(Seen::default());
    let report = outbox(&db, &seen).drain().await.unwrap();
    assert_eq!(report.counts, Default::default());
    println!("empty drain took {:?}", report.elapsed);
}

#[tokio::test]
async fn configuration_mistakes_are_reported_before_anything_runs() {
    let db = TestDb::new().await;
    let seen = Arc::new(Seen::default());
    let twice = outbox(&db, &seen).register::<Welcome, _>(welcome);
    let err = twice.drain().await.unwrap_err();
    assert!(matches!(err, Error::Config(_)));
    assert!(
        err.to_string()
            .contains("`test.welcome` is registered twice"),
        "{err}"
    );

    let none = Outbox::new(db.backend());
    assert!(none
        .drain()
        .await
        .unwrap_err()
        .to_string()
        .contains("no message type is registered"));

    let zero = Outbox::with_state(db.backend(), Arc::clone(&seen))
        .register_with::<Welcome, _>(welcome, QueueOptions::new().concurrency(0));
    assert!(zero
        .drain()
        .await
        .unwrap_err()
        .to_string()
        .contains("concurrency must be at least 1"));

    for (min, max) in [
        (Duration::ZERO, Duration::from_secs(1)),
        (Duration::from_secs(2), Duration::from_secs(1)),
    ] {
        let polls = Outbox::with_state(db.backend(), Arc::clone(&seen))
            .register::<Welcome, _>(welcome)
            .idle_poll(min, max);
        let err = polls.drain().await.unwrap_err();
        assert!(matches!(err, Error::Config(_)));
        assert!(
            err.to_string().contains("idle_poll needs 0 < min ≤ max"),
            "{err}"
        );
    }
}

#[tokio::test]
async fn a_worker_survives_a_locked_database() {
    // Short busy timeout so the lock makes the worker's queries fail quickly.
    let db = TestDb::with_options(|o| o.busy_timeout(Duration::from_millis(50))).await;
    let seen = Arc::new(Seen::default());
    let outbox = Outbox::with_state(db.backend(), Arc::clone(&seen))
        .register_with::<Reminder, _>(
            reminder,
            QueueOptions::new()
                .heartbeat_interval(Duration::from_secs(1))
                .missed_heartbeats(2),
        )
        .shutdown_timeout(Duration::from_millis(500));
    let test = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        // Another process holds the write lock for 1.5 s.
        let mut locker = db.pool.acquire().await.unwrap();
        sqlx::query("BEGIN EXCLUSIVE")
            .execute(&mut *locker)
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        sqlx::query("COMMIT").execute(&mut *locker).await.unwrap();
        drop(locker);
        let mut tx = db.pool.begin().await.unwrap();
        let _ = Reminder { user_id: 1 }.enqueue(&mut *tx).await.unwrap();
        tx.commit().await.unwrap();
        let delivered = eventually(Duration::from_secs(20), || async {
            seen.calls.load(Ordering::SeqCst) == 1
        })
        .await;
        assert!(
            delivered,
            "the message committed after the lock was not delivered"
        );
    };
    // Claims that failed on the lock were retried by the same worker: no restart needed.
    outbox.run_until(test).await.unwrap();
}

#[tokio::test]
async fn run_picks_up_messages_committed_later() {
    let db = TestDb::new().await;
    let seen = Arc::new(Seen::default());
    let outbox = outbox(&db, &seen);
    let mut latencies = Vec::new();
    let test = async {
        tokio::time::sleep(Duration::from_millis(300)).await; // the worker is idle
        for i in 0..20 {
            let mut tx = db.pool.begin().await.unwrap();
            let _ = Reminder { user_id: i }.enqueue(&mut *tx).await.unwrap();
            tx.commit().await.unwrap();
            let committed = SystemTime::now();
            let n = i as u32 + 1;
            assert!(
                eventually(Duration::from_secs(5), || async {
                    seen.calls.load(Ordering::SeqCst) == n
                })
                .await
            );
            let handled = seen.deliveries.lock().unwrap()[i as usize].1;
            latencies.push(handled.duration_since(committed).unwrap_or_default());
            tokio::time::sleep(Duration::from_millis(37)).await;
        }
    };
    outbox.run_until(test).await.unwrap();
    latencies.sort();
    // Printed, not asserted: timing belongs to benchmarks.
    println!(
        "commit → handler start over 20 messages (poll 20 ms): p50 {:?}, max {:?}",
        latencies[latencies.len() / 2],
        latencies[latencies.len() - 1]
    );
    assert_eq!(latencies.len(), 20);
}

#[tokio::test]
async fn a_cron_drain_recovers_messages_a_killed_run_held() {
    let db = TestDb::new().await;
    let mut tx = db.pool.begin().await.unwrap();
    let held = Reminder { user_id: 1 }.enqueue(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();
    // A previous run claimed the message, then was killed: its lease ran out 10 minutes ago.
    sqlx::query(
        "UPDATE outbox_messages SET status = 'running', lease_owner = 'dead-0', attempts = 1, \
         lease_expires_at = unixepoch('subsec') * 1000 - 600000 WHERE id = ?",
    )
    .bind(held.id().as_str())
    .execute(&db.pool)
    .await
    .unwrap();
    let seen = Arc::new(Seen::default());
    let report = outbox(&db, &seen)
        .retention(outbox::Retention::keep_for(Duration::from_secs(3600)))
        .drain()
        .await
        .unwrap();
    assert_eq!(
        report.counts.delivered, 1,
        "the held message was recovered and delivered"
    );
    let (status, attempts, _) = db.row(held.id().as_str()).await;
    assert_eq!(status, "done");
    assert_eq!(attempts, 2, "the crashed attempt counts");
}

#[tokio::test]
async fn the_same_outbox_can_drain_again_and_again() {
    let db = TestDb::new().await;
    let seen = Arc::new(Seen::default());
    let outbox = outbox(&db, &seen);
    for round in 1..=3 {
        let mut tx = db.pool.begin().await.unwrap();
        let _ = Reminder { user_id: round }.enqueue(&mut *tx).await.unwrap();
        tx.commit().await.unwrap();
        let report = tokio::time::timeout(Duration::from_secs(20), outbox.drain())
            .await
            .expect("drain hung")
            .unwrap();
        assert_eq!(report.counts.delivered, 1, "round {round}");
    }
}

#[tokio::test]
async fn a_shutdown_timeout_longer_than_the_lease_is_refused() {
    let db = TestDb::new().await;
    let seen = Arc::new(Seen::default());
    let err = outbox(&db, &seen)
        .shutdown_timeout(Duration::from_secs(30))
        .drain()
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("must be shorter than heartbeat_interval"),
        "{err}"
    );
}

#[tokio::test]
async fn a_transaction_or_a_pooled_connection_can_be_passed_as_is() {
    let db = TestDb::new().await;
    let mut tx = db.pool.begin().await.unwrap();
    // `&mut tx` (no `*`), the slip sqlx users make most often, works like `&mut *tx`.
    let a = Welcome {
        user_id: 1,
        email: "a@example.com".into(),
    }
    .enqueue(&mut tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
    let mut conn = db.pool.acquire().await.unwrap();
    let b = Reminder { user_id: 2 }.enqueue(&mut conn).await.unwrap();
    drop(conn);
    let mut conn = db.pool.acquire().await.unwrap();
    let welcome = outbox::testing::assert_enqueued::<Welcome, _>(&mut *conn, |_| true).await;
    let reminder = outbox::testing::assert_enqueued::<Reminder, _>(&mut *conn, |_| true).await;
    assert_eq!((&welcome.id, &reminder.id), (a.id(), b.id()));
}
