//! Runs a wasip2 command component (seclang's `repeat` example built for
//! wasm32-wasip2, `scripts/bench/waf-guest-engine.sh`) compiled as Wharf
//! compiles guests (Cranelift's defaults, epoch checks on), to time a
//! guest's own work without a host call around it. `/` is preopened
//! read-only, so the command reads files by their host paths.
//!
//! `wasm-repeat FILE.wasm [ARGS...]` (env `WR_EPOCH=0` turns epoch checks off)

use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Config, Engine, Store};
use wasmtime_wasi::p2::bindings::sync::Command;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxView, WasiView};

struct State {
    ctx: WasiCtx,
    table: ResourceTable,
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.ctx,
            table: &mut self.table,
        }
    }
}

fn main() -> wasmtime::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(file) = args.first() else {
        eprintln!("usage: wasm-repeat FILE.wasm [ARGS...]");
        std::process::exit(2);
    };
    let epoch = std::env::var("WR_EPOCH").as_deref() != Ok("0");
    let mut config = Config::new();
    config.wasm_component_model(true);
    config.epoch_interruption(epoch);
    if std::env::var_os("WHARF_PERF_MAP").is_some() {
        config.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    let engine = Engine::new(&config)?;
    let mut linker = Linker::<State>::new(&engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
    let component = Component::from_file(&engine, file)?;
    let mut builder = WasiCtx::builder();
    builder.inherit_stdio().args(&args);
    builder.preopened_dir("/", "/", FsPerms::ReadOnly)?;
    let mut store = Store::new(
        &engine,
        State {
            ctx: builder.build(),
            table: ResourceTable::new(),
        },
    );
    store.set_epoch_deadline(u64::MAX / 2);
    let command = Command::instantiate(&mut store, &component, &linker)?;
    let started = std::time::Instant::now();
    let result = command.wasi_cli_run().call_run(&mut store)?;
    eprintln!("run: {:?}", started.elapsed());
    if result.is_err() {
        std::process::exit(1);
    }
    Ok(())
}
