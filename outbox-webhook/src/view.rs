//! The webhook kind's admin view: an `outbox.webhook` payload shown as the event it is
//! (endpoint, event type, host, the data pretty-printed), its failures grouped by the
//! receiver's answer (`HTTP 503 hooks.example.com`) or by why there was none (`timeout
//! hooks.example.com`, `refused by the address policy metadata.internal`), and its
//! attempts' errors named as the receiver's answers. The operator surfaces ask for it by
//! type tag ([`Views`](outbox_core::kind::Views)); the web admin registers it for
//! `outbox.webhook` when the facade's `webhook` feature is on.

use outbox_core::{
    kind::{Body, BodyFormat, Field, KindView, PayloadView},
    MessageId,
};
use url::Url;

use crate::{endpoint::host_key, message::group_of, Webhook};

/// Shows `outbox.webhook` messages ([`Webhook`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct WebhookView;

impl WebhookView {
    /// The view.
    pub fn new() -> Self {
        Self
    }
}

impl KindView for WebhookView {
    fn show(&self, _id: &MessageId, payload: &[u8]) -> Option<PayloadView> {
        let webhook: Webhook = serde_json::from_slice(payload).ok()?;
        let data = serde_json::to_string_pretty(&webhook.data).ok()?;
        Some(PayloadView {
            title: "Webhook".into(),
            anchor: "webhook".into(),
            fields: vec![
                Field::new("Endpoint", webhook.endpoint.clone()),
                Field::new("Event type", webhook.event_type.clone()),
                Field::new("Host", webhook.host.clone()),
                Field::new("Group", group_of(&webhook.endpoint)).muted(),
            ],
            bodies: vec![Body {
                title: "Data".into(),
                anchor: "webhook-data".into(),
                content: data,
                format: BodyFormat::Text,
            }],
        })
    }

    /// `HTTP <status> <host>` for an answer the receiver gave, `<failure class> <host>`
    /// when there was none (`timeout`, `connection refused`, `TLS failed`, `refused by the
    /// address policy`, …), `endpoint removed <name>` / `no signing secret <name>` when
    /// the endpoint could not be used; `None` for other errors (the generic signature).
    /// The host is the URL's in the error (`host:port` when the port is not the scheme's),
    /// else the payload's.
    fn signature(&self, payload: &[u8], error: &str) -> Option<String> {
        signature(payload, error)
    }

    fn attempts_label(&self) -> &str {
        "Error (the receiver's answer)"
    }
}

/// Why a delivery got no answer, by the text the client's failure starts with (see
/// [`Failure`](crate::Failure)'s `Display`), in the order they are tried.
const CLASSES: &[(&str, &str)] = &[
    ("delivery to ", "refused by the address policy"),
    ("delivery refused", "refused by the address policy"),
    ("no whole answer within", "timeout"),
    ("connection refused by ", "connection refused"),
    ("cannot connect to ", "no connection"),
    ("no connection to ", "no connection"),
    ("TLS with ", "TLS failed"),
    ("cannot resolve ", "name not resolved"),
    ("the connection broke", "connection broke"),
    ("invalid request", "invalid request"),
];

fn signature(payload: &[u8], error: &str) -> Option<String> {
    let first = error.lines().next().unwrap_or("").trim();
    let payload_host = || {
        let v: serde_json::Value = serde_json::from_slice(payload).ok()?;
        Some(v.get("host")?.as_str()?.to_ascii_lowercase()).filter(|h| !h.is_empty())
    };
    let host_of = |url: &str| {
        Url::parse(url)
            .ok()
            .map(|u| host_key(&u))
            .filter(|h| !h.is_empty())
            .or_else(payload_host)
            .unwrap_or_else(|| "?".into())
    };
    // An answer: `HTTP 503 from https://host/path; retry-after: 5 …`.
    if let Some(rest) = first.strip_prefix("HTTP ") {
        let (status, rest) = rest.split_once(' ')?;
        if status.len() != 3 || !status.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let url = rest.strip_prefix("from ")?.split_whitespace().next()?;
        return Some(format!(
            "HTTP {status} {}",
            host_of(url.trim_end_matches(';'))
        ));
    }
    // No answer: `https://host/path: <why>`.
    if let Some((url, why)) = first.split_once(": ") {
        if url.starts_with("https://") || url.starts_with("http://") {
            let class = CLASSES
                .iter()
                .find(|(start, _)| why.starts_with(start))
                .map(|(_, class)| *class)
                .or_else(|| why.ends_with(": no address").then_some("name not resolved"))?;
            return Some(format!("{class} {}", host_of(url)));
        }
    }
    // The endpoint itself.
    let quoted = |text: &str| text.split('`').nth(1).map(str::to_owned);
    if first.starts_with("no webhook endpoint `") && first.contains("removed") {
        return Some(format!("endpoint removed {}", quoted(first)?));
    }
    if first.starts_with("webhook endpoint `") && first.contains("has no usable signing secret") {
        return Some(format!("no signing secret {}", quoted(first)?));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAYLOAD: &[u8] = br#"{"endpoint":"orders","host":"hooks.example.com","event_type":"invoice.paid","data":{"invoice":42,"lines":[{"sku":"A-1"}]}}"#;

    fn sig(error: &str) -> Option<String> {
        WebhookView.signature(PAYLOAD, error)
    }

    #[test]
    fn answers_give_status_and_host() {
        assert_eq!(
            sig("HTTP 503 from https://Hooks.Example.com/in; retry-after: 5\nbody (4 bytes): busy")
                .as_deref(),
            Some("HTTP 503 hooks.example.com")
        );
        assert_eq!(
            sig("HTTP 422 from http://127.0.0.1:8080/in\nbody (10 bytes): bad field").as_deref(),
            Some("HTTP 422 127.0.0.1:8080")
        );
        assert_eq!(
            sig("HTTP 404 from https://hooks.example.com:443/in").as_deref(),
            Some("HTTP 404 hooks.example.com"),
            "the scheme's port is left out, as in the destination"
        );
        assert_eq!(
            sig(
                "HTTP 302 from https://hooks.example.com/old; location: https://x.example/ \
                 (redirects are not followed: update the endpoint's URL)"
            )
            .as_deref(),
            Some("HTTP 302 hooks.example.com")
        );
        // Two messages to the same host with different paths and bodies: one group.
        assert_eq!(
            sig("HTTP 500 from https://hooks.example.com/a/1\nbody (2 bytes): x1"),
            sig("HTTP 500 from https://hooks.example.com/b/2\nbody (2 bytes): y2")
        );
    }

    #[test]
    fn no_answer_gives_the_failure_class_and_host() {
        let cases = [
            (
                "https://hooks.example.com/in: no whole answer within the request timeout (15s)",
                "timeout hooks.example.com",
            ),
            (
                "http://169.254.169.254/latest: delivery to 169.254.169.254 refused: link-local \
                 (cloud metadata)",
                "refused by the address policy 169.254.169.254",
            ),
            (
                "https://internal.example/in: delivery to internal.example refused: it resolves \
                 to 10.0.0.5, private",
                "refused by the address policy internal.example",
            ),
            (
                "http://hooks.example.com:8080/in: connection refused by 192.0.2.1:8080: nothing \
                 listens there",
                "connection refused hooks.example.com:8080",
            ),
            (
                "https://hooks.example.com/in: TLS with hooks.example.com (192.0.2.1:443): \
                 invalid peer certificate: UnknownIssuer",
                "TLS failed hooks.example.com",
            ),
            (
                "https://gone.example/in: cannot resolve gone.example: no such host",
                "name not resolved gone.example",
            ),
            (
                "https://hooks.example.com/in: cannot connect to hooks.example.com \
                 (192.0.2.1:443): no connection within 5s",
                "no connection hooks.example.com",
            ),
            (
                "https://hooks.example.com/in: the connection broke: hooks.example.com \
                 (192.0.2.1:443): connection reset",
                "connection broke hooks.example.com",
            ),
        ];
        for (error, want) in cases {
            assert_eq!(sig(error).as_deref(), Some(want), "{error}");
        }
    }

    #[test]
    fn endpoint_failures_name_the_endpoint_and_others_get_the_generic_signature() {
        assert_eq!(
            sig("no webhook endpoint `orders`: it was removed (or never created)").as_deref(),
            Some("endpoint removed orders")
        );
        assert_eq!(
            sig(
                "webhook endpoint `orders` has no usable signing secret: rotate one in \
                 (WebhookEndpoints::rotate)"
            )
            .as_deref(),
            Some("no signing secret orders")
        );
        assert_eq!(sig("the handler panicked: index out of bounds"), None);
        assert_eq!(sig("HTTP five hundred"), None);
        assert_eq!(sig("https://hooks.example.com/in: something new"), None);
        assert_eq!(sig(""), None);
    }

    #[test]
    fn the_payloads_host_stands_in_for_a_url_without_one() {
        assert_eq!(
            WebhookView
                .signature(PAYLOAD, "HTTP 500 from not-a-url")
                .as_deref(),
            Some("HTTP 500 hooks.example.com")
        );
        assert_eq!(
            WebhookView
                .signature(b"not json", "HTTP 500 from not-a-url")
                .as_deref(),
            Some("HTTP 500 ?")
        );
    }

    #[test]
    fn a_webhook_shows_its_endpoint_event_and_data_and_other_payloads_nothing() {
        let id = MessageId::from_string("01J0000000000000000000TEST");
        let view = WebhookView.show(&id, PAYLOAD).unwrap();
        assert_eq!(
            (view.title.as_str(), view.anchor.as_str()),
            ("Webhook", "webhook")
        );
        let get = |name: &str| {
            view.fields
                .iter()
                .find(|f| f.name == name)
                .map(|f| (f.value.as_str(), f.muted))
        };
        assert_eq!(get("Endpoint"), Some(("orders", false)));
        assert_eq!(get("Event type"), Some(("invoice.paid", false)));
        assert_eq!(get("Host"), Some(("hooks.example.com", false)));
        assert_eq!(get("Group"), Some(("webhook:orders", true)));
        assert_eq!(view.bodies.len(), 1);
        let data = &view.bodies[0];
        assert_eq!(data.format, BodyFormat::Text);
        assert_eq!(data.anchor, "webhook-data");
        assert_eq!(
            data.content,
            "{\n  \"invoice\": 42,\n  \"lines\": [\n    {\n      \"sku\": \"A-1\"\n    }\n  ]\n}"
        );
        assert!(WebhookView.show(&id, b"{\"order\": 1}").is_none());
        assert!(WebhookView.show(&id, &[0xff, 0x00]).is_none());
        assert_eq!(
            WebhookView.attempts_label(),
            "Error (the receiver's answer)"
        );
    }
}
