//! One-click unsubscribe (RFC 8058): the endpoint behind the `List-Unsubscribe` URL.

use std::sync::Arc;

use crate::{
    backend::Backend,
    smtp::{UnsubscribeKeys, UnsubscribeToken},
    Admin, NewSuppression, SuppressionReason, SuppressionScope, Suppressions,
};
use axum::{
    extract::{Path, State},
    http::StatusCode,
    response::{IntoResponse, Response},
    routing::get,
    Router,
};
use maud::{html, Markup, DOCTYPE};
use sha2::{Digest, Sha256};

/// The kind under which used unsubscribe tokens are recorded.
pub const UNSUBSCRIBE_TOKEN_KIND: &str = "unsubscribe";

/// One-click unsubscribe (RFC 8058), features `web` and `smtp`: the endpoint behind the
/// `List-Unsubscribe` URL the mailer writes into list emails.
///
/// * `POST {token}` (what Gmail, Yahoo and Outlook send, body
///   `List-Unsubscribe=One-Click`): verifies the token's signature, then, in one database
///   transaction, records the token as used and suppresses its address for its list
///   (reason `unsubscribe`); answers 200 at once. A token that does not verify gets 400; a
///   token used before gets 409 and writes nothing (so an old link cannot undo a later
///   re-subscription).
/// * `GET {token}`: a minimal page naming the address and list, with a button that sends
///   the same POST. A GET never unsubscribes: link scanners and previews fetch URLs.
///
/// Its pages carry the web admin's security headers (a Content-Security-Policy without
/// scripts that forbids framing, `X-Frame-Options: DENY`, `nosniff`, `no-referrer`). A token
/// must name one full address; one naming a whole domain gets 400.
///
/// The endpoint serves the public and needs no login; mount it where the base URL of
/// [`Unsubscribe`](outbox_smtp::Unsubscribe) points, beside (not inside) the admin:
///
/// ```no_run
/// # async fn serve(admin: outbox::Admin<outbox::SqliteBackend>) -> std::io::Result<()> {
/// use outbox::smtp::UnsubscribeKeys;
/// use outbox::web::UnsubscribeEndpoint;
///
/// let keys = UnsubscribeKeys::new("2026-11", std::env::var("UNSUBSCRIBE_KEY").unwrap())
///     .expect("a key of 32 bytes or more");
/// // The mailer's `Unsubscribe::new("https://example.com/u/", keys.clone())` writes
/// // links to this endpoint.
/// let app = axum::Router::new().nest("/u", UnsubscribeEndpoint::new(admin, keys).into_router());
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
/// axum::serve(listener, app).await
/// # }
/// ```
pub struct UnsubscribeEndpoint<B> {
    suppressions: Suppressions<B>,
    keys: UnsubscribeKeys,
}

struct Shared<B> {
    suppressions: Suppressions<B>,
    keys: UnsubscribeKeys,
}

impl<B: Backend> UnsubscribeEndpoint<B> {
    /// An endpoint that verifies tokens with `keys` (the same keys the mailer signs with,
    /// older ones included through [`UnsubscribeKeys::also_accept`]) and writes
    /// suppressions through `admin`.
    pub fn new(admin: Admin<B>, keys: UnsubscribeKeys) -> Self {
        Self {
            suppressions: admin.suppressions(),
            keys,
        }
    }

    /// The router: `GET /{token}` and `POST /{token}`; nest it at the path of the
    /// unsubscribe base URL.
    pub fn into_router(self) -> Router {
        let shared = Arc::new(Shared {
            suppressions: self.suppressions,
            keys: self.keys,
        });
        Router::new()
            .route("/{token}", get(confirm::<B>).post(unsubscribe::<B>))
            .layer(axum::middleware::from_fn(super::headers::security_headers))
            .with_state(shared)
    }
}

/// The digest a used token is recorded by: of what it says (message, list, address), not of
/// its text, so the same token written another way (a prefix, spaces, an older key) is the
/// same token.
fn digest(token: &UnsubscribeToken) -> String {
    let text = format!("{}\n{}\n{}", token.message_id, token.list, token.address);
    let hash = Sha256::digest(text.as_bytes());
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

/// The suppression one token asks for: its address in its list. A token must name one
/// full address: one naming a whole domain (`@example.com`) is refused.
fn suppression_of(token: &UnsubscribeToken) -> Result<NewSuppression, String> {
    if token.address.trim().starts_with('@') {
        return Err(format!(
            "This unsubscribe link names a whole domain ({}), not one address; nothing was \
             changed.",
            token.address.trim()
        ));
    }
    let scope = SuppressionScope::List(token.list.clone());
    NewSuppression::new(&token.address, scope, SuppressionReason::Unsubscribe).map(|s| {
        s.source(format!(
            "one-click unsubscribe, message {}",
            token.message_id
        ))
    })
}

async fn unsubscribe<B: Backend>(
    State(shared): State<Arc<Shared<B>>>,
    Path(token): Path<String>,
) -> Response {
    let verified = match shared.keys.verify(&token) {
        Ok(verified) => verified,
        Err(e) => {
            tracing::info!(error = %e, "refused an unsubscribe with a token that does not verify");
            return refused(
                StatusCode::BAD_REQUEST,
                "This unsubscribe link is not valid.",
            );
        }
    };
    let entry = match suppression_of(&verified) {
        Ok(entry) => entry,
        Err(e) => return refused(StatusCode::BAD_REQUEST, &e),
    };
    let redeemed = shared
        .suppressions
        .redeem(
            UNSUBSCRIBE_TOKEN_KIND,
            &digest(&verified),
            std::slice::from_ref(&entry),
        )
        .await;
    match redeemed {
        Ok(true) => {
            tracing::info!(list = %verified.list, message.id = %verified.message_id, "one-click unsubscribe");
            let body = page(
                "Unsubscribed",
                html! {
                    p { (verified.address) " will get no more mail of the list “" (verified.list) "”." }
                },
            );
            (StatusCode::OK, body).into_response()
        }
        Ok(false) => refused(
            StatusCode::CONFLICT,
            "This unsubscribe link was used already; nothing was changed.",
        ),
        Err(e) => {
            tracing::warn!(error = %e, "cannot record an unsubscribe; the sender's client will try again");
            refused(
                StatusCode::SERVICE_UNAVAILABLE,
                "The unsubscribe could not be recorded just now; please try again in a minute.",
            )
        }
    }
}

async fn confirm<B: Backend>(
    State(shared): State<Arc<Shared<B>>>,
    Path(token): Path<String>,
) -> Response {
    let Ok(verified) = shared.keys.verify(&token) else {
        return refused(
            StatusCode::BAD_REQUEST,
            "This unsubscribe link is not valid.",
        );
    };
    if let Err(why) = suppression_of(&verified) {
        return refused(StatusCode::BAD_REQUEST, &why);
    }
    let body = page(
        "Unsubscribe",
        html! {
            p { "Stop sending the list “" (verified.list) "” to " (verified.address) "?" }
            form method="post" {
                input type="hidden" name="List-Unsubscribe" value="One-Click";
                button type="submit" { "Unsubscribe" }
            }
        },
    );
    (StatusCode::OK, body).into_response()
}

fn refused(status: StatusCode, why: &str) -> Response {
    (status, page("Unsubscribe", html! { p { (why) } })).into_response()
}

fn page(title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="robots" content="noindex";
                title { (title) }
            }
            body style="font-family: sans-serif; max-width: 32rem; margin: 3rem auto; padding: 0 1rem" {
                h1 { (title) }
                (body)
            }
        }
    }
}
