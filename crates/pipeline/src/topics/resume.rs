//! A watch as server-sent events that loses no kept message: resumed after
//! the last id a client saw, it first sends what the history kept since
//! then (a page at a time, so a long absence costs one page of memory),
//! then the live events, without repeating one; and when the watch's
//! bounded queue drops events because the client reads slowly, the kept
//! ones among them are read back in their place ([`Catchup`]). A client
//! resuming past what retention deleted, or on a pattern nothing keeps, is
//! told so with an `event: gap`.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt;

use super::catchup::{Catchup, Next};
use super::{Keeping, Watch, sse_frame};
use wharf_core::request::Response;

struct Watching {
    watch: Watch,
    source: Catchup,
    frames: VecDeque<Bytes>,
}

/// The watch as a response: a comment naming the pattern, then (when
/// `after` is given) a gap notice if something may be missing and the
/// kept messages after `after`, then each live event as it comes.
pub fn watch_response(watch: Watch, keeping: Option<Arc<Keeping>>, after: Option<u64>) -> Response {
    let pattern = watch.pattern().to_string();
    let mut frames = VecDeque::from([Bytes::from(format!(": watching {pattern}\n\n"))]);
    let history = keeping
        .filter(|k| k.overlaps(&pattern))
        .map(|k| k.history.clone());
    if let Some(after) = after {
        let lost = match &history {
            None => Some((None, "nothing is kept for this pattern".to_string())),
            Some(h) => h
                .lost_after(after, |keep| wharf_config::topic::overlap(keep, &pattern))
                .map(|t| {
                    let why = format!("kept messages up to id {t} were deleted by retention");
                    (Some(t), why)
                }),
        };
        if let Some((through, reason)) = lost {
            let data =
                serde_json::json!({ "after": after, "lost_through": through, "reason": reason });
            frames.push_back(Bytes::from(format!("event: gap\ndata: {data}\n\n")));
        }
    }
    // The watch is subscribed: the history's last id is read after it.
    let source = match (history, after) {
        (Some(history), Some(after)) => Catchup::after(history, &pattern, after),
        (history, _) => Catchup::live(history, &pattern),
    };
    let state = Watching {
        watch,
        source,
        frames,
    };
    let events = futures_util::stream::unfold(state, next_frame);
    Response::event_stream(Box::pin(Unsync(sync_wrapper::SyncWrapper::new(Box::pin(
        events.map(Ok),
    )))))
}

async fn next_frame(mut w: Watching) -> Option<(Bytes, Watching)> {
    if let Some(frame) = w.frames.pop_front() {
        return Some((frame, w));
    }
    let frame = match w.source.next(&w.watch.sub.queue).await? {
        Next::Event(event) => sse_frame(&event),
        Next::Failed(e) => {
            let data = serde_json::json!({ "reason": e.to_string() });
            Bytes::from(format!("event: gap\ndata: {data}\n\n"))
        }
    };
    Some((frame, w))
}

type EventStream =
    std::pin::Pin<Box<dyn futures_util::Stream<Item = Result<Bytes, std::io::Error>> + Send>>;

/// A `Send` stream made `Sync` for the response body (it is only ever
/// polled through `&mut`).
struct Unsync(sync_wrapper::SyncWrapper<EventStream>);

impl futures_util::Stream for Unsync {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        self.get_mut().0.get_mut().as_mut().poll_next(cx)
    }
}
