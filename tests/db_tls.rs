//! TLS to the database: private PostgreSQL and MariaDB servers with a throwaway CA's
//! certificate, which refuse unencrypted TCP connections, started by the tests themselves
//! (`tests/common/servers.rs`). The library (`outbox::{postgres,mysql}::connect`) and the
//! `outbox` binary connect with `sslmode=require` / `ssl-mode=REQUIRED`, a message is
//! enqueued and delivered over it, and the server itself says the sessions are encrypted;
//! certificate verification passes with the right CA and fails, saying why, with another.

#[path = "common/servers.rs"]
mod servers;

use std::sync::{Arc, Mutex};

use outbox::prelude::*;
use serde::{Deserialize, Serialize};
use servers::{PrivateMariaDb, PrivatePostgres, TestCerts};

#[derive(Debug, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "tls.mail")]
struct Mail {
    to: String,
}

type Seen = Arc<Mutex<Vec<String>>>;

async fn deliver(m: Mail, ctx: MessageContext<Seen>) -> Result<(), HandlerError> {
    ctx.state().lock().unwrap().push(m.to);
    Ok(())
}

/// `base?query` or `base&query`.
fn with_query(url: &str, query: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{query}")
}

/// Runs the `outbox` binary with `--database-url url` and `args`; (exit code, stdout, stderr).
fn outbox_cli(url: &str, args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_outbox"))
        .arg("--database-url")
        .arg(url)
        .args(args)
        .env_remove("DATABASE_URL")
        .env_remove("PGSSLMODE")
        .env_remove("PGSSLROOTCERT")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run the outbox binary");
    (
        out.status.code().expect("exited, not killed"),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

mod postgres {
    use super::*;
    use sqlx::PgPool;

    /// Whether this pool's session is encrypted, as the server sees it.
    async fn session_is_tls(pool: &PgPool) -> bool {
        sqlx::query_scalar("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
            .fetch_one(pool)
            .await
            .unwrap()
    }

    /// Client sessions on the database `test` that are not encrypted, as the server sees them.
    async fn plain_sessions(pool: &PgPool) -> i64 {
        sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) \
             WHERE a.datname = 'test' AND a.backend_type = 'client backend' AND NOT s.ssl",
        )
        .fetch_one(pool)
        .await
        .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn require_enqueues_and_delivers_over_tls() {
        let certs = TestCerts::new("postgres");
        let server = PrivatePostgres::start_tls(&certs);

        // The server refuses what is not encrypted: the checks below can fail.
        let plain = outbox::postgres::connect(&with_query(&server.url(), "sslmode=disable")).await;
        let refused = plain.expect_err("the server takes only TLS").to_string();
        println!("sslmode=disable: {refused}");
        assert!(refused.contains("no encryption"), "{refused}");

        let url = with_query(&server.url(), "sslmode=require");
        let pool = outbox::postgres::connect(&url)
            .await
            .unwrap_or_else(|e| panic!("connect with sslmode=require: {e}"));
        assert!(
            session_is_tls(&pool).await,
            "pg_stat_ssl says the session is plain"
        );

        let seen: Seen = Arc::default();
        let outbox = Outbox::with_state(PostgresBackend::new(pool.clone()), Arc::clone(&seen))
            .register::<Mail, _>(deliver);
        outbox.migrate().await.unwrap();
        let mut tx = pool.begin().await.unwrap();
        let _ = Mail {
            to: "ada@example.com".into(),
        }
        .enqueue(&mut *tx)
        .await
        .unwrap();
        tx.commit().await.unwrap();
        let report = outbox.drain().await.unwrap();
        assert_eq!(report.counts.delivered, 1);
        assert_eq!(*seen.lock().unwrap(), vec!["ada@example.com".to_string()]);
        assert_eq!(plain_sessions(&pool).await, 0);

        // Without sslmode the default (prefer) encrypts when the server offers TLS.
        let default = outbox::postgres::connect(&server.url())
            .await
            .unwrap_or_else(|e| panic!("connect without sslmode: {e}"));
        assert!(session_is_tls(&default).await);
        default.close().await;
        pool.close().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn verify_full_checks_the_ca() {
        let certs = TestCerts::new("postgres");
        let other = TestCerts::new("another");
        let server = PrivatePostgres::start_tls(&certs);

        for host in ["127.0.0.1", "localhost"] {
            let url = format!(
                "postgres://postgres@{host}:{}/test?sslmode=verify-full&sslrootcert={}",
                server.port(),
                certs.ca.display()
            );
            let pool = outbox::postgres::connect(&url)
                .await
                .unwrap_or_else(|e| panic!("verify-full with the server's CA ({host}): {e}"));
            assert!(session_is_tls(&pool).await);
            pool.close().await;
        }

        let wrong = with_query(
            &server.url(),
            &format!("sslmode=verify-full&sslrootcert={}", other.ca.display()),
        );
        let err = outbox::postgres::connect(&wrong)
            .await
            .expect_err("a certificate from another CA is refused")
            .to_string();
        println!("verify-full with another CA: {err}");
        assert!(err.contains("certificate"), "{err}");
        assert!(err.contains("UnknownIssuer"), "{err}");

        // A CA file that is not there is named with its parameter, not a bare "No such file".
        let missing = with_query(
            &server.url(),
            "sslmode=verify-full&sslrootcert=/nonexistent/ca.pem",
        );
        let err = outbox::postgres::connect(&missing)
            .await
            .expect_err("a missing CA file")
            .to_string();
        println!("verify-full with a missing CA file: {err}");
        assert!(
            err.contains("`/nonexistent/ca.pem`, given as sslrootcert="),
            "{err}"
        );

        // A certificate for another name: verify-ca takes it, verify-full does not.
        let localhost_only = TestCerts::for_names("postgres", &["localhost"]);
        let server = PrivatePostgres::start_tls(&localhost_only);
        let ca = localhost_only.ca.display();
        let pool = outbox::postgres::connect(&with_query(
            &server.url(),
            &format!("sslmode=verify-ca&sslrootcert={ca}"),
        ))
        .await
        .unwrap_or_else(|e| panic!("verify-ca does not check the name: {e}"));
        pool.close().await;
        let err = outbox::postgres::connect(&with_query(
            &server.url(),
            &format!("sslmode=verify-full&sslrootcert={ca}"),
        ))
        .await
        .expect_err("127.0.0.1 is not in the certificate")
        .to_string();
        println!("verify-full, certificate for localhost only: {err}");
        assert!(err.contains("certificate not valid for name"), "{err}");

        // require against a server without TLS.
        let plain = PrivatePostgres::start();
        let err = outbox::postgres::connect(&with_query(&plain.url(), "sslmode=require"))
            .await
            .expect_err("the server has no TLS")
            .to_string();
        println!("sslmode=require, server without TLS: {err}");
        assert!(err.contains("server does not support TLS"), "{err}");
    }

    #[test]
    fn the_cli_connects_with_sslmode_require() {
        let certs = TestCerts::new("postgres");
        let server = PrivatePostgres::start_tls(&certs);
        let url = with_query(&server.url(), "sslmode=require");

        let (code, out, err) = outbox_cli(&url, &["migrate"]);
        assert_eq!(code, 0, "migrate over TLS:\n{out}\n{err}");
        let (code, out, err) = outbox_cli(&url, &["status"]);
        println!("outbox status (sslmode=require):\n{out}{err}");
        assert_eq!(code, 0, "status over TLS:\n{out}\n{err}");

        let (code, out, err) =
            outbox_cli(&with_query(&server.url(), "sslmode=disable"), &["status"]);
        println!("outbox status (sslmode=disable): exit {code}\n{out}{err}");
        assert_ne!(code, 0, "the server takes only TLS:\n{out}\n{err}");
        assert!(err.contains("sslmode=require"), "{err}");

        let verify = |ca: &std::path::Path| {
            let query = format!("sslmode=verify-full&sslrootcert={}", ca.display());
            outbox_cli(&with_query(&server.url(), &query), &["status"])
        };
        let (code, out, err) = verify(&certs.ca);
        assert_eq!(code, 0, "verify-full with the server's CA:\n{out}\n{err}");
        let (code, out, err) = verify(&TestCerts::new("another").ca);
        println!("outbox status (verify-full, another CA): exit {code}\n{out}{err}");
        assert_ne!(
            code, 0,
            "a certificate from another CA is refused:\n{out}\n{err}"
        );
        assert!(
            err.contains("UnknownIssuer") && err.contains("sslrootcert"),
            "{err}"
        );
        let (code, out, err) = verify(std::path::Path::new("/nonexistent/ca.pem"));
        println!("outbox status (verify-full, missing CA file): exit {code}\n{out}{err}");
        assert_ne!(code, 0, "{out}\n{err}");
        assert!(
            err.contains("`/nonexistent/ca.pem`, given as sslrootcert="),
            "{err}"
        );
        drop(server);
    }
}

mod mariadb {
    use super::*;
    use sqlx::MySqlPool;

    /// The cipher of this pool's session as the server sees it (empty when plain).
    async fn session_cipher(pool: &MySqlPool) -> String {
        let (_, cipher): (String, String) = sqlx::query_as("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
            .fetch_one(pool)
            .await
            .unwrap();
        cipher
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn required_enqueues_and_delivers_over_tls() {
        let certs = TestCerts::new("mariadb");
        let server = PrivateMariaDb::start_tls(&certs);

        // The server refuses what is not encrypted: the checks below can fail.
        let plain = outbox::mysql::connect(&with_query(&server.url(), "ssl-mode=DISABLED")).await;
        let refused = plain.expect_err("the server takes only TLS").to_string();
        println!("ssl-mode=DISABLED: {refused}");
        // MariaDB says "Access denied" to a plain login under require_secure_transport
        // (MySQL names the insecure transport); the same login over TLS is let in below.
        assert!(
            refused.contains("Access denied") || refused.contains("insecure transport"),
            "{refused}"
        );

        let url = with_query(&server.url(), "ssl-mode=REQUIRED");
        let pool = outbox::mysql::connect(&url)
            .await
            .unwrap_or_else(|e| panic!("connect with ssl-mode=REQUIRED: {e}"));
        let cipher = session_cipher(&pool).await;
        println!("Ssl_cipher: {cipher}");
        assert!(!cipher.is_empty(), "the server says the session is plain");

        let seen: Seen = Arc::default();
        let outbox = Outbox::with_state(MySqlBackend::new(pool.clone()), Arc::clone(&seen))
            .register::<Mail, _>(deliver);
        outbox.migrate().await.unwrap();
        let mut tx = pool.begin().await.unwrap();
        let _ = Mail {
            to: "ada@example.com".into(),
        }
        .enqueue(&mut *tx)
        .await
        .unwrap();
        tx.commit().await.unwrap();
        let report = outbox.drain().await.unwrap();
        assert_eq!(report.counts.delivered, 1);
        assert_eq!(*seen.lock().unwrap(), vec!["ada@example.com".to_string()]);

        // Without ssl-mode the default (PREFERRED) encrypts when the server offers TLS.
        let default = outbox::mysql::connect(&server.url())
            .await
            .unwrap_or_else(|e| panic!("connect without ssl-mode: {e}"));
        assert!(!session_cipher(&default).await.is_empty());
        default.close().await;
        pool.close().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn verify_identity_checks_the_ca() {
        let certs = TestCerts::new("mariadb");
        let other = TestCerts::new("another");
        let server = PrivateMariaDb::start_tls(&certs);

        for host in ["127.0.0.1", "localhost"] {
            let url = format!(
                "mysql://root@{host}:{}/test?ssl-mode=VERIFY_IDENTITY&ssl-ca={}",
                server.port(),
                certs.ca.display()
            );
            let pool = outbox::mysql::connect(&url)
                .await
                .unwrap_or_else(|e| panic!("VERIFY_IDENTITY with the server's CA ({host}): {e}"));
            assert!(!session_cipher(&pool).await.is_empty());
            pool.close().await;
        }

        let wrong = with_query(
            &server.url(),
            &format!("ssl-mode=VERIFY_IDENTITY&ssl-ca={}", other.ca.display()),
        );
        let err = outbox::mysql::connect(&wrong)
            .await
            .expect_err("a certificate from another CA is refused")
            .to_string();
        println!("VERIFY_IDENTITY with another CA: {err}");
        assert!(err.contains("certificate"), "{err}");
        assert!(err.contains("UnknownIssuer"), "{err}");

        // A CA file that is not there is named with its parameter, not a bare "No such file".
        let missing = with_query(
            &server.url(),
            "ssl-mode=VERIFY_CA&ssl-ca=/nonexistent/ca.pem",
        );
        let err = outbox::mysql::connect(&missing)
            .await
            .expect_err("a missing CA file")
            .to_string();
        println!("VERIFY_CA with a missing CA file: {err}");
        assert!(
            err.contains("`/nonexistent/ca.pem`, given as ssl-ca="),
            "{err}"
        );

        // A certificate for another name: VERIFY_CA takes it, VERIFY_IDENTITY does not.
        let localhost_only = TestCerts::for_names("mariadb", &["localhost"]);
        let server = PrivateMariaDb::start_tls(&localhost_only);
        let ca = localhost_only.ca.display();
        let pool = outbox::mysql::connect(&with_query(
            &server.url(),
            &format!("ssl-mode=VERIFY_CA&ssl-ca={ca}"),
        ))
        .await
        .unwrap_or_else(|e| panic!("VERIFY_CA does not check the name: {e}"));
        pool.close().await;
        let err = outbox::mysql::connect(&with_query(
            &server.url(),
            &format!("ssl-mode=VERIFY_IDENTITY&ssl-ca={ca}"),
        ))
        .await
        .expect_err("127.0.0.1 is not in the certificate")
        .to_string();
        println!("VERIFY_IDENTITY, certificate for localhost only: {err}");
        assert!(err.contains("certificate not valid for name"), "{err}");

        // REQUIRED against a server without TLS.
        let plain = PrivateMariaDb::start();
        let err = outbox::mysql::connect(&with_query(&plain.url(), "ssl-mode=REQUIRED"))
            .await
            .expect_err("the server has no TLS")
            .to_string();
        println!("ssl-mode=REQUIRED, server without TLS: {err}");
        assert!(err.contains("server does not support TLS"), "{err}");
    }

    #[test]
    fn the_cli_connects_with_ssl_mode_required() {
        let certs = TestCerts::new("mariadb");
        let server = PrivateMariaDb::start_tls(&certs);
        let url = with_query(&server.url(), "ssl-mode=REQUIRED");

        let (code, out, err) = outbox_cli(&url, &["migrate"]);
        assert_eq!(code, 0, "migrate over TLS:\n{out}\n{err}");
        let (code, out, err) = outbox_cli(&url, &["status"]);
        println!("outbox status (ssl-mode=REQUIRED):\n{out}{err}");
        assert_eq!(code, 0, "status over TLS:\n{out}\n{err}");

        let (code, out, err) =
            outbox_cli(&with_query(&server.url(), "ssl-mode=DISABLED"), &["status"]);
        println!("outbox status (ssl-mode=DISABLED): exit {code}\n{out}{err}");
        assert_ne!(code, 0, "the server takes only TLS:\n{out}\n{err}");

        let verify = |ca: &std::path::Path| {
            let query = format!("ssl-mode=VERIFY_IDENTITY&ssl-ca={}", ca.display());
            outbox_cli(&with_query(&server.url(), &query), &["status"])
        };
        let (code, out, err) = verify(&certs.ca);
        assert_eq!(
            code, 0,
            "VERIFY_IDENTITY with the server's CA:\n{out}\n{err}"
        );
        let (code, out, err) = verify(&TestCerts::new("another").ca);
        println!("outbox status (VERIFY_IDENTITY, another CA): exit {code}\n{out}{err}");
        assert_ne!(
            code, 0,
            "a certificate from another CA is refused:\n{out}\n{err}"
        );
        assert!(
            err.contains("UnknownIssuer") && err.contains("ssl-ca"),
            "{err}"
        );
        let (code, out, err) = verify(std::path::Path::new("/nonexistent/ca.pem"));
        println!("outbox status (VERIFY_IDENTITY, missing CA file): exit {code}\n{out}{err}");
        assert_ne!(code, 0, "{out}\n{err}");
        assert!(
            err.contains("`/nonexistent/ca.pem`, given as ssl-ca="),
            "{err}"
        );
        drop(server);
    }
}
