//! Parsing of the container's `#[publish(...)]` attributes and of the patterns they hold.
//!
//! This phase checks the grammar: known keys, a string literal for each, each key at most
//! once, and the brace syntax of the patterns (`{field}`, `{{`, `}}`). Whether the fields
//! exist and whether the literal text can make a subject are checked later, in `valid`. A
//! mistake is reported and parsing carries on, so that one compile shows every mistake.

use proc_macro2::TokenTree;
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::meta::ParseNestedMeta;
use syn::{token, Attribute, DeriveInput, Error, Expr, ExprLit, Lit, LitStr, Path, Result, Token};

use super::ast::{Attrs, Input, Part, Pattern};
use crate::valid::{closest, Errors};

/// The keys accepted inside `#[publish(...)]`.
const KEYS: [&str; 3] = ["subject", "key", "crate"];

/// The keys accepted inside `#[publish(...)]`, as listed in error messages.
const ACCEPTED: &str =
    "`subject = \"orders.{id}.created\"`, `key = \"{id}\"`, `crate = \"outbox_publish\"`";

/// Reads the derive input into the model; attribute errors go to `errors` and parsing
/// carries on.
pub fn input<'a>(node: &'a DeriveInput, errors: &mut Errors) -> Input<'a> {
    let (shape, misplaced) = crate::attr::shape_of(node, "publish");
    Input {
        ident: &node.ident,
        generics: &node.generics,
        shape,
        attrs: get(&node.attrs, errors),
        misplaced,
    }
}

/// The `#[publish(...)]` attributes among `attrs`.
fn publish_attrs(attrs: &[Attribute]) -> impl Iterator<Item = &Attribute> {
    attrs.iter().filter(|attr| attr.path().is_ident("publish"))
}

/// Reads every `#[publish(...)]` attribute in `attrs`; errors go to `errors`.
fn get(attrs: &[Attribute], errors: &mut Errors) -> Attrs {
    let mut out = Attrs::default();
    for attr in publish_attrs(attrs) {
        out.first.get_or_insert_with(|| attr.clone());
        let parsed = attr.parse_nested_meta(|meta| parse_item(&meta, &mut out, errors));
        if let Err(err) = parsed {
            errors.push(err);
        }
    }
    out
}

/// Parses one `name = value` item into `out`.
///
/// Returns an error only when the item is malformed and the rest of the attribute cannot
/// be read; other mistakes are pushed to `errors`.
fn parse_item(meta: &ParseNestedMeta, out: &mut Attrs, errors: &mut Errors) -> Result<()> {
    let name = match meta.path.get_ident() {
        Some(ident) => ident.unraw().to_string(),
        None => String::new(),
    };
    match name.as_str() {
        "subject" | "key" => {
            out.subject_written |= name == "subject";
            let usage = match name.as_str() {
                "subject" => "subject = \"orders.{id}.created\"",
                _ => "key = \"{id}\"",
            };
            let expr = value(meta, usage)?;
            let pattern = lit_str(&expr, usage).and_then(pattern);
            let slot = match name.as_str() {
                "subject" => &mut out.subject,
                _ => &mut out.key,
            };
            set(slot, pattern, meta, errors);
        }
        "crate" => {
            let usage = "crate = \"outbox_publish\"";
            let expr = value(meta, usage)?;
            let path = lit_str(&expr, usage).and_then(|lit| {
                lit.parse_with(Path::parse_mod_style).map_err(|_| {
                    let msg = "expected a path such as \"outbox_publish\" or \"::outbox::publish\"";
                    Error::new_spanned(&lit, msg)
                })
            });
            set(&mut out.krate, path, meta, errors);
        }
        _ => {
            let shown = meta.path.to_token_stream().to_string().replace(' ', "");
            let near = closest(&shown, KEYS);
            // A misspelt subject is reported here, not again as a missing one.
            out.subject_written |= near == Some("subject");
            let hint = match near {
                Some(near) => format!("did you mean `{near}`? "),
                None => String::new(),
            };
            let msg = format!("unknown publish attribute `{shown}`; {hint}accepted: {ACCEPTED}");
            errors.push(Error::new_spanned(&meta.path, msg));
            skip_value(meta)?;
        }
    }
    Ok(())
}

/// Stores `value` in `slot`, or reports a key given twice at its second occurrence.
fn set<T>(slot: &mut Option<T>, value: Result<T>, meta: &ParseNestedMeta, errors: &mut Errors) {
    if slot.is_some() {
        let name = meta.path.to_token_stream();
        let msg = format!("`{name}` is given more than once; keep one");
        errors.push(Error::new_spanned(&meta.path, msg));
        return;
    }
    match value {
        Ok(value) => *slot = Some(value),
        Err(err) => errors.push(err),
    }
}

/// Parses the `= value` after a key, as an expression so that any kind of value is read.
fn value(meta: &ParseNestedMeta, usage: &str) -> Result<Expr> {
    if !meta.input.peek(Token![=]) {
        return Err(meta.error(format!("expected `{usage}`")));
    }
    meta.value()?.parse()
}

/// Skips whatever follows an unknown key: `= value`, `(...)` or nothing.
fn skip_value(meta: &ParseNestedMeta) -> Result<()> {
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<Expr>()?;
    } else if meta.input.peek(token::Paren) {
        meta.input.parse::<TokenTree>()?;
    }
    Ok(())
}

/// The string literal `expr` must be (through the invisible groups `macro_rules!` wraps
/// around a substituted `$x:literal`); `usage` shows the expected form in the error.
fn lit_str(expr: &Expr, usage: &str) -> Result<LitStr> {
    let mut inner = expr;
    while let Expr::Group(group) = inner {
        inner = &group.expr;
    }
    match inner {
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => Ok(lit.clone()),
        _ => {
            let msg = format!("expected a string literal: `{usage}`");
            Err(Error::new_spanned(expr, msg))
        }
    }
}

/// Parses the literal as a pattern; a brace error is reported at the literal.
fn pattern(lit: LitStr) -> Result<Pattern> {
    match parse_pattern(&lit.value()) {
        Ok(parts) => Ok(Pattern { lit, parts }),
        Err(problem) => Err(Error::new(lit.span(), problem)),
    }
}

/// Splits `text` into literal text and `{field}` placeholders; `{{` and `}}` stand for
/// `{` and `}`. The error says what is wrong with the braces.
pub fn parse_pattern(text: &str) -> std::result::Result<Vec<Part>, String> {
    let mut parts = Vec::new();
    let mut literal = String::new();
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            '{' if chars.next_if(|&(_, c)| c == '{').is_some() => literal.push('{'),
            '}' if chars.next_if(|&(_, c)| c == '}').is_some() => literal.push('}'),
            '}' => {
                return Err(format!(
                    "unmatched `}}` in {text:?}: write `}}}}` for a literal `}}`"
                ))
            }
            '{' => {
                let rest = &text[at + 1..];
                let Some(end) = rest
                    .find(['}', '{'])
                    .filter(|&end| rest[end..].starts_with('}'))
                else {
                    return Err(format!(
                        "unclosed `{{` in {text:?}: close the placeholder with `}}`, \
                         or write `{{{{` for a literal `{{`"
                    ));
                };
                let name = &rest[..end];
                check_placeholder(name, text)?;
                if !literal.is_empty() {
                    parts.push(Part::Text(std::mem::take(&mut literal)));
                }
                parts.push(Part::Field(name.to_owned()));
                while chars.next_if(|&(i, _)| i <= at + 1 + end).is_some() {}
            }
            _ => literal.push(c),
        }
    }
    if !literal.is_empty() {
        parts.push(Part::Text(literal));
    }
    Ok(parts)
}

/// What may stand between the braces: a field name (`r#` allowed), nothing else.
fn check_placeholder(name: &str, text: &str) -> std::result::Result<(), String> {
    if name.trim().is_empty() {
        return Err(format!(
            "empty placeholder `{{{name}}}` in {text:?}: name a field between the braces, \
             as in `{{id}}`, or write `{{{{` and `}}}}` for literal braces"
        ));
    }
    let bare = name.strip_prefix("r#").unwrap_or(name);
    if bare.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return Ok(());
    }
    Err(match name.split_once(':') {
        Some((field, _)) => format!(
            "placeholder `{{{name}}}` in {text:?}: write `{{{}}}`; a placeholder takes no \
             format spec, the field's `Display` is used",
            field.trim()
        ),
        None if name.trim().chars().all(|c| c.is_alphanumeric() || c == '_') => format!(
            "placeholder `{{{name}}}` in {text:?}: write `{{{}}}`, without spaces",
            name.trim()
        ),
        None => format!(
            "placeholder `{{{name}}}` in {text:?}: a placeholder is the name of one field \
             of the struct, as in `{{id}}`"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Part {
        Part::Text(s.into())
    }

    fn field(s: &str) -> Part {
        Part::Field(s.into())
    }

    #[test]
    fn patterns_split_into_text_and_fields() {
        let parts = parse_pattern("orders.{id}.created").unwrap();
        assert_eq!(parts, [text("orders."), field("id"), text(".created")]);
        let parts = parse_pattern("{tenant}.{id}").unwrap();
        assert_eq!(parts, [field("tenant"), text("."), field("id")]);
        assert_eq!(parse_pattern("{r#type}").unwrap(), [field("r#type")]);
        assert_eq!(parse_pattern("").unwrap(), []);
        assert_eq!(parse_pattern("plain").unwrap(), [text("plain")]);
    }

    #[test]
    fn doubled_braces_are_literal() {
        let parts = parse_pattern("a{{b}}.{{{id}}}").unwrap();
        assert_eq!(parts, [text("a{b}.{"), field("id"), text("}")]);
        assert_eq!(parse_pattern("{{}}").unwrap(), [text("{}")]);
    }

    #[test]
    fn brace_mistakes_are_named() {
        let cases = [
            ("orders.{id", "unclosed `{`"),
            ("orders.{", "unclosed `{`"),
            ("a{b{c}}", "unclosed `{`"),
            ("orders}", "unmatched `}`"),
            ("{id}}", "unmatched `}`"),
            ("orders.{}", "empty placeholder `{}`"),
            ("orders.{ }", "empty placeholder `{ }`"),
            (
                "{id:>4}",
                "write `{id}`; a placeholder takes no format spec",
            ),
            ("{ id }", "write `{id}`, without spaces"),
            ("{self.id}", "the name of one field"),
        ];
        for (pattern, expected) in cases {
            let err = parse_pattern(pattern).unwrap_err();
            assert!(err.contains(expected), "{pattern}: {err}");
        }
    }
}
