//! Checks on the parsed `#[derive(PublishEvent)]` input, each reported at the attribute,
//! literal or identifier at fault. All checks run and their errors are combined.
//!
//! The subject rule is the one `outbox_publish::event::check_subject` applies when an event
//! is enqueued, applied here to what is known at compile time: the literal text between
//! the placeholders. A placeholder's value is checked at run time.

use std::collections::HashSet;

use syn::ext::IdentExt;
use syn::{Error, GenericParam};

use super::ast::{Input, Part, Pattern};
use crate::ast::Shape;
use crate::valid::{closest, Errors};

/// Longest subject, in bytes; the same as `outbox_publish::MAX_SUBJECT_LEN`.
const MAX_SUBJECT_LEN: usize = 255;

/// Longest ordering key, in bytes; the same as `outbox_core`'s `MAX_ORDER_KEY_LEN`.
const MAX_ORDER_KEY_LEN: usize = 255;

impl Input<'_> {
    /// Runs every check on the input, pushing what fails to `errors`.
    pub fn validate(&self, errors: &mut Errors) {
        self.check_generics(errors);
        for attr in &self.misplaced {
            let msg = "#[publish(...)] goes on the type, not on a field or variant; \
                       name a field in the pattern instead: \
                       #[publish(subject = \"orders.{id}.created\")] on the struct";
            errors.push(Error::new_spanned(attr, msg));
        }
        match &self.attrs.subject {
            Some(subject) => {
                self.check_fields(subject, "subject", errors);
                for problem in subject_problems(subject) {
                    errors.push(Error::new(subject.lit.span(), problem));
                }
            }
            None if self.attrs.subject_written => {}
            None => self.missing_subject(errors),
        }
        if let Some(key) = &self.attrs.key {
            self.check_fields(key, "key", errors);
            for problem in key_problems(key) {
                errors.push(Error::new(key.lit.span(), problem));
            }
        }
    }

    /// `subject = "..."` is required.
    fn missing_subject(&self, errors: &mut Errors) {
        let example = "#[publish(subject = \"orders.{id}.created\")]";
        errors.push(match &self.attrs.first {
            Some(attr) => {
                let msg =
                    format!("the subject is missing: add `subject = \"...\"`, as in {example}");
                Error::new_spanned(attr, msg)
            }
            None => {
                let msg = format!(
                    "#[derive(PublishEvent)] needs a subject to publish `{}` on: add {example} \
                     to the type",
                    self.ident.unraw()
                );
                Error::new_spanned(self.ident, msg)
            }
        });
    }

    /// Type and const parameters and lifetimes are refused, as `OutboxMessage` refuses them.
    fn check_generics(&self, errors: &mut Errors) {
        let params = &self.generics.params;
        if params.is_empty() {
            return;
        }
        let only_lifetimes = params
            .iter()
            .all(|p| matches!(p, GenericParam::Lifetime(_)));
        let name = self.ident.unraw();
        let msg = if only_lifetimes {
            "PublishEvent cannot be derived for a type with lifetime parameters: an event is \
             read back as an owned value by its consumers; use owned fields (`String`, \
             `Vec<u8>`) instead of references"
                .to_string()
        } else {
            format!(
                "PublishEvent cannot be derived for a generic type: the placeholders' fields \
                 need `Display` bounds the derive cannot know; implement it by hand for the \
                 concrete types, as in `impl PublishEvent for {name}<Concrete> {{ fn subject(&self) \
                 -> String {{ ... }} }}`"
            )
        };
        errors.push(Error::new_spanned(self.generics, msg));
    }

    /// Every placeholder of `pattern` names a field of a struct with named fields.
    fn check_fields(&self, pattern: &Pattern, what: &str, errors: &mut Errors) {
        let Some(first) = pattern.fields().next() else {
            return;
        };
        let name = self.ident.unraw();
        let fields = match &self.shape {
            Shape::Named(fields) => fields,
            other => {
                let msg = format!(
                    "the {what} {} has the placeholder `{{{first}}}`, and placeholders name \
                     fields of a struct with named fields, while `{name}` is {}; use a \
                     constant {what}, or implement `PublishEvent` by hand",
                    pattern.shown(),
                    other.describe()
                );
                return errors.push(Error::new(pattern.lit.span(), msg));
            }
        };
        let names: Vec<String> = fields.iter().map(|f| f.unraw().to_string()).collect();
        let mut reported = HashSet::new();
        for field in pattern.fields() {
            let bare = field.strip_prefix("r#").unwrap_or(field);
            if names.iter().any(|n| n == bare) || !reported.insert(bare) {
                continue;
            }
            let hint = match closest(bare, names.iter().map(String::as_str)) {
                Some(near) => format!("did you mean `{near}`? "),
                None => String::new(),
            };
            let list = match names.is_empty() {
                true => "it has none".to_string(),
                false => {
                    let list: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
                    format!("its fields are: {}", list.join(", "))
                }
            };
            let msg = format!(
                "the placeholder `{{{field}}}` in the {what} {} names no field of `{name}`; \
                 {hint}{list}",
                pattern.shown()
            );
            errors.push(Error::new(pattern.lit.span(), msg));
        }
    }
}

/// What makes `subject` unable to ever be a valid subject, whatever the fields hold: the
/// literal text's whitespace, control characters, wildcards, empty tokens and length.
pub fn subject_problems(subject: &Pattern) -> Vec<String> {
    let shown = subject.shown();
    let rule = "a subject is non-empty tokens separated by `.`, as in `orders.{id}.created`";
    if subject.parts.is_empty() {
        return vec![format!("the subject is empty: {rule}")];
    }
    let mut problems = Vec::new();
    let text = subject.text();
    if let Some(c) = text.chars().find(|c| c.is_whitespace() || c.is_control()) {
        problems.push(format!(
            "the subject {shown} holds {c:?}: whitespace and control characters cannot be \
             published; {rule}"
        ));
    }
    if let Some(c) = text.chars().find(|c| matches!(c, '*' | '>')) {
        problems.push(format!(
            "the subject {shown} holds the wildcard `{c}`: wildcards are for subscribing, an \
             event is published on one concrete subject, as in `orders.{{id}}.created`"
        ));
    }
    if let Some(place) = empty_token(&subject.parts) {
        problems.push(format!(
            "the subject {shown} has an empty token ({place}): {rule}"
        ));
    }
    let len = text.len();
    if len > MAX_SUBJECT_LEN {
        let what = match subject.fields().next() {
            None => format!("the subject is {len} bytes long"),
            Some(_) => format!("the subject's literal text alone is {len} bytes long"),
        };
        problems.push(format!(
            "{what}; the limit is {MAX_SUBJECT_LEN} (a RabbitMQ routing key's)"
        ));
    }
    problems
}

/// Where the literal text leaves a `.`-separated token empty with no placeholder in it.
fn empty_token(parts: &[Part]) -> Option<&'static str> {
    let mut filled = false;
    let mut first = true;
    let mut dots = false;
    for part in parts {
        match part {
            Part::Field(_) => filled = true,
            Part::Text(text) => {
                for c in text.chars() {
                    if c != '.' {
                        filled = true;
                        continue;
                    }
                    if !filled {
                        return Some(match first {
                            true => "it starts with `.`",
                            false => "`..`",
                        });
                    }
                    filled = false;
                    first = false;
                    dots = true;
                }
            }
        }
    }
    (dots && !filled).then_some("it ends with `.`")
}

/// What makes `key` unable to ever be a valid ordering key: empty, control characters in
/// its literal text, or that text too long.
pub fn key_problems(key: &Pattern) -> Vec<String> {
    if key.parts.is_empty() {
        return vec![
            "the key is empty: an ordering key is 1 to 255 bytes, as in `{id}`; leave `key` \
             out for events that need no order"
                .to_string(),
        ];
    }
    let mut problems = Vec::new();
    let text = key.text();
    if let Some(c) = text.chars().find(|c| c.is_control()) {
        problems.push(format!(
            "the key {} holds the control character {c:?}: an ordering key may not hold \
             control characters",
            key.shown()
        ));
    }
    let len = text.len();
    if len > MAX_ORDER_KEY_LEN {
        let what = match key.fields().next() {
            None => format!("the key is {len} bytes long"),
            Some(_) => format!("the key's literal text alone is {len} bytes long"),
        };
        problems.push(format!("{what}; the limit is {MAX_ORDER_KEY_LEN}"));
    }
    problems
}

#[cfg(test)]
mod tests {
    use proc_macro2::Span;
    use syn::LitStr;

    use super::*;
    use crate::publish::attr::parse_pattern;

    fn pattern(text: &str) -> Pattern {
        Pattern {
            lit: LitStr::new(text, Span::call_site()),
            parts: parse_pattern(text).unwrap(),
        }
    }

    fn subject(text: &str) -> Vec<String> {
        subject_problems(&pattern(text))
    }

    #[test]
    fn subjects_that_can_be_valid_pass() {
        for good in [
            "orders.created",
            "orders.{id}.created",
            "{id}",
            "{a}.{b}",
            "{a}{b}",
            "{a}.b",
            "a.{b}",
            "x{a}.{b}y",
            "ünïcode.ok",
            "braces.{{x}}",
        ] {
            assert_eq!(subject(good), Vec::<String>::new(), "{good}");
        }
        assert!(subject(&"x".repeat(255)).is_empty());
    }

    #[test]
    fn subjects_that_never_can_fail_with_the_reason() {
        let cases = [
            ("", "the subject is empty"),
            ("orders created", "holds ' '"),
            ("orders.\t{id}", "holds '\\t'"),
            ("orders.*", "wildcard `*`"),
            ("orders.>", "wildcard `>`"),
            ("a.b*", "wildcard `*`"),
            ("a..b", "empty token (`..`)"),
            ("{id}..b", "empty token (`..`)"),
            (".a", "empty token (it starts with `.`)"),
            ("a.", "empty token (it ends with `.`)"),
            ("{id}.created.", "empty token (it ends with `.`)"),
            (".", "it starts with `.`"),
        ];
        for (text, expected) in cases {
            let problems = subject(text);
            assert!(
                problems.iter().any(|p| p.contains(expected)),
                "{text:?}: {problems:?}"
            );
        }
        let long = subject(&"x".repeat(256));
        assert!(long[0].contains("is 256 bytes long"), "{long:?}");
        let long = subject(&format!("{}.{{id}}", "x".repeat(255)));
        assert!(
            long[0].contains("literal text alone is 256 bytes"),
            "{long:?}"
        );
    }

    #[test]
    fn only_a_placeholder_inside_a_token_fills_it() {
        assert_eq!(empty_token(&pattern("{a}.b").parts), None);
        assert_eq!(empty_token(&pattern("x.{a}.y").parts), None);
        assert_eq!(empty_token(&pattern("x.{a}{b}.y").parts), None);
        // The token before a leading dot, or after a trailing one, is empty whatever the
        // placeholder beyond the dot holds.
        let starts = Some("it starts with `.`");
        assert_eq!(empty_token(&pattern(".{a}").parts), starts);
        assert_eq!(
            empty_token(&pattern("{a}.").parts),
            Some("it ends with `.`")
        );
        assert_eq!(empty_token(&pattern("{a}..").parts), Some("`..`"));
    }

    #[test]
    fn keys_are_checked_as_ordering_keys() {
        assert!(key_problems(&pattern("{id}")).is_empty());
        assert!(key_problems(&pattern("order {id}")).is_empty());
        assert!(key_problems(&pattern(""))[0].contains("the key is empty"));
        assert!(key_problems(&pattern("a\u{7}"))[0].contains("control character"));
        assert!(key_problems(&pattern(&"k".repeat(256)))[0].contains("256 bytes"));
    }
}
