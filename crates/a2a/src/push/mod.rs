//! A2A push notifications: webhook configs per task (created, read, listed
//! and deleted by clients, kept in the task store), and every update of a
//! task that has them sent to each of its webhooks as the protocol's
//! `StreamResponse`, in order, by one worker per webhook
//! ([`deliver`]), to places the `push` allow-list admits ([`guard`]).

mod deliver;
mod guard;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use dashmap::DashMap;
use http::HeaderValue;
use metrics::Label;
use serde_json::{Value, json};
use wharf_tasks::{
    A2aError, A2aErrorKind, ListPushConfigsParams, PushConfigParams, StreamResponse,
    TaskPushNotificationConfig, TaskStore,
};

use self::deliver::{Counters, Hook};
use super::{ends_task, store_error};
use wharf_config::Push as Policy;
use wharf_core::metrics::{Metrics, counter};

/// `config` as a client is shown it: a webhook's credentials go to the
/// webhook and never back to any caller.
pub(crate) fn shown(mut config: TaskPushNotificationConfig) -> TaskPushNotificationConfig {
    if let Some(auth) = &mut config.authentication {
        auth.credentials.clear();
    }
    config
}

/// A config that passed [`Push::check`], with where its URL points.
pub(crate) struct Checked {
    pub config: TaskPushNotificationConfig,
    webhook: guard::Webhook,
}

/// Webhooks of the tasks that may still change, and how to reach them.
pub struct Push {
    policy: Arc<Policy>,
    store: Arc<dyn TaskStore>,
    /// By (agent, task id); a task's entry goes when it finishes.
    hooks: DashMap<(String, String), Vec<Arc<Hook>>>,
    counters: Arc<Counters>,
    tls: Arc<wharf_runtime::ClientTls>,
}

impl Push {
    /// Push delivery under `policy`, configs kept in `store`.
    pub fn new(policy: Policy, store: Arc<dyn TaskStore>, metrics: &Metrics) -> Push {
        let r = metrics.recorder();
        let outcome = |o: &'static str| vec![Label::new("outcome", o)];
        let counters = Counters {
            delivered: counter(r, "wharf_a2a_push_total", outcome("delivered")),
            failed: counter(r, "wharf_a2a_push_total", outcome("failed")),
            dropped: counter(r, "wharf_a2a_push_total", outcome("dropped")),
            retried: counter(r, "wharf_a2a_push_retries_total", Vec::new()),
        };
        Push {
            tls: Arc::new(wharf_runtime::ClientTls::new("push", policy.ca.clone())),
            policy: Arc::new(policy),
            store,
            hooks: DashMap::new(),
            counters: Arc::new(counters),
        }
    }

    /// Starts the webhooks of an unfinished task found at start.
    pub(crate) fn restore(&self, agent: &str, task_id: &str) {
        let configs = match self.store.push_configs(agent, task_id) {
            Ok(configs) => configs,
            Err(e) => {
                tracing::error!(agent, task = task_id, error = %e, "cannot read a task's push configs");
                return;
            }
        };
        for config in configs {
            match guard::check_url(&config.url, &self.policy.allow) {
                Ok(webhook) => self.start(agent, config, webhook),
                Err(why) => {
                    tracing::warn!(agent, task = task_id, config = %config.id, "a stored webhook is no longer allowed: {why}");
                }
            }
        }
    }

    /// Checks a config a client sent and gives it an id when it has none.
    /// Nothing is kept yet.
    pub(crate) fn check(
        &self,
        mut config: TaskPushNotificationConfig,
    ) -> Result<Checked, A2aError> {
        let invalid = |why: String| {
            A2aError::new(A2aErrorKind::InvalidParams).message(format!("Invalid parameters: {why}"))
        };
        let webhook = guard::check_url(&config.url, &self.policy.allow).map_err(invalid)?;
        if HeaderValue::from_str(&config.token).is_err() {
            return Err(invalid("`token` must be printable text".into()));
        }
        if let Some(auth) = &config.authentication {
            let scheme_ok = !auth.scheme.is_empty()
                && auth
                    .scheme
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-._~+".contains(&b));
            if !scheme_ok || HeaderValue::from_str(&auth.credentials).is_err() {
                return Err(invalid(
                    "`authentication` needs a scheme (such as Bearer) and printable credentials"
                        .into(),
                ));
            }
        }
        if config.id.is_empty() {
            config.id = uuid::Uuid::new_v4().to_string();
        }
        if config.id.len() > 128 {
            return Err(invalid("`id` is longer than 128 characters".into()));
        }
        Ok(Checked { config, webhook })
    }

    /// Keeps a checked config of `agent`'s task and, while the task may
    /// still change (`live`), starts sending it the task's updates.
    pub(crate) async fn create(
        &self,
        agent: &str,
        checked: Checked,
        live: bool,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        let Checked { config, webhook } = checked;
        let existing = self
            .store
            .push_configs(agent, &config.task_id)
            .map_err(store_error)?;
        let replaces = existing.iter().any(|c| c.id == config.id);
        if !replaces && existing.len() >= self.policy.max_configs {
            return Err(A2aError::new(A2aErrorKind::InvalidParams)
                .message(format!(
                    "Invalid parameters: task `{}` already has {} webhooks, the most this host allows",
                    config.task_id,
                    existing.len()
                ))
                .with("taskId", config.task_id.clone()));
        }
        self.store
            .put_push_config(agent, &config)
            .wait()
            .await
            .map_err(store_error)?;
        if live {
            self.start(agent, config.clone(), webhook);
        }
        Ok(config)
    }

    /// `GetTaskPushNotificationConfig` of a task known to exist.
    pub(crate) fn get(
        &self,
        agent: &str,
        params: &PushConfigParams,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        self.store
            .push_configs(agent, &params.task_id)
            .map_err(store_error)?
            .into_iter()
            .find(|c| c.id == params.id)
            .ok_or_else(|| {
                A2aError::new(A2aErrorKind::TaskNotFound)
                    .message(format!(
                        "Task not found: task `{}` has no push notification config `{}`",
                        params.task_id, params.id
                    ))
                    .with("taskId", params.task_id.clone())
                    .with("configId", params.id.clone())
            })
    }

    /// `ListTaskPushNotificationConfigs` of a task known to exist: every
    /// config on one page (a task has at most `max-configs`).
    pub(crate) fn list(
        &self,
        agent: &str,
        params: &ListPushConfigsParams,
    ) -> Result<Value, A2aError> {
        let configs = self
            .store
            .push_configs(agent, &params.task_id)
            .map_err(store_error)?;
        let configs: Vec<_> = configs.into_iter().map(shown).collect();
        Ok(json!({ "configs": configs, "nextPageToken": "" }))
    }

    /// `DeleteTaskPushNotificationConfig`: nothing more goes to it.
    pub(crate) async fn delete(
        &self,
        agent: &str,
        params: &PushConfigParams,
    ) -> Result<(), A2aError> {
        self.store
            .delete_push_config(agent, &params.task_id, &params.id)
            .wait()
            .await
            .map_err(store_error)?;
        let key = (agent.to_string(), params.task_id.clone());
        if let Some(mut hooks) = self.hooks.get_mut(&key) {
            hooks.retain(|h| {
                let gone = h.config.id == params.id;
                if gone {
                    h.closed.store(true, Ordering::Relaxed);
                }
                !gone
            });
        }
        self.hooks.remove_if(&key, |_, hooks| hooks.is_empty());
        Ok(())
    }

    /// Sends `event` of `agent`'s task to its webhooks, without waiting;
    /// the task's webhooks are let go once it finishes.
    pub(crate) fn notify(&self, agent: &str, event: &StreamResponse) {
        if self.hooks.is_empty() {
            return;
        }
        let task_id = match event {
            StreamResponse::Task(t) => t.id.as_str(),
            StreamResponse::Message(m) => m.task_id.as_deref().unwrap_or_default(),
            StreamResponse::StatusUpdate(e) => e.task_id.as_str(),
            StreamResponse::ArtifactUpdate(e) => e.task_id.as_str(),
        };
        let key = (agent.to_string(), task_id.to_string());
        let Some(hooks) = self.hooks.get(&key) else {
            return;
        };
        let body = Bytes::from(serde_json::to_vec(event).unwrap_or_default());
        for hook in hooks.iter() {
            if hook.queue.try_send(body.clone()).is_err() {
                self.counters.dropped.increment(1);
                if !hook.overflowed.swap(true, Ordering::Relaxed) {
                    tracing::warn!(agent, task = task_id, config = %hook.config.id, "a webhook is too slow: notifications are dropped");
                }
            }
        }
        drop(hooks);
        if ends_task(event) {
            self.hooks.remove(&key);
        }
    }

    fn start(&self, agent: &str, config: TaskPushNotificationConfig, webhook: guard::Webhook) {
        let key = (agent.to_string(), config.task_id.clone());
        let id = config.id.clone();
        let hook = Arc::new(Hook::spawn(
            config,
            webhook,
            self.policy.clone(),
            self.tls.clone(),
            self.counters.clone(),
            agent.to_string(),
        ));
        let mut hooks = self.hooks.entry(key).or_default();
        for old in hooks.iter().filter(|h| h.config.id == id) {
            old.closed.store(true, Ordering::Relaxed);
        }
        hooks.retain(|h| h.config.id != id);
        hooks.push(hook);
    }
}
