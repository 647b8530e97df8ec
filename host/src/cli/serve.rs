//! `wharf serve`: reads the configuration, starts Wharf, says where it
//! listens and what it serves, and runs until a signal.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use wharf::app::{self, App};
use wharf::config::Config;
use wharf::reload::{ConfigSource, Overrides, ReloadHandle};

pub(crate) fn serve(
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
                let ready = app.ready();
                tracing::info!(url = %ready.url, agents = ready.agents.len(), filters = ready.filters.len(), "ready");
                println!("{ready}");
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
