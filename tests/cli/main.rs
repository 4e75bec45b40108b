//! The command line, tested by running the `outbox` binary against real databases (a
//! temporary SQLite file, and a fresh database per test on the PostgreSQL and MariaDB
//! servers, see `tests/conformance/harness.rs`) and checking its output and exit codes;
//! and the embedded `outbox::cli::Command` run in-process on an application's outbox.
//! An unreachable server fails the tests loudly.

#[path = "../conformance/harness.rs"]
mod harness;

mod cases;
mod embedded;

/// The same cases per backend feature.
macro_rules! cli_cases {
    ($backend:ident, $harness:ty, $feature:literal) => {
        #[cfg(feature = $feature)]
        mod $backend {
            use super::{cases, embedded};
            type H = $harness;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn status_and_dead_letters() {
                cases::status_and_dead_letters::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn status_says_when_no_worker_runs() {
                cases::status_says_when_no_worker_runs::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn messages_are_found_by_recipient() {
                cases::messages_are_found_by_recipient::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn status_shows_the_circuit_breakers() {
                cases::status_shows_the_circuit_breakers::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn bulk_requeue_and_purge_need_confirmation() {
                cases::bulk_requeue_and_purge_need_confirmation::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn pause_resume_and_rate_limits() {
                cases::pause_resume_and_rate_limits::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn unknown_ids_and_types_are_errors() {
                cases::unknown_ids_and_types_are_errors::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn groups_pause_resume_and_cancel() {
                cases::groups_pause_resume_and_cancel::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn live_messages_list_show_retry_and_cancel() {
                cases::live_messages_list_show_retry_and_cancel::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_running_message_is_left_alone() {
                cases::a_running_message_is_left_alone::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn suppressions_add_list_remove_and_stopped() {
                cases::suppressions_add_list_remove_and_stopped::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn shaping_rules_and_sites() {
                cases::shaping_rules_and_sites::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn an_unmigrated_database_says_to_migrate() {
                cases::an_unmigrated_database_says_to_migrate::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn stored_replies_are_printed_with_control_characters_escaped() {
                cases::stored_replies_are_printed_with_control_characters_escaped::<H>().await
            }
            #[cfg(feature = "webhook")]
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn webhooks_list_disable_enable_and_rotate() {
                cases::webhooks_list_disable_enable_and_rotate::<H>().await
            }
            #[cfg(feature = "webhook")]
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn webhooks_replay_and_order() {
                cases::webhooks_replay_and_order::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn held_keys_are_listed_with_what_holds_them() {
                cases::held_keys_are_listed_with_what_holds_them::<H>().await
            }
            #[cfg(feature = "nats")]
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn relays_show_what_waits_what_went_out_and_what_holds() {
                cases::relays_show_what_waits_what_went_out_and_what_holds::<H>().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn embedded_drain_exit_code_and_work() {
                embedded::drain_exit_code_and_work::<H>().await
            }
        }
    };
}

cli_cases!(sqlite, crate::harness::SqliteHarness, "sqlite");
cli_cases!(postgres, crate::harness::PostgresHarness, "postgres");
cli_cases!(mysql, crate::harness::MySqlHarness, "mysql");

/// Bad URLs, whatever backends are built in.
mod urls {
    use crate::cases::{outbox, outbox_env};

    #[test]
    fn a_missing_url_says_how_to_give_one() {
        let r = outbox_env(None, &["status"]);
        r.failed_with("no database given: pass --database-url URL or set DATABASE_URL");
    }

    #[test]
    fn database_url_comes_from_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("env.db").display());
        outbox_env(Some(&url), &["migrate"]).succeeded();
        let r = outbox_env(Some(&url), &["status"]);
        r.succeeded();
        assert!(r.stdout.contains("no messages"), "{r:?}");
    }

    #[test]
    fn an_unknown_scheme_lists_the_known_ones() {
        outbox("redis://127.0.0.1/0", &["status"])
            .failed_with("names no database this binary knows: write sqlite://PATH");
    }

    #[test]
    fn a_missing_sqlite_file_is_not_created() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("typo.db");
        let url = format!("sqlite://{}", path.display());
        outbox(&url, &["status"])
            .failed_with("there is no SQLite database at")
            .failed_with("`outbox migrate` creates a new one");
        assert!(!path.exists(), "a mistyped path must not create a file");
        outbox(&url, &["migrate"]).succeeded();
        assert!(path.exists(), "migrate creates the file");
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn an_unreachable_postgres_server_is_named_without_its_password() {
        let r = outbox("postgres://app:s3cret@127.0.0.1:1/app", &["status"]);
        r.failed_with("cannot reach the database at postgres://app:***@127.0.0.1:1/app")
            .failed_with("check the host and port");
        assert!(!r.stderr.contains("s3cret"), "{r:?}");
    }

    /// A password holding `/`, `?` or `@` makes the URL malformed; it is still never
    /// printed (it used to be, whole, when the `/` ended the parsed authority early).
    #[cfg(all(feature = "postgres", feature = "mysql"))]
    #[test]
    fn a_malformed_url_never_shows_its_password() {
        for (url, secret) in [
            ("postgres://u:se/cret@127.0.0.1:5499/db", "se/cret"),
            ("postgres://u:se?cret@127.0.0.1:5499/db", "se?cret"),
            ("mysql://u:s@e/cret@127.0.0.1:1/db", "s@e/cret"),
            ("postgres://u:pw@127.0.0.1:notaport/db", "pw@"),
        ] {
            let r = outbox(url, &["status"]);
            assert!(!r.stderr.contains(secret), "{url}: {r:?}");
            assert!(!r.stdout.contains(secret), "{url}: {r:?}");
            assert!(!r.stderr.is_empty(), "{url}: an error was printed");
        }
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn a_missing_postgres_database_is_named() {
        let url = crate::harness::with_database(
            &crate::cases::postgres_admin_url(),
            "outbox_t_no_such_db",
        );
        outbox(&url, &["status"]).failed_with("does not exist");
    }

    #[cfg(feature = "mysql")]
    #[test]
    fn a_missing_mysql_database_is_named() {
        let url =
            crate::harness::with_database(&crate::cases::mysql_admin_url(), "outbox_t_no_such_db");
        outbox(&url, &["status"]).failed_with("does not exist");
    }

    #[cfg(feature = "mysql")]
    #[test]
    fn a_refused_mysql_login_says_to_check_the_credentials() {
        let url = crate::cases::with_user_info(
            &crate::cases::mysql_admin_url(),
            "outbox_no_such_user:pw",
        );
        let r = outbox(&url, &["status"]);
        r.failed_with("refused the login")
            .failed_with("check the user and password");
        assert!(!r.stderr.contains(":pw@"), "{r:?}");
    }

    #[test]
    fn invalid_arguments_exit_with_2() {
        let r = outbox("sqlite://unused.db", &["dead", "requeue"]);
        assert_eq!(r.code, 2, "{r:?}");
        assert!(r.stderr.contains("<ID|--type <TYPE>|--all>"), "{r:?}");
        let r = outbox(
            "sqlite://unused.db",
            &["dead", "purge", "--older-than", "soon"],
        );
        assert_eq!(r.code, 2, "{r:?}");
        assert!(r.stderr.contains("write a duration such as 30d"), "{r:?}");
    }

    #[test]
    fn help_lists_every_command() {
        let r = outbox_env(None, &["--help"]);
        r.succeeded();
        for c in [
            "migrate",
            "status",
            "dead",
            "pause",
            "resume",
            "rate-limit",
            "groups",
            "group",
            "messages",
            "Exit codes",
        ] {
            assert!(r.stdout.contains(c), "`{c}` missing from --help: {r:?}");
        }
    }
}

/// `status --watch` keeps reporting until it is stopped.
mod watch {
    use std::{
        io::{BufRead, BufReader},
        process::{Command, Stdio},
    };

    use crate::cases::outbox;

    #[test]
    fn status_watch_reports_again_and_again() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("watch.db").display());
        outbox(&url, &["migrate"]).succeeded();
        outbox(&url, &["pause", "cli.watched"]);
        let mut child = Command::new(env!("CARGO_BIN_EXE_outbox"))
            .args([
                "--database-url",
                &url,
                "status",
                "--watch",
                "--json",
                "--interval",
                "100ms",
            ])
            .env_remove("DATABASE_URL")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start outbox status --watch");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        for _ in 0..3 {
            let line = lines.next().expect("another report").expect("read stdout");
            let report: serde_json::Value =
                serde_json::from_str(&line).expect("one JSON document per line");
            assert_eq!(report["types"][0]["type"], "cli.watched", "{report:#}");
        }
        assert!(child.try_wait().unwrap().is_none(), "still watching");
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
