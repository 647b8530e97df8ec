//! Every metric family Wharf exports: its name, kind, labels and the
//! `# HELP` text. The single list `/metrics`, `docs/metrics.md` and the
//! catalog test read; a family registered but missing here fails the test.

/// The kind of a metric family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Only goes up.
    Counter,
    /// Goes up and down.
    Gauge,
    /// Samples in buckets.
    Histogram,
}

/// One metric family.
#[derive(Debug, Clone, Copy)]
pub struct Family {
    /// Its name.
    pub name: &'static str,
    /// Counter, gauge or histogram.
    pub kind: Kind,
    /// Its labels, in the order they are rendered.
    pub labels: &'static [&'static str],
    /// The `# HELP` text.
    pub help: &'static str,
}

const fn family(
    name: &'static str,
    kind: Kind,
    labels: &'static [&'static str],
    help: &'static str,
) -> Family {
    Family {
        name,
        kind,
        labels,
        help,
    }
}

use Kind::{Counter as C, Gauge as G, Histogram as H};

/// Every family, grouped by the part of Wharf that records it.
pub const FAMILIES: &[Family] = &[
    // The host.
    family(
        "wharf_build_info",
        G,
        &["version", "commit"],
        "Always 1; labels say which build is running.",
    ),
    family(
        "wharf_connections_open",
        G,
        &["listener"],
        "Client connections open now, per listener kind (http, binary).",
    ),
    family(
        "wharf_connections_evicted_total",
        C,
        &["listener"],
        "Idle connections, or busy ones whose every answer waits on the client, closed to make room at the connection limit.",
    ),
    family(
        "wharf_connections_stalled_total",
        C,
        &["listener"],
        "Connections closed because an answer waited on the client for write-timeout without progress.",
    ),
    family(
        "wharf_streams_open",
        G,
        &[],
        "Long-lived answers (server-sent events, streamed bodies) open now, within the host's stream budget.",
    ),
    family(
        "wharf_agents_pending",
        G,
        &[],
        "Agents and pipelines not loaded yet while a start loads them as it serves (server load while-serving); 0 once every one is loaded or refused.",
    ),
    family(
        "wharf_pool_idle_resident_bytes",
        G,
        &[],
        "Bytes that freed instance slots keep resident for their next instance (at most server idle-memory), sampled at each scrape.",
    ),
    family(
        "wharf_requests_total",
        C,
        &["agent", "stage", "status"],
        "Every answer given, by the stage that gave it (transport, filter, router, agent); agent is empty when no agent or pipeline of the requested name is served.",
    ),
    family(
        "wharf_reloads_total",
        C,
        &["trigger", "outcome"],
        "Reloads, by what started them (files, config) and whether they were applied or rejected.",
    ),
    family(
        "wharf_reload_refusals_total",
        C,
        &[],
        "Components refused during reloads (they failed to compile or verify; the previous version keeps serving).",
    ),
    family(
        "wharf_reload_duration_seconds",
        H,
        &[],
        "Time to load and publish one reload.",
    ),
    // Agents and filters: a filter's instances have the same families as
    // an agent's, labelled `filter` where an agent's are labelled `agent`.
    family(
        "wharf_request_duration_seconds",
        H,
        &["agent|filter"],
        "Requests to an agent's route, from admission to the answer.",
    ),
    family(
        "wharf_guest_call_duration_seconds",
        H,
        &["agent|filter"],
        "Guest calls alone.",
    ),
    family(
        "wharf_instantiate_duration_seconds",
        H,
        &["agent|filter"],
        "Making a fresh instance.",
    ),
    family(
        "wharf_traps_total",
        C,
        &["agent|filter"],
        "Guest calls that trapped.",
    ),
    family(
        "wharf_deadline_exceeded_total",
        C,
        &["agent|filter"],
        "Guest calls cut off at their deadline.",
    ),
    family(
        "wharf_memory_limit_total",
        C,
        &["agent|filter"],
        "Guest calls that hit their memory limit.",
    ),
    family(
        "wharf_retries_total",
        C,
        &["agent|filter"],
        "Calls retried on another instance.",
    ),
    family(
        "wharf_instances",
        G,
        &["agent|filter", "state"],
        "Warm instances, live and idle.",
    ),
    family(
        "wharf_instances_retired_total",
        C,
        &["agent|filter", "reason"],
        "Instances retired: uses, trap, memory, unhealthy, abandoned, idle (their agent unloaded).",
    ),
    family(
        "wharf_instances_ahead_total",
        C,
        &["agent|filter", "outcome"],
        "Fresh requests that found an instance made ahead (hit) or not (miss).",
    ),
    family(
        "wharf_instance_memory_max_bytes",
        G,
        &["agent|filter"],
        "The most linear memory a warm instance held after a call since the route was built.",
    ),
    family(
        "wharf_requests_shed_total",
        C,
        &["agent|filter", "reason"],
        "Requests turned away before reaching the guest: concurrency, queue, breaker, rate_limit.",
    ),
    family(
        "wharf_affinity_total",
        C,
        &["agent|filter", "outcome"],
        "Session lookups: hit, miss, repin.",
    ),
    family(
        "wharf_affinity_evictions_total",
        C,
        &["agent|filter"],
        "Session pins dropped to stay within the bound.",
    ),
    family(
        "wharf_breaker_state",
        G,
        &["agent|filter"],
        "Circuit breaker: 0 closed (serving), 1 open (refusing), 2 half-open (probing).",
    ),
    family(
        "wharf_agent_healthy",
        G,
        &["agent|filter"],
        "1 while the agent passes its health checks, else 0.",
    ),
    family(
        "wharf_health_probes_total",
        C,
        &[],
        "Health probes of all agents; an agent asked nothing since its last probe is probed at its idle-interval.",
    ),
    family(
        "wharf_agent_unloads_total",
        C,
        &[],
        "Agents whose code was unloaded after `instances { unload-after }` asked nothing.",
    ),
    family(
        "wharf_agent_reloads_total",
        C,
        &[],
        "Unloaded agents loaded again by their next instance.",
    ),
    family(
        "wharf_outbound_requests_total",
        C,
        &["agent", "outcome"],
        "A component's outbound HTTP requests: allowed, denied (by the allow-list), failed.",
    ),
    // Filters.
    family(
        "wharf_filter_calls_total",
        C,
        &["filter", "phase"],
        "Filter calls, per phase.",
    ),
    family(
        "wharf_filter_decisions_total",
        C,
        &["filter", "phase", "decision", "enforced"],
        "Filter decisions, and whether they were enforced (detect mode only records them).",
    ),
    family(
        "wharf_filter_duration_seconds",
        H,
        &["filter"],
        "Time in a filter's calls.",
    ),
    family(
        "wharf_filter_failures_total",
        C,
        &["filter", "kind"],
        "Filter calls that failed: trap, deadline, memory, invalid_verdict, unavailable.",
    ),
    family(
        "wharf_filter_skipped_total",
        C,
        &["filter", "reason"],
        "Requests a filter let through unexamined: failed_open, body_past_limit.",
    ),
    family(
        "wharf_filter_remembered_total",
        C,
        &["filter"],
        "Request-headers verdicts given again without a call (the filter asked to have them remembered).",
    ),
    family(
        "wharf_filter_rule_hits_total",
        C,
        &["filter", "rule"],
        "Rules a filter reported as matched (the first 1000 ids, then _other).",
    ),
    // Calls between agents and topics.
    family(
        "wharf_agent_calls_total",
        C,
        &["caller", "callee", "outcome"],
        "Calls between agents: ok, failed, refused.",
    ),
    family(
        "wharf_agent_call_duration_seconds",
        H,
        &["caller", "callee"],
        "Time of calls between agents.",
    ),
    family(
        "wharf_topic_events_total",
        C,
        &["subscriber", "outcome"],
        "Topic events per subscriber: queued, dropped, delivered, failed (each try), dead_lettered (an at-least-once event not taken after its last try).",
    ),
    family(
        "wharf_topic_delivery_seconds",
        H,
        &["subscriber"],
        "Time from publish to delivery.",
    ),
    family(
        "wharf_topic_hops_refused_total",
        C,
        &["publisher"],
        "Events an agent published past `topics { max-hops }` republishes in a row, refused.",
    ),
    family(
        "wharf_topic_kept_total",
        C,
        &["outcome"],
        "Messages of kept topics: queued for the history's writer, or refused (its backlog full, or closing).",
    ),
    // A2A push notifications.
    family(
        "wharf_a2a_push_total",
        C,
        &["outcome"],
        "Push notifications to webhooks: delivered, failed (after its retries), dropped (queue full).",
    ),
    family(
        "wharf_a2a_push_retries_total",
        C,
        &[],
        "Push deliveries tried again.",
    ),
    // The binary transport.
    family(
        "wharf_binary_answers_total",
        C,
        &[],
        "Frames answered on the binary transport.",
    ),
    family(
        "wharf_binary_faults_total",
        C,
        &["code"],
        "Binary-transport faults: bad_frame, frame_too_large, frame_timeout, truncated_frame, read_failed.",
    ),
    family(
        "wharf_binary_connections",
        G,
        &[],
        "Binary-transport connections open now.",
    ),
    // The cluster.
    family(
        "wharf_cluster_forwarded_total",
        C,
        &["agent", "to", "outcome"],
        "Requests sent to other nodes: ok, no_responders, timed_out, failed.",
    ),
    family(
        "wharf_cluster_forward_seconds",
        H,
        &["to"],
        "Time for another node's answer.",
    ),
    family(
        "wharf_cluster_answered_total",
        C,
        &[],
        "Requests this node answered for other nodes.",
    ),
    family(
        "wharf_cluster_pin_reads_total",
        C,
        &[],
        "Session lookups that read the pins bucket.",
    ),
    family(
        "wharf_cluster_pins_total",
        C,
        &["outcome"],
        "Session lookups: created, here, elsewhere, repinned, unavailable.",
    ),
    family(
        "wharf_cluster_nodes",
        G,
        &["state"],
        "Nodes heard from, serving and draining.",
    ),
    family(
        "wharf_cluster_connected",
        G,
        &[],
        "1 while connected to NATS.",
    ),
    family(
        "wharf_cluster_task_calls_total",
        C,
        &["op", "outcome"],
        "Calls to the node running an A2A task's turn.",
    ),
    family(
        "wharf_cluster_orphaned_tasks_total",
        C,
        &[],
        "Tasks marked failed because the node running their turn went away.",
    ),
];

/// The family called `name`.
pub fn find(name: &str) -> Option<&'static Family> {
    FAMILIES.iter().find(|f| f.name == name)
}
