//! The budget of long-lived streams (topic watches, A2A streams, streamed
//! answers): at most so many open at once in all and per client address,
//! fewer than the connection slots, so streams can never hold every slot
//! and starve plain requests. A stream past the budget is refused at once
//! (429 past the client's share, 503 past the total); an admitted one
//! holds its place until its body ends or its client goes away. At
//! shutdown every open stream is closed: a server-sent event stream with a
//! last `close` event, any other stream cut off.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};

use futures_util::Stream;

use crate::request::{BodyStream, Response};

/// Why a stream was not admitted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamRefusal {
    #[error("this client has {0} streams open, the most it may")]
    /// The client has this many streams open already.
    Client(usize),
    #[error("this host has {0} streams open, the most it keeps")]
    /// The host has this many streams open already.
    Host(usize),
}

/// Open streams, counted in all and per client address.
pub struct Streams {
    total: usize,
    per_client: usize,
    open: Mutex<Open>,
    /// Set at shutdown; every open stream then ends.
    closing: AtomicBool,
    /// The tasks polling open streams, woken at shutdown.
    wakers: Mutex<HashMap<u64, Waker>>,
    next_id: AtomicU64,
}

/// The last event of a server-sent event stream closed at shutdown.
pub const CLOSE_EVENT: &str = "event: close\ndata: {\"reason\":\"the host is shutting down\"}\n\n";

#[derive(Default)]
struct Open {
    total: usize,
    by_client: HashMap<IpAddr, usize>,
}

impl Streams {
    /// A budget of `total` streams, `per_client` of them per client address.
    pub fn new(total: usize, per_client: usize) -> Arc<Streams> {
        Arc::new(Streams {
            total,
            per_client,
            open: Mutex::new(Open::default()),
            closing: AtomicBool::new(false),
            wakers: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
        })
    }

    /// Closes every open stream, and every stream admitted from now on,
    /// at its next poll (shutdown).
    pub fn close(&self) {
        self.closing.store(true, Ordering::SeqCst);
        let wakers = std::mem::take(&mut *self.wakers.lock().unwrap_or_else(|e| e.into_inner()));
        for waker in wakers.into_values() {
            waker.wake();
        }
    }

    /// `resp` as it may leave: unchanged when its body is whole, its stream
    /// holding a place in the budget when one is free, else the refusal.
    /// Clients with no address (a Unix socket) share the total only.
    pub fn admit(
        self: &Arc<Self>,
        client: Option<IpAddr>,
        mut resp: Response,
    ) -> Result<Response, StreamRefusal> {
        let Some(stream) = resp.stream.take() else {
            return Ok(resp);
        };
        let place = self.take(client)?;
        let events = resp
            .headers
            .get(http::header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
        resp.stream = Some(Box::pin(Held {
            stream,
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            events,
            waker: None,
            done: false,
            place,
        }));
        Ok(resp)
    }

    fn take(self: &Arc<Self>, client: Option<IpAddr>) -> Result<Place, StreamRefusal> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(ip) = client {
            let mine = open.by_client.get(&ip).copied().unwrap_or(0);
            if mine >= self.per_client {
                return Err(StreamRefusal::Client(mine));
            }
        }
        if open.total >= self.total {
            return Err(StreamRefusal::Host(open.total));
        }
        open.total += 1;
        if let Some(ip) = client {
            *open.by_client.entry(ip).or_default() += 1;
        }
        Ok(Place {
            streams: self.clone(),
            client,
        })
    }

    /// Streams open now.
    pub fn open(&self) -> usize {
        self.open.lock().unwrap_or_else(|e| e.into_inner()).total
    }
}

/// A place in the budget, given back on drop.
struct Place {
    streams: Arc<Streams>,
    client: Option<IpAddr>,
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut open = self.streams.open.lock().unwrap_or_else(|e| e.into_inner());
        open.total = open.total.saturating_sub(1);
        if let Some(ip) = self.client
            && let Some(n) = open.by_client.get_mut(&ip)
        {
            *n -= 1;
            if *n == 0 {
                open.by_client.remove(&ip);
            }
        }
    }
}

/// A stream that holds its place while it lives, and ends at shutdown.
struct Held {
    stream: BodyStream,
    id: u64,
    /// Server-sent events: closed with [`CLOSE_EVENT`], not cut off.
    events: bool,
    /// The waker registered for shutdown.
    waker: Option<Waker>,
    done: bool,
    place: Place,
}

impl Stream for Held {
    type Item = <BodyStream as Stream>::Item;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        let streams = &this.place.streams;
        if streams.closing.load(Ordering::SeqCst) {
            this.done = true;
            return Poll::Ready(Some(if this.events {
                Ok(bytes::Bytes::from_static(CLOSE_EVENT.as_bytes()))
            } else {
                Err(std::io::Error::other("the host is shutting down"))
            }));
        }
        if !this.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            let waker = cx.waker().clone();
            let mut wakers = streams.wakers.lock().unwrap_or_else(|e| e.into_inner());
            wakers.insert(this.id, waker.clone());
            drop(wakers);
            this.waker = Some(waker);
            // Closed while registering: look again.
            if streams.closing.load(Ordering::SeqCst) {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
        }
        this.stream.as_mut().poll_next(cx)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if self.waker.is_some() {
            let streams = &self.place.streams;
            streams
                .wakers
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn streamed() -> Response {
        Response::event_stream(Box::pin(futures_util::stream::empty()))
    }

    #[test]
    fn places_are_counted_per_client_and_in_all_and_given_back() {
        let streams = Streams::new(3, 2);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let a1 = streams.admit(Some(a), streamed()).unwrap();
        let a2 = streams.admit(Some(a), streamed()).unwrap();
        assert_eq!(
            streams.admit(Some(a), streamed()).err(),
            Some(StreamRefusal::Client(2))
        );
        let b1 = streams.admit(Some(b), streamed()).unwrap();
        assert_eq!(
            streams.admit(None, streamed()).err(),
            Some(StreamRefusal::Host(3))
        );
        // A whole body takes no place.
        let whole = Response::new(http::StatusCode::OK, Default::default(), "x".into());
        assert!(streams.admit(Some(b), whole).is_ok());
        drop((a1, b1));
        assert_eq!(streams.open(), 1);
        assert!(streams.admit(Some(a), streamed()).is_ok());
        drop(a2);
    }

    #[tokio::test]
    async fn close_ends_open_streams_with_a_close_event_or_a_cut() {
        use futures_util::StreamExt;
        let streams = Streams::new(4, 4);
        let pending = || Box::pin(futures_util::stream::pending()) as BodyStream;
        let mut events = streams
            .admit(None, Response::event_stream(pending()))
            .unwrap();
        let mut plain = Response::new(http::StatusCode::OK, Default::default(), "".into());
        plain.stream = Some(pending());
        let mut plain = streams.admit(None, plain).unwrap();
        let mut events = events.stream.take().unwrap();
        let mut plain = plain.stream.take().unwrap();
        let waiting = tokio::spawn(async move { events.next().await.map(|c| c.unwrap()) });
        tokio::task::yield_now().await;
        streams.close();
        let last = waiting.await.unwrap().expect("a last event");
        assert_eq!(&last[..], CLOSE_EVENT.as_bytes());
        assert!(plain.next().await.expect("an item").is_err());
        assert!(plain.next().await.is_none());
    }
}
