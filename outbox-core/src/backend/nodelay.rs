//! TCP_NODELAY on the pools' connections to PostgreSQL and MySQL/MariaDB.
//!
//! sqlx 0.9 opens its TCP connections without `TCP_NODELAY`, so Nagle's algorithm holds the
//! last piece of any statement that the driver writes in more than one piece (a settlement
//! batch of a few hundred messages as one JSON parameter, a large enqueue) until the server
//! acknowledges the first — and the server delays that acknowledgement by up to 40 ms. On
//! loopback, PostgreSQL's drain settled 1,000 messages in 50 ms of which the server spent 10:
//! the rest was that wait, on every batch.
//!
//! sqlx does not hand out its sockets, so right after a pool opens a connection (its
//! `after_connect`) the process's own TCP sockets whose peer is the database server's port
//! get `TCP_NODELAY` (setting it twice is harmless; a socket to that port that is not the
//! pool's — another pool of the application to the same server — only gains from it).
//! Unix only; elsewhere nothing changes.

/// Sets `TCP_NODELAY` on this process's TCP sockets connected to `port` (the database
/// server's) that lack it, and says how many it set. The pools that `connect` opens call it
/// for each new connection; call it from the `after_connect` of a pool of your own:
///
/// ```no_run
/// # #[cfg(feature = "postgres")] {
/// let options = sqlx::postgres::PgPoolOptions::new().after_connect(|_, _| {
///     Box::pin(async {
///         outbox_core::postgres::tcp_nodelay(5432);
///         Ok(())
///     })
/// });
/// # }
/// ```
///
/// Unix only (elsewhere it sets nothing and returns 0).
#[cfg(unix)]
pub fn to_port(port: u16) -> usize {
    use std::os::fd::{BorrowedFd, RawFd};

    let mut set = 0;
    for fd in open_fds() {
        // SAFETY: `fd` was open when listed; if another thread closes it meanwhile, the
        // calls below fail (EBADF) or reach whatever reused the number, and only a TCP
        // socket to `port` is changed, by an option that changes no data.
        let borrowed = unsafe { BorrowedFd::borrow_raw(fd as RawFd) };
        let socket = socket2::SockRef::from(&borrowed);
        let peer = match socket.peer_addr().ok().and_then(|a| a.as_socket()) {
            Some(peer) => peer,
            None => continue,
        };
        if peer.port() != port || !matches!(socket.r#type(), Ok(socket2::Type::STREAM)) {
            continue;
        }
        if socket.tcp_nodelay().is_ok_and(|on| !on) && socket.set_tcp_nodelay(true).is_ok() {
            set += 1;
        }
    }
    set
}

/// Nothing to do where sockets are not file descriptors.
#[cfg(not(unix))]
pub fn to_port(_port: u16) -> usize {
    0
}

/// The process's open file descriptors: `/proc/self/fd` (Linux), else the first 4,096.
#[cfg(unix)]
fn open_fds() -> Vec<i32> {
    match std::fs::read_dir("/proc/self/fd") {
        Ok(entries) => entries
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect(),
        Err(_) => (0..4_096).collect(),
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn sets_nodelay_on_sockets_to_the_port_only() {
        let server = TcpListener::bind("127.0.0.1:0").unwrap();
        let other = TcpListener::bind("127.0.0.1:0").unwrap();
        let to_server = TcpStream::connect(server.local_addr().unwrap()).unwrap();
        let to_other = TcpStream::connect(other.local_addr().unwrap()).unwrap();
        assert!(!to_server.nodelay().unwrap());
        assert!(super::to_port(server.local_addr().unwrap().port()) >= 1);
        assert!(to_server.nodelay().unwrap(), "the socket to the port");
        assert!(
            !to_other.nodelay().unwrap(),
            "a socket to another port is left alone"
        );
        // Twice: nothing left to set.
        assert_eq!(super::to_port(server.local_addr().unwrap().port()), 0);
    }
}
