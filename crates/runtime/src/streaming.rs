//! The `streaming` host imports: `start` and `write` of a `handle` call
//! that streams its answer, checked (status, headers, the response-body
//! limit) and passed to the call's sink.

use bytes::Bytes;
use http::StatusCode;

use super::bindings::StreamingHost;
use super::convert::decode_headers;
use super::state::GuestState;

impl StreamingHost for GuestState {
    fn start(&mut self, status: u16, headers: Vec<u8>) -> Result<(), String> {
        let sink = self.sink.as_ref().ok_or_else(outside_handle)?;
        let status = StatusCode::from_u16(status)
            .map_err(|_| format!("status {status} is not a valid HTTP status"))?;
        let headers = decode_headers(Bytes::from(headers)).map_err(|e| e.to_string())?;
        sink.start(status, headers).map_err(|e| e.to_string())
    }

    fn write(&mut self, chunk: Vec<u8>) -> Result<(), String> {
        let sink = self.sink.as_ref().ok_or_else(outside_handle)?;
        sink.write(Bytes::from(chunk)).map_err(|e| e.to_string())
    }
}

fn outside_handle() -> String {
    "only `handle` can stream its answer".into()
}
