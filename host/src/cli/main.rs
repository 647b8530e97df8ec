//! The `wharf` command line: parses arguments, sets up logging, and runs
//! `serve`, `check`, `inspect`, the key and signature commands, the guest
//! toolchain and shell completions. No logic of its own.

mod commands;
mod serve;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use tracing_subscriber::EnvFilter;
use wharf::toolchain::{self, BindingsLang, Lang};

use commands::*;

/// mimalloc serves the host's heap: a request allocates and frees many
/// small buffers across the runtime's worker threads, and glibc's
/// allocator spent a tenth of the CPU of one client's A2A sends in
/// `malloc`, `free` and their consolidation (BENCHMARKS.md, "the host's
/// heap on mimalloc").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `wharf --version`: the version, the commit and the day it was built.
const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("WHARF_COMMIT"),
    ", built ",
    env!("WHARF_BUILD_DATE"),
    ")"
);

const LOGGING: &str = "\
Logging:
  Logs go to stderr. RUST_LOG chooses what is logged, as a level or per
  module: RUST_LOG=debug, RUST_LOG=wharf=debug,wharf_runtime=trace (default:
  info). --log-format json writes one JSON object per line for log shippers.

Configuration: KDL v2 (`#true`, `#false`); docs/configuration.md.";

#[derive(Parser)]
#[command(
    name = "wharf",
    version = LONG_VERSION,
    about = "A WebAssembly component host for agents and inspection filters",
    after_help = LOGGING
)]
struct Cli {
    /// How logs are written: `text` for people, `json` for log shippers.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the agents in a directory over HTTP.
    Serve {
        /// Configuration file (default: ./wharf.kdl if present, else the embedded default).
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// Agents directory, overriding the configuration.
        #[arg(long)]
        agents: Option<PathBuf>,
        /// Listen address, overriding the configuration.
        #[arg(long)]
        listen: Option<SocketAddr>,
        /// Also serve the binary transport on this Unix socket
        /// (docs/binary.md), overriding the configuration's `unix`.
        #[arg(long)]
        unix: Option<PathBuf>,
    },
    /// Validate a configuration file against its agents directory and
    /// print every problem in it.
    Check {
        /// The configuration file.
        #[arg(default_value = "wharf.kdl")]
        file: PathBuf,
    },
    /// Show what a .wasm file is, whether Wharf can serve it, and whether
    /// (and by which key) it is signed.
    Inspect {
        /// The component file.
        file: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// A public key (NAME.pub) to check the signature against; repeat for several.
        #[arg(long = "key", short)]
        keys: Vec<PathBuf>,
    },
    /// Write a new Ed25519 key pair: NAME.key (secret) and NAME.pub.
    Keygen {
        /// Path and stem of the key files.
        name: PathBuf,
    },
    /// Sign a component (in place, or into --out) with a secret key.
    Sign {
        /// The component file.
        file: PathBuf,
        /// The secret key (`wharf keygen` wrote it as NAME.key).
        #[arg(long, short)]
        key: PathBuf,
        /// Where to write the signed component (default: replace FILE).
        #[arg(long, short)]
        out: Option<PathBuf>,
    },
    /// Check a component's signature against one or more public keys.
    Verify {
        /// The component file.
        file: PathBuf,
        /// A trusted public key (NAME.pub); repeat for several.
        #[arg(long = "key", short, required = true)]
        keys: Vec<PathBuf>,
    },
    /// Create a guest project that builds (./build.sh) and serves (wharf serve).
    New {
        /// The agent's name; also the project directory's.
        name: String,
        /// The guest language.
        #[arg(long, short)]
        lang: Lang,
        /// Where to create the project directory.
        #[arg(long, default_value = ".")]
        dir: PathBuf,
    },
    /// Write Wharf's WIT (the guest contract) into a directory.
    Wit {
        /// The directory to write `wharf.wit` into.
        dir: PathBuf,
    },
    /// Generate guest bindings for C or Go from Wharf's WIT.
    Bindgen {
        /// The guest language.
        #[arg(long)]
        lang: BindingsLang,
        /// The world to bind: `agent`, `a2a-agent`, `filter`, `filter-preinit`,
        /// `filter-effects` or `filter-streaming`.
        #[arg(long, default_value = "agent")]
        world: String,
        /// The directory to write the bindings into.
        #[arg(long, short)]
        out: PathBuf,
    },
    /// Turn a core module (wasm32-wasip1, reactor) into a component Wharf can serve.
    Componentize {
        /// The core module.
        module: PathBuf,
        /// The world the module implements: `agent`, `a2a-agent`, `filter`,
        /// `filter-preinit`, `filter-effects` or `filter-streaming`.
        #[arg(long, default_value = "agent")]
        world: String,
        /// Where to write the component.
        #[arg(long, short)]
        out: PathBuf,
    },
    /// Print a shell completion script (e.g. `wharf completions bash >
    /// ~/.local/share/bash-completion/completions/wharf`).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match cli.log_format {
        LogFormat::Json => logs.json().flatten_event(true).init(),
        // Colours only on a terminal: logs piped to files stay plain text.
        LogFormat::Text => logs
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
    }
    match cli.command {
        Command::Serve {
            config,
            agents,
            listen,
            unix,
        } => serve::serve(config, agents, listen, unix),
        Command::Check { file } => check(&file),
        Command::Inspect { file, json, keys } => inspect(&file, json, &keys),
        Command::Completions { shell } => {
            let mut command = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut command, "wharf", &mut std::io::stdout());
            ExitCode::SUCCESS
        }
        Command::Keygen { name } => report(
            wharf::trust::keygen(&name)
                .map(|(secret, public)| vec![secret, public])
                .map_err(Into::into),
        ),
        Command::Sign { file, key, out } => sign(&file, &key, out.as_deref()),
        Command::Verify { file, keys } => verify(&file, &keys),
        Command::New { name, lang, dir } => new_project(&dir, &name, lang),
        Command::Wit { dir } => report(toolchain::write_wit(&dir).map(|path| vec![path])),
        Command::Bindgen { lang, world, out } => report(toolchain::bindgen(lang, &world, &out)),
        Command::Componentize { module, world, out } => {
            report(componentize(&module, &world, &out).map(|()| vec![out.clone()]))
        }
    }
}
