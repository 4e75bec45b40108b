//! The command line's grammar (clap derive): the embedded [`Command`], the standalone
//! binary's [`Standalone`], and the admin commands both share.

use std::time::Duration;

use clap::{ArgGroup, Args, Parser, Subcommand};

/// The outbox's commands inside an application's own binary: add it as a subcommand, so
/// `myapp outbox work` runs the application's handlers and `myapp outbox status` shows
/// its queue.
///
/// ```no_run
/// use clap::{Parser, Subcommand};
/// use outbox::prelude::*;
///
/// #[derive(Parser)]
/// struct Cli {
///     #[command(subcommand)]
///     command: AppCommand,
/// }
///
/// #[derive(Subcommand)]
/// enum AppCommand {
///     /// Serve the web application.
///     Serve,
///     /// Operate the outbox: workers, status, dead letters, pause, rate limits.
///     Outbox(outbox::cli::Command),
/// }
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let pool = outbox::sqlite::connect("sqlite://app.db").await?;
/// let outbox = Outbox::new(SqliteBackend::new(pool)); // .register::<WelcomeMail, _>(…)
/// match Cli::parse().command {
///     AppCommand::Serve => { /* … */ }
///     AppCommand::Outbox(command) => std::process::exit(command.run(&outbox).await.code()),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Args)]
#[command(
    about = "Operate the outbox: workers, status, dead letters, pause, rate limits, groups, live messages",
    after_help = EXIT_CODES
)]
pub struct Command {
    /// Print JSON instead of tables (for scripts).
    #[arg(long, global = true)]
    pub json: bool,
    /// What to do.
    #[command(subcommand)]
    pub action: Action,
}

/// An embedded command: the workers of the application's handlers, or an admin command.
#[derive(Debug, Clone, Subcommand)]
pub enum Action {
    /// Run the workers of every registered type until SIGINT or SIGTERM (the daemon).
    Work,
    /// Deliver every message that is due now, then exit (the cron entry point); the exit
    /// code is 3 if an attempt failed or a message was given up.
    Drain(DrainArgs),
    /// An admin command on the application's database.
    #[command(flatten)]
    Admin(AdminCommand),
}

/// Options of `drain`.
#[derive(Debug, Clone, Args)]
pub struct DrainArgs {
    /// Stop as soon as what is left waits only for rate-limit tokens or its due time:
    /// send what the limits allow now and exit (a minutely cron under a slow limit; runs
    /// that overlap share the limit and never exceed it).
    #[arg(long)]
    pub while_tokens: bool,
}

/// The standalone `outbox` binary: the admin commands on the database at a URL, without
/// any handler code. Its `Debug` output shows the URL without its password.
#[derive(Clone, Parser)]
#[command(
    name = "outbox",
    version,
    about = "Operate a transactional outbox: status, dead letters, pause, rate limits, groups, live messages",
    after_help = STANDALONE_NOTES
)]
pub struct Standalone {
    /// The database: sqlite://PATH, postgres://USER@HOST/DB or mysql://USER@HOST/DB.
    #[arg(
        long,
        env = "DATABASE_URL",
        global = true,
        hide_env_values = true,
        value_name = "URL"
    )]
    pub database_url: Option<String>,
    /// Print JSON instead of tables (for scripts).
    #[arg(long, global = true)]
    pub json: bool,
    /// What to do.
    #[command(subcommand)]
    pub command: AdminCommand,
}

/// What the standalone binary's `--help` adds: where the URL comes from, why there is no
/// `work`, and the exit codes.
const STANDALONE_NOTES: &str = "The URL's scheme chooses the backend: sqlite://app.db, \
    postgres://user@host/db, mysql://user@host/db. Running the workers needs the \
    application's handlers: use `outbox work` / `outbox drain` of the application's own \
    binary (outbox::cli::Command).\n\n\
    Exit codes: 0 done; 1 failed (the message says why and what to do); 2 invalid arguments.";

/// The exit codes, shown under every `--help`.
const EXIT_CODES: &str = "Exit codes: 0 done; 1 failed (the message says why and what to do); \
                          2 invalid arguments; 3 `drain` finished but some attempts failed.";

/// The admin commands: the same in the application's binary and in the standalone one.
#[derive(Debug, Clone, Subcommand)]
pub enum AdminCommand {
    /// Create or upgrade the outbox's tables (safe to run at every deploy).
    Migrate,
    /// Messages per type: pending, scheduled, running, retrying, paused, dead, oldest due
    /// age, and whether the type is paused.
    Status(StatusArgs),
    /// List, show, requeue and purge dead letters (messages given up for good).
    #[command(subcommand)]
    Dead(DeadCommand),
    /// Stop starting messages of a type in every process (they stay queued).
    Pause(PauseArgs),
    /// Let messages of a paused type start again.
    Resume(ResumeArgs),
    /// List the rate buckets, show one, or set its rate.
    RateLimit(RateLimitArgs),
    /// Every group (campaign) with its progress: messages per state, delivered, dead,
    /// cancelled, rate and ETA.
    Groups,
    /// Show, pause, resume or cancel one group (campaign).
    #[command(subcommand)]
    Group(GroupCommand),
    /// List, show, retry now or cancel the messages in the queue (pending, scheduled,
    /// running, retrying, paused).
    #[command(subcommand)]
    Messages(MessagesCommand),
    /// List, add and remove suppressed addresses (no mail is sent to them), and see the
    /// messages they stopped.
    #[command(subcommand)]
    Suppressions(SuppressionsCommand),
    /// Per-destination traffic shaping: the receiving sites (limits, slowdowns,
    /// suspensions) and the rules that react to their replies.
    #[command(subcommand)]
    Shaping(ShapingCommand),
    /// Outgoing webhook endpoints: list them (URL, state, failing since, secrets, order),
    /// disable or enable one, rotate its signing secret, retire its old secrets, replay
    /// delivered events, deliver in order.
    #[cfg(feature = "webhook")]
    #[command(subcommand)]
    Webhooks(WebhooksCommand),
    /// The relay of events to a message broker (feature `publish`): what waits, how many
    /// were published per minute, failed attempts and dead letters, the breaker, and the
    /// order keys a failing event holds.
    #[cfg(feature = "publish")]
    Relays(RelaysArgs),
}

/// `relays`.
#[cfg(feature = "publish")]
#[derive(Debug, Clone, Args)]
pub struct RelaysArgs {
    /// How far back the publish figures go (whole minutes; e.g. 10m, 1h).
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
    pub window: Duration,
}

/// `webhooks …` (feature `webhook`).
#[cfg(feature = "webhook")]
#[derive(Debug, Clone, Subcommand)]
pub enum WebhooksCommand {
    /// Every webhook endpoint: name, URL, enabled or disabled (since when, why), failing
    /// since, number of signing secrets, whether its events go in order.
    List,
    /// Stop deliveries to an endpoint: its messages, queued and new, wait (parked in its
    /// group `webhook:NAME`, not dead letters) until it is enabled.
    Disable(WebhookDisableArgs),
    /// Let deliveries to a disabled endpoint go out again (its parked messages first); its
    /// failure clock starts over.
    Enable(WebhookNameArgs),
    /// Add a new signing secret to an endpoint and print what the receiver verifies with
    /// (once: `whsec_…` or `whpk_…`); every key signs each delivery until the old ones are
    /// retired.
    Rotate(WebhookNameArgs),
    /// Remove every signing secret of an endpoint but the newest (after the receiver
    /// moved to it).
    RetireOldSecrets(WebhookNameArgs),
    /// Send again the events delivered to an endpoint (all, or those delivered within
    /// --since / --until): only those kept for the retention window (`Retention::keep_for`)
    /// can be; they are queued again in place, with the same `webhook-id`.
    Replay(WebhookReplayArgs),
    /// Send one webhook event again by its message id: a delivered one kept for the
    /// retention window is queued again, a dead letter is requeued.
    ReplayMessage(WebhookReplayMessageArgs),
    /// Deliver an endpoint's events one at a time, in enqueue order (`on`; a failing one
    /// holds the next), or as fast as its host's limits allow (`off`). Applies to events
    /// enqueued from then on.
    Ordered(WebhookOrderedArgs),
}

/// `webhooks replay`.
#[cfg(feature = "webhook")]
#[derive(Debug, Clone, Args)]
pub struct WebhookReplayArgs {
    /// The endpoint's name (`webhooks list` shows them).
    pub name: String,
    /// Only events delivered within this long ago (`2h`: in the last two hours).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub since: Option<Duration>,
    /// Only events delivered longer ago than this (`30m`: not the last half hour's).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub until: Option<Duration>,
}

/// `webhooks replay-message`.
#[cfg(feature = "webhook")]
#[derive(Debug, Clone, Args)]
pub struct WebhookReplayMessageArgs {
    /// The message id (the event's `webhook-id`; `dead list` shows those of dead letters).
    pub id: String,
}

/// `webhooks ordered`.
#[cfg(feature = "webhook")]
#[derive(Debug, Clone, Args)]
pub struct WebhookOrderedArgs {
    /// The endpoint's name (`webhooks list` shows them).
    pub name: String,
    /// Whether its events go in order.
    #[arg(value_enum)]
    pub setting: OnOff,
}

/// `webhooks ordered`'s setting.
#[cfg(feature = "webhook")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnOff {
    /// One event at a time, in enqueue order (a failing one holds the next).
    On,
    /// As fast as the host's limits allow.
    Off,
}

/// `webhooks enable`, `rotate` and `retire-old-secrets`.
#[cfg(feature = "webhook")]
#[derive(Debug, Clone, Args)]
pub struct WebhookNameArgs {
    /// The endpoint's name (`webhooks list` shows them).
    pub name: String,
}

/// `webhooks disable`.
#[cfg(feature = "webhook")]
#[derive(Debug, Clone, Args)]
pub struct WebhookDisableArgs {
    /// The endpoint's name (`webhooks list` shows them).
    pub name: String,
    /// Why (shown by `webhooks list` and on the endpoint's paused group).
    #[arg(long, default_value = "disabled from the command line")]
    pub reason: String,
}

/// `shaping …`.
#[derive(Debug, Clone, Subcommand)]
pub enum ShapingCommand {
    /// Every site with a row: limits, messages in flight, and a rule's slowdown or
    /// suspension with its reason.
    Sites,
    /// End a site's slowdown and suspension (the receiver takes mail again).
    Resume(ShapingSiteArgs),
    /// The stored rules: pattern, site, action, threshold.
    Rules,
    /// Add a rule, or replace the rule of the same name (every running outbox uses it
    /// within 5 s).
    AddRule(ShapingAddRuleArgs),
    /// Remove a rule.
    RemoveRule(ShapingRuleNameArgs),
}

/// `shaping resume`.
#[derive(Debug, Clone, Args)]
pub struct ShapingSiteArgs {
    /// The site (`google`, a domain, `mx:…`).
    pub site: String,
}

/// `shaping remove-rule`.
#[derive(Debug, Clone, Args)]
pub struct ShapingRuleNameArgs {
    /// The rule's name.
    pub name: String,
}

/// `shaping add-rule`.
#[derive(Debug, Clone, Args)]
pub struct ShapingAddRuleArgs {
    /// The rule's name.
    pub name: String,
    /// A regular expression searched in the failure text (it holds the server's reply:
    /// `421 4.7.28 ...`).
    #[arg(long)]
    pub pattern: String,
    /// Slow the site to this rate (`1/s`, `10/min`, `100/h`) for `--for`.
    #[arg(long, value_parser = parse_rate, conflicts_with_all = ["suspend", "bounce"])]
    pub slow: Option<f64>,
    /// Suspend the site for `--for`.
    #[arg(long, conflicts_with = "bounce")]
    pub suspend: bool,
    /// Give the message up (dead letter) instead of trying again.
    #[arg(long)]
    pub bounce: bool,
    /// How long a slowdown or suspension lasts (`90m`, `1h`).
    #[arg(long = "for", value_parser = parse_duration, default_value = "1h")]
    pub duration: Duration,
    /// Only for this site (default: every site).
    #[arg(long)]
    pub site: Option<String>,
    /// Act at this many matches within `--window`.
    #[arg(long, default_value_t = 1)]
    pub threshold: u32,
    /// The window the matches are counted in.
    #[arg(long, value_parser = parse_duration, default_value = "1h")]
    pub window: Duration,
}

/// `suppressions …`.
#[derive(Debug, Clone, Subcommand)]
pub enum SuppressionsCommand {
    /// The entries, newest first: address, scope, reason, source, since, expiry.
    List(SuppressionsListArgs),
    /// Suppress an address (or `@domain`) in a scope; replaces its entry in that scope.
    Add(SuppressionsAddArgs),
    /// Remove an address's entry in a scope (messages it stopped stay suppressed).
    Remove(SuppressionsRemoveArgs),
    /// The newest messages kept as suppressed (never sent), with what stopped each.
    Stopped(SuppressionsStoppedArgs),
}

/// `suppressions list`.
#[derive(Debug, Clone, Args)]
pub struct SuppressionsListArgs {
    /// Only the entries of this address (and of its domain), or of this `@domain`.
    #[arg(long)]
    pub address: Option<String>,
    /// Only this reason: hard_bounce, complaint, unsubscribe or manual.
    #[arg(long, value_parser = parse_reason)]
    pub reason: Option<crate::SuppressionReason>,
    /// At most this many (up to 1000).
    #[arg(long, default_value_t = 50)]
    pub limit: u32,
    /// Skip this many first.
    #[arg(long, default_value_t = 0)]
    pub offset: u64,
}

/// `suppressions add`.
#[derive(Debug, Clone, Args)]
pub struct SuppressionsAddArgs {
    /// The address (`user@example.com`) or a whole domain (`@example.com`).
    pub address: String,
    /// Which mail it stops: `*` (all), `list:NAME`, `type:TAG` or `group:NAME`.
    #[arg(long, default_value = "*", value_parser = parse_scope)]
    pub scope: crate::SuppressionScope,
    /// Why: hard_bounce, complaint, unsubscribe or manual.
    #[arg(long, default_value = "manual", value_parser = parse_reason)]
    pub reason: crate::SuppressionReason,
    /// Who says so (shown in the list).
    #[arg(long, default_value = "command line")]
    pub source: String,
    /// End the suppression after this long (`30d`); without it, it lasts.
    #[arg(long, value_parser = parse_duration)]
    pub expires_in: Option<Duration>,
}

/// `suppressions remove`.
#[derive(Debug, Clone, Args)]
pub struct SuppressionsRemoveArgs {
    /// The address or `@domain`.
    pub address: String,
    /// The scope of the entry to remove.
    #[arg(long, default_value = "*", value_parser = parse_scope)]
    pub scope: crate::SuppressionScope,
}

/// `suppressions stopped`.
#[derive(Debug, Clone, Args)]
pub struct SuppressionsStoppedArgs {
    /// At most this many (up to 1000).
    #[arg(long, default_value_t = 50)]
    pub limit: u32,
}

/// `group …`.
#[derive(Debug, Clone, Subcommand)]
pub enum GroupCommand {
    /// One group's progress: counts per state, delivered, dead, cancelled, rate, ETA,
    /// pause and completion hook.
    Show(GroupNameArgs),
    /// Stop starting the group's messages in every process (they stay queued).
    Pause(GroupPauseArgs),
    /// Let a paused group's messages start again.
    Resume(GroupNameArgs),
    /// Delete the group's queued messages (running ones finish); asks for confirmation.
    Cancel(GroupCancelArgs),
}

/// `group show` and `group resume`.
#[derive(Debug, Clone, Args)]
pub struct GroupNameArgs {
    /// The group's name (`groups` lists them).
    pub name: String,
}

/// `group pause`.
#[derive(Debug, Clone, Args)]
pub struct GroupPauseArgs {
    /// The group's name.
    pub name: String,
    /// Why (shown by `groups` and `group show`).
    #[arg(long, default_value = "paused from the command line")]
    pub reason: String,
}

/// `group cancel`.
#[derive(Debug, Clone, Args)]
pub struct GroupCancelArgs {
    /// The group's name.
    pub name: String,
    /// Do not ask for confirmation.
    #[arg(long, short = 'y')]
    pub yes: bool,
}

/// `messages …`.
#[derive(Debug, Clone, Subcommand)]
pub enum MessagesCommand {
    /// A page of queued messages by id, filtered; prints the cursor of the next page.
    List(MessagesListArgs),
    /// One queued message: state, attempts, due time, lease, attempt log and payload.
    Show(MessageShowArgs),
    /// Make queued messages due now, keeping their attempts (one by id, or every match
    /// of the filters after confirmation).
    Retry(MessagesActionArgs),
    /// Delete queued messages; running ones finish (one by id, or every match of the
    /// filters after confirmation).
    Cancel(MessagesActionArgs),
    /// The order keys of a type whose later messages wait behind a dead letter or a
    /// failing message, with that message, its error and how many wait.
    Held(MessagesHeldArgs),
}

/// `messages held`.
#[derive(Debug, Clone, Args)]
pub struct MessagesHeldArgs {
    /// The message type (e.g. `outbox.publish`).
    #[arg(value_name = "TYPE")]
    pub type_tag: String,
}

/// The filters of `messages list|retry|cancel`; every one given must match.
#[derive(Debug, Clone, Default, Args)]
pub struct MessageFilterArgs {
    /// Only messages of this type.
    #[arg(long = "type", value_name = "TYPE")]
    pub type_tag: Option<String>,
    /// Only messages of this group.
    #[arg(long, value_name = "GROUP")]
    pub group: Option<String>,
    /// Only messages in this state: pending, scheduled, running, retrying or paused.
    #[arg(long, value_name = "STATE", value_parser = parse_state)]
    pub state: Option<crate::LiveState>,
    /// Only messages whose idempotency key starts with this text.
    #[arg(long, value_name = "PREFIX")]
    pub key_prefix: Option<String>,
    /// Only messages whose last error contains this text.
    #[arg(long = "error", value_name = "TEXT")]
    pub error: Option<String>,
    /// Only messages to this address (the recipient a type declares, e.g. an email's;
    /// case does not matter).
    #[arg(long, value_name = "ADDRESS")]
    pub recipient: Option<String>,
}

impl MessageFilterArgs {
    /// True when no filter is given.
    pub fn is_empty(&self) -> bool {
        self.type_tag.is_none()
            && self.group.is_none()
            && self.state.is_none()
            && self.key_prefix.is_none()
            && self.error.is_none()
            && self.recipient.is_none()
    }
}

/// `messages list`.
#[derive(Debug, Clone, Args)]
pub struct MessagesListArgs {
    /// Which messages.
    #[command(flatten)]
    pub filter: MessageFilterArgs,
    /// Start after this message id (the cursor the previous page printed).
    #[arg(long, value_name = "ID")]
    pub after: Option<String>,
    /// At most this many.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub limit: u32,
}

/// `messages show`.
#[derive(Debug, Clone, Args)]
pub struct MessageShowArgs {
    /// The message id (`messages list` shows them).
    pub id: String,
}

/// `messages retry` and `messages cancel`: one message by id, or every match of the
/// filters (`--all` for every queued message).
#[derive(Debug, Clone, Args)]
#[command(group(
    ArgGroup::new("which")
        .required(true)
        .multiple(true)
        .args(["id", "type_tag", "group", "state", "key_prefix", "error", "recipient", "all"])
))]
pub struct MessagesActionArgs {
    /// The id of one message.
    #[arg(conflicts_with_all = ["type_tag", "group", "state", "key_prefix", "error", "recipient", "all"])]
    pub id: Option<String>,
    /// Which messages (asks for confirmation).
    #[command(flatten)]
    pub filter: MessageFilterArgs,
    /// Every queued message (asks for confirmation).
    #[arg(long)]
    pub all: bool,
    /// Do not ask for confirmation.
    #[arg(long, short = 'y')]
    pub yes: bool,
}

/// `status`.
#[derive(Debug, Clone, Args)]
pub struct StatusArgs {
    /// Refresh until interrupted (with --json: one JSON document per line).
    #[arg(long)]
    pub watch: bool,
    /// How often --watch refreshes (e.g. 500ms, 2s, 1m).
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = parse_duration)]
    pub interval: Duration,
}

/// `dead …`.
#[derive(Debug, Clone, Subcommand)]
pub enum DeadCommand {
    /// The newest dead letters, with their last error.
    List(DeadListArgs),
    /// One dead letter: its payload (pretty-printed), last error and attempts.
    Show(DeadShowArgs),
    /// Move dead letters back to the queue, due now with their attempts reset.
    Requeue(DeadRequeueArgs),
    /// Delete dead letters for good.
    Purge(DeadPurgeArgs),
}

/// `dead list`.
#[derive(Debug, Clone, Args)]
pub struct DeadListArgs {
    /// Only dead letters of this type.
    #[arg(long = "type", value_name = "TYPE")]
    pub type_tag: Option<String>,
    /// Only dead letters to this address (the recipient their type declares; case does
    /// not matter).
    #[arg(long, value_name = "ADDRESS")]
    pub recipient: Option<String>,
    /// At most this many (newest first).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub limit: u32,
}

/// `dead show`.
#[derive(Debug, Clone, Args)]
pub struct DeadShowArgs {
    /// The message id (`dead list` shows them).
    pub id: String,
}

/// `dead requeue`.
#[derive(Debug, Clone, Args)]
#[command(group(ArgGroup::new("which").required(true).args(["id", "type_tag", "all"])))]
pub struct DeadRequeueArgs {
    /// The message id of one dead letter.
    pub id: Option<String>,
    /// Every dead letter of this type (asks for confirmation).
    #[arg(long = "type", value_name = "TYPE")]
    pub type_tag: Option<String>,
    /// Every dead letter (asks for confirmation).
    #[arg(long)]
    pub all: bool,
    /// Do not ask for confirmation.
    #[arg(long, short = 'y')]
    pub yes: bool,
}

/// `dead purge`.
#[derive(Debug, Clone, Args)]
#[command(group(ArgGroup::new("which").required(true).args(["id", "older_than"])))]
pub struct DeadPurgeArgs {
    /// The message id of one dead letter.
    pub id: Option<String>,
    /// Every dead letter given up longer ago than this, e.g. 30d, 12h (asks for
    /// confirmation).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub older_than: Option<Duration>,
    /// Do not ask for confirmation.
    #[arg(long, short = 'y')]
    pub yes: bool,
}

/// `pause`.
#[derive(Debug, Clone, Args)]
pub struct PauseArgs {
    /// The message type tag.
    #[arg(value_name = "TYPE")]
    pub type_tag: String,
    /// Why (shown by `status`).
    #[arg(long, default_value = "paused from the command line")]
    pub reason: String,
}

/// `resume`.
#[derive(Debug, Clone, Args)]
pub struct ResumeArgs {
    /// The message type tag.
    #[arg(value_name = "TYPE")]
    pub type_tag: String,
}

/// `rate-limit`: no name lists the buckets, a name shows one, a rate sets it.
#[derive(Debug, Clone, Args)]
#[command(group(ArgGroup::new("rate").args(["per_second", "per_minute", "per_hour"])))]
pub struct RateLimitArgs {
    /// The bucket's name.
    pub name: Option<String>,
    /// Set the rate to N messages per second.
    #[arg(long, value_name = "N", requires = "name")]
    pub per_second: Option<f64>,
    /// Set the rate to N messages per minute.
    #[arg(long, value_name = "N", requires = "name")]
    pub per_minute: Option<f64>,
    /// Set the rate to N messages per hour.
    #[arg(long, value_name = "N", requires = "name")]
    pub per_hour: Option<f64>,
    /// Set the burst: messages that may start at once after a quiet spell (default: the
    /// bucket's current burst, or 1 for a new bucket).
    #[arg(long, value_name = "B", requires = "name", value_parser = clap::value_parser!(u32).range(1..))]
    pub burst: Option<u32>,
    /// Create the bucket if it does not exist (without it, a name no bucket has is refused,
    /// so a typo cannot add an unused bucket while the real one keeps its rate).
    #[arg(long, requires = "rate")]
    pub create: bool,
}

/// A live message's state, as `--state` names it.
fn parse_state(s: &str) -> Result<crate::LiveState, String> {
    crate::LiveState::parse(s).ok_or_else(|| {
        format!("unknown state `{s}`; write one of pending, scheduled, running, retrying, paused")
    })
}

fn parse_scope(s: &str) -> Result<crate::SuppressionScope, String> {
    s.parse()
}

fn parse_reason(s: &str) -> Result<crate::SuppressionReason, String> {
    s.parse()
}

/// A duration such as `30d`, `12h`, `500ms`.
/// `N/s`, `N/min` or `N/h` as messages per second.
fn parse_rate(s: &str) -> Result<f64, String> {
    let (n, per) = s
        .split_once('/')
        .ok_or_else(|| format!("rate {s:?} must read N/s, N/min or N/h"))?;
    let n: f64 = n
        .trim()
        .parse()
        .map_err(|_| format!("rate {s:?}: {n:?} is not a number"))?;
    let secs = match per.trim() {
        "s" | "sec" | "second" => 1.0,
        "m" | "min" | "minute" => 60.0,
        "h" | "hour" => 3600.0,
        other => return Err(format!("rate {s:?}: unit {other:?} is not s, min or h")),
    };
    if !(n.is_finite() && n > 0.0) {
        return Err(format!("rate {s:?} must be positive"));
    }
    Ok(n / secs)
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s)
        .map_err(|e| format!("{e}; write a duration such as 30d, 12h, 15m, 2s or 500ms"))
}

impl std::fmt::Debug for Standalone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Standalone")
            .field(
                "database_url",
                &self.database_url.as_deref().map(crate::backend::redact_url),
            )
            .field("json", &self.json)
            .field("command", &self.command)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::Standalone;

    #[test]
    fn debug_output_hides_the_password() {
        let args = Standalone::parse_from([
            "outbox",
            "--database-url",
            "postgres://u:se/cret@127.0.0.1:5499/db",
            "status",
        ]);
        let shown = format!("{args:?}");
        assert!(!shown.contains("se/cret"), "{shown}");
        assert!(
            shown.contains("postgres://u:***@127.0.0.1:5499/db"),
            "{shown}"
        );
    }
}
