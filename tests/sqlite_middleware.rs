//! The middleware stack on a real SQLite file: durable retries, dead letters, orphan
//! cleanup, rate buckets, pause/resume and status counts.

#[path = "common/captured.rs"]
mod captured;
mod common;

use std::{
    sync::{
        atomic::{AtomicBool, AtomicU32, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use captured::Captured;
use common::{eventually, TestDb};
use outbox::{
    backend::{RateBucketStore, TokenGrant},
    clock::ManualClock,
    prelude::*,
    DeadLetterFilter, RateLimit, Relevance, Retention, RetrySchedule,
};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "mw.mail", max_attempts = 5)]
struct Mail {
    n: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "mw.fragile", max_attempts = 2, timeout = "300ms")]
enum Fragile {
    Panic,
    Hang,
}

/// What the handlers saw.
#[derive(Default)]
struct Log {
    starts: Mutex<Vec<(u32, Instant)>>,
    fail_permanently: AtomicBool,
}

impl Log {
    fn calls(&self) -> usize {
        self.starts.lock().unwrap().len()
    }
    fn calls_for(&self, n: u32) -> Vec<Instant> {
        self.starts
            .lock()
            .unwrap()
            .iter()
            .filter(|(m, _)| *m == n)
            .map(|(_, t)| *t)
            .collect()
    }
    fn record(&self, n: u32) -> usize {
        let mut starts = self.starts.lock().unwrap();
        starts.push((n, Instant::now()));
        starts.iter().filter(|(m, _)| *m == n).count()
    }
}

type Ctx = MessageContext<Arc<Log>>;

fn immediate_retries() -> QueueOptions {
    QueueOptions::new().retry(RetrySchedule::fixed([Duration::ZERO]))
}

async fn enqueue_mails(db: &TestDb, ns: impl IntoIterator<Item = u32>) -> Vec<Enqueued> {
    let mut tx = db.pool.begin().await.unwrap();
    let mut out = Vec::new();
    for n in ns {
        out.push(Mail { n }.enqueue(&mut *tx).await.unwrap());
    }
    tx.commit().await.unwrap();
    out
}

#[tokio::test]
async fn a_handler_failing_twice_runs_on_the_schedule_then_succeeds() {
    let db = TestDb::new().await;
    let log = Arc::new(Log::default());
    let ids = enqueue_mails(&db, [1]).await;
    let schedule = RetrySchedule::fixed([Duration::from_secs(1), Duration::from_secs(2)]);
    let outbox = Outbox::with_state(db.backend(), Arc::clone(&log))
        .retention(Retention::keep_for(Duration::from_secs(3600)))
        .register_with::<Mail, _>(
            |m: Mail, ctx: Ctx| async move {
                match ctx.state().record(m.n) {
                    1 | 2 => Err(HandlerError::retry("451 try again later")),
                    _ => Ok(()),
                }
            },
            QueueOptions::new().retry(schedule),
        );
    outbox
        .run_until(async {
            assert!(eventually(Duration::from_secs(15), || async { log.calls() == 3 }).await)
        })
        .await
        .unwrap();
    let t = log.calls_for(1);
    let (gap1, gap2) = (t[1] - t[0], t[2] - t[1]);
    println!("attempts at t=0, +{gap1:?}, +{gap2:?} (schedule 1 s, 2 s)");
    assert!(
        gap1 >= Duration::from_secs(1) && gap1 < Duration::from_millis(2_300),
        "{gap1:?}"
    );
    assert!(
        gap2 >= Duration::from_secs(2) && gap2 < Duration::from_millis(3_300),
        "{gap2:?}"
    );
    assert!(
        eventually(Duration::from_secs(2), || async {
            db.row(ids[0].id().as_str()).await.0 == "done"
        })
        .await
    );
    assert_eq!(
        db.row(ids[0].id().as_str()).await.1,
        3,
        "three attempts recorded"
    );
}

#[tokio::test]
async fn a_handler_always_failing_ends_in_the_dead_letters_with_its_last_error() {
    let db = TestDb::new().await;
    let log = Arc::new(Log::default());
    let ids = enqueue_mails(&db, [7]).await;
    let outbox = Outbox::with_state(db.backend(), Arc::clone(&log)).register_with::<Mail, _>(
        |m: Mail, ctx: Ctx| async move {
            let n = ctx.state().record(m.n);
            Err::<(), _>(HandlerError::retry(format!("451 greylisted (attempt {n})")))
        },
        immediate_retries(),
    );
    let dead = outbox.admin().dead_letters();
    outbox
        .run_until(async {
            let f = DeadLetterFilter::all();
            assert!(
                eventually(Duration::from_secs(15), || async {
                    dead.count(&f).await.unwrap() == 1
                })
                .await
            );
        })
        .await
        .unwrap();
    let letters = dead
        .list(&DeadLetterFilter::type_tag("mw.mail"), 0, 10)
        .await
        .unwrap();
    assert_eq!(letters.len(), 1);
    let letter = &letters[0];
    assert_eq!(letter.id, *ids[0].id());
    assert_eq!((letter.attempts, letter.max_attempts), (5, 5));
    assert!(
        letter.last_error.contains("451 greylisted (attempt 5)"),
        "{}",
        letter.last_error
    );
    assert!(
        letter.last_error.contains("attempts exhausted: 5 of 5"),
        "{}",
        letter.last_error
    );
    assert_eq!(
        serde_json::from_slice::<Mail>(&letter.payload).unwrap().n,
        7
    );
    assert!(letter.enqueued_at.unwrap() <= letter.failed_at);
    assert_eq!(
        db.count_id(ids[0].id().as_str()).await,
        0,
        "moved out of the queue"
    );
    assert_eq!(log.calls(), 5);
}

#[tokio::test]
async fn a_permanent_error_is_dead_lettered_after_one_attempt() {
    let db = TestDb::new().await;
    let log = Arc::new(Log::default());
    enqueue_mails(&db, [3]).await;
    let outbox = Outbox::with_state(db.backend(), Arc::clone(&log)).register::<Mail, _>(
        |m: Mail, ctx: Ctx| async move {
            ctx.state().record(m.n);
            Err::<(), _>(HandlerError::permanent("550 5.1.1 no such user"))
        },
    );
    let report = outbox.drain().await.unwrap();
    assert_eq!(report.counts.given_up, 1);
    let letters = outbox
        .admin()
        .dead_letters()
        .list(&DeadLetterFilter::all(), 0, 10)
        .await
        .unwrap();
    assert_eq!(letters[0].attempts, 1);
    assert!(letters[0].last_error.contains("550 5.1.1 no such user"));
    assert_eq!(log.calls(), 1);
}

#[tokio::test]
async fn timeouts_and_panics_are_retried_then_dead_lettered() {
    let db = TestDb::new().await;
    let mut tx = db.pool.begin().await.unwrap();
    let _ = Fragile::Panic.enqueue(&mut *tx).await.unwrap();
    let _ = Fragile::Hang.enqueue(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();
    let calls = Arc::new(AtomicU32::new(0));
    let outbox = Outbox::with_state(db.backend(), Arc::clone(&calls)).register_with::<Fragile, _>(
        |m: Fragile, ctx: MessageContext<Arc<AtomicU32>>| async move {
            ctx.state().fetch_add(1, Ordering::SeqCst);
            match m {
                Fragile::Panic => panic!("boom in the handler"),
                Fragile::Hang => tokio::time::sleep(Duration::from_secs(3600)).await,
            }
            Ok::<(), HandlerError>(())
        },
        immediate_retries(),
    );
    let dead = outbox.admin().dead_letters();
    outbox
        .run_until(async {
            let f = DeadLetterFilter::all();
            assert!(
                eventually(Duration::from_secs(15), || async {
                    dead.count(&f).await.unwrap() == 2
                })
                .await
            );
        })
        .await
        .unwrap();
    let letters = dead.list(&DeadLetterFilter::all(), 0, 10).await.unwrap();
    let errors: Vec<&str> = letters.iter().map(|l| l.last_error.as_str()).collect();
    assert!(
        errors
            .iter()
            .any(|e| e.contains("handler panicked: boom in the handler")),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e.contains("handler timed out after 300ms")),
        "{errors:?}"
    );
    assert!(letters.iter().all(|l| l.attempts == 2));
    assert_eq!(calls.load(Ordering::SeqCst), 4, "two attempts each");
}

#[tokio::test]
async fn requeue_delivers_and_purge_removes_while_a_worker_runs() {
    let db = TestDb::new().await;
    let log = Arc::new(Log::default());
    log.fail_permanently.store(true, Ordering::SeqCst);
    let ids = enqueue_mails(&db, [1, 2, 3, 4]).await;
    let outbox = Outbox::with_state(db.backend(), Arc::clone(&log))
        .retention(Retention::keep_for(Duration::from_secs(3600)))
        .register::<Mail, _>(|m: Mail, ctx: Ctx| async move {
            ctx.state().record(m.n);
            if ctx.state().fail_permanently.load(Ordering::SeqCst) {
                return Err(HandlerError::permanent("template missing"));
            }
            Ok(())
        });
    let dead = outbox.admin().dead_letters();
    let all = DeadLetterFilter::all();
    outbox
        .run_until(async {
            assert!(
                eventually(Duration::from_secs(10), || async {
                    dead.count(&all).await.unwrap() == 4
                })
                .await
            );
            log.fail_permanently.store(false, Ordering::SeqCst); // the template is fixed

            assert!(dead.requeue(ids[0].id()).await.unwrap());
            assert!(
                eventually(Duration::from_secs(5), || async {
                    log.calls_for(1).len() == 2
                })
                .await
            );
            assert!(dead.purge(ids[1].id()).await.unwrap());
            assert!(!dead.purge(ids[1].id()).await.unwrap(), "already purged");
            let again = dead.requeue_type("mw.mail").await.unwrap();
            assert_eq!((again.requeued, again.key_taken), (2, 0));
            assert!(eventually(Duration::from_secs(5), || async { log.calls() == 4 + 3 }).await);
            assert_eq!(dead.count(&all).await.unwrap(), 0);
        })
        .await
        .unwrap();
    assert_eq!(
        log.calls_for(2).len(),
        1,
        "the purged message was not delivered again"
    );
    for id in [&ids[0], &ids[2], &ids[3]] {
        assert!(
            eventually(Duration::from_secs(2), || async {
                db.row(id.id().as_str()).await.0 == "done"
            })
            .await
        );
    }
}

#[tokio::test]
async fn requeue_all_and_purge_older_than_work_without_workers() {
    let db = TestDb::new().await;
    let log = Arc::new(Log::default());
    enqueue_mails(&db, [1, 2]).await;
    let outbox = Outbox::with_state(db.backend(), Arc::clone(&log)).register::<Mail, _>(
        |_: Mail, _: Ctx| async { Err::<(), _>(HandlerError::permanent("no")) },
    );
    outbox.drain().await.unwrap();
    let dead = outbox.admin().dead_letters();
    assert_eq!(dead.requeue_all().await.unwrap().requeued, 2);
    assert_eq!(db.count("mw.mail").await, 2, "back in the queue");
    outbox.drain().await.unwrap();
    assert_eq!(
        dead.purge_older_than(SystemTime::now() - Duration::from_secs(3600))
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        dead.purge_older_than(SystemTime::now() + Duration::from_secs(1))
            .await
            .unwrap(),
        2
    );
}

#[derive(Debug, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "mw.confirmation")]
struct Confirmation {
    user_id: i64,
}

#[tokio::test]
async fn an_orphan_is_dropped_without_calling_the_handler() {
    let db = TestDb::new().await;
    let mut tx = db.pool.begin().await.unwrap();
    for id in [1, 2] {
        sqlx::query("INSERT INTO users (id, email) VALUES (?, 'x')")
            .bind(id)
            .execute(&mut *tx)
            .await
            .unwrap();
    }
    let kept = Confirmation { user_id: 1 }.enqueue(&mut *tx).await.unwrap();
    let orphan = Confirmation { user_id: 2 }.enqueue(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();
    sqlx::query("DELETE FROM users WHERE id = 2")
        .execute(&db.pool)
        .await
        .unwrap(); // registration deleted

    let handled = Arc::new(Mutex::new(Vec::new()));
    let state = (db.pool.clone(), Arc::clone(&handled));
    let outbox = Outbox::with_state(db.backend(), state)
        .retention(Retention::keep_for(Duration::from_secs(3600)))
        .register::<Confirmation, _>(|m: Confirmation, ctx: MessageContext<(sqlx::SqlitePool, Arc<Mutex<Vec<i64>>>)>| async move {
            ctx.state().1.lock().unwrap().push(m.user_id);
            Ok::<(), HandlerError>(())
        })
        .orphan_check::<Confirmation, _, _, _, _>(|m, state| async move {
            let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM users WHERE id = ?")
                .bind(m.user_id)
                .fetch_one(&state.0)
                .await?;
            Ok::<_, sqlx::Error>(if n == 1 {
                Relevance::Relevant
            } else {
                Relevance::Orphan(format!("user {} was deleted", m.user_id))
            })
        });
    let report = outbox.drain().await.unwrap();
    assert_eq!(
        *handled.lock().unwrap(),
        vec![1],
        "the handler never saw the orphan"
    );
    assert_eq!((report.counts.delivered, report.counts.orphaned), (1, 1));
    assert_eq!(db.row(kept.id().as_str()).await.0, "done");
    let (status, _, note) = db.row(orphan.id().as_str()).await;
    assert_eq!(status, "done", "completed without the handler");
    assert!(note.unwrap().contains("user 2 was deleted"));
}

#[tokio::test]
async fn a_snooze_comes_back_without_using_an_attempt() {
    let db = TestDb::new().await;
    let log = Arc::new(Log::default());
    let ids = enqueue_mails(&db, [5]).await;
    let outbox = Outbox::with_state(db.backend(), Arc::clone(&log))
        .retention(Retention::keep_for(Duration::from_secs(3600)))
        .register::<Mail, _>(|m: Mail, ctx: Ctx| async move {
            match ctx.state().record(m.n) {
                1 => Err(HandlerError::snooze(Duration::from_secs(1))),
                _ => Ok(()),
            }
        });
    outbox
        .run_until(async {
            assert!(eventually(Duration::from_secs(10), || async { log.calls() == 2 }).await)
        })
        .await
        .unwrap();
    let t = log.calls_for(5);
    assert!(t[1] - t[0] >= Duration::from_secs(1));
    assert!(
        eventually(Duration::from_secs(2), || async {
            db.row(ids[0].id().as_str()).await.0 == "done"
        })
        .await
    );
    let (attempts, max): (i64, i64) =
        sqlx::query_as("SELECT attempts, max_attempts FROM outbox_messages WHERE id = ?")
            .bind(ids[0].id().as_str())
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(
        (attempts, max),
        (1, 5),
        "two calls, one attempt: the snoozed one was given back"
    );
}

#[tokio::test]
async fn a_paused_type_delivers_nothing_until_resumed_then_everything() {
    let db = TestDb::new().await;
    let log = Arc::new(Log::default());
    enqueue_mails(&db, 1..=30).await;
    let outbox = Outbox::with_state(db.backend(), Arc::clone(&log)).register_with::<Mail, _>(
        |m: Mail, ctx: Ctx| async move {
            ctx.state().record(m.n);
            tokio::time::sleep(Duration::from_millis(50)).await;
            Ok::<(), HandlerError>(())
        },
        QueueOptions::new().concurrency(1),
    );
    // Another process (here: another handle on the same database) pauses the newsletter.
    let admin = Outbox::new(db.backend()).admin();
    outbox
        .run_until(async {
            assert!(eventually(Duration::from_secs(5), || async { log.calls() >= 3 }).await);
            admin.pause("mw.mail", "typo in the text").await.unwrap();
            tokio::time::sleep(Duration::from_millis(1_200)).await; // seen within about a second
            let frozen = log.calls();
            tokio::time::sleep(Duration::from_millis(1_500)).await;
            assert_eq!(log.calls(), frozen, "a paused type started new messages");
            assert!(frozen < 30);
            assert_eq!(admin.paused().await.unwrap()[0].reason, "typo in the text");
            assert!(admin.resume("mw.mail").await.unwrap());
            assert!(eventually(Duration::from_secs(10), || async { log.calls() == 30 }).await);
        })
        .await
        .unwrap();
}

#[tokio::test]
async fn a_type_paused_before_start_waits_for_resume() {
    let db = TestDb::new().await;
    let log = Arc::new(Log::default());
    enqueue_mails(&db, [1, 2]).await;
    let outbox = Outbox::with_state(db.backend(), Arc::clone(&log)).register::<Mail, _>(
        |m: Mail, ctx: Ctx| async move {
            ctx.state().record(m.n);
            Ok::<(), HandlerError>(())
        },
    );
    let admin = outbox.admin();
    admin.pause("mw.mail", "").await.unwrap();
    let report = outbox.drain().await.unwrap();
    assert_eq!(report.counts.delivered, 0, "a drain skips paused types");
    admin.resume("mw.mail").await.unwrap();
    assert_eq!(outbox.drain().await.unwrap().counts.delivered, 2);
}

#[tokio::test]
async fn a_long_wait_for_a_token_frees_the_slot_and_keeps_the_place_in_line() {
    let db = TestDb::new().await;
    let log = Arc::new(Log::default());
    let ids = enqueue_mails(&db, [1, 2]).await;
    let outbox = Outbox::with_state(db.backend(), Arc::clone(&log))
        .rate_limit("smtp", RateLimit::per_hour(1.0))
        .register_with::<Mail, _>(
            |m: Mail, ctx: Ctx| async move {
                ctx.state().record(m.n);
                Ok::<(), HandlerError>(())
            },
            QueueOptions::new().rate_limit("smtp"),
        );
    let started = Instant::now();
    let report = outbox.drain().await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the drain waited for the token"
    );
    assert_eq!(report.counts.delivered, 1);
    assert_eq!(report.counts.deferred, 1);
    // Both started at once (concurrency 10); one of them found the bucket empty.
    let waiting = if log.calls_for(1).is_empty() {
        &ids[0]
    } else {
        &ids[1]
    };
    let (status, attempts, _) = db.row(waiting.id().as_str()).await;
    assert_eq!(
        (status.as_str(), attempts),
        ("queued", 0),
        "given back, not an attempt"
    );
    let (due, enqueued): (i64, i64) =
        sqlx::query_as("SELECT due_at, enqueued_at FROM outbox_messages WHERE id = ?")
            .bind(waiting.id().as_str())
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(
        due, enqueued,
        "its due time, and so its place in line, is kept"
    );
    let counts = outbox.admin().status_counts().await.unwrap();
    assert_eq!((counts[0].pending, counts[0].done), (1, 0), "{counts:?}");
}

#[tokio::test]
async fn the_bucket_refills_at_its_rate_and_a_new_rate_applies_at_once() {
    let db = TestDb::new().await;
    let backend = db.backend();
    // In the future, so the database works at this clock's time exactly.
    let clock = ManualClock::new(UNIX_EPOCH + Duration::from_secs(4_000_000_000));
    let admin = Outbox::new(backend.clone())
        .clock(Arc::new(clock.clone()))
        .admin();
    admin
        .set_rate_limit("smtp", RateLimit::per_second(2.0).burst(5))
        .await
        .unwrap();
    let secs = |c: &ManualClock| outbox::clock::Clock::database_now(c);

    for _ in 0..5 {
        assert_eq!(
            backend.take_token("smtp", secs(&clock)).await.unwrap(),
            TokenGrant::Granted,
            "burst"
        );
    }
    let TokenGrant::Wait(wait) = backend.take_token("smtp", secs(&clock)).await.unwrap() else {
        panic!("granted past the burst")
    };
    assert!((wait.as_secs_f64() - 0.5).abs() < 1e-6, "{wait:?}");
    clock.advance(Duration::from_millis(500));
    assert_eq!(
        backend.take_token("smtp", secs(&clock)).await.unwrap(),
        TokenGrant::Granted
    );

    // Changed at runtime: 1 per 10 s from now on.
    admin
        .set_rate_limit("smtp", RateLimit::per_second(0.1).burst(5))
        .await
        .unwrap();
    clock.advance(Duration::from_millis(500));
    let TokenGrant::Wait(wait) = backend.take_token("smtp", secs(&clock)).await.unwrap() else {
        panic!()
    };
    // 0.5 s at the new rate earned 0.05 tokens: 0.95 more take 9.5 s.
    assert!(
        (wait.as_secs_f64() - 9.5).abs() < 1e-6,
        "the new rate applies at once: {wait:?}"
    );
    clock.advance(Duration::from_secs(3_600));
    for _ in 0..5 {
        assert_eq!(
            backend.take_token("smtp", secs(&clock)).await.unwrap(),
            TokenGrant::Granted
        );
    }
    assert!(
        matches!(
            backend.take_token("smtp", secs(&clock)).await.unwrap(),
            TokenGrant::Wait(_)
        ),
        "capped at the burst"
    );
    assert_eq!(
        backend.take_token("nope", secs(&clock)).await.unwrap(),
        TokenGrant::NoSuchBucket
    );
    let err = admin
        .set_rate_limit("bad", RateLimit::per_second(0.0))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("the rate must be positive"),
        "{err}"
    );
}

#[tokio::test]
async fn a_missing_bucket_is_a_configuration_error_at_start() {
    let db = TestDb::new().await;
    let outbox = Outbox::new(db.backend()).register_with::<Mail, _>(
        |_: Mail, _: MessageContext| async { Ok::<(), HandlerError>(()) },
        QueueOptions::new().rate_limit("nowhere"),
    );
    let err = outbox.drain().await.unwrap_err();
    assert!(
        err.to_string()
            .contains("rate bucket `nowhere`, which does not exist"),
        "{err}"
    );
}

#[tokio::test]
async fn status_counts_cover_every_state_in_one_call() {
    let db = TestDb::new().await;
    let mut tx = db.pool.begin().await.unwrap();
    let _ = Mail { n: 1 }.enqueue(&mut *tx).await.unwrap();
    let _ = Mail { n: 2 }.enqueue(&mut *tx).await.unwrap();
    let _ = Mail { n: 3 }
        .enqueue_with(
            &mut *tx,
            EnqueueOptions::new().after(Duration::from_secs(600)),
        )
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let outbox = Outbox::new(db.backend())
        .retention(Retention::keep_for(Duration::from_secs(3600)))
        .register_with::<Mail, _>(
            |m: Mail, _: MessageContext| async move {
                match m.n {
                    1 => Ok(()),
                    _ => Err(HandlerError::permanent("rejected")),
                }
            },
            QueueOptions::new(),
        );
    outbox.drain().await.unwrap();
    let mut tx = db.pool.begin().await.unwrap();
    let _ = Mail { n: 4 }.enqueue(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();
    let started = Instant::now();
    let counts = outbox.admin().status_counts().await.unwrap();
    println!("status_counts took {:?}", started.elapsed());
    assert_eq!(counts.len(), 1);
    let c = &counts[0];
    assert_eq!(c.type_tag, "mw.mail");
    assert_eq!(
        (
            c.pending,
            c.scheduled,
            c.running,
            c.retrying,
            c.done,
            c.dead
        ),
        (1, 1, 0, 0, 1, 1),
        "{c:?}"
    );
}

#[tokio::test]
async fn a_panicking_orphan_check_defers_the_message_and_the_worker_goes_on() {
    let db = TestDb::new().await;
    let log = Arc::new(Log::default());
    let ids = enqueue_mails(&db, [1, 2]).await;
    let outbox = Outbox::with_state(db.backend(), Arc::clone(&log))
        .register::<Mail, _>(|m: Mail, ctx: Ctx| async move {
            ctx.state().record(m.n);
            Ok::<(), HandlerError>(())
        })
        .orphan_check::<Mail, _, _, _, _>(|m, _| async move {
            if m.n == 1 {
                panic!("the check's query builder panicked");
            }
            Ok::<_, std::io::Error>(true)
        });
    let report = outbox.drain().await.unwrap();
    assert_eq!(
        report.counts.delivered, 1,
        "the other message was delivered"
    );
    assert_eq!(report.counts.deferred, 1);
    let (status, attempts, last) = db.row(ids[0].id().as_str()).await;
    assert_eq!(
        (status.as_str(), attempts),
        ("queued", 0),
        "deferred, its attempt given back"
    );
    assert!(last.unwrap().contains("orphan check panicked"));
}

#[tokio::test]
async fn every_token_grant_is_traced_with_its_bucket_and_time() {
    let captured = Captured::default();
    let subscriber = captured.subscriber(&format!("{}=trace", outbox::RATE_GRANT_EVENT_TARGET));
    // This test's runtime runs every task on this thread, so a thread default suffices.
    let _guard = tracing::subscriber::set_default(subscriber);

    let db = TestDb::new().await;
    enqueue_mails(&db, [1, 2]).await;
    let outbox = Outbox::with_state(db.backend(), Arc::new(Log::default()))
        .rate_limit("smtp", RateLimit::per_hour(1.0).burst(3))
        .register_with::<Mail, _>(
            |_: Mail, _: Ctx| async { Ok::<(), HandlerError>(()) },
            QueueOptions::new().rate_limit("smtp"),
        );
    assert_eq!(outbox.drain().await.unwrap().counts.delivered, 2);

    let text = captured.take();
    let grants: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("rate token granted"))
        .collect();
    assert_eq!(grants.len(), 2, "one event per token: {text}");
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    for line in grants {
        assert!(line.contains("bucket=smtp"), "{line}");
        let at: f64 = line
            .split("granted_at=")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no granted_at in {line}"));
        assert!(
            (now - 60.0..=now).contains(&at),
            "bucket clock: {at} vs {now}"
        );
    }
}

/// A breaker's probe must be a message the downstream answered: when the probe's payload
/// does not decode (the worker fails it without calling the handler), the breaker stays
/// open and the next message probes; that one finds it still open and closes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_the_worker_fails_itself_is_no_probe() {
    use outbox::store::{BreakerStore, Now};
    let db = TestDb::new().await;
    let admin = Admin::new(db.backend());
    // The undecodable one is older, so it is claimed first.
    db.insert_raw(&common::ulid(), "mw.mail", b"{\"n\": \"not a number\"}")
        .await;
    tokio::time::sleep(Duration::from_millis(5)).await;
    let mut tx = db.pool.begin().await.unwrap();
    let _ = Mail { n: 1 }.enqueue(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();
    let opened = db
        .backend()
        .open_breaker("api", "503", Now::Database, Duration::from_millis(1))
        .await
        .unwrap();
    assert!(opened);
    /// The admin, and whether the breaker was open when each message started.
    type Probed = (Admin<SqliteBackend>, Arc<Mutex<Vec<bool>>>);
    let open_at_probe = Arc::new(Mutex::new(Vec::new()));
    let state: Probed = (admin.clone(), Arc::clone(&open_at_probe));
    let report = Outbox::with_state(db.backend(), state)
        .register_with::<Mail, _>(
            |_: Mail, ctx: MessageContext<Probed>| async move {
                let (admin, seen) = ctx.state();
                let open = admin.breakers().await.unwrap()[0].is_open();
                seen.lock().unwrap().push(open);
                Ok::<(), HandlerError>(())
            },
            QueueOptions::new().concurrency(1).breaker(
                Breaker::named("api")
                    .probe_backoff(Duration::from_millis(50), Duration::from_millis(50)),
            ),
        )
        .drain()
        .await
        .unwrap();
    assert_eq!((report.counts.delivered, report.counts.given_up), (1, 1));
    assert_eq!(
        *open_at_probe.lock().unwrap(),
        [true],
        "the decodable message was the probe: the breaker was still open when it ran"
    );
    assert!(
        !admin.breakers().await.unwrap()[0].is_open(),
        "its answer closed it"
    );
}
