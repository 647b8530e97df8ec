//! HTTP error responses: one JSON shape, statuses chosen here, and no
//! internals (trap details, guest error text marked internal) leaked.

use axum::Json;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::json;

use std::time::Duration;

use http::HeaderValue;

use wharf_cluster::ForwardError;
use wharf_core::request::BodyError;
use wharf_core::streams::StreamRefusal;
use wharf_filters::{FailureKind, FilterFailure};
use wharf_pipeline::PipelineError;
use wharf_pipeline::topics::BusError;
use wharf_pipeline::topics::read::ReadError;
use wharf_routing::RouteError;
use wharf_runtime::CallError;

/// An error answer: `{"error": {"code": …, "message": …}}`, with a
/// `Retry-After` header when the client should come back later.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The status.
    pub status: StatusCode,
    /// The code clients branch on (`agent_not_found`, …).
    pub code: &'static str,
    /// What happened, in words.
    pub message: String,
    /// When to come back (`Retry-After`).
    pub retry_after: Option<Duration>,
}

impl ApiError {
    /// An error answer with `status`, `code` and `message`.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            retry_after: None,
        }
    }

    /// Adds `Retry-After`, in whole seconds rounded up (at least 1).
    pub fn retry_after(mut self, wait: Duration) -> Self {
        self.retry_after = Some(wait);
        self
    }

    /// `404 agent_not_found` for `name`.
    pub fn agent_not_found(name: &str) -> Self {
        let shown: String = name.chars().take(64).collect();
        ApiError::new(
            StatusCode::NOT_FOUND,
            "agent_not_found",
            format!("no agent named `{shown}`"),
        )
    }

    /// `413 body_too_large` at `limit` bytes.
    pub fn body_too_large(limit: usize) -> Self {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            format!("the request body exceeds this agent's limit of {limit} bytes"),
        )
    }
}

/// The code and message a client is told for each error; the status is
/// the error's own (`PipelineError::status`, the one status table), so a
/// transport, the metrics and the audit log never disagree.
impl From<&PipelineError> for ApiError {
    fn from(err: &PipelineError) -> Self {
        let status = StatusCode::from_u16(err.status()).unwrap_or(StatusCode::BAD_GATEWAY);
        let said = |code: &'static str, message: String| ApiError::new(status, code, message);
        match err {
            PipelineError::AgentNotFound(name) => ApiError::agent_not_found(name),
            PipelineError::AgentRefused(..) => said("agent_refused", err.to_string()),
            PipelineError::Topic(BusError::History(why)) => said("topic_history", why.to_string()),
            PipelineError::Topic(BusError::Cluster(why)) => said("topic_cluster", why.to_string()),
            PipelineError::Topic(why) => said("bad_topic", why.to_string()),
            PipelineError::TopicRead(ReadError::NotKept(_)) => said("not_kept", err.to_string()),
            PipelineError::TopicRead(ReadError::History(why)) => {
                said("topic_history", why.to_string())
            }
            PipelineError::TopicRead(why) => said("bad_query", why.to_string()),
            PipelineError::Composition(_, why) => said("pipeline_failed", why.clone()),
            PipelineError::Forward(forward) => {
                let code = match forward {
                    ForwardError::NoResponders(_) => "no_node",
                    ForwardError::TimedOut(_) => "node_timeout",
                    ForwardError::Failed(_) => "forward_failed",
                };
                said(code, forward.to_string())
            }
            PipelineError::Streams(refusal) => {
                let code = match refusal {
                    StreamRefusal::Client(_) => "too_many_streams",
                    StreamRefusal::Host(_) => "streams_full",
                };
                said(code, refusal.to_string()).retry_after(Duration::from_secs(1))
            }
            PipelineError::Body(BodyError::TooLarge(limit)) => ApiError::body_too_large(*limit),
            PipelineError::Body(BodyError::Unreadable) => said(
                "body_unreadable",
                "the request body could not be read".into(),
            ),
            PipelineError::Route(route) => ApiError::from(route),
            PipelineError::Filter(FilterFailure::BodyTooLarge {
                filter,
                limit,
                what,
            }) => {
                let code = match *what {
                    "request" => "body_too_large",
                    _ => "response_too_large",
                };
                said(
                    code,
                    format!("the {what} body exceeds filter `{filter}`'s limit of {limit} bytes"),
                )
            }
            PipelineError::Filter(FilterFailure::Failed { filter, kind, .. }) => {
                if *kind == FailureKind::Deadline {
                    said(
                        "filter_deadline",
                        format!("filter `{filter}` did not answer within its deadline"),
                    )
                } else {
                    said("filter_failed", format!("filter `{filter}` failed"))
                }
            }
        }
    }
}

impl From<&RouteError> for ApiError {
    fn from(err: &RouteError) -> Self {
        let status = StatusCode::from_u16(wharf_routing::error_status(err))
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let said = |code: &'static str, message: &str| ApiError::new(status, code, message);
        let call = match err {
            RouteError::Worker(_) => return said("internal", "internal error"),
            RouteError::Overloaded => {
                return said("overloaded", "the agent is busy; try again shortly")
                    .retry_after(Duration::from_secs(1));
            }
            RouteError::BreakerOpen { retry_after } => {
                return said(
                    "breaker_open",
                    "the agent is failing and temporarily switched off",
                )
                .retry_after(*retry_after);
            }
            RouteError::RateLimited { retry_after } => {
                return said("rate_limited", "too many requests; slow down")
                    .retry_after(*retry_after);
            }
            RouteError::Call(call) => call,
        };
        match call {
            CallError::Deadline => said(
                "deadline_exceeded",
                "the agent did not answer within its deadline",
            ),
            CallError::MemoryLimit => said("memory_limit", "the agent exceeded its memory limit"),
            CallError::Trap(_) | CallError::Instantiate(_) => {
                said("agent_failed", "the agent failed")
            }
            CallError::InvalidResponse(_) | CallError::InvalidVerdict(_) => {
                said("invalid_response", "the agent returned an invalid response")
            }
            CallError::Internal(_) => said("agent_error", "the agent reported an internal error"),
            CallError::BadRequest(m) => said("bad_request", m),
            CallError::BodyTooLarge(limit) => ApiError::body_too_large(*limit),
            CallError::Canceled => said("canceled", "the call was canceled"),
            CallError::NotFound(m) => said("not_found", m),
            CallError::Unavailable(m) => said("unavailable", m),
        }
    }
}

impl ApiError {
    /// `Retry-After` in whole seconds, rounded up (at least 1).
    pub fn retry_secs(&self) -> Option<u64> {
        self.retry_after
            .map(|wait| wait.as_millis().div_ceil(1000).max(1) as u64)
    }
}

/// What every transport sends for the pipeline's result: the response, or
/// the error as an [`ApiError`], logged (server errors as warnings) without
/// leaking internals to the client.
pub(super) fn outcome(
    result: Result<wharf_core::request::Response, PipelineError>,
) -> Result<wharf_core::request::Response, ApiError> {
    result.map_err(|err| {
        let api = ApiError::from(&err);
        if api.status.is_server_error() {
            tracing::warn!(status = api.status.as_u16(), error = %err, "request failed");
        } else {
            tracing::debug!(status = api.status.as_u16(), error = %err, "request refused");
        }
        api
    })
}

impl ApiError {
    /// The JSON body every error answer carries.
    pub fn body(&self) -> serde_json::Value {
        json!({ "error": { "code": self.code, "message": self.message } })
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(self.body())).into_response();
        if let Some(secs) = self.retry_secs() {
            response
                .headers_mut()
                .insert(http::header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internals_are_not_shown() {
        let err = RouteError::Call(CallError::Trap("wasm backtrace: secret".into()));
        let api = ApiError::from(&err);
        assert_eq!(api.status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(!api.message.contains("secret"));
        let err = RouteError::Call(CallError::Internal("db password".into()));
        assert!(!ApiError::from(&err).message.contains("password"));
    }

    #[test]
    fn pipeline_errors_agree_with_their_statuses() {
        let cases = [
            PipelineError::AgentNotFound("x".into()),
            PipelineError::Body(BodyError::TooLarge(5)),
            PipelineError::Body(BodyError::Unreadable),
            PipelineError::Route(RouteError::Overloaded),
            PipelineError::Filter(FilterFailure::BodyTooLarge {
                filter: "f".into(),
                limit: 1,
                what: "request",
            }),
            PipelineError::Filter(FilterFailure::BodyTooLarge {
                filter: "f".into(),
                limit: 1,
                what: "response",
            }),
            PipelineError::Filter(FilterFailure::Failed {
                filter: "f".into(),
                phase: "request_headers",
                kind: FailureKind::Deadline,
            }),
            PipelineError::Filter(FilterFailure::Failed {
                filter: "f".into(),
                phase: "request_headers",
                kind: FailureKind::Trap,
            }),
            PipelineError::Topic(wharf_pipeline::topics::BusError::Topic(
                wharf_pipeline::topics::check_topic("a.*").unwrap_err(),
            )),
            PipelineError::Composition(504, "slow".into()),
        ];
        let statuses: Vec<u16> = cases
            .iter()
            .map(|e| ApiError::from(e).status.as_u16())
            .collect();
        assert_eq!(statuses, [404, 413, 400, 503, 413, 502, 504, 503, 400, 504]);
        for err in &cases {
            assert_eq!(ApiError::from(err).status.as_u16(), err.status());
        }
    }

    #[test]
    fn guest_errors_map_to_statuses() {
        let cases = [
            (CallError::Deadline, 504),
            (CallError::MemoryLimit, 500),
            (CallError::InvalidResponse("x".into()), 502),
            (CallError::BadRequest("x".into()), 400),
            (CallError::BodyTooLarge(1), 413),
            (CallError::NotFound("x".into()), 404),
            (CallError::Unavailable("x".into()), 503),
        ];
        for (call, status) in cases {
            let err = RouteError::Call(call);
            assert_eq!(ApiError::from(&err).status.as_u16(), status);
            assert_eq!(
                wharf_routing::error_status(&err),
                status,
                "router and transport agree"
            );
        }
    }

    #[test]
    fn shed_answers_carry_retry_after() {
        let err = RouteError::RateLimited {
            retry_after: Duration::from_millis(1500),
        };
        let response = ApiError::from(&err).into_response();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(response.headers()[http::header::RETRY_AFTER], "2");
        let err = RouteError::BreakerOpen {
            retry_after: Duration::from_millis(10),
        };
        let response = ApiError::from(&err).into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers()[http::header::RETRY_AFTER], "1");
    }
}
