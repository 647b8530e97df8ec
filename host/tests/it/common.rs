//! Shared test plumbing: building guests once, agent directories, starting
//! an in-process server on an ephemeral port, and a small HTTP client.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tokio::sync::oneshot;
use wharf::app::App;
use wharf::config::{Cache, Config};
use wharf::runtime::EngineSettings;

/// Builds guests the same way the benchmarks do.
#[path = "../../../benches/common.rs"]
mod build;

/// Directory holding the built guest components (built once per test binary).
pub fn guests_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(build::guests_dir)
}

/// The languages besides Rust, by the suffix their components carry.
pub const LANGS: [&str; 4] = ["c", "go", "py", "js"];

/// Path of one built guest, e.g. `guest("echo")` (Rust) or
/// `guest("echo-py")` (another language, built into `lang/`).
pub fn guest(name: &str) -> PathBuf {
    let lang = name
        .rsplit_once('-')
        .is_some_and(|(_, l)| LANGS.contains(&l));
    let dir = if lang {
        build::lang_dir(guests_dir())
    } else {
        guests_dir().to_path_buf()
    };
    let path = dir.join(format!("{name}.wasm"));
    assert!(
        path.is_file(),
        "guest `{name}` was not built at {}",
        path.display()
    );
    path
}

/// A temporary agents directory holding copies of the named guests.
pub fn agents_dir(names: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for name in names {
        std::fs::copy(guest(name), dir.path().join(format!("{name}.wasm"))).unwrap();
    }
    dir
}

/// Copies the built guest `name` into `dir` as `as_name.wasm` (one
/// component serving under several names).
pub fn copy_guest(dir: &Path, name: &str, as_name: &str) {
    std::fs::copy(guest(name), dir.join(format!("{as_name}.wasm"))).unwrap();
}

/// Engine settings small enough for many engines in one test process.
pub fn test_engine() -> EngineSettings {
    EngineSettings {
        max_instances: 64,
        ..EngineSettings::default()
    }
}

/// Parses a test configuration; `listen` is forced to an ephemeral port and
/// `agents` to `dir`.
pub fn config(dir: &Path, kdl: &str) -> Config {
    let mut config = Config::parse("test.kdl", kdl, dir).expect("test config parses");
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.agents_dir = dir.to_path_buf();
    config.cache = Cache::Dir(test_cache_dir());
    if !kdl.contains("audit") {
        // Tests that read the audit log name a file; the rest keep stderr quiet.
        config.audit = wharf::config::AuditSink::Off;
    }
    config
}

/// Loads copies of the named guests in-process (no transport), with the
/// test run's compile cache; every one must load.
pub fn load_guests(
    names: &[&str],
) -> (
    wharf::runtime::Runtime,
    wharf::registry::Snapshot,
    tempfile::TempDir,
) {
    let dir = agents_dir(names);
    let cfg = config(dir.path(), "");
    let mut runtime = wharf::runtime::Runtime::new(&test_engine()).unwrap();
    runtime.use_cache(&test_cache_dir()).unwrap();
    let snapshot = wharf::registry::load_dir(&runtime, &cfg, dir.path()).unwrap();
    assert!(snapshot.refused.is_empty(), "{:?}", snapshot.refused);
    (runtime, snapshot, dir)
}

/// One compile cache for the whole test run, so that the large Python and
/// JavaScript guests compile once (tests of the cache itself use their own).
pub fn test_cache_dir() -> PathBuf {
    guests_dir().join("../../test-cache")
}

/// Writes `root/wharf.kdl` whole (aside, then renamed over): a site serving
/// `root/agents` on an ephemeral port with the test run's compile cache,
/// its own task store, no audit log, and `body`. [`Server::start_file`]
/// serves it and reloads it when it is written again.
pub fn write_site(root: &Path, body: &str) {
    let text = format!(
        "listen \"127.0.0.1:0\"\nagents \"agents\"\ncache {:?}\naudit #false\n\
         tasks {{ path \"tasks.db\" }}\n{body}",
        test_cache_dir().display().to_string()
    );
    let tmp = root.join(".wharf.kdl.tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, root.join("wharf.kdl")).unwrap();
}

/// A server running in this process until dropped.
pub struct Server {
    pub base: String,
    /// The binary transport's TCP address, when the configuration has one.
    pub binary_tcp: Option<std::net::SocketAddr>,
    state: std::sync::Arc<wharf::transport::AppState>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
    /// The task store's directory, when the configuration named none.
    _tasks: Option<tempfile::TempDir>,
}

impl Server {
    /// Starts `config`; a configuration that names no task store gets one
    /// of its own in a temporary directory.
    pub async fn start(config: Config) -> Server {
        Server::launch(config, None).await
    }

    /// Starts from a configuration file, which the server reloads when it
    /// changes (the file names its own task store, cache and port 0).
    pub async fn start_file(path: &Path) -> Server {
        let config = Config::load(path).unwrap_or_else(|e| panic!("{}", e.plain()));
        let source = wharf::reload::ConfigSource {
            path: path.to_path_buf(),
            overrides: Default::default(),
        };
        Server::launch(config, Some(source)).await
    }

    async fn launch(mut config: Config, source: Option<wharf::reload::ConfigSource>) -> Server {
        let tasks = config.tasks.path.is_none().then(|| {
            let dir = tempfile::tempdir().unwrap();
            config.tasks.path = Some(dir.path().join("tasks.db"));
            dir
        });
        // What `wharf serve` would build from this configuration, with
        // the test's smaller pool.
        let engine = EngineSettings {
            max_instances: test_engine().max_instances,
            ..wharf::app::engine_settings(&config)
        };
        let mut app = App::start(config, engine).await.expect("server starts");
        if let Some(source) = source {
            app.reload_config_from(source);
        }
        let base = format!("{}://{}", app.scheme(), app.local_addr());
        let binary_tcp = app.binary_tcp_addr();
        let state = app.state.clone();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(app.serve(async {
            let _ = stopped.await;
        }));
        Server {
            base,
            binary_tcp,
            state,
            stop: Some(stop),
            task: Some(task),
            _tasks: tasks,
        }
    }

    /// The running pipeline, to publish new snapshots into.
    pub fn pipeline(&self) -> &wharf::pipeline::Pipeline {
        &self.state.pipeline
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Stops accepting and waits for open connections to finish.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.unwrap();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// An HTTP response, fully read.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Reply {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }

    /// The `error.code` of a JSON error reply.
    pub fn error_code(&self) -> String {
        self.json()["error"]["code"]
            .as_str()
            .unwrap_or("")
            .to_string()
    }
}

pub type HttpClient = Client<HttpConnector, Full<Bytes>>;

pub fn client() -> HttpClient {
    Client::builder(TokioExecutor::new()).build_http()
}

pub fn h2c_client() -> HttpClient {
    Client::builder(TokioExecutor::new())
        .http2_only(true)
        .build_http()
}

/// Sends one request and reads the whole reply.
pub async fn send(
    client: &HttpClient,
    method: Method,
    url: &str,
    headers: &[(&str, &str)],
    body: impl Into<Bytes>,
) -> Reply {
    let mut builder = http::Request::builder().method(method).uri(url);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let req = builder.body(Full::new(body.into())).unwrap();
    let resp = tokio::time::timeout(Duration::from_secs(60), client.request(req))
        .await
        .expect("reply within 60 s")
        .expect("request succeeds at the HTTP level");
    let (parts, body) = resp.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    Reply {
        status: parts.status,
        headers: parts.headers,
        body,
    }
}

pub async fn post(url: &str, body: impl Into<Bytes>) -> Reply {
    send(&client(), Method::POST, url, &[], body).await
}

pub async fn get(url: &str) -> Reply {
    send(&client(), Method::GET, url, &[], Bytes::new()).await
}

/// The value of one sample on `/metrics` (0 when absent).
pub async fn metric(server: &Server, sample: &str) -> f64 {
    let text = get(&server.url("/metrics")).await.text();
    text.lines()
        .find_map(|line| line.strip_prefix(sample)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0.0)
}

/// Polls `check` every 20 ms until it holds; panics after a minute.
pub async fn wait_until<F, Fut>(what: &str, check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    wait_until_within(what, Duration::from_secs(60), check).await;
}

/// [`wait_until`], panicking after `limit`.
pub async fn wait_until_within<F, Fut>(what: &str, limit: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + limit;
    while !check().await {
        assert!(Instant::now() < deadline, "gave up waiting: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Sends a request and returns the response head and its body, unread.
pub async fn open(
    client: &HttpClient,
    method: Method,
    url: &str,
    body: &'static str,
) -> http::Response<hyper::body::Incoming> {
    let req = http::Request::builder()
        .method(method)
        .uri(url)
        .body(Full::new(Bytes::from(body)))
        .unwrap();
    opened(client, req, url).await
}

/// As [`open`], with `headers` and no body.
pub async fn open_with(
    client: &HttpClient,
    method: Method,
    url: &str,
    headers: &[(&str, &str)],
) -> http::Response<hyper::body::Incoming> {
    let mut req = http::Request::builder().method(method).uri(url);
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    opened(client, req.body(Full::new(Bytes::new())).unwrap(), url).await
}

async fn opened(
    client: &HttpClient,
    req: http::Request<Full<Bytes>>,
    url: &str,
) -> http::Response<hyper::body::Incoming> {
    tokio::time::timeout(std::time::Duration::from_secs(60), client.request(req))
        .await
        .expect("a head within 60 s")
        .unwrap_or_else(|e| panic!("{url}: the request fails at the HTTP level: {e:?}"))
}

/// The next data frame of `body`: `Ok(None)` at its end, `Err` when the
/// answer was cut off.
pub async fn next_chunk(body: &mut hyper::body::Incoming) -> Result<Option<Bytes>, String> {
    loop {
        match body.frame().await {
            None => return Ok(None),
            Some(Err(e)) => return Err(e.to_string()),
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    return Ok(Some(data));
                }
            }
        }
    }
}

/// The Python of the test clients' venv (the A2A SDK, msgpack), installed
/// by `scripts/setup/test-clients.sh`.
pub fn client_python() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let python = root.join("target/toolchains/a2a-client/bin/python");
    assert!(
        python.is_file(),
        "the test clients are not installed at {}: run scripts/setup/test-clients.sh (scripts/test.sh does)",
        python.display()
    );
    python
}

/// Runs a client script, which must exit 0 with none of its checks failed.
pub async fn run_client(mut cmd: Command, what: &str) {
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // "N passed, 0 failed" with N > 0: a filter that matched nothing fails.
    let passed = stdout
        .lines()
        .find_map(|l| l.strip_suffix(" passed, 0 failed"))
        .and_then(|n| n.trim().parse::<u32>().ok());
    assert!(
        out.status.success() && passed.is_some_and(|n| n > 0),
        "{what} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The hex SHA-256 of `bytes` (how the `auth` filter's config names API keys).
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}
