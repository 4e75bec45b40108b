//! The kind seam: what a message kind (email, a webhook, a broker event, …) tells the
//! outbox so that the neutral core can shape, guard and show its messages without knowing
//! what they are.
//!
//! A kind is a crate or module above the core. It supplies, per message type:
//!
//! * its **destination**: a neutral key traffic shaping groups by
//!   ([`OutboxMessage::destination`](crate::OutboxMessage::destination); an email's
//!   recipient domain, a webhook's host), and the subject the suppression list checks
//!   ([`OutboxMessage::recipient`](crate::OutboxMessage::recipient));
//! * its **failure classes**, as the values of [`HandlerErrorKind`](crate::HandlerErrorKind)
//!   the core acts on: retry after a time, permanent, downstream down (the breaker), slow
//!   this destination, suppress this destination;
//! * its **shaping presets**: sites, routes, reply rules and a
//!   [`SiteResolver`](crate::SiteResolver) for keys that roll up into shared sites;
//! * its **admin view** ([`KindView`]): how the operator surfaces show one of its payloads,
//!   group its errors and name its attempts' errors, registered by type tag in [`Views`].
//!
//! The email kind (`outbox-smtp`) is built this way; the guide's "Writing a message kind"
//! walks a small one end to end.

use std::{collections::HashMap, fmt, sync::Arc};

use crate::enqueue::MessageId;

/// How operator surfaces show the messages of one kind. Every method is pure and must not
/// fail: a payload the view cannot read gets `None`, and the surface shows the raw payload.
pub trait KindView: Send + Sync + 'static {
    /// The payload of message `id` as the kind reads it; `None` when it does not decode.
    fn show(&self, id: &MessageId, payload: &[u8]) -> Option<PayloadView>;

    /// What failures of this kind have in common, so that dead letters can be grouped by
    /// it (an email: the reply code and the refused domain); `None` for the surface's
    /// generic signature (the error's first line with numbers and ids blanked).
    fn signature(&self, payload: &[u8], error: &str) -> Option<String> {
        let _ = (payload, error);
        None
    }

    /// The heading of the attempts' error column (an email: the server's reply).
    fn attempts_label(&self) -> &str {
        "Error"
    }
}

/// A payload as its kind shows it: a titled table of fields and any bodies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PayloadView {
    /// The section's heading (`Email`).
    pub title: String,
    /// The section's anchor in the page (`email`): letters, digits and `-`.
    pub anchor: String,
    /// Name and value rows, in order.
    pub fields: Vec<Field>,
    /// Bodies shown below the table, in order.
    pub bodies: Vec<Body>,
}

/// One row of a [`PayloadView`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// The row's name (`Subject`).
    pub name: String,
    /// Its value, shown as text (escaped).
    pub value: String,
    /// A row of secondary information, shown muted.
    pub muted: bool,
}

impl Field {
    /// A row `name`: `value`.
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            value: value.into(),
            muted: false,
        }
    }

    /// The same row, shown muted.
    pub fn muted(mut self) -> Self {
        self.muted = true;
        self
    }
}

/// A body of a [`PayloadView`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Body {
    /// Its heading (`Text body`).
    pub title: String,
    /// Its anchor in the page (`text-body`).
    pub anchor: String,
    /// The content.
    pub content: String,
    /// How the surface shows it.
    pub format: BodyFormat,
}

/// How a [`Body`] is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyFormat {
    /// Preformatted text, escaped.
    Text,
    /// HTML, rendered in a sandbox (no scripts, forms or access to the page; remote images
    /// blocked unless the operator asks for them).
    Html,
}

/// The registry of kind views by type tag, which the operator surfaces ask.
#[derive(Clone, Default)]
pub struct Views {
    by_type: HashMap<String, Arc<dyn KindView>>,
}

impl fmt::Debug for Views {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut types: Vec<_> = self.by_type.keys().collect();
        types.sort();
        f.debug_struct("Views").field("types", &types).finish()
    }
}

impl Views {
    /// No views: every payload is shown raw.
    pub fn new() -> Self {
        Self::default()
    }

    /// Shows messages of `type_tag` with `view` (replacing an earlier view of that type).
    pub fn with(mut self, type_tag: &str, view: impl KindView) -> Self {
        self.by_type.insert(type_tag.to_owned(), Arc::new(view));
        self
    }

    /// The view of `type_tag`, if one is registered.
    pub fn get(&self, type_tag: &str) -> Option<&dyn KindView> {
        self.by_type.get(type_tag).map(|v| &**v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Upper;

    impl KindView for Upper {
        fn show(&self, _: &MessageId, payload: &[u8]) -> Option<PayloadView> {
            let text = std::str::from_utf8(payload).ok()?;
            Some(PayloadView {
                title: "Upper".into(),
                anchor: "upper".into(),
                fields: vec![Field::new("Text", text.to_uppercase())],
                bodies: Vec::new(),
            })
        }
    }

    #[test]
    fn the_registry_finds_a_view_by_type_and_defaults_stay_neutral() {
        let views = Views::new().with("demo.upper", Upper);
        let id = MessageId::from_string("01J0000000000000000000TEST");
        let view = views.get("demo.upper").unwrap();
        assert_eq!(view.show(&id, b"abc").unwrap().fields[0].value, "ABC");
        assert_eq!(view.show(&id, &[0xff]), None);
        assert_eq!(view.signature(b"", "x"), None);
        assert_eq!(view.attempts_label(), "Error");
        assert!(views.get("other").is_none());
        assert!(format!("{views:?}").contains("demo.upper"));
    }
}
