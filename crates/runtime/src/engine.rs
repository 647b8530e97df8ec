//! The one wasmtime [`Engine`]: its configuration, the pooling-allocator
//! probe with on-demand fallback, and the single epoch ticker thread that
//! bounds every guest call.

use std::thread;
use std::time::Duration;

use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

/// How often the shared ticker advances the epoch: the resolution of deadlines.
pub const EPOCH_TICK: Duration = Duration::from_millis(1);

/// Which instance allocator the engine ended up with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allocation {
    /// Slots reserved up front and reused: cheapest instantiation.
    Pooling,
    /// Memory mapped per instance: used when the pool's reservation fails.
    OnDemand,
}

impl Allocation {
    /// The allocator's name in logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Allocation::Pooling => "pooling",
            Allocation::OnDemand => "on-demand",
        }
    }
}

/// Engine knobs Wharf exposes (to the CLI, benchmarks and tests).
#[derive(Debug, Clone, Copy)]
pub struct EngineSettings {
    /// Try the pooling allocator first (falls back when it cannot reserve).
    pub pooling: bool,
    /// Component-model concurrency support; off unless async guests need it.
    pub concurrency: bool,
    /// Largest linear memory any guest may have; sizes pool slots.
    pub max_memory: u64,
    /// Instances that may be live at once (pool capacity).
    pub max_instances: u32,
    /// Dirty bytes of each linear memory reset in place instead of being
    /// returned to the kernel when a pool slot is freed, at most.
    pub keep_resident: usize,
    /// What all freed slots may keep resident together: each memory slot
    /// keeps at most its share of this, so traffic that dirties every
    /// slot cannot hold more than this idle.
    pub idle_resident: usize,
    /// Reset only the pages a guest dirtied (Linux 6.7+ `PAGEMAP_SCAN`),
    /// when the kernel supports it.
    pub pagemap_scan: bool,
    /// Compile guests with wasmtime's epoch checks (at every function
    /// entry and loop header), which is what lets a deadline stop a call.
    /// Off only to measure what the checks cost (`benches/filters.rs`,
    /// `deadline_checks`): a guest call then cannot be stopped, so
    /// nothing that serves requests turns it off, and neither the CLI nor
    /// the KDL can.
    pub epoch_interruption: bool,
}

impl Default for EngineSettings {
    fn default() -> Self {
        EngineSettings {
            pooling: true,
            concurrency: false,
            max_memory: 64 << 20,
            max_instances: 1000,
            keep_resident: 1 << 20,
            idle_resident: 512 << 20,
            pagemap_scan: true,
            epoch_interruption: true,
        }
    }
}

/// Builds the engine, trying the pooling allocator first when asked.
pub(crate) fn build(settings: &EngineSettings) -> wasmtime::Result<(Engine, Allocation)> {
    build_with(settings, |_| {})
}

/// [`build`], with `more` applied to the configuration.
pub(crate) fn build_with(
    settings: &EngineSettings,
    more: impl Fn(&mut Config),
) -> wasmtime::Result<(Engine, Allocation)> {
    if settings.pooling {
        let mut config = base_config(settings);
        more(&mut config);
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool(settings)));
        match Engine::new(&config) {
            Ok(engine) => return Ok((engine, Allocation::Pooling)),
            Err(err) => tracing::warn!(
                error = %err,
                "the pooling allocator could not reserve its address space; using on-demand allocation"
            ),
        }
    }
    let mut config = base_config(settings);
    more(&mut config);
    config.allocation_strategy(InstanceAllocationStrategy::OnDemand);
    Ok((Engine::new(&config)?, Allocation::OnDemand))
}

fn base_config(settings: &EngineSettings) -> Config {
    let mut config = Config::new();
    config.wasm_component_model(true);
    config.concurrency_support(settings.concurrency);
    config.epoch_interruption(settings.epoch_interruption);
    // Traps are reported by kind; collecting a wasm backtrace on every trap
    // costs time on the error path and is only useful with debug info.
    config.wasm_backtrace_max_frames(None);
    // `WHARF_PERF_MAP=1`: guest code is named in /tmp/perf-PID.map, so
    // `perf record` on a running Wharf shows guest functions by name.
    if std::env::var_os("WHARF_PERF_MAP").is_some_and(|v| v == "1") {
        config.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    config
}

/// The most a freed table slot keeps resident.
const TABLE_KEEP: usize = 64 << 10;

/// What each freed memory and table slot may keep resident, given how many
/// there are: at most `keep_resident` per memory and [`TABLE_KEEP`] per
/// table, and in all at most `idle_resident`, seven eighths of it for
/// memories and one eighth for tables, in whole 4 KiB pages. The pool
/// keeps a slot's first dirty pages up to its share (the rest go back to
/// the kernel), so this bounds what traffic can leave resident however many
/// slots it dirties.
pub(crate) fn keep_per_slot(
    settings: &EngineSettings,
    memories: u32,
    tables: u32,
) -> (usize, usize) {
    const PAGE: usize = 4 << 10;
    let share = |budget: usize, slots: u32, most: usize| {
        (budget / (slots.max(1) as usize)).min(most) / PAGE * PAGE
    };
    let for_tables = settings.idle_resident / 8;
    (
        share(
            settings.idle_resident - for_tables,
            memories,
            settings.keep_resident,
        ),
        share(for_tables, tables, TABLE_KEEP),
    )
}

fn pool(settings: &EngineSettings) -> PoolingAllocationConfig {
    let mut pool = PoolingAllocationConfig::default();
    let instances = settings.max_instances;
    let (memories, tables) = (instances * 2, instances * 4);
    pool.total_component_instances(instances);
    // Rust and C guests have 1–2 core instances and one memory; interpreted
    // languages (componentize-py, componentize-js) have more.
    pool.total_core_instances(instances * 4);
    pool.total_memories(memories);
    // Module affinity for every slot: a freed slot stays tied to the
    // component it held, and a later instance of that component takes it
    // back with its memory image still mapped. wasmtime's default keeps
    // only 100 unused slots warm, so traffic spread over more agents than
    // that remapped an image and faulted it in on almost every request.
    // Every slot can then be left dirty; `keep_per_slot` bounds what they
    // keep in all.
    pool.max_unused_warm_slots(memories);
    pool.total_tables(tables);
    // Async calls run on fiber stacks taken from the pool.
    pool.total_stacks(instances);
    pool.max_memory_size(usize::try_from(settings.max_memory).unwrap_or(usize::MAX));
    // Keep a slot's pages resident between uses: resetting them in place is
    // cheaper than returning them to the kernel and faulting them back in.
    // With PAGEMAP_SCAN the first dirty pages up to the share are kept,
    // wherever they are; without it, the first bytes of the memory.
    let (memory_keep, table_keep) = keep_per_slot(settings, memories, tables);
    pool.linear_memory_keep_resident(memory_keep);
    pool.table_keep_resident(table_keep);
    pool.pagemap_scan(if settings.pagemap_scan {
        Enabled::Auto
    } else {
        Enabled::No
    });
    pool
}

/// The priority of compile and reload threads, on the `thread-priority`
/// crate's 0–99 scale, which it maps onto niceness 19 … -20: 22 is
/// niceness 10. Under CFS a nice-10 thread gets about a tenth of a core
/// that nice-0 request threads also want, so a reload under full load
/// still progresses, and it takes whatever CPU requests leave idle.
const COMPILE_PRIORITY: u8 = 22;

/// Runs compilation in the background: wasmtime compiles on rayon's global
/// pool, whose threads this sets to [`COMPILE_PRIORITY`], so a component
/// compiling while Wharf serves (a reload) yields to requests. Once per
/// process; the first call wins.
pub fn compile_in_background() {
    let built = rayon::ThreadPoolBuilder::new()
        .thread_name(|i| format!("wharf-compile-{i}"))
        .start_handler(|_| background_priority())
        .build_global();
    if built.is_err() {
        tracing::debug!("the compile thread pool was already built");
    }
}

/// Lowers the calling thread's scheduling priority to `COMPILE_PRIORITY`;
/// failure is logged and harmless.
pub fn background_priority() {
    use thread_priority::{ThreadPriority, ThreadPriorityValue};
    let priority = ThreadPriorityValue::try_from(COMPILE_PRIORITY)
        .map_or(ThreadPriority::Min, ThreadPriority::Crossplatform);
    if let Err(err) = thread_priority::set_current_thread_priority(priority) {
        tracing::debug!(error = ?err, "cannot lower a background thread's priority");
    }
}

/// Starts the one ticker thread for `engine`; it stops when the engine is dropped.
pub fn start_ticker(engine: &Engine) {
    let weak = engine.weak();
    let spawned = thread::Builder::new()
        .name("wharf-epoch".into())
        .spawn(move || {
            while let Some(engine) = weak.upgrade() {
                engine.increment_epoch();
                drop(engine);
                thread::sleep(EPOCH_TICK);
            }
        });
    if let Err(err) = spawned {
        // Without a ticker no deadline would ever fire: refuse to run.
        panic!("cannot start the epoch ticker thread: {err}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_demand_engine_builds() {
        let settings = EngineSettings {
            pooling: false,
            ..EngineSettings::default()
        };
        let (_, allocation) = build(&settings).unwrap();
        assert_eq!(allocation, Allocation::OnDemand);
    }

    #[test]
    fn what_freed_slots_keep_stays_within_the_idle_budget() {
        let defaults = EngineSettings::default();
        let (memories, tables) = (2000, 4000);
        let (memory, table) = keep_per_slot(&defaults, memories, tables);
        // 448 MiB over 2,000 memories (57 pages each), 64 MiB over 4,000 tables.
        assert_eq!((memory, table), (233_472, 16_384));
        let total = memory * memories as usize + table * tables as usize;
        assert!(total <= defaults.idle_resident, "{total}");
        // Few slots: each keeps its most, never more.
        let few = keep_per_slot(&defaults, 128, 256);
        assert_eq!(few, (1 << 20, TABLE_KEEP));
        // No budget: nothing kept (every freed page goes back to the kernel).
        let none = EngineSettings {
            idle_resident: 0,
            ..defaults
        };
        assert_eq!(keep_per_slot(&none, memories, tables), (0, 0));
    }
}
