//! The second half of a start that loads agents while serving
//! (`server { load "while-serving" }`): the agents left pending are loaded
//! on every core, the ones requests wait for first, and published in
//! batches as they load, so a waiting request is answered once its agent
//! is ready rather than once the directory is.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};

use crate::registry::{AgentEntry, Progress, Snapshot, load_pending};

/// The least time between two publishes of agents loaded so far.
const FIRST_GAP: Duration = Duration::from_millis(10);

/// How many times a publish's own cost passes before the next one:
/// publishing rebuilds the routes of every agent served, so batches grow
/// with the directory and publishing stays near a tenth of one core.
const GAP_PER_COST: u32 = 10;

impl super::Reloader {
    /// Loads what the start left pending, publishing as it goes; returns
    /// at once when nothing is pending. Reload triggers wait until it ends.
    pub(super) async fn load_pending(&mut self) {
        let pipeline = self.state.pipeline.clone();
        let first = pipeline.registry().snapshot();
        if first.pending.is_empty() {
            return;
        }
        let started = Instant::now();
        let (tx, mut loaded) = mpsc::unbounded_channel::<Arc<AgentEntry>>();
        let (done, finished) = oneshot::channel();
        let (runtime, config, wanted) = (
            self.runtime.clone(),
            self.config.clone(),
            pipeline.wanted().clone(),
        );
        let base = first.clone();
        // Its own thread at normal priority: until this ends, requests
        // for agents not loaded yet wait for it.
        let spawned = std::thread::Builder::new()
            .name("wharf-load-pending".into())
            .spawn(move || {
                let report = |p: Progress<'_>| {
                    if let Some(agent) = p.agent {
                        let _ = tx.send(agent.clone());
                    }
                };
                let dir = &config.agents_dir;
                let _ = done.send(load_pending(
                    &runtime, &config, dir, &base, &report, &wanted,
                ));
            });
        if let Err(err) = spawned {
            tracing::error!(error = %err, "no thread to load the pending agents on: they are not served");
            pipeline.publish(nothing_pending(&first));
            return;
        }
        tokio::pin!(finished);
        let mut served = first;
        let mut batch: Vec<Arc<AgentEntry>> = Vec::new();
        let (mut last, mut gap, mut open) = (Instant::now(), FIRST_GAP, true);
        let result = loop {
            let due = (!batch.is_empty()).then(|| tokio::time::Instant::from_std(last + gap));
            tokio::select! {
                biased;
                result = &mut finished => break result,
                entry = loaded.recv(), if open => match entry {
                    Some(entry) => batch.push(entry),
                    None => open = false,
                },
                () = sleep_until(due), if due.is_some() => {
                    let began = Instant::now();
                    let next = served.and_loaded(&batch);
                    batch.clear();
                    pipeline.publish(next);
                    served = pipeline.registry().snapshot();
                    last = Instant::now();
                    gap = FIRST_GAP.max(last.duration_since(began) * GAP_PER_COST);
                }
            }
        };
        match result {
            Ok(Ok(snapshot)) => {
                tracing::info!(
                    agents = snapshot.agents.len(),
                    refused = snapshot.refused.len(),
                    ms = started.elapsed().as_millis() as u64,
                    "agents loaded while serving"
                );
                pipeline.publish(snapshot);
            }
            Ok(Err(err)) => {
                tracing::error!(error = %err, "the agents directory cannot be read: the agents not loaded yet are not served");
                pipeline.publish(nothing_pending(&served));
            }
            Err(_) => {
                tracing::error!("the loader stopped: the agents not loaded yet are not served");
                pipeline.publish(nothing_pending(&served));
            }
        }
        // Names asked for while the last batch loaded: nothing waits for
        // them now.
        pipeline.wanted().clear();
    }
}

/// Sleeps until `due` (a branch that is off when there is none).
async fn sleep_until(due: Option<tokio::time::Instant>) {
    if let Some(due) = due {
        tokio::time::sleep_until(due).await;
    }
}

/// `snapshot` with nothing pending: what could not be loaded is not served
/// (404), rather than waited for.
fn nothing_pending(snapshot: &Snapshot) -> Snapshot {
    let mut next = snapshot.and_loaded(&[]);
    next.pending.clear();
    next
}
