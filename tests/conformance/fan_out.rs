//! Fan-out from an iterator and from a stream: written one chunk at a time in the caller's
//! transaction, counted, duplicates skipped, and a failing stream reported with what was
//! written before it failed.

use futures::StreamExt;
use outbox::{
    enqueue_iter, enqueue_select, enqueue_stream, EnqueueOptions, FanOut, FanOutError, LiveFilter,
    Outbox, Select,
};

use super::{cases::Mail, harness::Harness, processes::spawn_child_with};

/// 2,500 from a lazy iterator, then 1,000 of which 500 are taken: counts add up and the
/// table holds each key once.
pub async fn fan_out_from_an_iterator<H: Harness>() {
    let h = H::new().await;
    let mut tx = h.pool().begin().await.unwrap();
    let first = enqueue_iter(
        &mut *tx,
        (0..2_500).map(|n| Mail { n }),
        EnqueueOptions::new(),
    )
    .await
    .unwrap();
    // Borrowed items work too.
    let again: Vec<Mail> = (2_000..3_000).map(|n| Mail { n }).collect();
    let second = enqueue_iter::<Mail, _, _>(&mut *tx, &again, EnqueueOptions::new())
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(
        first,
        FanOut {
            inserted: 2_500,
            duplicates: 0
        }
    );
    assert_eq!(
        second,
        FanOut {
            inserted: 500,
            duplicates: 500
        }
    );
    assert_eq!(h.count_messages("conf.mail").await, 3_000);
}

/// The application's own rows, streamed from another connection of the pool, become
/// messages in the transaction; a stream that fails stops the fan-out and says how many
/// were written before (one chunk of 1,000 here), and rolling back writes none.
pub async fn fan_out_from_a_stream<H: Harness>() {
    let h = H::new().await;
    let mut tx = h.pool().begin().await.unwrap();
    for id in 1..=2_300 {
        H::insert_user(&mut *tx, id).await;
    }
    tx.commit().await.unwrap();

    let mut tx = h.pool().begin().await.unwrap();
    let rows = h.user_id_stream().map(|id| id.map(|n| Mail { n }));
    let written = enqueue_stream(&mut *tx, rows, EnqueueOptions::new().priority(3))
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(
        written,
        FanOut {
            inserted: 2_300,
            duplicates: 0
        }
    );
    assert_eq!(h.count_messages("conf.mail").await, 2_300);

    // A stream that fails after 1,500 messages.
    let failing = futures::stream::iter(10_000..11_500)
        .map(|n| Ok::<_, &'static str>(Mail { n }))
        .chain(futures::stream::once(async {
            Err("the source query broke")
        }));
    let mut tx = h.pool().begin().await.unwrap();
    let err = enqueue_stream(&mut *tx, failing, EnqueueOptions::new())
        .await
        .unwrap_err();
    tx.rollback().await.unwrap();
    assert!(
        matches!(
            &err,
            FanOutError::Source {
                error: "the source query broke",
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        err.written(),
        FanOut {
            inserted: 1_000,
            duplicates: 0
        }
    );
    assert!(err.to_string().contains("the source query broke"), "{err}");
    assert_eq!(h.count_messages("conf.mail").await, 2_300);
}

/// The application's query in the database's own dialect: a `payload` for `Mail` built
/// from each user above `$1`/`?`, and a key per user.
fn users_as_mails(backend: &str) -> &'static str {
    match backend {
        "sqlite" => {
            "SELECT json_object('n', id) AS payload, 'sel-' || id AS idempotency_key \
             FROM users WHERE id > ? ORDER BY id"
        }
        "postgres" => {
            "SELECT json_build_object('n', id) AS payload, 'sel-' || id AS idempotency_key \
             FROM users WHERE id > $1 ORDER BY id"
        }
        _ => {
            "SELECT JSON_OBJECT('n', id) AS payload, CONCAT('sel-', id) AS idempotency_key \
             FROM users WHERE id > ? ORDER BY id"
        }
    }
}

/// 5,000 of the application's rows become messages in one `INSERT … SELECT` with a group,
/// a priority and a key per row, in the caller's transaction; a second run skips every
/// row (keys taken); the messages decode, are claimed in the query's order and count in
/// their group (in the query's order, except on MariaDB); a query whose payload does not fit the type is refused with the reason.
pub async fn fan_out_from_a_query<H: Harness>() {
    let h = H::new().await;
    let mut tx = h.pool().begin().await.unwrap();
    for id in 1..=5_000 {
        H::insert_user(&mut *tx, id).await;
    }
    tx.commit().await.unwrap();

    let query = Select::new(users_as_mails(H::NAME)).bind(0);
    let options = || EnqueueOptions::new().group("from-query").priority(3);
    let mut tx = h.pool().begin().await.unwrap();
    let written = enqueue_select::<Mail, _>(&mut *tx, &query, options())
        .await
        .unwrap();
    let again = enqueue_select::<Mail, _>(&mut *tx, &query, options())
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!((written, again), (5_000, 0));
    assert_eq!(h.count_messages("conf.mail").await, 5_000);

    let admin = Outbox::new(h.backend()).admin();
    let p = admin.groups().show("from-query").await.unwrap().unwrap();
    assert_eq!((p.pending, p.total()), (5_000, 5_000), "{p:?}");
    let page = admin
        .messages()
        .list(&LiveFilter::all().in_group("from-query"), None, 3)
        .await
        .unwrap();
    let firsts: Vec<i64> = page
        .messages
        .iter()
        .map(|m| {
            assert_eq!((m.priority, m.group.as_deref()), (3, Some("from-query")));
            let key = m.idempotency_key.clone().unwrap();
            key.trim_start_matches("sel-").parse().unwrap()
        })
        .collect();
    // MariaDB ignores an ORDER BY inside a subquery: there the ids follow no given order.
    if H::NAME != "mysql" {
        assert_eq!(firsts, [1, 2, 3], "ids follow the query's order");
    }
    let shown = admin
        .messages()
        .show(&page.messages[0].id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(shown.decode::<Mail>().unwrap().n, firsts[0]);

    // A payload of the wrong shape is refused (and rolled back by the caller).
    let wrong = Select::new(match H::NAME {
        "postgres" => {
            "SELECT json_build_object('m', id) AS payload, NULL::text AS idempotency_key FROM users"
        }
        "sqlite" => "SELECT json_object('m', id) AS payload, NULL AS idempotency_key FROM users",
        _ => "SELECT JSON_OBJECT('m', id) AS payload, NULL AS idempotency_key FROM users",
    });
    let mut tx = h.pool().begin().await.unwrap();
    let e = enqueue_select::<Mail, _>(&mut *tx, &wrong, EnqueueOptions::new())
        .await
        .unwrap_err()
        .to_string();
    tx.rollback().await.unwrap();
    assert!(
        e.contains("`payload` column does not decode") && e.contains("missing field `n`"),
        "{e}"
    );
    assert_eq!(h.count_messages("conf.mail").await, 5_000);
}

/// The users as mails without keys: each run of it enqueues every user again.
fn users_as_keyless_mails(backend: &str) -> &'static str {
    match backend {
        "sqlite" => "SELECT json_object('n', id) AS payload, NULL AS idempotency_key FROM users",
        "postgres" => {
            "SELECT json_build_object('n', id) AS payload, NULL::text AS idempotency_key FROM users"
        }
        _ => "SELECT JSON_OBJECT('n', id) AS payload, NULL AS idempotency_key FROM users",
    }
}

/// A child process (`OUTBOX_CONF_ROLE=select`) that has made no id yet enqueues every user
/// into the group `OUTBOX_CONF_GROUP` with one `enqueue_select`, and exits.
pub async fn select_child<H: Harness>(h: &H) {
    let group = std::env::var("OUTBOX_CONF_GROUP").expect("OUTBOX_CONF_GROUP");
    let query = Select::new(users_as_keyless_mails(H::NAME));
    let mut tx = h.pool().begin().await.unwrap();
    let written = enqueue_select::<Mail, _>(&mut *tx, &query, EnqueueOptions::new().group(group))
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(written, 2_000);
}

/// Two fresh processes, racing, each fan a campaign out from the same query: both commit,
/// and their 4,000 messages carry distinct ids stamped with the time they were enqueued
/// (a process's first reserved block once started at time zero in every process, so the
/// second campaign collided with the first — on MariaDB its rows were silently dropped —
/// or, once the first was gone, reused its ids and the emails' Message-IDs).
pub async fn fresh_processes_select_distinct_ids<H: Harness>() {
    let h = H::new().await;
    let mut tx = h.pool().begin().await.unwrap();
    for id in 1..=2_000 {
        H::insert_user(&mut *tx, id).await;
    }
    tx.commit().await.unwrap();

    let started = std::time::SystemTime::now();
    let children: Vec<_> = ["first", "second"]
        .into_iter()
        .map(|g| spawn_child_with(H::NAME, "select", &h.url(), &[("OUTBOX_CONF_GROUP", g)]))
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        let logs = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "a campaign process failed: {logs}");
    }
    assert_eq!(h.count_messages("conf.mail").await, 4_000);

    let admin = Outbox::new(h.backend()).admin();
    let mut ids = std::collections::HashSet::new();
    for group in ["first", "second"] {
        let p = admin.groups().show(group).await.unwrap().unwrap();
        assert_eq!(p.pending, 2_000, "{group}: {p:?}");
        let mut after = None;
        loop {
            let page = admin
                .messages()
                .list(&LiveFilter::all().in_group(group), after.as_ref(), 500)
                .await
                .unwrap();
            for m in &page.messages {
                let at = m.id.enqueued_at().expect("a ULID");
                let age = started.duration_since(at).unwrap_or_default().as_secs();
                assert!(
                    age < 60,
                    "{group}: id {} is stamped {age} s before the run",
                    m.id
                );
                assert!(ids.insert(m.id.clone()), "id {} given twice", m.id);
            }
            match page.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
    }
    assert_eq!(ids.len(), 4_000);
}
