//! Push notification configs: the protocol's `TaskPushNotificationConfig`
//! (a webhook for one task's updates) and the parameters of the four
//! methods that create, read, list and delete them, read tolerantly like
//! every other method's parameters.

use serde::{Deserialize, Serialize};

/// How the host authenticates to a webhook: the `Authorization` header is
/// `{scheme} {credentials}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticationInfo {
    /// The authentication scheme (`Bearer`, …).
    pub scheme: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    /// The credentials to send with it.
    pub credentials: String,
}

/// A webhook that receives one task's updates.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfig {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    /// The tenant, when the server hosts several.
    pub tenant: String,
    /// Assigned by the host when the client leaves it empty.
    #[serde(default)]
    pub id: String,
    #[serde(default, alias = "task_id")]
    /// The task it notifies about.
    pub task_id: String,
    /// The webhook's URL.
    pub url: String,
    /// Sent back as `X-A2A-Notification-Token`, so the receiver can tell
    /// the notification is for what it asked.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// How to authenticate to the webhook.
    pub authentication: Option<AuthenticationInfo>,
}

/// `GetTaskPushNotificationConfig` and `DeleteTaskPushNotificationConfig`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushConfigParams {
    #[serde(default)]
    /// The tenant, when the server hosts several.
    pub tenant: String,
    #[serde(alias = "task_id")]
    /// The task.
    pub task_id: String,
    /// The config's id.
    pub id: String,
}

/// `ListTaskPushNotificationConfigs`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListPushConfigsParams {
    #[serde(default)]
    /// The tenant, when the server hosts several.
    pub tenant: String,
    #[serde(alias = "task_id")]
    /// The task.
    pub task_id: String,
    #[serde(default, alias = "page_size")]
    /// Configs per page.
    pub page_size: Option<i32>,
    #[serde(default, alias = "page_token")]
    /// Where the page starts: a token a previous page gave.
    pub page_token: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn configs_read_either_case_and_write_camel_case() {
        let config: TaskPushNotificationConfig = serde_json::from_value(json!({
            "task_id": "t1", "url": "http://127.0.0.1:9/hook", "token": "tok",
            "authentication": {"scheme": "Bearer", "credentials": "secret"},
            "unknown": 1
        }))
        .unwrap();
        assert_eq!(config.task_id, "t1");
        assert_eq!(config.authentication.as_ref().unwrap().scheme, "Bearer");
        let out = serde_json::to_value(&config).unwrap();
        assert_eq!(out["taskId"], "t1");
        assert!(out.get("tenant").is_none());
        let err = serde_json::from_value::<TaskPushNotificationConfig>(json!({"taskId": "t"}));
        assert!(err.unwrap_err().to_string().contains("url"));
    }
}
