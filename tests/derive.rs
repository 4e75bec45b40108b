//! Runtime behaviour of `#[derive(OutboxMessage)]`: tags, defaults and idempotency keys on
//! every supported shape.

use std::time::Duration;

use outbox::validate_type_tag;
use outbox::{MessageDefaults, OutboxMessage};
use serde::{Deserialize, Serialize};

/// A named-field struct with every attribute, spread over two attributes.
#[derive(Debug, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "registration.user_mail", key(user_id, template))]
#[outbox(max_attempts = 5, priority = 3, timeout = "30s")]
struct UserMail {
    user_id: u64,
    template: String,
    body: String,
}

/// No attributes at all: the tag comes from the name, the defaults from `DEFAULT`.
#[derive(Serialize, Deserialize, OutboxMessage)]
struct SendEmailV2 {
    to: String,
}

/// An acronym in the name.
#[derive(Serialize, Deserialize, OutboxMessage)]
struct HTTPCall(String);

/// A unit struct with only a priority.
#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(priority = 65535)]
struct Ping;

/// An enum with no time limit.
#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "billing:invoice-v1", timeout = "none")]
enum Invoice {
    Issue { id: u32 },
    Cancel(u32),
    Purge,
}

/// A single-field key, a key field named with a raw identifier, millisecond timeout.
#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(key(order_id), timeout = "500ms", max_attempts = 1000)]
struct ShipOrder {
    order_id: String,
}

/// Raw identifiers in the type name and in key fields.
#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(key(r#type, id))]
struct r#Event {
    r#type: String,
    id: u8,
}

/// Minutes and hours.
#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(timeout = "5m")]
struct Minutes;

#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(timeout = "2h", max_attempts = 1, priority = 0)]
struct Hours;

/// A type whose derive names the crate explicitly.
#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(crate = "outbox_core", type = "explicit.crate")]
struct ExplicitCrate;

mod deep {
    /// A type in nested modules: its tag must not mention them.
    pub mod inner {
        use outbox::OutboxMessage;
        use serde::{Deserialize, Serialize};

        /// Same name as the top-level one, in a different module.
        #[derive(Serialize, Deserialize, OutboxMessage)]
        pub struct SendEmailV2 {
            pub to: String,
        }

        /// A type with an explicit tag, in a nested module.
        #[derive(Serialize, Deserialize, OutboxMessage)]
        #[outbox(type = "registration.user_mail")]
        pub struct Moved;
    }
}

#[test]
fn explicit_attributes() {
    assert_eq!(UserMail::TYPE, "registration.user_mail");
    let expected = MessageDefaults {
        max_attempts: 5,
        priority: 3,
        timeout: Some(Duration::from_secs(30)),
    };
    assert_eq!(UserMail::DEFAULTS, expected);
    let mail = UserMail {
        user_id: 42,
        template: "welcome".into(),
        body: "ignored".into(),
    };
    assert_eq!(mail.idempotency_key().as_deref(), Some("42:welcome"));
}

#[test]
fn defaults_when_no_attributes() {
    assert_eq!(SendEmailV2::TYPE, "send_email_v2");
    assert_eq!(SendEmailV2::DEFAULTS, MessageDefaults::DEFAULT);
    let msg = SendEmailV2 { to: "a@b".into() };
    assert_eq!(msg.idempotency_key(), None);
}

#[test]
fn tuple_unit_and_enum_shapes() {
    assert_eq!(HTTPCall::TYPE, "http_call");
    assert_eq!(HTTPCall("x".into()).idempotency_key(), None);
    assert_eq!(Ping::TYPE, "ping");
    let ping = MessageDefaults {
        priority: 65535,
        ..MessageDefaults::DEFAULT
    };
    assert_eq!(Ping::DEFAULTS, ping);
    assert_eq!(Invoice::TYPE, "billing:invoice-v1");
    assert_eq!(Invoice::DEFAULTS.timeout, None);
    assert_eq!(Invoice::DEFAULTS.max_attempts, 10);
    for invoice in [Invoice::Issue { id: 1 }, Invoice::Cancel(1), Invoice::Purge] {
        assert_eq!(invoice.idempotency_key(), None);
    }
}

#[test]
fn single_field_key_and_timeouts() {
    let ship = ShipOrder {
        order_id: "A-17".into(),
    };
    assert_eq!(ship.idempotency_key().as_deref(), Some("A-17"));
    assert_eq!(
        ShipOrder::DEFAULTS.timeout,
        Some(Duration::from_millis(500))
    );
    assert_eq!(ShipOrder::DEFAULTS.max_attempts, 1000);
    assert_eq!(Minutes::DEFAULTS.timeout, Some(Duration::from_secs(300)));
    let hours = MessageDefaults {
        max_attempts: 1,
        priority: 0,
        timeout: Some(Duration::from_secs(7200)),
    };
    assert_eq!(Hours::DEFAULTS, hours);
}

#[test]
fn raw_identifiers() {
    assert_eq!(Event::TYPE, "event");
    let event = Event {
        r#type: "created".into(),
        id: 7,
    };
    assert_eq!(event.idempotency_key().as_deref(), Some("created:7"));
}

#[test]
fn explicit_crate_path() {
    assert_eq!(ExplicitCrate::TYPE, "explicit.crate");
}

#[test]
fn nested_modules_keep_their_tag() {
    assert_eq!(deep::inner::SendEmailV2::TYPE, "send_email_v2");
    assert_eq!(deep::inner::SendEmailV2::TYPE, SendEmailV2::TYPE);
    assert_eq!(deep::inner::Moved::TYPE, UserMail::TYPE);
}

#[test]
fn derived_tags_pass_the_runtime_check() {
    let tags = [
        UserMail::TYPE,
        SendEmailV2::TYPE,
        HTTPCall::TYPE,
        Ping::TYPE,
        Invoice::TYPE,
        ShipOrder::TYPE,
        Event::TYPE,
        ExplicitCrate::TYPE,
    ];
    for tag in tags {
        assert_eq!(validate_type_tag(tag), Ok(()), "{tag}");
    }
}

/// The trait's bounds hold for derived types and `TYPE` is usable in const context.
#[test]
fn usable_generically_and_in_const_context() {
    fn tag_of<M: OutboxMessage>(_: &M) -> &'static str {
        M::TYPE
    }
    const TAG: &str = UserMail::TYPE;
    const ATTEMPTS: u32 = UserMail::DEFAULTS.max_attempts;
    assert_eq!(TAG, "registration.user_mail");
    assert_eq!(ATTEMPTS, 5);
    assert_eq!(tag_of(&Ping), "ping");
    let json = serde_json::to_string(&Invoice::Cancel(3)).unwrap();
    let back: Invoice = serde_json::from_str(&json).unwrap();
    assert_eq!(back.idempotency_key(), None);
}
