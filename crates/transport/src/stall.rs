//! A connection that stops taking what the host writes is closed: a write
//! (or flush) that cannot make progress for the write timeout fails, and
//! hyper ends the connection, its slot and whatever stream it carried.
//! Without it a client that never reads holds a stream, and the memory
//! queued for it, for as long as the TCP connection lives.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

use std::future::Future;

/// `io` whose writes give up after `timeout` without progress.
pub struct WriteTimeout<I> {
    io: I,
    timeout: Duration,
    /// Armed while a write waits; reset by every write that progresses.
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<I> WriteTimeout<I> {
    pub fn new(io: I, timeout: Duration) -> Self {
        WriteTimeout {
            io,
            timeout,
            stalled: None,
        }
    }

    /// What a write (or flush) answered, unless it has waited without
    /// progress for the whole timeout: then an error. Progress resets it.
    fn timed<T>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        match polled {
            Poll::Pending => self.waited(cx).map(Err),
            done => {
                self.stalled = None;
                done
            }
        }
    }

    /// After a write that could not progress: an error once it has waited
    /// the whole timeout, else still pending (with the timer armed).
    fn waited(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        let timeout = self.timeout;
        let timer = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        ready!(timer.as_mut().poll(cx));
        Poll::Ready(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("the client took nothing written for {timeout:?}"),
        ))
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for WriteTimeout<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for WriteTimeout<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write(cx, buf);
        self.timed(cx, polled)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.timed(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.io).poll_flush(cx);
        self.timed(cx, polled)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
