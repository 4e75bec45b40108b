//! Who may use the admin: HTTP basic authentication, the application's check, or, with
//! neither, loopback peers only.

use std::{net::SocketAddr, sync::Arc};

use axum::{
    extract::{ConnectInfo, Request, State},
    http::{header, request::Parts, HeaderValue, StatusCode},
    middleware::Next,
    response::{IntoResponse, Response},
};
use base64::Engine as _;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The application's check on a request's head.
pub(crate) type Hook = Arc<dyn Fn(&Parts) -> bool + Send + Sync>;

/// The authorization settings of one router.
#[derive(Default)]
pub(crate) struct AuthConfig {
    pub(crate) hook: Option<Hook>,
    pub(crate) basic: Option<Basic>,
    pub(crate) loopback_in_release: bool,
}

/// Basic-auth credentials, kept as a digest of `user:password` so that the comparison
/// takes the same time whatever the lengths.
pub(crate) struct Basic {
    digest: [u8; 32],
}

impl Basic {
    pub(crate) fn new(user: &str, password: &str) -> Self {
        Self {
            digest: Self::digest(user.as_bytes(), password.as_bytes()),
        }
    }

    fn digest(user: &[u8], password: &[u8]) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(user);
        h.update(b":");
        h.update(password);
        h.finalize().into()
    }

    /// True when the `Authorization` header carries these credentials.
    fn accepts(&self, header: Option<&HeaderValue>) -> bool {
        let Some(value) = header.and_then(|v| v.to_str().ok()) else {
            return false;
        };
        let Some((scheme, encoded)) = value.trim().split_once(' ') else {
            return false;
        };
        if !scheme.eq_ignore_ascii_case("basic") {
            return false;
        }
        let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(encoded.trim()) else {
            return false;
        };
        let Some(colon) = decoded.iter().position(|&b| b == b':') else {
            return false;
        };
        let given = Self::digest(&decoded[..colon], &decoded[colon + 1..]);
        given.ct_eq(&self.digest).into()
    }
}

/// The middleware: lets a request through, or answers 401 / 403 saying why.
pub(crate) async fn guard(
    State(config): State<Arc<AuthConfig>>,
    request: Request,
    next: Next,
) -> Response {
    let (parts, body) = request.into_parts();
    if let Some(basic) = &config.basic {
        if !basic.accepts(parts.headers.get(header::AUTHORIZATION)) {
            return (
                StatusCode::UNAUTHORIZED,
                [(
                    header::WWW_AUTHENTICATE,
                    "Basic realm=\"outbox admin\", charset=\"UTF-8\"",
                )],
                "the outbox admin needs a user name and password\n",
            )
                .into_response();
        }
    }
    if let Some(hook) = &config.hook {
        if !hook(&parts) {
            return (
                StatusCode::FORBIDDEN,
                "you are not authorized to use the outbox admin\n",
            )
                .into_response();
        }
    }
    if config.basic.is_none() && config.hook.is_none() {
        if let Some(refusal) = unauthenticated(&parts, config.loopback_in_release) {
            return (StatusCode::FORBIDDEN, refusal).into_response();
        }
    }
    next.run(Request::from_parts(parts, body)).await
}

/// Why a request may not be served without authorization, or `None` if it may: only a
/// loopback peer, and in release builds only when allowed.
fn unauthenticated(parts: &Parts, loopback_in_release: bool) -> Option<String> {
    const HOW: &str = "configure authorization: outbox::web::WebAdmin::new(admin)\
        .basic_auth(user, password) or .authorize(|request| ...) (a check on the request, \
        e.g. a session your own middleware set), then .into_router()";
    let peer = parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| *addr);
    match peer {
        None => Some(format!(
            "the outbox admin has no authorization configured and cannot see the peer \
             address: {HOW}; or, to serve loopback only, serve the app with \
             into_make_service_with_connect_info::<SocketAddr>()\n"
        )),
        Some(addr) if !addr.ip().is_loopback() => Some(format!(
            "the outbox admin has no authorization configured, so it only serves requests \
             from this machine (loopback), not from {}: {HOW}\n",
            addr.ip()
        )),
        Some(_) if !cfg!(debug_assertions) && !loopback_in_release => Some(format!(
            "the outbox admin has no authorization configured: {HOW}; or, to serve \
             loopback requests without it where no reverse proxy runs on this host (behind \
             one, every request is loopback), call .allow_unauthenticated_loopback_without_proxy()\n"
        )),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_credentials_must_match_exactly() {
        let b = Basic::new("admin", "s3cret");
        let header = |s: &str| {
            let v = format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(s)
            );
            HeaderValue::from_str(&v).unwrap()
        };
        assert!(b.accepts(Some(&header("admin:s3cret"))));
        assert!(!b.accepts(Some(&header("admin:s3cret2"))));
        assert!(!b.accepts(Some(&header("admin2:s3cret"))));
        assert!(!b.accepts(Some(&header("admins3cret"))));
        assert!(!b.accepts(Some(&HeaderValue::from_static("Bearer x"))));
        assert!(!b.accepts(None));
    }

    fn parts(peer: Option<&str>) -> Parts {
        let mut request = axum::http::Request::new(());
        if let Some(peer) = peer {
            let addr: SocketAddr = peer.parse().unwrap();
            request.extensions_mut().insert(ConnectInfo(addr));
        }
        request.into_parts().0
    }

    #[test]
    fn without_authorization_only_loopback_peers_are_served() {
        let remote = unauthenticated(&parts(Some("10.0.0.5:4000")), true).unwrap();
        assert!(remote.contains("not from 10.0.0.5") && remote.contains(".basic_auth"));
        assert!(unauthenticated(&parts(Some("[2001:db8::1]:4000")), true).is_some());
        let unknown = unauthenticated(&parts(None), true).unwrap();
        assert!(unknown.contains("into_make_service_with_connect_info"));
        assert_eq!(unauthenticated(&parts(Some("127.0.0.1:4000")), true), None);
        assert_eq!(unauthenticated(&parts(Some("[::1]:4000")), true), None);
        // Without the opt-in, release builds refuse loopback too.
        let loopback = unauthenticated(&parts(Some("127.0.0.1:4000")), false);
        assert_eq!(loopback.is_some(), !cfg!(debug_assertions));
    }
}
