//! The socket lettre talks over: our own TCP stream with `TCP_NODELAY`, and for implicit
//! TLS that stream already wrapped in lettre's own TLS layer.
//!
//! lettre 0.11.23 never sets `TCP_NODELAY`, so each SMTP command waits for a delayed ACK
//! (~40 ms, ~22 messages/s per connection). Handing lettre a socket we opened ourselves
//! removes the stall while keeping lettre's protocol and TLS code.

#![allow(deprecated)] // AsyncNetworkStream: lettre's only way to TLS-wrap a stream we own.

use std::{
    io,
    net::SocketAddr,
    pin::Pin,
    task::{Context, Poll},
};

use lettre::transport::smtp::client::{AsyncNetworkStream, AsyncTokioStream, TlsParameters};
use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    net::TcpStream,
};

/// Opens a TCP connection to `host:port` with `TCP_NODELAY` set.
pub(crate) async fn tcp(host: &str, port: u16) -> io::Result<TcpStream> {
    let tcp = TcpStream::connect((host, port)).await?;
    tcp.set_nodelay(true)?;
    Ok(tcp)
}

/// Wraps `tcp` in TLS with lettre's own rustls setup (implicit TLS, `smtps://`).
pub(crate) async fn implicit_tls(
    tcp: TcpStream,
    tls: TlsParameters,
) -> Result<Box<dyn AsyncTokioStream>, lettre::transport::smtp::Error> {
    let mut stream = AsyncNetworkStream::use_existing_tokio1(Box::new(tcp));
    stream.upgrade_tls(tls).await?;
    Ok(Box::new(TlsStream(stream)))
}

/// lettre's TLS stream (futures-io) seen as the tokio stream lettre's connection accepts.
#[derive(Debug)]
struct TlsStream(AsyncNetworkStream);

impl AsyncTokioStream for TlsStream {
    fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.0.peer_addr()
    }
}

impl AsyncRead for TlsStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let unfilled = buf.initialize_unfilled();
        match futures_io::AsyncRead::poll_read(Pin::new(&mut self.0), cx, unfilled) {
            Poll::Ready(Ok(n)) => {
                buf.advance(n);
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncWrite for TlsStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        futures_io::AsyncWrite::poll_write(Pin::new(&mut self.0), cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        futures_io::AsyncWrite::poll_flush(Pin::new(&mut self.0), cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        futures_io::AsyncWrite::poll_close(Pin::new(&mut self.0), cx)
    }
}
