//! A TCP proxy on loopback for fault tests: put it between a worker and its database (or
//! SMTP server) and, on command, forward connections, black-hole them (a partition: every
//! open connection stops moving and new ones are accepted but not connected, until
//! `forward()` heals it and the bytes held move again, as TCP would deliver them after a
//! partition), reset them (every open connection and every new one gets a TCP RST), or
//! lose one reply (the server gets the request, its answer never reaches the client, and
//! both connections are reset).
#![allow(dead_code)]

use std::{
    net::SocketAddr,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc, Mutex,
    },
};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
    sync::watch,
    task::JoinHandle,
};

/// What the proxy does with connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Bytes move both ways.
    Forward,
    /// Nothing moves; connections stay open (a network partition).
    BlackHole,
    /// Every connection is reset, open ones at once and new ones as they arrive.
    Reset,
}

struct Control {
    mode: watch::Sender<Mode>,
    /// Armed by [`Proxy::lose_reply_after`]: the next client write containing it.
    needle: Mutex<Option<Vec<u8>>>,
    lost_replies: AtomicUsize,
    accepted: AtomicUsize,
}

impl Control {
    /// Whether `chunk` holds the armed needle (which it disarms).
    fn take_needle(&self, chunk: &[u8]) -> bool {
        let mut needle = self.needle.lock().unwrap();
        let hit = needle
            .as_deref()
            .is_some_and(|n| !n.is_empty() && chunk.windows(n.len()).any(|w| w == n));
        if hit {
            *needle = None;
        }
        hit
    }
}

/// A TCP proxy on 127.0.0.1 in front of one address; stops when dropped.
pub struct Proxy {
    /// The port clients connect to.
    pub port: u16,
    control: Arc<Control>,
    accept: JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        // Open connections end with the reset.
        self.control.mode.send_replace(Mode::Reset);
    }
}

impl Proxy {
    /// A proxy forwarding to `target`.
    pub async fn start(target: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let port = listener.local_addr().unwrap().port();
        let control = Arc::new(Control {
            mode: watch::channel(Mode::Forward).0,
            needle: Mutex::new(None),
            lost_replies: AtomicUsize::new(0),
            accepted: AtomicUsize::new(0),
        });
        let c = Arc::clone(&control);
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                c.accepted.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(serve(client, target, Arc::clone(&c)));
            }
        });
        Self {
            port,
            control,
            accept,
        }
    }

    /// A proxy in front of the host and port of database URL `url` (`scheme://user@host:port/db`).
    pub async fn for_url(url: &str) -> Self {
        Self::start(target_of(url)).await
    }

    /// `url` with its host and port replaced by this proxy's, and TLS turned off (a
    /// PostgreSQL server with TLS would otherwise be spoken to in TLS, and the proxy could
    /// not see the statements it waits for).
    pub fn url(&self, url: &str) -> String {
        let (scheme, rest) = url.split_once("://").expect("a URL with a scheme");
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let userinfo = authority.rsplit_once('@').map(|(u, _)| u);
        let proxied = match userinfo {
            Some(u) => format!("{scheme}://{u}@127.0.0.1:{}{path}", self.port),
            None => format!("{scheme}://127.0.0.1:{}{path}", self.port),
        };
        let plain = match scheme {
            "postgres" | "postgresql" => "sslmode=disable",
            "mysql" | "mariadb" => "ssl-mode=DISABLED",
            _ => return proxied,
        };
        let join = if proxied.contains('?') { '&' } else { '?' };
        format!("{proxied}{join}{plain}")
    }

    /// Forward again (held bytes of black-holed connections move on).
    pub fn forward(&self) {
        self.control.mode.send_replace(Mode::Forward);
    }

    /// Hold every connection, open and new, without an answer.
    pub fn black_hole(&self) {
        self.control.mode.send_replace(Mode::BlackHole);
    }

    /// Reset every open connection, and every new one until told otherwise.
    pub fn reset(&self) {
        self.control.mode.send_replace(Mode::Reset);
    }

    /// The next client write that contains `needle` reaches the server, but the server's
    /// answer does not reach the client: both connections are reset as it arrives (for
    /// a `COMMIT`: the transaction committed, and the client cannot know).
    pub fn lose_reply_after(&self, needle: &[u8]) {
        *self.control.needle.lock().unwrap() = Some(needle.to_vec());
    }

    /// Replies lost so far by [`Proxy::lose_reply_after`].
    pub fn lost_replies(&self) -> usize {
        self.control.lost_replies.load(Ordering::SeqCst)
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> usize {
        self.control.accepted.load(Ordering::SeqCst)
    }
}

/// The socket address of a URL's host and port.
fn target_of(url: &str) -> SocketAddr {
    let rest = url.split_once("://").expect("a URL with a scheme").1;
    let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host_port = host_port.replace("localhost", "127.0.0.1");
    host_port.parse().expect("host:port with an IP address")
}

/// Closing drops a socket with a reset, not a FIN.
fn hard_close(s: &TcpStream) {
    #[allow(deprecated)]
    let _ = s.set_linger(Some(std::time::Duration::ZERO));
}

async fn serve(client: TcpStream, target: SocketAddr, c: Arc<Control>) {
    hard_close(&client);
    let mut mode = c.mode.subscribe();
    // Not connected to the server while black-holed: the client waits.
    loop {
        let now = *mode.borrow_and_update();
        match now {
            Mode::Reset => return,
            Mode::BlackHole => {}
            Mode::Forward => break,
        }
        if mode.changed().await.is_err() {
            return;
        }
    }
    let Ok(server) = TcpStream::connect(target).await else {
        return;
    };
    hard_close(&server);
    let _ = server.set_nodelay(true);
    let _ = client.set_nodelay(true);
    let (mut cr, mut cw) = client.into_split();
    let (mut sr, mut sw) = server.into_split();
    let mut up = vec![0u8; 64 * 1024];
    let mut down = vec![0u8; 64 * 1024];
    let mut swallow = false;
    loop {
        let now = *mode.borrow_and_update();
        match now {
            Mode::Reset => return,
            Mode::BlackHole => {
                if mode.changed().await.is_err() {
                    return;
                }
                continue;
            }
            Mode::Forward => {}
        }
        tokio::select! {
            r = cr.read(&mut up) => {
                let n = match r { Ok(0) | Err(_) => return, Ok(n) => n };
                if !swallow && c.take_needle(&up[..n]) {
                    swallow = true;
                }
                if sw.write_all(&up[..n]).await.is_err() {
                    return;
                }
            }
            r = sr.read(&mut down) => {
                let n = match r { Ok(0) | Err(_) => return, Ok(n) => n };
                if swallow {
                    // The server answered the request: the answer is lost, both ends reset.
                    c.lost_replies.fetch_add(1, Ordering::SeqCst);
                    return;
                }
                if cw.write_all(&down[..n]).await.is_err() {
                    return;
                }
            }
            _ = mode.changed() => {}
        }
    }
}
