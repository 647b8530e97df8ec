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
    /// Bytes of each linear memory reset with `memset` instead of being
    /// returned to the kernel when a pool slot is freed.
    pub keep_resident: usize,
    /// Reset only the pages a guest dirtied (Linux 6.7+ `PAGEMAP_SCAN`),
    /// when the kernel supports it.
    pub pagemap_scan: bool,
}

impl Default for EngineSettings {
    fn default() -> Self {
        EngineSettings {
            pooling: true,
            concurrency: false,
            max_memory: 64 << 20,
            max_instances: 1000,
            keep_resident: 1 << 20,
            pagemap_scan: true,
        }
    }
}

/// Builds the engine, trying the pooling allocator first when asked.
pub(crate) fn build(settings: &EngineSettings) -> wasmtime::Result<(Engine, Allocation)> {
    if settings.pooling {
        let mut config = base_config(settings);
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
    config.allocation_strategy(InstanceAllocationStrategy::OnDemand);
    Ok((Engine::new(&config)?, Allocation::OnDemand))
}

fn base_config(settings: &EngineSettings) -> Config {
    let mut config = Config::new();
    config.wasm_component_model(true);
    config.concurrency_support(settings.concurrency);
    config.epoch_interruption(true);
    // Traps are reported by kind; collecting a wasm backtrace on every trap
    // costs time on the error path and is only useful with debug info.
    config.wasm_backtrace_max_frames(None);
    config
}

fn pool(settings: &EngineSettings) -> PoolingAllocationConfig {
    let mut pool = PoolingAllocationConfig::default();
    let instances = settings.max_instances;
    pool.total_component_instances(instances);
    // Rust and C guests have 1–2 core instances and one memory; interpreted
    // languages (componentize-py, componentize-js) have more.
    pool.total_core_instances(instances * 4);
    pool.total_memories(instances * 2);
    // Module affinity for every slot: a freed slot stays tied to the
    // component it held, and a later instance of that component takes it
    // back with its memory image still mapped. wasmtime's default keeps
    // only 100 unused slots warm, so traffic spread over more agents than
    // that remapped an image and faulted it in on almost every request.
    pool.max_unused_warm_slots(instances * 2);
    pool.total_tables(instances * 4);
    // Async calls run on fiber stacks taken from the pool.
    pool.total_stacks(instances);
    pool.max_memory_size(usize::try_from(settings.max_memory).unwrap_or(usize::MAX));
    // Keep the first pages of a slot resident between uses: zeroing them is
    // cheaper than returning them to the kernel and faulting them back in,
    // and with PAGEMAP_SCAN only the pages a guest dirtied are zeroed.
    pool.linear_memory_keep_resident(settings.keep_resident);
    pool.table_keep_resident(settings.keep_resident.min(64 << 10));
    pool.pagemap_scan(if settings.pagemap_scan {
        Enabled::Auto
    } else {
        Enabled::No
    });
    pool
}

/// Starts the one ticker thread for `engine`; it stops when the engine is dropped.
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
}
