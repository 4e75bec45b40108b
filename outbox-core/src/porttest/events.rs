//! Message events: receipts and later events recorded once each, found by message and by
//! the provider's id of the message, pruned by age ([`EventStore`]).

use std::time::Duration;

use super::{at, PortHarness};
use crate::{
    clock::Now,
    store::{EventStore, NewMessageEvent},
};

fn event(message: &str, id: &str, external: &str, kind: &str, at_ms: u64) -> NewMessageEvent {
    NewMessageEvent {
        message_id: message.into(),
        provider: "postmark".into(),
        event_id: id.into(),
        external_id: external.into(),
        kind: kind.into(),
        recipient: Some("ann@example.org".into()),
        detail: format!("{kind} said so"),
        at: at(at_ms),
    }
}

/// A receipt names its message by the provider's id; later events of it are listed with
/// it, oldest first; a repeated event (same provider and event id) is recorded once; a
/// receipt under another provider does not answer for this one.
pub async fn events_are_recorded_once_and_found_by_message_and_by_external_id<H: PortHarness>(
    h: &H,
) {
    let b = h.backend();
    let now = Now::At(at(0));
    let receipt = NewMessageEvent::receipt("m1", "postmark", "pm-1", at(10));
    let one = std::slice::from_ref(&receipt);
    assert_eq!(b.record_events(one, now).await.unwrap(), 1);
    assert_eq!(b.record_events(one, now).await.unwrap(), 0, "a repeat");
    let other = NewMessageEvent::receipt("m2", "ses", "pm-1", at(11));
    let later = [
        event("m1", "ev-2", "pm-1", "hard_bounce", 30),
        event("m1", "ev-1", "pm-1", "delivered", 20),
        other,
    ];
    assert_eq!(b.record_events(&later, now).await.unwrap(), 3);
    assert_eq!(b.record_events(&later[..1], now).await.unwrap(), 0);

    assert_eq!(
        b.message_of("postmark", "pm-1").await.unwrap().as_deref(),
        Some("m1")
    );
    assert_eq!(
        b.message_of("ses", "pm-1").await.unwrap().as_deref(),
        Some("m2")
    );
    assert_eq!(b.message_of("postmark", "pm-9").await.unwrap(), None);

    let events = b.events_of("m1", 100).await.unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["accepted", "delivered", "hard_bounce"]);
    assert_eq!(events[0].recipient, None);
    assert_eq!(events[1].recipient.as_deref(), Some("ann@example.org"));
    assert_eq!(events[1].detail, "delivered said so");
    assert_eq!(events[1].at, at(20));
    assert_eq!(events[2].event_id, "ev-2");
    assert_eq!(b.events_of("m1", 2).await.unwrap().len(), 2, "the limit");
    assert!(b.events_of("m3", 100).await.unwrap().is_empty());

    // Keys are checked: an empty event id is refused, nothing written.
    let mut bad = event("m1", "", "pm-1", "delivered", 40);
    assert!(b.record_events(&[bad.clone()], now).await.is_err());
    bad.event_id = "x".repeat(256);
    assert!(b.record_events(&[bad], now).await.is_err());
    assert_eq!(b.events_of("m1", 100).await.unwrap().len(), 3);
}

/// Events recorded more than the window before now are pruned, in bounded batches; newer
/// ones stay.
pub async fn old_events_are_pruned<H: PortHarness>(h: &H) {
    let b = h.backend();
    let old: Vec<_> = (0..3)
        .map(|n| event("m1", &format!("old-{n}"), "pm-1", "delivered", n))
        .collect();
    b.record_events(&old, Now::At(at(1_000))).await.unwrap();
    let new = [event("m1", "new", "pm-1", "delivered", 5)];
    b.record_events(&new, Now::At(at(9_000))).await.unwrap();
    let window = Duration::from_secs(5);
    let now = Now::At(at(10_000));
    assert_eq!(b.prune_events(window, now, 2).await.unwrap(), 2);
    assert_eq!(b.prune_events(window, now, 2).await.unwrap(), 1);
    assert_eq!(b.prune_events(window, now, 2).await.unwrap(), 0);
    let left = b.events_of("m1", 100).await.unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].event_id, "new");
}
