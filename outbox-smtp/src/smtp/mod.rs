//! SMTP delivery: a small pool of lettre connections on sockets we open ourselves.
//!
//! At most `pool_size` connections are open; a message waits for a free one. A connection
//! goes back to the pool after a completed transaction (or a refusal, also of the message
//! data, followed by a successful `RSET`) and is dropped after anything else: a timeout, a
//! broken socket, a reply about the session (`421`, `503`, …). An idle connection older
//! than `idle_timeout` is closed instead of reused, and a pooled connection found dead or
//! out of step before the message data is replaced once, at once, within the same attempt —
//! nothing of the message was delivered over it — by a fresh connection, and the other idle
//! connections are closed with it (what dropped one dropped them all).
//!
//! Failure modes: see [`SendError`](crate::SendError); a send never panics and never holds
//! a connection after an error it cannot account for.

mod connect;
mod stream;
mod transaction;

use std::{
    sync::Mutex,
    time::{Duration, Instant},
};

use lettre::transport::smtp::client::AsyncSmtpConnection;
use tokio::sync::Semaphore;

pub(crate) use transaction::Accepted;

use crate::{render::Rendered, ConfigError, SendError, SmtpConfig};

/// A pooled connection and when it was last used.
struct Idle {
    conn: AsyncSmtpConnection,
    since: Instant,
}

/// Sends rendered messages to one SMTP server over a bounded pool of connections.
pub(crate) struct SmtpSender {
    connector: connect::Connector,
    idle: Mutex<Vec<Idle>>,
    permits: Semaphore,
    idle_timeout: Duration,
    command_timeout: Duration,
}

impl SmtpSender {
    /// A sender for `config`; connects lazily, on the first message.
    pub(crate) fn new(config: &SmtpConfig) -> Result<Self, ConfigError> {
        Ok(Self {
            connector: connect::Connector::new(config)?,
            idle: Mutex::new(Vec::new()),
            permits: Semaphore::new(config.pool_size),
            idle_timeout: config.idle_timeout,
            command_timeout: config.command_timeout,
        })
    }

    /// Sends `message` over a pooled or new connection.
    pub(crate) async fn send(&self, message: &Rendered) -> Result<Accepted, SendError> {
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| SendError::Connection {
                stage: crate::Stage::Connect,
                reason: "the mailer was closed".into(),
            })?;
        let mut replaced_stale = false;
        loop {
            let pooled = if replaced_stale {
                None
            } else {
                self.take_idle()
            };
            let (mut conn, reused) = match pooled {
                Some(conn) => (conn, true),
                None => (self.connector.connect().await?, false),
            };
            let attempt = transaction::send(&mut conn, message, self.command_timeout).await;
            if attempt.reusable {
                self.put_back(conn);
            }
            if attempt.stale && reused && !replaced_stale {
                // The network that dropped this connection dropped the ones idle beside
                // it too (a reset, a NAT timeout): close them all, and try once over a
                // fresh connection, which tests the server itself.
                replaced_stale = true;
                self.drop_idle();
                continue;
            }
            return attempt.result;
        }
    }

    /// Closes every idle connection (without `QUIT`: they are presumed dead).
    fn drop_idle(&self) {
        let dropped: Vec<Idle> = {
            let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
            idle.drain(..).collect()
        };
        drop(dropped);
    }

    /// The most recently used idle connection that is not too old; older ones are closed.
    fn take_idle(&self) -> Option<AsyncSmtpConnection> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        idle.retain(|i| now.duration_since(i.since) < self.idle_timeout);
        idle.pop().map(|i| i.conn)
    }

    fn put_back(&self, conn: AsyncSmtpConnection) {
        if conn.has_broken() {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        idle.push(Idle {
            conn,
            since: Instant::now(),
        });
    }

    /// Says `QUIT` on every idle connection and closes it.
    pub(crate) async fn close(&self) {
        let conns: Vec<Idle> = {
            let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
            idle.drain(..).collect()
        };
        for mut i in conns {
            let _ = tokio::time::timeout(Duration::from_secs(1), i.conn.quit()).await;
        }
    }
}
