//! `test-servers`: the throwaway servers of `scripts/test.sh`. Starts a private PostgreSQL
//! (argument `postgres`) and a private MariaDB (argument `mariadb`) with
//! `common/servers.rs`, the same code the tests that restart or encrypt a server use, prints
//! `OUTBOX_TEST_POSTGRES_URL=…` and `OUTBOX_TEST_MYSQL_URL=…` lines and then `ready`, and
//! keeps them until its standard input closes (the script ended, however it ended); then it
//! stops them and removes their directories.

#[path = "servers.rs"]
mod servers;

use std::io::Write;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    for arg in &args {
        assert!(
            arg == "postgres" || arg == "mariadb",
            "test-servers: unknown argument {arg:?} (postgres, mariadb)"
        );
    }
    let postgres = args
        .iter()
        .any(|a| a == "postgres")
        .then(servers::PrivatePostgres::start);
    let mariadb = args
        .iter()
        .any(|a| a == "mariadb")
        .then(servers::PrivateMariaDb::start);
    let mut out = std::io::stdout().lock();
    if let Some(server) = &postgres {
        writeln!(out, "OUTBOX_TEST_POSTGRES_URL={}", server.url()).unwrap();
    }
    if let Some(server) = &mariadb {
        writeln!(out, "OUTBOX_TEST_MYSQL_URL={}", server.url()).unwrap();
    }
    writeln!(out, "ready").unwrap();
    out.flush().unwrap();
    drop(out);
    // Until the script closes our standard input (or dies, which closes it too).
    let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
}
