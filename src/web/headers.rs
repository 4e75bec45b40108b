//! The security headers on every response: a Content-Security-Policy that allows only the
//! page's own (hashed) script, its inline styles, same-origin fetches and images from the
//! admin itself or `data:` URLs, and that forbids framing; `X-Frame-Options`,
//! `X-Content-Type-Options` and `Referrer-Policy`.
//!
//! An email's HTML body is shown in an `<iframe srcdoc>`, which inherits the page's
//! policy: its remote images, fonts and stylesheets are not fetched (a tracking pixel
//! would tell the sender that the email was opened, and when, from where).

use std::sync::OnceLock;

use axum::{
    extract::Request,
    http::{header, HeaderValue},
    middleware::Next,
    response::Response,
};
use base64::{engine::general_purpose::STANDARD, Engine as _};
use sha2::{Digest, Sha256};

use super::layout::JS;

/// The policy's sources for images by default: the admin itself and `data:` URLs.
const IMAGES: &str = "'self' data:";
/// The image sources on an email's page when the operator asked for its remote images.
const REMOTE_IMAGES: &str = "'self' data: http: https:";

/// The Content-Security-Policy, with remote images allowed or not.
pub(crate) fn policy(remote_images: bool) -> HeaderValue {
    static STRICT: OnceLock<HeaderValue> = OnceLock::new();
    static RELAXED: OnceLock<HeaderValue> = OnceLock::new();
    let (cell, images) = if remote_images {
        (&RELAXED, REMOTE_IMAGES)
    } else {
        (&STRICT, IMAGES)
    };
    cell.get_or_init(|| {
        let digest: [u8; 32] = Sha256::digest(JS.as_bytes()).into();
        let script = STANDARD.encode(digest);
        // Inline styles stay allowed: the page's own style sheet, and an email's (styles
        // fetch nothing that the other directives allow).
        HeaderValue::from_str(&format!(
            "default-src 'none'; script-src 'sha256-{script}'; style-src 'unsafe-inline'; \
             img-src {images}; connect-src 'self'; form-action 'self'; \
             frame-ancestors 'none'; base-uri 'none'"
        ))
        .expect("the policy is a valid header value")
    })
    .clone()
}

/// The middleware: adds the headers to every response (a handler may have set a policy
/// of its own, which is kept).
pub(crate) async fn security_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    if !headers.contains_key(header::CONTENT_SECURITY_POLICY) {
        headers.insert(header::CONTENT_SECURITY_POLICY, policy(false));
    }
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}
