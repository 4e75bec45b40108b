//! The web admin (feature `web`): an [axum](https://docs.rs/axum) [`Router`](axum::Router) the
//! application mounts where it wants, serving server-rendered HTML pages over
//! [`Admin`].
//!
//! ```no_run
//! # async fn serve(admin: outbox::Admin<outbox::SqliteBackend>) -> std::io::Result<()> {
//! use std::net::SocketAddr;
//!
//! let app = axum::Router::new().nest(
//!     "/outbox",
//!     outbox::web::WebAdmin::new(admin)
//!         .basic_auth("admin", std::env::var("OUTBOX_ADMIN_PASSWORD").unwrap_or_default())
//!         .into_router(),
//! );
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//! // The peer address lets the admin tell loopback requests apart (see below).
//! axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>()).await
//! # }
//! ```
//!
//! # Pages
//!
//! * overview (`/`): per type pending, scheduled, running, retrying, paused (held by a
//!   paused type or group) and dead counts and the age of the oldest due message; paused types with their reason; rate buckets with
//!   their tokens, capacity and rate; deliveries over the last hour as a bar chart. Forms
//!   pause a type and change a bucket's rate;
//! * a type (`/types/{type}`): its counts, chart, pause / resume, its newest dead letters
//!   and bulk requeue / purge;
//! * dead letters (`/dead`): filtered by type, paged, with requeue / purge per row and
//!   in bulk;
//! * dead letters by error (`/dead/groups`): grouped by an error signature (for email the
//!   SMTP reply code and the recipient domain, `550 5.1.1 @bad.example`; otherwise the
//!   error's first line with numbers and ids replaced), with requeue / purge per group;
//! * a dead letter (`/dead/{id}`): its payload pretty-printed and last error; a message
//!   whose kind registered a view ([`WebAdmin::view`](crate::web::WebAdmin::view)) is also shown the kind's way: an
//!   `outbox.email` message (with feature `smtp`) its headers, Message-ID, text body and
//!   HTML body (in a sandboxed frame), an `outbox.webhook` message (with feature
//!   `webhook`) its endpoint, event type, host and data, its errors grouped by the
//!   receiver's answer (`HTTP 503 hooks.example.com`) or the failure (`timeout
//!   hooks.example.com`);
//! * groups (`/groups`): every group (campaign) with a progress bar (delivered, dead,
//!   cancelled and remaining of its total), its counts per state, delivery rate, ETA and
//!   pause, with pause / resume / cancel per group (cancel asks for a tick);
//! * a group (`/groups/{name}`): the same figures, refreshed, its actions and a link to
//!   its queued messages;
//! * messages (`/messages`): the queued messages filtered by type, group, state, key
//!   prefix and error text, a page at a time by id (the "next page" link carries the last
//!   id shown, never an offset), with retry now / cancel per row and, for the whole
//!   filter, with a tick;
//! * a message (`/messages/{id}`): its state, attempts, due time, lease owner, attempt
//!   log and payload, with retry now / cancel;
//! * traffic shaping (`/shaping`): the shaped sites (limits, messages in flight, a rule's
//!   slowdown or suspension, with a button that ends it) and the reply rules;
//! * suppressions (`/suppressions`): the suppression list filtered by address or reason,
//!   paged, with a form to add an entry (scope, reason, expiry) and remove per entry, and
//!   the newest messages it stopped;
//! * webhook endpoints (`/webhooks`, with feature `webhook`): every outgoing webhook
//!   endpoint with its URL, state (disabled since when and why), failing since, number of
//!   signing secrets, whether it is ordered and a link to its queued messages (group
//!   `webhook:<name>`), with forms to disable it (with a reason), enable it, rotate its
//!   secret (the new verifying key is shown once, on the page the form leads to), retire
//!   its old secrets, replay its delivered events kept for the retention window (all, or
//!   those delivered since a time ago) and turn ordered delivery on or off.
//!
//! Two public endpoints live beside the admin (not inside it; they need no login):
//! [`UnsubscribeEndpoint`](crate::web::UnsubscribeEndpoint) for one-click unsubscribe links
//! (with feature `smtp`) and [`Webhooks`](crate::web::Webhooks) for providers' delivery
//! events (feature `webhooks`).
//!
//! Every page works without JavaScript; where it runs, the counts refresh every 2 seconds
//! by fetching the page's live part (`?live=1`).
//!
//! # Throughput
//!
//! The status counts carry no history, so the router keeps its own: from its first
//! request on, a task samples [`Admin::status_counts`] every 10 seconds
//! ([`WebAdmin::sample_every`](crate::web::WebAdmin::sample_every)) and keeps an hour of samples in memory. A sample's
//! deliveries are the growth of the `done` rows when the outbox keeps them
//! ([`Retention::KeepFor`](crate::Retention)); otherwise the shrinking of the queue less
//! the growth of the dead letters, which is a lower bound: messages enqueued in the same
//! interval hide as many deliveries. The chart starts empty when the process starts, and
//! each process serving the router has its own.
//!
//! # Security
//!
//! * **Authorization.** Set [`WebAdmin::basic_auth`](crate::web::WebAdmin::basic_auth) (HTTP basic authentication,
//!   compared in constant time), or [`WebAdmin::authorize`](crate::web::WebAdmin::authorize), a check on each request's
//!   head: a session cookie, or an extension that the application's own middleware put on
//!   the request. Without either, the admin serves only requests from a loopback address
//!   (`127.0.0.1`, `::1`), and in release builds only after
//!   [`WebAdmin::allow_unauthenticated_loopback_without_proxy`](crate::web::WebAdmin::allow_unauthenticated_loopback_without_proxy); anything else gets 403 with a message
//!   saying how to configure authorization. Telling loopback apart needs the peer address:
//!   serve with `into_make_service_with_connect_info::<SocketAddr>()`. **Behind a reverse
//!   proxy on the same host, every request is loopback**: loopback-only then serves
//!   everyone the proxy serves; configure authorization there.
//! * **CSRF.** Every state change is a POST carrying a token in a hidden field: the HMAC
//!   (SHA-256, with a random key made per router) of a random value in a `SameSite=Strict`,
//!   `HttpOnly` cookie (also `Secure` with
//!   [`WebAdmin::secure_cookies`](crate::web::WebAdmin::secure_cookies), or when the
//!   request's URI says `https`). A POST without a matching token gets 403.
//! * **Redirects and banners.** After an action the admin redirects to the page the form
//!   was on: only a path on this site, one leading `/`, no backslash or control
//!   character; any other `back` value gets 400 before the action. The banner text after
//!   the redirect is signed for the browser: a link from elsewhere cannot put its own
//!   words in the banner.
//! * **Headers.** Every response carries a `Content-Security-Policy` (no script but the
//!   page's own, hashed; inline styles; images from the admin itself or `data:` URLs only;
//!   fetches to the admin only; no framing), `X-Frame-Options: DENY`,
//!   `X-Content-Type-Options: nosniff` and `Referrer-Policy: no-referrer`.
//! * Everything shown (payloads, errors, type tags, reasons) is HTML-escaped; an email's
//!   HTML body is shown in an `<iframe sandbox>` with no scripts, forms or same-origin
//!   access, and under the page's policy: its remote images are not fetched (a tracking
//!   pixel would tell the sender the email was opened) unless the operator follows the
//!   page's "Load remote images" link, which allows them on that one page.

mod auth;
mod csrf;
mod headers;
mod layout;
mod live_pages;
mod pages;
#[cfg(feature = "publish")]
mod relay_pages;
mod sampler;
mod shaping_pages;
mod signature;
mod suppression_pages;
#[cfg(feature = "smtp")]
mod unsubscribe;
mod view;
#[cfg(feature = "webhook")]
mod webhook_pages;
#[cfg(feature = "webhooks")]
mod webhooks;

/// The axum version the router is built with.
pub use axum;
#[cfg(feature = "smtp")]
pub use unsubscribe::{UnsubscribeEndpoint, UNSUBSCRIBE_TOKEN_KIND};
#[cfg(feature = "webhooks")]
pub use webhooks::{
    apply_events, EventHook, HttpsFetch, SnsFetch, Webhooks, EVENT_TOKEN_KIND, MAILGUN_TOKEN_KIND,
};

use std::{sync::Arc, time::Duration};

use axum::{
    http::request::Parts,
    middleware,
    routing::{get, post},
    Router,
};

use crate::{backend::Backend, Admin};

/// The web admin's settings; [`WebAdmin::into_router`] makes the [`Router`].
pub struct WebAdmin<B> {
    admin: Admin<B>,
    auth: auth::AuthConfig,
    sample_every: Duration,
    views: crate::kind::Views,
    secure_cookies: bool,
}

/// The type tag of the email kind's messages, shown with its view by default.
#[cfg(feature = "smtp")]
const EMAIL_TYPE: &str = <crate::smtp::Email as crate::OutboxMessage>::TYPE;

/// The views every web admin starts with: the email kind's, with the `smtp` feature, and
/// the webhook kind's, with the `webhook` feature.
fn default_views() -> crate::kind::Views {
    let views = crate::kind::Views::new();
    #[cfg(feature = "smtp")]
    let views = views.with(EMAIL_TYPE, crate::smtp::EmailView::default());
    #[cfg(feature = "webhook")]
    let views = views.with(crate::webhook::WEBHOOK_TYPE, crate::webhook::WebhookView);
    views
}

/// The web admin with the defaults, for `app.nest("/outbox", outbox::web::router(admin))`:
/// no authorization set, so it serves loopback requests only (in release builds none, see
/// [`WebAdmin::allow_unauthenticated_loopback_without_proxy`]; behind a reverse proxy on
/// the same host every request is loopback). Same as
/// `WebAdmin::new(admin).into_router()`.
pub fn router<B: Backend>(admin: Admin<B>) -> Router {
    WebAdmin::new(admin).into_router()
}

impl<B: Backend> WebAdmin<B> {
    /// The web admin over `admin`, with no authorization set yet.
    pub fn new(admin: Admin<B>) -> Self {
        Self {
            admin,
            auth: auth::AuthConfig::default(),
            sample_every: Duration::from_secs(10),
            views: default_views(),
            secure_cookies: false,
        }
    }

    /// Serves a request only when `check` returns true for its head (method, URI,
    /// headers, extensions); otherwise answers 403. Use it for the application's own
    /// login: check a session cookie here, or let the application's middleware (layered
    /// around the nested router) put the user in the request's extensions and check that.
    /// With [`WebAdmin::basic_auth`] too, a request must pass both.
    pub fn authorize<F>(mut self, check: F) -> Self
    where
        F: Fn(&Parts) -> bool + Send + Sync + 'static,
    {
        self.auth.hook = Some(Arc::new(check));
        self
    }

    /// Requires HTTP basic authentication with this user name and password (compared in
    /// constant time); a request without them gets 401 and the browser's login prompt.
    /// Basic authentication sends the password with every request: serve the admin over
    /// HTTPS anywhere but on loopback.
    pub fn basic_auth(mut self, user: impl Into<String>, password: impl Into<String>) -> Self {
        self.auth.basic = Some(auth::Basic::new(&user.into(), &password.into()));
        self
    }

    /// Without [`WebAdmin::authorize`] or [`WebAdmin::basic_auth`], serves requests from a
    /// loopback address in release builds too (debug builds always do). Requests from any
    /// other address are refused all the same.
    ///
    /// **Only without a reverse proxy on the same host.** Behind nginx, Caddy or a sidecar
    /// on the same machine, every request reaches the router from a loopback address, so
    /// this serves everyone the proxy serves, unauthenticated: configure authorization
    /// instead.
    pub fn allow_unauthenticated_loopback_without_proxy(mut self) -> Self {
        self.auth.loopback_in_release = true;
        self
    }

    /// The former name of [`WebAdmin::allow_unauthenticated_loopback_without_proxy`],
    /// which says the risk: behind a reverse proxy on the same host every request is
    /// loopback.
    #[deprecated(
        note = "behind a reverse proxy on the same host every request is loopback; use \
                allow_unauthenticated_loopback_without_proxy (same behaviour) only where no \
                proxy runs, or configure basic_auth/authorize"
    )]
    pub fn allow_unauthenticated_loopback(self) -> Self {
        self.allow_unauthenticated_loopback_without_proxy()
    }

    /// How often the throughput sampler reads the status counts (default 10 s, at least
    /// 100 ms); the chart covers the last hour whatever the interval.
    pub fn sample_every(mut self, every: Duration) -> Self {
        self.sample_every = every.max(Duration::from_millis(100));
        self
    }

    /// The domain of the Message-IDs shown on an email's page: set it to the mailer's
    /// `message_id_domain` if it has one (otherwise the sender's domain is shown, as the
    /// mailer uses then). It sets the `outbox.email` view to the email kind's with this
    /// domain, replacing one given earlier with [`WebAdmin::view`]. Without the `smtp`
    /// feature there is no email view and this does nothing.
    pub fn message_id_domain(self, domain: impl Into<String>) -> Self {
        #[cfg(feature = "smtp")]
        {
            let view = crate::smtp::EmailView::new(Some(domain.into()));
            self.view(EMAIL_TYPE, view)
        }
        #[cfg(not(feature = "smtp"))]
        {
            let _ = domain.into();
            self
        }
    }

    /// Shows messages of `type_tag` with `view`: their payload on a dead letter's page,
    /// their errors' signature in the grouped dead letters, their attempts' heading (see
    /// [`KindView`](crate::kind::KindView)). With the `smtp` feature, `outbox.email` has
    /// the email kind's view already, and with the `webhook` feature `outbox.webhook` the
    /// webhook kind's; a view given here replaces one of the same type.
    pub fn view(mut self, type_tag: &str, view: impl crate::kind::KindView) -> Self {
        self.views = self.views.with(type_tag, view);
        self
    }

    /// Marks the CSRF cookie `Secure` (sent over HTTPS only) on every response. Turn it on
    /// when the admin is served over HTTPS, in particular behind a proxy that ends TLS
    /// (the router then sees plain HTTP requests). Without it the cookie is `Secure` only
    /// when the request's URI says `https`.
    pub fn secure_cookies(mut self, secure: bool) -> Self {
        self.secure_cookies = secure;
        self
    }

    /// The router: mount it with `app.nest("/outbox", router)` (or serve it alone), and
    /// serve the app with `into_make_service_with_connect_info::<SocketAddr>()`.
    ///
    /// The throughput sampler starts with the first request, on the runtime serving it,
    /// and stops when the router is dropped.
    pub fn into_router(self) -> Router {
        let state = Arc::new(pages::State {
            admin: self.admin,
            csrf: csrf::Csrf::new(),
            samples: sampler::Sampler::new(self.sample_every),
            views: self.views,
            secure_cookies: self.secure_cookies,
        });
        let auth = Arc::new(self.auth);
        let router = Router::new()
            .route("/", get(pages::overview::<B>))
            .route("/types/{type_tag}", get(pages::type_page::<B>))
            .route("/pause", post(pages::pause::<B>))
            .route("/types/{type_tag}/resume", post(pages::resume::<B>))
            .route("/buckets/{name}", post(pages::set_rate::<B>))
            .route("/dead", get(pages::dead_list::<B>))
            .route("/dead/requeue", post(pages::dead_bulk_requeue::<B>))
            .route("/dead/purge", post(pages::dead_bulk_purge::<B>))
            .route("/dead/groups", get(pages::dead_groups::<B>))
            .route("/dead/groups/requeue", post(pages::group_requeue::<B>))
            .route("/dead/groups/purge", post(pages::group_purge::<B>))
            .route("/dead/{id}", get(pages::dead_show::<B>))
            .route("/dead/{id}/requeue", post(pages::dead_requeue::<B>))
            .route("/dead/{id}/purge", post(pages::dead_purge::<B>))
            .route("/groups", get(live_pages::groups_list::<B>))
            .route("/groups/{name}", get(live_pages::group_page::<B>))
            .route("/groups/{name}/pause", post(live_pages::group_pause::<B>))
            .route("/groups/{name}/resume", post(live_pages::group_resume::<B>))
            .route("/groups/{name}/cancel", post(live_pages::group_cancel::<B>))
            .route("/shaping", get(shaping_pages::shaping_page::<B>))
            .route("/shaping/resume", post(shaping_pages::shaping_resume::<B>))
            .route(
                "/shaping/rules/remove",
                post(shaping_pages::shaping_rule_remove::<B>),
            )
            .route(
                "/suppressions",
                get(suppression_pages::suppressions_page::<B>),
            )
            .route(
                "/suppressions/add",
                post(suppression_pages::suppression_add::<B>),
            )
            .route(
                "/suppressions/remove",
                post(suppression_pages::suppression_remove::<B>),
            )
            .route("/messages", get(live_pages::messages_list::<B>))
            .route(
                "/messages/retry",
                post(live_pages::messages_bulk_retry::<B>),
            )
            .route(
                "/messages/cancel",
                post(live_pages::messages_bulk_cancel::<B>),
            )
            .route("/messages/{id}", get(live_pages::message_show::<B>))
            .route("/messages/{id}/retry", post(live_pages::message_retry::<B>))
            .route(
                "/messages/{id}/cancel",
                post(live_pages::message_cancel::<B>),
            );
        #[cfg(feature = "webhook")]
        let router = router
            .route("/webhooks", get(webhook_pages::webhooks_page::<B>))
            .route(
                "/webhooks/disable",
                post(webhook_pages::webhook_disable::<B>),
            )
            .route("/webhooks/enable", post(webhook_pages::webhook_enable::<B>))
            .route("/webhooks/rotate", post(webhook_pages::webhook_rotate::<B>))
            .route("/webhooks/retire", post(webhook_pages::webhook_retire::<B>))
            .route("/webhooks/replay", post(webhook_pages::webhook_replay::<B>))
            .route(
                "/webhooks/ordered",
                post(webhook_pages::webhook_ordered::<B>),
            );
        #[cfg(feature = "publish")]
        let router = router.route("/relays", get(relay_pages::relays_page::<B>));
        router
            .fallback(pages::not_found)
            .layer(middleware::from_fn_with_state(
                Arc::clone(&state),
                pages::prepare::<B>,
            ))
            .layer(middleware::from_fn_with_state(auth, auth::guard))
            .layer(middleware::from_fn(headers::security_headers))
            .with_state(state)
    }
}
