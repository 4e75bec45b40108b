//! Parsing of the container's `#[outbox(...)]` attributes with syn's `parse_nested_meta`.
//!
//! This phase checks the grammar: known keys, the kind of literal each key takes, each key
//! at most once, and at most one of `key(...)` and `key_fn`. Ranges and the type tag's characters are checked later, in `valid`. An
//! item that is wrong but well-formed is reported and skipped, so that one compile shows
//! every mistake.

use proc_macro2::{Span, TokenTree};
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::meta::ParseNestedMeta;
use syn::parse::ParseStream;
use syn::{
    parenthesized, token, Attribute, Data, DeriveInput, Error, Expr, ExprLit, ExprPath, ExprUnary,
    Fields, Ident, Lit, LitInt, LitStr, Member, Path, Result, Token, UnOp,
};

use crate::ast::{Attrs, FnPath, Input, KeyAttr, Shape, Spanned, TimeUnit, Timeout};
use crate::valid::{closest, Errors};

/// The keys accepted inside `#[outbox(...)]`.
const KEYS: [&str; 12] = [
    "type",
    "ordered",
    "key",
    "key_fn",
    "validate",
    "recipient",
    "destination",
    "max_attempts",
    "priority",
    "timeout",
    "max_payload",
    "crate",
];

/// The keys accepted inside `#[outbox(...)]`, as listed in error messages.
const ACCEPTED: &str = "`type = \"...\"`, `key(field, ...)`, `key_fn = \"path\"`, \
                        `validate = \"path\"`, `recipient = \"path\"`, `destination = \"path\"`, \
                        `ordered`, `max_attempts = N`, `priority = N`, `timeout = \"30s\"`, \
                        `max_payload = \"4MiB\"`, `crate = \"path\"`";

/// The forms `max_payload = "..."` accepts, as listed in error messages.
const SIZE_FORMS: &str =
    "an integer followed by `B`, `KiB` or `MiB` (\"65536B\", \"512KiB\", \"4MiB\")";

/// The forms `timeout = "..."` accepts, as listed in error messages.
const TIMEOUT_FORMS: &str = "an integer followed by `ms`, `s`, `m` or `h` \
                             (\"500ms\", \"30s\", \"5m\", \"1h\"), or \"none\" for no limit";

/// Reads the derive input into the model; attribute errors go to `errors` and parsing
/// carries on.
pub fn input<'a>(node: &'a DeriveInput, errors: &mut Errors) -> Input<'a> {
    let (shape, misplaced) = shape_of(node, "outbox");
    Input {
        ident: &node.ident,
        generics: &node.generics,
        shape,
        attrs: get(&node.attrs, errors),
        misplaced,
    }
}

/// The input's shape, and the `#[name(...)]` attributes on its fields and variants, where
/// none belong (shared by the derives, each with its attribute's name).
pub fn shape_of<'a>(node: &'a DeriveInput, name: &str) -> (Shape<'a>, Vec<&'a Attribute>) {
    let named = |attrs: &'a [Attribute]| {
        let name = name.to_owned();
        attrs.iter().filter(move |attr| attr.path().is_ident(&name))
    };
    let on_fields = |fields: &'a Fields| fields.iter().flat_map(|f| named(&f.attrs));
    let mut misplaced = Vec::new();
    let shape = match &node.data {
        Data::Struct(data) => {
            misplaced.extend(on_fields(&data.fields));
            match &data.fields {
                Fields::Named(fields) => Shape::Named(
                    fields
                        .named
                        .iter()
                        .filter_map(|f| f.ident.as_ref())
                        .collect(),
                ),
                Fields::Unnamed(_) => Shape::Tuple,
                Fields::Unit => Shape::Unit,
            }
        }
        Data::Enum(data) => {
            for variant in &data.variants {
                misplaced.extend(named(&variant.attrs));
                misplaced.extend(on_fields(&variant.fields));
            }
            Shape::Enum
        }
        Data::Union(data) => {
            misplaced.extend(data.fields.named.iter().flat_map(|f| named(&f.attrs)));
            Shape::Union(data.union_token.span)
        }
    };
    (shape, misplaced)
}

/// Reads every `#[outbox(...)]` attribute in `attrs`; errors go to `errors`.
pub fn get(attrs: &[Attribute], errors: &mut Errors) -> Attrs {
    let mut out = Attrs::default();
    for attr in attrs.iter().filter(|attr| attr.path().is_ident("outbox")) {
        let parsed = attr.parse_nested_meta(|meta| parse_item(&meta, &mut out, errors));
        if let Err(err) = parsed {
            errors.push(err);
        }
    }
    out
}

/// Parses one `name = value` or `key(...)` item into `out`.
///
/// Returns an error only when the item is malformed and the rest of the attribute cannot
/// be read; other mistakes are pushed to `errors`.
fn parse_item(meta: &ParseNestedMeta, out: &mut Attrs, errors: &mut Errors) -> Result<()> {
    let name = match meta.path.get_ident() {
        Some(ident) => ident.unraw().to_string(),
        None => String::new(),
    };
    match name.as_str() {
        "type" => {
            let expr = value(meta, "type = \"registration.user_mail\"")?;
            let lit = lit_str(&expr, "type = \"registration.user_mail\"");
            set(&mut out.type_tag, lit, meta, errors);
        }
        "key" => {
            let key = key(meta)?;
            let key = one_key(out.key_fn.is_some(), meta).and(Ok(key));
            set(&mut out.key, key, meta, errors);
        }
        "key_fn" | "validate" | "recipient" | "destination" => {
            let usage = format!("{name} = \"path::to::function\"");
            let expr = value(meta, &usage)?;
            let path = lit_str(&expr, &usage).and_then(|lit| fn_path(lit, &name));
            let (slot, path) = match name.as_str() {
                "key_fn" => (&mut out.key_fn, one_key(out.key.is_some(), meta).and(path)),
                "recipient" => (&mut out.recipient, path),
                "destination" => (&mut out.destination, path),
                _ => (&mut out.validate, path),
            };
            set(slot, path, meta, errors);
        }
        "ordered" => {
            if meta.input.peek(Token![=]) || meta.input.peek(syn::token::Paren) {
                let msg = "`ordered` takes no value: write `#[outbox(ordered)]`";
                errors.push(Error::new_spanned(&meta.path, msg));
                skip_value(meta)?;
            } else {
                set(
                    &mut out.ordered,
                    Ok(syn::spanned::Spanned::span(&meta.path)),
                    meta,
                    errors,
                );
            }
        }
        "max_attempts" | "priority" => {
            let usage = format!("{name} = 5");
            let expr = value(meta, &usage)?;
            let int = lit_int(&expr, &usage);
            let slot = match name.as_str() {
                "priority" => &mut out.priority,
                _ => &mut out.max_attempts,
            };
            set(slot, int, meta, errors);
        }
        "timeout" => {
            let expr = value(meta, "timeout = \"30s\"")?;
            let timeout = lit_str(&expr, "timeout = \"30s\"").and_then(|lit| {
                let value = parse_timeout(&lit.value()).map_err(|e| Error::new_spanned(&lit, e))?;
                let tokens = lit.to_token_stream();
                Ok(Spanned { value, tokens })
            });
            set(&mut out.timeout, timeout, meta, errors);
        }
        "max_payload" => {
            let expr = value(meta, "max_payload = \"4MiB\"")?;
            let size = lit_str(&expr, "max_payload = \"4MiB\"").and_then(|lit| {
                let value = parse_size(&lit.value()).map_err(|e| Error::new_spanned(&lit, e))?;
                let tokens = lit.to_token_stream();
                Ok(Spanned { value, tokens })
            });
            set(&mut out.max_payload, size, meta, errors);
        }
        "crate" => {
            let expr = value(meta, "crate = \"outbox_core\"")?;
            let path = lit_str(&expr, "crate = \"outbox_core\"").and_then(|lit| {
                lit.parse_with(Path::parse_mod_style).map_err(|_| {
                    let msg = "expected a path such as \"outbox_core\" or \"::outbox\"";
                    Error::new_spanned(&lit, msg)
                })
            });
            set(&mut out.krate, path, meta, errors);
        }
        _ => {
            let shown = meta.path.to_token_stream().to_string().replace(' ', "");
            let hint = match closest(&shown, KEYS) {
                Some(near) => format!("did you mean `{near}`? "),
                None => String::new(),
            };
            let msg = format!("unknown outbox attribute `{shown}`; {hint}accepted: {ACCEPTED}");
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

/// Refuses `meta`, one of `key(...)` and `key_fn`, when the other one came before it.
fn one_key(other_given: bool, meta: &ParseNestedMeta) -> Result<()> {
    if !other_given {
        return Ok(());
    }
    let msg = "`key(...)` and `key_fn` both give the idempotency key; use one of them";
    Err(Error::new_spanned(&meta.path, msg))
}

/// Parses the function path in `validate = "..."`, `key_fn = "..."`, `recipient = "..."` or
/// `destination = "..."`,
/// the key `name`.
fn fn_path(lit: LitStr, name: &str) -> Result<FnPath> {
    let span = lit.span().resolved_at(Span::call_site());
    let mut at_call_site = lit.clone();
    at_call_site.set_span(span);
    match at_call_site.parse::<ExprPath>() {
        Ok(path) if path.attrs.is_empty() => Ok(FnPath { path, span }),
        _ => {
            let returns = match name {
                "key_fn" => "Option<String>",
                "recipient" => "Option<Recipient>",
                "destination" => "Option<String>",
                _ => "Result<(), InvalidMessage>",
            };
            let msg = format!(
                "expected the path of a function `fn(&Self) -> {returns}`, \
                 such as \"check\", \"Self::check\" or \"crate::rules::check\""
            );
            Err(Error::new_spanned(&lit, msg))
        }
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

/// Parses `key(field, ...)`: the parentheses and a comma-separated list of field names.
fn key(meta: &ParseNestedMeta) -> Result<KeyAttr> {
    if !meta.input.peek(token::Paren) {
        let msg = "expected `key(field, ...)`, naming the fields the idempotency key is built from";
        return Err(meta.error(msg));
    }
    let content;
    let paren = parenthesized!(content in meta.input);
    let fields = content.parse_terminated(member, Token![,])?;
    let word = meta.path.get_ident().cloned();
    let word = word.ok_or_else(|| meta.error("expected `key`"))?;
    Ok(KeyAttr {
        word,
        paren,
        fields,
    })
}

/// One entry of `key(...)`: a field name, keywords allowed, or a tuple index (refused later).
fn member(input: ParseStream) -> Result<Member> {
    if input.peek(LitInt) {
        input.parse().map(Member::Unnamed)
    } else {
        Ident::parse_any(input).map(Member::Named)
    }
}

/// `expr` without the invisible groups `macro_rules!` wraps around a `$x:literal` or
/// `$x:expr` it substitutes, so types generated by a declarative macro parse alike.
fn ungrouped(mut expr: &Expr) -> &Expr {
    while let Expr::Group(group) = expr {
        expr = &group.expr;
    }
    expr
}

/// The string literal `expr` must be; `usage` shows the expected form in the error.
fn lit_str(expr: &Expr, usage: &str) -> Result<LitStr> {
    match ungrouped(expr) {
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => Ok(lit.clone()),
        _ => {
            let msg = format!("expected a string literal: `{usage}`");
            Err(Error::new_spanned(expr, msg))
        }
    }
}

/// The integer literal `expr` must be, possibly negative; `usage` shows the expected form.
fn lit_int(expr: &Expr, usage: &str) -> Result<Spanned<i128>> {
    let int = |e: &Expr| match ungrouped(e) {
        Expr::Lit(ExprLit {
            lit: Lit::Int(int), ..
        }) => Some(int.base10_parse::<i128>()),
        _ => None,
    };
    let value = match ungrouped(expr) {
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_),
            expr: inner,
            ..
        }) => int(inner).map(|value| value.map(|v| -v)),
        _ => int(expr),
    };
    let Some(value) = value else {
        let found = match ungrouped(expr) {
            Expr::Lit(ExprLit {
                lit: Lit::Str(_), ..
            }) => ", not a string",
            _ => "",
        };
        let msg = format!("expected an integer literal{found}: `{usage}`");
        return Err(Error::new_spanned(expr, msg));
    };
    let value = value.map_err(|_| Error::new_spanned(expr, "this number is too large"))?;
    let tokens = expr.to_token_stream();
    Ok(Spanned { value, tokens })
}

/// Parses a timeout string: `"none"`, or an integer followed by `ms`, `s`, `m` or `h`.
fn parse_timeout(text: &str) -> std::result::Result<Timeout, String> {
    if text == "none" {
        return Ok(Timeout::Unlimited);
    }
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let unit = match unit {
        "ms" => TimeUnit::Millis,
        "s" => TimeUnit::Secs,
        "m" => TimeUnit::Mins,
        "h" => TimeUnit::Hours,
        _ => {
            return Err(format!(
                "invalid timeout {text:?}: expected {TIMEOUT_FORMS}"
            ))
        }
    };
    if digits.is_empty() {
        return Err(format!(
            "invalid timeout {text:?}: expected {TIMEOUT_FORMS}"
        ));
    }
    let amount = digits
        .parse()
        .map_err(|_| format!("the timeout {text:?} is too large"))?;
    Ok(Timeout::Limit { amount, unit })
}

/// Parses a size string: an integer followed by `B`, `KiB` or `MiB`, into bytes.
fn parse_size(text: &str) -> std::result::Result<u64, String> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let factor: u64 = match unit {
        "B" => 1,
        "KiB" => 1024,
        "MiB" => 1024 * 1024,
        _ => return Err(format!("invalid size {text:?}: expected {SIZE_FORMS}")),
    };
    if digits.is_empty() {
        return Err(format!("invalid size {text:?}: expected {SIZE_FORMS}"));
    }
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(factor))
        .ok_or_else(|| format!("the size {text:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_accept_the_documented_forms() {
        assert_eq!(parse_size("65536B"), Ok(65536));
        assert_eq!(parse_size("512KiB"), Ok(512 * 1024));
        assert_eq!(parse_size("4MiB"), Ok(4 * 1024 * 1024));
        for bad in ["4", "4MB", "MiB", "4 MiB", "-1B"] {
            assert!(parse_size(bad).unwrap_err().contains("expected"), "{bad}");
        }
        assert!(parse_size("99999999999999999999MiB")
            .unwrap_err()
            .contains("too large"));
    }

    #[test]
    fn timeout_accepts_the_documented_forms() {
        let limit = |amount, unit| Ok(Timeout::Limit { amount, unit });
        assert_eq!(parse_timeout("500ms"), limit(500, TimeUnit::Millis));
        assert_eq!(parse_timeout("30s"), limit(30, TimeUnit::Secs));
        assert_eq!(parse_timeout("5m"), limit(5, TimeUnit::Mins));
        assert_eq!(parse_timeout("1h"), limit(1, TimeUnit::Hours));
        assert_eq!(parse_timeout("0s"), limit(0, TimeUnit::Secs));
        assert_eq!(parse_timeout("none"), Ok(Timeout::Unlimited));
    }

    #[test]
    fn timeout_rejects_other_strings() {
        for bad in [
            "", "30", "s", "30 s", "30sec", "1d", "-5s", "1.5s", "None", "30S", "ms30",
        ] {
            let err = parse_timeout(bad).unwrap_err();
            assert!(
                err.contains("expected an integer followed by"),
                "{bad}: {err}"
            );
        }
        let err = parse_timeout("99999999999999999999999s").unwrap_err();
        assert!(err.contains("too large"), "{err}");
    }
}
