//! A watch as server-sent events, resumed after the last id a client saw:
//! first what the history kept since then (a page at a time, so a long
//! absence costs one page of memory), then the live events, without
//! repeating one. A client resuming past what retention deleted, or on a
//! pattern nothing keeps, is told so with an `event: gap`.
//!
//! No event is lost between the two: the watch subscribes before the
//! history's last id is read, so an event is either at or below that id
//! (and read from the history) or above it (and queued live).

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt;

use super::{Keeping, Watch, message_json, sse_frame};
use wharf_core::request::Response;
use wharf_tasks::history::{History, Query};

/// Kept messages read from the history per page while catching up.
const REPLAY_PAGE: usize = 256;

/// What is left to read from the history.
struct Replay {
    history: Arc<History>,
    after: u64,
    /// The last id given when the watch began: later ones come live.
    upto: u64,
}

struct Watching {
    watch: Watch,
    replay: Option<Replay>,
    /// Live events with ids up to this were read from the history.
    upto: u64,
    frames: VecDeque<Bytes>,
}

/// The watch as a response: a comment naming the pattern, then (when
/// `after` is given) a gap notice if something may be missing and the
/// kept messages after `after`, then each live event as it comes.
pub fn watch_response(watch: Watch, keeping: Option<Arc<Keeping>>, after: Option<u64>) -> Response {
    let pattern = watch.pattern().to_string();
    let mut frames = VecDeque::from([Bytes::from(format!(": watching {pattern}\n\n"))]);
    let mut replay = None;
    if let Some(after) = after {
        let kept = keeping.filter(|k| k.overlaps(&pattern));
        let lost = match &kept {
            None => Some((None, "nothing is kept for this pattern".to_string())),
            Some(k) => k
                .history
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
        replay = kept.map(|k| Replay {
            upto: k.history.last_id(),
            history: k.history.clone(),
            after,
        });
    }
    let state = Watching {
        upto: replay.as_ref().map_or(0, |r| r.upto),
        watch,
        replay,
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
        if let Some(replay) = &mut w.replay {
            let mut q = Query::new(w.watch.pattern(), REPLAY_PAGE);
            q.after = Some(replay.after);
            q.before = Some(replay.upto.saturating_add(1));
            match replay.history.read(q).await {
                Ok(page) => {
                    for m in &page.messages {
                        let data = message_json(&m.topic, &m.payload, Some(m.id), None);
                        let frame = format!("id: {}\nevent: message\ndata: {data}\n\n", m.id);
                        w.frames.push_back(Bytes::from(frame));
                    }
                    match page.next {
                        Some(next) => replay.after = next,
                        None => w.replay = None,
                    }
                }
                Err(e) => {
                    let data = serde_json::json!({ "reason": e.to_string() });
                    w.frames
                        .push_back(Bytes::from(format!("event: gap\ndata: {data}\n\n")));
                    w.replay = None;
                }
            }
            continue;
        }
        let event = w.watch.next().await?;
        if event.id.is_some_and(|id| id <= w.upto) {
            continue; // read from the history already
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
