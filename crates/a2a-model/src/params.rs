//! Parameters of the A2A task methods, read tolerantly (camelCase or
//! snake_case, unknown fields ignored), validated into what the store and
//! the host use, with every refusal an `InvalidParams` error that says
//! which field and why; and the ISO 8601 timestamps tasks carry.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::error::{A2aError, A2aErrorKind};
use crate::model::{Message, TaskState};

/// Reads `params` as `T`; a missing or mistyped field is `InvalidParams`
/// naming it.
pub fn parse_params<T: DeserializeOwned>(params: Value) -> Result<T, A2aError> {
    let params = if params.is_null() {
        Value::Object(Map::new())
    } else {
        params
    };
    serde_json::from_value(params).map_err(|e| invalid(e.to_string()))
}

fn invalid(why: impl Into<String>) -> A2aError {
    A2aError::new(A2aErrorKind::InvalidParams)
        .message(format!("Invalid parameters: {}", why.into()))
}

/// `SendMessage` and `SendStreamingMessage`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageParams {
    #[serde(default)]
    /// The tenant, when the server hosts several.
    pub tenant: String,
    /// The message sent.
    pub message: Message,
    #[serde(default)]
    /// How the client wants it handled.
    pub configuration: Option<SendMessageConfiguration>,
    #[serde(default)]
    /// Extension data for this request.
    pub metadata: Option<Map<String, Value>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
/// How a client wants a sent message handled.
pub struct SendMessageConfiguration {
    #[serde(default, alias = "accepted_output_modes")]
    /// Media types the client accepts in the answer.
    pub accepted_output_modes: Vec<String>,
    #[serde(
        default,
        alias = "task_push_notification_config",
        alias = "pushNotificationConfig"
    )]
    /// A push notification config to register for the task.
    pub task_push_notification_config: Option<Value>,
    #[serde(default, alias = "history_length")]
    /// The most recent history messages to return with the task.
    pub history_length: Option<i32>,
    #[serde(default, alias = "return_immediately")]
    /// Answer at once with the task, without waiting for the turn to end.
    pub return_immediately: bool,
}

/// `GetTask`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskParams {
    #[serde(default)]
    /// The tenant, when the server hosts several.
    pub tenant: String,
    /// The task's id.
    pub id: String,
    #[serde(default, alias = "history_length")]
    /// The most recent history messages to return with the task.
    pub history_length: Option<i32>,
}

/// `CancelTask` and `SubscribeToTask`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdParams {
    #[serde(default)]
    /// The tenant, when the server hosts several.
    pub tenant: String,
    /// The task's id.
    pub id: String,
    #[serde(default)]
    /// Extension data for this request.
    pub metadata: Option<Map<String, Value>>,
}

/// `ListTasks`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksParams {
    #[serde(default)]
    /// The tenant, when the server hosts several.
    pub tenant: String,
    #[serde(default, alias = "context_id")]
    /// Only the tasks of this context (empty: any).
    pub context_id: String,
    #[serde(default)]
    /// Only the tasks in this state.
    pub status: Option<TaskState>,
    #[serde(default, alias = "page_size")]
    /// Tasks per page (1–100).
    pub page_size: Option<i32>,
    #[serde(default, alias = "page_token")]
    /// Where the page starts: a token a previous page gave.
    pub page_token: String,
    #[serde(default, alias = "history_length")]
    /// The most recent history messages to return with each task.
    pub history_length: Option<i32>,
    #[serde(default, alias = "status_timestamp_after")]
    /// Only tasks whose status changed after this time (RFC 3339).
    pub status_timestamp_after: Option<String>,
    #[serde(default, alias = "include_artifacts")]
    /// Whether each task carries its artifacts.
    pub include_artifacts: Option<bool>,
}

/// A `historyLength`: unset is no limit; negative is refused.
pub fn history_limit(value: Option<i32>) -> Result<Option<usize>, A2aError> {
    match value {
        None => Ok(None),
        Some(n) if n < 0 => Err(invalid(format!(
            "historyLength must not be negative (got {n})"
        ))),
        Some(n) => Ok(Some(n as usize)),
    }
}

impl ListTasksParams {
    /// The store query these parameters ask for.
    pub fn query(&self) -> Result<ListQuery, A2aError> {
        let page_size = match self.page_size {
            None => 50,
            Some(n) if (1..=100).contains(&n) => n as usize,
            Some(n) => return Err(invalid(format!("pageSize must be 1–100 (got {n})"))),
        };
        let updated_after_ms = match &self.status_timestamp_after {
            None => None,
            Some(text) if text.is_empty() => None,
            Some(text) => Some(parse_timestamp_ms(text).ok_or_else(|| {
                invalid(format!(
                    "statusTimestampAfter `{text}` is not an ISO 8601 timestamp"
                ))
            })?),
        };
        Ok(ListQuery {
            context_id: Some(self.context_id.clone()).filter(|c| !c.is_empty()),
            state: self.status.filter(|s| *s != TaskState::Unspecified),
            page_size,
            page_token: Some(self.page_token.clone()).filter(|t| !t.is_empty()),
            history_length: history_limit(self.history_length)?,
            updated_after_ms,
            include_artifacts: self.include_artifacts.unwrap_or(false),
            owner: None,
        })
    }
}

/// Now, as tasks carry it: `2026-11-22T10:00:00.123Z`.
pub fn now_timestamp() -> String {
    let now = OffsetDateTime::now_utc();
    let millis = now.millisecond();
    let whole = now.replace_nanosecond(0).unwrap_or(now);
    let text = whole.format(&Rfc3339).unwrap_or_default();
    // `…:00Z` → `…:00.123Z`
    match text.strip_suffix('Z') {
        Some(head) => format!("{head}.{millis:03}Z"),
        None => text,
    }
}

/// Milliseconds since the epoch of an RFC 3339 / ISO 8601 timestamp.
pub fn parse_timestamp_ms(text: &str) -> Option<i64> {
    let t = OffsetDateTime::parse(text, &Rfc3339).ok()?;
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).ok()
}

/// Filters and paging of a `ListTasks` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListQuery {
    /// Only the tasks of this context.
    pub context_id: Option<String>,
    /// Only the tasks in this state.
    pub state: Option<TaskState>,
    /// 1–100 (the protocol's bounds; larger asks are capped).
    pub page_size: usize,
    /// Where the page starts: a token a previous page gave.
    pub page_token: Option<String>,
    /// The most recent messages of each task's history to include.
    pub history_length: Option<usize>,
    /// Only tasks updated at or after this time (milliseconds since the epoch).
    pub updated_after_ms: Option<i64>,
    /// Whether each task carries its artifacts.
    pub include_artifacts: bool,
    /// Only the tasks of this owner (`Some("")`: the anonymous scope's);
    /// `None` lists every owner's, which only the host itself asks.
    pub owner: Option<String>,
}

impl Default for ListQuery {
    fn default() -> Self {
        ListQuery {
            context_id: None,
            state: None,
            page_size: 50,
            page_token: None,
            history_length: None,
            updated_after_ms: None,
            include_artifacts: false,
            owner: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn send_message_reads_either_case() {
        for params in [
            json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
                   "configuration": {"historyLength": 2, "returnImmediately": true}}),
            json!({"message": {"message_id": "m1", "role": "user", "parts": [{"text": "hi"}]},
                   "configuration": {"history_length": 2, "return_immediately": true}}),
        ] {
            let p: SendMessageParams = parse_params(params).unwrap();
            assert_eq!(p.message.message_id, "m1");
            let c = p.configuration.unwrap();
            assert_eq!(c.history_length, Some(2));
            assert!(c.return_immediately);
        }
        let err = parse_params::<SendMessageParams>(json!({"message": {"role": "ROLE_USER"}}))
            .unwrap_err();
        assert_eq!(err.kind, A2aErrorKind::InvalidParams);
        assert!(err.message.contains("messageId"), "{}", err.message);
        let err = parse_params::<GetTaskParams>(Value::Null).unwrap_err();
        assert!(
            err.message.contains("missing field `id`"),
            "{}",
            err.message
        );
    }

    #[test]
    fn list_parameters_become_a_query_or_a_named_refusal() {
        let p: ListTasksParams = parse_params(json!({
            "context_id": "c1", "status": "TASK_STATE_WORKING", "pageSize": 10,
            "pageToken": "", "historyLength": 0, "includeArtifacts": true,
            "statusTimestampAfter": "2026-11-22T10:00:00Z"
        }))
        .unwrap();
        let q = p.query().unwrap();
        assert_eq!(q.context_id.as_deref(), Some("c1"));
        assert_eq!(q.state, Some(TaskState::Working));
        assert_eq!(q.page_size, 10);
        assert_eq!(q.page_token, None, "an empty token is the first page");
        assert_eq!(q.history_length, Some(0));
        assert!(q.include_artifacts);
        assert_eq!(q.updated_after_ms, Some(1_795_341_600_000));
        for (params, needle) in [
            (json!({"pageSize": 0}), "pageSize must be 1–100 (got 0)"),
            (json!({"pageSize": 101}), "pageSize must be 1–100 (got 101)"),
            (
                json!({"historyLength": -1}),
                "historyLength must not be negative",
            ),
            (
                json!({"statusTimestampAfter": "yesterday"}),
                "`yesterday` is not an ISO 8601",
            ),
        ] {
            let p: ListTasksParams = parse_params(params).unwrap();
            let err = p.query().unwrap_err();
            assert_eq!(err.kind, A2aErrorKind::InvalidParams);
            assert!(err.message.contains(needle), "{}", err.message);
        }
        let defaults = parse_params::<ListTasksParams>(json!({}))
            .unwrap()
            .query()
            .unwrap();
        assert_eq!(defaults, ListQuery::default());
    }

    #[test]
    fn timestamps_round_trip_at_millisecond_precision() {
        let now = now_timestamp();
        assert!(now.ends_with('Z') && now.len() == 24, "{now}");
        let ms = parse_timestamp_ms(&now).unwrap();
        assert_eq!(ms % 1000, now[20..23].parse::<i64>().unwrap());
        assert_eq!(
            parse_timestamp_ms("1970-01-01T00:00:01.5+00:00"),
            Some(1500)
        );
        assert_eq!(parse_timestamp_ms("2026-13-01T00:00:00Z"), None);
    }
}
