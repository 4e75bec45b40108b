//! The guarantees every backend must give, written once and run per backend.

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant, SystemTime},
};

use outbox::{
    backend::{RateBucketStore, TokenGrant},
    enqueue_many,
    prelude::*,
    DeadLetterFilter, LiveFilter, LiveState, RateLimit, Relevance, Retention, RetrySchedule,
};
use serde::{Deserialize, Serialize};

use super::{captured::Captured, harness::Harness};

#[derive(Debug, Clone, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "conf.mail", key(n), max_attempts = 5)]
pub struct Mail {
    pub n: i64,
}

/// A different shape under the same tag: what an old deploy might have queued.
#[derive(Debug, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "conf.mail")]
struct OldMail {
    number_as_text: String,
}

/// Handler calls, in order.
#[derive(Default)]
pub struct Calls(pub Mutex<Vec<(i64, Instant)>>);

impl Calls {
    pub fn record(&self, n: i64) -> usize {
        let mut v = self.0.lock().unwrap();
        v.push((n, Instant::now()));
        v.iter().filter(|(m, _)| *m == n).count()
    }
    pub fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }
    pub fn times(&self, n: i64) -> Vec<Instant> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|(m, _)| *m == n)
            .map(|(_, t)| *t)
            .collect()
    }
}

pub type Ctx = MessageContext<Arc<Calls>>;

pub async fn ok(m: Mail, ctx: Ctx) -> Result<(), HandlerError> {
    ctx.state().record(m.n);
    Ok(())
}

pub async fn eventually<F, Fut>(limit: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if check().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    false
}

fn outbox<H: Harness>(h: &H, calls: &Arc<Calls>) -> Outbox<H::Backend, Arc<Calls>> {
    Outbox::with_state(h.backend(), Arc::clone(calls)).register::<Mail, _>(ok)
}

pub async fn atomic_enqueue<H: Harness>() {
    let h = H::new().await;
    let mut tx = h.pool().begin().await.unwrap();
    H::insert_user(&mut tx, 1).await;
    let _ = Mail { n: 1 }.enqueue(&mut *tx).await.unwrap();
    tx.rollback().await.unwrap();
    assert_eq!(
        (h.count_users().await, h.count_messages("conf.mail").await),
        (0, 0),
        "rollback leaves nothing"
    );

    let mut tx = h.pool().begin().await.unwrap();
    H::insert_user(&mut tx, 1).await;
    let r = Mail { n: 1 }.enqueue(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();
    assert!(matches!(r, Enqueued::New(_)));
    assert_eq!(
        (h.count_users().await, h.count_messages("conf.mail").await),
        (1, 1),
        "commit writes both"
    );

    let calls = Arc::new(Calls::default());
    assert_eq!(
        outbox(&h, &calls).drain().await.unwrap().counts.delivered,
        1
    );
}

pub async fn idempotent_in_one_transaction<H: Harness>() {
    let h = H::new().await;
    let mut tx = h.pool().begin().await.unwrap();
    let first = Mail { n: 7 }.enqueue(&mut *tx).await.unwrap();
    let second = Mail { n: 7 }.enqueue(&mut *tx).await.unwrap();
    assert_eq!(
        second,
        Enqueued::Duplicate {
            existing: first.id().clone()
        }
    );
    H::insert_user(&mut tx, 7).await; // the transaction is still usable
    tx.commit().await.unwrap();
    assert_eq!(
        (h.count_users().await, h.count_messages("conf.mail").await),
        (1, 1)
    );
    let mut tx = h.pool().begin().await.unwrap();
    let later = Mail { n: 7 }.enqueue(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(
        later,
        Enqueued::Duplicate {
            existing: first.id().clone()
        },
        "a committed key stays taken"
    );
}

pub async fn idempotent_across_concurrent_transactions<H: Harness>() {
    for commit_first in [true, false] {
        let h = Arc::new(H::new().await);
        let mut a = h.pool().begin().await.unwrap();
        let first = Mail { n: 9 }.enqueue(&mut *a).await.unwrap();
        let other = Arc::clone(&h);
        let b = tokio::spawn(async move {
            let mut b = other.pool().begin().await.unwrap();
            let r = Mail { n: 9 }.enqueue(&mut *b).await.unwrap(); // waits for A's outcome
            b.commit().await.unwrap();
            r
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        if commit_first {
            a.commit().await.unwrap();
        } else {
            a.rollback().await.unwrap();
        }
        let second = b.await.unwrap();
        if commit_first {
            assert_eq!(
                second,
                Enqueued::Duplicate {
                    existing: first.id().clone()
                },
                "{}",
                H::NAME
            );
        } else {
            assert!(
                matches!(second, Enqueued::New(_)),
                "after A rolled back, B owns the key: {second:?}"
            );
        }
        assert_eq!(h.count_messages("conf.mail").await, 1);
    }
}

pub async fn delayed_message_waits<H: Harness>() {
    let h = H::new().await;
    let mut tx = h.pool().begin().await.unwrap();
    let at = SystemTime::now();
    let _ = Mail { n: 1 }
        .enqueue_with(
            &mut *tx,
            EnqueueOptions::new().after(Duration::from_secs(2)),
        )
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let calls = Arc::new(Calls::default());
    let outbox = outbox(&h, &calls);
    assert_eq!(
        outbox.drain().await.unwrap().counts.delivered,
        0,
        "not due yet"
    );
    outbox
        .run_until(async {
            assert!(eventually(Duration::from_secs(10), || async { calls.len() == 1 }).await)
        })
        .await
        .unwrap();
    assert!(at.elapsed().unwrap() >= Duration::from_secs(2));
}

pub async fn durable_retry_schedule<H: Harness>() {
    let h = H::new().await;
    let mut tx = h.pool().begin().await.unwrap();
    let _ = Mail { n: 1 }.enqueue(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();
    let calls = Arc::new(Calls::default());
    let schedule = RetrySchedule::fixed([Duration::from_secs(1), Duration::from_secs(2)]);
    let outbox = Outbox::with_state(h.backend(), Arc::clone(&calls)).register_with::<Mail, _>(
        |m: Mail, ctx: Ctx| async move {
            match ctx.state().record(m.n) {
                1 | 2 => Err(HandlerError::retry("451 later")),
                _ => Ok(()),
            }
        },
        QueueOptions::new().retry(schedule),
    );
    outbox
        .run_until(async {
            assert!(eventually(Duration::from_secs(15), || async { calls.len() == 3 }).await)
        })
        .await
        .unwrap();
    let t = calls.times(1);
    let (g1, g2) = (t[1] - t[0], t[2] - t[1]);
    println!("{}: attempts at 0, +{g1:?}, +{g2:?}", H::NAME);
    assert!(
        g1 >= Duration::from_secs(1) && g1 < Duration::from_millis(2_500),
        "{g1:?}"
    );
    assert!(
        g2 >= Duration::from_secs(2) && g2 < Duration::from_millis(3_500),
        "{g2:?}"
    );
}

/// A retrying message is visible (attempts, last error, attempt log, next due time, its
/// payload decoded) and "retry now" starts it within about a second instead of at its
/// scheduled retry a minute later, attempts kept.
pub async fn retry_now_starts_a_retrying_message_within_a_second<H: Harness>() {
    let h = H::new().await;
    let mut tx = h.pool().begin().await.unwrap();
    let _ = Mail { n: 1 }.enqueue(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();
    let calls = Arc::new(Calls::default());
    let schedule = RetrySchedule::fixed([Duration::from_secs(60)]);
    let outbox = Outbox::with_state(h.backend(), Arc::clone(&calls)).register_with::<Mail, _>(
        |m: Mail, ctx: Ctx| async move {
            match ctx.state().record(m.n) {
                1 => Err(HandlerError::retry("421 service not available")),
                _ => Ok(()),
            }
        },
        QueueOptions::new().retry(schedule),
    );
    let live = outbox.admin().messages();
    let retrying = LiveFilter::type_tag("conf.mail").state(LiveState::Retrying);
    outbox
        .run_until(async {
            assert!(
                eventually(Duration::from_secs(10), || async {
                    live.count(&retrying).await.unwrap() == 1
                })
                .await,
                "the failed message is listed as retrying"
            );
            let page = live.list(&retrying, None, 10).await.unwrap();
            assert_eq!((page.messages.len(), page.next.clone()), (1, None));
            let m = &page.messages[0];
            assert_eq!((m.attempts, m.max_attempts), (1, 5));
            assert!(m.last_error.as_deref().unwrap().contains("421"), "{m:?}");
            assert_eq!(m.attempt_log.len(), 1);
            assert!(
                m.due_at > SystemTime::now() + Duration::from_secs(30),
                "{m:?}"
            );
            let shown = live.show(&m.id).await.unwrap().expect("shown");
            assert_eq!(shown.decode::<Mail>().unwrap().n, 1);
            let wrong = shown.decode::<OldMail>().unwrap_err().to_string();
            assert!(wrong.contains("does not decode"), "{wrong}");

            let asked = Instant::now();
            assert_eq!(live.retry_now_where(&retrying).await.unwrap(), 1);
            assert!(
                eventually(Duration::from_secs(5), || async { calls.len() == 2 }).await,
                "retried after retry now"
            );
            let waited = calls.times(1)[1] - asked;
            println!(
                "{}: retry now started the message after {waited:?}",
                H::NAME
            );
            assert!(waited < Duration::from_millis(1_500), "{waited:?}");
            assert!(
                eventually(Duration::from_secs(5), || async {
                    live.count(&LiveFilter::all()).await.unwrap() == 0
                })
                .await
            );
        })
        .await
        .unwrap();
}

pub async fn dead_letters_and_requeue<H: Harness>() {
    let h = H::new().await;
    let mut tx = h.pool().begin().await.unwrap();
    let bad = Mail { n: 1 }.enqueue(&mut *tx).await.unwrap();
    let _ = OldMail {
        number_as_text: "2".into(),
    }
    .enqueue(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
    let calls = Arc::new(Calls::default());
    let reject = Outbox::with_state(h.backend(), Arc::clone(&calls)).register::<Mail, _>(
        |_: Mail, _: Ctx| async { Err::<(), _>(HandlerError::permanent("550 rejected")) },
    );
    let report = reject.drain().await.unwrap();
    assert_eq!(
        report.counts.given_up, 2,
        "a permanent error and an undecodable payload"
    );
    let dead = reject.admin().dead_letters();
    let letters = dead
        .list(&DeadLetterFilter::type_tag("conf.mail"), 0, 10)
        .await
        .unwrap();
    assert_eq!(letters.len(), 2);
    assert!(letters
        .iter()
        .any(|l| l.last_error.contains("550 rejected") && l.attempts == 1));
    assert!(letters
        .iter()
        .any(|l| l.last_error.contains("does not decode")));
    assert_eq!(
        h.count_messages("conf.mail").await,
        0,
        "moved out of the queue"
    );

    assert!(dead.requeue(bad.id()).await.unwrap());
    assert_eq!(
        outbox(&h, &calls).drain().await.unwrap().counts.delivered,
        1,
        "requeued and delivered"
    );
    assert_eq!(dead.count(&DeadLetterFilter::all()).await.unwrap(), 1);
    assert_eq!(
        dead.purge_older_than(SystemTime::now() + Duration::from_secs(1))
            .await
            .unwrap(),
        1
    );
    assert_eq!(dead.count(&DeadLetterFilter::all()).await.unwrap(), 0);
}

pub async fn orphans_are_dropped<H: Harness>() {
    let h = H::new().await;
    let mut tx = h.pool().begin().await.unwrap();
    let mails: Vec<Mail> = (1..=4).map(|n| Mail { n }).collect();
    enqueue_many(&mut *tx, &mails).await.unwrap();
    tx.commit().await.unwrap();
    let calls = Arc::new(Calls::default());
    let outbox = outbox(&h, &calls).orphan_check::<Mail, _, _, _, _>(|m, _| async move {
        Ok::<_, std::io::Error>(if m.n % 2 == 0 {
            Relevance::Relevant
        } else {
            Relevance::Orphan("gone".into())
        })
    });
    let report = outbox.drain().await.unwrap();
    assert_eq!((report.counts.delivered, report.counts.orphaned), (2, 2));
    assert_eq!(calls.len(), 2, "the handler never saw an orphan");
}

pub async fn pause_and_resume<H: Harness>() {
    let h = H::new().await;
    let mut tx = h.pool().begin().await.unwrap();
    let mails: Vec<Mail> = (1..=5).map(|n| Mail { n }).collect();
    enqueue_many(&mut *tx, &mails).await.unwrap();
    tx.commit().await.unwrap();
    let calls = Arc::new(Calls::default());
    let outbox = outbox(&h, &calls);
    outbox
        .admin()
        .pause("conf.mail", "checking the text")
        .await
        .unwrap();
    outbox
        .run_until(async {
            tokio::time::sleep(Duration::from_millis(1_500)).await;
            assert_eq!(calls.len(), 0, "a paused type started messages");
            assert!(outbox.admin().resume("conf.mail").await.unwrap());
            assert!(eventually(Duration::from_secs(5), || async { calls.len() == 5 }).await);
        })
        .await
        .unwrap();
}

pub async fn shared_rate_bucket<H: Harness>() {
    let h = H::new().await;
    let backend = h.backend();
    let t0 = std::time::UNIX_EPOCH + Duration::from_secs(2_000_000_000);
    let at = outbox::clock::Now::At;
    let admin = Outbox::new(backend.clone()).admin();
    admin
        .set_rate_limit("conf", RateLimit::per_second(4.0).burst(2))
        .await
        .unwrap();
    // set_rate_limit stamps the bucket with the real clock; take at later, controlled times.
    for _ in 0..2 {
        assert_eq!(
            backend.take_token("conf", at(t0)).await.unwrap(),
            TokenGrant::Granted
        );
    }
    let TokenGrant::Wait(w) = backend.take_token("conf", at(t0)).await.unwrap() else {
        panic!("past the burst")
    };
    assert!((w.as_secs_f64() - 0.25).abs() < 1e-6, "{w:?}");
    assert_eq!(
        backend
            .take_token("conf", at(t0 + Duration::from_millis(250)))
            .await
            .unwrap(),
        TokenGrant::Granted
    );
    assert_eq!(
        backend.take_token("missing", at(t0)).await.unwrap(),
        TokenGrant::NoSuchBucket
    );

    // Through the worker: 12 messages at 10/s with burst 2 take about a second.
    let mut tx = h.pool().begin().await.unwrap();
    let mails: Vec<Mail> = (1..=12).map(|n| Mail { n }).collect();
    enqueue_many(&mut *tx, &mails).await.unwrap();
    tx.commit().await.unwrap();
    let calls = Arc::new(Calls::default());
    let outbox = Outbox::with_state(h.backend(), Arc::clone(&calls))
        .rate_limit("mail", RateLimit::per_second(10.0).burst(2))
        .register_with::<Mail, _>(ok, QueueOptions::new().rate_limit("mail"));
    let started = Instant::now();
    outbox.drain().await.unwrap();
    let took = started.elapsed();
    assert_eq!(calls.len(), 12);
    let starts: Vec<Instant> = calls.0.lock().unwrap().iter().map(|c| c.1).collect();
    let first = starts[0];
    for (i, s) in starts.iter().enumerate() {
        // The bound is on grants; a handler starts a little after its grant, and under load
        // the first start can lag its grant more than later ones (seen: 8 starts 580 ms
        // after a late first one). One token of slack; the exact bound on grants is checked
        // from the grant trace in tests/sqlite_processes.rs.
        let allowed = 2.0 + 10.0 * (*s - first).as_secs_f64() + 1.0;
        assert!(
            (i + 1) as f64 <= allowed,
            "start {} came {:?} after the first",
            i + 1,
            *s - first
        );
    }
    println!("{}: 12 messages through a 10/s bucket in {took:?}", H::NAME);
}

pub async fn status_counts<H: Harness>() {
    let h = H::new().await;
    let mut tx = h.pool().begin().await.unwrap();
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
    // Delivered messages are kept for an hour, so the done count shows them.
    let outbox = Outbox::new(h.backend())
        .retention(Retention::keep_for(Duration::from_secs(3600)))
        .register::<Mail, _>(|m: Mail, _: MessageContext| async move {
            if m.n == 1 {
                Ok(())
            } else {
                Err(HandlerError::permanent("no"))
            }
        });
    outbox.drain().await.unwrap();
    let mut tx = h.pool().begin().await.unwrap();
    let _ = Mail { n: 4 }.enqueue(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();
    let c = outbox.admin().status_counts().await.unwrap().remove(0);
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

pub async fn fan_out_ten_thousand<H: Harness>() {
    let h = H::new().await;
    let mails: Vec<Mail> = (0..10_000).map(|n| Mail { n }).collect();
    let mut tx = h.pool().begin().await.unwrap();
    let started = Instant::now();
    let done = enqueue_many(&mut *tx, &mails).await.unwrap();
    let took = started.elapsed();
    let again = enqueue_many(&mut *tx, &mails[..5]).await.unwrap();
    // Some new, one taken before, one repeated within the batch.
    let mixed = [
        Mail { n: 3 },
        Mail { n: 10_000 },
        Mail { n: 10_000 },
        Mail { n: 10_001 },
    ];
    let m = enqueue_many(&mut *tx, &mixed).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(
        m[0],
        Enqueued::Duplicate {
            existing: done[3].id().clone()
        }
    );
    assert!(!m[1].is_duplicate() && !m[3].is_duplicate());
    assert_eq!(
        m[2],
        Enqueued::Duplicate {
            existing: m[1].id().clone()
        }
    );
    println!(
        "{}: enqueue_many of 10,000 in one transaction took {took:?}",
        H::NAME
    );
    assert!(done.iter().all(|r| !r.is_duplicate()));
    assert!(again.iter().zip(&done).all(|(a, d)| *a
        == Enqueued::Duplicate {
            existing: d.id().clone()
        }));
    assert_eq!(h.count_messages("conf.mail").await, 10_002);
}

/// A worker whose lease expired and whose message another worker claimed can no longer
/// settle it; the new holder can.
pub async fn a_stale_workers_settlement_is_refused<H: Harness>() {
    use outbox::store::{ClaimRequest, Due, Now, QueueStore, Settle, Settlement};
    let h = H::new().await;
    let mut tx = h.pool().begin().await.unwrap();
    let id = Mail { n: 1 }.enqueue(&mut *tx).await.unwrap().id().clone();
    tx.commit().await.unwrap();
    let b = h.backend();
    let now = SystemTime::now();
    let claim = |owner: &'static str, at: SystemTime| ClaimRequest {
        type_tag: "conf.mail",
        owner,
        limit: 10,
        now: Now::At(at),
        lease: Duration::from_millis(100),
        ordered: false,
    };
    let first = b.claim(&claim("stale-0", now)).await.unwrap();
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].attempt, 1, "the claim counts the attempt");
    assert!(
        b.claim(&claim("other-0", now)).await.unwrap().is_empty(),
        "a leased message is not claimed twice"
    );
    // The first worker stalls past its lease; the message is rescued and claimed again.
    let later = now + Duration::from_secs(1);
    assert_eq!(
        b.rescue_expired(&["conf.mail"], Now::At(later))
            .await
            .unwrap(),
        1
    );
    let second = b.claim(&claim("fresh-0", later)).await.unwrap();
    assert_eq!(second.len(), 1);
    assert_eq!(second[0].attempt, 2, "the crashed attempt stays counted");
    assert_eq!(
        (first[0].claim, second[0].claim),
        (1, 2),
        "each claim its own token"
    );
    let done = |attempt, claim| {
        vec![Settlement {
            id: id.clone(),
            attempt,
            claim,
            settle: Settle::Done {
                keep: false,
                note: None,
            },
            grouped: false,
        }]
    };
    for settle in [
        Settle::Done {
            keep: false,
            note: None,
        },
        Settle::Bury {
            reason: "stale".into(),
        },
        Settle::Release,
    ] {
        let stale = vec![Settlement {
            id: id.clone(),
            attempt: 1,
            claim: 1,
            settle,
            grouped: false,
        }];
        let r = b.settle("stale-0", &stale, Now::At(later)).await.unwrap();
        assert_eq!(
            (r.applied, r.fenced.len()),
            (0, 1),
            "the stale worker is fenced off"
        );
    }
    assert_eq!(h.count_messages("conf.mail").await, 1, "still in the queue");
    let r = b
        .settle("fresh-0", &done(2, 2), Now::At(later))
        .await
        .unwrap();
    assert_eq!((r.applied, r.fenced.len()), (1, 0), "the holder settles it");
    assert_eq!(
        h.count_messages("conf.mail").await,
        0,
        "delivered and deleted"
    );

    // One worker, one message, a snooze: the attempt is given back, so the next claim by the
    // same worker has the same attempt number. A settlement written twice (its COMMIT's
    // reply was lost and the flusher wrote it again) must not touch that next claim.
    let mut tx = h.pool().begin().await.unwrap();
    let id = Mail { n: 2 }.enqueue(&mut *tx).await.unwrap().id().clone();
    tx.commit().await.unwrap();
    let t0 = later + Duration::from_secs(1);
    let one = b.claim(&claim("same-0", t0)).await.unwrap();
    assert_eq!((one[0].attempt, one[0].claim), (1, 1));
    let snooze = vec![Settlement {
        id: id.clone(),
        attempt: 1,
        claim: 1,
        settle: Settle::Retry {
            due: Due::At(later),
            error: "snoozed".into(),
            give_back_attempt: true,
        },
        grouped: false,
    }];
    let r = b.settle("same-0", &snooze, Now::At(t0)).await.unwrap();
    assert_eq!((r.applied, r.fenced.len()), (1, 0));
    let again = b.claim(&claim("same-0", t0)).await.unwrap();
    assert_eq!(
        (again[0].attempt, again[0].claim),
        (1, 2),
        "the attempt was given back, the claim was not"
    );
    let r = b.settle("same-0", &snooze, Now::At(t0)).await.unwrap();
    assert_eq!(
        (r.applied, r.fenced.len()),
        (0, 1),
        "the repeated settlement is fenced off"
    );
    let r = b
        .settle(
            "same-0",
            &[Settlement {
                id: id.clone(),
                attempt: 1,
                claim: 2,
                settle: Settle::Done {
                    keep: false,
                    note: None,
                },
                grouped: false,
            }],
            Now::At(t0),
        )
        .await
        .unwrap();
    assert_eq!(
        (r.applied, r.fenced.len()),
        (1, 0),
        "the current claim settles it"
    );
}

/// By default a delivered message is deleted and its key is free again; with retention it
/// is kept as done (its key taken) until pruned.
pub async fn retention_off_and_on<H: Harness>() {
    use outbox::store::{Now, QueueStore};
    let h = H::new().await;
    let calls = Arc::new(Calls::default());
    let enqueue = |n| {
        let pool = h.pool().clone();
        async move {
            let mut tx = pool.begin().await.unwrap();
            let r = Mail { n }.enqueue(&mut *tx).await.unwrap();
            tx.commit().await.unwrap();
            r
        }
    };
    assert!(!enqueue(1).await.is_duplicate());
    outbox(&h, &calls).drain().await.unwrap();
    assert_eq!(h.count_messages("conf.mail").await, 0, "deleted on success");
    assert!(
        !enqueue(1).await.is_duplicate(),
        "its key is free once it was delivered"
    );

    let keep = Outbox::with_state(h.backend(), Arc::clone(&calls))
        .retention(Retention::keep_for(Duration::from_secs(3600)))
        .register::<Mail, _>(ok);
    keep.drain().await.unwrap();
    assert_eq!(h.count_messages("conf.mail").await, 1, "kept as done");
    let counts = keep.admin().status_counts().await.unwrap().remove(0);
    assert_eq!((counts.done, counts.pending), (1, 0), "{counts:?}");
    assert!(
        enqueue(1).await.is_duplicate(),
        "its key stays taken for the retention window"
    );
    let b = h.backend();
    assert_eq!(
        b.prune_done(Duration::from_secs(60), Now::Database, 100)
            .await
            .unwrap(),
        0,
        "younger than the cutoff: kept"
    );
    assert_eq!(
        b.prune_done(
            Duration::ZERO,
            Now::At(SystemTime::now() + Duration::from_secs(1)),
            100
        )
        .await
        .unwrap(),
        1
    );
    assert_eq!(h.count_messages("conf.mail").await, 0, "pruned");
    assert!(!enqueue(1).await.is_duplicate(), "pruned: the key is free");
    assert_eq!(
        calls.len(),
        2,
        "each enqueue that was not a duplicate ran once"
    );
}

/// Handler calls and the attempt number each one saw.
type CallsAndAttempts = (Arc<Calls>, Arc<Mutex<Vec<u32>>>);

/// A slow worker holding a prefetched batch never lets a lease expire while it lives:
/// leases are extended and messages that wait long are given back unchanged, so nothing
/// is rescued, run twice or charged an attempt for waiting.
pub async fn prefetch_stays_within_the_lease<H: Harness>() {
    let h = H::new().await;
    let mut tx = h.pool().begin().await.unwrap();
    let mails: Vec<Mail> = (1..=6).map(|n| Mail { n }).collect();
    enqueue_many(&mut *tx, &mails).await.unwrap();
    tx.commit().await.unwrap();
    let calls = Arc::new(Calls::default());
    let attempts = Arc::new(Mutex::new(Vec::new()));
    let outbox = Outbox::with_state(h.backend(), (Arc::clone(&calls), Arc::clone(&attempts)))
        .register_with::<Mail, _>(
            |m: Mail, ctx: MessageContext<CallsAndAttempts>| async move {
                ctx.state().0.record(m.n);
                ctx.state().1.lock().unwrap().push(ctx.attempt());
                tokio::time::sleep(Duration::from_millis(400)).await;
                Ok::<(), HandlerError>(())
            },
            // Lease 900 ms; the last of 6 messages waits ~2 s behind one slot.
            QueueOptions::new()
                .concurrency(1)
                .batch_size(6)
                .heartbeat_interval(Duration::from_millis(300))
                .missed_heartbeats(3),
        )
        .shutdown_timeout(Duration::from_millis(500));
    let expired = Arc::new(Mutex::new(0));
    let watch = {
        let (h, expired) = (&h, Arc::clone(&expired));
        async move {
            while calls.len() < 6 {
                *expired.lock().unwrap() += h.expired_leases().await;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            tokio::time::sleep(Duration::from_millis(600)).await;
        }
    };
    outbox.run_until(watch).await.unwrap();
    assert_eq!(
        *expired.lock().unwrap(),
        0,
        "no lease expired while its worker lived"
    );
    assert_eq!(
        *attempts.lock().unwrap(),
        vec![1; 6],
        "each message ran once, on its first attempt"
    );
}

/// Two admins requeue the same dead letter at the same moment: it is requeued once, and
/// neither gets an error.
pub async fn concurrent_requeues_of_one_dead_letter<H: Harness>() {
    let h = H::new().await;
    for round in 0..10 {
        let mut tx = h.pool().begin().await.unwrap();
        let id = Mail { n: round }
            .enqueue_with(&mut *tx, EnqueueOptions::new().without_idempotency_key())
            .await
            .unwrap()
            .id()
            .clone();
        tx.commit().await.unwrap();
        let reject =
            Outbox::new(h.backend()).register::<Mail, _>(|_: Mail, _: MessageContext| async {
                Err::<(), _>(HandlerError::permanent("550"))
            });
        reject.drain().await.unwrap();
        let (a, b) = (reject.admin().dead_letters(), reject.admin().dead_letters());
        let (ra, rb) = tokio::join!(a.requeue(&id), b.requeue(&id));
        let (ra, rb) = (
            ra.expect("no error for the first"),
            rb.expect("no error for the second"),
        );
        assert!(ra ^ rb, "round {round}: requeued exactly once ({ra}, {rb})");
        assert_eq!(
            h.count_messages("conf.mail").await,
            1,
            "one message back in the queue"
        );
        // Clear it for the next round.
        Outbox::new(h.backend())
            .register::<Mail, _>(|_: Mail, _: MessageContext| async { Ok::<(), HandlerError>(()) })
            .drain()
            .await
            .unwrap();
    }
}

/// A handler error with a NUL byte (which PostgreSQL cannot store) is recorded, and the
/// worker goes on settling other messages.
pub async fn an_error_text_with_a_nul_byte_is_recorded<H: Harness>() {
    let h = H::new().await;
    let mut tx = h.pool().begin().await.unwrap();
    let bad = Mail { n: 1 }.enqueue(&mut *tx).await.unwrap();
    let _ = Mail { n: 2 }.enqueue(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();
    let outbox =
        Outbox::new(h.backend()).register::<Mail, _>(|m: Mail, _: MessageContext| async move {
            if m.n == 1 {
                Err(HandlerError::permanent("550 bad\0byte"))
            } else {
                Ok(())
            }
        });
    let report = tokio::time::timeout(Duration::from_secs(30), outbox.drain())
        .await
        .expect("the drain finished: no settlement blocked the worker")
        .unwrap();
    assert_eq!((report.counts.delivered, report.counts.given_up), (1, 1));
    let dead = outbox
        .admin()
        .dead_letters()
        .list(&DeadLetterFilter::id(bad.id().as_str()), 0, 1)
        .await
        .unwrap();
    assert_eq!(dead.len(), 1, "dead-lettered with its reason");
    assert!(
        dead[0].last_error.contains("550 bad\u{FFFD}byte"),
        "{}",
        dead[0].last_error
    );
    assert_eq!(h.count_messages("conf.mail").await, 0);
}

pub async fn failed_attempts_are_logged_with_the_dead_letter<H: Harness>() {
    let h = H::new().await;
    let mut tx = h.pool().begin().await.unwrap();
    let failing = Mail { n: 1 }.enqueue(&mut *tx).await.unwrap();
    let _ = Mail { n: 2 }.enqueue(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();
    let calls = Arc::new(Calls::default());
    // Message 1: a snooze first (not an attempt), then "451 busy #k" until its 5 attempts
    // are spent. Message 2: delivered at once (no log written).
    let outbox = Outbox::with_state(h.backend(), Arc::clone(&calls)).register_with::<Mail, _>(
        |m: Mail, ctx: Ctx| async move {
            let call = ctx.state().record(m.n);
            match (m.n, call) {
                (2, _) => Ok(()),
                (_, 1) => Err(HandlerError::snooze(Duration::from_millis(20))),
                _ => Err(HandlerError::retry(format!("451 busy #{}", ctx.attempt()))),
            }
        },
        QueueOptions::new().retry(RetrySchedule::fixed([Duration::from_millis(20)])),
    );
    let dead = outbox.admin().dead_letters();
    outbox
        .run_until(async {
            assert!(
                eventually(Duration::from_secs(20), || async {
                    dead.count(&DeadLetterFilter::all()).await.unwrap() == 1
                })
                .await,
                "message 1 dead-lettered after 5 attempts"
            )
        })
        .await
        .unwrap();
    let letters = dead
        .list(&DeadLetterFilter::id(failing.id().as_str()), 0, 1)
        .await
        .unwrap();
    let log = &letters[0].attempt_log;
    println!("{}: {log:?}", H::NAME);
    assert_eq!(
        log.iter().map(|a| a.attempt).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5],
        "one entry per counted attempt; the snooze is not one"
    );
    for a in &log[..4] {
        assert_eq!(a.error, format!("451 busy #{}", a.attempt));
    }
    assert!(log[4].error.contains("451 busy #5") && log[4].error.contains("attempts exhausted"));
    assert_eq!(log[4].error, letters[0].last_error);
    assert!(log.windows(2).all(|w| w[0].at <= w[1].at));
    let now = SystemTime::now();
    assert!(log
        .iter()
        .all(|a| a.at <= now && a.at > now - Duration::from_secs(60)));

    // Requeued, it keeps its log; failing again adds to it.
    assert!(dead.requeue(failing.id()).await.unwrap());
    outbox
        .run_until(async {
            assert!(
                eventually(Duration::from_secs(20), || async {
                    dead.count(&DeadLetterFilter::all()).await.unwrap() == 1
                })
                .await
            )
        })
        .await
        .unwrap();
    let again = dead
        .list(&DeadLetterFilter::id(failing.id().as_str()), 0, 1)
        .await
        .unwrap();
    assert_eq!(
        again[0].attempt_log.len(),
        10,
        "5 before the requeue, 5 after: {:?}",
        again[0].attempt_log
    );
}

/// A message whose size the test chooses.
#[derive(Debug, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "conf.blob")]
struct Blob {
    data: String,
}

pub async fn an_unmigrated_database_names_the_fix<H: Harness>() {
    let h = H::unmigrated().await;
    let mut tx = h.pool().begin().await.unwrap();
    let err = Mail { n: 1 }.enqueue(&mut *tx).await.unwrap_err();
    assert!(
        matches!(&err, EnqueueError::NotMigrated { table } if table == "outbox_messages"),
        "{}: {err:?}",
        H::NAME
    );
    assert!(
        err.to_string()
            .contains("call `outbox.migrate()` at start-up"),
        "{err}"
    );
    drop(tx);
    let admin = outbox::Admin::new(h.backend());
    let err = admin.status_counts().await.unwrap_err();
    assert!(
        matches!(err, outbox::Error::NotMigrated { .. }),
        "{}: {err:?}",
        H::NAME
    );
    assert!(err.to_string().contains("outbox.migrate()"), "{err}");
    let calls = Arc::new(Calls::default());
    let drained = tokio::time::timeout(Duration::from_secs(30), outbox(&h, &calls).drain())
        .await
        .expect("a drain on an unmigrated database returns instead of retrying for ever");
    let err = drained.unwrap_err();
    assert!(err.to_string().contains("outbox.migrate()"), "{err}");
}

pub async fn payload_limit_and_large_payloads<H: Harness>() {
    let h = H::new().await;
    let mib = 1024 * 1024;
    let two_mib = Blob {
        data: "x".repeat(2 * mib),
    };
    let mut tx = h.pool().begin().await.unwrap();
    let err = two_mib.enqueue(&mut *tx).await.unwrap_err();
    match &err {
        EnqueueError::PayloadTooLarge { size, limit, .. } => {
            assert_eq!((*size, *limit), (2 * mib + 11, mib));
        }
        other => panic!("{}: {other:?}", H::NAME),
    }
    let text = err.to_string();
    for part in ["2097163 bytes", "the limit is 1048576 bytes", "max_payload"] {
        assert!(text.contains(part), "{text}");
    }
    // Nothing was written and the transaction goes on; a raised limit lets it through,
    // and a batch of them (18 MiB, more than MariaDB's default packet limit) is split
    // into statements that each fit.
    let raised = EnqueueOptions::new().max_payload(2 * mib);
    let blobs: Vec<Blob> = (0..12)
        .map(|i| Blob {
            data: char::from(b'a' + i).to_string().repeat(3 * mib / 2),
        })
        .collect();
    outbox::enqueue_many_with(&mut *tx, &blobs, raised)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let sizes = Arc::new(Mutex::new(Vec::new()));
    let report = Outbox::with_state(h.backend(), Arc::clone(&sizes))
        .register::<Blob, _>(
            |b: Blob, ctx: MessageContext<Arc<Mutex<Vec<usize>>>>| async move {
                ctx.state().lock().unwrap().push(b.data.len());
                Ok::<_, HandlerError>(())
            },
        )
        .drain()
        .await
        .unwrap();
    assert_eq!(report.counts.delivered, 12, "{}", H::NAME);
    assert_eq!(
        *sizes.lock().unwrap(),
        vec![3 * mib / 2; 12],
        "intact, in order"
    );
}

pub async fn a_key_held_by_an_open_transaction_times_out_clearly<H: Harness>() {
    let h = H::new().await;
    let mut a = h.pool().begin().await.unwrap();
    let _ = Mail { n: 5 }.enqueue(&mut *a).await.unwrap();
    let mut b = h.pool().begin().await.unwrap();
    H::short_lock_timeout(&mut b).await;
    let started = Instant::now();
    let err = Mail { n: 5 }.enqueue(&mut *b).await.unwrap_err();
    assert!(
        matches!(err, EnqueueError::LockTimeout { .. }),
        "{}: {err:?}",
        H::NAME
    );
    assert!(err.to_string().contains("same idempotency key"), "{err}");
    assert!(
        started.elapsed() >= Duration::from_millis(500),
        "it waited for the lock"
    );
    b.rollback().await.unwrap();
    a.commit().await.unwrap();
    assert_eq!(h.count_messages("conf.mail").await, 1);
}

/// The batch sizes the engine announced in `text`.
fn announced_batches(text: &str) -> Vec<usize> {
    text.lines()
        .filter(|l| l.contains("claim batch changed"))
        .map(|l| {
            l.split("batch=")
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("no batch in {l}"))
        })
        .collect()
}

/// A backlog drained by handlers faster than the claims grows the default batch on
/// PostgreSQL and MariaDB (never past 500, back to 100 when the backlog is done); SQLite
/// and an explicit batch size keep their batch. Runs on one thread, so the test's
/// subscriber sees the engine's events.
pub async fn a_fast_backlog_grows_the_default_batch<H: Harness>() {
    let captured = Captured::default();
    let subscriber = captured.subscriber("outbox_core::worker::engine=debug");
    let _guard = tracing::subscriber::set_default(subscriber);
    let h = H::new().await;
    let noop = |_: Mail, _: MessageContext| async { Ok::<(), HandlerError>(()) };
    let mut n = 0;
    for (options, default_batch) in [
        (QueueOptions::new(), true),
        (QueueOptions::new().batch_size(100), false),
    ] {
        let mut tx = h.pool().begin().await.unwrap();
        let mails: Vec<Mail> = (n..n + 10_000).map(|n| Mail { n }).collect();
        n += 10_000;
        enqueue_many(&mut *tx, &mails).await.unwrap();
        tx.commit().await.unwrap();
        let report = Outbox::new(h.backend())
            .register_with::<Mail, _>(noop, options)
            .drain()
            .await
            .unwrap();
        assert_eq!(report.counts.delivered, 10_000);
        let batches = announced_batches(&captured.take());
        if default_batch && H::NAME != "sqlite" {
            assert!(batches.contains(&200), "the batch grew: {batches:?}");
            assert!(batches.iter().all(|&b| b <= 500), "{batches:?}");
            assert_eq!(batches.last(), Some(&100), "back to 100: {batches:?}");
        } else {
            assert!(batches.is_empty(), "the batch stays: {batches:?}");
        }
    }
}

/// A worker that stops heartbeating (here: its task is aborted mid-handler, as a crash
/// would) loses its message once a `ManualClock` moves past the lease, without the test
/// sleeping for the lease: claims, leases and rescue run at the injected clock's time.
pub async fn a_manual_clock_expires_a_lease<H: Harness>() {
    use outbox::clock::ManualClock;
    let h = H::new().await;
    let mut tx = h.pool().begin().await.unwrap();
    let _ = Mail { n: 1 }.enqueue(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();
    let clock = ManualClock::new(SystemTime::now());
    let calls = Arc::new(Calls::default());
    // The first worker starts the message and never finishes it.
    let stalled = Outbox::with_state(h.backend(), Arc::clone(&calls))
        .clock(Arc::new(clock.clone()))
        .register::<Mail, _>(|m: Mail, ctx: Ctx| async move {
            ctx.state().record(m.n);
            std::future::pending::<()>().await;
            Ok::<(), HandlerError>(())
        });
    let crashed = tokio::spawn(async move { stalled.run_until(std::future::pending()).await });
    assert!(
        eventually(Duration::from_secs(10), || async { calls.len() == 1 }).await,
        "the first worker never started the message"
    );
    crashed.abort();
    let _ = crashed.await;

    let rescuer = outbox(&h, &calls).clock(Arc::new(clock.clone()));
    let report = rescuer.drain().await.unwrap();
    assert_eq!(
        report.counts.delivered, 0,
        "the lease (30 s by default) has not run out on the manual clock"
    );
    clock.advance(Duration::from_secs(31));
    let report = rescuer.drain().await.unwrap();
    assert_eq!(
        report.counts.delivered, 1,
        "past the lease on the manual clock, the message is rescued and delivered"
    );
    assert_eq!(calls.times(1).len(), 2, "started by both workers");
}

/// With a short retention window, a delivered message's key is free again soon after the
/// window (the pruner looks every tenth of it), not only at the next 30 s prune.
pub async fn a_short_retention_frees_its_key_soon<H: Harness>() {
    let h = H::new().await;
    let calls = Arc::new(Calls::default());
    let keep = Outbox::with_state(h.backend(), Arc::clone(&calls))
        .retention(Retention::keep_for(Duration::from_secs(1)))
        .register::<Mail, _>(ok);
    let enqueue = || async {
        let mut tx = h.pool().begin().await.unwrap();
        let r = Mail { n: 7 }.enqueue(&mut *tx).await.unwrap();
        tx.commit().await.unwrap();
        r
    };
    assert!(!enqueue().await.is_duplicate());
    let freed_after = Mutex::new(None);
    keep.run_until(async {
        assert!(
            eventually(Duration::from_secs(10), || async { calls.len() == 1 }).await,
            "delivered"
        );
        let delivered = Instant::now();
        while enqueue().await.is_duplicate() && delivered.elapsed() < Duration::from_secs(20) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        *freed_after.lock().unwrap() = Some(delivered.elapsed());
    })
    .await
    .unwrap();
    let freed = freed_after.lock().unwrap().expect("measured");
    println!(
        "{}: a 1 s retention window freed the key {freed:?} after delivery",
        H::NAME
    );
    assert!(
        freed >= Duration::from_millis(500),
        "the key was free before the window ended: {freed:?}"
    );
    assert!(
        freed < Duration::from_secs(5),
        "the key stayed taken {freed:?} after delivery with a 1 s window"
    );
}

/// A single message larger than MariaDB's packet limit (16 MiB by default), allowed by a
/// raised payload limit: MariaDB drops the connection, and the error names
/// `max_allowed_packet` and both ways out instead of only "connection reset". The other
/// databases take it.
pub async fn an_oversize_statement_names_the_packet_limit<H: Harness>() {
    #[derive(Serialize, Deserialize, OutboxMessage)]
    #[outbox(type = "conf.big")]
    struct Big {
        blob: String,
    }
    let h = H::new().await;
    let mib = 1024 * 1024;
    let big = Big {
        blob: "x".repeat(17 * mib),
    };
    let mut tx = h.pool().begin().await.unwrap();
    let result = big
        .enqueue_with(&mut *tx, EnqueueOptions::new().max_payload(32 * mib))
        .await;
    if H::NAME != "mysql" {
        let _ = result.expect("17 MiB in one statement");
        return;
    }
    let err = result.expect_err("past MariaDB's default max_allowed_packet");
    let text = err.to_string();
    println!("{}: {text}", H::NAME);
    assert!(
        matches!(err, outbox::EnqueueError::StatementTooLarge { .. }),
        "{err:?}"
    );
    for part in ["max_allowed_packet", "max_payload", "begin it again"] {
        assert!(text.contains(part), "`{part}` missing from: {text}");
    }
}

/// The `metrics` counters recorded on this thread, by `name{labels}`.
#[derive(Default)]
struct RecordedCounters(
    Mutex<std::collections::HashMap<String, Arc<std::sync::atomic::AtomicU64>>>,
);

impl RecordedCounters {
    /// The value of counter `name` for type `conf.mail` (0 if never incremented).
    fn mail(&self, name: &str) -> u64 {
        let key = format!("{name}{{type=conf.mail}}");
        self.0
            .lock()
            .unwrap()
            .get(&key)
            .map_or(0, |c| c.load(std::sync::atomic::Ordering::SeqCst))
    }
}

impl metrics::Recorder for RecordedCounters {
    fn describe_counter(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn describe_gauge(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn describe_histogram(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn register_counter(&self, key: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Counter {
        let labels: Vec<String> = key
            .labels()
            .map(|l| format!("{}={}", l.key(), l.value()))
            .collect();
        let name = format!("{}{{{}}}", key.name(), labels.join(","));
        let counter = Arc::clone(self.0.lock().unwrap().entry(name).or_default());
        metrics::Counter::from_arc(counter)
    }
    fn register_gauge(&self, _: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Gauge {
        metrics::Gauge::noop()
    }
    fn register_histogram(
        &self,
        _: &metrics::Key,
        _: &metrics::Metadata<'_>,
    ) -> metrics::Histogram {
        metrics::Histogram::noop()
    }
}

/// A stalled worker's handlers: each records its call, waits for the gate to open, then
/// fails for good (even numbers) or succeeds (odd numbers).
struct Stall {
    started: Calls,
    gate: tokio::sync::watch::Receiver<bool>,
    returned: std::sync::atomic::AtomicUsize,
}

/// A worker that stalled past its lease, whose 20 messages another worker took over and
/// delivered, finishes its attempts late (10 fail for good, 10 succeed): the database
/// refuses those results, and the stalled worker counts nothing — not in its delivery
/// counts, not in the `metrics` counters — writes no dead letter and logs no move to the
/// dead letters, only one WARN naming the 20 refused results. Runs on one thread, so the
/// test's subscriber and `metrics` recorder see every worker's events.
pub async fn a_fenced_off_workers_results_count_nothing<H: Harness>() {
    use outbox::{clock::ManualClock, store::DeadLetterStore};
    use std::sync::atomic::Ordering;
    let captured = Captured::default();
    let _log = tracing::subscriber::set_default(captured.subscriber("outbox_core=info"));
    let recorder = RecordedCounters::default();
    let _metrics = metrics::set_default_local_recorder(&recorder);
    let h = H::new().await;
    let mut tx = h.pool().begin().await.unwrap();
    let mails: Vec<Mail> = (0..20).map(|n| Mail { n }).collect();
    enqueue_many(&mut *tx, &mails).await.unwrap();
    tx.commit().await.unwrap();

    let (open, gate) = tokio::sync::watch::channel(false);
    let stall = Arc::new(Stall {
        started: Calls::default(),
        gate,
        returned: Default::default(),
    });
    // The stalled worker runs all 20 at once; once its follow-up claim found nothing it
    // waits for a wake-up (its due probe looks once an hour), so it claims nothing more.
    let stalled = Outbox::with_state(h.backend(), Arc::clone(&stall))
        .idle_poll(Duration::from_secs(3600), Duration::from_secs(3600))
        .register_with::<Mail, _>(
            |m: Mail, ctx: MessageContext<Arc<Stall>>| async move {
                let stall = ctx.state();
                stall.started.record(m.n);
                let mut gate = stall.gate.clone();
                gate.wait_for(|open| *open).await.unwrap();
                stall.returned.fetch_add(1, Ordering::SeqCst);
                match m.n % 2 {
                    0 => Err(HandlerError::permanent("550 no such user")),
                    _ => Ok(()),
                }
            },
            QueueOptions::new().concurrency(20).batch_size(20),
        );
    let rescuer_report = Mutex::new(None);
    stalled
        .run_until(async {
            assert!(
                eventually(Duration::from_secs(10), || async {
                    stall.started.len() == 20
                })
                .await,
                "the stalled worker started {} of 20",
                stall.started.len()
            );
            tokio::time::sleep(Duration::from_millis(300)).await;
            // Another worker, an hour later by its clock (the stalled worker's leases long
            // expired), takes the messages over and delivers them.
            let later = ManualClock::new(SystemTime::now() + Duration::from_secs(3600));
            let rescuer = Outbox::new(h.backend())
                .clock(Arc::new(later))
                .register::<Mail, _>(|_: Mail, _: MessageContext| async {
                    Ok::<(), HandlerError>(())
                });
            *rescuer_report.lock().unwrap() = Some(rescuer.drain().await.unwrap());
            // The stalled worker wakes up and finishes its attempts.
            open.send(true).unwrap();
            assert!(
                eventually(Duration::from_secs(10), || async {
                    stall.returned.load(Ordering::SeqCst) == 20
                })
                .await,
                "the stalled worker's handlers did not return"
            );
        })
        .await
        .unwrap();
    let logs = captured.take();

    let rescued = rescuer_report.lock().unwrap().take().unwrap();
    assert_eq!(rescued.counts.delivered, 20, "the rescuer delivered all 20");
    assert_eq!(
        h.count_messages("conf.mail").await,
        0,
        "all delivered and deleted"
    );
    let dead = h
        .backend()
        .count_dead(&DeadLetterFilter::all())
        .await
        .unwrap();
    assert_eq!(dead, 0, "no dead letter was written");
    assert_eq!(
        stalled.delivery_counts(),
        outbox::DeliveryCounts::default(),
        "the stalled worker counts none of its refused results"
    );
    assert_eq!(
        (
            recorder.mail("outbox_delivered_total"),
            recorder.mail("outbox_dead_lettered_total"),
            recorder.mail("outbox_retried_total"),
        ),
        (20, 0, 0),
        "the metrics count the 20 deliveries the database applied, and nothing else"
    );
    for line in ["moving to the dead letters", "moved to the dead letters"] {
        assert!(!logs.contains(line), "`{line}` logged:\n{logs}");
    }
    let refused: Vec<&str> = logs
        .lines()
        .filter(|l| l.contains("results not recorded"))
        .collect();
    assert!(
        !refused.is_empty(),
        "no WARN about the refused results:\n{logs}"
    );
    let named: usize = refused
        .iter()
        .map(|l| {
            l.split("fenced=")
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|n| n.parse::<usize>().ok())
                .unwrap_or_else(|| panic!("no count in {l}"))
        })
        .sum();
    assert_eq!(named, 20, "{refused:?}");
    assert!(refused.iter().all(|l| l.contains("WARN")), "{refused:?}");
}

/// A statement of a pool the outbox opened that takes longer than a second (here: one
/// that waits for another connection's lock, or sleeps) is logged at DEBUG, never as
/// sqlx's slow-statement WARN. Run in a child process whose global subscriber logs at DEBUG
/// (SQLite runs its statements on a thread of its own).
pub async fn a_slow_statement_of_an_outbox_pool_is_no_warning<H: Harness>() {
    let h = H::new().await;
    let out = super::processes::run_child(H::NAME, "slow-statement", &h.url());
    assert!(out.status.success(), "the child failed: {}", out.logs);
    assert!(
        out.logs.contains("slow statement"),
        "the slow statement is logged at DEBUG: {}",
        out.logs
    );
    assert!(
        !out.logs.lines().any(|l| l.contains(" WARN ")),
        "no WARN for the outbox's own pool: {}",
        out.logs
    );
}

/// The child of [`a_slow_statement_of_an_outbox_pool_is_no_warning`]: one statement of
/// more than a second through a pool from the backend's `connect`.
pub async fn slow_statement_child<H: Harness>(url: &str) {
    let slow = match H::NAME {
        "postgres" => {
            let pool = outbox::postgres::connect(url).await.unwrap();
            sqlx::query("SELECT pg_sleep(1.2)")
                .execute(&pool)
                .await
                .map(drop)
        }
        "mysql" => {
            let pool = outbox::mysql::connect(url).await.unwrap();
            sqlx::query("SELECT SLEEP(1.2)")
                .execute(&pool)
                .await
                .map(drop)
        }
        _ => {
            let pool = outbox::sqlite::connect(url).await.unwrap();
            let mut holder = pool.acquire().await.unwrap();
            sqlx::query("BEGIN IMMEDIATE")
                .execute(&mut *holder)
                .await
                .unwrap();
            let release = async {
                tokio::time::sleep(Duration::from_millis(1_300)).await;
                sqlx::query("COMMIT").execute(&mut *holder).await.unwrap();
            };
            let waiting = sqlx::query("INSERT INTO users (id, email) VALUES (1, 'a@example.com')")
                .execute(&pool);
            let (_, inserted) = tokio::join!(release, waiting);
            inserted.map(drop)
        }
    };
    slow.unwrap();
}
