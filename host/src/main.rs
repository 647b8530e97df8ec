//! The `wharf` command line: parses arguments, sets up logging, and runs
//! `serve`, `check`, `inspect`, the key and signature commands and the
//! guest toolchain. No logic of its own.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;
use wharf::app::{self, App};
use wharf::config::Config;
use wharf::reload::{ConfigSource, Overrides, ReloadHandle};
use wharf::toolchain::{self, BindingsLang, Lang};

#[derive(Parser)]
#[command(
    name = "wharf",
    version,
    about = "A WebAssembly component host for agents and inspection filters"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
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
    /// Validate a configuration file and print every problem in it.
    Check {
        /// The configuration file.
        file: PathBuf,
    },
    /// Show what a .wasm file is and whether Wharf can serve it.
    Inspect {
        /// The component file.
        file: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
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
        /// The world to bind: `agent` or `filter`.
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
        /// The world the module implements: `agent` or `filter`.
        #[arg(long, default_value = "agent")]
        world: String,
        /// Where to write the component.
        #[arg(long, short)]
        out: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        // Colours only on a terminal: logs piped to files stay plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    match cli.command {
        Command::Serve {
            config,
            agents,
            listen,
            unix,
        } => serve(config, agents, listen, unix),
        Command::Check { file } => check(&file),
        Command::Inspect { file, json } => inspect(&file, json),
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

fn serve(
    config: Option<PathBuf>,
    agents: Option<PathBuf>,
    listen: Option<SocketAddr>,
    unix: Option<PathBuf>,
) -> ExitCode {
    let default_file = Path::new("wharf.kdl");
    let file = match config {
        Some(path) => Some(path),
        None if default_file.is_file() => Some(default_file.to_path_buf()),
        None => {
            tracing::info!("no wharf.kdl here: using the embedded default configuration");
            None
        }
    };
    let loaded = match &file {
        Some(path) => Config::load(path),
        None => Ok(Config::embedded()),
    };
    let mut config = match loaded {
        Ok(config) => config,
        Err(err) => {
            eprintln!("{}", err.fancy());
            return ExitCode::FAILURE;
        }
    };
    let overrides = Overrides {
        agents_dir: agents,
        listen,
        unix,
    };
    overrides.apply(&mut config);
    raise_fd_limit();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("error: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async {
        let engine = app::engine_settings(&config);
        match App::start(config, engine).await {
            Ok(mut app) => {
                if let Some(path) = file {
                    app.reload_config_from(ConfigSource { path, overrides });
                }
                reload_on_hangup(app.reload_handle());
                app.serve(app::shutdown_signal()).await;
                ExitCode::SUCCESS
            }
            Err(err) => {
                eprintln!("error: {err}");
                ExitCode::FAILURE
            }
        }
    })
}

/// SIGHUP reloads the configuration file (and rescans the agents).
fn reload_on_hangup(handle: ReloadHandle) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::hangup()) {
            Ok(mut hangups) => {
                tokio::spawn(async move {
                    while hangups.recv().await.is_some() {
                        tracing::info!("SIGHUP: reloading the configuration");
                        handle.config();
                    }
                });
            }
            Err(err) => {
                tracing::warn!(error = %err, "SIGHUP does not reload: cannot listen for it")
            }
        }
    }
    #[cfg(not(unix))]
    let _ = handle;
}

fn sign(file: &Path, key: &Path, out: Option<&Path>) -> ExitCode {
    let out = out.unwrap_or(file);
    match wharf::trust::sign(file, key, out) {
        Ok(id) => {
            println!("{}: signed by {id}", out.display());
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn verify(file: &Path, keys: &[PathBuf]) -> ExitCode {
    let trusted: Result<Vec<_>, String> = keys
        .iter()
        .map(|k| wharf::trust::TrustedKey::read(k).map_err(|e| format!("`{}`: {e}", k.display())))
        .collect();
    let result = trusted.and_then(|trusted| {
        let bytes = std::fs::read(file).map_err(|e| format!("cannot read it: {e}"))?;
        wharf::trust::verify(&bytes, &trusted).map_err(|e| e.to_string())
    });
    match result {
        Ok(id) => {
            println!("{}: good signature by {id}", file.display());
            ExitCode::SUCCESS
        }
        Err(reason) => {
            eprintln!("error: `{}`: {reason}", file.display());
            ExitCode::FAILURE
        }
    }
}

fn check(file: &Path) -> ExitCode {
    match Config::load(file) {
        Ok(config) => {
            println!(
                "{}: ok (listen {}, agents {}, {} agent block(s))",
                file.display(),
                config.listen,
                config.agents_dir.display(),
                config.agents.len()
            );
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("{}", err.fancy());
            ExitCode::FAILURE
        }
    }
}

fn inspect(file: &Path, json: bool) -> ExitCode {
    match wharf::inspect::inspect(file) {
        Ok(report) => {
            if json {
                match serde_json::to_string_pretty(&report) {
                    Ok(text) => println!("{text}"),
                    Err(err) => {
                        eprintln!("error: {err}");
                        return ExitCode::FAILURE;
                    }
                }
            } else {
                print!("{}", report.human());
            }
            if report.world.is_some() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(reason) => {
            eprintln!("error: `{}`: {reason}", file.display());
            ExitCode::FAILURE
        }
    }
}

/// Prints the files a toolchain command wrote, or its error.
fn report(result: anyhow::Result<Vec<PathBuf>>) -> ExitCode {
    match result {
        Ok(paths) => {
            for path in paths {
                println!("{}", path.display());
            }
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn componentize(module: &Path, world: &str, out: &Path) -> anyhow::Result<()> {
    use anyhow::Context;
    let bytes =
        std::fs::read(module).with_context(|| format!("cannot read {}", module.display()))?;
    let component = toolchain::componentize(&bytes, world)
        .with_context(|| format!("cannot componentize {}", module.display()))?;
    std::fs::write(out, component).with_context(|| format!("cannot write {}", out.display()))
}

fn new_project(parent: &Path, name: &str, lang: Lang) -> ExitCode {
    match toolchain::scaffold::create(parent, name, lang) {
        Ok(dir) => {
            println!("created {} ({lang})", dir.display());
            println!("next: cd {} && ./build.sh && wharf serve", dir.display());
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// Lets Wharf hold as many connections as the system allows: the soft
/// limit on open files is raised to the hard one (often 1,024 against
/// hundreds of thousands), as a server that counts its own connections
/// should.
fn raise_fd_limit() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE)
        && soft < hard
        && let Err(err) = setrlimit(Resource::RLIMIT_NOFILE, hard, hard)
    {
        tracing::warn!(soft, hard, error = %err, "cannot raise the open-file limit");
    }
}
