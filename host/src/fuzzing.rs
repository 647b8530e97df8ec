//! Entry points for the fuzz targets in `fuzz/` (feature `fuzzing`, run by
//! `scripts/reliability/fuzz.sh`): each takes arbitrary bytes and must neither panic,
//! hang nor allocate beyond what the input justifies.

use std::path::Path;

use crate::transport::binary::frame;

/// The binary transport's frame decoder: a decoded body lies inside the
/// frame, and every answer it could lead to encodes.
pub fn frame(data: &[u8]) {
    match frame::decode_request(data) {
        Ok(req) => {
            let range = data.as_ptr_range();
            assert!(req.body.is_empty() || range.contains(&req.body.as_ptr()));
            assert!(req.body.len() <= data.len());
            assert!(req.headers.len() <= frame::MAX_HEADERS);
            let head = frame::answer_head(req.id, 200, &http::HeaderMap::new(), req.body.len());
            assert!(head.len() >= frame::PREFIX);
        }
        Err(err) => {
            let out = frame::error_frame(err.id, 400, "bad_frame", &err.message, None);
            assert!(out.len() > frame::PREFIX);
        }
    }
}

/// The KDL configuration parser: any text gives a configuration or
/// diagnostics, never a panic.
pub fn config(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data)
        && let Err(err) = crate::config::Config::parse("fuzz.kdl", text, Path::new("/etc/wharf"))
    {
        let _ = err.plain();
    }
}

/// A filter's verdict and the header blobs in it, checked against every
/// phase's contract; and the header blob decoder on the raw bytes.
pub fn verdict(data: &[u8]) {
    crate::runtime::fuzz_verdict(data);
    let _ = crate::runtime::decode_headers(bytes::Bytes::copy_from_slice(data));
}
