//! Where a request runs in a cluster, decided once before its filters: on
//! any node serving its agent when this one does not, on the node its
//! session is pinned to (taking the session over when that node is gone),
//! or here; and, as a layer around the terminal, on another node when this
//! one is past the agent's concurrency limit.

use bytes::Bytes;
use http::HeaderValue;

use crate::{BoxFuture, PipelineError, Stages, default_gate};
use wharf_cluster::pins::Place;
use wharf_cluster::{Cluster, ForwardError};
use wharf_core::request::{Body, Call, Request, Response};
use wharf_routing::RouteError;

/// The header that names the node that answered.
pub const NODE_HEADER: &str = "x-wharf-node";

/// Where a request runs.
#[expect(
    clippy::large_enum_variant,
    reason = "made once per request and taken apart at once: boxing would only add an allocation"
)]
pub(crate) enum Placed {
    /// Another node answered it (or could not).
    Elsewhere(Result<Response, PipelineError>),
    /// It runs here, with its body.
    Here(Request, Body),
}

/// Decides where `req` for `agent` runs: elsewhere when no agent or
/// pipeline of that name is served here (and no node sent it here), on
/// the node its session is pinned to, else here.
pub(crate) async fn decide(
    cluster: &Cluster,
    stages: &Stages,
    agent: &str,
    mut req: Request,
    body: Body,
) -> Placed {
    let Some(route) = stages.routes.get(agent) else {
        if stages.compositions.contains_key(agent) || req.hop.from_node.is_some() {
            return Placed::Here(req, body);
        }
        let limit = default_gate().body_limit;
        return Placed::Elsewhere(elsewhere(cluster, agent, req, body, limit, None).await);
    };
    req.affinity = route.affinity_for(req.affinity.take(), &req.headers);
    let Some(session) = req.affinity.clone() else {
        return Placed::Here(req, body);
    };
    let limit = route.core.policy.limits.request_body;
    match pinned(cluster, agent, &session, &mut req, body, limit).await {
        Pinned::There(result) => Placed::Elsewhere(result),
        Pinned::Here(kept) => Placed::Here(req, kept),
    }
}

/// `req` for `agent`, answered by `node`, or by any node serving it.
async fn elsewhere(
    cluster: &Cluster,
    agent: &str,
    mut req: Request,
    body: Body,
    limit: usize,
    node: Option<&str>,
) -> Result<Response, PipelineError> {
    req.body = body.read(limit).await?;
    Ok(cluster.forward(agent, &req, node).await?)
}

/// Where a request of a pinned session went.
enum Pinned {
    /// Answered by the node its session is pinned to.
    There(Result<Response, PipelineError>),
    /// To be answered here, with its body.
    Here(Body),
}

/// A request of `agent`'s session `session`: here when the session is
/// pinned here (or nowhere yet, or its node is gone and this node took
/// the pin over), else sent to the node that holds it.
async fn pinned(
    cluster: &Cluster,
    agent: &str,
    session: &str,
    req: &mut Request,
    body: Body,
    limit: usize,
) -> Pinned {
    let (place, key) = cluster.place(agent, session).await;
    let Place::At { node, revision } = place else {
        return Pinned::Here(body);
    };
    let bytes = match body.read(limit).await {
        Ok(bytes) => bytes,
        Err(e) => return Pinned::There(Err(e.into())),
    };
    req.body = bytes.clone();
    let gone = match cluster.forward(agent, req, Some(&node)).await {
        Err(ForwardError::NoResponders(_)) => true,
        other => return Pinned::There(other.map_err(Into::into)),
    };
    debug_assert!(gone);
    tracing::info!(
        agent,
        node,
        "the node a session was pinned to is gone: re-pinning"
    );
    // Another node may take the pin over first: then the session is there.
    if !cluster.take_over(&key, revision).await
        && let (Place::At { node, .. }, _) = cluster.place(agent, session).await
    {
        return Pinned::There(
            cluster
                .forward(agent, req, Some(&node))
                .await
                .map_err(Into::into),
        );
    }
    req.body = Bytes::new();
    Pinned::Here(Body::Ready(bytes))
}

/// The agent's answer by `local`; when the agent is at its concurrency
/// limit here, another node's.
pub fn or_overflow<'a, F>(
    cluster: &'a Cluster,
    agent: &'a str,
    req: Request,
    local: F,
) -> BoxFuture<'a, Result<Response, PipelineError>>
where
    F: FnOnce(Request) -> BoxFuture<'a, Result<Response, PipelineError>>,
{
    // Only a request whose body is in hand can be sent again.
    let spare = (req.incoming.is_none() && matches!(req.call, Call::Handle)).then(|| req.clone());
    let here = local(req);
    Box::pin(async move {
        match (here.await, spare) {
            (Err(PipelineError::Route(RouteError::Overloaded)), Some(spare)) => {
                Ok(cluster.forward(agent, &spare, None).await?)
            }
            (result, _) => result,
        }
    })
}

/// Names this node on an answer it gave.
pub fn mark(cluster: &Cluster, resp: &mut Response) {
    if !resp.headers.contains_key(NODE_HEADER)
        && let Ok(value) = HeaderValue::from_str(cluster.node())
    {
        resp.headers.insert(NODE_HEADER, value);
    }
}
