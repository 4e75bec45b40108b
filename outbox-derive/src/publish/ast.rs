//! The parsed model of a `#[derive(PublishEvent)]` input: its shape, its `#[publish(...)]`
//! values, and the subject and key patterns split into literal text and placeholders.

use syn::{Attribute, Generics, Ident, LitStr, Path};

use crate::ast::Shape;

/// A type deriving `PublishEvent`, reduced to what the derive needs.
pub struct Input<'a> {
    /// The type's name.
    pub ident: &'a Ident,
    /// The type's generics; any parameter is refused.
    pub generics: &'a Generics,
    /// Struct, enum or union, and the named fields where there are some.
    pub shape: Shape<'a>,
    /// The container-level `#[publish(...)]` values.
    pub attrs: Attrs,
    /// `#[publish(...)]` attributes on fields or variants, where none belong.
    pub misplaced: Vec<&'a Attribute>,
}

/// The values given in the container's `#[publish(...)]` attributes; `None` when absent.
#[derive(Default)]
pub struct Attrs {
    /// `subject = "..."`: the subject pattern (required).
    pub subject: Option<Pattern>,
    /// Whether `subject` was written at all, even if it could not be read or was misspelt
    /// (its error is then reported already).
    pub subject_written: bool,
    /// `key = "..."`: the ordering key pattern.
    pub key: Option<Pattern>,
    /// `crate = "path"`: where `PublishEvent` lives.
    pub krate: Option<Path>,
    /// The first `#[publish(...)]` attribute, for errors about the attribute as a whole.
    pub first: Option<Attribute>,
}

/// A pattern such as `"orders.{id}.created"`: the literal it was written as and its parts.
pub struct Pattern {
    /// The string literal, for error spans and the generated code's spans.
    pub lit: LitStr,
    /// Literal text and placeholders, in order; `{{` and `}}` are already unescaped.
    pub parts: Vec<Part>,
}

/// One piece of a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Text copied as it is.
    Text(String),
    /// `{field}`: the `Display` of the named field, the name as written (`r#` allowed).
    Field(String),
}

impl Pattern {
    /// The placeholders' field names, in order, repeats included.
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|part| match part {
            Part::Field(name) => Some(name.as_str()),
            Part::Text(_) => None,
        })
    }

    /// The literal text alone, placeholders left out.
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter_map(|part| match part {
                Part::Text(text) => Some(text.as_str()),
                Part::Field(_) => None,
            })
            .collect()
    }

    /// The pattern as written, for error messages.
    pub fn shown(&self) -> String {
        format!("{:?}", self.lit.value())
    }
}
