//! Throwaway database servers for tests: a private PostgreSQL or MariaDB, started from the
//! installed server binaries in a temporary directory on a free loopback port, and stopped
//! (and its directory removed) when the value is dropped. The machine's own servers on
//! 5432/3306 are never touched.
//!
//! `scripts/test.sh` starts the suite's servers with it too (`common/test_servers.rs`).
//!
//! Include it with `#[path = "common/servers.rs"] mod servers;` (it needs only `tempfile`
//! and the `openssl` command, no outbox feature). Each server has a database `test` and a
//! user with an empty password (`postgres`, `root`), like the machine's own, so
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
        let dir = tempfile::tempdir().expect("temp dir for certificates");
        let path = |file: &str| dir.path().join(file);
        let san = names
            .iter()
            .map(|n| match n.parse::<std::net::IpAddr>() {
                Ok(_) => format!("IP:{n}"),
                Err(_) => format!("DNS:{n}"),
            })
            .collect::<Vec<_>>()
            .join(",");
        fs::write(
            path("server.ext"),
            format!(
                "subjectAltName={san}\nbasicConstraints=CA:FALSE\n\
                 keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n"
            ),
        )
        .expect("write the certificate's extensions");
        // ECDSA P-256 keys, PKCS#8 (what `openssl req` writes).
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
        ];
        openssl(
            "make the test CA",
            Command::new("openssl")
                .args(["req", "-x509"])
                .args(ec)
                .arg("-keyout")
                .arg(path("ca.key"))
                .arg("-out")
                .arg(path("ca.pem"))
                .args(["-days", "2", "-subj"])
                .arg(format!("/CN=outbox test CA {name}"))
                .args(["-addext", "basicConstraints=critical,CA:TRUE"])
                .args(["-addext", "keyUsage=critical,keyCertSign,cRLSign"]),
        );
        openssl(
            "make the server's key and request",
            Command::new("openssl")
                .arg("req")
                .args(ec)
                .arg("-keyout")
                .arg(path("server.key"))
                .arg("-out")
                .arg(path("server.csr"))
                .arg("-subj")
                .arg(format!("/CN=outbox test server ({name})")),
        );
        openssl(
            "sign the server's certificate",
            Command::new("openssl")
                .args(["x509", "-req", "-in"])
                .arg(path("server.csr"))
                .arg("-CA")
                .arg(path("ca.pem"))
                .arg("-CAkey")
                .arg(path("ca.key"))
                .args(["-CAcreateserial", "-days", "2", "-out"])
                .arg(path("server.pem"))
                .arg("-extfile")
                .arg(path("server.ext")),
        );
        Self {
            ca: path("ca.pem"),
            cert: path("server.pem"),
            key: path("server.key"),
            _dir: dir,
        }
    }
}

/// Runs an `openssl` command, failing the test with its output (or how to install it).
fn openssl(what: &str, cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| {
        panic!("{what}: cannot run openssl ({e}): install it with `apt-get install -y openssl`")
    });
    assert!(
        out.status.success(),
        "{what}: openssl failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
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

/// Builds the command that starts a server (the same binary, arguments and user each time).
type Launch = Box<dyn Fn() -> Command + Send + Sync>;
/// Whether the server answers.
type Ready = Box<dyn Fn() -> bool + Send + Sync>;

/// A running server process, its log file and its directory; stopped on drop.
struct Process {
    child: Child,
    log: PathBuf,
    /// The signal that shuts the server down cleanly (`INT`: PostgreSQL's fast shutdown).
    stop_signal: &'static str,
    what: &'static str,
    launch: Launch,
    ready: Ready,
    dir: tempfile::TempDir,
}

impl Process {
    /// Starts the server and waits until `ready` holds.
    fn start(
        what: &'static str,
        launch: Launch,
        ready: Ready,
        dir: tempfile::TempDir,
        stop_signal: &'static str,
    ) -> Self {
        let log = dir.path().join("server.log");
        let child = Self::spawn(&launch, &log);
        let mut process = Self {
            child,
            log,
            stop_signal,
            what,
            launch,
            ready,
            dir,
        };
        process.wait_ready();
        process
    }

    fn spawn(launch: &Launch, log: &Path) -> Child {
        let file = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .expect("server log file");
        let mut cmd = launch();
        cmd.stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file);
        cmd.spawn().expect("start the database server")
    }

    fn log(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Polls the readiness check until it holds, failing with the server's log if the server
    /// exits or does not get ready in time.
    fn wait_ready(&mut self) {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("poll the server") {
                panic!(
                    "{} exited while starting ({status}); its log:\n{}",
                    self.what,
                    self.log()
                );
            }
            if (self.ready)() {
                return;
            }
            assert!(
                start.elapsed() < START_TIMEOUT,
                "{} was not ready after {START_TIMEOUT:?}; its log:\n{}",
                self.what,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Shuts the server down with its stop signal (killed after 30 s) and waits for it.
    fn stop(&mut self) {
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

    /// Stops the server and starts it again on the same port and data, waiting until it
    /// answers.
    fn restart(&mut self) {
        self.stop();
        self.child = Self::spawn(&self.launch, &self.log);
        self.wait_ready();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stop();
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

        let mut args: Vec<std::ffi::OsString> = Vec::new();
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
            for arg in [
                "-c",
                "ssl=on",
                "-c",
                "ssl_cert_file=server.pem",
                "-c",
                "ssl_key_file=server.key",
            ] {
                args.push(arg.into());
            }
        }
        let port = free_port();
        args.push("-D".into());
        args.push(data.clone().into());
        args.push("-p".into());
        args.push(port.to_string().into());
        args.push("-k".into());
        args.push(dir.path().into());
        for arg in [
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            "fsync=off",
            "-c",
            "max_connections=100",
        ] {
            args.push(arg.into());
        }
        let launch: Launch = Box::new(move || {
            let mut server = Command::new(&postgres);
            server.args(&args);
            if let Some((uid, gid)) = run_as {
                server.uid(uid).gid(gid);
            }
            server
        });
        let socket_dir = dir.path().to_path_buf();
        let pg_isready = bindir.join("pg_isready");
        let ready: Ready = Box::new(move || {
            Command::new(&pg_isready)
                .args(["-q", "-U", "postgres", "-p", &port.to_string(), "-h"])
                .arg(&socket_dir)
                .status()
                .is_ok_and(|s| s.success())
        });
        let process = Process::start("PostgreSQL", launch, ready, dir, "INT");
        let socket_dir = process.dir.path().to_path_buf();
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

    /// Stops the server (fast shutdown: open connections are cut) and starts it again on
    /// the same port with the same data; returns once it answers.
    pub fn restart(&mut self) {
        self.process.restart();
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
        let mut args: Vec<String> = vec![
            "--no-defaults".into(),
            format!("--datadir={}", data.display()),
            format!("--tmpdir={}", tmp.display()),
            format!("--socket={}", socket.display()),
            format!("--pid-file={}", dir.path().join("pid").display()),
            format!("--port={port}"),
            "--bind-address=127.0.0.1".into(),
            "--skip-name-resolve".into(),
            "--innodb-flush-log-at-trx-commit=0".into(),
            // The packaged server's character set (Debian's configuration says utf8mb4).
            "--character-set-server=utf8mb4".into(),
            "--collation-server=utf8mb4_general_ci".into(),
        ];
        if root {
            args.push("--user=root".into());
        }
        if let Some(certs) = certs {
            args.push(format!("--ssl-cert={}", certs.cert.display()));
            args.push(format!("--ssl-key={}", certs.key.display()));
            args.push(format!("--ssl-ca={}", certs.ca.display()));
            args.push("--require-secure-transport=ON".into());
        }
        let launch: Launch = Box::new(move || {
            let mut server = Command::new(&mariadbd);
            server.args(&args);
            server
        });
        let ping_socket = socket.clone();
        let ready: Ready = Box::new(move || {
            Command::new(&admin)
                .arg("--no-defaults")
                .arg(format!("--socket={}", ping_socket.display()))
                .args(["-uroot", "ping"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        });
        let process = Process::start("MariaDB", launch, ready, dir, "TERM");
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

    /// Stops the server (a clean shutdown) and starts it again on the same port with the
    /// same data; returns once it answers.
    pub fn restart(&mut self) {
        self.process.restart();
    }

    /// Its Unix socket (for `mariadb --socket=…`).
    pub fn socket(&self) -> &Path {
        &self.socket
    }
}
