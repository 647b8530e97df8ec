//! The per-agent tower stack every call goes through:
//! load shed → concurrency limit → attempt, whose trapped calls are
//! retried (bounded) on the same permit. tower does the limiting and
//! shedding; Wharf supplies the attempt and when to retry it.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::TryFutureExt;
use tower::util::BoxCloneSyncService;
use tower::{BoxError, Service, ServiceBuilder};

use super::{AgentCore, RouteError};
use wharf_core::request::{Call, Request, Response};
use wharf_runtime::CallError;

pub type AgentService = BoxCloneSyncService<Request, Response, BoxError>;

/// Builds the stack for one agent.
pub fn stack(core: Arc<AgentCore>) -> AgentService {
    let limits = core.policy.limits;
    let service = ServiceBuilder::new()
        .load_shed()
        .concurrency_limit(limits.concurrency)
        .service(Attempt { core });
    BoxCloneSyncService::new(service)
}

/// One call: the warm pool or a fresh instance, again while it traps and
/// retries are left.
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
        Box::pin(retried(core, req).map_err(BoxError::from))
    }
}

/// Runs `req`, and runs it again while its instance trapped (or failed to
/// instantiate) before answering and retries are left: the guest has no
/// capability with outside effects, and the instance is discarded, so the
/// retry starts clean. Deadlines and memory limits are not retried (they
/// would only happen again, slower). The request is lent to each attempt,
/// never copied; a retry keeps the concurrency permit of the first.
async fn retried(core: Arc<AgentCore>, mut req: Request) -> Result<Response, RouteError> {
    let mut left = core.policy.limits.retries;
    loop {
        let result = core.clone().attempt(&req).await;
        if left == 0 || !may_retry(&req, &result) {
            return result;
        }
        left -= 1;
        req.attempt += 1;
        core.metrics.retries().increment(1);
    }
}

/// Whether `req`, whose attempt ended in `result`, may run again.
fn may_retry(req: &Request, result: &Result<Response, RouteError>) -> bool {
    let Err(err) = result else {
        return false;
    };
    // A turn may have reported progress before it trapped: running it
    // again would report it twice; a body read as it arrived is gone; an
    // answer whose head has left cannot be given again.
    let once = matches!(req.call, Call::Turn(_))
        || req.incoming.is_some()
        || matches!(&req.call, Call::Streamed(sink) if sink.started());
    !once
        && matches!(
            err,
            RouteError::Call(CallError::Trap(_) | CallError::Instantiate(_))
        )
}
