//! The request body cut into pieces as it arrives, for the filters that
//! read it so, and handed on whole or streaming once they have decided.
//! Every byte read is held for the agent; the pieces are views of it. A
//! client that sends its body a byte at a time still costs one filter call
//! per [`PIECE`] bytes: small chunks are joined before a filter sees them.

use std::collections::VecDeque;

use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use wharf_core::request::{self, Body, BodyError, Chunks, Request, Response};
use wharf_filters::{ChainRun, Flow};

use crate::PipelineError;

/// The size of a piece: every piece but the last has exactly this many
/// bytes.
pub const PIECE: usize = 8 * 1024;

/// Shows the body to the filters reading pieces until each has decided or
/// the body ended. `Ok(Err(resp))`: a filter answered. `Ok(Ok(body))`: the
/// body to go on with, the bytes read so far followed by the rest as it
/// arrives, within the same `limit`.
pub(crate) async fn shown_in_pieces(
    run: &mut ChainRun<'_>,
    req: &mut Request,
    body: Body,
    limit: usize,
) -> Result<Result<Body, Response>, PipelineError> {
    let mut cut = Cutter {
        chunks: body.chunks(limit),
        held: Vec::new(),
        unshown: VecDeque::new(),
        unshown_len: 0,
        ended: false,
    };
    while run.reading_pieces() {
        let (piece, last) = cut.next_piece().await?;
        if let Flow::Stop(resp) = run.request_body_piece(req, &piece, last).await? {
            return Ok(Err(resp));
        }
    }
    let Cutter {
        chunks,
        held,
        ended,
        ..
    } = cut;
    let rest = (!ended).then_some(chunks);
    Ok(Ok(Body::Wire(Box::new(Held { held, rest }))))
}

/// Cuts a body's chunks into pieces of [`PIECE`] bytes, holding every chunk.
struct Cutter {
    chunks: Chunks,
    /// Every chunk read, in order.
    held: Vec<Bytes>,
    /// The parts of held chunks not shown yet.
    unshown: VecDeque<Bytes>,
    unshown_len: usize,
    /// The body has no more chunks.
    ended: bool,
}

impl Cutter {
    /// The next piece, and whether it is the last one (it may be empty).
    async fn next_piece(&mut self) -> Result<(Bytes, bool), BodyError> {
        while self.unshown_len < PIECE && !self.ended {
            match self.chunks.next().await {
                Some(chunk) => {
                    let chunk = chunk?;
                    if !chunk.is_empty() {
                        self.unshown_len += chunk.len();
                        self.held.push(chunk.clone());
                        self.unshown.push_back(chunk);
                    }
                }
                None => self.ended = true,
            }
        }
        let n = self.unshown_len.min(PIECE);
        let piece = self.take(n);
        Ok((piece, self.ended && self.unshown_len == 0))
    }

    /// The first `n` unshown bytes: a view of one chunk when they lie in
    /// one, else copied together.
    fn take(&mut self, n: usize) -> Bytes {
        self.unshown_len -= n;
        match self.unshown.front_mut() {
            Some(front) if front.len() >= n => {
                let piece = front.split_to(n);
                if front.is_empty() {
                    self.unshown.pop_front();
                }
                piece
            }
            _ => {
                let mut piece = BytesMut::with_capacity(n);
                while piece.len() < n {
                    let front = self.unshown.front_mut().expect("n bytes are unshown");
                    let take = front.len().min(n - piece.len());
                    piece.extend_from_slice(&front.split_to(take));
                    if front.is_empty() {
                        self.unshown.pop_front();
                    }
                }
                piece.freeze()
            }
        }
    }
}

/// A body some of which was read already: those chunks, then the rest as
/// it arrives.
struct Held {
    held: Vec<Bytes>,
    rest: Option<Chunks>,
}

impl request::Wire for Held {
    fn read(
        self: Box<Self>,
        limit: usize,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<Bytes, BodyError>> + Send>> {
        Box::pin(async move {
            let Held { mut held, rest } = *self;
            if let Some(mut rest) = rest {
                while let Some(chunk) = rest.next().await {
                    held.push(chunk?);
                }
            }
            let read = held.iter().map(Bytes::len).sum::<usize>();
            if read > limit {
                return Err(BodyError::TooLarge(limit));
            }
            Ok(match held.len() {
                0 => Bytes::new(),
                1 => held.pop().expect("one chunk"),
                _ => {
                    let mut whole = BytesMut::with_capacity(read);
                    for chunk in &held {
                        whole.extend_from_slice(chunk);
                    }
                    whole.freeze()
                }
            })
        })
    }

    fn chunks(self: Box<Self>, limit: usize) -> Chunks {
        let held = futures_util::stream::iter(self.held.into_iter().map(Ok));
        let mut seen = 0usize;
        let all = match self.rest {
            Some(rest) => held.chain(rest).boxed(),
            None => held.boxed(),
        };
        Box::pin(all.map(move |chunk| {
            let chunk = chunk?;
            seen += chunk.len();
            if seen > limit {
                return Err(BodyError::TooLarge(limit));
            }
            Ok(chunk)
        }))
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_none() && self.held.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wharf_core::request::Wire;

    fn cutter(sizes: &[usize]) -> Cutter {
        let mut at = 0u8;
        let chunks: Vec<Result<Bytes, BodyError>> = sizes
            .iter()
            .map(|&n| {
                at = at.wrapping_add(1);
                Ok(Bytes::from(vec![at; n]))
            })
            .collect();
        Cutter {
            chunks: Box::pin(futures_util::stream::iter(chunks)),
            held: Vec::new(),
            unshown: VecDeque::new(),
            unshown_len: 0,
            ended: false,
        }
    }

    /// Every piece's length and `last`, to the end.
    async fn cut(sizes: &[usize]) -> (Vec<(usize, bool)>, Vec<u8>) {
        let mut c = cutter(sizes);
        let (mut pieces, mut bytes) = (Vec::new(), Vec::new());
        loop {
            let (piece, last) = c.next_piece().await.unwrap();
            pieces.push((piece.len(), last));
            bytes.extend_from_slice(&piece);
            if last {
                let held: Vec<u8> = c.held.iter().flat_map(|b| b.to_vec()).collect();
                assert_eq!(held, bytes, "the pieces are the held bytes, in order");
                return (pieces, bytes);
            }
        }
    }

    #[tokio::test]
    async fn pieces_are_full_but_the_last_whatever_the_chunks() {
        let (pieces, bytes) = cut(&[3, 9000, 0, 1, 8000]).await;
        assert_eq!(pieces, [(8192, false), (8192, false), (620, true)]);
        assert_eq!(bytes.len(), 17004);
        assert_eq!(cut(&[8192]).await.0, [(8192, false), (0, true)]);
        assert_eq!(cut(&[]).await.0, [(0, true)]);
        assert_eq!(cut(&[1; 100]).await.0, [(100, true)]);
        assert_eq!(
            cut(&[20000]).await.0,
            [(8192, false), (8192, false), (3616, true)]
        );
    }

    #[tokio::test]
    async fn what_was_read_goes_on_before_the_rest() {
        let mut c = cutter(&[5000, 5000, 5000]);
        c.next_piece().await.unwrap();
        let Cutter { chunks, held, .. } = c;
        let body = Held {
            held,
            rest: Some(chunks),
        };
        let whole = Box::new(body).read(15000).await.unwrap();
        assert_eq!(whole.len(), 15000);
        assert_eq!(whole[4999..5001], [1, 2]);
        assert_eq!(whole[14999], 3);
        let mut c = cutter(&[5000, 5000, 5000]);
        c.next_piece().await.unwrap();
        let Cutter { chunks, held, .. } = c;
        let body = Box::new(Held {
            held,
            rest: Some(chunks),
        });
        assert_eq!(body.read(14999).await, Err(BodyError::TooLarge(14999)));
    }
}
