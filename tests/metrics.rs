//! Metrics through a real Prometheus exporter: `examples/metrics.rs` drains 20 signups
//! (16 delivered, 5 first attempts failed and retried, 4 dead letters) with the exporter's
//! HTTP listener installed, and its text must carry those figures per type.

#[path = "../examples/metrics.rs"]
#[allow(dead_code)]
mod example;

use std::time::Duration;

/// The value of `name{labels}` in Prometheus text, where `labels` is the exact label set.
fn value(text: &str, name: &str, labels: &str) -> Option<f64> {
    let series = format!("{name}{{{labels}}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&series))
        .map(|v| v.trim().parse().expect("a number"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_exporter_reports_the_drains_counters_and_gauges() {
    let dir = tempfile::tempdir().unwrap();
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let report = example::demo(&dir.path().join("metrics.db"), addr)
        .await
        .unwrap();
    assert_eq!(
        (
            report.counts.delivered,
            report.counts.failed_attempts,
            report.counts.given_up
        ),
        (16, 5, 4)
    );
    // The same figures in the persisted history (written when the drain's workers stopped).
    let db = format!("sqlite://{}", dir.path().join("metrics.db").display());
    let pool = outbox::sqlite::connect(&db).await.unwrap();
    let history = outbox::Admin::new(outbox::SqliteBackend::new(pool))
        .history(Duration::from_secs(3600))
        .await
        .unwrap();
    let sum = |pick: fn(&outbox::TypeOutcomes) -> u64| -> u64 {
        history
            .iter()
            .filter(|m| m.outcomes.type_tag == "signup_mail")
            .map(|m| pick(&m.outcomes))
            .sum()
    };
    assert_eq!(
        (sum(|o| o.delivered), sum(|o| o.failed), sum(|o| o.dead)),
        (16, 5, 4),
        "{history:?}"
    );
    let mut text = String::new();
    for _ in 0..50 {
        if let Ok(t) = example::scrape(addr).await {
            text = t;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let t = r#"type="signup_mail""#;
    for (name, expected) in [
        ("outbox_enqueued_total", 20.0),
        ("outbox_delivered_total", 16.0),
        ("outbox_retried_total", 5.0),
        ("outbox_dead_lettered_total", 4.0),
    ] {
        assert_eq!(value(&text, name, t), Some(expected), "{name} in:\n{text}");
    }
    // Every attempt was timed: 16 + 5 + 4 = 25 handler calls.
    let ok = value(
        &text,
        "outbox_handler_duration_seconds_count",
        r#"type="signup_mail",outcome="ok""#,
    );
    let failed = value(
        &text,
        "outbox_handler_duration_seconds_count",
        r#"type="signup_mail",outcome="error""#,
    );
    assert_eq!((ok, failed), (Some(16.0), Some(9.0)), "{text}");
    assert_eq!(
        value(&text, "outbox_pickup_latency_seconds_count", t),
        Some(25.0),
        "{text}"
    );
    // The gauges, sampled after the drain's workers stopped: nothing left, 4 dead.
    let depth = |state: &str| {
        value(
            &text,
            "outbox_queue_depth",
            &format!(r#"type="signup_mail",state="{state}""#),
        )
    };
    assert_eq!(
        (depth("pending"), depth("paused"), depth("dead")),
        (Some(0.0), Some(0.0), Some(4.0)),
        "{text}"
    );
    assert_eq!(
        value(&text, "outbox_oldest_due_age_seconds", t),
        Some(0.0),
        "{text}"
    );
    // The type's circuit breaker (named by the type: its handler names no downstream),
    // closed: no attempt said the downstream was down.
    assert_eq!(
        value(&text, "outbox_breaker_open", r#"breaker="signup_mail""#),
        Some(0.0),
        "{text}"
    );
}
