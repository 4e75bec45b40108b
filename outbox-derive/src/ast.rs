//! The parsed model of a derive input: its shape, its field names and the values of its
//! `#[outbox(...)]` attributes, each kept with the tokens it was written as so that later
//! phases can point errors at them.

use std::time::Duration;

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::punctuated::Punctuated;
use syn::{token, Attribute, Error, ExprPath, Generics, Ident, LitStr, Member, Token};

/// A type deriving `OutboxMessage`, reduced to what the derive needs.
pub struct Input<'a> {
    /// The type's name.
    pub ident: &'a Ident,
    /// The type's generics; any parameter is refused.
    pub generics: &'a Generics,
    /// Struct, enum or union, and the named fields where there are some.
    pub shape: Shape<'a>,
    /// The container-level `#[outbox(...)]` values.
    pub attrs: Attrs,
    /// `#[outbox(...)]` attributes on fields or variants, where none belong.
    pub misplaced: Vec<&'a Attribute>,
}

/// The kind of type the derive is applied to.
pub enum Shape<'a> {
    /// A struct with named fields, with the fields' names in declaration order.
    Named(Vec<&'a Ident>),
    /// A tuple struct.
    Tuple,
    /// A unit struct.
    Unit,
    /// An enum.
    Enum,
    /// A union, with the span of its `union` keyword.
    Union(Span),
}

/// The values given in the container's `#[outbox(...)]` attributes; `None` when absent.
#[derive(Default)]
pub struct Attrs {
    /// `type = "..."`: the type tag.
    pub type_tag: Option<LitStr>,
    /// `key(field, ...)`: the fields the idempotency key is built from.
    pub key: Option<KeyAttr>,
    /// `key_fn = "path"`: the function computing the idempotency key; excludes `key`.
    pub key_fn: Option<FnPath>,
    /// `validate = "path"`: the function checking a message before it is enqueued.
    pub validate: Option<FnPath>,
    /// `recipient = "path"`: the function naming the message's one recipient, for the
    /// suppression list.
    pub recipient: Option<FnPath>,
    /// `destination = "path"`: the function naming the message's destination key, for
    /// traffic shaping.
    pub destination: Option<FnPath>,
    /// `ordered`: the type's messages may carry ordering keys.
    pub ordered: Option<Span>,
    /// `max_attempts = N`.
    pub max_attempts: Option<Spanned<i128>>,
    /// `priority = N`.
    pub priority: Option<Spanned<i128>>,
    /// `timeout = "30s"` or `timeout = "none"`.
    pub timeout: Option<Spanned<Timeout>>,
    /// `max_payload = "4MiB"`: the payload limit in bytes.
    pub max_payload: Option<Spanned<u64>>,
    /// `crate = "path"`: where the `outbox` items live.
    pub krate: Option<syn::Path>,
}

/// An attribute value together with the tokens it was written as.
pub struct Spanned<T> {
    /// The parsed value.
    pub value: T,
    /// The tokens of the value, for error spans.
    pub tokens: TokenStream,
}

impl<T> Spanned<T> {
    /// An error pointing at the tokens this value was written as.
    pub fn error(&self, message: impl std::fmt::Display) -> Error {
        Error::new_spanned(&self.tokens, message)
    }
}

/// `key(field_a, field_b)` as written.
pub struct KeyAttr {
    /// The `key` word itself.
    pub word: Ident,
    /// The parentheses around the field list.
    pub paren: token::Paren,
    /// The fields, in the order they are joined; tuple indices are refused by `valid`.
    pub fields: Punctuated<Member, Token![,]>,
}

impl ToTokens for KeyAttr {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        self.word.to_tokens(tokens);
        self.paren
            .surround(tokens, |inner| self.fields.to_tokens(inner));
    }
}

/// A function named by its path in a string, as in `validate = "rules::check_mail"`.
pub struct FnPath {
    /// The path parsed from the literal; its tokens carry `span`.
    pub path: ExprPath,
    /// The span of the code calling the function: at the literal, so that errors in the
    /// call are reported there, but resolved as the derive's own code, so that rustc does
    /// not suggest type fixes as edits to the string.
    pub span: Span,
}

/// The handler time limit as written in `timeout = "..."`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timeout {
    /// `"none"`: no time limit.
    Unlimited,
    /// A number with a unit, such as `"30s"`.
    Limit {
        /// The number before the unit.
        amount: u64,
        /// The unit after the number.
        unit: TimeUnit,
    },
}

/// A unit accepted after the number in `timeout = "..."`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    /// `ms`
    Millis,
    /// `s`
    Secs,
    /// `m`
    Mins,
    /// `h`
    Hours,
}

impl Timeout {
    /// The limit as a duration: `Some(None)` for no limit, `None` when it overflows.
    pub fn duration(self) -> Option<Option<Duration>> {
        match self {
            Timeout::Unlimited => Some(None),
            Timeout::Limit { amount, unit } => {
                let secs = match unit {
                    TimeUnit::Millis => return Some(Some(Duration::from_millis(amount))),
                    TimeUnit::Secs => Some(amount),
                    TimeUnit::Mins => amount.checked_mul(60),
                    TimeUnit::Hours => amount.checked_mul(3600),
                };
                secs.map(|secs| Some(Duration::from_secs(secs)))
            }
        }
    }
}

impl Input<'_> {
    /// The type tag: the one given with `type = "..."`, or the type's name in snake_case.
    pub fn type_tag(&self) -> String {
        match &self.attrs.type_tag {
            Some(lit) => lit.value(),
            None => snake_case(&self.ident.unraw().to_string()),
        }
    }
}

impl Shape<'_> {
    /// How the shape is named in error messages, with its article.
    pub fn describe(&self) -> &'static str {
        match self {
            Shape::Named(_) => "a struct with named fields",
            Shape::Tuple => "a tuple struct",
            Shape::Unit => "a unit struct",
            Shape::Enum => "an enum",
            Shape::Union(_) => "a union",
        }
    }
}

/// Converts a type name to snake_case: `UserMail` → `user_mail`, `HTTPCall` → `http_call`,
/// `SendEmailV2` → `send_email_v2`. Digits stay with the word before them.
pub fn snake_case(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::with_capacity(name.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        if c.is_uppercase() && i > 0 {
            let prev = chars[i - 1];
            let next_is_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            let after_word = prev.is_lowercase() || prev.is_ascii_digit();
            if prev != '_' && (after_word || (prev.is_uppercase() && next_is_lower)) {
                out.push('_');
            }
        }
        out.extend(c.to_lowercase());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_case_splits_words_acronyms_and_keeps_digits() {
        let cases = [
            ("UserMail", "user_mail"),
            ("HTTPCall", "http_call"),
            ("SendEmailV2", "send_email_v2"),
            ("Ping", "ping"),
            ("A", "a"),
            ("ABC", "abc"),
            ("already_snake", "already_snake"),
            ("User_Mail", "user_mail"),
            ("HTTP2Call", "http2_call"),
            ("IOError", "io_error"),
            ("Email2Send", "email2_send"),
            ("XMLHttpRequest", "xml_http_request"),
        ];
        for (name, expected) in cases {
            assert_eq!(snake_case(name), expected, "{name}");
        }
    }

    #[test]
    fn timeout_durations() {
        let limit = |amount, unit| Timeout::Limit { amount, unit };
        assert_eq!(Timeout::Unlimited.duration(), Some(None));
        let ms = limit(500, TimeUnit::Millis).duration();
        assert_eq!(ms, Some(Some(Duration::from_millis(500))));
        let h = limit(2, TimeUnit::Hours).duration();
        assert_eq!(h, Some(Some(Duration::from_secs(7200))));
        assert_eq!(limit(u64::MAX, TimeUnit::Mins).duration(), None);
    }
}
