//! The runtime without a transport: epoch deadlines, memory limits and
//! traps classified at the call itself, and instances isolated per request.

use std::sync::Arc;
use std::time::Duration;

use http::Method;
use wharf::config::Limits;
use wharf::registry::AgentEntry;
use wharf::request::Request;
use wharf::runtime::{CallError, Runtime};

use crate::common::*;

fn load(names: &[&str], limits: Limits) -> (Runtime, Vec<Arc<AgentEntry>>) {
    let dir = agents_dir(names);
    let mut cfg = config(dir.path(), "");
    cfg.defaults.limits = limits;
    let runtime = Runtime::new(&test_engine()).unwrap();
    let snapshot = wharf::registry::load_dir(&runtime, &cfg, dir.path()).unwrap();
    assert!(snapshot.refused.is_empty(), "{:?}", snapshot.refused);
    let agents = names
        .iter()
        .map(|n| snapshot.agent(n).unwrap().clone())
        .collect();
    (runtime, agents)
}

fn short_limits() -> Limits {
    Limits {
        deadline: Duration::from_millis(200),
        memory: 48 << 20,
        ..Limits::default()
    }
}

#[test]
fn the_epoch_deadline_itself_stops_an_infinite_loop() {
    // No transport and no pipeline backstop here: only the epoch ticker.
    let (_rt, agents) = load(&["spin"], short_limits());
    let err = agents[0]
        .image
        .handle_fresh(&Request::new(Method::GET, "/"))
        .unwrap_err();
    assert_eq!(err, CallError::Deadline);
}

#[test]
fn faults_are_classified_at_the_call() {
    // A long deadline: only the fault itself may end these calls, however
    // loaded the machine is.
    let limits = Limits {
        deadline: Duration::from_secs(30),
        ..short_limits()
    };
    let (_rt, agents) = load(&["trap", "membomb", "stackbomb", "bigoutput"], limits);
    let req = Request::new(Method::POST, "/");
    let errs: Vec<CallError> = agents
        .iter()
        .map(|a| a.image.handle_fresh(&req).unwrap_err())
        .collect();
    assert!(
        matches!(&errs[0], CallError::Trap(m) if m.contains("unreachable")),
        "{:?}",
        errs[0]
    );
    assert_eq!(errs[1], CallError::MemoryLimit);
    assert_eq!(errs[2], CallError::Trap("stack overflow".into()));
    assert!(
        matches!(&errs[3], CallError::InvalidResponse(m) if m.contains("exceeds")),
        "{:?}",
        errs[3]
    );
}

#[test]
fn a_live_instance_is_dropped_after_a_trap_and_a_fresh_one_works() {
    let (_rt, agents) = load(&["echo", "trap"], short_limits());
    let mut trapped = agents[1].image.instantiate().unwrap();
    assert!(trapped.handle(&Request::new(Method::GET, "/")).is_err());
    // Entering a trapped store again is refused, not undefined.
    assert!(trapped.health().is_err());
    let mut req = Request::new(Method::POST, "/");
    req.body = "fresh".into();
    assert_eq!(agents[0].image.handle_fresh(&req).unwrap().body, "fresh");
}

/// A fresh instance starts from the component's image however the
/// instance before it in the same pool slot scattered its writes: `scatter`
/// dirties 128 disjoint regions a call, more than one pass of wasmtime's
/// dirty-page scan reports (third_party/wasmtime resumes the scan).
#[test]
fn a_fresh_instance_never_sees_what_the_one_before_it_wrote() {
    let (_rt, agents) = load(&["scatter"], Limits::default());
    let req = Request::new(Method::POST, "/");
    // The fixture sees writes where they are kept: a live instance's second call.
    let mut live = agents[0].image.instantiate().unwrap();
    assert_eq!(live.handle(&req).unwrap().body, "0");
    assert_eq!(live.handle(&req).unwrap().body, "128");
    // Its slot, written all over, goes back to the pool for the next ones.
    drop(live);
    for i in 0..20 {
        let answer = agents[0].image.handle_fresh(&req).unwrap();
        assert_eq!(
            answer.body, "0",
            "fresh call {i}: pages an earlier instance wrote"
        );
    }
}

#[test]
fn describe_and_health_answer() {
    let (_rt, agents) = load(&["echo"], Limits::default());
    let mut live = agents[0].image.instantiate().unwrap();
    assert_eq!(live.describe().unwrap().name, "echo");
    assert!(matches!(live.health().unwrap(), wharf::runtime::Health::Ok));
    // A live instance serves several calls, each re-armed with the deadline.
    for i in 0..3 {
        let mut req = Request::new(Method::POST, "/");
        req.body = format!("call {i}").into();
        assert_eq!(live.handle(&req).unwrap().body, format!("call {i}"));
    }
}
