//! The pipeline: the only place stages meet. A transport hands it a neutral
//! [`Request`] for a named agent; it finds the agent in the current registry
//! snapshot and runs the call on a blocking worker, bounded by the agent's
//! deadline. Filters and routing policies slot in here.

use std::sync::Arc;
use std::time::Duration;

use crate::registry::{AgentEntry, Registry};
use crate::request::{Request, Response};
use crate::runtime::CallError;

/// Extra wall-clock time past an agent's deadline before the pipeline gives
/// up waiting for the worker (the epoch deadline normally fires first).
const BACKSTOP: Duration = Duration::from_millis(500);

/// Why the pipeline did not produce a response.
#[derive(Debug, thiserror::Error)]
pub enum DispatchError {
    #[error(transparent)]
    Call(#[from] CallError),
    #[error("the worker running the call failed: {0}")]
    Worker(String),
}

/// Shared by every transport.
pub struct Pipeline {
    registry: Arc<Registry>,
}

impl Pipeline {
    pub fn new(registry: Arc<Registry>) -> Self {
        Pipeline { registry }
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The agent serving `name` in the current snapshot.
    pub fn lookup(&self, name: &str) -> Option<Arc<AgentEntry>> {
        self.registry.snapshot().agent(name).cloned()
    }

    /// Runs one request on a fresh instance of `agent`.
    pub async fn dispatch(
        &self,
        agent: Arc<AgentEntry>,
        req: Request,
    ) -> Result<Response, DispatchError> {
        let wait = agent.image.limits().deadline + BACKSTOP;
        // Guest calls are CPU-bound and synchronous: run them off the async
        // workers so a slow guest cannot stall other connections.
        let call = tokio::task::spawn_blocking(move || agent.image.handle_fresh(&req));
        match tokio::time::timeout(wait, call).await {
            Ok(Ok(result)) => Ok(result?),
            Ok(Err(join)) => Err(DispatchError::Worker(join.to_string())),
            Err(_) => Err(CallError::Deadline.into()),
        }
    }
}
