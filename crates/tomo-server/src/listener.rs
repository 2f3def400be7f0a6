//! The TCP side of `tomo serve` with the bounds axum's default listener lacks: at most
//! [`ConnectionLimits::max_connections`] open at once (one more is accepted and closed at once, so it
//! does not wait in the kernel's queue either), and a connection that has not received a byte of answer
//! within [`ConnectionLimits::header_timeout`] — its request head never completed — is closed. Without
//! them, hundreds of half-open connections stayed for 40 s, and shutdown waited for them.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Sleep;

/// How many connections and how long for a request head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Open connections at once (sockets and page loads together; a browser keeps about six).
    pub max_connections: usize,
    /// From accepting a connection to the server's first byte of answer.
    pub header_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            max_connections: 64,
            header_timeout: Duration::from_secs(10),
        }
    }
}

pub(crate) struct LimitedListener {
    inner: TcpListener,
    limits: ConnectionLimits,
    permits: Arc<Semaphore>,
    /// Connections refused at the cap since the last warning (the log says it once per burst).
    refused: u64,
}

impl LimitedListener {
    pub(crate) fn new(inner: TcpListener, limits: ConnectionLimits) -> Self {
        Self {
            inner,
            permits: Arc::new(Semaphore::new(limits.max_connections.max(1))),
            limits,
            refused: 0,
        }
    }
}

impl axum::serve::Listener for LimitedListener {
    type Io = LimitedIo;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let (stream, addr) = match self.inner.accept().await {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors and the like: wait a moment rather than spin.
                    tracing::warn!(%error, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            match Arc::clone(&self.permits).try_acquire_owned() {
                Ok(permit) => {
                    if self.refused > 0 {
                        tracing::warn!(
                            refused = self.refused,
                            "connections were refused at the cap of {}",
                            self.limits.max_connections
                        );
                        self.refused = 0;
                    }
                    let io = LimitedIo {
                        stream,
                        _permit: permit,
                        deadline: Some(Box::pin(tokio::time::sleep(self.limits.header_timeout))),
                    };
                    return (io, addr);
                }
                // Dropped: closed at once.
                Err(_) => self.refused += 1,
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// A connection holding its place under the cap, with a deadline until it is answered.
pub(crate) struct LimitedIo {
    stream: TcpStream,
    _permit: OwnedSemaphorePermit,
    /// Until the server writes: a request head that never completes ends here.
    deadline: Option<Pin<Box<Sleep>>>,
}

impl AsyncRead for LimitedIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        // Polled first so its timer wakes this connection even when no byte ever comes.
        if let Some(deadline) = self.deadline.as_mut()
            && deadline.as_mut().poll(cx).is_ready()
        {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no complete request in time",
            )));
        }
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for LimitedIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.stream).poll_write(cx, buf);
        if matches!(written, Poll::Ready(Ok(n)) if n > 0) {
            // Answered: the request head was complete. Sockets may now stay quiet for hours.
            self.deadline = None;
        }
        written
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        if matches!(written, Poll::Ready(Ok(n)) if n > 0) {
            self.deadline = None;
        }
        written
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}
