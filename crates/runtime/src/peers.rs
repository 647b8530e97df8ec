//! The `peers` host imports: a guest's call to another agent and its
//! publish to a topic, turned into a neutral request and handed to the
//! host's [`Peers`](wharf_core::request::Peers) (the pipeline). What may be
//! called or published is the pipeline's to decide; this module only
//! converts and carries the caller's path and deadline.

use std::collections::BTreeMap;

use bytes::Bytes;
use http::Method;

use super::bindings::{AsyncCallError, GuestCallError, PeersAsyncHost, PeersHost};
use super::convert::{decode_headers, encode_headers};
use super::state::GuestState;
use wharf_core::request::{PeerError, Request, Response};

/// The guest's request record, owned (an import's parameters are).
type OwnedRequest = super::bindings::OwnedGuestRequest;
/// The response record handed back to the guest.
type OwnedResponse = super::bindings::GuestResponse;

impl PeersHost for GuestState {
    /// On the load-time linker (`describe`, `health`) nothing may be called.
    fn call(&mut self, agent: String, _req: OwnedRequest) -> Result<OwnedResponse, GuestCallError> {
        Err(GuestCallError::Denied(format!(
            "cannot call `{agent}` here: agents call each other only while serving a request"
        )))
    }

    fn publish(&mut self, topic: String, payload: Vec<u8>) -> Result<u32, String> {
        publish(self, &topic, payload)
    }
}

impl PeersAsyncHost for GuestState {
    async fn call(
        &mut self,
        agent: String,
        req: OwnedRequest,
    ) -> Result<OwnedResponse, AsyncCallError> {
        let (reach, deadline) = (self.reach.clone(), self.deadline_at);
        call(reach, deadline, self.trace.clone(), agent, req)
            .await
            .map_err(|err| match err {
                PeerError::Denied(m) => AsyncCallError::Denied(m),
                PeerError::NotFound(m) => AsyncCallError::NotFound(m),
                PeerError::Loop(m) => AsyncCallError::LoopDetected(m),
                PeerError::Failed(status, m) => AsyncCallError::Failed((status, m)),
            })
    }

    fn publish(&mut self, topic: String, payload: Vec<u8>) -> Result<u32, String> {
        publish(self, &topic, payload)
    }
}

/// The call, through the host's [`Peers`](wharf_core::request::Peers), with
/// the caller's path, deadline and span.
async fn call(
    reach: Option<wharf_core::request::Reach>,
    deadline: std::time::Instant,
    trace: Option<wharf_core::trace::Trace>,
    agent: String,
    req: OwnedRequest,
) -> Result<OwnedResponse, PeerError> {
    let Some(reach) = reach else {
        return Err(PeerError::Denied(format!(
            "cannot call `{agent}`: this agent's block allows no calls (add `calls \"{agent}\"`)"
        )));
    };
    let mut req = neutral_request(req).map_err(|(s, m)| PeerError::Failed(s, m))?;
    req.trace = trace;
    req.hop.relayed = reach.relayed;
    let resp = reach.peers.call(reach.path, deadline, agent, req).await?;
    Ok(guest_response(resp))
}

fn publish(state: &GuestState, topic: &str, payload: Vec<u8>) -> Result<u32, String> {
    let Some(reach) = &state.reach else {
        return Err(format!(
            "cannot publish to `{topic}`: this agent's block allows no publishing (add `publishes \"{topic}\"`)"
        ));
    };
    let from = reach.path.last().map_or("", |a| a);
    let queued = reach
        .peers
        .publish(
            from,
            reach.relayed,
            topic,
            Bytes::from(payload),
            state.trace.as_ref(),
        )
        .map_err(|e| e.to_string())?;
    Ok(u32::try_from(queued).unwrap_or(u32::MAX))
}

/// The neutral request for a guest's request record: `method` and `path`
/// from its head (`query` when given), its headers decoded and checked.
fn neutral_request(req: OwnedRequest) -> Result<Request, (u16, String)> {
    let bad = |what: String| (400, format!("the call's request is malformed: {what}"));
    let head: BTreeMap<String, String> =
        rmp_serde::from_slice(&req.head).map_err(|e| bad(format!("its head: {e}")))?;
    let method = head.get("method").map_or("POST", String::as_str);
    let method = Method::from_bytes(method.as_bytes())
        .map_err(|_| bad(format!("`{method}` is not an HTTP method")))?;
    let path = head.get("path").map_or("/", String::as_str);
    if !path.starts_with('/') {
        return Err(bad(format!("the path `{path}` does not start with `/`")));
    }
    let mut out = Request::new(method, path);
    if let Some(query) = head.get("query") {
        out.query = query.clone();
    }
    out.headers = decode_headers(Bytes::from(req.headers)).map_err(|e| bad(e.to_string()))?;
    out.body = Bytes::from(req.body);
    Ok(out)
}

fn guest_response(resp: Response) -> OwnedResponse {
    OwnedResponse {
        status: resp.status.as_u16(),
        headers: encode_headers(&resp.headers),
        body: resp.body.into(),
    }
}
