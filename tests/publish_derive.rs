//! Run-time behaviour of `#[derive(PublishEvent)]`: subjects and ordering keys built from
//! fields, escaped braces, constant subjects on any shape, the event's JSON payload, and
//! events enqueued on a SQLite file read back as the outbox stored them.

use outbox::publish::{Event, PublishEvent};
use outbox::{sqlite, testing, EnqueueError, Outbox, SqliteBackend};
use serde::Serialize;

/// The example of the documentation.
#[derive(Serialize, PublishEvent)]
#[publish(subject = "orders.{id}.created", key = "{id}")]
struct OrderCreated {
    id: u64,
    total: i64,
}

/// Several placeholders, one of them twice, two adjacent, text around them.
#[derive(Serialize, PublishEvent)]
#[publish(
    subject = "{tenant}.orders.{id}.v{major}{minor}",
    key = "{tenant}:{id}:{id}"
)]
struct Tenanted {
    tenant: String,
    id: u32,
    major: u8,
    minor: char,
}

/// `{{` and `}}` are literal braces, also around a placeholder; a raw identifier is named
/// with or without `r#`.
#[derive(Serialize, PublishEvent)]
#[publish(subject = "braces.{{{r#type}}}", key = "{{{type}}}")]
struct Braces {
    r#type: String,
}

/// Without placeholders any shape takes a constant subject; without `key` there is none.
#[derive(Serialize, PublishEvent)]
#[publish(subject = "billing.audit")]
enum Audit {
    Started,
    Finished { ok: bool },
}

#[derive(Serialize, PublishEvent)]
#[publish(subject = "heartbeat")]
struct Heartbeat;

#[derive(Serialize, PublishEvent)]
#[publish(subject = "pairs.created", key = "pairs")]
struct Pair(u8, u8);

/// The attributes spread over two `#[publish(...)]`, the crate path written out.
#[derive(Serialize, PublishEvent)]
#[publish(subject = "users.{user}.renamed")]
#[publish(crate = "outbox::publish", key = "user-{user}")]
struct Renamed {
    user: i64,
    name: String,
}

/// The derive named through the facade's top level, `outbox::PublishEvent`.
#[derive(Serialize, outbox::PublishEvent)]
#[publish(subject = "facade.{n}")]
struct ViaFacade {
    n: i32,
}

/// A pattern substituted by `macro_rules!` (`$subject:literal`).
macro_rules! event {
    ($name:ident, $subject:literal) => {
        #[derive(Serialize, PublishEvent)]
        #[publish(subject = $subject)]
        struct $name {
            id: u8,
        }
    };
}
event!(FromMacro, "macro.{id}");

/// A field whose `Display` holds what a subject may not: refused when enqueued.
#[derive(Serialize, PublishEvent)]
#[publish(subject = "files.{name}.uploaded")]
struct Uploaded {
    name: String,
}

#[test]
fn subjects_and_keys_are_built_from_the_fields() {
    let order = OrderCreated {
        id: 42,
        total: 1999,
    };
    assert_eq!(order.subject(), "orders.42.created");
    assert_eq!(order.key().as_deref(), Some("42"));

    let tenanted = Tenanted {
        tenant: "acme".into(),
        id: 7,
        major: 2,
        minor: 'b',
    };
    assert_eq!(tenanted.subject(), "acme.orders.7.v2b");
    assert_eq!(tenanted.key().as_deref(), Some("acme:7:7"));

    let renamed = Renamed {
        user: -3,
        name: "Ada".into(),
    };
    assert_eq!(renamed.subject(), "users.-3.renamed");
    assert_eq!(renamed.key().as_deref(), Some("user--3"));

    assert_eq!(ViaFacade { n: 5 }.subject(), "facade.5");
    assert_eq!(ViaFacade { n: 5 }.key(), None);
    assert_eq!(FromMacro { id: 9 }.subject(), "macro.9");
}

#[test]
fn doubled_braces_are_literal_braces() {
    let braces = Braces { r#type: "x".into() };
    assert_eq!(braces.subject(), "braces.{x}");
    assert_eq!(braces.key().as_deref(), Some("{x}"));
}

#[test]
fn constant_subjects_suit_every_shape() {
    assert_eq!(Audit::Started.subject(), "billing.audit");
    assert_eq!(Audit::Finished { ok: true }.subject(), "billing.audit");
    assert_eq!(Audit::Started.key(), None);
    assert_eq!(Heartbeat.subject(), "heartbeat");
    assert_eq!(Heartbeat.key(), None);
    assert_eq!(Pair(1, 2).subject(), "pairs.created");
    assert_eq!(Pair(1, 2).key().as_deref(), Some("pairs"));
}

#[test]
fn the_event_carries_the_subject_the_key_and_the_json() {
    let order = OrderCreated {
        id: 42,
        total: 1999,
    };
    let event = order.to_event().unwrap();
    assert_eq!(event.subject, "orders.42.created");
    assert_eq!(event.key.as_deref(), Some("42"));
    assert_eq!(event.content_type.as_deref(), Some("application/json"));
    assert!(event.headers.is_empty());
    assert_eq!(
        event.payload.json_value(),
        Some(serde_json::json!({"id": 42, "total": 1999}))
    );
    let event = Audit::Finished { ok: false }.to_event().unwrap();
    assert_eq!(
        event.payload.json_value(),
        Some(serde_json::json!({"Finished": {"ok": false}}))
    );
    assert_eq!(event.key, None);
}

#[tokio::test]
async fn published_events_are_stored_in_the_transaction_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("publish.db").display());
    let pool = sqlite::connect(&url).await.unwrap();
    Outbox::new(SqliteBackend::new(pool.clone()))
        .migrate()
        .await
        .unwrap();

    let mut tx = pool.begin().await.unwrap();
    let order = OrderCreated {
        id: 42,
        total: 1999,
    };
    assert!(!order.publish(&mut *tx).await.unwrap().is_duplicate());
    let braces = Braces { r#type: "b".into() };
    assert!(!braces.publish(&mut *tx).await.unwrap().is_duplicate());
    tx.commit().await.unwrap();

    // A field's Display that makes a bad subject is refused at enqueue, naming the subject;
    // a `.` inside a value only splits its token in two.
    let mut tx = pool.begin().await.unwrap();
    for name in ["a b", "", "a.", ".a", "a..b", "*", "tab\t"] {
        let upload = Uploaded { name: name.into() };
        let err = upload.publish(&mut *tx).await.unwrap_err();
        assert!(
            matches!(&err, EnqueueError::InvalidMessage { .. }),
            "{name:?}: {err}"
        );
        assert!(err.to_string().contains("field `subject`"), "{err}");
    }
    let dotted = Uploaded { name: "a.b".into() };
    assert_eq!(dotted.subject(), "files.a.b.uploaded");
    assert!(!dotted.publish(&mut *tx).await.unwrap().is_duplicate());
    tx.rollback().await.unwrap();

    let mut conn = pool.acquire().await.unwrap();
    let queued = testing::queued::<Event, _>(&mut *conn).await;
    let events: Vec<&Event> = queued.iter().map(|q| &q.message).collect();
    assert_eq!(events.len(), 2, "only the committed events are queued");
    assert_eq!(*events[0], order.to_event().unwrap());
    assert_eq!(events[0].subject, "orders.42.created");
    assert_eq!(events[0].key.as_deref(), Some("42"));
    assert_eq!(
        events[0].payload.json_value(),
        Some(serde_json::json!({"id": 42, "total": 1999}))
    );
    assert_eq!(events[1].subject, "braces.{b}");
    assert_eq!(events[1].key.as_deref(), Some("{b}"));
}
