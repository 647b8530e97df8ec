//! Running a `pipeline` block: sequential steps feed each answer's body to
//! the next, parallel branches get the same request at once and their
//! answers are merged, fallback tries in order until one succeeds, and
//! conditional picks a branch by header, path, method or a classifier
//! agent's answer. Each step is an ordinary request through
//! [`Pipeline::handle`].

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use http::{HeaderValue, StatusCode};

use crate::{BoxFuture, Pipeline, PipelineError};
use wharf_config::{Composition, Condition, FailOn, Flow, Merge};
use wharf_core::request::{Body, Request, Response};

type Answer = Result<Response, PipelineError>;

/// Runs the flow of `composition` for `req`.
pub fn run(
    pipeline: &Pipeline,
    composition: Arc<Composition>,
    req: Request,
) -> BoxFuture<'_, Answer> {
    Box::pin(async move { flow(pipeline, &composition.name, &composition.flow, req).await })
}

fn flow<'a>(p: &'a Pipeline, name: &'a str, node: &'a Flow, req: Request) -> BoxFuture<'a, Answer> {
    Box::pin(async move {
        match node {
            Flow::Step(step) => call(p, &step.name, req).await,
            Flow::Sequential(steps) => sequential(p, name, steps, req).await,
            Flow::Parallel {
                branches,
                merge,
                deadline,
            } => {
                let runs = branches.iter().map(|b| {
                    let mut req = req.clone();
                    if let Some(d) = deadline {
                        let until = Instant::now() + *d;
                        req.hop.deadline = Some(req.hop.deadline.map_or(until, |o| o.min(until)));
                    }
                    let run = flow(p, name, b, req);
                    async move {
                        match deadline {
                            None => run.await,
                            Some(d) => tokio::time::timeout(*d, run).await.unwrap_or_else(|_| {
                                Err(PipelineError::Composition(
                                    504,
                                    format!("a branch did not answer within {d:?}"),
                                ))
                            }),
                        }
                    }
                });
                match merge {
                    Merge::JsonArray => Ok(json_array(futures_util::future::join_all(runs).await)),
                    Merge::First => first(name, runs.collect()).await,
                }
            }
            Flow::Fallback { tries, on } => {
                let mut last = None;
                // The last try takes the request; the others a copy.
                let mut req = Some(req);
                for (i, t) in tries.iter().enumerate() {
                    let this = if i + 1 == tries.len() {
                        req.take()
                    } else {
                        req.clone()
                    };
                    let this = this.expect("the request is taken by the last try only");
                    let answer = flow(p, name, t, this).await;
                    let failed = match &answer {
                        Err(_) => true,
                        Ok(resp) => match on {
                            FailOn::Error => !resp.status.is_success(),
                            FailOn::ServerError => resp.status.is_server_error(),
                        },
                    };
                    if !failed {
                        return answer;
                    }
                    last = Some(answer);
                }
                last.expect("a fallback has at least two tries")
            }
            Flow::Conditional { cases, otherwise } => {
                let mut classified: Vec<(&str, String)> = Vec::new();
                for (condition, branch) in cases {
                    if holds(p, condition, &req, &mut classified).await? {
                        return flow(p, name, branch, req).await;
                    }
                }
                match otherwise {
                    Some(branch) => flow(p, name, branch, req).await,
                    None => Err(PipelineError::Composition(
                        404,
                        format!("no branch of pipeline `{name}` applies to this request"),
                    )),
                }
            }
        }
    })
}

/// One step: the request to the agent or pipeline `step`, its answer whole.
async fn call(p: &Pipeline, step: &str, mut req: Request) -> Answer {
    let body = Body::Ready(std::mem::take(&mut req.body));
    let resp = p.handle(step, req, body).await?;
    resp.gathered()
        .await
        .map_err(|e| PipelineError::Composition(502, format!("step `{step}`: {e}")))
}

/// Each answer's body is the next request's body (with its content type);
/// an answer that is not 2xx ends the sequence and is its answer.
async fn sequential(p: &Pipeline, name: &str, steps: &[Flow], mut req: Request) -> Answer {
    let mut last: Option<Response> = None;
    for step in steps {
        if let Some(prev) = last.take() {
            req.body = prev.body;
            match prev.headers.get(http::header::CONTENT_TYPE) {
                Some(ct) => req.headers.insert(http::header::CONTENT_TYPE, ct.clone()),
                None => req.headers.remove(http::header::CONTENT_TYPE),
            };
        }
        let resp = flow(p, name, step, req.clone()).await?;
        if !resp.status.is_success() {
            return Ok(resp);
        }
        last = Some(resp);
    }
    Ok(last.expect("a sequence has at least one step"))
}

/// The first branch to answer 2xx; the others are dropped (canceled).
async fn first(name: &str, runs: Vec<impl Future<Output = Answer>>) -> Answer {
    let mut pending: FuturesUnordered<_> = runs.into_iter().collect();
    let mut failures = Vec::new();
    while let Some(answer) = pending.next().await {
        match answer {
            Ok(resp) if resp.status.is_success() => return Ok(resp),
            Ok(resp) => failures.push(resp.status.as_u16().to_string()),
            Err(err) => failures.push(format!("{} ({})", err.status(), err.public())),
        }
    }
    Err(PipelineError::Composition(
        502,
        format!(
            "no branch of pipeline `{name}` succeeded: {}",
            failures.join(", ")
        ),
    ))
}

/// The branches' answers as a JSON array, in order: `{"status", "body"}`
/// (the body as JSON when it parses, else as a string), or `{"status",
/// "error"}` for a branch that failed.
fn json_array(answers: Vec<Answer>) -> Response {
    let items: Vec<serde_json::Value> = answers
        .into_iter()
        .map(|answer| match answer {
            Ok(resp) => {
                let body = serde_json::from_slice(&resp.body).unwrap_or_else(|_| {
                    serde_json::Value::from(String::from_utf8_lossy(&resp.body))
                });
                serde_json::json!({ "status": resp.status.as_u16(), "body": body })
            }
            Err(err) => serde_json::json!({ "status": err.status(), "error": err.public() }),
        })
        .collect();
    let mut headers = http::HeaderMap::new();
    headers.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    let body = Bytes::from(serde_json::Value::Array(items).to_string());
    Response::new(StatusCode::OK, headers, body)
}

/// Whether `condition` holds for `req`; a classifier is asked once per
/// request however many cases name it.
async fn holds<'a>(
    p: &Pipeline,
    condition: &'a Condition,
    req: &Request,
    classified: &mut Vec<(&'a str, String)>,
) -> Result<bool, PipelineError> {
    Ok(match condition {
        Condition::Header { name, equals } => match (req.headers.get(name), equals) {
            (Some(value), Some(want)) => value.as_bytes() == want.as_bytes(),
            (Some(_), None) => true,
            (None, _) => false,
        },
        Condition::PathPrefix(prefix) => req.path.starts_with(prefix.as_str()),
        Condition::Method(method) => req.method == *method,
        Condition::Classifier { agent, equals } => {
            let name = agent.name.as_str();
            let answer = match classified.iter().find(|(n, _)| *n == name) {
                Some((_, answer)) => answer.clone(),
                None => {
                    let resp = call(p, name, req.clone()).await?;
                    if !resp.status.is_success() {
                        return Err(PipelineError::Composition(
                            502,
                            format!("the classifier `{name}` answered {}", resp.status),
                        ));
                    }
                    let answer = String::from_utf8_lossy(&resp.body).trim().to_string();
                    classified.push((name, answer.clone()));
                    answer
                }
            };
            answer == *equals
        }
    })
}
