//! A RabbitMQ node of a test's own, shared by the relay's tests and the conformance cases
//! (`#[path]`-included; the including module provides `lapin`).

use std::{
    net::TcpListener,
    path::PathBuf,
    process::{Child, Command, Stdio},
    sync::atomic::{AtomicUsize, Ordering},
    time::{Duration, Instant},
};

use super::lapin::{Connection, ConnectionProperties};

/// The RabbitMQ server script, run directly: `/usr/sbin/rabbitmq-server` on Debian is a
/// wrapper that switches to the `rabbitmq` user and writes the system node's startup log.
fn server_script() -> PathBuf {
    [
        "/usr/lib/rabbitmq/bin/rabbitmq-server",
        "/usr/local/sbin/rabbitmq-server",
        "/usr/sbin/rabbitmq-server",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.exists())
    .expect("rabbitmq-server is installed (/usr/lib/rabbitmq/bin/rabbitmq-server)")
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A RabbitMQ node of this test's own: its name, ports, data and logs in a temporary
/// directory, the management plugin off. Stopped (and its directory removed) on drop.
pub struct PrivateNode {
    dir: PathBuf,
    /// The node's Erlang name.
    pub name: String,
    port: u16,
    dist_port: u16,
    child: Option<Child>,
}

impl PrivateNode {
    /// A node not started yet.
    pub fn new() -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "outbox-rabbit-{}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .subsec_nanos()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("mnesia")).unwrap();
        std::fs::create_dir_all(dir.join("log")).unwrap();
        std::fs::write(dir.join("enabled_plugins"), "[].\n").unwrap();
        std::fs::write(dir.join("rabbitmq-env.conf"), "").unwrap();
        let port = free_port();
        std::fs::write(
            dir.join("rabbitmq.conf"),
            format!("listeners.tcp.default = 127.0.0.1:{port}\ndisk_free_limit.absolute = 10MB\n"),
        )
        .unwrap();
        let name = format!("outbox-test-{}-{port}@localhost", std::process::id());
        Self {
            dir,
            name,
            port,
            dist_port: free_port(),
            child: None,
        }
    }

    /// The node's AMQP URI (guest/guest, the default virtual host).
    pub fn uri(&self) -> String {
        format!("amqp://guest:guest@127.0.0.1:{}/%2f", self.port)
    }

    /// Starts the node and waits until it accepts AMQP connections; how long that took.
    pub async fn start(&mut self) -> Duration {
        assert!(self.child.is_none(), "already running");
        let started = Instant::now();
        let d = &self.dir;
        let out = std::fs::File::create(d.join("server.out")).unwrap();
        let mut command = Command::new(server_script());
        command
            .current_dir(d)
            .env("HOME", d)
            .env("RABBITMQ_CONF_ENV_FILE", d.join("rabbitmq-env.conf"))
            .env("RABBITMQ_NODENAME", &self.name)
            .env("RABBITMQ_NODE_IP_ADDRESS", "127.0.0.1")
            .env("RABBITMQ_NODE_PORT", self.port.to_string())
            .env("RABBITMQ_DIST_PORT", self.dist_port.to_string())
            .env("RABBITMQ_MNESIA_BASE", d.join("mnesia"))
            .env("RABBITMQ_LOG_BASE", d.join("log"))
            .env("RABBITMQ_CONFIG_FILE", d.join("rabbitmq.conf"))
            .env("RABBITMQ_ADVANCED_CONFIG_FILE", d.join("advanced.config"))
            .env("RABBITMQ_ENABLED_PLUGINS_FILE", d.join("enabled_plugins"))
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out);
        // Its own process group: a kill reaches the Erlang VM under the script.
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        self.child = Some(command.spawn().expect("rabbitmq-server starts"));
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            // Each try bounded: a node that accepts TCP before it can speak AMQP may not
            // answer the handshake.
            let uri = self.uri();
            let connect = Connection::connect(&uri, ConnectionProperties::default());
            if let Ok(Ok(c)) = tokio::time::timeout(Duration::from_secs(5), connect).await {
                let _ =
                    tokio::time::timeout(Duration::from_secs(5), c.close(200, "OK".into())).await;
                return started.elapsed();
            }
            if Instant::now() > deadline {
                let out = std::fs::read_to_string(self.dir.join("server.out")).unwrap_or_default();
                panic!(
                    "the private RabbitMQ node {} did not accept connections on port {} within \
                     90 s:\n{out}",
                    self.name, self.port
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Stops the node gracefully (SIGTERM to the server script, which stops the VM as
    /// `rabbitmqctl stop` would), killing it if it lingers; how long that took.
    pub fn stop(&mut self) -> Duration {
        let started = Instant::now();
        let Some(mut child) = self.child.take() else {
            return Duration::ZERO;
        };
        let pid = child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let until = Instant::now() + Duration::from_secs(30);
        while Instant::now() < until {
            if let Ok(Some(_)) = child.try_wait() {
                return started.elapsed();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = Command::new("kill")
            .args(["-KILL", &format!("-{pid}")])
            .status();
        let _ = child.wait();
        started.elapsed()
    }
}

impl Drop for PrivateNode {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
