//! What a start says while it works: a line for a step that takes over a
//! second, a progress bar over the components when stderr is a terminal
//! (a line per slow component otherwise), and, once ready, where Wharf
//! listens and what it serves there.

use std::fmt;
use std::future::Future;
use std::time::{Duration, Instant};

use crate::registry::Progress;

/// A step slower than this is announced, and its time reported.
const SLOW: Duration = Duration::from_secs(1);

/// Runs `work`, saying `what` is under way once it has taken a second and
/// how long it took when it ends.
pub async fn step<T>(what: &str, work: impl Future<Output = T>) -> T {
    let started = Instant::now();
    tokio::pin!(work);
    tokio::select! {
        out = &mut work => return out,
        () = tokio::time::sleep(SLOW) => {
            tracing::info!("{what} (compiling components on a first start; later starts use the compile cache)…");
        }
    }
    let out = work.await;
    tracing::info!("{what}: done in {:.1} s", started.elapsed().as_secs_f64());
    out
}

/// Progress over the components of the agents directory.
pub struct LoadProgress {
    /// A bar, when stderr is a terminal.
    bar: Option<indicatif::ProgressBar>,
}

impl LoadProgress {
    /// A bar on a terminal; log lines otherwise.
    pub fn new() -> LoadProgress {
        let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let bar = terminal.then(|| {
            let bar = indicatif::ProgressBar::new(0);
            let style = indicatif::ProgressStyle::with_template(
                "  loading {pos}/{len} [{bar:30}] {msg} ({elapsed})",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> ");
            bar.set_style(style);
            bar
        });
        LoadProgress { bar }
    }

    /// One component done.
    pub fn loaded(&self, p: Progress<'_>) {
        match &self.bar {
            Some(bar) => {
                bar.set_length(p.total as u64);
                bar.set_position(p.done as u64);
                bar.set_message(p.name.to_string());
            }
            None if p.took >= SLOW => tracing::info!(
                "loaded `{}` ({}/{}) in {:.1} s",
                p.name,
                p.done,
                p.total,
                p.took.as_secs_f64()
            ),
            None => {}
        }
    }

    /// The bar goes once every component is loaded.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Default for LoadProgress {
    fn default() -> Self {
        LoadProgress::new()
    }
}

/// Where a started Wharf listens and what it serves there.
#[derive(Debug, Clone)]
pub struct Ready {
    /// `http://ADDR`.
    pub url: String,
    /// The binary transport's Unix socket and TCP address, when on.
    pub binary: Vec<String>,
    /// Agents served, with the A2A ones marked.
    pub agents: Vec<(String, bool)>,
    /// Pipeline blocks served.
    pub pipelines: Vec<String>,
    /// Filters loaded.
    pub filters: Vec<String>,
    /// Components refused, with the reason.
    pub refused: Vec<String>,
    /// Components and pipelines still loading (`load "while-serving"`).
    pub loading: usize,
}

impl Ready {
    pub(crate) fn of(app: &crate::app::App) -> Ready {
        let pipeline = &app.state.pipeline;
        let snapshot = pipeline.registry().snapshot();
        let agents = pipeline
            .routes()
            .iter()
            .map(|r| (r.name().to_string(), r.core.entry.image.serves_a2a()))
            .collect();
        let mut binary = Vec::new();
        if let Some(path) = app.binary_unix_path() {
            binary.push(format!("unix:{}", path.display()));
        }
        if let Some(addr) = app.binary_tcp_addr() {
            binary.push(format!("tcp://{addr}"));
        }
        Ready {
            url: format!("{}://{}", app.scheme(), app.local_addr()),
            binary,
            agents,
            pipelines: snapshot.compositions.keys().cloned().collect(),
            filters: snapshot.filters.keys().cloned().collect(),
            refused: snapshot.refused.iter().map(|r| r.to_string()).collect(),
            loading: snapshot.pending.len(),
        }
    }
}

/// How many agents, pipelines, filters and refusals the ready lines name
/// each: a directory of thousands is summed up, not printed whole.
const LISTED: usize = 20;

/// The line after a list cut at [`LISTED`].
fn more(f: &mut fmt::Formatter<'_>, count: usize, what: &str) -> fmt::Result {
    if count > LISTED {
        writeln!(f, "  … and {} more {what}, {count} in all", count - LISTED)?;
    }
    Ok(())
}

/// The lines `wharf serve` prints once it is ready.
impl fmt::Display for Ready {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let url = &self.url;
        writeln!(f, "Wharf {} is serving on {url}", crate::VERSION)?;
        if self.loading > 0 {
            writeln!(
                f,
                "  loading {} agents and pipelines while serving (a request for one waits for it; each is in the log once loaded)",
                self.loading
            )?;
        } else if self.agents.is_empty() && self.pipelines.is_empty() {
            writeln!(
                f,
                "  no agents: put .wasm components in the agents directory"
            )?;
        }
        for (name, a2a) in self.agents.iter().take(LISTED) {
            write!(f, "  agent     {url}/agents/{name}")?;
            if *a2a {
                write!(f, "   (A2A: {url}/a2a/{name})")?;
            }
            writeln!(f)?;
        }
        more(f, self.agents.len(), "agents")?;
        for name in self.pipelines.iter().take(LISTED) {
            writeln!(f, "  pipeline  {url}/agents/{name}")?;
        }
        more(f, self.pipelines.len(), "pipelines")?;
        if !self.filters.is_empty() {
            let listed: Vec<&str> = self
                .filters
                .iter()
                .take(LISTED)
                .map(String::as_str)
                .collect();
            writeln!(f, "  filters   {}", listed.join(", "))?;
            more(f, self.filters.len(), "filters")?;
        }
        for place in &self.binary {
            writeln!(f, "  binary    {place}")?;
        }
        writeln!(f, "  agents list {url}/agents, metrics {url}/metrics")?;
        for refusal in self.refused.iter().take(LISTED) {
            writeln!(f, "  {refusal}")?;
        }
        more(f, self.refused.len(), "refused (each is in the log)")?;
        write!(f, "Press Ctrl-C to stop.")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_directory_is_summed_up_after_the_first_names() {
        let ready = |agents: usize| Ready {
            url: "http://127.0.0.1:1".into(),
            binary: Vec::new(),
            agents: (0..agents).map(|i| (format!("t-{i}"), false)).collect(),
            pipelines: Vec::new(),
            filters: vec!["auth".into()],
            refused: Vec::new(),
            loading: 0,
        };
        let text = ready(LISTED).to_string();
        assert_eq!(text.matches("  agent ").count(), LISTED);
        assert!(!text.contains("more"), "{text}");
        let text = ready(10_000).to_string();
        assert_eq!(text.matches("  agent ").count(), LISTED);
        assert!(
            text.contains("  agent     http://127.0.0.1:1/agents/t-19\n"),
            "{text}"
        );
        assert!(
            text.contains("  … and 9980 more agents, 10000 in all\n"),
            "{text}"
        );
        assert!(text.contains("  filters   auth\n"), "{text}");
    }

    #[test]
    fn a_start_that_loads_while_serving_says_how_many_are_still_loading() {
        let ready = Ready {
            url: "http://127.0.0.1:1".into(),
            binary: Vec::new(),
            agents: Vec::new(),
            pipelines: Vec::new(),
            filters: vec!["waf".into()],
            refused: Vec::new(),
            loading: 10_000,
        };
        let text = ready.to_string();
        assert!(
            text.contains("  loading 10000 agents and pipelines while serving"),
            "{text}"
        );
        assert!(!text.contains("no agents"), "{text}");
    }
}
