//! Code generation: the `impl OutboxMessage` block for an input that passed validation.

use proc_macro2::{Literal, Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{DeriveInput, Ident, Member, Path};

use crate::ast::{FnPath, Input, KeyAttr, Shape};
use crate::attr;
use crate::valid::Errors;

/// Parses, validates and expands one derive input; errors become `compile_error!`s.
pub fn derive(node: &DeriveInput) -> TokenStream {
    let mut errors = Errors::default();
    let input = attr::input(node, &mut errors);
    input.validate(&mut errors);
    match errors.finish() {
        Ok(()) => impl_message(&input),
        Err(err) => {
            let mut tokens = err.into_compile_error();
            tokens.extend(fallback(&input));
            tokens
        }
    }
}

/// The path the generated code names the `outbox` items through.
fn krate(input: &Input) -> Path {
    match &input.attrs.krate {
        Some(path) => path.clone(),
        None => syn::parse_quote!(::outbox),
    }
}

/// The full implementation: tag, defaults and, when given, the idempotency key and the
/// validation.
fn impl_message(input: &Input) -> TokenStream {
    let krate = krate(input);
    let ident = input.ident;
    let tag = input.type_tag();
    let attrs = &input.attrs;
    let default = |field: &str| {
        let field = Ident::new(field, Span::call_site());
        quote!(#krate::MessageDefaults::DEFAULT.#field)
    };
    let max_attempts = match &attrs.max_attempts {
        Some(n) => Literal::u32_unsuffixed(n.value as u32).into_token_stream(),
        None => default("max_attempts"),
    };
    let priority = match &attrs.priority {
        Some(n) => Literal::u16_unsuffixed(n.value as u16).into_token_stream(),
        None => default("priority"),
    };
    let timeout = match attrs.timeout.as_ref().and_then(|t| t.value.duration()) {
        None => default("timeout"),
        Some(None) => quote!(::core::option::Option::None),
        Some(Some(d)) if d.subsec_nanos() == 0 => {
            let secs = Literal::u64_unsuffixed(d.as_secs());
            quote!(::core::option::Option::Some(::core::time::Duration::from_secs(#secs)))
        }
        Some(Some(d)) => {
            let millis = Literal::u64_unsuffixed(d.as_millis() as u64);
            quote!(::core::option::Option::Some(::core::time::Duration::from_millis(#millis)))
        }
    };
    let max_payload = match &attrs.max_payload {
        Some(n) => Literal::usize_unsuffixed(n.value as usize).into_token_stream(),
        None => default("max_payload"),
    };
    let key_fn = match (&attrs.key_fn, &attrs.key, &input.shape) {
        (Some(function), _, _) => delegate(
            quote!(fn idempotency_key(&self) -> ::core::option::Option<::std::string::String>),
            function,
        ),
        (None, Some(key), Shape::Named(fields)) => idempotency_key(key, fields),
        _ => TokenStream::new(),
    };
    let validate_fn = attrs.validate.as_ref().map(|function| {
        let signature =
            quote!(fn validate(&self) -> ::core::result::Result<(), #krate::InvalidMessage>);
        delegate(signature, function)
    });
    let recipient_fn = attrs.recipient.as_ref().map(|function| {
        let signature = quote!(fn recipient(&self) -> ::core::option::Option<#krate::Recipient>);
        let method = delegate(signature, function);
        quote!(const HAS_RECIPIENT: bool = true; #method)
    });
    let ordered = attrs
        .ordered
        .map(|span| quote_spanned!(span=> const ORDERED: bool = true;));
    let destination_fn = attrs.destination.as_ref().map(|function| {
        let signature =
            quote!(fn destination(&self) -> ::core::option::Option<::std::string::String>);
        let method = delegate(signature, function);
        quote!(const HAS_DESTINATION: bool = true; #method)
    });
    quote! {
        #[automatically_derived]
        impl #krate::OutboxMessage for #ident {
            const TYPE: &'static str = #tag;
            const DEFAULTS: #krate::MessageDefaults = #krate::MessageDefaults {
                max_attempts: #max_attempts,
                priority: #priority,
                timeout: #timeout,
                max_payload: #max_payload,
            };
            #key_fn
            #validate_fn
            #recipient_fn
            #destination_fn
            #ordered
        }
    }
}

/// The method with signature `signature` whose body calls `function(self)`.
///
/// The call carries the span of the string literal naming the function, so that a function
/// of the wrong signature is reported there rather than at the derive.
fn delegate(signature: TokenStream, function: &FnPath) -> TokenStream {
    let path = &function.path;
    let call = quote_spanned!(function.span=> #path(self));
    quote! {
        #signature {
            #call
        }
    }
}

/// `fn idempotency_key` joining the named fields' `Display` output with `:`.
///
/// Each field access carries the span of its name in `key(...)`, so a field that is not
/// `Display` is reported there.
fn idempotency_key(key: &KeyAttr, fields: &[&Ident]) -> TokenStream {
    let accesses: Vec<TokenStream> = key
        .fields
        .iter()
        .map(|member| {
            let span = member.span();
            let field = fields
                .iter()
                .find(|f| matches!(member, Member::Named(named) if named.unraw() == f.unraw()));
            let mut field = (*field.expect("validated: key names existing fields")).clone();
            field.set_span(span);
            quote_spanned!(span=> self.#field)
        })
        .collect();
    let body = match accesses.as_slice() {
        [single] => quote!(::std::string::ToString::to_string(&#single)),
        many => {
            let format = vec!["{}"; many.len()].join(":");
            quote!(::std::format!(#format, #(#many),*))
        }
    };
    quote! {
        fn idempotency_key(&self) -> ::core::option::Option<::std::string::String> {
            ::core::option::Option::Some(#body)
        }
    }
}

/// A stand-in impl emitted next to errors, so that code using the type as a message does
/// not add errors of its own. Generic types and unions get none.
fn fallback(input: &Input) -> TokenStream {
    if !input.generics.params.is_empty() || matches!(input.shape, Shape::Union(_)) {
        return TokenStream::new();
    }
    let krate = krate(input);
    let ident = input.ident;
    quote! {
        #[automatically_derived]
        impl #krate::OutboxMessage for #ident {
            const TYPE: &'static str = "";
        }
    }
}
