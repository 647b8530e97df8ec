//! A watch as server-sent events that loses no kept message: resumed after
//! the last id a client saw, it first sends what the history kept since
//! then (a page at a time, so a long absence costs one page of memory),
//! then the live events, without repeating one; and when the watch's
//! bounded queue drops events because the client reads slowly, the kept
//! ones among them are read back from the history in their place. A
//! client resuming past what retention deleted, or on a pattern nothing
//! keeps, is told so with an `event: gap`.
//!
//! No kept message falls between the history and the queue: the watch
//! subscribes before the history's last id is read, so a message is either
//! at or below that id (and read from the history) or above it (and queued
//! live).

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt;

use super::{Keeping, Watch, message_frame, sse_frame};
use wharf_core::request::Response;
use wharf_tasks::history::{History, Query};

/// Kept messages read from the history per page while catching up.
const REPLAY_PAGE: usize = 256;

struct Watching {
    watch: Watch,
    /// The history, when it keeps something this pattern matches.
    history: Option<Arc<History>>,
    /// The last kept id sent (or the one to resume after): a replay
    /// starts after it.
    sent: u64,
    /// Kept ids up to this come from the history, not the queue.
    upto: u64,
    /// Whether the history is being read (ids `sent + 1 ..= upto`).
    replaying: bool,
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
    // Read after subscribing: later kept messages are in the queue.
    let upto = history.as_ref().map_or(0, |h| h.last_id());
    let state = Watching {
        sent: after.unwrap_or(upto),
        replaying: after.is_some() && history.is_some(),
        upto,
        history,
        watch,
        frames,
    };
    let events = futures_util::stream::unfold(state, next_frame);
    Response::event_stream(Box::pin(Unsync(sync_wrapper::SyncWrapper::new(Box::pin(
        events.map(Ok),
    )))))
}

async fn next_frame(mut w: Watching) -> Option<(Bytes, Watching)> {
    loop {
        if let Some(frame) = w.frames.pop_front() {
            return Some((frame, w));
        }
        if let (true, Some(history)) = (w.replaying, &w.history) {
            let mut q = Query::new(w.watch.pattern(), REPLAY_PAGE);
            q.after = Some(w.sent);
            q.before = Some(w.upto.saturating_add(1));
            match history.read(q).await {
                Ok(page) => {
                    for m in &page.messages {
                        let frame = message_frame(&m.topic, &m.payload, Some(m.id));
                        w.frames.push_back(frame);
                    }
                    match page.next {
                        Some(next) => w.sent = next,
                        None => {
                            w.sent = w.upto;
                            w.replaying = false;
                        }
                    }
                }
                Err(e) => {
                    let data = serde_json::json!({ "reason": e.to_string() });
                    w.frames
                        .push_back(Bytes::from(format!("event: gap\ndata: {data}\n\n")));
                    w.sent = w.upto;
                    w.replaying = false;
                }
            }
            continue;
        }
        let event = w.watch.next().await?;
        if let Some(history) = &w.history
            && w.watch.take_dropped()
        {
            // The queue dropped events: the kept ones come from the
            // history, up to the newest given now.
            w.upto = w.upto.max(history.last_id());
            w.replaying = true;
        }
        match event.id {
            Some(id) if id <= w.upto => continue, // from the history
            Some(id) => w.sent = id,
            None => {}
        }
        return Some((sse_frame(&event), w));
    }
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
