//! The `outbox` binary's cases, written once and run per backend.

use std::{process::Stdio, time::Duration};

use outbox::{prelude::*, DeadLetterFilter, MessageId};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::harness::{self, Harness};

/// A mail the seed rejects, so it lands in the dead letters.
#[derive(Debug, Clone, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "cli.mail", max_attempts = 1)]
pub struct Mail {
    pub n: i64,
    pub to: String,
}

/// A type without a handler: its messages stay queued (due or scheduled).
#[derive(Debug, Clone, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "cli.later")]
pub struct Later {
    pub n: i64,
}

/// A mail whose receiving server answers with terminal escape sequences.
#[derive(Debug, Clone, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "cli.hostile", max_attempts = 2)]
pub struct Hostile {
    pub n: i64,
}

/// An SMTP reply that would recolour the terminal, set its title, clear the screen (a C1
/// CSI) and overwrite the line (a carriage return) if printed raw.
const HOSTILE_REPLY: &str =
    "550 5.1.1 \u{1b}[31mred\u{1b}]0;owned\u{7} \u{9b}2J\rfake: delivered \u{202e}txt";

/// The characters that must never reach the terminal from stored text.
fn raw_controls(text: &str) -> Vec<char> {
    text.chars()
        .filter(|c| (c.is_control() && *c != '\n') || *c == '\u{202e}')
        .collect()
}

/// `dead show` and `messages show` print stored SMTP replies with their control characters
/// escaped (`\u{1b}`), never raw; `--json` keeps the text exact.
pub async fn stored_replies_are_printed_with_control_characters_escaped<H: Harness>() {
    let h = H::new().await;
    let url = h.url();
    let mut tx = h.pool().begin().await.unwrap();
    let _ = Hostile { n: 1 }.enqueue(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();
    let outbox_of = || {
        Outbox::new(h.backend()).register::<Hostile, _>(
            |_: Hostile, ctx: MessageContext| async move {
                if ctx.attempt() < 2 {
                    Err::<(), _>(HandlerError::retry_after(
                        Duration::from_secs(3600),
                        HOSTILE_REPLY,
                    ))
                } else {
                    Err(HandlerError::permanent(HOSTILE_REPLY))
                }
            },
        )
    };
    // First attempt: retrying, its last error stored.
    outbox_of().drain().await.unwrap();
    let live = outbox(&url, &["messages", "list", "--json"])
        .succeeded()
        .json();
    let id = live["messages"][0]["id"]
        .as_str()
        .expect("a live message")
        .to_owned();
    let shown = outbox(&url, &["messages", "show", &id])
        .succeeded()
        .stdout
        .clone();
    assert!(
        raw_controls(&shown).is_empty(),
        "raw controls {:?} in {shown}",
        raw_controls(&shown)
    );
    assert!(shown.contains("\\u{1b}[31mred"), "{shown}");
    assert!(shown.contains("\\u{9b}2J\\u{d}fake"), "{shown}");
    // Second attempt: a dead letter.
    outbox(&url, &["messages", "retry", &id]).succeeded();
    outbox_of().drain().await.unwrap();
    let dead = outbox(&url, &["dead", "list", "--json"]).succeeded().json();
    let id = dead["dead_letters"][0]["id"]
        .as_str()
        .expect("a dead letter")
        .to_owned();
    let shown = outbox(&url, &["dead", "show", &id])
        .succeeded()
        .stdout
        .clone();
    assert!(
        raw_controls(&shown).is_empty(),
        "raw controls {:?} in {shown}",
        raw_controls(&shown)
    );
    assert!(shown.contains("\\u{1b}]0;owned\\u{7}"), "{shown}");
    let exact = outbox(&url, &["dead", "show", &id, "--json"])
        .succeeded()
        .json();
    assert_eq!(
        exact["last_error"]
            .as_str()
            .map(|e| e.contains(HOSTILE_REPLY)),
        Some(true),
        "{exact:#}"
    );
}

/// What one run of the binary did.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Asserts exit code 0 and nothing on stderr.
    #[track_caller]
    pub fn succeeded(&self) -> &Self {
        assert_eq!(self.code, 0, "expected success: {self:#?}");
        assert!(self.stderr.is_empty(), "expected no stderr: {self:#?}");
        self
    }

    /// Asserts exit code 1 with `text` in the error.
    #[track_caller]
    pub fn failed_with(&self, text: &str) -> &Self {
        assert_eq!(self.code, 1, "expected failure: {self:#?}");
        assert!(
            self.stdout.is_empty(),
            "a failure prints nothing on stdout: {self:#?}"
        );
        assert!(
            self.stderr.starts_with("error: ") && self.stderr.contains(text),
            "expected `{text}` in the error: {self:#?}"
        );
        self
    }

    /// Stdout as JSON.
    #[track_caller]
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:#?}"))
    }
}

/// Runs `outbox --database-url URL ARGS…` with no standard input.
pub fn outbox(url: &str, args: &[&str]) -> Run {
    let mut all = vec!["--database-url", url];
    all.extend_from_slice(args);
    outbox_env(None, &all)
}

/// Runs `outbox ARGS…` with `DATABASE_URL` set to `url` (or unset) and no standard input.
pub fn outbox_env(url: Option<&str>, args: &[&str]) -> Run {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_outbox"));
    c.args(args)
        .env_remove("DATABASE_URL")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(url) = url {
        c.env("DATABASE_URL", url);
    }
    let out = c.output().expect("run the outbox binary");
    Run {
        code: out.status.code().expect("exited, not killed"),
        stdout: String::from_utf8(out.stdout).expect("UTF-8 stdout"),
        stderr: String::from_utf8(out.stderr).expect("UTF-8 stderr"),
    }
}

/// The PostgreSQL server the tests use.
#[cfg(feature = "postgres")]
pub fn postgres_admin_url() -> String {
    harness::server_url("OUTBOX_TEST_POSTGRES_URL", outbox::postgres::DEFAULT_URL)
}

/// The MariaDB/MySQL server the tests use.
#[cfg(feature = "mysql")]
pub fn mysql_admin_url() -> String {
    harness::server_url("OUTBOX_TEST_MYSQL_URL", outbox::mysql::DEFAULT_URL)
}

/// `url` with its user info replaced by `user_info`.
#[cfg(feature = "mysql")]
pub fn with_user_info(url: &str, user_info: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a URL with a scheme");
    let end = rest.find('/').unwrap_or(rest.len());
    let host_start = rest[..end].rfind('@').map_or(0, |i| i + 1);
    format!("{scheme}://{user_info}@{}", &rest[host_start..])
}

/// Three rejected mails in the dead letters (max one attempt, a permanent error), one due
/// and two scheduled `cli.later` messages; returns the dead letters' ids.
async fn seed<H: Harness>(h: &H) -> Vec<String> {
    let mut tx = h.pool().begin().await.unwrap();
    for n in 1..=3 {
        let _ = Mail {
            n,
            to: format!("user{n}@example.com"),
        }
        .enqueue(&mut *tx)
        .await
        .unwrap();
    }
    let _ = Later { n: 1 }.enqueue(&mut *tx).await.unwrap();
    for n in 2..=3 {
        let _ = Later { n }
            .enqueue_with(
                &mut *tx,
                EnqueueOptions::new().after(Duration::from_secs(3600)),
            )
            .await
            .unwrap();
    }
    tx.commit().await.unwrap();
    reject_mail(h).await;
    let dead = outbox::Admin::new(h.backend())
        .dead_letters()
        .list(&DeadLetterFilter::all(), 0, 100)
        .await
        .unwrap();
    assert_eq!(dead.len(), 3, "the seed's mails are dead letters");
    dead.iter().map(|d| d.id.to_string()).collect()
}

/// Drains the mails with a handler that rejects them for good.
async fn reject_mail<H: Harness>(h: &H) {
    let report = Outbox::new(h.backend())
        .register::<Mail, _>(|_: Mail, _: MessageContext| async {
            Err::<(), _>(HandlerError::permanent("550 5.1.1 mailbox unknown"))
        })
        .drain()
        .await
        .unwrap();
    assert!(report.counts.given_up > 0, "{report:?}");
}

/// Dead letters on the database now.
async fn dead_count<H: Harness>(h: &H) -> u64 {
    outbox::Admin::new(h.backend())
        .dead_letters()
        .count(&DeadLetterFilter::all())
        .await
        .unwrap()
}

/// The status entry of `type_tag` in `status --json` output.
#[track_caller]
fn type_status(status: &Value, type_tag: &str) -> Value {
    status["types"]
        .as_array()
        .expect("a types array")
        .iter()
        .find(|t| t["type"] == type_tag)
        .unwrap_or_else(|| panic!("no `{type_tag}` in {status:#}"))
        .clone()
}

/// `status` lists each circuit breaker under the types: an open one with its reason and
/// its next probe (and in `--json`), a closed one as closed.
pub async fn status_shows_the_circuit_breakers<H: Harness>() {
    use outbox::store::{BreakerStore, Now};
    let h = H::new().await;
    let url = h.url();
    let b = h.backend();
    b.open_breaker(
        "smtp:relay.example:587",
        "connection refused",
        Now::Database,
        Duration::from_secs(60),
    )
    .await
    .unwrap();
    b.open_breaker(
        "billing-api",
        "503 Service Unavailable",
        Now::Database,
        Duration::from_secs(1),
    )
    .await
    .unwrap();
    assert!(b.close_breaker("billing-api", Now::Database).await.unwrap());
    let status = outbox(&url, &["status", "--json"]).succeeded().json();
    let breakers = status["breakers"].as_array().expect("a breakers list");
    assert_eq!(breakers.len(), 2, "{status:#}");
    let relay = &breakers[1];
    assert_eq!(relay["name"], "smtp:relay.example:587", "{status:#}");
    assert_eq!(relay["open"], true, "{status:#}");
    assert_eq!(relay["reason"], "connection refused", "{status:#}");
    let next = relay["next_probe_in_secs"].as_f64().unwrap();
    assert!(next > 50.0 && next <= 60.0, "{status:#}");
    assert_eq!(breakers[0]["open"], false, "{status:#}");
    let human = outbox(&url, &["status"]).succeeded().stdout.clone();
    let row = human
        .lines()
        .find(|l| l.contains("smtp:relay.example:587"))
        .unwrap_or_else(|| panic!("a row for the open breaker: {human}"));
    assert!(
        row.contains("OPEN for") && row.contains("connection refused") && row.contains("in "),
        "{row}"
    );
    let closed = human.lines().find(|l| l.contains("billing-api")).unwrap();
    assert!(closed.contains("closed"), "{closed}");
    assert!(human.contains("CIRCUIT BREAKER"), "{human}");
}

pub async fn status_and_dead_letters<H: Harness>() {
    let h = H::new().await;
    let url = h.url();
    let ids = seed(&h).await;
    outbox(&url, &["migrate"])
        .succeeded()
        .stdout
        .contains("up to date")
        .then_some(())
        .expect("migrate reports the tables are up to date");

    let status = outbox(&url, &["status", "--json"]).succeeded().json();
    let mail = type_status(&status, "cli.mail");
    assert_eq!(
        (mail["dead"].as_u64(), mail["pending"].as_u64()),
        (Some(3), Some(0)),
        "{status:#}"
    );
    let later = type_status(&status, "cli.later");
    assert_eq!(later["pending"], 1, "{status:#}");
    assert_eq!(later["scheduled"], 2, "{status:#}");
    assert!(
        later["oldest_due_age_secs"].is_u64(),
        "one is due: {status:#}"
    );
    assert!(
        mail["oldest_due_age_secs"].is_null(),
        "none is due: {status:#}"
    );

    let human = outbox(&url, &["status"]).succeeded().stdout.clone();
    let header = human.lines().next().unwrap_or_default();
    for column in [
        "TYPE",
        "PENDING",
        "SCHEDULED",
        "RUNNING",
        "RETRYING",
        "DEAD",
        "OLDEST DUE",
        "PAUSED",
    ] {
        assert!(header.contains(column), "{column} missing: {human}");
    }
    let later_row = human
        .lines()
        .find(|l| l.contains("cli.later"))
        .expect("a cli.later row");
    let cells: Vec<&str> = later_row.split_whitespace().collect();
    assert_eq!(
        &cells[..7],
        ["cli.later", "1", "2", "0", "0", "0", "0"],
        "{human}"
    );

    let list = outbox(&url, &["dead", "list", "--json"]).succeeded().json();
    assert_eq!(list["total"], 3, "{list:#}");
    let letters = list["dead_letters"].as_array().unwrap();
    assert_eq!(letters.len(), 3);
    assert!(letters
        .iter()
        .all(|d| d["last_error"].as_str().unwrap().contains("550 5.1.1")
            && d["type"] == "cli.mail"
            && d["attempts"] == 1
            && d["payload"]["to"]
                .as_str()
                .unwrap()
                .ends_with("@example.com")));

    let page = outbox(
        &url,
        &["dead", "list", "--type", "cli.mail", "--limit", "2"],
    )
    .succeeded()
    .stdout
    .clone();
    assert!(page.contains("ID") && page.contains("LAST ERROR"), "{page}");
    assert_eq!(
        page.lines().filter(|l| l.contains("550 5.1.1")).count(),
        2,
        "{page}"
    );
    assert!(
        page.contains("showing the newest 2 of 3; --limit shows more"),
        "{page}"
    );

    let shown = outbox(&url, &["dead", "show", &ids[0]])
        .succeeded()
        .stdout
        .clone();
    assert!(
        shown.contains(&format!("id:          {}", ids[0])),
        "{shown}"
    );
    assert!(shown.contains("type:        cli.mail"), "{shown}");
    assert!(shown.contains("attempts:    1 of 1"), "{shown}");
    assert!(shown.contains("last error:\n  "), "{shown}");
    assert!(shown.contains("550 5.1.1 mailbox unknown"), "{shown}");
    assert!(
        shown.contains("attempts' errors:\n  #1 ")
            && shown.contains("Z: 550 5.1.1 mailbox unknown"),
        "the attempt log: {shown}"
    );
    assert!(
        shown.contains("payload:\n  {\n    \""),
        "pretty-printed: {shown}"
    );
    assert!(shown.contains("@example.com\""), "{shown}");
    let shown = outbox(&url, &["dead", "show", &ids[0], "--json"])
        .succeeded()
        .json();
    assert_eq!(shown["id"], ids[0].as_str());
    assert!(shown["payload"]["n"].is_i64(), "{shown:#}");
    assert_eq!(shown["attempt_log"][0]["attempt"], 1, "{shown:#}");
    assert!(shown["attempt_log"][0]["error"]
        .as_str()
        .unwrap()
        .contains("550 5.1.1 mailbox unknown"));

    let requeued = outbox(&url, &["dead", "requeue", &ids[0]])
        .succeeded()
        .stdout
        .clone();
    assert_eq!(requeued.trim(), "requeued 1 dead letter(s)");
    let status = outbox(&url, &["status", "--json"]).succeeded().json();
    let mail = type_status(&status, "cli.mail");
    assert_eq!(
        (mail["dead"].as_u64(), mail["pending"].as_u64()),
        (Some(2), Some(1)),
        "{status:#}"
    );
    outbox(&url, &["dead", "show", &ids[0]]).failed_with("there is no dead letter with id");
}

pub async fn bulk_requeue_and_purge_need_confirmation<H: Harness>() {
    let h = H::new().await;
    let url = h.url();
    let ids = seed(&h).await;

    for args in [
        &["dead", "requeue", "--type", "cli.mail"][..],
        &["dead", "requeue", "--all"],
    ] {
        outbox(&url, args)
            .failed_with("refusing to requeue 3 dead letter(s)")
            .failed_with("standard input is not a terminal; pass --yes to confirm");
    }
    assert_eq!(dead_count(&h).await, 3, "nothing requeued without --yes");
    let r = outbox(
        &url,
        &["dead", "requeue", "--type", "cli.mail", "--yes", "--json"],
    )
    .succeeded()
    .json();
    assert_eq!(r, serde_json::json!({ "requeued": 3, "key_taken": 0 }));
    assert_eq!(dead_count(&h).await, 0);

    reject_mail(&h).await;
    assert_eq!(dead_count(&h).await, 3, "dead again");
    let purged = outbox(&url, &["dead", "purge", &ids[1]])
        .succeeded()
        .stdout
        .clone();
    assert_eq!(purged.trim(), "purged 1 dead letter(s)");
    outbox(&url, &["dead", "purge", &ids[1]]).failed_with("there is no dead letter with id");
    let purged = outbox(&url, &["dead", "purge", "--older-than", "1h"])
        .succeeded()
        .stdout
        .clone();
    assert_eq!(
        purged.trim(),
        "purged 0 dead letter(s)",
        "none is an hour old; no question asked"
    );
    tokio::time::sleep(Duration::from_millis(50)).await;
    outbox(&url, &["dead", "purge", "--older-than", "1ms"])
        .failed_with("refusing to purge 2 dead letter(s) given up more than 0s ago")
        .failed_with("pass --yes");
    assert_eq!(dead_count(&h).await, 2, "nothing purged without --yes");
    let r = outbox(
        &url,
        &["dead", "purge", "--older-than", "1ms", "-y", "--json"],
    )
    .succeeded()
    .json();
    assert_eq!(r["purged"], 2);
    assert_eq!(dead_count(&h).await, 0);
    let r = outbox(&url, &["dead", "requeue", "--all"])
        .succeeded()
        .stdout
        .clone();
    assert_eq!(
        r.trim(),
        "requeued 0 dead letter(s)",
        "nothing to confirm when nothing matches"
    );
}

pub async fn pause_resume_and_rate_limits<H: Harness>() {
    let h = H::new().await;
    let url = h.url();
    seed(&h).await;
    let admin = outbox::Admin::new(h.backend());

    let r = outbox(&url, &["pause", "cli.later", "--reason", "new template"])
        .succeeded()
        .stdout
        .clone();
    assert!(r.starts_with("paused `cli.later`"), "{r}");
    let paused = admin.paused().await.unwrap();
    assert_eq!(paused.len(), 1);
    assert_eq!(
        (paused[0].type_tag.as_str(), paused[0].reason.as_str()),
        ("cli.later", "new template")
    );
    let status = outbox(&url, &["status", "--json"]).succeeded().json();
    assert_eq!(
        type_status(&status, "cli.later")["paused"]["reason"],
        "new template"
    );
    assert!(type_status(&status, "cli.mail")["paused"].is_null());
    let human = outbox(&url, &["status"]).succeeded().stdout.clone();
    assert!(
        human
            .lines()
            .any(|l| l.starts_with("cli.later ") && l.ends_with("yes: new template")),
        "{human}"
    );

    // A type nobody has queued yet can be paused, with a note on stderr.
    let r = outbox(&url, &["pause", "cli.never"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stderr
            .contains("note: no message of type `cli.never` is queued or dead"),
        "{r:?}"
    );
    let status = outbox(&url, &["status", "--json"]).succeeded().json();
    assert_eq!(
        type_status(&status, "cli.never")["paused"]["reason"],
        "paused from the command line"
    );

    outbox(&url, &["resume", "cli.later"]).succeeded();
    outbox(&url, &["resume", "cli.later"])
        .failed_with("`cli.later` is not paused; paused types: cli.never");
    outbox(&url, &["resume", "cli.never", "--json"]).succeeded();
    assert!(admin.paused().await.unwrap().is_empty());

    let r = outbox(&url, &["rate-limit"]).succeeded().stdout.clone();
    assert!(
        r.starts_with(
            "no rate buckets; create one with `outbox rate-limit NAME --per-hour N --create`"
        ),
        "{r}"
    );
    outbox(&url, &["rate-limit", "smtp"])
        .failed_with("there is no rate bucket `smtp` (buckets: none)");
    outbox(&url, &["rate-limit", "smtp", "--burst", "3"]).failed_with("create it with a rate");
    // A name no bucket has is refused (a typo must not add an unused bucket)...
    outbox(&url, &["rate-limit", "smtp", "--per-hour", "60"]).failed_with(
        "there is no rate bucket `smtp` (buckets: none); check the name, or create it with \
         `outbox rate-limit smtp --per-hour 60 --create`",
    );
    assert!(
        admin.rate_limits().await.unwrap().is_empty(),
        "nothing created"
    );
    // ... unless --create says so.
    let r = outbox(
        &url,
        &[
            "rate-limit",
            "smtp",
            "--per-hour",
            "60",
            "--burst",
            "5",
            "--create",
        ],
    )
    .succeeded()
    .stdout
    .clone();
    let row: Vec<&str> = r
        .lines()
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(row, ["smtp", "1/min", "60", "5", "5.00"], "{r}");
    outbox(&url, &["rate-limit", "smtp", "--per-minute", "2"]).succeeded();
    let state = admin.rate_limit("smtp").await.unwrap().expect("the bucket");
    assert!(
        (state.limit.per_second - 2.0 / 60.0).abs() < 1e-9,
        "{state:?}"
    );
    assert_eq!(
        state.limit.burst, 5.0,
        "the burst is kept when only the rate changes"
    );
    admin
        .set_rate_limit("api", outbox::RateLimit::per_second(10.0))
        .await
        .unwrap();
    let list = outbox(&url, &["rate-limit", "--json"]).succeeded().json();
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["api", "smtp"]);
    assert_eq!(list[1]["per_hour"], 120.0);
    assert_eq!(list[1]["burst"], 5.0);
    assert!(list[1]["tokens"].as_f64().unwrap() <= 5.0);
    let shown = outbox(&url, &["rate-limit", "api"])
        .succeeded()
        .stdout
        .clone();
    assert!(shown.contains("10/s") && shown.contains("36000"), "{shown}");
    outbox(&url, &["rate-limit", "nope"])
        .failed_with("there is no rate bucket `nope` (buckets: api, smtp)");
    outbox(&url, &["rate-limit", "smpt", "--per-minute", "1"])
        .failed_with("there is no rate bucket `smpt` (buckets: api, smtp)");
    let names: Vec<String> = admin
        .rate_limits()
        .await
        .unwrap()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["api", "smtp"], "a typo added no bucket");
    outbox(&url, &["rate-limit", "smtp", "--per-hour", "0"])
        .failed_with("the rate must be positive");
}

pub async fn unknown_ids_and_types_are_errors<H: Harness>() {
    let h = H::new().await;
    let url = h.url();
    seed(&h).await;
    let id = "01ARZ3NDEKTSV4RRFFQ69G5FAV";
    for args in [
        ["dead", "show", id],
        ["dead", "requeue", id],
        ["dead", "purge", id],
    ] {
        outbox(&url, &args)
            .failed_with(&format!("there is no dead letter with id `{id}`"))
            .failed_with("`outbox dead list` shows the ids");
    }
    for args in [
        &["dead", "list", "--type", "cli.nope"][..],
        &["dead", "requeue", "--type", "cli.nope", "--yes"],
    ] {
        outbox(&url, args).failed_with(
            "no message of type `cli.nope` is queued or dead; known types: cli.later, cli.mail",
        );
    }
    outbox(&url, &["pause", "bad tag!"]).failed_with("`bad tag!` is not a type tag");
    assert_eq!(dead_count(&h).await, 3, "nothing changed");
}

/// A database without the outbox's tables, dropped (or deleted) afterwards.
struct EmptyDb {
    url: String,
    _dir: Option<tempfile::TempDir>,
    #[allow(dead_code)] // unused with SQLite alone
    drop: Option<(String, String)>,
}

impl Drop for EmptyDb {
    fn drop(&mut self) {
        #[cfg(any(feature = "postgres", feature = "mysql"))]
        if let Some((admin, statement)) = self.drop.take() {
            harness::drop_database_later(admin, statement);
        }
    }
}

impl EmptyDb {
    /// A new, empty database on `H`'s backend.
    async fn new<H: Harness>() -> Self {
        match H::NAME {
            "sqlite" => {
                let dir = tempfile::tempdir().unwrap();
                let url = format!("sqlite://{}", dir.path().join("empty.db").display());
                #[cfg(feature = "sqlite")]
                outbox::sqlite::connect(&url)
                    .await
                    .expect("create the file")
                    .close()
                    .await;
                Self {
                    url,
                    _dir: Some(dir),
                    drop: None,
                }
            }
            #[cfg(feature = "postgres")]
            "postgres" => {
                use sqlx::{Connection, Executor};
                let admin = postgres_admin_url();
                let db = harness::fresh_name();
                let mut c = sqlx::PgConnection::connect(&admin).await.unwrap_or_else(|e| {
                    panic!("PostgreSQL at {admin} is unreachable ({e}); start it or set OUTBOX_TEST_POSTGRES_URL")
                });
                c.execute(sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
                    "CREATE DATABASE {db}"
                ))))
                .await
                .unwrap();
                Self {
                    url: harness::with_database(&admin, &db),
                    _dir: None,
                    drop: Some((admin, format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"))),
                }
            }
            #[cfg(feature = "mysql")]
            "mysql" => {
                use sqlx::{Connection, Executor};
                let admin = mysql_admin_url();
                let db = harness::fresh_name();
                let mut c = sqlx::MySqlConnection::connect(&admin).await.unwrap_or_else(|e| {
                    panic!("MariaDB/MySQL at {admin} is unreachable ({e}); start it or set OUTBOX_TEST_MYSQL_URL")
                });
                c.execute(sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
                    "CREATE DATABASE {db}"
                ))))
                .await
                .unwrap();
                Self {
                    url: harness::with_database(&admin, &db),
                    _dir: None,
                    drop: Some((admin, format!("DROP DATABASE IF EXISTS {db}"))),
                }
            }
            other => panic!("no empty database for backend {other}"),
        }
    }
}

pub async fn an_unmigrated_database_says_to_migrate<H: Harness>() {
    let db = EmptyDb::new::<H>().await;
    for args in [
        &["status"][..],
        &["dead", "list"],
        &["pause", "cli.mail"],
        &["rate-limit"],
    ] {
        let r = outbox(&db.url, args);
        r.failed_with("has no outbox tables")
            .failed_with("run `outbox migrate` first");
    }
    let r = outbox(&db.url, &["migrate"]).succeeded().stdout.clone();
    assert_eq!(
        r.trim(),
        format!("the outbox tables are up to date ({})", H::NAME)
    );
    let r = outbox(&db.url, &["status"]).succeeded().stdout.clone();
    assert_eq!(r.trim(), "no messages, dead letters or paused types");
}

/// A type whose handler fails with a temporary error: its message waits to be retried.
#[derive(Debug, Clone, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "cli.flaky", max_attempts = 5)]
pub struct Flaky {
    pub n: i64,
}

/// On top of [`seed`]: group `spring` with four due and one scheduled `cli.later`
/// (keys `spring-10` … `spring-14`), group `autumn` with one `cli.flaky` retrying after
/// a `421` error, and one `cli.later` outside any group. Returns the ids of the autumn
/// message and of the one outside any group.
async fn seed_groups<H: Harness>(h: &H) -> (String, String) {
    let mut tx = h.pool().begin().await.unwrap();
    for n in 10..=14 {
        let mut options = EnqueueOptions::new()
            .group("spring")
            .idempotency_key(format!("spring-{n}"));
        if n == 14 {
            options = options.after(Duration::from_secs(3600));
        }
        let _ = Later { n }.enqueue_with(&mut *tx, options).await.unwrap();
    }
    let autumn = Flaky { n: 1 }
        .enqueue_with(&mut *tx, EnqueueOptions::new().group("autumn"))
        .await
        .unwrap()
        .id()
        .to_string();
    let alone = Later { n: 20 }
        .enqueue(&mut *tx)
        .await
        .unwrap()
        .id()
        .to_string();
    tx.commit().await.unwrap();
    let report = Outbox::new(h.backend())
        .register::<Flaky, _>(|_: Flaky, _: MessageContext| async {
            Err::<(), _>(HandlerError::retry("421 4.7.0 try again later"))
        })
        .drain()
        .await
        .unwrap();
    assert_eq!(report.counts.failed_attempts, 1, "{report:?}");
    (autumn, alone)
}

/// The entry of group `name` in `groups --json` output.
#[track_caller]
fn group_entry(groups: &Value, name: &str) -> Value {
    groups
        .as_array()
        .expect("an array of groups")
        .iter()
        .find(|g| g["name"] == name)
        .unwrap_or_else(|| panic!("no group `{name}` in {groups:#}"))
        .clone()
}

pub async fn groups_pause_resume_and_cancel<H: Harness>() {
    let h = H::new().await;
    let url = h.url();
    seed(&h).await;
    seed_groups(&h).await;
    let admin = outbox::Admin::new(h.backend());

    let groups = outbox(&url, &["groups", "--json"]).succeeded().json();
    let names: Vec<&str> = groups
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["autumn", "spring"], "{groups:#}");
    let spring = group_entry(&groups, "spring");
    assert_eq!(
        (
            &spring["pending"],
            &spring["scheduled"],
            &spring["remaining"],
            &spring["total"],
            &spring["is_paused"]
        ),
        (&json!(4), &json!(1), &json!(5), &json!(5), &json!(false)),
        "{groups:#}"
    );
    assert_eq!(group_entry(&groups, "autumn")["retrying"], 1, "{groups:#}");

    let human = outbox(&url, &["groups"]).succeeded().stdout.clone();
    let header: Vec<&str> = human.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "GROUP",
            "PENDING",
            "SCHEDULED",
            "RUNNING",
            "RETRYING",
            "PAUSED",
            "DELIVERED",
            "DEAD",
            "CANCELLED",
            "SUPPRESSED",
            "DONE",
            "RATE",
            "ETA",
            "STATE"
        ],
        "{human}"
    );
    let row: Vec<&str> = human
        .lines()
        .find(|l| l.starts_with("spring "))
        .expect("a spring row")
        .split_whitespace()
        .collect();
    assert_eq!(
        row,
        ["spring", "4", "1", "0", "0", "0", "0", "0", "0", "0", "0%", "-", "-", "running"],
        "{human}"
    );

    let shown = outbox(&url, &["group", "show", "spring"])
        .succeeded()
        .stdout
        .clone();
    assert!(shown.contains("state:       running"), "{shown}");
    assert!(
        shown.contains("progress:    0 of 5 finished (0%), 5 remaining"),
        "{shown}"
    );
    outbox(&url, &["group", "show", "nope"]).failed_with(
        "there is no group `nope` (groups: autumn, spring); check the name (`outbox groups` lists them)",
    );

    // Pause: recorded with its reason, the messages counted as paused.
    let r = outbox(&url, &["group", "pause", "spring", "--reason", "copy typo"])
        .succeeded()
        .stdout
        .clone();
    assert!(r.starts_with("paused group `spring`"), "{r}");
    let g = admin.groups().show("spring").await.unwrap().unwrap();
    assert_eq!(g.pause_reason.as_deref(), Some("copy typo"));
    let spring = group_entry(
        &outbox(&url, &["groups", "--json"]).succeeded().json(),
        "spring",
    );
    assert_eq!(spring["is_paused"], true);
    assert_eq!(spring["pause_reason"], "copy typo");
    assert_eq!(spring["pending"], 0, "{spring:#}");
    assert_eq!(
        spring["paused"].as_u64(),
        Some(g.paused),
        "the same figure as the admin API: {spring:#}"
    );
    assert!(g.paused >= 4, "the due ones are held: {g:?}");
    let human = outbox(&url, &["groups"]).succeeded().stdout.clone();
    assert!(
        human
            .lines()
            .any(|l| l.starts_with("spring ") && l.ends_with("paused: copy typo")),
        "{human}"
    );
    let held = admin
        .messages()
        .list(
            // Enqueued due now (spring-14 is the scheduled one).
            &outbox::LiveFilter::all()
                .key_prefix("spring-10")
                .state(outbox::LiveState::Paused),
            None,
            1,
        )
        .await
        .unwrap()
        .messages[0]
        .id
        .to_string();
    let r = outbox(&url, &["messages", "retry", &held])
        .succeeded()
        .stdout
        .clone();
    assert_eq!(
        r.trim(),
        format!(
            "message {held} is already due but held: its type or its group is paused (resume \
             it to let the message start)"
        )
    );
    // The status shows the held messages per type.
    let status = outbox(&url, &["status", "--json"]).succeeded().json();
    let later = type_status(&status, "cli.later");
    assert_eq!(
        later["paused_messages"].as_u64(),
        Some(g.paused),
        "{status:#}"
    );
    let human = outbox(&url, &["status"]).succeeded().stdout.clone();
    assert!(human.lines().next().unwrap().contains("PAUSED"), "{human}");
    let cells: Vec<String> = human
        .lines()
        .find(|l| l.starts_with("cli.later "))
        .unwrap()
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    assert_eq!(cells[5], g.paused.to_string(), "{human}");

    // A group nobody has enqueued into yet can be paused, with a note on stderr.
    let r = outbox(&url, &["group", "pause", "winter"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stderr
            .contains("note: no group `winter` was known yet; paused anyway"),
        "{r:?}"
    );
    outbox(&url, &["group", "resume", "winter"]).succeeded();
    outbox(&url, &["group", "pause", "bad\tname"]).failed_with(
        "`bad\tname` cannot be a group name: the group name contains control characters",
    );

    outbox(&url, &["group", "resume", "spring"]).succeeded();
    outbox(&url, &["group", "resume", "spring"])
        .failed_with("group `spring` is not paused; paused groups: none");
    assert!(!admin
        .groups()
        .show("spring")
        .await
        .unwrap()
        .unwrap()
        .is_paused());

    // Cancel asks first, then deletes the queued messages and counts them.
    outbox(&url, &["group", "cancel", "spring"])
        .failed_with("refusing to cancel the 5 queued message(s) of group `spring`")
        .failed_with("pass --yes to confirm");
    assert_eq!(
        admin
            .groups()
            .show("spring")
            .await
            .unwrap()
            .unwrap()
            .remaining(),
        5,
        "nothing cancelled without --yes"
    );
    let r = outbox(&url, &["group", "cancel", "spring", "--yes", "--json"])
        .succeeded()
        .json();
    assert_eq!(r["cancelled"], 5, "{r:#}");
    let g = admin.groups().show("spring").await.unwrap().unwrap();
    assert_eq!((g.remaining(), g.cancelled), (0, 5), "{g:?}");
    let r = outbox(&url, &["group", "cancel", "spring"])
        .succeeded()
        .stdout
        .clone();
    assert_eq!(
        r.trim(),
        "cancelled 0 message(s) of group `spring`",
        "nothing to confirm when nothing is queued"
    );
    outbox(&url, &["group", "cancel", "nope", "--yes"]).failed_with("there is no group `nope`");
}

pub async fn live_messages_list_show_retry_and_cancel<H: Harness>() {
    let h = H::new().await;
    let url = h.url();
    let dead = seed(&h).await;
    let (autumn, alone) = seed_groups(&h).await;
    let admin = outbox::Admin::new(h.backend());

    // Keyset pages of 3: every live message once, in id order, the cursor printed.
    let mut seen: Vec<String> = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let mut args = vec!["messages", "list", "--limit", "3", "--json"];
        if let Some(a) = &after {
            args.extend(["--after", a.as_str()]);
        }
        let page = outbox(&url, &args).succeeded().json();
        let ids: Vec<String> = page["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_owned())
            .collect();
        assert!(ids.len() <= 3, "{page:#}");
        seen.extend(ids.iter().cloned());
        match page["next"].as_str() {
            Some(next) => {
                assert_eq!(Some(next), ids.last().map(String::as_str), "{page:#}");
                after = Some(next.to_owned());
            }
            None => break,
        }
    }
    assert_eq!(seen.len(), 3 + 5 + 1 + 1, "{seen:?}");
    let mut sorted = seen.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted, seen, "by id, no repeats");
    let human = outbox(&url, &["messages", "list", "--limit", "2"])
        .succeeded()
        .stdout
        .clone();
    assert!(
        human.ends_with(&format!("next page: --after {}\n", seen[1])),
        "{human}"
    );
    assert!(
        human.lines().next().unwrap().starts_with("ID"),
        "a table: {human}"
    );

    // The filters.
    let ids = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["messages", "list", "--json"];
        all.extend_from_slice(args);
        outbox(&url, &all).succeeded().json()["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(ids(&["--group", "spring"]).len(), 5);
    assert_eq!(ids(&["--group", "spring", "--state", "scheduled"]).len(), 1);
    assert_eq!(ids(&["--key-prefix", "spring-1"]).len(), 5);
    assert_eq!(ids(&["--key-prefix", "spring-14"]).len(), 1);
    assert_eq!(
        ids(&["--error", "421 4.7.0"]),
        std::slice::from_ref(&autumn)
    );
    assert_eq!(ids(&["--state", "retrying"]), std::slice::from_ref(&autumn));
    assert_eq!(
        ids(&["--type", "cli.later", "--state", "pending"]).len(),
        1 + 4 + 1
    );
    let r = outbox(&url, &["messages", "list", "--state", "stuck"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains(
            "unknown state `stuck`; write one of pending, scheduled, running, retrying, paused"
        ),
        "{r:?}"
    );
    outbox(&url, &["messages", "list", "--group", "winter"])
        .failed_with("there is no group `winter` (groups: autumn, spring)");
    outbox(&url, &["messages", "list", "--type", "cli.nope"])
        .failed_with("no message of type `cli.nope` is queued or dead");

    // One message: its attempt log and payload.
    let shown = outbox(&url, &["messages", "show", &autumn])
        .succeeded()
        .stdout
        .clone();
    for want in [
        format!("id:          {autumn}"),
        "type:        cli.flaky".into(),
        "state:       retrying".into(),
        "group:       autumn".into(),
        "attempts:    1 of 5".into(),
        "last error:\n  421 4.7.0 try again later".into(),
        "attempts' errors:\n  #1 ".into(),
        "payload:\n  {\n    \"n\": 1\n  }".into(),
    ] {
        assert!(shown.contains(&want), "`{want}` in {shown}");
    }
    let shown = outbox(&url, &["messages", "show", &autumn, "--json"])
        .succeeded()
        .json();
    assert_eq!(shown["payload"]["n"], 1, "{shown:#}");
    assert_eq!(shown["state"], "retrying");
    assert!(shown["attempt_log"][0]["error"]
        .as_str()
        .unwrap()
        .contains("421 4.7.0"));
    let missing = "01ARZ3NDEKTSV4RRFFQ69G5FAV";
    for args in [
        ["messages", "show", missing],
        ["messages", "retry", missing],
        ["messages", "cancel", missing],
    ] {
        outbox(&url, &args)
            .failed_with(&format!("there is no queued message with id `{missing}`"))
            .failed_with("`outbox messages list` shows the ids");
    }
    outbox(&url, &["messages", "show", &dead[0]])
        .failed_with("it is a dead letter; `outbox dead show");

    // Retry now: one, then in bulk with confirmation.
    let due = |id: String| {
        let admin = admin.clone();
        async move {
            admin
                .messages()
                .show(&MessageId::from_string(id))
                .await
                .unwrap()
                .expect("still queued")
                .message
                .due_at
        }
    };
    assert!(due(autumn.clone()).await > std::time::SystemTime::now());
    let r = outbox(&url, &["messages", "retry", &autumn])
        .succeeded()
        .stdout
        .clone();
    assert_eq!(
        r.trim(),
        "made 1 message(s) due now (their attempts are kept)"
    );
    assert!(due(autumn.clone()).await <= std::time::SystemTime::now());
    let r = outbox(&url, &["messages", "retry", &autumn])
        .succeeded()
        .stdout
        .clone();
    assert_eq!(
        r.trim(),
        format!("message {autumn} is already due; a worker starts it when one is free")
    );
    let r = outbox(&url, &["messages", "retry", "--group", "spring"]);
    r.failed_with(
        "refusing to make the queued ones of 5 queued message(s) in group `spring` due now",
    )
    .failed_with("pass --yes");
    assert_eq!(ids(&["--group", "spring", "--state", "scheduled"]).len(), 1);
    let r = outbox(
        &url,
        &["messages", "retry", "--group", "spring", "--yes", "--json"],
    )
    .succeeded()
    .json();
    assert_eq!(r["retried"], 1, "only the scheduled one was due later");
    assert!(ids(&["--group", "spring", "--state", "scheduled"]).is_empty());
    let r = outbox(&url, &["messages", "retry"]);
    assert_eq!(r.code, 2, "an id, a filter or --all: {r:?}");
    let r = outbox(&url, &["messages", "retry", &autumn, "--group", "spring"]);
    assert_eq!(r.code, 2, "an id or filters, not both: {r:?}");

    // Cancel: one, then in bulk with confirmation.
    let r = outbox(&url, &["messages", "cancel", &alone])
        .succeeded()
        .stdout
        .clone();
    assert_eq!(r.trim(), "cancelled 1 message(s)");
    outbox(&url, &["messages", "show", &alone]).failed_with("there is no queued message");
    outbox(
        &url,
        &[
            "messages",
            "cancel",
            "--type",
            "cli.later",
            "--key-prefix",
            "spring-1",
        ],
    )
    .failed_with(
        "refusing to cancel 5 queued message(s) of type `cli.later` with a key starting `spring-1`",
    );
    assert_eq!(
        ids(&["--key-prefix", "spring-1"]).len(),
        5,
        "nothing cancelled"
    );
    let r = outbox(
        &url,
        &[
            "messages",
            "cancel",
            "--type",
            "cli.later",
            "--key-prefix",
            "spring-1",
            "-y",
            "--json",
        ],
    )
    .succeeded()
    .json();
    assert_eq!(r["cancelled"], 5, "{r:#}");
    assert!(ids(&["--group", "spring"]).is_empty());
    let g = admin.groups().show("spring").await.unwrap().unwrap();
    assert_eq!(g.cancelled, 5, "counted in the group's progress: {g:?}");
    let r = outbox(&url, &["messages", "cancel", "--all", "-y", "--json"])
        .succeeded()
        .json();
    assert_eq!(
        r["cancelled"], 4,
        "the seed's three and autumn's one: {r:#}"
    );
    let r = outbox(&url, &["messages", "cancel", "--all"])
        .succeeded()
        .stdout
        .clone();
    assert_eq!(r.trim(), "cancelled 0 message(s)", "nothing to confirm");
    assert_eq!(
        dead_count(&h).await,
        3,
        "dead letters are not live messages"
    );
}

/// A type whose handler waits until the test lets it finish.
#[derive(Debug, Clone, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "cli.slow")]
pub struct Slow {
    pub n: i64,
}

pub async fn a_running_message_is_left_alone<H: Harness>() {
    let h = H::new().await;
    let url = h.url();
    let mut conn = h.pool().acquire().await.unwrap();
    let id = Slow { n: 1 }
        .enqueue_with(&mut *conn, EnqueueOptions::new().group("slow"))
        .await
        .unwrap()
        .id()
        .to_string();
    drop(conn);
    let release = std::sync::Arc::new(tokio::sync::Notify::new());
    let worker = Outbox::with_state(h.backend(), std::sync::Arc::clone(&release))
        .register_with::<Slow, _>(
            |_m: Slow, ctx: MessageContext<std::sync::Arc<tokio::sync::Notify>>| async move {
                ctx.state().notified().await;
                Ok::<(), HandlerError>(())
            },
            QueueOptions::new(),
        );
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(async move {
        worker
            .run_until(async {
                let _ = stopped.await;
            })
            .await
    });
    let admin = outbox::Admin::new(h.backend());
    let state_running = outbox::LiveFilter::all().state(outbox::LiveState::Running);
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while admin.messages().count(&state_running).await.unwrap() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the worker claims the message"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let shown = outbox(&url, &["messages", "show", &id])
        .succeeded()
        .stdout
        .clone();
    assert!(shown.contains("state:       running"), "{shown}");
    assert!(shown.contains("lease owner: "), "{shown}");
    assert!(shown.contains("lease until: "), "{shown}");
    for action in ["retry", "cancel"] {
        outbox(&url, &["messages", action, &id])
            .failed_with(&format!("message {id} is running now"))
            .failed_with("its worker finishes it");
    }
    let r = outbox(&url, &["messages", "cancel", "--group", "slow", "--yes"])
        .succeeded()
        .stdout
        .clone();
    assert_eq!(
        r.trim(),
        "cancelled 0 message(s)",
        "a running one is left alone"
    );
    let r = outbox(&url, &["group", "cancel", "slow"])
        .succeeded()
        .stdout
        .clone();
    assert_eq!(
        r,
        "cancelled 0 message(s) of group `slow`\n1 running message(s) finish (a cancel does not stop them)\n"
    );
    assert_eq!(admin.messages().count(&state_running).await.unwrap(), 1);

    release.notify_one();
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while admin
        .groups()
        .show("slow")
        .await
        .unwrap()
        .unwrap()
        .delivered
        == 0
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the running message is delivered"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = stop.send(());
    running.await.unwrap().unwrap();
}

/// `suppressions add / list / remove / stopped`: an entry added from the command line is in
/// the list (text and JSON, filtered by address with its domain's entries), stops a message
/// whose recipient it names (shown by `stopped` and counted by `status`), and is removed;
/// a bad address, scope or reason is refused with what to write instead.
pub async fn suppressions_add_list_remove_and_stopped<H: Harness>() {
    #[derive(serde::Serialize, serde::Deserialize)]
    struct Note {
        to: String,
    }
    impl outbox::OutboxMessage for Note {
        const TYPE: &'static str = "cli.note";
        const HAS_RECIPIENT: bool = true;
        fn recipient(&self) -> Option<outbox::Recipient> {
            Some(outbox::Recipient::bulk(self.to.clone(), None))
        }
    }
    let h = H::new().await;
    let url = h.url();
    let r = outbox(
        &url,
        &[
            "suppressions",
            "add",
            "Ann@Example.com",
            "--reason",
            "hard-bounce",
        ],
    );
    let out = r.succeeded().stdout.clone();
    assert!(
        out.starts_with("suppressed ann@example.com (*, hard_bounce)"),
        "{out}"
    );
    outbox(
        &url,
        &[
            "suppressions",
            "add",
            "@example.com",
            "--scope",
            "type:cli.note",
            "--expires-in",
            "30d",
        ],
    )
    .succeeded();
    outbox(
        &url,
        &[
            "suppressions",
            "add",
            "zed@other.test",
            "--scope",
            "list:weekly",
        ],
    )
    .succeeded();
    let listed = outbox(
        &url,
        &[
            "suppressions",
            "list",
            "--address",
            "ann@example.com",
            "--json",
        ],
    )
    .succeeded()
    .json();
    assert_eq!(listed["total"], 2, "{listed}");
    let scopes: Vec<&str> = listed["suppressions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["scope"].as_str().unwrap())
        .collect();
    assert!(
        scopes.contains(&"*") && scopes.contains(&"type:cli.note"),
        "{listed}"
    );
    let human = outbox(&url, &["suppressions", "list"])
        .succeeded()
        .stdout
        .clone();
    assert!(
        human.contains("zed@other.test") && human.contains("3 of 3 shown"),
        "{human}"
    );

    let mut tx = h.pool().begin().await.unwrap();
    let note = Note {
        to: "ann@example.com".into(),
    };
    let _ = note.enqueue(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();
    let stopped = outbox(&url, &["suppressions", "stopped", "--json"])
        .succeeded()
        .json();
    assert_eq!(stopped[0]["type"], "cli.note", "{stopped}");
    assert!(
        stopped[0]["reason"]
            .as_str()
            .unwrap()
            .starts_with("suppressed: "),
        "{stopped}"
    );
    let status = outbox(&url, &["status", "--json"]).succeeded().json();
    assert_eq!(
        type_status(&status, "cli.note")["suppressed"],
        1,
        "{status}"
    );

    outbox(&url, &["suppressions", "remove", "ann@example.com"]).succeeded();
    outbox(&url, &["suppressions", "remove", "ann@example.com"])
        .failed_with("has no suppression in scope `*`");
    outbox(&url, &["suppressions", "add", "not-an-address"]).failed_with("user@example.com");
    let r = outbox(
        &url,
        &["suppressions", "add", "a@b.test", "--scope", "topic:x"],
    );
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("list:NAME"), "{r:?}");
    let r = outbox(
        &url,
        &["suppressions", "add", "a@b.test", "--reason", "bounced"],
    );
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("hard_bounce"), "{r:?}");
}

/// `shaping add-rule / rules / remove-rule / sites / resume`: a rule added from the command
/// line is stored and listed, a bad pattern or a rule without an action is refused with
/// the reason; a site a rule slowed is listed with its state and resumed.
pub async fn shaping_rules_and_sites<H: Harness>() {
    let h = H::new().await;
    let url = h.url();
    let out = outbox(
        &url,
        &[
            "shaping",
            "add-rule",
            "gmail-rate",
            "--pattern",
            r"\b4\.7\.28\b",
            "--slow",
            "10/min",
            "--for",
            "90m",
            "--threshold",
            "3",
        ],
    );
    let text = out.succeeded().stdout.clone();
    assert!(text.starts_with("stored rule `gmail-rate`"), "{text}");
    assert!(text.contains("slow to 10/min for 1h 30m"), "{text}");
    outbox(
        &url,
        &["shaping", "add-rule", "bad", "--pattern", "(", "--suspend"],
    )
    .failed_with("not a regular expression");
    outbox(&url, &["shaping", "add-rule", "none", "--pattern", "x"])
        .failed_with("--slow RATE, --suspend or --bounce");
    let rules = outbox(&url, &["shaping", "rules", "--json"]);
    let rules: serde_json::Value = serde_json::from_str(&rules.succeeded().stdout).unwrap();
    assert_eq!(rules[0]["name"], "gmail-rate");
    assert_eq!(rules[0]["action"], "slow");
    assert_eq!(rules[0]["threshold"], 3);
    assert!((rules[0]["per_second"].as_f64().unwrap() - 10.0 / 60.0).abs() < 1e-9);
    let table = outbox(&url, &["shaping", "rules"])
        .succeeded()
        .stdout
        .clone();
    assert!(
        table.contains("gmail-rate") && table.contains("3 in 1h"),
        "{table}"
    );

    // A site slowed by a rule, as a worker would record it.
    let admin = Outbox::new(h.backend()).admin();
    let empty = outbox(&url, &["shaping", "sites"])
        .succeeded()
        .stdout
        .clone();
    assert!(empty.starts_with("no site is shaped"), "{empty}");
    outbox::store::ShapingStore::act_on_site(
        &h.backend(),
        "google",
        &outbox::RuleAction::Slow {
            per_second: 1.0,
            duration: std::time::Duration::from_secs(600),
        },
        "rule `gmail-rate`: 421 4.7.28 rate limited",
        outbox::store::Now::Database,
    )
    .await
    .unwrap();
    let sites = outbox(&url, &["shaping", "sites"])
        .succeeded()
        .stdout
        .clone();
    assert!(
        sites.contains("google") && sites.contains("slowed to 1/s until"),
        "{sites}"
    );
    assert!(sites.contains("4.7.28"), "{sites}");
    let resumed = outbox(&url, &["shaping", "resume", "google"]);
    assert!(resumed
        .succeeded()
        .stdout
        .starts_with("site `google` resumed"));
    let site = &admin.shaping().sites().await.unwrap()[0];
    assert_eq!((site.slowed_until, site.reason.clone()), (None, None));
    outbox(&url, &["shaping", "resume", "nowhere"]).failed_with("no site `nowhere`");
    outbox(&url, &["shaping", "remove-rule", "gmail-rate"]).succeeded();
    outbox(&url, &["shaping", "remove-rule", "gmail-rate"]).failed_with("no rule `gmail-rate`");
}

/// Makes every queued message due ten minutes ago (an enqueue clamps a past due time to
/// now): messages left waiting that long by workers nobody started.
async fn due_ten_minutes_ago<H: Harness>(h: &H)
where
    for<'c> &'c mut <H::Db as sqlx::Database>::Connection: sqlx::Executor<'c, Database = H::Db>,
{
    let mut conn = h.pool().acquire().await.unwrap();
    sqlx::raw_sql("UPDATE outbox_messages SET due_at = due_at - 600000")
        .execute(&mut *conn)
        .await
        .unwrap();
}

/// `status` says so when messages have been due for minutes and no worker has been seen
/// (no heartbeat in the registry), and what to run; once a worker heartbeats, it does not.
pub async fn status_says_when_no_worker_runs<H: Harness>()
where
    for<'c> &'c mut <H::Db as sqlx::Database>::Connection: sqlx::Executor<'c, Database = H::Db>,
{
    let h = H::new().await;
    let url = h.url();
    let mut tx = h.pool().begin().await.unwrap();
    for n in 1..=3 {
        let _ = Later { n }.enqueue(&mut *tx).await.unwrap();
    }
    tx.commit().await.unwrap();
    let human = outbox(&url, &["status"]).succeeded().stdout.clone();
    assert!(!human.contains("WARNING"), "due just now: {human}");

    due_ten_minutes_ago(&h).await;
    let human = outbox(&url, &["status"]).succeeded().stdout.clone();
    let warning = human
        .lines()
        .find(|l| l.starts_with("WARNING: "))
        .unwrap_or_else(|| panic!("a warning: {human}"));
    assert!(
        warning.contains("3 message(s) due, the oldest for 10m")
            && warning.contains("no worker running")
            && warning.contains("outbox work")
            && warning.contains("outbox drain"),
        "{warning}"
    );
    let status = outbox(&url, &["status", "--json"]).succeeded().json();
    assert_eq!(status["unattended"]["due"], 3, "{status:#}");
    assert!(
        status["unattended"]["last_worker_seen"].is_null(),
        "{status:#}"
    );

    // A worker heartbeats (of another type: the messages stay due).
    let admin = outbox::Admin::new(h.backend());
    Outbox::new(h.backend())
        .register::<Mail, _>(|_: Mail, _: MessageContext| async { Ok::<(), HandlerError>(()) })
        .run_until(async {
            let mut seen = false;
            for _ in 0..100 {
                if admin.workers_seen().await.unwrap().last_seen.is_some() {
                    seen = true;
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            assert!(seen, "the worker registered");
            let url = url.clone();
            let run = tokio::task::spawn_blocking(move || {
                (
                    outbox(&url, &["status"]),
                    outbox(&url, &["status", "--json"]),
                )
            })
            .await
            .unwrap();
            let human = run.0.succeeded().stdout.clone();
            assert!(!human.contains("WARNING"), "a worker runs: {human}");
            let status = run.1.succeeded().json();
            assert!(status["unattended"].is_null(), "{status:#}");
        })
        .await
        .unwrap();
}

/// A letter names its recipient, so the queue can be searched by address.
#[derive(Debug, Clone, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "cli.letter", recipient = "letter_recipient")]
pub struct Letter {
    pub to: String,
}

fn letter_recipient(letter: &Letter) -> Option<outbox::Recipient> {
    Some(outbox::Recipient::transactional(&letter.to))
}

/// `messages list --recipient` finds a person's messages whatever the case of the address,
/// `messages cancel --recipient` cancels only theirs, and `dead list --recipient` finds
/// their dead letters.
pub async fn messages_are_found_by_recipient<H: Harness>() {
    let h = H::new().await;
    let url = h.url();
    let mut tx = h.pool().begin().await.unwrap();
    let mut ids = Vec::new();
    for to in ["Ann@Example.com", "bob@example.com", "ann@example.com"] {
        let e = Letter { to: to.into() }.enqueue(&mut *tx).await.unwrap();
        ids.push(e.id().to_string());
    }
    let _ = Later { n: 1 }.enqueue(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();

    let listed = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["messages", "list", "--json"];
        all.extend_from_slice(args);
        outbox(&url, &all).succeeded().json()["messages"]
            .as_array()
            .expect("a messages list")
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        listed(&["--recipient", "ANN@example.COM"]),
        vec![ids[0].clone(), ids[2].clone()]
    );
    assert_eq!(
        listed(&["--recipient", "bob@example.com"]),
        vec![ids[1].clone()]
    );
    assert!(listed(&["--recipient", "nobody@example.com"]).is_empty());
    let human = outbox(
        &url,
        &["messages", "list", "--recipient", "ann@example.com"],
    )
    .succeeded()
    .stdout
    .clone();
    assert!(
        human.contains(&ids[0]) && human.contains(&ids[2]) && !human.contains(&ids[1]),
        "{human}"
    );

    let out = outbox(
        &url,
        &[
            "messages",
            "cancel",
            "--recipient",
            "Bob@example.com",
            "--yes",
        ],
    )
    .succeeded()
    .stdout
    .clone();
    assert!(out.contains("cancelled 1 message(s)"), "{out}");
    assert!(listed(&["--recipient", "bob@example.com"]).is_empty());
    assert_eq!(listed(&[]).len(), 3, "the others stay");

    // Given up, Ann's letters are found among the dead letters by her address.
    let report = Outbox::new(h.backend())
        .register::<Letter, _>(|_: Letter, _: MessageContext| async {
            Err::<(), _>(HandlerError::permanent("550 5.1.1 mailbox unknown"))
        })
        .drain()
        .await
        .unwrap();
    assert_eq!(report.counts.given_up, 2, "{report:?}");
    let dead = outbox(
        &url,
        &["dead", "list", "--recipient", "ANN@Example.com", "--json"],
    )
    .succeeded()
    .json();
    let mut found: Vec<String> = dead["dead_letters"]
        .as_array()
        .expect("a dead letters list")
        .iter()
        .map(|d| d["id"].as_str().unwrap().to_owned())
        .collect();
    found.sort();
    assert_eq!(found, vec![ids[0].clone(), ids[2].clone()], "{dead:#}");
    assert_eq!(dead["total"], 2, "{dead:#}");
    let none = outbox(
        &url,
        &["dead", "list", "--recipient", "bob@example.com", "--json"],
    )
    .succeeded()
    .json();
    assert_eq!(none["total"], 0, "{none:#}");
}

/// `webhooks list / disable / enable / rotate / retire-old-secrets`: endpoints the
/// application created are listed with their URL, state, failure clock and secrets (never
/// the secrets themselves); a disable parks the endpoint's queued message in its group and
/// an enable lets it go; a rotation prints the new verifying key once (`whsec_` for HMAC,
/// `whpk_` for Ed25519), the key the endpoint now signs with, and retiring leaves only it;
/// an unknown name is an error naming `webhooks list`; a reason holding terminal escapes is
/// printed escaped.
#[cfg(feature = "webhook")]
pub async fn webhooks_list_disable_enable_and_rotate<H: Harness>() {
    use outbox::webhook::{SigningKey, Webhook, WebhookEndpoints};

    let h = H::new().await;
    let url = h.url();
    let help = outbox_env(None, &["--help"]);
    assert!(help.succeeded().stdout.contains("webhooks"), "{help:?}");
    let empty = outbox(&url, &["webhooks", "list"]);
    assert!(
        empty.succeeded().stdout.starts_with("no webhook endpoints"),
        "{empty:?}"
    );

    let admin = outbox::Admin::new(h.backend());
    let endpoints = WebhookEndpoints::new(&admin);
    let first = endpoints
        .create("orders", "https://hooks.example.com/in")
        .await
        .unwrap();
    endpoints
        .create_with(
            "ledger",
            "https://ledger.example:8443/hook",
            SigningKey::generate_ed25519(),
        )
        .await
        .unwrap();
    endpoints.health("ledger", true).await.unwrap();
    let orders = endpoints.get("orders").await.unwrap().unwrap();
    let mut tx = h.pool().begin().await.unwrap();
    let _ = Webhook::new(&orders, "invoice.paid", json!({ "invoice": 42 }))
        .enqueue(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let queued_state = || {
        let listed = outbox(
            &url,
            &["messages", "list", "--group", "webhook:orders", "--json"],
        )
        .succeeded()
        .json();
        listed["messages"][0]["state"]
            .as_str()
            .unwrap_or_else(|| panic!("the webhook is queued: {listed:#}"))
            .to_owned()
    };
    assert_eq!(queued_state(), "pending");

    // The list, as a table: a header and a row per endpoint, by name.
    let list = outbox(&url, &["webhooks", "list"])
        .succeeded()
        .stdout
        .clone();
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), 3, "{list}");
    for column in [
        "NAME",
        "URL",
        "STATE",
        "FAILING SINCE",
        "SECRETS",
        "ORDERED",
    ] {
        assert!(lines[0].contains(column), "{list}");
    }
    let row = |lines: &[&str], name: &str| -> Vec<String> {
        lines
            .iter()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no row for {name}"))
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let ledger = row(&lines, "ledger");
    assert_eq!(ledger[1], "https://ledger.example:8443/hook", "{list}");
    assert_eq!(ledger[2], "enabled", "{list}");
    assert!(
        ledger[3].ends_with('Z') && ledger[3].len() == 20,
        "failing since: {list}"
    );
    assert_eq!(ledger[4], "1", "{list}");
    assert_eq!(ledger[5], "no", "{list}");
    assert_eq!(
        row(&lines, "orders"),
        [
            "orders",
            "https://hooks.example.com/in",
            "enabled",
            "-",
            "1",
            "no"
        ],
        "{list}"
    );
    assert!(
        !list.contains("whsec_") && !list.contains("whsk_"),
        "{list}"
    );
    let json = outbox(&url, &["webhooks", "list", "--json"])
        .succeeded()
        .json();
    assert!(!json.to_string().contains("whsec_"), "{json:#}");
    assert_eq!(json["endpoints"][0]["name"], "ledger", "{json:#}");
    assert!(
        json["endpoints"][0]["failing_since"].is_string(),
        "{json:#}"
    );
    assert_eq!(json["endpoints"][1]["enabled"], true, "{json:#}");
    assert_eq!(json["endpoints"][1]["secrets"], 1, "{json:#}");
    assert_eq!(json["endpoints"][1]["ordered"], false, "{json:#}");
    assert_eq!(
        json["endpoints"][1]["failing_since"],
        Value::Null,
        "{json:#}"
    );

    // Disable: the queued message is parked in the endpoint's group.
    let r = outbox(
        &url,
        &[
            "webhooks",
            "disable",
            "orders",
            "--reason",
            "receiver migrating",
        ],
    );
    let out = r.succeeded().stdout.clone();
    assert!(
        out.starts_with("disabled webhook endpoint `orders`: its messages, queued and new, wait in group `webhook:orders`")
            && out.contains("`outbox webhooks enable orders`"),
        "{out}"
    );
    assert_eq!(queued_state(), "paused");
    let stored = endpoints.get("orders").await.unwrap().unwrap();
    assert_eq!(
        stored.disabled.as_ref().map(|(_, why)| why.as_str()),
        Some("receiver migrating")
    );
    let list = outbox(&url, &["webhooks", "list"])
        .succeeded()
        .stdout
        .clone();
    let lines: Vec<&str> = list.lines().collect();
    let orders_row = row(&lines, "orders");
    assert!(
        orders_row[2].starts_with("disabled since ")
            && orders_row[2].ends_with("Z: receiver migrating"),
        "{list}"
    );
    let json = outbox(&url, &["webhooks", "list", "--json"])
        .succeeded()
        .json();
    assert_eq!(json["endpoints"][1]["enabled"], false, "{json:#}");
    assert_eq!(
        json["endpoints"][1]["disabled_reason"], "receiver migrating",
        "{json:#}"
    );

    // Enable: the parked message may go again.
    let out = outbox(&url, &["webhooks", "enable", "orders"])
        .succeeded()
        .stdout
        .clone();
    assert!(
        out.starts_with("enabled webhook endpoint `orders`: its parked messages go out"),
        "{out}"
    );
    assert_eq!(queued_state(), "pending");
    assert!(endpoints.get("orders").await.unwrap().unwrap().is_enabled());
    let again = outbox(&url, &["webhooks", "enable", "orders", "--json"])
        .succeeded()
        .json();
    assert_eq!(again["was_disabled"], false, "{again:#}");

    // Rotate: the new key, printed once, is the one the endpoint now signs with first.
    let out = outbox(&url, &["webhooks", "rotate", "orders"])
        .succeeded()
        .stdout
        .clone();
    assert!(
        out.starts_with(
            "rotated the signing secret of webhook endpoint `orders` (HMAC-SHA256): every \
             delivery is now signed by its 2 key(s)."
        ),
        "{out}"
    );
    let printed: Vec<&str> = out
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("whsec_"))
        .collect();
    assert_eq!(printed.len(), 1, "the key once: {out}");
    assert_ne!(printed[0], first.verify_with, "a new key");
    assert!(
        out.contains("`outbox webhooks retire-old-secrets orders`"),
        "{out}"
    );
    let stored = endpoints.get("orders").await.unwrap().unwrap();
    assert_eq!(stored.secrets.len(), 2);
    assert_eq!(
        stored.signing_keys()[0].verifying_key().to_key_string(),
        printed[0],
        "the printed key verifies what the endpoint signs"
    );
    let rotated = outbox(&url, &["webhooks", "rotate", "ledger", "--json"])
        .succeeded()
        .json();
    assert_eq!(rotated["algorithm"], "Ed25519", "{rotated:#}");
    let public = rotated["verify_with"].as_str().unwrap();
    assert!(public.starts_with("whpk_"), "{rotated:#}");
    let ledger = endpoints.get("ledger").await.unwrap().unwrap();
    assert_eq!(
        ledger.signing_keys()[0].verifying_key().to_key_string(),
        public
    );
    assert_eq!(rotated["secrets"], 2, "{rotated:#}");
    let list = outbox(&url, &["webhooks", "list"])
        .succeeded()
        .stdout
        .clone();
    assert_eq!(
        row(&list.lines().collect::<Vec<_>>(), "orders")[4],
        "2",
        "{list}"
    );
    assert!(!list.contains(printed[0]), "the key is not listed");

    // Retire the old secrets: the printed key alone remains.
    let out = outbox(&url, &["webhooks", "retire-old-secrets", "orders"])
        .succeeded()
        .stdout
        .clone();
    assert!(
        out.starts_with("retired 1 old secret(s) of webhook endpoint `orders`"),
        "{out}"
    );
    let stored = endpoints.get("orders").await.unwrap().unwrap();
    assert_eq!(stored.secrets.len(), 1);
    assert_eq!(
        stored.signing_keys()[0].verifying_key().to_key_string(),
        printed[0]
    );
    let out = outbox(&url, &["webhooks", "retire-old-secrets", "orders"])
        .succeeded()
        .stdout
        .clone();
    assert!(out.contains("has no old secret: nothing retired"), "{out}");

    // Unknown names, and a reason quoting a receiver's escapes.
    for command in ["disable", "enable", "rotate", "retire-old-secrets"] {
        outbox(&url, &["webhooks", command, "nope"])
            .failed_with("there is no webhook endpoint `nope`; `outbox webhooks list` lists them");
    }
    endpoints
        .disable("ledger", "answered 410 \u{1b}[31mgone\u{7}")
        .await
        .unwrap();
    let list = outbox(&url, &["webhooks", "list"])
        .succeeded()
        .stdout
        .clone();
    assert!(raw_controls(&list).is_empty(), "{list:?}");
    assert!(
        list.contains("answered 410 \\u{1b}[31mgone\\u{7}"),
        "{list}"
    );
}

/// A webhook receiver on loopback, on plain threads (no HTTP library): `/refuse` answers
/// 422, every other path 204; it records each request's path and `webhook-id`.
#[cfg(feature = "webhook")]
struct HookReceiver {
    port: u16,
    seen: std::sync::Arc<std::sync::Mutex<Vec<(String, String)>>>,
}

#[cfg(feature = "webhook")]
impl HookReceiver {
    fn start() -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = std::sync::Arc::clone(&seen);
        std::thread::spawn(move || {
            for conn in listener.incoming().map_while(Result::ok) {
                let sink = std::sync::Arc::clone(&sink);
                std::thread::spawn(move || {
                    let _ = Self::answer(conn, &sink);
                });
            }
        });
        Self { port, seen }
    }

    /// Reads one request (head and body), records it, answers and closes.
    fn answer(
        conn: std::net::TcpStream,
        seen: &std::sync::Mutex<Vec<(String, String)>>,
    ) -> std::io::Result<()> {
        use std::io::{BufRead, Read, Write};
        conn.set_read_timeout(Some(Duration::from_secs(10)))?;
        let mut reader = std::io::BufReader::new(conn.try_clone()?);
        let mut line = String::new();
        reader.read_line(&mut line)?;
        let path = line.split(' ').nth(1).unwrap_or("").to_owned();
        let (mut length, mut id) = (0usize, String::new());
        loop {
            line.clear();
            if reader.read_line(&mut line)? == 0 || line == "\r\n" {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                match name.trim().to_ascii_lowercase().as_str() {
                    "content-length" => length = value.trim().parse().unwrap_or(0),
                    "webhook-id" => id = value.trim().to_owned(),
                    _ => {}
                }
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        seen.lock().unwrap().push((path.clone(), id));
        let answer = if path == "/refuse" {
            "HTTP/1.1 422 Unprocessable Entity\r\ncontent-length: 14\r\nconnection: close\r\n\r\nunknown fields"
        } else {
            "HTTP/1.1 204 No Content\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
        };
        (&conn).write_all(answer.as_bytes())?;
        (&conn).flush()
    }

    /// The `webhook-id`s received on `path`, sorted (deliveries run side by side).
    fn ids(&self, path: &str) -> Vec<String> {
        let mut ids: Vec<String> = self
            .seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(p, _)| p == path)
            .map(|(_, id)| id.clone())
            .collect();
        ids.sort();
        ids
    }
}

/// `webhooks replay`, `replay-message` and `ordered`, with real deliveries to a loopback
/// receiver by an outbox keeping delivered messages for an hour: two events delivered to
/// `orders` are queued again by `replay` (in place: same ids, pending, sent again with
/// the same `webhook-id`), not by a range they were not delivered in (which says only
/// kept events can be replayed), and not twice while queued; `replay-message` queues one
/// kept event again and requeues a dead letter (a 422), and says what an id is when it
/// is neither; `ordered on|off` is stored and listed.
#[cfg(feature = "webhook")]
pub async fn webhooks_replay_and_order<H: Harness>() {
    use outbox::{
        webhook::{AddressPolicy, Webhook, WebhookClient, WebhookEndpoints, WebhookSender},
        Retention,
    };

    let receiver = HookReceiver::start();
    let h = H::new().await;
    let url = h.url();
    let admin = outbox::Admin::new(h.backend());
    let endpoints = WebhookEndpoints::new(&admin);
    let at = |path: &str| format!("http://127.0.0.1:{}{path}", receiver.port);
    endpoints.create("orders", &at("/orders")).await.unwrap();
    endpoints.create("refusing", &at("/refuse")).await.unwrap();
    let orders = endpoints.get("orders").await.unwrap().unwrap();
    let refusing = endpoints.get("refusing").await.unwrap().unwrap();
    let mut tx = h.pool().begin().await.unwrap();
    let mut ids = Vec::new();
    for n in 1..=2 {
        let event = Webhook::new(&orders, "invoice.paid", json!({ "invoice": n }));
        ids.push(event.enqueue(&mut *tx).await.unwrap().id().to_string());
    }
    let dead_id = Webhook::new(&refusing, "invoice.paid", json!({ "invoice": 3 }))
        .enqueue(&mut *tx)
        .await
        .unwrap()
        .id()
        .to_string();
    tx.commit().await.unwrap();
    let drain = || async {
        let client = WebhookClient::builder()
            .policy(
                AddressPolicy::new()
                    .allow("127.0.0.1/32".parse().unwrap())
                    .allow_http(true),
            )
            .build()
            .unwrap();
        Outbox::new(h.backend())
            .retention(Retention::keep_for(Duration::from_secs(3600)))
            .register::<Webhook, _>(WebhookSender::new(&admin, client))
            .drain()
            .await
            .unwrap()
    };
    let report = drain().await;
    assert_eq!(
        (report.counts.delivered, report.counts.given_up),
        (2, 1),
        "{report:?}"
    );
    assert_eq!(receiver.ids("/orders"), ids, "webhook-id is the message id");
    assert_eq!(receiver.ids("/refuse"), [dead_id.as_str()]);
    let queued = |group: &str| -> Vec<(String, String)> {
        let listed = outbox(&url, &["messages", "list", "--group", group, "--json"])
            .succeeded()
            .json();
        listed["messages"]
            .as_array()
            .unwrap_or_else(|| panic!("a messages array: {listed:#}"))
            .iter()
            .map(|m| {
                (
                    m["id"].as_str().unwrap().to_owned(),
                    m["state"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    assert!(
        queued("webhook:orders").is_empty(),
        "delivered, kept as done"
    );

    // A range they were not delivered in: nothing, and why.
    let out = outbox(&url, &["webhooks", "replay", "orders", "--until", "1h"])
        .succeeded()
        .stdout
        .clone();
    assert_eq!(
        out.trim_end(),
        "no event of webhook endpoint `orders` delivered more than 1h ago was queued again: \
         only delivered events kept for the retention window can be replayed (the \
         application keeps them with Retention::keep_for; by default a delivered event is \
         deleted)"
    );
    let none = outbox(
        &url,
        &[
            "webhooks", "replay", "orders", "--since", "2h", "--until", "1h", "--json",
        ],
    )
    .succeeded()
    .json();
    assert_eq!(none["replayed"], 0, "{none:#}");
    assert!(none["delivered_after"].is_string() && none["delivered_before"].is_string());
    assert!(queued("webhook:orders").is_empty());

    // The last two hours: both queued again, in place.
    let out = outbox(&url, &["webhooks", "replay", "orders", "--since", "2h"])
        .succeeded()
        .stdout
        .clone();
    assert!(
        out.starts_with(
            "queued again 2 event(s) of webhook endpoint `orders` delivered in the last 2h: \
             they go out with their webhook-id"
        ) && out.contains("`outbox messages list --group webhook:orders`"),
        "{out}"
    );
    let again: Vec<(String, String)> = ids
        .iter()
        .map(|id| (id.clone(), "pending".to_owned()))
        .collect();
    assert_eq!(queued("webhook:orders"), again, "the same ids, pending");
    // Queued already: not replayed twice.
    let twice = outbox(&url, &["webhooks", "replay", "orders", "--json"])
        .succeeded()
        .json();
    assert_eq!(twice["replayed"], 0, "{twice:#}");
    assert_eq!(twice["delivered_after"], Value::Null, "{twice:#}");
    let report = drain().await;
    assert_eq!(report.counts.delivered, 2, "{report:?}");
    let mut sent_twice = ids.clone();
    sent_twice.extend(ids.iter().cloned());
    sent_twice.sort();
    assert_eq!(
        receiver.ids("/orders"),
        sent_twice,
        "sent again with the same webhook-id"
    );
    assert!(queued("webhook:orders").is_empty());

    // One kept event by id; then it is queued, not replayable.
    let out = outbox(&url, &["webhooks", "replay-message", &ids[1]])
        .succeeded()
        .stdout
        .clone();
    assert_eq!(
        out.trim_end(),
        format!(
            "queued delivered webhook event {} (endpoint `orders`) again (it was kept for the \
             retention window): it goes out with the same webhook-id",
            ids[1]
        )
    );
    assert_eq!(
        queued("webhook:orders"),
        [(ids[1].clone(), "pending".to_owned())]
    );
    outbox(&url, &["webhooks", "replay-message", &ids[1]]).failed_with(&format!(
        "message {} is still queued (pending): it goes out on its own; `outbox messages \
         retry {}` makes it due now",
        ids[1], ids[1]
    ));

    // A dead letter by id: requeued.
    assert_eq!(dead_count(&h).await, 1);
    let r = outbox(&url, &["webhooks", "replay-message", &dead_id, "--json"])
        .succeeded()
        .json();
    assert_eq!(
        r,
        json!({ "id": dead_id, "replayed": true, "was": "dead_letter", "endpoint": "refusing" })
    );
    assert_eq!(dead_count(&h).await, 0);
    assert_eq!(
        queued("webhook:refusing"),
        [(dead_id.clone(), "pending".to_owned())]
    );
    let report = drain().await;
    assert_eq!(
        (report.counts.delivered, report.counts.given_up),
        (1, 1),
        "{report:?}"
    );
    assert_eq!(receiver.ids("/refuse"), [dead_id.clone(), dead_id.clone()]);
    let out = outbox(&url, &["webhooks", "replay-message", &dead_id])
        .succeeded()
        .stdout
        .clone();
    assert_eq!(
        out.trim_end(),
        format!(
            "requeued dead letter {dead_id} (endpoint `refusing`): the webhook event goes out \
             again, due now with its attempts reset"
        )
    );

    // Neither, and the refusals.
    outbox(&url, &["webhooks", "replay-message", "01NOSUCHMESSAGE"]).failed_with(
        "found neither a delivered webhook event kept for the retention window nor a dead \
         letter with id `01NOSUCHMESSAGE`: only events kept with Retention::keep_for can be \
         replayed, and `outbox dead list --type outbox.webhook` shows the dead letters",
    );
    outbox(&url, &["webhooks", "replay", "nope"])
        .failed_with("there is no webhook endpoint `nope`; `outbox webhooks list` lists them");
    outbox(
        &url,
        &[
            "webhooks", "replay", "orders", "--since", "1h", "--until", "2h",
        ],
    )
    .failed_with("--since 1h does not reach further back than --until 2h");
    let bad = outbox(&url, &["webhooks", "replay", "orders", "--since", "soon"]);
    assert_eq!(bad.code, 2, "{bad:?}");
    assert!(
        bad.stderr.contains("write a duration such as 30d"),
        "{bad:?}"
    );

    // Ordered on and off: stored, listed.
    let out = outbox(&url, &["webhooks", "ordered", "orders", "on"])
        .succeeded()
        .stdout
        .clone();
    assert!(
        out.starts_with(
            "webhook endpoint `orders` is ordered: its events enqueued from now on are \
             delivered one at a time, in enqueue order"
        ),
        "{out}"
    );
    assert!(endpoints.get("orders").await.unwrap().unwrap().ordered);
    assert!(!endpoints.get("refusing").await.unwrap().unwrap().ordered);
    let list = outbox(&url, &["webhooks", "list"])
        .succeeded()
        .stdout
        .clone();
    let ordered_column: Vec<(&str, &str)> = list
        .lines()
        .skip(1)
        .map(|l| {
            let cells: Vec<&str> = l.split_whitespace().collect();
            (cells[0], cells[cells.len() - 1])
        })
        .collect();
    assert_eq!(
        ordered_column,
        [("orders", "yes"), ("refusing", "no")],
        "{list}"
    );
    let json = outbox(&url, &["webhooks", "list", "--json"])
        .succeeded()
        .json();
    assert_eq!(json["endpoints"][0]["ordered"], true, "{json:#}");
    let off = outbox(&url, &["webhooks", "ordered", "orders", "off", "--json"])
        .succeeded()
        .json();
    assert_eq!(
        off,
        json!({ "endpoint": "orders", "ordered": false, "was_ordered": true })
    );
    assert!(!endpoints.get("orders").await.unwrap().unwrap().ordered);
    outbox(&url, &["webhooks", "ordered", "nope", "on"])
        .failed_with("there is no webhook endpoint `nope`");
    let bad = outbox(&url, &["webhooks", "ordered", "orders", "maybe"]);
    assert_eq!(bad.code, 2, "{bad:?}");
}

/// A step of an ordered sequence: the first of key `k-0` is rejected for good.
#[derive(Debug, Clone, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "cli.step", max_attempts = 1, ordered)]
pub struct Step {
    pub key: String,
    pub n: i64,
}

pub async fn held_keys_are_listed_with_what_holds_them<H: Harness>() {
    let h = H::new().await;
    let url = h.url();
    let mut tx = h.pool().begin().await.unwrap();
    for n in 0..3 {
        for key in ["k-0", "k-1"] {
            let step = Step { key: key.into(), n };
            let _ = step
                .enqueue_with(&mut *tx, EnqueueOptions::new().order_key(key))
                .await
                .unwrap();
        }
    }
    tx.commit().await.unwrap();
    let report = Outbox::new(h.backend())
        .register::<Step, _>(|step: Step, _: MessageContext| async move {
            if step.key == "k-0" && step.n == 0 {
                return Err(HandlerError::permanent("550 poisoned step"));
            }
            Ok(())
        })
        .drain()
        .await
        .unwrap();
    assert_eq!(report.counts.given_up, 1, "{report:?}");

    let run = outbox(&url, &["messages", "held", "cli.step"]);
    run.succeeded();
    for text in ["k-0", "dead", "550 poisoned step", "dead purge"] {
        assert!(run.stdout.contains(text), "{text}: {}", run.stdout);
    }
    assert!(!run.stdout.contains("k-1"), "{}", run.stdout);
    let held = outbox(&url, &["messages", "held", "cli.step", "--json"]).json();
    assert_eq!(held["held"][0]["key"], "k-0");
    assert_eq!(held["held"][0]["held_by"], "dead");
    assert_eq!(held["held"][0]["waiting"], 2);
    assert_eq!(held["held"].as_array().unwrap().len(), 1);

    // Purged: the key goes on and nothing is held.
    let id = held["held"][0]["message"].as_str().unwrap().to_owned();
    outbox(&url, &["dead", "purge", &id]).succeeded();
    let none = outbox(&url, &["messages", "held", "cli.step"]);
    none.succeeded();
    assert!(
        none.stdout.contains("no order key of `cli.step` is held"),
        "{none:#?}"
    );
    outbox(&url, &["messages", "held", "cli.nothing"]).failed_with("known types");
}

/// `relays` against the machine's NATS (127.0.0.1:4222, a stream of the test's own): five
/// events published and a poisoned key (its first event on a `$` subject, which the relay
/// refuses for good) holding its two later ones; the text and JSON say what waits, what
/// went out, what died and which key is held.
#[cfg(feature = "nats")]
pub async fn relays_show_what_waits_what_went_out_and_what_holds<H: Harness>() {
    use outbox::publish::{
        nats::{async_nats, ensure_stream, NatsRelay, StreamSettings},
        Event,
    };
    let h = H::new().await;
    let url = h.url();
    let client = async_nats::connect("nats://127.0.0.1:4222")
        .await
        .expect("the machine's NATS server at 127.0.0.1:4222 (with -js) must run");
    let js = async_nats::jetstream::new(client);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let tag = format!("clirelay{}x{nanos}", std::process::id());
    let stream = format!("OUTBOX_CLI_{tag}");
    ensure_stream(
        &js,
        StreamSettings::new(stream.clone(), [format!("{tag}.>")]),
    )
    .await
    .unwrap();
    let mut events = Vec::new();
    for n in 0..5 {
        events.push(
            Event::json(format!("{tag}.k{n}"), &json!({ "n": n }))
                .unwrap()
                .key(format!("k{n}")),
        );
    }
    events.push(
        Event::json(format!("${tag}.poison"), &json!({ "n": 0 }))
            .unwrap()
            .key("poison"),
    );
    for n in 1..3 {
        events.push(
            Event::json(format!("{tag}.poison"), &json!({ "n": n }))
                .unwrap()
                .key("poison"),
        );
    }
    let mut tx = h.pool().begin().await.unwrap();
    outbox::enqueue_many(&mut *tx, &events).await.unwrap();
    tx.commit().await.unwrap();
    let report = Outbox::new(h.backend())
        .register_with::<Event, _>(NatsRelay::new(js.clone()), QueueOptions::new())
        .drain()
        .await
        .unwrap();
    assert_eq!(report.counts.given_up, 1, "{report:?}");

    let run = outbox(&url, &["relays"]);
    run.succeeded();
    for text in [
        "relay `outbox.publish`",
        "waiting    2",
        "(5 events)",
        "1 dead letter(s) in the last 10m",
        "breaker    closed",
        "poison",
        "dead purge",
    ] {
        assert!(run.stdout.contains(text), "{text}: {}", run.stdout);
    }
    let json = outbox(&url, &["relays", "--json", "--window", "1h"]).json();
    assert_eq!(json["type"], "outbox.publish", "{json:#}");
    assert_eq!(json["waiting"], 2, "{json:#}");
    assert_eq!(json["published"], 5, "{json:#}");
    assert_eq!(json["dead"], 1, "{json:#}");
    assert_eq!(json["window_secs"], 3600, "{json:#}");
    assert_eq!(json["held"][0]["key"], "poison", "{json:#}");
    assert_eq!(json["held"][0]["held_by"], "dead", "{json:#}");
    assert_eq!(json["held"][0]["waiting"], 2, "{json:#}");
    let bad = outbox(&url, &["relays", "--window", "soon"]);
    assert_eq!(bad.code, 2, "{bad:?}");
    assert!(bad.stderr.contains("soon"), "{bad:?}");
    let _ = js.delete_stream(&stream).await;
}
