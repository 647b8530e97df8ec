//! How the pipeline sends a request elsewhere in the cluster: to any node
//! serving its agent, to the node its session is pinned to (taking the
//! session over when that node is gone), or on to another node when this
//! one is past the agent's concurrency limit.

use bytes::Bytes;
use http::HeaderValue;

use crate::cluster::pins::Place;
use crate::cluster::{Cluster, ForwardError};
use crate::pipeline::{BoxFuture, PipelineError};
use crate::request::{Body, Call, Request, Response};
use crate::router::RouteError;

/// The header that names the node that answered.
pub const NODE_HEADER: &str = "x-wharf-node";

/// `req` for `agent`, answered by `node`, or by any node serving it.
pub async fn elsewhere(
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
pub enum Pinned {
    /// Answered by the node its session is pinned to.
    There(Result<Response, PipelineError>),
    /// To be answered here, with its body.
    Here(Body),
}

/// A request of `agent`'s session `session`: here when the session is
/// pinned here (or nowhere yet, or its node is gone and this node took
/// the pin over), else sent to the node that holds it.
pub async fn pinned(
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
