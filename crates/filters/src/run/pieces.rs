//! The request body shown in pieces, as it arrives, to the filters that
//! read it so (`on-request-body-chunk`): which filters read pieces, each
//! filter's body limit applied to what it was shown, and a filter's
//! decision ending its part. The transport's side (cutting the body into
//! pieces and handing it on) is the pipeline's.

use wharf_config::PastLimit;
use wharf_core::request::Request;
use wharf_core::verdict::Phase;

use super::{ChainRun, FilterFailure, Flow, Input, Step};
use crate::metrics::Skip;

impl ChainRun<'_> {
    /// Whether the request body goes to filters in pieces: true when the
    /// first filter that wants it reads it in pieces. Those filters, up to
    /// the first one that reads it whole, are shown the pieces; the others
    /// get it whole afterwards ([`ChainRun::request_body`]), in chain order
    /// as before. Call once, after the request-headers phase.
    pub fn streams_request_body(&mut self) -> bool {
        self.reading = (0..self.ran)
            .filter(|&i| self.want_request_body[i])
            .take_while(|&i| self.chain[i].entry.image.streams_request_body())
            .collect();
        !self.reading.is_empty()
    }

    /// Whether a filter is still waiting for pieces.
    pub fn reading_pieces(&self) -> bool {
        !self.reading.is_empty()
    }

    /// Shows the next piece of the request body to every filter still
    /// reading, in chain order; `last` when the body ends with it. A
    /// filter's verdict is applied when it decides (a block stops the
    /// request); a filter that decided, or whose body limit says `pass`,
    /// is not shown later pieces and does not read the body whole.
    pub async fn request_body_piece(
        &mut self,
        req: &mut Request,
        piece: &[u8],
        last: bool,
    ) -> Result<Flow, FilterFailure> {
        let before = self.shown;
        self.shown += piece.len();
        let mut k = 0;
        while k < self.reading.len() {
            let i = self.reading[k];
            let (view, view_last) = match self.past_limit(i, before, piece.len())? {
                Past::Within => (piece, last),
                Past::Cut(n) => (&piece[..n], true),
                Past::Pass => {
                    self.chain[i].metrics.skip(Skip::BodyPastLimit);
                    self.done_reading(k);
                    continue;
                }
            };
            let step = self
                .call_step(
                    i,
                    Phase::RequestBody,
                    req,
                    Input::Piece(view, view_last),
                    false,
                )
                .await?;
            match step {
                Step::More if !view_last => k += 1,
                Step::More | Step::Skipped => self.done_reading(k),
                Step::Decided(v) => {
                    self.done_reading(k);
                    if let Flow::Stop(resp) = self.apply_request(i, v, req) {
                        self.ran = i;
                        self.reading.clear();
                        return Ok(Flow::Stop(resp));
                    }
                }
            }
        }
        Ok(Flow::Continue)
    }

    /// Filter `reading[k]` has finished with the body.
    fn done_reading(&mut self, k: usize) {
        let i = self.reading.remove(k);
        self.want_request_body[i] = false;
    }

    /// Where filter `i`'s body limit falls in a piece of `len` bytes that
    /// starts after `before` bytes shown.
    fn past_limit(&self, i: usize, before: usize, len: usize) -> Result<Past, FilterFailure> {
        let route = &self.chain[i];
        let Some(limit) = route
            .entry
            .policy
            .body_limit
            .filter(|l| before + len > l.size)
        else {
            return Ok(Past::Within);
        };
        match limit.past {
            PastLimit::Reject => Err(FilterFailure::BodyTooLarge {
                filter: route.name().to_string(),
                limit: limit.size,
                what: "request",
            }),
            PastLimit::Pass => Ok(Past::Pass),
            PastLimit::InspectPrefix => Ok(Past::Cut(limit.size.saturating_sub(before))),
        }
    }
}

/// A piece against a filter's body limit.
enum Past {
    /// All of it is within the limit.
    Within,
    /// Its first bytes are: the filter sees them as the last piece.
    Cut(usize),
    /// Past it, and the filter's limit says `pass`: it is not shown.
    Pass,
}
