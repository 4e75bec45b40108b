//! The [`Mailer`]: renders emails and hands them to the configured transport; its
//! [`handler`](Mailer::handler) is what an outbox worker runs for [`Email`] messages.
//!
//! Failure modes: see [`SendError`] for how each failure is classified. Recipients refused
//! while others were accepted are logged at WARN and the message counts as delivered
//! (see the crate docs). Nothing in an email can make the handler panic.

use std::{
    fmt,
    future::Future,
    path::PathBuf,
    pin::Pin,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use outbox_core::{Handler, HandlerError, MessageContext, MessageId, OutboxMessage};

use crate::{
    capture::{Captured, SentEmail},
    config::Transport,
    dev,
    error::RefusedRecipient,
    queued::RawEmail,
    render::{self, RenderOptions},
    smtp::SmtpSender,
    unknown::{self, is_unknown_user},
    ConfigError, Email, MailerConfig, SendError,
};

/// Sends emails through SMTP, into `.eml` files or into the log, as configured.
///
/// Cheap to clone: clones share the connection pool.
///
/// ```no_run
/// # async fn demo(pool: sqlx::SqlitePool) -> Result<(), Box<dyn std::error::Error>> {
/// use outbox_core::{Outbox, SqliteBackend};
/// use outbox_smtp::{Email, Mailer};
///
/// let mailer = Mailer::from_url("smtp://user:password@mail.example.com:587?pool=4")?;
/// let outbox = Outbox::new(SqliteBackend::new(pool)).register::<Email, _>(mailer.handler());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Mailer {
    inner: Arc<Inner>,
}

/// How long a list email waits when the mailer has no
/// [`MailerConfig::unsubscribe`]: it is put back (no attempt used, never a dead letter)
/// until a mailer with one sends it; after configuring it, `outbox messages retry --error unsubscribe` (or
/// `Admin::messages().retry_now_where`) sends the waiting ones at once.
pub const LIST_WITHOUT_UNSUBSCRIBE_WAIT: Duration = Duration::from_secs(15 * 60);

/// Why a mailer without [`MailerConfig::unsubscribe`] does not send a list email of `list`.
fn list_without_unsubscribe(list: &str) -> String {
    format!(
        "list email (list {list:?}) not sent: the mailer has no MailerConfig::unsubscribe, and \
         bulk mail without one-click unsubscribe is refused by Gmail, Yahoo and Outlook; give \
         the mailer MailerConfig::unsubscribe(..)"
    )
}

/// How often the ERROR about list emails without unsubscribe is repeated.
const LIST_WITHOUT_UNSUBSCRIBE_LOG_EVERY: Duration = Duration::from_secs(60);

struct Inner {
    /// When the ERROR about list emails without unsubscribe was last logged.
    no_unsubscribe_logged: Mutex<Option<Instant>>,
    config: MailerConfig,
    sender: Sender,
    /// How fast emails went through the provider's API lately, for its throttles.
    #[cfg(feature = "providers")]
    pace: crate::providers::pace::Pace,
}

enum Sender {
    Smtp(Box<SmtpSender>),
    File(PathBuf),
    Log,
    Capture(Captured),
    /// A provider's HTTP API (feature `providers`).
    #[cfg(feature = "providers")]
    Api(Box<crate::providers::ApiSender>),
}

/// What a successful send did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Delivery {
    /// The `Message-ID` the email carried (`<ulid@domain>`, the same on every attempt).
    pub message_id: String,
    /// Envelope recipients the server accepted (all of them for the dev transports).
    pub accepted: Vec<String>,
    /// Envelope recipients the server refused while others were accepted.
    pub refused: Vec<RefusedRecipient>,
    /// True when the test-mode redirect rewrote the recipients.
    pub redirected: bool,
    /// The `.eml` file written by the file transport.
    pub file: Option<PathBuf>,
    /// The provider's id of the sent email (Postmark's `MessageID`, Mailgun's `id`), for
    /// a provider's API (feature `providers`).
    pub provider_id: Option<String>,
    /// The provider that took it (`postmark`, `mailgun`, …), for a provider's API: with
    /// [`provider_id`](Self::provider_id), the receipt recorded with the outbox message.
    pub provider: Option<&'static str>,
}

impl Mailer {
    /// A mailer for `config`; checks it and prepares TLS, but does not connect yet.
    pub fn new(config: MailerConfig) -> Result<Self, ConfigError> {
        config.check()?;
        #[cfg(feature = "dkim")]
        let signing = !config.dkim.is_empty();
        #[cfg(not(feature = "dkim"))]
        let signing = false;
        if config.unsubscribe.is_some() && !signing {
            tracing::warn!(
                "one-click unsubscribe is configured but no DKIM signer: receivers ignore \
                 List-Unsubscribe-Post unless a DKIM signature covers it (RFC 8058); add \
                 MailerConfig::dkim (feature `dkim`)"
            );
        }
        let sender = match &config.transport {
            Transport::Smtp(smtp) => Sender::Smtp(Box::new(SmtpSender::new(smtp)?)),
            Transport::File(dir) => Sender::File(dir.clone()),
            Transport::Log => Sender::Log,
            Transport::Capture => Sender::Capture(Captured::default()),
            #[cfg(feature = "providers")]
            transport @ (Transport::Postmark(_)
            | Transport::Mailgun(_)
            | Transport::Ses(_)
            | Transport::SendGrid(_)
            | Transport::Resend(_)) => {
                Sender::Api(Box::new(crate::providers::ApiSender::new(transport)?))
            }
        };
        Ok(Self {
            inner: Arc::new(Inner {
                no_unsubscribe_logged: Mutex::new(None),
                config,
                sender,
                #[cfg(feature = "providers")]
                pace: crate::providers::pace::Pace::new(Instant::now()),
            }),
        })
    }

    /// A mailer from a URL; see [`MailerConfig::from_url`].
    pub fn from_url(url: &str) -> Result<Self, ConfigError> {
        Self::new(MailerConfig::from_url(url)?)
    }

    /// A list email this mailer cannot send (it has no [`MailerConfig::unsubscribe`]): put
    /// back for [`LIST_WITHOUT_UNSUBSCRIBE_WAIT`], not an attempt and never a dead letter,
    /// with an ERROR (at most once a minute) that names the fix.
    fn held_list_email(&self, id: &MessageId, list: Option<&str>) -> HandlerError {
        let reason = format!(
            "{} — the list email waits (no attempt used) and is tried again every {} \
             minutes; after the fix, retry the waiting ones now (`outbox messages retry \
             --error unsubscribe`)",
            list_without_unsubscribe(list.unwrap_or_default()),
            LIST_WITHOUT_UNSUBSCRIBE_WAIT.as_secs() / 60
        );
        let mut logged = self
            .inner
            .no_unsubscribe_logged
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if logged.is_none_or(|at| at.elapsed() >= LIST_WITHOUT_UNSUBSCRIBE_LOG_EVERY) {
            *logged = Some(Instant::now());
            tracing::error!(message.id = %id, "{reason}");
        }
        HandlerError::snooze_because(LIST_WITHOUT_UNSUBSCRIBE_WAIT, reason)
    }

    /// Suppresses the recipients `result` says do not exist, on the list of the outbox
    /// that message `ctx` came from, when the policy covers this email (`list`: a list
    /// email).
    async fn note_unknown<S>(
        &self,
        result: &Result<Delivery, SendError>,
        list: bool,
        ctx: &MessageContext<S>,
    ) {
        if !self.inner.config.unknown_users.applies(list) {
            return;
        }
        let refused = match result {
            Ok(delivery) => &delivery.refused,
            Err(SendError::RecipientsRefused(refused)) => refused,
            Err(_) => return,
        };
        for r in refused.iter().filter(|r| is_unknown_user(r.code, &r.reply)) {
            unknown::suppress(ctx, &r.address, r.code, &r.reply).await;
        }
    }

    /// The configuration (its `Display` hides the password).
    pub fn config(&self) -> &MailerConfig {
        &self.inner.config
    }

    /// The handler an outbox runs for [`Email`] messages:
    /// `outbox.register::<Email, _>(mailer.handler())`. Its circuit breaker is named by
    /// the SMTP server ([`Mailer::downstream`]), so every type sent through this server
    /// shares one.
    pub fn handler<S: Send + Sync + 'static>(&self) -> impl Handler<Email, S> {
        MailHandler {
            mailer: self.clone(),
        }
    }

    /// The downstream this mailer sends to, as a circuit breaker's name:
    /// `smtp:host:port` for SMTP, `postmark:host:port` for Postmark, `mailgun:host:port`
    /// for Mailgun, `ses:host:port` for Amazon SES, `sendgrid:host:port` and
    /// `resend:host:port` for SendGrid and Resend (their API hosts), `None` for the file
    /// and log transports (they are never down).
    /// Give it to [`Breaker::named`](outbox_core::Breaker::named) for a type of your own
    /// whose handler sends through [`Mailer::send`], so that it shares the breaker of the
    /// mailer's [`Email`] type.
    pub fn downstream(&self) -> Option<String> {
        match &self.inner.config.transport {
            Transport::Smtp(smtp) => {
                Some(format!("smtp:{}:{}", smtp.host(), smtp.effective_port()))
            }
            #[cfg(feature = "providers")]
            Transport::Postmark(postmark) => Some(format!(
                "postmark:{}:{}",
                postmark.api_host(),
                postmark.effective_port()
            )),
            #[cfg(feature = "providers")]
            Transport::Mailgun(mailgun) => Some(format!(
                "mailgun:{}:{}",
                mailgun.api_host(),
                mailgun.effective_port()
            )),
            #[cfg(feature = "providers")]
            Transport::Ses(ses) => Some(format!("ses:{}:{}", ses.api_host(), ses.effective_port())),
            #[cfg(feature = "providers")]
            Transport::SendGrid(sendgrid) => Some(format!(
                "sendgrid:{}:{}",
                sendgrid.api_host(),
                sendgrid.effective_port()
            )),
            #[cfg(feature = "providers")]
            Transport::Resend(resend) => Some(format!(
                "resend:{}:{}",
                resend.api_host(),
                resend.effective_port()
            )),
            Transport::File(_) | Transport::Log | Transport::Capture => None,
        }
    }

    /// [`reported`], with a provider's throttle slowing to half the rate this process got
    /// through lately (or the provider's own long wait) instead of the wait alone.
    fn paced(
        &self,
        id: &MessageId,
        result: Result<Delivery, SendError>,
    ) -> Result<Delivery, HandlerError> {
        #[cfg(feature = "providers")]
        if let Sender::Api(_) = &self.inner.sender {
            let now = Instant::now();
            match &result {
                Ok(_) => self.inner.pace.note(now),
                Err(SendError::Api(e)) => {
                    if let crate::ApiVerdict::SlowDown(hint) = e.verdict {
                        let observed = self.inner.pace.rate(now);
                        let (one_per, during) = crate::providers::pace::throttled(hint, observed);
                        let e = result.expect_err("matched an error");
                        return Err(HandlerError::slow_down(one_per, during, e));
                    }
                }
                Err(_) => {}
            }
        }
        reported(id, result)
    }

    /// The shaping site of this mailer's provider, `api:` and its name (`api:ses`,
    /// `api:postmark`, …), for a provider's HTTP API; `None` for SMTP and the development
    /// transports. Shape by it ([`Shaping::one_site`](outbox_core::Shaping::one_site)) so
    /// that the provider's "too many requests" answers slow every email sent through it:
    /// `Outbox::new(backend).shaping(Shaping::new().one_site(&site))`.
    pub fn site(&self) -> Option<String> {
        match &self.inner.sender {
            #[cfg(feature = "providers")]
            Sender::Api(sender) => Some(format!("api:{}", sender.provider())),
            _ => None,
        }
    }

    /// Refuses an email this mailer's provider would refuse for its size or its number of
    /// recipients (a provider's API, feature `providers`: Postmark 10 MB and 50
    /// recipients, Mailgun 25 MB and 1000, SES 40 MB and 50, SendGrid 30 MB and 1000,
    /// Resend 40 MB and 50), naming the limit; `Ok` for SMTP and the development
    /// transports. Call it before enqueueing, in the request that builds the email, to
    /// answer the user at once instead of finding a dead letter later. The mailer checks
    /// again before sending: an email enqueued anyway becomes a dead letter naming the
    /// limit at its first attempt, and nothing is sent (one email's size never holds up
    /// the others).
    pub fn check(&self, email: &Email) -> Result<(), SendError> {
        #[cfg(feature = "providers")]
        if let Sender::Api(sender) = &self.inner.sender {
            let (recipients, bytes) = crate::providers::limits::measure(email);
            sender.limits().check(recipients, bytes)?;
        }
        let _ = email;
        Ok(())
    }

    /// Sends `email` as the outbox message of `ctx`, for handlers of the application's own
    /// message types that render an [`Email`]. The error is classified for the outbox.
    pub async fn send<S>(
        &self,
        email: &Email,
        ctx: &MessageContext<S>,
    ) -> Result<Delivery, HandlerError> {
        if email.list.is_some() && self.inner.config.unsubscribe.is_none() {
            return Err(self.held_list_email(ctx.id(), email.list.as_deref()));
        }
        let result = self.deliver(email, ctx.id(), ctx.type_tag()).await;
        self.note_unknown(&result, email.list.is_some(), ctx).await;
        note_receipt(&result, ctx).await;
        note_inactive(&result, ctx).await;
        self.paced(ctx.id(), result)
    }

    /// Sends a raw email ([`RawEmail`], what [`QueuedTransport`](crate::QueuedTransport)
    /// enqueues) as the outbox message of `ctx`. The error is classified for the outbox.
    pub async fn send_raw<S>(
        &self,
        raw: &RawEmail,
        ctx: &MessageContext<S>,
    ) -> Result<Delivery, HandlerError> {
        let result = self.deliver_raw(raw, ctx.id(), ctx.type_tag()).await;
        let list = render::header_value(&raw.data, "List-Unsubscribe").is_some();
        self.note_unknown(&result, list, ctx).await;
        note_receipt(&result, ctx).await;
        self.paced(ctx.id(), result)
    }

    /// The handler an outbox runs for [`RawEmail`] messages (lettre messages enqueued by
    /// [`QueuedTransport`](crate::QueuedTransport)):
    /// `outbox.register::<RawEmail, _>(mailer.raw_handler())`. It shares the circuit
    /// breaker of [`Mailer::handler`].
    pub fn raw_handler<S: Send + Sync + 'static>(&self) -> impl Handler<RawEmail, S> {
        MailHandler {
            mailer: self.clone(),
        }
    }

    /// Sends raw email `raw` as outbox message `id` of type `type_tag`: its own
    /// `Message-ID` is kept (one derived from `id` is added when it has none), and the
    /// test-mode redirect rewrites the envelope (the original recipients go into an
    /// `X-Outbox-Original-To` header).
    pub async fn deliver_raw(
        &self,
        raw: &RawEmail,
        id: &MessageId,
        type_tag: &str,
    ) -> Result<Delivery, SendError> {
        raw.validate()?;
        #[cfg(feature = "providers")]
        if let Sender::Api(sender) = &self.inner.sender {
            sender.limits().check(raw.to.len(), raw.data.len())?;
        }
        let config = &self.inner.config;
        let redirect = config
            .redirect
            .as_ref()
            .filter(|r| r.applies_to_type(type_tag));
        let rendered = render::render_raw(raw, id, config.message_id_domain.as_deref(), redirect)?;
        self.hand_over(rendered, id, "(raw email)").await
    }

    /// Sends `email` with the Message-ID derived from the outbox id `id`; `type_tag` is
    /// what the test-mode redirect's `only` list is matched against besides the tags.
    pub async fn deliver(
        &self,
        email: &Email,
        id: &MessageId,
        type_tag: &str,
    ) -> Result<Delivery, SendError> {
        self.check(email)?;
        let config = &self.inner.config;
        let keep_bcc = matches!(self.inner.sender, Sender::File(_) | Sender::Log);
        if email.list.is_some() && config.unsubscribe.is_none() {
            return Err(SendError::Unsupported(
                "this is a list email (it has a `list`), and bulk mail without one-click \
                 unsubscribe is refused by Gmail, Yahoo and Outlook: give the mailer \
                 MailerConfig::unsubscribe(..)"
                    .to_owned(),
            ));
        }
        let options = RenderOptions {
            message_id_domain: config.message_id_domain.as_deref(),
            redirect: config.redirect.as_ref(),
            keep_bcc,
            unsubscribe: config.unsubscribe.as_ref(),
        };
        match &self.inner.sender {
            // A provider that takes the email's fields rather than its MIME bytes.
            #[cfg(feature = "providers")]
            Sender::Api(sender) if sender.takes_fields() => {
                let api = render::prepare_api(email, id, type_tag, &options)?;
                let taken = sender.send_fields(email, &api, id).await?;
                tracing::debug!(
                    message.id = %id, message_id = %api.message_id,
                    provider = sender.provider(), provider.id = %taken.id,
                    "the provider took the email"
                );
                let inactive = |a: &str| {
                    taken
                        .inactive
                        .iter()
                        .any(|(i, _)| i.eq_ignore_ascii_case(a))
                };
                return Ok(Delivery {
                    accepted: api
                        .recipients()
                        .map(|m| m.address.clone())
                        .filter(|a| !inactive(a))
                        .collect(),
                    message_id: api.message_id,
                    // The provider's own "will not deliver" (Postmark's inactive
                    // recipients), as a refusal with its error code for them, 406.
                    refused: taken
                        .inactive
                        .iter()
                        .map(|(address, said)| RefusedRecipient {
                            address: address.clone(),
                            code: 406,
                            reply: said.clone(),
                        })
                        .collect(),
                    redirected: api.redirected,
                    file: None,
                    provider_id: Some(taken.id),
                    provider: Some(sender.provider()),
                });
            }
            _ => {}
        }
        let rendered = render::render(email, id, type_tag, &options)?;
        self.hand_over(rendered, id, &email.subject).await
    }

    /// Hands a rendered message to the configured transport.
    async fn hand_over(
        &self,
        rendered: render::Rendered,
        id: &MessageId,
        subject: &str,
    ) -> Result<Delivery, SendError> {
        #[cfg(feature = "dkim")]
        let rendered = self.sign(rendered, id)?;
        let all = || rendered.recipients.iter().map(|a| a.to_string()).collect();
        #[cfg_attr(not(feature = "providers"), allow(unused_mut))]
        let mut provider_id = None;
        #[cfg_attr(not(feature = "providers"), allow(unused_mut))]
        let mut provider = None;
        let (accepted, refused, file) = match &self.inner.sender {
            Sender::Smtp(smtp) => {
                let done = smtp.send(&rendered).await?;
                (done.accepted, done.refused, None)
            }
            Sender::File(dir) => {
                let path = dev::write_file(dir, id.as_str(), &rendered).await?;
                (all(), Vec::new(), Some(path))
            }
            Sender::Log => {
                dev::log(id.as_str(), subject, &rendered);
                (all(), Vec::new(), None)
            }
            Sender::Capture(captured) => {
                captured.push(id.as_str(), &rendered);
                (all(), Vec::new(), None)
            }
            #[cfg(feature = "providers")]
            Sender::Api(sender) => {
                let id_there = sender.send_mime(&rendered).await?;
                tracing::debug!(
                    message.id = %id, message_id = %rendered.message_id,
                    provider = sender.provider(), provider.id = %id_there,
                    "the provider took the email"
                );
                provider_id = Some(id_there);
                provider = Some(sender.provider());
                (all(), Vec::new(), None)
            }
        };
        Ok(Delivery {
            message_id: rendered.message_id,
            accepted,
            refused,
            redirected: rendered.redirected,
            file,
            provider_id,
            provider,
        })
    }

    /// Puts the DKIM signatures in front of `rendered` when signers are configured: one per
    /// signer that covers its `From` domain.
    #[cfg(feature = "dkim")]
    fn sign(
        &self,
        mut rendered: render::Rendered,
        id: &MessageId,
    ) -> Result<render::Rendered, SendError> {
        let (signers, aligned) =
            crate::dkim::pick(&self.inner.config.dkim, rendered.from_domain.as_deref());
        if signers.is_empty() {
            return Ok(rendered);
        }
        if !aligned {
            tracing::warn!(
                message.id = %id, from_domain = ?rendered.from_domain,
                dkim_domain = signers[0].domain(),
                "no DKIM signer for the sender's domain: signed with the first one, which does \
                 not align for DMARC; add a signer for this domain"
            );
        }
        let mut signed = Vec::with_capacity(rendered.bytes.len() + 1024 * signers.len());
        for signer in &signers {
            let header = signer.signature(&rendered.bytes).map_err(SendError::Sign)?;
            signed.extend_from_slice(header.as_bytes());
        }
        signed.append(&mut rendered.bytes);
        rendered.bytes = signed;
        Ok(rendered)
    }

    /// Sends `email` outside the outbox (a fresh id each call), e.g. from a test or a
    /// one-off tool; queued mail goes through [`handler`](Mailer::handler) instead.
    pub async fn deliver_now(&self, email: &Email) -> Result<Delivery, SendError> {
        let id = MessageId::from_string(ulid::Ulid::generate().to_string());
        self.deliver(email, &id, Email::TYPE).await
    }

    /// The emails a capture mailer ([`MailerConfig::capture`]) took, in order; empty for
    /// the other transports.
    pub fn sent(&self) -> Vec<SentEmail> {
        match &self.inner.sender {
            Sender::Capture(captured) => captured.all(),
            _ => Vec::new(),
        }
    }

    /// The captured emails whose envelope names `address`.
    pub fn sent_to(&self, address: &str) -> Vec<SentEmail> {
        self.sent()
            .into_iter()
            .filter(|e| e.is_to(address))
            .collect()
    }

    /// The last captured email to `address`; panics at the test's line, listing what was
    /// captured (recipients, decoded subject and text), when there is none (a test helper).
    #[track_caller]
    pub fn assert_sent_to(&self, address: &str) -> SentEmail {
        let sent = self.sent();
        match sent.iter().rev().find(|e| e.is_to(address)) {
            Some(e) => e.clone(),
            None => {
                let listing: String = match sent.is_empty() {
                    true => " none".into(),
                    false => sent
                        .iter()
                        .map(|e| format!("\n  {}", e.summary()))
                        .collect(),
                };
                panic!("no email was sent to {address}; sent:{listing}")
            }
        }
    }

    /// Closes the pooled SMTP connections politely (`QUIT`); new sends reconnect.
    pub async fn close(&self) {
        if let Sender::Smtp(smtp) = &self.inner.sender {
            smtp.close().await;
        }
    }
}

/// Logs how a send ended (refused recipients at WARN, the send at DEBUG: the outbox's
/// summary counts sends at INFO) and classifies a
/// failure for the outbox.
fn reported(id: &MessageId, result: Result<Delivery, SendError>) -> Result<Delivery, HandlerError> {
    match result {
        Ok(delivery) => {
            for r in &delivery.refused {
                tracing::warn!(
                    message.id = %id, message_id = %delivery.message_id,
                    recipient = %r.address, code = r.code, reply = %r.reply,
                    "recipient refused; the email went to the others and is not retried for it"
                );
            }
            tracing::debug!(
                message.id = %id, message_id = %delivery.message_id,
                accepted = delivery.accepted.len(), "email sent"
            );
            Ok(delivery)
        }
        Err(e) => Err(e.into_handler_error()),
    }
}

/// The handler of [`Mailer::handler`]: sends each [`Email`] and names the mailer's server
/// as its downstream.
struct MailHandler {
    mailer: Mailer,
}

impl<S: Send + Sync + 'static> Handler<RawEmail, S> for MailHandler {
    fn call(
        &self,
        raw: RawEmail,
        ctx: MessageContext<S>,
    ) -> Pin<Box<dyn Future<Output = Result<(), HandlerError>> + Send + 'static>> {
        let mailer = self.mailer.clone();
        Box::pin(async move { mailer.send_raw(&raw, &ctx).await.map(drop) })
    }

    fn downstream(&self) -> Option<String> {
        self.mailer.downstream()
    }
}

impl<S: Send + Sync + 'static> Handler<Email, S> for MailHandler {
    fn call(
        &self,
        email: Email,
        ctx: MessageContext<S>,
    ) -> Pin<Box<dyn Future<Output = Result<(), HandlerError>> + Send + 'static>> {
        let mailer = self.mailer.clone();
        Box::pin(async move { mailer.send(&email, &ctx).await.map(drop) })
    }

    fn downstream(&self) -> Option<String> {
        self.mailer.downstream()
    }

    /// A list email when the mailer has no [`MailerConfig::unsubscribe`]: the outbox
    /// refuses to start with such emails waiting.
    fn refuses(&self, email: &Email) -> Option<String> {
        email
            .list
            .as_deref()
            .filter(|_| self.mailer.inner.config.unsubscribe.is_none())
            .map(list_without_unsubscribe)
    }

    fn refuses_some(&self) -> bool {
        self.mailer.inner.config.unsubscribe.is_none()
    }
}

impl fmt::Debug for Mailer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mailer")
            .field("config", &format_args!("{}", self.inner.config))
            .finish()
    }
}

/// Suppresses the recipients a provider took the email for but said it will not deliver
/// to (Postmark's inactive addresses: an earlier hard bounce or spam complaint there), as
/// hard bounces: the next email to them is not sent at all.
async fn note_inactive<S>(result: &Result<Delivery, SendError>, ctx: &MessageContext<S>) {
    let Ok(Delivery {
        provider: Some(provider),
        refused,
        ..
    }) = result
    else {
        return;
    };
    for r in refused {
        let entry = match outbox_core::NewSuppression::new(
            &r.address,
            outbox_core::SuppressionScope::All,
            outbox_core::SuppressionReason::HardBounce,
        ) {
            Ok(entry) => entry.source(format!("{provider}: inactive recipient of {}", ctx.id())),
            Err(e) => {
                tracing::warn!(address = %r.address, error = %e, "cannot suppress an inactive recipient");
                continue;
            }
        };
        match ctx.suppress(entry).await {
            Ok(()) => tracing::info!(
                address = %r.address, provider, message.id = %ctx.id(), reply = %r.reply,
                "the provider will not deliver to this address (inactive); suppressed"
            ),
            Err(e) => tracing::warn!(
                address = %r.address, provider, error = %e,
                "the provider will not deliver to this address, but the suppression could \
                 not be written"
            ),
        }
    }
}

/// Records the provider's receipt of a delivered email with its outbox message, so the
/// provider's later events about it (by its id) find the message. The email went out
/// whatever happens here: a failure to record is logged, not returned.
async fn note_receipt<S>(result: &Result<Delivery, SendError>, ctx: &MessageContext<S>) {
    let Ok(Delivery {
        provider: Some(provider),
        provider_id: Some(external),
        ..
    }) = result
    else {
        return;
    };
    if let Err(e) = ctx.record_receipt(provider, external).await {
        tracing::warn!(
            message.id = %ctx.id(), provider, provider.id = %external, error = %e,
            "the email was sent, but its receipt could not be recorded: the provider's \
             events about it will not be tied to the message"
        );
    }
}
