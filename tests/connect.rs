//! `outbox::{sqlite,postgres,mysql}::connect` say what was wrong and what to do when a
//! database cannot be opened, at once: a refused connection does not wait for the pool's
//! timeout, a URL for another database names the function that opens it, and the URL's
//! password is never shown. Against the machine's PostgreSQL and MariaDB servers (an
//! unreachable server fails the tests loudly) and real SQLite files.

use std::time::{Duration, Instant};

/// A loopback port nothing listens on: bound, then let go.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// `url` with its database name replaced by `db`.
#[allow(dead_code)]
fn with_database(url: &str, db: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let cut = base.rfind('/').expect("a database URL has a path");
    match query {
        Some(q) => format!("{}/{db}?{q}", &base[..cut]),
        None => format!("{}/{db}", &base[..cut]),
    }
}

/// The error text of a failed connect.
fn connect_message<T>(result: Result<T, outbox::Error>) -> String {
    match result {
        Ok(_) => panic!("connect succeeded, but must fail"),
        Err(e) => e.to_string(),
    }
}

/// Six connections of `pool`, held at once (so each is a socket of its own).
#[cfg(all(target_os = "linux", any(feature = "postgres", feature = "mysql")))]
async fn hold_six<DB: sqlx::Database>(
    pool: &sqlx::Pool<DB>,
) -> Vec<sqlx::pool::PoolConnection<DB>> {
    let mut held = Vec::new();
    for _ in 0..6 {
        held.push(pool.acquire().await.unwrap());
    }
    held
}

/// Asserts that this process's TCP socket bound to local `port` (a pool's connection, found
/// by the client port the server reports) exists and has TCP_NODELAY.
#[cfg(all(target_os = "linux", any(feature = "postgres", feature = "mysql")))]
fn assert_nodelay(port: u16) {
    use std::os::fd::BorrowedFd;
    let fds = std::fs::read_dir("/proc/self/fd").expect("/proc/self/fd lists the open files");
    for fd in fds.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok()) {
        // SAFETY: the descriptor was listed as open; a socket closed meanwhile only makes
        // the calls fail.
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        let socket = socket2::SockRef::from(&fd);
        let local = socket.local_addr().ok().and_then(|a| a.as_socket());
        if local.is_some_and(|a| a.port() == port) && socket.peer_addr().is_ok() {
            assert!(
                socket.tcp_nodelay().unwrap(),
                "the connection from local port {port} has no TCP_NODELAY"
            );
            return;
        }
    }
    panic!("no socket of this process has local port {port}");
}

/// Well below the pool's 10 s acquire timeout, which a refused connection used to wait
/// out (and then say only "pool timed out").
const AT_ONCE: Duration = Duration::from_secs(5);

#[cfg(feature = "postgres")]
mod postgres {
    use super::*;

    fn server() -> String {
        std::env::var("OUTBOX_TEST_POSTGRES_URL")
            .unwrap_or_else(|_| outbox::postgres::DEFAULT_URL.into())
    }

    #[tokio::test]
    async fn a_refused_connection_fails_at_once_and_names_host_and_port() {
        let port = closed_port();
        let url = format!("postgres://app:s3cret@127.0.0.1:{port}/app");
        let started = Instant::now();
        let text = connect_message(outbox::postgres::connect(&url).await);
        let took = started.elapsed();
        println!("{took:?}: {text}");
        assert!(
            took < AT_ONCE,
            "waited {took:?} for a refused connection: {text}"
        );
        assert!(
            text.contains(&format!(
                "cannot reach the database at postgres://app:***@127.0.0.1:{port}/app"
            )) && text.contains("check the host and port in the URL")
                && !text.contains("s3cret")
                && !text.contains("pool timed out"),
            "{text}"
        );
    }

    /// A host that takes the connection but never speaks (a hung server, a proxy whose
    /// backend is gone): named after the connect timeout.
    #[tokio::test]
    async fn a_server_that_never_answers_is_named_after_the_timeout() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let silent = tokio::spawn(async move {
            let mut held = Vec::new();
            loop {
                held.push(listener.accept().await.unwrap().0);
            }
        });
        let url = format!("postgres://app@127.0.0.1:{port}/app");
        let text = connect_message(outbox::postgres::connect(&url).await);
        silent.abort();
        println!("{text}");
        assert!(
            text.contains(&format!(
                "cannot reach the database at {url}: no answer within 10 s"
            )) && text.contains("check the host and port in the URL"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn an_unknown_database_says_to_check_the_name_or_create_it() {
        let url = with_database(&server(), "outbox_no_such_database");
        let text = connect_message(outbox::postgres::connect(&url).await);
        println!("{text}");
        assert!(
            text.contains("does not exist")
                && text.contains("outbox_no_such_database")
                && text.contains("check the database name in the URL, or create it"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn a_url_for_another_database_names_the_function_that_opens_it() {
        let text =
            connect_message(outbox::postgres::connect("mysql://root@127.0.0.1:3306/test").await);
        println!("{text}");
        assert!(
            text.contains(
                "is a MariaDB/MySQL URL, but `outbox::postgres::connect` opens PostgreSQL"
            ) && text.contains("call `outbox::mysql::connect`"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn a_good_url_still_connects() {
        let pool = outbox::postgres::connect(&server()).await.unwrap();
        sqlx::query("SELECT 1").execute(&pool).await.unwrap();
    }

    /// sqlx 0.9 leaves TCP_NODELAY off; a statement written in pieces would wait up to
    /// 40 ms for the server's delayed ack.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn every_connection_of_the_pool_has_tcp_nodelay() {
        let pool = outbox::postgres::connect(&server()).await.unwrap();
        for conn in &mut hold_six(&pool).await {
            let port: i32 = sqlx::query_scalar("SELECT inet_client_port()")
                .fetch_one(&mut **conn)
                .await
                .unwrap();
            let port = u16::try_from(port).expect("a TCP connection, not a Unix socket");
            assert_nodelay(port);
        }
    }
}

#[cfg(feature = "mysql")]
mod mysql {
    use super::*;

    fn server() -> String {
        std::env::var("OUTBOX_TEST_MYSQL_URL").unwrap_or_else(|_| outbox::mysql::DEFAULT_URL.into())
    }

    #[tokio::test]
    async fn a_refused_connection_fails_at_once_and_names_host_and_port() {
        let port = closed_port();
        let url = format!("mysql://app:s3cret@127.0.0.1:{port}/app");
        let started = Instant::now();
        let text = connect_message(outbox::mysql::connect(&url).await);
        let took = started.elapsed();
        println!("{took:?}: {text}");
        assert!(
            took < AT_ONCE,
            "waited {took:?} for a refused connection: {text}"
        );
        assert!(
            text.contains(&format!(
                "cannot reach the database at mysql://app:***@127.0.0.1:{port}/app"
            )) && text.contains("check the host and port in the URL")
                && !text.contains("s3cret"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn an_unknown_database_says_to_check_the_name_or_create_it() {
        let url = with_database(&server(), "outbox_no_such_database");
        let text = connect_message(outbox::mysql::connect(&url).await);
        println!("{text}");
        assert!(
            text.contains("does not exist")
                && text.contains("outbox_no_such_database")
                && text.contains("check the database name in the URL, or create it"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn a_refused_login_says_to_check_user_and_password() {
        let server = server();
        let (scheme, rest) = server.split_once("://").unwrap();
        let host = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
        let url = format!("{scheme}://outbox_no_such_user:pw123@{host}");
        let text = connect_message(outbox::mysql::connect(&url).await);
        println!("{text}");
        assert!(
            text.contains("refused the login")
                && text.contains("check the user and password")
                && !text.contains("pw123"),
            "{text}"
        );
    }

    /// sqlx 0.9 leaves TCP_NODELAY off; a statement written in pieces would wait up to
    /// 40 ms for the server's delayed ack.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn every_connection_of_the_pool_has_tcp_nodelay() {
        let pool = outbox::mysql::connect(&server()).await.unwrap();
        for conn in &mut hold_six(&pool).await {
            // `host:port` as the server saw the client.
            let host: String = sqlx::query_scalar(
                "SELECT host FROM information_schema.processlist WHERE id = CONNECTION_ID()",
            )
            .fetch_one(&mut **conn)
            .await
            .unwrap();
            let port: u16 = host
                .rsplit_once(':')
                .and_then(|(_, p)| p.parse().ok())
                .unwrap_or_else(|| panic!("a TCP client address, got `{host}`"));
            assert_nodelay(port);
        }
    }

    #[tokio::test]
    async fn mariadb_urls_are_taken() {
        let url = server().replacen("mysql://", "mariadb://", 1);
        let pool = outbox::mysql::connect(&url).await.unwrap();
        sqlx::query("SELECT 1").execute(&pool).await.unwrap();
    }
}

#[cfg(feature = "sqlite")]
mod sqlite {
    use super::*;

    #[tokio::test]
    async fn a_postgres_url_names_postgres_connect() {
        let text = connect_message(
            outbox::sqlite::connect("postgres://app:s3cret@127.0.0.1:5432/app").await,
        );
        println!("{text}");
        assert!(
            text.contains("is a PostgreSQL URL, but `outbox::sqlite::connect` opens SQLite")
                && text.contains(
                    "call `outbox::postgres::connect` with it (feature `postgres` of outbox)"
                )
                && text.contains("`PostgresBackend`")
                && !text.contains("s3cret"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn a_missing_directory_says_to_check_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}/no/such/dir/app.db", dir.path().display());
        let text = connect_message(outbox::sqlite::connect(&url).await);
        println!("{text}");
        assert!(
            text.contains("cannot open the SQLite database at sqlite://")
                && text.contains("check the path in the URL; its directory must exist"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn a_new_file_is_created() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}/app.db", dir.path().display());
        outbox::sqlite::connect(&url).await.unwrap();
        assert!(dir.path().join("app.db").exists());
    }
}
