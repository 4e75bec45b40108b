//! Endpoints of message kinds: stored, updated, listed by kind, disabled and enabled with
//! their reasons and times, a failure clock started once and stopped, removed
//! ([`EndpointStore`]).

use super::{at, PortHarness};
use crate::{clock::Now, store::EndpointStore};

/// A stored endpoint is enabled; storing it again changes its settings and keeps its
/// state and creation time; endpoints are listed by name within their kind only; a bad
/// name or settings that are not JSON are refused and write nothing; removing forgets it.
pub async fn endpoints_are_stored_updated_listed_and_removed<H: PortHarness>(h: &H) {
    let b = h.backend();
    b.put_endpoint(
        "webhook",
        "zeta",
        r#"{"url":"https://z.example"}"#,
        Now::At(at(10)),
    )
    .await
    .unwrap();
    b.put_endpoint(
        "webhook",
        "acme",
        r#"{"url":"https://a.example"}"#,
        Now::At(at(20)),
    )
    .await
    .unwrap();
    b.put_endpoint("relay", "acme", "{}", Now::At(at(20)))
        .await
        .unwrap();
    let acme = b
        .endpoint("webhook", "acme")
        .await
        .unwrap()
        .expect("stored");
    assert!(acme.is_enabled());
    assert_eq!(acme.settings, r#"{"url":"https://a.example"}"#);
    assert_eq!((acme.created_at, acme.updated_at), (at(20), at(20)));
    assert_eq!(acme.failing_since, None);

    b.disable_endpoint("webhook", "acme", "410 Gone", Now::At(at(25)))
        .await
        .unwrap();
    b.put_endpoint(
        "webhook",
        "acme",
        r#"{"url":"https://b.example"}"#,
        Now::At(at(30)),
    )
    .await
    .unwrap();
    let acme = b.endpoint("webhook", "acme").await.unwrap().unwrap();
    assert_eq!(acme.settings, r#"{"url":"https://b.example"}"#);
    assert_eq!((acme.created_at, acme.updated_at), (at(20), at(30)));
    assert!(
        !acme.is_enabled(),
        "new settings keep the endpoint disabled"
    );

    let names: Vec<String> = b
        .endpoints("webhook")
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, ["acme", "zeta"]);
    assert_eq!(b.endpoints("relay").await.unwrap().len(), 1);
    assert!(b.endpoint("webhook", "nobody").await.unwrap().is_none());

    let bad = b.put_endpoint("webhook", "", "{}", Now::At(at(40))).await;
    assert!(bad.unwrap_err().to_string().contains("name"));
    let bad = b
        .put_endpoint("webhook", "x", "{nope", Now::At(at(40)))
        .await;
    assert!(bad.unwrap_err().to_string().contains("JSON"));
    assert!(b.endpoint("webhook", "x").await.unwrap().is_none());

    assert!(b.remove_endpoint("webhook", "zeta").await.unwrap());
    assert!(!b.remove_endpoint("webhook", "zeta").await.unwrap());
    assert!(b.endpoint("webhook", "zeta").await.unwrap().is_none());
    assert_eq!(b.endpoints("relay").await.unwrap().len(), 1);
}

/// Disabling keeps the first time and takes the last reason; enabling clears both and
/// the failure clock; the failure clock starts at the first failure only and stops at a
/// success; an endpoint that is not stored answers `None`.
pub async fn endpoints_are_disabled_enabled_and_keep_a_failure_clock<H: PortHarness>(h: &H) {
    let b = h.backend();
    b.put_endpoint("webhook", "acme", "{}", Now::At(at(10)))
        .await
        .unwrap();

    b.endpoint_health("webhook", "acme", true, Now::At(at(20)))
        .await
        .unwrap();
    b.endpoint_health("webhook", "acme", true, Now::At(at(30)))
        .await
        .unwrap();
    let e = b.endpoint("webhook", "acme").await.unwrap().unwrap();
    assert_eq!(
        e.failing_since,
        Some(at(20)),
        "the first failure starts the clock"
    );
    b.endpoint_health("webhook", "acme", false, Now::At(at(40)))
        .await
        .unwrap();
    let e = b.endpoint("webhook", "acme").await.unwrap().unwrap();
    assert_eq!(e.failing_since, None, "a success stops it");
    b.endpoint_health("webhook", "acme", true, Now::At(at(50)))
        .await
        .unwrap();

    let e = b
        .disable_endpoint("webhook", "acme", "failing for 5 days", Now::At(at(60)))
        .await
        .unwrap()
        .expect("stored");
    assert_eq!(e.disabled_at, Some(at(60)));
    assert_eq!(e.disabled_reason.as_deref(), Some("failing for 5 days"));
    assert_eq!(e.updated_at, at(60));
    let e = b
        .disable_endpoint("webhook", "acme", "410 Gone", Now::At(at(70)))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(e.disabled_at, Some(at(60)), "the first time stays");
    assert_eq!(e.disabled_reason.as_deref(), Some("410 Gone"));
    assert!(!e.is_enabled());
    assert_eq!(e.failing_since, Some(at(50)));

    let e = b
        .enable_endpoint("webhook", "acme", Now::At(at(80)))
        .await
        .unwrap()
        .unwrap();
    assert!(e.is_enabled());
    assert_eq!(e.disabled_reason, None);
    assert_eq!(e.failing_since, None, "enabling restarts the failure clock");
    assert_eq!(e.updated_at, at(80));

    let none = b
        .disable_endpoint("webhook", "nobody", "x", Now::At(at(90)))
        .await
        .unwrap();
    assert!(none.is_none());
    assert!(b
        .enable_endpoint("webhook", "nobody", Now::At(at(90)))
        .await
        .unwrap()
        .is_none());
}
