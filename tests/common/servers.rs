//! Throwaway database servers for tests: a private PostgreSQL or MariaDB, started from the
//! installed server binaries in a temporary directory on a free loopback port, and stopped
//! (and its directory removed) when the value is dropped. The machine's own servers on
//! 5432/3306 are never touched.
//!
//! Include it with `#[path = "common/servers.rs"] mod servers;` (it needs only `tempfile`
//! and `rcgen`, no outbox feature). Each server has a database `test` and a user with an
//! empty password (`postgres`, `root`), like the machine's own, so
//! [`PrivatePostgres::url`] and [`PrivateMariaDb::url`] are shaped like
//! `outbox::postgres::DEFAULT_URL` and `outbox::mysql::DEFAULT_URL`.
//!
//! With [`TestCerts`] the server speaks TLS with a certificate for `127.0.0.1` and
//! `localhost` from a throwaway CA, and refuses unencrypted TCP connections.
//!
//! What it needs installed (Debian): `postgresql` (initdb, postgres, pg_isready, createdb;
//! found under `/usr/lib/postgresql/*/bin`, or in `OUTBOX_TEST_PG_BINDIR`), `mariadb-server`
//! and `mariadb-client` (mariadb-install-db, mariadbd, mariadb-admin, mariadb). Run as root,
//! PostgreSQL runs as the user `postgres` (it refuses root) and MariaDB as root.
#![allow(dead_code)]

use std::{
    fs,
    net::TcpListener,
    os::unix::{fs::PermissionsExt, process::CommandExt},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

/// How long a server may take to become ready before the test fails.
const START_TIMEOUT: Duration = Duration::from_secs(90);

/// A throwaway CA and a server certificate it signed for `127.0.0.1` and `localhost`, as PEM
/// files in a temporary directory.
pub struct TestCerts {
    /// The CA's certificate: what a client trusts (`sslrootcert`, `ssl-ca`).
    pub ca: PathBuf,
    /// The server's certificate.
    pub cert: PathBuf,
    /// The server's private key (PKCS#8).
    pub key: PathBuf,
    _dir: tempfile::TempDir,
}

impl TestCerts {
    /// A new CA (named `name`, so two of them differ) and a server certificate signed by it
    /// for `127.0.0.1` and `localhost`.
    pub fn new(name: &str) -> Self {
        Self::for_names(name, &["127.0.0.1", "localhost"])
    }

    /// Like [`TestCerts::new`], with the server certificate issued for `names` (host names
    /// or IP addresses) only.
    pub fn for_names(name: &str, names: &[&str]) -> Self {
        use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, format!("outbox test CA {name}"));
        let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
        let key = KeyPair::generate().unwrap();
        let names = names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let mut params = CertificateParams::new(names).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, format!("outbox test server ({name})"));
        let cert = params.signed_by(&key, &ca).unwrap();

        let dir = tempfile::tempdir().expect("temp dir for certificates");
        let write = |file: &str, pem: String| {
            let path = dir.path().join(file);
            fs::write(&path, pem).expect("write a certificate file");
            path
        };
        Self {
            ca: write("ca.pem", ca.pem()),
            cert: write("server.pem", cert.pem()),
            key: write("server.key", key.serialize_pem()),
            _dir: dir,
        }
    }
}

/// A free TCP port on loopback (free when asked; the server binds it right after).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

/// Whether this process runs as root.
fn is_root() -> bool {
    let out = Command::new("id").arg("-u").output().expect("run `id -u`");
    String::from_utf8_lossy(&out.stdout).trim() == "0"
}

/// The uid and gid of a system user.
fn user_ids(user: &str) -> (u32, u32) {
    let id = |flag: &str| {
        let out = Command::new("id")
            .args([flag, user])
            .output()
            .expect("run `id`");
        assert!(
            out.status.success(),
            "PostgreSQL refuses to run as root and there is no user `{user}` to run it as: \
             install the server (apt-get install -y postgresql), which creates it"
        );
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse::<u32>()
            .unwrap()
    };
    (id("-u"), id("-g"))
}

/// The first of `names` found in `dirs` or on `PATH`, or a failure naming the package.
fn find_binary(names: &[&str], dirs: &[PathBuf], package: &str) -> PathBuf {
    let path_dirs = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    for name in names {
        for dir in dirs
            .iter()
            .chain(&path_dirs)
            .chain(&[PathBuf::from("/usr/sbin")])
        {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    panic!(
        "{} not found (looked in {dirs:?}, PATH and /usr/sbin): \
         install it with `apt-get install -y {package}`",
        names.join(" / ")
    )
}

/// PostgreSQL's server binaries: `OUTBOX_TEST_PG_BINDIR`, else the newest
/// `/usr/lib/postgresql/N/bin`, else `PATH`.
fn pg_bindirs() -> Vec<PathBuf> {
    if let Some(dir) = std::env::var_os("OUTBOX_TEST_PG_BINDIR") {
        return vec![PathBuf::from(dir)];
    }
    let mut found: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse::<u32>().ok()?;
            Some((version, e.path().join("bin")))
        })
        .collect();
    found.sort();
    found.into_iter().rev().map(|(_, dir)| dir).collect()
}

/// Runs a set-up command to completion, failing the test with its output if it fails.
fn run(what: &str, cmd: &mut Command) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: could not run: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A running server process, its log file and its directory; stopped on drop.
struct Process {
    child: Child,
    log: PathBuf,
    /// The signal that shuts the server down cleanly (`INT`: PostgreSQL's fast shutdown).
    stop_signal: &'static str,
    dir: tempfile::TempDir,
}

impl Process {
    fn spawn(mut cmd: Command, dir: tempfile::TempDir, stop_signal: &'static str) -> Self {
        let log = dir.path().join("server.log");
        let file = fs::File::create(&log).expect("server log file");
        cmd.stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file);
        let child = cmd.spawn().expect("start the database server");
        Self {
            child,
            log,
            stop_signal,
            dir,
        }
    }

    fn log(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Polls `ready` until it holds, failing with the server's log if the server exits or
    /// does not get ready in time.
    fn wait_ready(&mut self, what: &str, mut ready: impl FnMut() -> bool) {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("poll the server") {
                panic!(
                    "{what} exited while starting ({status}); its log:\n{}",
                    self.log()
                );
            }
            if ready() {
                return;
            }
            assert!(
                start.elapsed() < START_TIMEOUT,
                "{what} was not ready after {START_TIMEOUT:?}; its log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = Command::new("kill")
                .args([
                    format!("-{}", self.stop_signal),
                    self.child.id().to_string(),
                ])
                .status();
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(30) {
                if let Ok(Some(_)) = self.child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A private PostgreSQL server on a free loopback port (database `test`, user `postgres`,
/// trust authentication), stopped with a fast shutdown and removed on drop.
pub struct PrivatePostgres {
    port: u16,
    process: Process,
}

impl PrivatePostgres {
    /// A server without TLS.
    pub fn start() -> Self {
        Self::launch(None)
    }

    /// A server with `certs`' certificate that accepts TCP connections only over TLS
    /// (`hostssl` lines in `pg_hba.conf`; the Unix socket stays open for set-up).
    pub fn start_tls(certs: &TestCerts) -> Self {
        Self::launch(Some(certs))
    }

    fn launch(certs: Option<&TestCerts>) -> Self {
        let dirs = pg_bindirs();
        let initdb = find_binary(&["initdb"], &dirs, "postgresql");
        let bindir = initdb.parent().unwrap().to_path_buf();
        let postgres = bindir.join("postgres");
        let run_as = is_root().then(|| user_ids("postgres"));
        let as_user = |cmd: &mut Command| {
            if let Some((uid, gid)) = run_as {
                cmd.uid(uid).gid(gid);
            }
        };

        let dir = tempfile::Builder::new()
            .prefix("outbox-pg-")
            .tempdir()
            .expect("temp dir for PostgreSQL");
        if let Some((uid, gid)) = run_as {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).expect("chown the data dir");
        }
        let data = dir.path().join("data");
        let mut init = Command::new(&initdb);
        init.arg("-D")
            .arg(&data)
            .args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"])
            .env("LC_ALL", "C");
        as_user(&mut init);
        run("initdb", &mut init);

        let mut server = Command::new(&postgres);
        if let Some(certs) = certs {
            // PostgreSQL wants its key owned by itself and readable by no one else.
            for (from, to) in [(&certs.cert, "server.pem"), (&certs.key, "server.key")] {
                let target = data.join(to);
                fs::copy(from, &target).expect("copy the server's certificate");
                fs::set_permissions(&target, fs::Permissions::from_mode(0o600)).unwrap();
                if let Some((uid, gid)) = run_as {
                    std::os::unix::fs::chown(&target, Some(uid), Some(gid)).unwrap();
                }
            }
            fs::write(
                data.join("pg_hba.conf"),
                "local all all trust\n\
                 hostssl all all 127.0.0.1/32 trust\n\
                 hostssl all all ::1/128 trust\n",
            )
            .expect("write pg_hba.conf");
            server.args([
                "-c",
                "ssl=on",
                "-c",
                "ssl_cert_file=server.pem",
                "-c",
                "ssl_key_file=server.key",
            ]);
        }
        let port = free_port();
        server
            .arg("-D")
            .arg(&data)
            .args(["-p", &port.to_string(), "-k"])
            .arg(dir.path())
            .args([
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "fsync=off",
                "-c",
                "max_connections=100",
            ]);
        as_user(&mut server);
        let mut process = Process::spawn(server, dir, "INT");

        let socket_dir = process.dir.path().to_path_buf();
        let pg_isready = bindir.join("pg_isready");
        process.wait_ready("PostgreSQL", || {
            Command::new(&pg_isready)
                .args(["-q", "-U", "postgres", "-p", &port.to_string(), "-h"])
                .arg(&socket_dir)
                .status()
                .is_ok_and(|s| s.success())
        });
        run(
            "createdb test",
            Command::new(bindir.join("createdb"))
                .args(["-U", "postgres", "-p", &port.to_string(), "-h"])
                .arg(&socket_dir)
                .arg("test"),
        );
        Self { port, process }
    }

    /// `postgres://postgres@127.0.0.1:PORT/test`: add `?sslmode=…` as needed.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/test", self.port)
    }

    /// The TCP port it listens on (127.0.0.1 only).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// What the server logged so far.
    pub fn log(&self) -> String {
        self.process.log()
    }

    /// The directory of its Unix socket (for `psql -h DIR -p PORT`).
    pub fn socket_dir(&self) -> &Path {
        self.process.dir.path()
    }
}

/// A private MariaDB server on a free loopback port (database `test`, user `root` with an
/// empty password), shut down and removed on drop.
pub struct PrivateMariaDb {
    port: u16,
    socket: PathBuf,
    process: Process,
}

impl PrivateMariaDb {
    /// A server without TLS.
    pub fn start() -> Self {
        Self::launch(None)
    }

    /// A server with `certs`' certificate that refuses unencrypted TCP connections
    /// (`require_secure_transport`).
    pub fn start_tls(certs: &TestCerts) -> Self {
        Self::launch(Some(certs))
    }

    fn launch(certs: Option<&TestCerts>) -> Self {
        let install = find_binary(
            &["mariadb-install-db", "mysql_install_db"],
            &[],
            "mariadb-server",
        );
        let mariadbd = find_binary(&["mariadbd", "mysqld"], &[], "mariadb-server");
        let admin = find_binary(&["mariadb-admin", "mysqladmin"], &[], "mariadb-client");
        let client = find_binary(&["mariadb", "mysql"], &[], "mariadb-client");
        let root = is_root();

        let dir = tempfile::Builder::new()
            .prefix("outbox-mariadb-")
            .tempdir()
            .expect("temp dir for MariaDB");
        let data = dir.path().join("data");
        let socket = dir.path().join("sock");
        // A private temp dir: servers bootstrapped at once in the shared /tmp removed each
        // other's temporary tables ("Error on delete of '/tmp/#sql-temptable-…'").
        let tmp = dir.path().join("tmp");
        fs::create_dir_all(&tmp).expect("MariaDB's temp dir");
        let mut init = Command::new(&install);
        init.arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--tmpdir={}", tmp.display()))
            .args(["--auth-root-authentication-method=normal", "--skip-test-db"]);
        if root {
            init.arg("--user=root");
        }
        run("mariadb-install-db", &mut init);

        let port = free_port();
        let mut server = Command::new(&mariadbd);
        server
            .arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--tmpdir={}", tmp.display()))
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--pid-file={}", dir.path().join("pid").display()))
            .arg(format!("--port={port}"))
            .args([
                "--bind-address=127.0.0.1",
                "--skip-name-resolve",
                "--innodb-flush-log-at-trx-commit=0",
            ]);
        if root {
            server.arg("--user=root");
        }
        if let Some(certs) = certs {
            server
                .arg(format!("--ssl-cert={}", certs.cert.display()))
                .arg(format!("--ssl-key={}", certs.key.display()))
                .arg(format!("--ssl-ca={}", certs.ca.display()))
                .arg("--require-secure-transport=ON");
        }
        let mut process = Process::spawn(server, dir, "TERM");

        process.wait_ready("MariaDB", || {
            Command::new(&admin)
                .arg("--no-defaults")
                .arg(format!("--socket={}", socket.display()))
                .args(["-uroot", "ping"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        });
        run(
            "CREATE DATABASE test",
            Command::new(&client)
                .arg("--no-defaults")
                .arg(format!("--socket={}", socket.display()))
                .args(["-uroot", "-e", "CREATE DATABASE test"]),
        );
        Self {
            port,
            socket,
            process,
        }
    }

    /// `mysql://root@127.0.0.1:PORT/test`: add `?ssl-mode=…` as needed.
    pub fn url(&self) -> String {
        format!("mysql://root@127.0.0.1:{}/test", self.port)
    }

    /// The TCP port it listens on (127.0.0.1 only).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// What the server logged so far.
    pub fn log(&self) -> String {
        self.process.log()
    }

    /// Its Unix socket (for `mariadb --socket=…`).
    pub fn socket(&self) -> &Path {
        &self.socket
    }
}
