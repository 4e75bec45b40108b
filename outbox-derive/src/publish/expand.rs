//! Code generation: the `impl PublishEvent` block for an input that passed validation.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::ext::IdentExt;
use syn::{DeriveInput, Ident, Path};

use super::ast::{Input, Part, Pattern};
use super::attr;
use crate::ast::Shape;
use crate::valid::Errors;

/// Parses, validates and expands one derive input; errors become `compile_error!`s.
pub fn derive(node: &DeriveInput) -> TokenStream {
    let mut errors = Errors::default();
    let input = attr::input(node, &mut errors);
    input.validate(&mut errors);
    match errors.finish() {
        Ok(()) => impl_event(&input),
        Err(err) => {
            let mut tokens = err.into_compile_error();
            tokens.extend(fallback(&input));
            tokens
        }
    }
}

/// The path the generated code names `PublishEvent` through.
fn krate(input: &Input) -> Path {
    match &input.attrs.krate {
        Some(path) => path.clone(),
        None => syn::parse_quote!(::outbox::publish),
    }
}

/// The implementation: `subject`, and `key` when a key pattern is given.
fn impl_event(input: &Input) -> TokenStream {
    let krate = krate(input);
    let ident = input.ident;
    let fields: &[&Ident] = match &input.shape {
        Shape::Named(fields) => fields,
        _ => &[],
    };
    let subject = input.attrs.subject.as_ref();
    let subject = format(subject.expect("validated: the subject is given"), fields);
    let key_fn = input.attrs.key.as_ref().map(|key| {
        let key = format(key, fields);
        quote! {
            fn key(&self) -> ::core::option::Option<::std::string::String> {
                ::core::option::Option::Some(#key)
            }
        }
    });
    quote! {
        #[automatically_derived]
        impl #krate::PublishEvent for #ident {
            fn subject(&self) -> ::std::string::String {
                #subject
            }
            #key_fn
        }
    }
}

/// The expression building `pattern`'s string: a constant, or a `format!` of the literal
/// text (braces escaped again) and the fields.
///
/// Each field access is located at the pattern's literal, so a field that is not `Display`
/// is reported at the attribute, but resolved as the derive's own code, so that `self` is
/// the method's even when the literal came from a `macro_rules!` caller.
fn format(pattern: &Pattern, fields: &[&Ident]) -> TokenStream {
    let span = pattern.lit.span().resolved_at(Span::call_site());
    let mut format = String::new();
    let mut args = Vec::new();
    for part in &pattern.parts {
        match part {
            Part::Text(text) => format.push_str(&text.replace('{', "{{").replace('}', "}}")),
            Part::Field(name) => {
                let bare = name.strip_prefix("r#").unwrap_or(name);
                let field = fields.iter().find(|f| f.unraw() == bare);
                let mut field = (*field.expect("validated: placeholders name fields")).clone();
                field.set_span(span);
                format.push_str("{}");
                args.push(quote_spanned!(span=> self.#field));
            }
        }
    }
    if args.is_empty() {
        let text = pattern.text();
        return quote!(::std::string::String::from(#text));
    }
    quote!(::std::format!(#format, #(#args),*))
}

/// A stand-in impl emitted next to errors, so that code using the type as an event does
/// not add errors of its own. Generic types get none.
fn fallback(input: &Input) -> TokenStream {
    if !input.generics.params.is_empty() {
        return TokenStream::new();
    }
    let krate = krate(input);
    let ident = input.ident;
    quote! {
        #[automatically_derived]
        impl #krate::PublishEvent for #ident {
            fn subject(&self) -> ::std::string::String {
                ::std::string::String::new()
            }
        }
    }
}
