//! `wharf-load`: the command-line face of the load drivers, for
//! `scripts/` (reliability suite, transport benchmarks). Prints one JSON
//! object per result.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use wharf_load::binary::Addr;
use wharf_load::flood::{self, Flood};
use wharf_load::load::{self, Plan, Target};

#[derive(Parser)]
#[command(about = "Load, stress, flood and soak drivers for Wharf")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Steady load on one target (HTTP with --http, else binary).
    Load {
        #[command(flatten)]
        target: TargetArgs,
        #[arg(long, default_value_t = 50)]
        connections: usize,
        #[arg(long, default_value_t = 1)]
        depth: usize,
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        #[arg(long, default_value_t = 1024)]
        body: usize,
    },
    /// Connection floods against an HTTP listener while good clients work.
    Flood {
        #[arg(long)]
        http: SocketAddr,
        #[arg(long, default_value = "/agents/echo")]
        path: String,
        #[arg(long, default_value_t = 2000)]
        stalled: usize,
        #[arg(long, default_value_t = 2000)]
        idle: usize,
        #[arg(long, default_value_t = 200)]
        churn: usize,
        #[arg(long, default_value_t = 8)]
        good: usize,
        #[arg(long, default_value_t = 20)]
        seconds: u64,
    },
    /// Mixed traffic for a long time, sampling the server's RSS.
    Soak {
        /// The server's process id, for RSS.
        #[arg(long)]
        pid: u32,
        #[arg(long)]
        http: SocketAddr,
        #[arg(long)]
        unix: PathBuf,
        #[arg(long, default_value_t = 600)]
        seconds: u64,
        #[arg(long, default_value_t = 10)]
        sample: u64,
    },
}

#[derive(clap::Args)]
struct TargetArgs {
    /// An HTTP listener: POSTs to /agents/AGENT.
    #[arg(long)]
    http: Option<SocketAddr>,
    /// A binary listener's Unix socket.
    #[arg(long)]
    unix: Option<PathBuf>,
    /// A binary listener on TCP.
    #[arg(long)]
    tcp: Option<SocketAddr>,
    #[arg(long, default_value = "echo")]
    agent: String,
}

impl TargetArgs {
    fn target(&self) -> Target {
        match (&self.http, &self.unix, &self.tcp) {
            (Some(addr), _, _) => Target::Http {
                addr: *addr,
                path: format!("/agents/{}", self.agent),
            },
            (_, Some(path), _) => Target::Binary {
                addr: Addr::Unix(path.clone()),
                agent: self.agent.clone(),
            },
            (_, _, Some(addr)) => Target::Binary {
                addr: Addr::Tcp(*addr),
                agent: self.agent.clone(),
            },
            _ => {
                eprintln!("name a target: --http, --unix or --tcp");
                std::process::exit(2);
            }
        }
    }
}

fn plan(target: Target, connections: usize, depth: usize, seconds: u64, expect: &[u16]) -> Plan {
    Plan {
        target,
        connections,
        depth,
        duration: Duration::from_secs(seconds),
        body: 1024,
        expect: expect.to_vec(),
        sessions: false,
    }
}

#[tokio::main]
async fn main() {
    match Cli::parse().command {
        Command::Load {
            target,
            connections,
            depth,
            seconds,
            body,
        } => {
            let mut plan = plan(target.target(), connections, depth, seconds, &[200]);
            plan.body = body;
            println!("{}", load::run(plan).await.json());
        }
        Command::Flood {
            http,
            path,
            stalled,
            idle,
            churn,
            good,
            seconds,
        } => {
            let outcome = flood::run(Flood {
                addr: http,
                stalled,
                idle,
                churn_per_sec: churn,
                good,
                path,
                duration: Duration::from_secs(seconds),
            })
            .await;
            println!("{}", outcome.json());
        }
        Command::Soak {
            pid,
            http,
            unix,
            seconds,
            sample,
        } => soak(pid, http, unix, seconds, sample).await,
    }
}

/// Mixed traffic: fresh and warm agents over HTTP and the binary transport,
/// with fault fixtures (a trap: 500; a loop cut off at its deadline: 504;
/// either, once its breaker opens: 503) mixed in; their statuses are
/// expected, anything else is an error.
async fn soak(pid: u32, http: SocketAddr, unix: PathBuf, seconds: u64, sample: u64) {
    let bin = |agent: &str| Target::Binary {
        addr: Addr::Unix(unix.clone()),
        agent: agent.into(),
    };
    let web = |agent: &str| Target::Http {
        addr: http,
        path: format!("/agents/{agent}"),
    };
    let mut warm_http = plan(web("counter"), 4, 1, seconds, &[200]);
    warm_http.sessions = true;
    let mut warm_bin = plan(bin("counter"), 4, 4, seconds, &[200]);
    warm_bin.sessions = true;
    let plans = vec![
        ("http fresh echo", plan(web("echo"), 8, 1, seconds, &[200])),
        ("http warm counter", warm_http),
        ("http trap", plan(web("trap"), 1, 1, seconds, &[500, 503])),
        (
            "binary fresh echo",
            plan(bin("echo"), 4, 8, seconds, &[200]),
        ),
        ("binary warm counter", warm_bin),
        ("binary spin", plan(bin("spin"), 1, 2, seconds, &[504, 503])),
    ];
    let started = Instant::now();
    let runs: Vec<_> = plans
        .into_iter()
        .map(|(name, p)| (name, tokio::spawn(load::run(p))))
        .collect();
    let mut tick = tokio::time::interval(Duration::from_secs(sample));
    while started.elapsed() < Duration::from_secs(seconds) {
        tick.tick().await;
        let rss = wharf_load::rss(pid).unwrap_or(0);
        println!(
            "{}",
            serde_json::json!({"t": started.elapsed().as_secs(), "rss": rss})
        );
    }
    for (name, run) in runs {
        let report = run.await.expect("a load run");
        let mut json = report.json();
        json["name"] = name.into();
        println!("{json}");
    }
    println!(
        "{}",
        serde_json::json!({"t": started.elapsed().as_secs(), "rss": wharf_load::rss(pid).unwrap_or(0)})
    );
}
