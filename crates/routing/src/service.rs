//! The per-agent tower stack every call goes through:
//! retry (only for traps, bounded) → load shed → concurrency limit → attempt.
//! tower does the limiting and shedding; Wharf supplies the attempt and the
//! retry policy.

use std::future::{Ready, ready};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tower::retry::Policy;
use tower::util::BoxCloneSyncService;
use tower::{BoxError, Service, ServiceBuilder};

use super::{AgentCore, RouteError};
use wharf_core::request::{Request, Response};
use wharf_runtime::CallError;

pub type AgentService = BoxCloneSyncService<Request, Response, BoxError>;

/// Builds the stack for one agent.
pub fn stack(core: Arc<AgentCore>) -> AgentService {
    let limits = core.policy.limits;
    let retry = RetryTrapped {
        left: limits.retries,
        core: core.clone(),
    };
    let service = ServiceBuilder::new()
        .retry(retry)
        .load_shed()
        .concurrency_limit(limits.concurrency)
        .service(Attempt { core });
    BoxCloneSyncService::new(service)
}

/// One attempt: the warm pool or a fresh instance.
#[derive(Clone)]
struct Attempt {
    core: Arc<AgentCore>,
}

impl Service<Request> for Attempt {
    type Response = Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let core = self.core.clone();
        Box::pin(async move { core.attempt(req).await.map_err(BoxError::from) })
    }
}

/// Retries a call whose instance trapped (or failed to instantiate) before
/// answering: the guest has no capability with outside effects, and the
/// instance is discarded, so the retry starts clean. Deadlines and memory
/// limits are not retried (they would only happen again, slower).
#[derive(Clone)]
struct RetryTrapped {
    left: u32,
    core: Arc<AgentCore>,
}

impl Policy<Request, Response, BoxError> for RetryTrapped {
    type Future = Ready<()>;

    fn retry(
        &mut self,
        req: &mut Request,
        result: &mut Result<Response, BoxError>,
    ) -> Option<Self::Future> {
        let Err(err) = result else {
            return None;
        };
        // An answer whose head has left cannot be given again.
        if let wharf_core::request::Call::Streamed(sink) = &req.call
            && sink.started()
        {
            return None;
        }
        let trapped = matches!(
            err.downcast_ref::<RouteError>(),
            Some(RouteError::Call(
                CallError::Trap(_) | CallError::Instantiate(_)
            ))
        );
        if !trapped || self.left == 0 {
            return None;
        }
        self.left -= 1;
        req.attempt += 1;
        self.core.metrics.retries().increment(1);
        Some(ready(()))
    }

    fn clone_request(&mut self, req: &Request) -> Option<Request> {
        // A turn may have reported progress before it trapped: running it
        // again would report it twice; a body read as it arrived is gone.
        let once = matches!(req.call, wharf_core::request::Call::Turn(_)) || req.incoming.is_some();
        (self.left > 0 && !once).then(|| req.clone())
    }
}
