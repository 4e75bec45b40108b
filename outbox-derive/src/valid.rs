//! Checks on the parsed input, each reported at the attribute, literal or identifier at
//! fault. All checks run and their errors are combined, so one compile shows every mistake.

use std::collections::HashSet;

use syn::ext::IdentExt;
use syn::{Error, GenericParam, Member, Result};

use crate::ast::{Input, KeyAttr, Shape};

/// Largest type tag accepted, in bytes; the same as `outbox_core::message::MAX_TYPE_TAG_LEN`.
const MAX_TYPE_TAG_LEN: usize = 100;

/// Largest `max_payload` accepted, in bytes: 1 GiB, PostgreSQL's limit for one value.
const MAX_PAYLOAD: u64 = 1024 * 1024 * 1024;

/// Largest `max_attempts` accepted.
const MAX_ATTEMPTS: i128 = 1000;

/// Errors gathered across phases, combined into one.
#[derive(Default)]
pub struct Errors(Option<Error>);

impl Errors {
    /// Adds an error to the ones already gathered.
    pub fn push(&mut self, err: Error) {
        match &mut self.0 {
            Some(all) => all.combine(err),
            None => self.0 = Some(err),
        }
    }

    /// `Ok` when nothing was gathered, otherwise every error combined.
    pub fn finish(self) -> Result<()> {
        self.0.map_or(Ok(()), Err)
    }
}

impl Input<'_> {
    /// Runs every check on the input, pushing what fails to `errors`.
    pub fn validate(&self, errors: &mut Errors) {
        if let Shape::Union(span) = self.shape {
            let msg = "OutboxMessage cannot be derived for a union: \
                       use a struct or an enum, which serde can serialize";
            errors.push(Error::new(span, msg));
        }
        self.check_generics(errors);
        for attr in &self.misplaced {
            let msg = "#[outbox(...)] goes on the type, not on a field or variant; \
                       for an idempotency key write #[outbox(key(field, ...))] on the struct";
            errors.push(Error::new_spanned(attr, msg));
        }
        self.check_type_tag(errors);
        self.check_numbers(errors);
        if let Some(key) = &self.attrs.key {
            self.check_key(key, errors);
        }
    }

    /// Type and const parameters have no single tag; lifetimes cannot outlive the enqueue.
    fn check_generics(&self, errors: &mut Errors) {
        let params = &self.generics.params;
        if params.is_empty() {
            return;
        }
        let only_lifetimes = params
            .iter()
            .all(|p| matches!(p, GenericParam::Lifetime(_)));
        let msg = if only_lifetimes {
            "OutboxMessage cannot be derived for a type with lifetime parameters: a message is \
             stored and read back later, so it must own its data; use owned fields \
             (`String`, `Vec<u8>`) instead of references"
                .to_string()
        } else {
            format!(
                "OutboxMessage cannot be derived for a generic type: a message type's tag names \
                 one concrete type; derive it on a concrete wrapper instead, such as \
                 `struct {0}Message({0}<Concrete>);`",
                self.ident.unraw()
            )
        };
        errors.push(Error::new_spanned(self.generics, msg));
    }

    /// The type tag, given or derived from the name, must pass `validate_type_tag`.
    fn check_type_tag(&self, errors: &mut Errors) {
        let Err(problem) = check_type_tag(&self.type_tag()) else {
            return;
        };
        errors.push(match &self.attrs.type_tag {
            Some(lit) => Error::new_spanned(lit, problem),
            None => {
                let msg = format!(
                    "{problem}; this tag comes from the type's name, \
                     set a valid one with #[outbox(type = \"...\")]"
                );
                Error::new_spanned(self.ident, msg)
            }
        });
    }

    /// `max_attempts`, `priority`, `timeout` and `max_payload` must be in range.
    fn check_numbers(&self, errors: &mut Errors) {
        let attrs = &self.attrs;
        if let Some(n) = attrs
            .max_attempts
            .as_ref()
            .filter(|n| !(1..=MAX_ATTEMPTS).contains(&n.value))
        {
            let msg = format!(
                "max_attempts must be between 1 and {MAX_ATTEMPTS}, not {}",
                n.value
            );
            errors.push(n.error(msg));
        }
        let u16_range = 0..=i128::from(u16::MAX);
        if let Some(n) = attrs
            .priority
            .as_ref()
            .filter(|n| !u16_range.contains(&n.value))
        {
            let msg = format!(
                "priority must be between 0 and {}, not {}",
                u16::MAX,
                n.value
            );
            errors.push(n.error(msg));
        }
        if let Some(timeout) = &attrs.timeout {
            match timeout.value.duration() {
                None => errors.push(timeout.error("this timeout is too large")),
                Some(Some(d)) if d.is_zero() => errors.push(timeout.error(
                    "the timeout must be greater than zero; use \"none\" for no time limit",
                )),
                Some(_) => {}
            }
        }
        if let Some(size) = attrs
            .max_payload
            .as_ref()
            .filter(|n| !(1..=MAX_PAYLOAD).contains(&n.value))
        {
            let msg = format!(
                "max_payload must be between 1B and 1024MiB, not {} bytes",
                size.value
            );
            errors.push(size.error(msg));
        }
    }

    /// `key(...)` needs a struct with named fields and names each of them once.
    fn check_key(&self, key: &KeyAttr, errors: &mut Errors) {
        let fields = match &self.shape {
            Shape::Named(fields) => fields,
            Shape::Union(_) => return,
            other => {
                let name = self.ident.unraw();
                let msg = format!(
                    "key(...) names fields of a struct with named fields, and `{name}` is {}; \
                     use #[outbox(key_fn = \"path::to::function\")] instead, naming a \
                     `fn(&{name}) -> Option<String>`",
                    other.describe()
                );
                return errors.push(Error::new_spanned(key, msg));
            }
        };
        if key.fields.is_empty() {
            let msg = "key(...) needs at least one field: `key(field, ...)`";
            return errors.push(Error::new_spanned(key, msg));
        }
        let names: Vec<String> = fields.iter().map(|f| f.unraw().to_string()).collect();
        let mut seen = HashSet::new();
        for member in &key.fields {
            let name = match member {
                Member::Named(ident) => ident.unraw().to_string(),
                Member::Unnamed(index) => index.index.to_string(),
            };
            if !names.contains(&name) {
                let hint = match closest(&name, names.iter().map(String::as_str)) {
                    Some(near) => format!("did you mean `{near}`? "),
                    None => String::new(),
                };
                let list = names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>();
                let msg = format!(
                    "no field `{name}` in `{}`; {hint}its fields are: {}",
                    self.ident.unraw(),
                    list.join(", ")
                );
                errors.push(Error::new_spanned(member, msg));
            } else if !seen.insert(name.clone()) {
                let msg = format!("field `{name}` is named twice in key(...)");
                errors.push(Error::new_spanned(member, msg));
            }
        }
    }
}

/// The rule of `outbox_core::message::validate_type_tag`, with the same messages: 1 to
/// [`MAX_TYPE_TAG_LEN`] bytes of ASCII letters, digits, `_`, `-`, `.` and `:`.
pub fn check_type_tag(tag: &str) -> std::result::Result<(), String> {
    if tag.is_empty() {
        return Err("the type tag is empty".into());
    }
    if tag.len() > MAX_TYPE_TAG_LEN {
        return Err(format!(
            "the type tag is {} bytes long; the limit is {MAX_TYPE_TAG_LEN}",
            tag.len()
        ));
    }
    if let Some(c) = tag
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':')))
    {
        return Err(format!(
            "the type tag {tag:?} contains {c:?}; use ASCII letters, digits, '_', '-', '.' or ':'"
        ));
    }
    Ok(())
}

/// The candidate nearest to `word` by edit distance, if it is near enough to be a typo.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (edit_distance(word, c), c))
        .filter(|&(d, _)| d > 0 && d <= 2 && d < word.chars().count())
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

/// Levenshtein distance between two strings, counted in chars.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (row[j + 1] + 1)
                .min(row[j] + 1)
                .min(diag + usize::from(ca != cb));
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_tag_rule_matches_the_runtime_one() {
        assert!(check_type_tag("registration.user_mail").is_ok());
        assert!(check_type_tag("a-b:c_D.9").is_ok());
        assert!(check_type_tag(&"x".repeat(100)).is_ok());
        assert_eq!(check_type_tag("").unwrap_err(), "the type tag is empty");
        assert!(check_type_tag(&"x".repeat(101))
            .unwrap_err()
            .contains("101 bytes"));
        let err = check_type_tag("user mail").unwrap_err();
        assert!(err.contains("contains ' '"), "{err}");
        assert!(check_type_tag("größe").unwrap_err().contains("'ö'"));
    }

    #[test]
    fn closest_finds_typos_only() {
        let keys = ["type", "key", "max_attempts", "priority"];
        assert_eq!(closest("max_attempt", keys), Some("max_attempts"));
        assert_eq!(closest("prority", keys), Some("priority"));
        assert_eq!(closest("colour", keys), None);
        assert_eq!(closest("key", keys), None);
        assert_eq!(closest("tpye", keys), Some("type"));
        assert_eq!(closest("0", ["id"]), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
