//! A2A errors in every binding's form: the JSON-RPC 2.0 error object (with
//! a `google.rpc.ErrorInfo` in `data` for A2A-specific errors) and the
//! HTTP+JSON status body, per the v1.0 specification's mapping table
//! (section 5.4) and error sections (9.5, 11.6).

use serde_json::{Map, Value, json};

/// The domain every A2A `ErrorInfo` names.
pub const ERROR_DOMAIN: &str = "a2a-protocol.org";

/// An error a server answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum A2aErrorKind {
    // JSON-RPC 2.0's own.
    /// The request is not valid JSON.
    JsonParse,
    /// The request is not a valid JSON-RPC request.
    InvalidRequest,
    /// No such method.
    MethodNotFound,
    /// The method's parameters are not valid.
    InvalidParams,
    /// The server failed.
    Internal,
    // A2A-specific (-32001 … -32009).
    /// No such task (or not the caller's).
    TaskNotFound,
    /// The task cannot be canceled in its state.
    TaskNotCancelable,
    /// The agent does not send push notifications.
    PushNotificationNotSupported,
    /// The operation is not supported.
    UnsupportedOperation,
    /// A media type the agent does not handle.
    ContentTypeNotSupported,
    /// The agent answered something the protocol does not allow.
    InvalidAgentResponse,
    /// No extended agent card is configured.
    ExtendedAgentCardNotConfigured,
    /// The request needs an extension the client did not declare.
    ExtensionSupportRequired,
    /// An A2A version the server does not speak.
    VersionNotSupported,
}

impl A2aErrorKind {
    /// Every kind, in the specification's order.
    pub const ALL: [A2aErrorKind; 14] = [
        A2aErrorKind::JsonParse,
        A2aErrorKind::InvalidRequest,
        A2aErrorKind::MethodNotFound,
        A2aErrorKind::InvalidParams,
        A2aErrorKind::Internal,
        A2aErrorKind::TaskNotFound,
        A2aErrorKind::TaskNotCancelable,
        A2aErrorKind::PushNotificationNotSupported,
        A2aErrorKind::UnsupportedOperation,
        A2aErrorKind::ContentTypeNotSupported,
        A2aErrorKind::InvalidAgentResponse,
        A2aErrorKind::ExtendedAgentCardNotConfigured,
        A2aErrorKind::ExtensionSupportRequired,
        A2aErrorKind::VersionNotSupported,
    ];

    /// (JSON-RPC code, HTTP status, gRPC status, `ErrorInfo` reason, standard message).
    fn row(self) -> (i64, u16, &'static str, &'static str, &'static str) {
        use A2aErrorKind::*;
        match self {
            JsonParse => (-32700, 400, "INVALID_ARGUMENT", "", "Invalid JSON payload"),
            InvalidRequest => (
                -32600,
                400,
                "INVALID_ARGUMENT",
                "",
                "Request payload validation error",
            ),
            MethodNotFound => (-32601, 404, "UNIMPLEMENTED", "", "Method not found"),
            InvalidParams => (-32602, 400, "INVALID_ARGUMENT", "", "Invalid parameters"),
            Internal => (-32603, 500, "INTERNAL", "", "Internal error"),
            TaskNotFound => (-32001, 404, "NOT_FOUND", "TASK_NOT_FOUND", "Task not found"),
            TaskNotCancelable => (
                -32002,
                409,
                "FAILED_PRECONDITION",
                "TASK_NOT_CANCELABLE",
                "Task cannot be canceled",
            ),
            PushNotificationNotSupported => (
                -32003,
                400,
                "UNIMPLEMENTED",
                "PUSH_NOTIFICATION_NOT_SUPPORTED",
                "Push notifications are not supported",
            ),
            UnsupportedOperation => (
                -32004,
                400,
                "UNIMPLEMENTED",
                "UNSUPPORTED_OPERATION",
                "This operation is not supported",
            ),
            ContentTypeNotSupported => (
                -32005,
                415,
                "INVALID_ARGUMENT",
                "CONTENT_TYPE_NOT_SUPPORTED",
                "Incompatible content types",
            ),
            InvalidAgentResponse => (
                -32006,
                502,
                "INTERNAL",
                "INVALID_AGENT_RESPONSE",
                "Invalid agent response",
            ),
            ExtendedAgentCardNotConfigured => (
                -32007,
                400,
                "FAILED_PRECONDITION",
                "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
                "Extended agent card is not configured",
            ),
            ExtensionSupportRequired => (
                -32008,
                400,
                "FAILED_PRECONDITION",
                "EXTENSION_SUPPORT_REQUIRED",
                "A required extension is not supported by the client",
            ),
            VersionNotSupported => (
                -32009,
                400,
                "UNIMPLEMENTED",
                "VERSION_NOT_SUPPORTED",
                "This protocol version is not supported",
            ),
        }
    }

    /// The JSON-RPC error code (A2A section 5.4).
    pub fn jsonrpc_code(self) -> i64 {
        self.row().0
    }

    /// The HTTP status of the HTTP+JSON binding.
    pub fn http_status(self) -> u16 {
        self.row().1
    }

    /// The gRPC status name, which the HTTP+JSON body carries as `status`.
    pub fn grpc_status(self) -> &'static str {
        self.row().2
    }

    /// The `ErrorInfo` reason (`TASK_NOT_FOUND`); `None` for JSON-RPC's
    /// own errors, which carry no `ErrorInfo`.
    pub fn reason(self) -> Option<&'static str> {
        Some(self.row().3).filter(|r| !r.is_empty())
    }

    /// The message the specification gives the error.
    pub fn standard_message(self) -> &'static str {
        self.row().4
    }
}

/// An error with its message and context.
#[derive(Debug, Clone, PartialEq)]
pub struct A2aError {
    /// Which error.
    pub kind: A2aErrorKind,
    /// What happened, for the client.
    pub message: String,
    /// `ErrorInfo.metadata` (A2A errors) or `data` (JSON-RPC's own).
    pub metadata: Map<String, Value>,
}

impl A2aError {
    /// The error with its standard message.
    pub fn new(kind: A2aErrorKind) -> A2aError {
        A2aError {
            kind,
            message: kind.standard_message().to_string(),
            metadata: Map::new(),
        }
    }

    /// This error with `message` instead of the standard one.
    pub fn message(mut self, message: impl Into<String>) -> A2aError {
        self.message = message.into();
        self
    }

    /// Adds context (`taskId`, `method`, …).
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> A2aError {
        self.metadata.insert(key.to_string(), value.into());
        self
    }

    /// The `ErrorInfo` list; `rest` adds one for JSON-RPC's own errors too,
    /// as the HTTP+JSON binding has no codes of its own to tell them apart
    /// (reasons as the official SDKs read them).
    fn details(&self, rest: bool) -> Option<Value> {
        let generic = || match self.kind {
            A2aErrorKind::JsonParse => Some("JSON_PARSE"),
            A2aErrorKind::InvalidRequest => Some("INVALID_REQUEST"),
            A2aErrorKind::MethodNotFound => Some("METHOD_NOT_FOUND"),
            A2aErrorKind::InvalidParams => Some("INVALID_PARAMS"),
            A2aErrorKind::Internal => Some("INTERNAL_ERROR"),
            _ => None,
        };
        let reason = self
            .kind
            .reason()
            .or_else(|| rest.then(generic).flatten())?;
        let mut info = json!({
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": reason,
            "domain": ERROR_DOMAIN,
        });
        if !self.metadata.is_empty() {
            info["metadata"] = Value::Object(self.metadata.clone());
        }
        Some(json!([info]))
    }

    /// The JSON-RPC 2.0 error response for request `id` (`null` when the
    /// request's id could not be read).
    pub fn to_jsonrpc(&self, id: Value) -> Value {
        let mut error = json!({ "code": self.kind.jsonrpc_code(), "message": self.message });
        match self.details(false) {
            Some(details) => error["data"] = details,
            None if !self.metadata.is_empty() => {
                error["data"] = Value::Object(self.metadata.clone());
            }
            None => {}
        }
        json!({ "jsonrpc": "2.0", "id": id, "error": error })
    }

    /// The HTTP+JSON binding's status code and body.
    pub fn to_rest(&self) -> (u16, Value) {
        let status = self.kind.http_status();
        let mut error = json!({
            "code": status,
            "status": self.kind.grpc_status(),
            "message": self.message,
        });
        if let Some(details) = self.details(true) {
            error["details"] = details;
        }
        (status, json!({ "error": error }))
    }
}

impl std::fmt::Display for A2aError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for A2aError {}

#[cfg(test)]
mod tests {
    use super::*;

    /// The JSON-RPC example of section 9.5, field for field.
    #[test]
    fn task_not_found_matches_the_specification_example() {
        let err = A2aError::new(A2aErrorKind::TaskNotFound)
            .with("taskId", "nonexistent-task-id")
            .with("timestamp", "2025-11-09T10:30:00.000Z");
        let expected = json!({
            "jsonrpc": "2.0",
            "id": 2,
            "error": {
                "code": -32001,
                "message": "Task not found",
                "data": [{
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "TASK_NOT_FOUND",
                    "domain": "a2a-protocol.org",
                    "metadata": {
                        "taskId": "nonexistent-task-id",
                        "timestamp": "2025-11-09T10:30:00.000Z"
                    }
                }]
            }
        });
        assert_eq!(err.to_jsonrpc(json!(2)), expected);
        let (status, body) = err
            .message("The specified task ID does not exist or is not accessible")
            .to_rest();
        assert_eq!(status, 404);
        assert_eq!(body["error"]["status"], "NOT_FOUND");
        assert_eq!(body["error"]["code"], 404);
        assert_eq!(body["error"]["details"][0]["reason"], "TASK_NOT_FOUND");
    }

    /// Every row of the mapping table (section 5.4).
    #[test]
    fn every_error_has_its_code_status_and_reason() {
        let table = [
            (A2aErrorKind::TaskNotFound, -32001, 404, "NOT_FOUND"),
            (
                A2aErrorKind::TaskNotCancelable,
                -32002,
                409,
                "FAILED_PRECONDITION",
            ),
            (
                A2aErrorKind::PushNotificationNotSupported,
                -32003,
                400,
                "UNIMPLEMENTED",
            ),
            (
                A2aErrorKind::UnsupportedOperation,
                -32004,
                400,
                "UNIMPLEMENTED",
            ),
            (
                A2aErrorKind::ContentTypeNotSupported,
                -32005,
                415,
                "INVALID_ARGUMENT",
            ),
            (A2aErrorKind::InvalidAgentResponse, -32006, 502, "INTERNAL"),
            (
                A2aErrorKind::ExtendedAgentCardNotConfigured,
                -32007,
                400,
                "FAILED_PRECONDITION",
            ),
            (
                A2aErrorKind::ExtensionSupportRequired,
                -32008,
                400,
                "FAILED_PRECONDITION",
            ),
            (
                A2aErrorKind::VersionNotSupported,
                -32009,
                400,
                "UNIMPLEMENTED",
            ),
        ];
        for (kind, code, http, grpc) in table {
            assert_eq!(kind.jsonrpc_code(), code, "{kind:?}");
            assert_eq!(kind.http_status(), http, "{kind:?}");
            assert_eq!(kind.grpc_status(), grpc, "{kind:?}");
            let reason = kind.reason().unwrap();
            let name = format!("{kind:?}");
            let snake: String = name
                .chars()
                .enumerate()
                .flat_map(|(i, c)| {
                    let sep = (i > 0 && c.is_ascii_uppercase()).then_some('_');
                    sep.into_iter()
                        .chain(std::iter::once(c.to_ascii_uppercase()))
                })
                .collect();
            assert_eq!(reason, snake, "reason is the type name without `Error`");
        }
        let codes: std::collections::HashSet<i64> =
            A2aErrorKind::ALL.iter().map(|k| k.jsonrpc_code()).collect();
        assert_eq!(codes.len(), A2aErrorKind::ALL.len(), "codes are distinct");
    }

    #[test]
    fn json_rpc_errors_carry_context_as_data_and_no_error_info() {
        let err = A2aError::new(A2aErrorKind::MethodNotFound).with("method", "invalid/method");
        assert_eq!(
            err.to_jsonrpc(Value::Null),
            json!({
                "jsonrpc": "2.0",
                "id": null,
                "error": {"code": -32601, "message": "Method not found", "data": {"method": "invalid/method"}}
            })
        );
        let bare = A2aError::new(A2aErrorKind::JsonParse).to_jsonrpc(Value::Null);
        assert!(bare["error"].get("data").is_none());
        // Over HTTP+JSON the same errors name their kind in an ErrorInfo.
        let (status, body) = err.to_rest();
        assert_eq!(status, 404);
        assert_eq!(body["error"]["details"][0]["reason"], "METHOD_NOT_FOUND");
        assert_eq!(
            body["error"]["details"][0]["metadata"]["method"],
            "invalid/method"
        );
        let (_, body) = A2aError::new(A2aErrorKind::InvalidParams).to_rest();
        assert_eq!(body["error"]["details"][0]["reason"], "INVALID_PARAMS");
    }
}
