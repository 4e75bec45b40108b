//! A connection layer whose cargo feature is off: the compile error names the feature, in
//! one short error. The test suite runs with every feature on, so the feature-off build is
//! a tiny application crate written to a temporary directory (depending on this checkout
//! by path, with this workspace's `Cargo.lock`) and checked with `cargo check --offline`
//! into its own target directory (`<target>/fixtures`, kept between runs so only the first
//! run builds the dependencies).

use std::{
    path::{Path, PathBuf},
    process::Command,
};

/// The application's manifest: outbox with its default features (SQLite only), and the
/// connection layers it uses without having turned on their outbox features.
const MANIFEST: &str = r#"[package]
name = "outbox-feature-off"
version = "0.0.0"
edition = "2021"
publish = false

[workspace]

[dependencies]
outbox = { path = "@ROOT@" }
serde = { version = "1", features = ["derive"] }
diesel = { version = "2.3.14", default-features = false, features = ["sqlite"] }
sqlx08 = { package = "sqlx", version = "0.8.6", default-features = false, features = ["runtime-tokio", "postgres"] }
"#;

/// Sync diesel on SQLite without outbox's `diesel-sqlite`.
const DIESEL_SQLITE: &str = r#"
use outbox::{EnqueueBlocking, OutboxMessage};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, OutboxMessage)]
struct WelcomeMail {
    user_id: i64,
}

pub fn signup(conn: &mut diesel::SqliteConnection) {
    let _ = WelcomeMail { user_id: 1 }.enqueue_blocking(conn);
}

fn main() {}
"#;

/// sqlx 0.8 on PostgreSQL without outbox's `sqlx08`.
const SQLX08: &str = r#"
use outbox::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, OutboxMessage)]
struct WelcomeMail {
    user_id: i64,
}

pub async fn signup(pool: sqlx08::PgPool) {
    let mut tx = pool.begin().await.unwrap();
    let _ = WelcomeMail { user_id: 1 }.enqueue(&mut *tx).await;
}

fn main() {}
"#;

/// The target directory this test was built into (`<target>/debug/deps/<this test>`).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    exe.ancestors()
        .nth(3)
        .expect("<target>/debug/deps/<test>")
        .to_path_buf()
}

/// Writes the application with `main_rs` as a binary and checks it; returns what the
/// compiler printed (it must fail).
fn check(bin: &str, main_rs: &str) -> String {
    // The workspace root (this test's package is its `tests/` member).
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    // One fixture directory per case and checkout, so parallel tests (and worktrees) do not
    // share sources; the target directory is shared (cargo locks it), the dependencies are
    // built once.
    let checkout = {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        root.hash(&mut h);
        h.finish()
    };
    let dir = target_dir()
        .join("fixtures")
        .join("src")
        .join(format!("{bin}-{checkout:016x}"));
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        MANIFEST.replace("@ROOT@", &root.replace('\\', "/")),
    )
    .unwrap();
    std::fs::copy(Path::new(root).join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    std::fs::write(dir.join("src/main.rs"), main_rs).unwrap();
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args([
            "check",
            "--offline",
            "--quiet",
            "--color",
            "never",
            "--target-dir",
        ])
        .arg(target_dir().join("fixtures"))
        .current_dir(&dir)
        .env_remove("RUSTFLAGS")
        .env("CARGO_TERM_COLOR", "never")
        .output()
        .expect("run cargo check on the fixture");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success(),
        "{bin} compiled, but must not:\n{stderr}"
    );
    assert!(
        !stderr.contains("failed to select a version")
            && !stderr.contains("no matching package")
            && !stderr.contains("failed to load source"),
        "the fixture could not be resolved offline:\n{stderr}"
    );
    println!("--- {bin}: cargo check printed ---\n{stderr}");
    stderr
}

/// How many errors the compiler reported.
fn errors(stderr: &str) -> usize {
    stderr.lines().filter(|l| l.starts_with("error[")).count()
        + stderr
            .lines()
            .filter(|l| l.starts_with("error:") && !l.starts_with("error: could not compile"))
            .count()
}

#[test]
fn forgetting_diesel_sqlite_names_the_feature_once() {
    let stderr = check("diesel_sqlite_off", DIESEL_SQLITE);
    assert!(!stderr.contains("unresolved import"), "{stderr}");
    assert_eq!(errors(&stderr), 1, "one error:\n{stderr}");
    assert_eq!(
        stderr.matches("features = [\"diesel-sqlite\"]").count(),
        1,
        "the fix, once:\n{stderr}"
    );
    assert!(stderr.lines().count() <= 25, "short:\n{stderr}");
}

#[test]
fn forgetting_sqlx08_names_the_feature_once() {
    let stderr = check("sqlx08_off", SQLX08);
    assert_eq!(errors(&stderr), 1, "one error:\n{stderr}");
    assert_eq!(
        stderr.matches("features = [\"sqlx08\"]").count(),
        1,
        "the fix, once:\n{stderr}"
    );
    assert!(stderr.lines().count() <= 30, "short:\n{stderr}");
}
