//! Composition benchmarks, in process through the whole pipeline, each
//! beside a hand-written baseline in the same run:
//! - `compose_3`: `pipeline` blocks over three warm agents (sequential,
//!   parallel merged as a JSON array, fallback whose first try succeeds,
//!   conditional that takes its last branch) against the same calls
//!   written by hand (the merge and the checks included);
//! - `sequential_n`: sequences of 2, 5 and 10 steps against a hand loop;
//! - `peer_call`: an agent calling `echo` through the host, the same agent
//!   answering alone, and `echo` called from the transport;
//! - `middleware`: each layer of the request path on its own around a
//!   native service (tower's load shed and concurrency limit, a tokio
//!   timeout around the call, Wharf's breaker, a governor rate limit, the
//!   metrics a request records) against the bare service;
//! - `topic_delivery`: publish → event received, to a client's watch and
//!   through a subscribed agent that publishes it again (p50/p99 printed).
//!
//! Run with `cargo bench --bench compose`; results go in BENCHMARKS.md.

mod common;
mod inproc;

/// The allocator the `wharf` binary serves with (`host/src/cli/main.rs`),
/// so this bench measures what the binary does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::hint::black_box;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use http::{HeaderMap, Method, StatusCode};
use inproc::{pipeline, run, runtime};
use tower::util::BoxCloneSyncService as Boxed;
use tower::{Service, ServiceBuilder, ServiceExt};
use wharf::pipeline::Pipeline;
use wharf::request::{Body, Request, Response};

const STEPS: [&str; 10] = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"];

fn kdl() -> String {
    let seq = |n: usize| {
        let steps: String = STEPS[..n]
            .iter()
            .map(|s| format!("step \"{s}\"; "))
            .collect();
        format!("pipeline \"seq{n}\" {{ sequential {{ {steps}}} }}\n")
    };
    format!(
        r#"
instances {{ mode "warm"; max 4; }}
agent "caller" {{ calls "echo"; }}
agent "sink" {{
    subscribe "bench.in" {{ queue 4096; }}
    publishes "fwd.>"
    config {{ forward "fwd"; }}
}}
pipeline "par3" {{ parallel {{ step "a"; step "b"; step "c"; }} }}
pipeline "fb3" {{ fallback {{ step "a"; step "b"; step "c"; }} }}
pipeline "cond3" {{
    conditional {{
        when header="x-route" equals="a" {{ step "a"; }}
        when path-prefix="/b" {{ step "b"; }}
        otherwise {{ step "c"; }}
    }}
}}
{}{}{}{}"#,
        seq(2),
        seq(3),
        seq(5),
        seq(10)
    )
}

fn request(path: &str) -> Request {
    let mut req = Request::new(Method::POST, path);
    req.body = Bytes::from_static(b"a short message for three agents");
    req
}

type Direct =
    fn(Arc<Pipeline>, Request) -> std::pin::Pin<Box<dyn Future<Output = Response> + Send>>;

/// Times `iters` runs of a hand-written composition on a runtime worker.
fn direct(
    rt: &tokio::runtime::Runtime,
    p: &Arc<Pipeline>,
    req: &Request,
    f: Direct,
    iters: u64,
) -> Duration {
    let (p, req) = (p.clone(), req.clone());
    rt.block_on(rt.spawn(async move {
        let started = Instant::now();
        for _ in 0..iters {
            let resp = f(p.clone(), req.clone()).await;
            assert_eq!(resp.status, StatusCode::OK);
            black_box(resp);
        }
        started.elapsed()
    }))
    .unwrap()
}

/// One direct call, as the baselines make them.
async fn call(p: &Pipeline, agent: &str, mut req: Request) -> Response {
    req.id = wharf::request::next_request_id();
    let body = Body::Ready(std::mem::take(&mut req.body));
    p.handle(agent, req, body).await.unwrap()
}

async fn by_hand_sequence(p: &Pipeline, steps: &[&str], mut req: Request) -> Response {
    let mut last = None;
    for step in steps {
        let resp = call(p, step, req.clone()).await;
        req.body = resp.body.clone();
        last = Some(resp);
    }
    last.unwrap()
}

fn compose_3(c: &mut Criterion) {
    let rt = runtime();
    let (p, _dir) = setup(&rt);
    let mut g = c.benchmark_group("compose_3");
    let req = request("/");
    let cases: [(&str, &'static str, Direct); 4] = [
        ("sequential", "seq3", |p, req| {
            Box::pin(async move { by_hand_sequence(&p, &STEPS[..3], req).await })
        }),
        ("parallel", "par3", |p, req| {
            Box::pin(async move {
                let (a, b, c) = tokio::join!(
                    call(&p, "a", req.clone()),
                    call(&p, "b", req.clone()),
                    call(&p, "c", req.clone())
                );
                let items: Vec<serde_json::Value> = [a, b, c]
                    .iter()
                    .map(|r| {
                        let body = serde_json::from_slice(&r.body).unwrap_or_else(|_| {
                            serde_json::Value::from(String::from_utf8_lossy(&r.body))
                        });
                        serde_json::json!({ "status": r.status.as_u16(), "body": body })
                    })
                    .collect();
                let body = Bytes::from(serde_json::Value::Array(items).to_string());
                Response::new(StatusCode::OK, HeaderMap::new(), body)
            })
        }),
        ("fallback", "fb3", |p, req| {
            // Keeps the request for the next try, as a fallback must.
            Box::pin(async move {
                let mut last = None;
                for step in &STEPS[..3] {
                    let resp = call(&p, step, req.clone()).await;
                    if resp.status.is_success() {
                        return resp;
                    }
                    last = Some(resp);
                }
                last.unwrap()
            })
        }),
        ("conditional", "cond3", |p, req| {
            Box::pin(async move {
                let to_a = req.headers.get("x-route").is_some_and(|v| v == "a");
                let step = if to_a {
                    "a"
                } else if req.path.starts_with("/b") {
                    "b"
                } else {
                    "c"
                };
                call(&p, step, req).await
            })
        }),
    ];
    for (name, pipeline_name, by_hand) in cases {
        g.bench_function(BenchmarkId::new("pipeline", name), |b| {
            b.iter_custom(|n| run(&rt, &p, pipeline_name, &req, 200, n))
        });
        g.bench_function(BenchmarkId::new("by_hand", name), |b| {
            b.iter_custom(|n| direct(&rt, &p, &req, by_hand, n))
        });
    }
    g.finish();
}

fn sequential_n(c: &mut Criterion) {
    let rt = runtime();
    let (p, _dir) = setup(&rt);
    let mut g = c.benchmark_group("sequential_n");
    let req = request("/");
    let cases: [(usize, &'static str, Direct); 3] = [
        (2, "seq2", |p, req| {
            Box::pin(async move { by_hand_sequence(&p, &STEPS[..2], req).await })
        }),
        (5, "seq5", |p, req| {
            Box::pin(async move { by_hand_sequence(&p, &STEPS[..5], req).await })
        }),
        (10, "seq10", |p, req| {
            Box::pin(async move { by_hand_sequence(&p, &STEPS[..10], req).await })
        }),
    ];
    for (n, name, by_hand) in cases {
        g.bench_with_input(BenchmarkId::new("pipeline", n), &n, |b, _| {
            b.iter_custom(|iters| run(&rt, &p, name, &req, 200, iters))
        });
        g.bench_with_input(BenchmarkId::new("by_hand", n), &n, |b, _| {
            b.iter_custom(|iters| direct(&rt, &p, &req, by_hand, iters))
        });
    }
    g.finish();
}

fn peer_call(c: &mut Criterion) {
    let rt = runtime();
    let (p, _dir) = setup(&rt);
    let mut g = c.benchmark_group("peer_call");
    let through_host = request("/call/echo");
    let alone = request("/");
    g.bench_function("caller_to_echo_through_host", |b| {
        b.iter_custom(|n| run(&rt, &p, "caller", &through_host, 200, n))
    });
    g.bench_function("caller_alone", |b| {
        b.iter_custom(|n| run(&rt, &p, "caller", &alone, 200, n))
    });
    g.bench_function("echo_from_transport", |b| {
        b.iter_custom(|n| run(&rt, &p, "echo", &alone, 200, n))
    });
    g.finish();
}

fn middleware(c: &mut Criterion) {
    let rt = runtime();
    let mut g = c.benchmark_group("middleware");
    let answer = || Response::new(StatusCode::OK, HeaderMap::new(), Bytes::from_static(b"ok"));
    let native =
        tower::service_fn(move |_req: Request| async move { Ok::<_, tower::BoxError>(answer()) });
    let req = request("/");
    let time = |svc: Boxed<Request, Response, tower::BoxError>, iters: u64| {
        let req = req.clone();
        rt.block_on(async move {
            let mut svc = svc;
            let started = Instant::now();
            for _ in 0..iters {
                let resp = svc.ready().await.unwrap().call(req.clone()).await.unwrap();
                black_box(resp);
            }
            started.elapsed()
        })
    };
    g.bench_function("bare", |b| b.iter_custom(|n| time(Boxed::new(native), n)));
    let limit = ServiceBuilder::new()
        .load_shed()
        .concurrency_limit(64)
        .service(native);
    g.bench_function("shed_and_concurrency", |b| {
        b.iter_custom(|n| time(Boxed::new(limit.clone()), n))
    });
    let inner = native;
    let timeout = tower::service_fn(move |req: Request| {
        let mut inner = inner;
        async move {
            tokio::time::timeout(Duration::from_secs(2), inner.call(req))
                .await
                .map_err(|_| "timed out")?
        }
    });
    g.bench_function("timeout", |b| {
        b.iter_custom(|n| time(Boxed::new(timeout), n))
    });
    let breaker = Arc::new(wharf::router::CircuitBreaker::new(
        5,
        Duration::from_secs(5),
    ));
    let with_breaker = tower::service_fn(move |_req: Request| {
        let breaker = breaker.clone();
        async move {
            let admission = breaker.admit().map_err(|_| "open")?;
            let resp = answer();
            admission.finish(true);
            Ok::<_, tower::BoxError>(resp)
        }
    });
    g.bench_function("breaker", |b| {
        b.iter_custom(|n| time(Boxed::new(with_breaker.clone()), n))
    });
    let quota = governor::Quota::per_second(NonZeroU32::new(1_000_000_000).unwrap());
    let limiter = Arc::new(governor::RateLimiter::dashmap(quota));
    let with_rate = tower::service_fn(move |req: Request| {
        let limiter = limiter.clone();
        async move {
            let key = req.client.map(|c| c.ip().to_string()).unwrap_or_default();
            limiter.check_key(&key).map_err(|_| "limited")?;
            Ok::<_, tower::BoxError>(answer())
        }
    });
    g.bench_function("rate_limit", |b| {
        b.iter_custom(|n| time(Boxed::new(with_rate.clone()), n))
    });
    let metrics = Arc::new(wharf::metrics::Metrics::new().agent("bench"));
    let with_metrics = tower::service_fn(move |_req: Request| {
        let metrics = metrics.clone();
        async move {
            let started = Instant::now();
            let resp = answer();
            metrics
                .call_seconds()
                .record(started.elapsed().as_secs_f64());
            metrics.request(started.elapsed());
            metrics.answers.count(wharf::metrics::Stage::Agent, 200);
            Ok::<_, tower::BoxError>(resp)
        }
    });
    g.bench_function("metrics", |b| {
        b.iter_custom(|n| time(Boxed::new(with_metrics.clone()), n))
    });
    g.finish();
}

fn topic_delivery(c: &mut Criterion) {
    let rt = runtime();
    let (p, _dir) = setup(&rt);
    let mut g = c.benchmark_group("topic_delivery");
    let payload = Bytes::from_static(b"{\"order\":1}");
    // publish → received, one event at a time; returns every latency.
    let trip = |publish_to: &'static str, watch: &'static str, iters: u64| {
        let (p, payload) = (p.clone(), payload.clone());
        rt.block_on(rt.spawn(async move {
            let watcher = p.bus().watch(watch, 16, usize::MAX).unwrap();
            let mut took = Vec::with_capacity(iters as usize);
            for _ in 0..iters {
                let started = Instant::now();
                p.bus()
                    .publish(publish_to, payload.clone(), 0, None)
                    .unwrap();
                black_box(watcher.next().await.unwrap());
                took.push(started.elapsed());
            }
            took
        }))
        .unwrap()
    };
    for (name, publish_to, watch) in [
        ("to_watch", "bench.direct", "bench.direct"),
        ("through_agent", "bench.in", "fwd.>"),
    ] {
        let mut took = trip(publish_to, watch, 5_000);
        took.sort();
        let at = |q: f64| took[((took.len() as f64 * q) as usize).min(took.len() - 1)];
        eprintln!(
            "topic_delivery/{name}: p50 {:?} p99 {:?} over {} events",
            at(0.50),
            at(0.99),
            took.len()
        );
        g.bench_function(name, |b| {
            b.iter_custom(|n| trip(publish_to, watch, n).into_iter().sum())
        });
    }
    g.finish();
}

/// The agents and pipelines, on `rt` (where the subscription's delivery
/// task runs).
fn setup(rt: &tokio::runtime::Runtime) -> (Arc<Pipeline>, tempfile::TempDir) {
    let mut guests: Vec<(&str, &str)> = STEPS.iter().map(|s| (*s, "relay")).collect();
    guests.extend([("echo", "echo"), ("caller", "relay"), ("sink", "relay")]);
    let _guard = rt.enter();
    pipeline(&guests, &kdl())
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    targets = compose_3, sequential_n, peer_call, middleware, topic_delivery
}
criterion_main!(benches);
