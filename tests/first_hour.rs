//! First-hour mistakes read well from `main`. This test has no harness: its own `main` is
//! `fn main() -> Result<(), outbox::Error>`. Run by `cargo test`, it checks that every
//! error type's `Debug` is its message, then starts itself again as an application that
//! forgot `outbox.migrate()`, and reads that process's stderr: the error's message (what to
//! do), not its `Debug` fields, with exit code 1.

use std::process::Command;

use outbox::prelude::*;
use serde::{Deserialize, Serialize};

/// Set in the process that plays the application.
const APP: &str = "OUTBOX_FIRST_HOUR_APP";

/// A note to deliver.
#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "first_hour.note")]
struct Note {
    text: String,
}

/// Prints the note.
async fn deliver(note: Note, _ctx: MessageContext) -> Result<(), HandlerError> {
    println!("{}", note.text);
    Ok(())
}

/// The application: opens its database, registers a handler, and drains without having
/// migrated.
#[tokio::main]
async fn application() -> Result<(), outbox::Error> {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("app.db").display());
    let pool = outbox::sqlite::connect(&url).await?;
    let outbox = Outbox::new(SqliteBackend::new(pool)).register::<Note, _>(deliver);
    // outbox.migrate().await?;   <- the forgotten step
    outbox.drain().await?;
    Ok(())
}

fn main() -> Result<(), outbox::Error> {
    if std::env::var_os(APP).is_some() {
        return application();
    }
    every_error_debugs_as_its_message();
    let out = Command::new(std::env::current_exe().unwrap())
        .env(APP, "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("Error: the outbox table `outbox_")
            && stderr.contains("` does not exist")
            && stderr.contains("call `outbox.migrate()` at start-up"),
        "{stderr}"
    );
    assert!(!stderr.contains("NotMigrated"), "no Debug fields: {stderr}");
    println!("a main that forgot migrate() printed:\n{stderr}");
    println!("test first_hour ... ok");
    Ok(())
}

/// `Debug` of each error type is its `Display` message.
fn every_error_debugs_as_its_message() {
    let e = outbox::Error::NotMigrated {
        table: "outbox_messages".into(),
    };
    assert_eq!(format!("{e:?}"), e.to_string());
    let e = outbox::EnqueueError::NotMigrated {
        table: "outbox_messages".into(),
    };
    assert_eq!(format!("{e:?}"), e.to_string());
    let invalid = outbox::InvalidMessage::new("to[0]", "not an address");
    assert_eq!(format!("{invalid:?}"), invalid.to_string());
    let config = outbox::smtp::Mailer::from_url("smtp://").unwrap_err();
    assert_eq!(format!("{config:?}"), config.to_string());
    assert!(format!("{config:?}").contains("setting `"), "{config:?}");
}
