//! Runtime behaviour of `#[derive(OutboxMessage)]`: tags, defaults, idempotency keys and
//! validation on every supported shape.

use std::time::Duration;

use outbox::validate_type_tag;
use outbox::{InvalidMessage, MessageDefaults, OutboxMessage};
use serde::{Deserialize, Serialize};

/// A named-field struct with every attribute, spread over two attributes.
#[derive(Debug, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "registration.user_mail", key(user_id, template))]
#[outbox(max_attempts = 5, priority = 3, timeout = "30s", max_payload = "64KiB")]
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

/// An enum whose key comes from a function in another module, per variant.
#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "billing.payment", key_fn = "rules::payment_key")]
enum Payment {
    Charge { order: u32, cents: u64 },
    Refund(u32),
    Audit,
}

/// A tuple struct whose key comes from an associated function.
#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(key_fn = "Self::key")]
struct Webhook(String, u16);

impl Webhook {
    /// The URL alone: retries of one hook are the same message whatever the attempt.
    fn key(&self) -> Option<String> {
        Some(self.0.clone())
    }
}

/// A struct checked by a function in another module.
#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(validate = "rules::check_recipients")]
struct Newsletter {
    to: Vec<String>,
}

/// Validation together with a field key, in separate attributes, through an associated
/// function.
#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(key(account))]
#[outbox(validate = "Self::check", max_attempts = 3)]
struct Withdraw {
    account: String,
    cents: i64,
}

impl Withdraw {
    /// Refuses amounts that are not positive.
    fn check(&self) -> Result<(), InvalidMessage> {
        if self.cents <= 0 {
            return Err(InvalidMessage::new("cents", "must be positive"));
        }
        Ok(())
    }
}

/// Validation with the crate named explicitly: the generated signature names the error
/// through that path.
#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(crate = "outbox_core", validate = "rules::refuse_all")]
struct Refused;

/// The functions the attributes above name.
mod rules {
    use outbox::InvalidMessage;

    /// One key per order and kind of operation; audits have none.
    pub fn payment_key(payment: &super::Payment) -> Option<String> {
        match payment {
            super::Payment::Charge { order, .. } => Some(format!("charge:{order}")),
            super::Payment::Refund(order) => Some(format!("refund:{order}")),
            super::Payment::Audit => None,
        }
    }

    /// At least one recipient, each with an `@`.
    pub fn check_recipients(mail: &super::Newsletter) -> Result<(), InvalidMessage> {
        if mail.to.is_empty() {
            return Err(InvalidMessage::new("to", "needs at least one recipient"));
        }
        match mail.to.iter().position(|to| !to.contains('@')) {
            Some(i) => Err(InvalidMessage::new(format!("to[{i}]"), "not an address")),
            None => Ok(()),
        }
    }

    /// Refuses every message.
    pub fn refuse_all(_: &super::Refused) -> Result<(), outbox_core::InvalidMessage> {
        Err(InvalidMessage::new("self", "always refused"))
    }
}

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
        max_payload: 64 * 1024,
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
        max_payload: outbox::DEFAULT_MAX_PAYLOAD,
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
fn key_fn_on_enum_and_tuple_struct() {
    let charge = Payment::Charge {
        order: 7,
        cents: 990,
    };
    assert_eq!(charge.idempotency_key().as_deref(), Some("charge:7"));
    assert_eq!(
        Payment::Refund(7).idempotency_key().as_deref(),
        Some("refund:7")
    );
    assert_eq!(Payment::Audit.idempotency_key(), None);
    assert_eq!(Payment::TYPE, "billing.payment");
    assert_eq!(Payment::Audit.validate(), Ok(()));
    let hook = Webhook("https://example.test/hook".into(), 2);
    assert_eq!(
        hook.idempotency_key().as_deref(),
        Some("https://example.test/hook")
    );
}

#[test]
fn validate_refuses_with_field_and_reason() {
    let ok = Newsletter {
        to: vec!["a@b".into(), "c@d".into()],
    };
    assert_eq!(ok.validate(), Ok(()));
    let bad = Newsletter {
        to: vec!["a@b".into(), "nobody".into()],
    };
    let err = bad.validate().unwrap_err();
    assert_eq!(err.field, "to[1]");
    assert_eq!(err.reason, "not an address");
    let empty = Newsletter { to: vec![] };
    let err = empty.validate().unwrap_err();
    assert_eq!(err.field, "to");
    assert_eq!(err.reason, "needs at least one recipient");
    assert_eq!(ok.idempotency_key(), None);
    assert_eq!(Refused.validate().unwrap_err().reason, "always refused");
}

#[test]
fn validate_with_field_key() {
    let ok = Withdraw {
        account: "acc-1".into(),
        cents: 500,
    };
    assert_eq!(ok.validate(), Ok(()));
    assert_eq!(ok.idempotency_key().as_deref(), Some("acc-1"));
    assert_eq!(Withdraw::DEFAULTS.max_attempts, 3);
    let bad = Withdraw {
        account: "acc-1".into(),
        cents: 0,
    };
    let err = bad.validate().unwrap_err();
    assert_eq!(err, InvalidMessage::new("cents", "must be positive"));
    assert_eq!(err.to_string(), "field `cents`: must be positive");
    assert_eq!(bad.idempotency_key().as_deref(), Some("acc-1"));
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
        Payment::TYPE,
        Webhook::TYPE,
        Newsletter::TYPE,
        Withdraw::TYPE,
        Refused::TYPE,
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

/// Types generated by a declarative macro: `macro_rules!` hands the derive its literals
/// wrapped in invisible groups, which parse like plain literals.
macro_rules! generated_type {
    ($name:ident, $tag:literal, $attempts:literal, $priority:expr) => {
        #[derive(Debug, Serialize, Deserialize, OutboxMessage)]
        #[outbox(type = $tag, max_attempts = $attempts, priority = $priority)]
        struct $name {
            n: i64,
        }
    };
}

generated_type!(GeneratedA, "generated.a", 3, 2);
generated_type!(GeneratedB, "generated.b", 7, 4);

#[test]
fn types_generated_by_a_declarative_macro() {
    assert_eq!(GeneratedA::TYPE, "generated.a");
    assert_eq!(GeneratedB::TYPE, "generated.b");
    assert_eq!(
        (
            GeneratedA::DEFAULTS.max_attempts,
            GeneratedA::DEFAULTS.priority
        ),
        (3, 2)
    );
    assert_eq!(
        (
            GeneratedB::DEFAULTS.max_attempts,
            GeneratedB::DEFAULTS.priority
        ),
        (7, 4)
    );
    let _ = GeneratedA { n: 1 }.n + GeneratedB { n: 2 }.n;
}

/// `ordered` declares that the type's messages may carry ordering keys.
#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "ledger.entry", ordered)]
struct LedgerEntry {
    account: i64,
}

#[test]
fn ordered_sets_the_flag_and_nothing_else() {
    const { assert!(LedgerEntry::ORDERED) };
    const { assert!(!UserMail::ORDERED) };
    assert_eq!(LedgerEntry::DEFAULTS, MessageDefaults::DEFAULT);
    assert_eq!(LedgerEntry { account: 1 }.order_key(), None);
}
