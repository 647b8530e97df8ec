//! Hot reload while serving: components replaced, added and removed, and
//! the configuration rewritten, under continuous load, with no failed
//! request; and every kind of bad change leaving the previous state serving.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Method;

use crate::common::*;

/// The `version` fixture with its mark set to `n`: a different component
/// (another digest) for every `n`, answering `n` as eight digits.
pub fn versioned(n: u32) -> Vec<u8> {
    let mut bytes = std::fs::read(guest("version")).unwrap();
    let mark = b"WHARF-VERSION-MARK:";
    let at = bytes
        .windows(mark.len())
        .position(|w| w == mark)
        .expect("the version fixture carries its mark")
        + mark.len();
    bytes[at..at + 8].copy_from_slice(format!("{n:08}").as_bytes());
    bytes
}

/// What `GET /agents` says `name`'s digest is.
async fn digest_of(server: &Server, name: &str) -> Option<String> {
    let list = get(&server.url("/agents")).await.json();
    list.as_array()?
        .iter()
        .find(|a| a["name"] == name)
        .and_then(|a| a["digest"].as_str().map(str::to_string))
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(bytes)))
}

/// Writes `bytes` to `path` in place (truncate, then write), or through a
/// temporary file renamed into place.
fn replace(path: &Path, bytes: &[u8], in_place: bool) {
    if in_place {
        std::fs::write(path, bytes).unwrap();
    } else {
        let tmp = path.with_file_name(".incoming.tmp");
        std::fs::write(&tmp, bytes).unwrap();
        std::fs::rename(&tmp, path).unwrap();
    }
}

/// A directory with `wharf.kdl` and `agents/`.
struct Site {
    root: tempfile::TempDir,
}

impl Site {
    fn new(agents: &[&str], extra_kdl: &str) -> Site {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("agents")).unwrap();
        for name in agents {
            std::fs::copy(guest(name), root.path().join(format!("agents/{name}.wasm"))).unwrap();
        }
        let site = Site { root };
        site.write_config(extra_kdl);
        site
    }

    fn agent(&self, name: &str) -> PathBuf {
        self.root.path().join(format!("agents/{name}.wasm"))
    }

    fn config_path(&self) -> PathBuf {
        self.root.path().join("wharf.kdl")
    }

    fn write_config(&self, extra_kdl: &str) {
        let text = format!(
            "listen \"127.0.0.1:0\"\nagents \"agents\"\ncache {:?}\naudit #false\ntasks {{ path \"tasks.db\" }}\n{extra_kdl}",
            test_cache_dir().display().to_string()
        );
        replace(&self.config_path(), text.as_bytes(), false);
    }
}

/// One request the load made.
struct Sample {
    target: &'static str,
    start: Instant,
    end: Instant,
    status: u16,
    body: Bytes,
}

const WARM: &str = r#"
agent "version" {
    instances { mode "warm"; max 4 }
    affinity { header "x-session" }
}
agent "echo" {
    // No retirement by use count: its instances change only if its route does.
    instances { mode "warm"; max 4; max-uses 100000000 }
    affinity { header "x-session" }
}
"#;

fn greeting_config(generation: u32) -> String {
    format!("{WARM}\nagent \"hello\" {{ config {{ greeting \"G{generation}\" }} }}\n")
}

/// Four clients, each on its own keep-alive connection with its own
/// session, cycling through the three agents until told to stop.
fn start_load(base: &str, stop: &Arc<AtomicBool>) -> Vec<tokio::task::JoinHandle<Vec<Sample>>> {
    (0..4)
        .map(|i| {
            let (base, stop) = (base.to_string(), stop.clone());
            tokio::spawn(async move {
                let client = client();
                let session = format!("s{i}");
                let mut samples = Vec::new();
                let targets = ["version", "echo", "hello"];
                let mut n = 0usize;
                while !stop.load(Ordering::Relaxed) {
                    let target = targets[n % targets.len()];
                    n += 1;
                    let url = format!("{base}/agents/{target}");
                    let start = Instant::now();
                    let headers = [("x-session", session.as_str())];
                    let reply = send(&client, Method::POST, &url, &headers, "world").await;
                    samples.push(Sample {
                        target,
                        start,
                        end: Instant::now(),
                        status: reply.status.as_u16(),
                        body: reply.body,
                    });
                }
                samples
            })
        })
        .collect()
}

/// Checks that a sample answered by generation `n` ran while `n` was
/// current: it ended after `n` was written, and started before the next
/// generation was seen answering.
fn check_window(sample: &Sample, n: usize, written: &[Instant], seen: &[Instant]) {
    assert!(
        sample.end >= written[n],
        "{} answered as generation {n} before that generation was written",
        sample.target
    );
    if let Some(next) = seen.get(n + 1) {
        assert!(
            sample.start <= *next,
            "{} answered as generation {n} for a request started after generation {} was serving",
            sample.target,
            n + 1
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn zero_failed_requests_while_agents_and_config_change() {
    let site = Site::new(&["echo", "hello"], &greeting_config(0));
    std::fs::copy(guest("echo"), site.agent("spare")).unwrap();
    let mut written = vec![Instant::now()];
    std::fs::write(site.agent("version"), versioned(0)).unwrap();
    let mut seen = vec![Instant::now()];
    let (mut config_written, mut config_seen) = (vec![Instant::now()], vec![Instant::now()]);
    let server = Server::start_file(&site.config_path()).await;
    // Pin a session on echo, which no change touches.
    let pinned = [("x-session", "pinned")];
    send(
        &client(),
        Method::POST,
        &server.url("/agents/echo"),
        &pinned,
        "x",
    )
    .await;
    let echo_health = get(&server.url("/agents/echo/health")).await.json();
    let echo_instances = echo_health["instances"].as_array().unwrap().clone();

    let stop = Arc::new(AtomicBool::new(false));
    let load = start_load(&server.base, &stop);

    for n in 1..=20u32 {
        let bytes = versioned(n);
        let digest = sha256(&bytes);
        written.push(Instant::now());
        replace(&site.agent("version"), &bytes, n % 2 == 0);
        wait_until(&format!("version {n} serving"), || async {
            digest_of(&server, "version").await.as_deref() == Some(digest.as_str())
        })
        .await;
        seen.push(Instant::now());
    }
    std::fs::copy(guest("counter"), site.agent("counter")).unwrap();
    wait_until("the added agent answering", || async {
        post(&server.url("/agents/counter"), "").await.status == 200
    })
    .await;
    std::fs::remove_file(site.agent("spare")).unwrap();
    wait_until("the removed agent gone", || async {
        post(&server.url("/agents/spare"), "").await.status == 404
    })
    .await;
    for g in 1..=10u32 {
        config_written.push(Instant::now());
        site.write_config(&greeting_config(g));
        let expected = format!("G{g}, x!\n");
        wait_until(&format!("configuration {g} applied"), || async {
            post(&server.url("/agents/hello"), "x").await.text() == expected
        })
        .await;
        config_seen.push(Instant::now());
    }
    stop.store(true, Ordering::Relaxed);
    let mut samples = Vec::new();
    for client in load {
        samples.extend(client.await.unwrap());
    }

    let failed: Vec<String> = samples
        .iter()
        .filter(|s| s.status != 200)
        .map(|s| {
            format!(
                "{} {}: {}",
                s.target,
                s.status,
                String::from_utf8_lossy(&s.body)
            )
        })
        .collect();
    assert!(
        failed.is_empty(),
        "{} failed requests: {failed:?}",
        failed.len()
    );
    let mut versions_served = std::collections::BTreeSet::new();
    for sample in &samples {
        match sample.target {
            "version" => {
                let n: usize = std::str::from_utf8(&sample.body).unwrap().parse().unwrap();
                versions_served.insert(n);
                check_window(sample, n, &written, &seen);
            }
            "hello" => {
                let text = std::str::from_utf8(&sample.body).unwrap();
                let g: usize = text[1..text.find(',').unwrap()].parse().unwrap();
                check_window(sample, g, &config_written, &config_seen);
            }
            _ => assert_eq!(sample.body, "world"),
        }
    }
    // The load ran through the changes, not just before or after them.
    assert!(
        versions_served.len() >= 10,
        "the load saw only versions {versions_served:?}"
    );

    // Echo kept its route: the same instances, its session's pin, no repin.
    let after = get(&server.url("/agents/echo/health")).await.json();
    let ids = |list: &[serde_json::Value]| -> Vec<u64> {
        list.iter().map(|i| i["id"].as_u64().unwrap()).collect()
    };
    let still: Vec<u64> = ids(after["instances"].as_array().unwrap());
    for id in ids(&echo_instances) {
        assert!(
            still.contains(&id),
            "echo instance {id} was replaced: {after}"
        );
    }
    let echo_repins = r#"wharf_affinity_total{agent="echo",outcome="repin"}"#;
    assert_eq!(metric(&server, echo_repins).await, 0.0);
    // Sessions pinned to replaced versions were re-pinned, and counted.
    let version_repins = r#"wharf_affinity_total{agent="version",outcome="repin"}"#;
    assert!(metric(&server, version_repins).await >= 1.0);
    let applied = r#"wharf_reloads_total{trigger="config",outcome="applied"}"#;
    assert!(metric(&server, applied).await >= 10.0);
}

/// The refusal the running snapshot holds for `file`, if any.
fn refusal(server: &Server, file: &str) -> Option<String> {
    let snapshot = server.pipeline().registry().snapshot();
    snapshot
        .refused
        .iter()
        .find(|r| r.path.file_name().is_some_and(|n| n == file))
        .map(|r| r.reason.clone())
}

/// Makes `change`, waits until `version.wasm` is refused for `reason`,
/// and checks that generation `serving` still answers.
async fn refused_and_still_serving(server: &Server, reason: &str, serving: u32) {
    wait_until(&format!("a refusal for `{reason}`"), || async {
        refusal(server, "version.wasm").is_some_and(|r| r.contains(reason))
    })
    .await;
    let reply = post(&server.url("/agents/version"), "").await;
    let refused = &server.pipeline().registry().snapshot().refused;
    assert_eq!(reply.status, 200, "{} {refused:#?}", reply.text());
    assert_eq!(reply.text(), format!("{serving:08}"), "after `{reason}`");
}

/// The smallest component: a header and nothing in it (fits no world).
const EMPTY_COMPONENT: &[u8] = &[0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];

#[tokio::test(flavor = "multi_thread")]
async fn bad_files_and_bad_configs_leave_the_previous_state_serving() {
    let site = Site::new(&["hello"], &greeting_config(1));
    std::fs::write(site.agent("version"), versioned(1)).unwrap();
    let server = Server::start_file(&site.config_path()).await;
    let first = digest_of(&server, "version").await.unwrap();

    let whole = versioned(2);
    replace(&site.agent("version"), &whole[..whole.len() / 2], true);
    refused_and_still_serving(&server, "failed to compile", 1).await;
    replace(&site.agent("version"), b"not a component at all", true);
    refused_and_still_serving(&server, "not a WebAssembly file", 1).await;
    replace(&site.agent("version"), EMPTY_COMPONENT, false);
    refused_and_still_serving(&server, "world", 1).await;
    assert_eq!(digest_of(&server, "version").await.unwrap(), first);

    // A configuration with errors changes nothing, and says why.
    let rejected = r#"wharf_reloads_total{trigger="config",outcome="rejected"}"#;
    replace(
        &site.config_path(),
        b"agent \"hello\" { config { greeting \"G2\" } }\nlimits { deadline \"soon\" }\n",
        false,
    );
    wait_until("the bad configuration rejected", || async {
        metric(&server, rejected).await >= 1.0
    })
    .await;
    assert_eq!(
        post(&server.url("/agents/hello"), "x").await.text(),
        "G1, x!\n"
    );

    // A good file after all that is served.
    site.write_config(&greeting_config(3));
    replace(&site.agent("version"), &versioned(3), false);
    wait_until("version 3 serving", || async {
        post(&server.url("/agents/version"), "").await.text() == "00000003"
    })
    .await;
    assert_eq!(
        post(&server.url("/agents/hello"), "x").await.text(),
        "G3, x!\n"
    );
    let refusals = "wharf_reload_refusals_total";
    assert!(metric(&server, refusals).await >= 3.0);
}

/// Signs `bytes` with `key` through the `wharf sign` code, into `out`.
fn signed(bytes: &[u8], key: &Path, out: &Path) -> Vec<u8> {
    let tmp = out.with_file_name(".unsigned.tmp");
    std::fs::write(&tmp, bytes).unwrap();
    wharf::trust::sign(&tmp, key, &tmp).unwrap();
    let signed = std::fs::read(&tmp).unwrap();
    std::fs::remove_file(&tmp).unwrap();
    signed
}

#[tokio::test(flavor = "multi_thread")]
async fn unsigned_wrongly_signed_and_unpinned_components_are_refused() {
    let site = Site::new(&[], "");
    let keys = site.root.path();
    wharf::trust::keygen(&keys.join("release")).unwrap();
    wharf::trust::keygen(&keys.join("other")).unwrap();
    let (release, other) = (keys.join("release.key"), keys.join("other.key"));
    let agent = site.agent("version");
    let v1 = signed(&versioned(1), &release, &agent);
    std::fs::write(&agent, &v1).unwrap();
    // Unsigned at start: refused at start.
    std::fs::copy(guest("echo"), site.agent("echo")).unwrap();
    site.write_config("trust { key \"release.pub\" }\n");
    let server = Server::start_file(&site.config_path()).await;
    assert_eq!(
        post(&server.url("/agents/version"), "").await.text(),
        "00000001"
    );
    assert!(
        refusal(&server, "echo.wasm")
            .unwrap()
            .contains("not signed")
    );
    assert_eq!(post(&server.url("/agents/echo"), "x").await.status, 503);
    let list = get(&server.url("/agents")).await.json();
    assert!(
        list[0]["signed_by"]
            .as_str()
            .unwrap()
            .starts_with("ed25519:")
    );

    replace(&agent, &versioned(2), false);
    refused_and_still_serving(&server, "not signed", 1).await;
    replace(&agent, &signed(&versioned(2), &other, &agent), false);
    refused_and_still_serving(&server, "bad signature", 1).await;
    // Signed, then changed: the mark's last digit rewritten.
    let mut tampered = signed(&versioned(2), &release, &agent);
    let at = tampered.windows(8).position(|w| w == b"00000002").unwrap();
    tampered[at + 7] = b'9';
    replace(&agent, &tampered, false);
    refused_and_still_serving(&server, "bad signature", 1).await;
    // Well signed, but not the digest the configuration now pins.
    site.write_config(&format!(
        "trust {{ key \"release.pub\" }}\nagent \"version\" {{ digest \"{}\" }}\n",
        sha256(&v1)
    ));
    let v2 = signed(&versioned(2), &release, &agent);
    replace(&agent, &v2, false);
    let mismatch = format!("digest mismatch: the file is {}", sha256(&v2));
    refused_and_still_serving(&server, &mismatch, 1).await;
    // Unpinned, the same file is served (the configuration reload rescans).
    site.write_config("trust { key \"release.pub\" }\n");
    wait_until("version 2 serving once unpinned", || async {
        post(&server.url("/agents/version"), "").await.text() == "00000002"
    })
    .await;
}

#[test]
fn a_file_deleted_while_it_compiles_is_not_loaded() {
    let dir = agents_dir(&["echo"]);
    let cfg = config(dir.path(), "");
    // No compile cache: the Go component takes a while to compile.
    let runtime = wharf::runtime::Runtime::new(&test_engine()).unwrap();
    let previous = wharf::registry::load_dir(&runtime, &cfg, dir.path()).unwrap();
    let big = dir.path().join("big.wasm");
    std::fs::copy(guest("echo-go"), &big).unwrap();
    let snapshot = std::thread::scope(|s| {
        let scan = s.spawn(|| wharf::registry::reload_dir(&runtime, &cfg, dir.path(), &previous));
        std::thread::sleep(Duration::from_millis(50));
        std::fs::remove_file(&big).unwrap();
        scan.join().unwrap().unwrap()
    });
    assert!(snapshot.agent("big").is_none(), "a deleted file was loaded");
    assert!(
        Arc::ptr_eq(
            snapshot.agent("echo").unwrap(),
            previous.agent("echo").unwrap()
        ),
        "the unchanged agent was loaded again"
    );
    let reason = &snapshot
        .refused
        .iter()
        .find(|r| r.path.ends_with("big.wasm"));
    if let Some(r) = reason {
        assert!(
            r.reason.contains("changed while it was being loaded"),
            "{}",
            r.reason
        );
    }
}

/// The reloads of `trigger` so far, whatever their outcome.
async fn reloads(server: &Server, trigger: &str) -> f64 {
    let mut total = 0.0;
    for outcome in ["applied", "rejected"] {
        let sample = format!("wharf_reloads_total{{trigger=\"{trigger}\",outcome=\"{outcome}\"}}");
        total += metric(server, &sample).await;
    }
    total
}

#[tokio::test(flavor = "multi_thread")]
async fn one_edit_is_one_reload_and_reading_the_files_triggers_nothing() {
    let site = Site::new(&["hello"], &greeting_config(1));
    let server = Server::start_file(&site.config_path()).await;
    // Loading read every file at start: that alone reloads nothing.
    tokio::time::sleep(wharf::reload::QUIET * 10).await;
    assert_eq!(reloads(&server, "config").await, 0.0);
    assert_eq!(reloads(&server, "files").await, 0.0);

    site.write_config(&greeting_config(2));
    wait_until("the edit applied", || async {
        post(&server.url("/agents/hello"), "x").await.text() == "G2, x!\n"
    })
    .await;
    // The reload read the file (and the agents) again; were that seen as
    // a change, it would reload every QUIET, forever.
    tokio::time::sleep(wharf::reload::QUIET * 10).await;
    assert_eq!(reloads(&server, "config").await, 1.0);
    assert_eq!(reloads(&server, "files").await, 0.0);

    // Reading or touching without a change triggers nothing either.
    let _ = std::fs::read(site.config_path()).unwrap();
    let _ = std::fs::read(site.agent("hello")).unwrap();
    tokio::time::sleep(wharf::reload::QUIET * 10).await;
    assert_eq!(reloads(&server, "config").await, 1.0);
    assert_eq!(reloads(&server, "files").await, 0.0);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_change_of_trust_or_pins_verifies_every_loaded_component_again() {
    let site = Site::new(&["echo"], "");
    let keys = site.root.path();
    wharf::trust::keygen(&keys.join("release")).unwrap();
    wharf::trust::keygen(&keys.join("other")).unwrap();
    let agent = site.agent("version");
    let v1 = signed(&versioned(1), &keys.join("release.key"), &agent);
    std::fs::write(&agent, &v1).unwrap();
    let server = Server::start_file(&site.config_path()).await;
    let status = |name: &'static str| {
        let url = server.url(&format!("/agents/{name}"));
        async move { post(&url, "x").await.status.as_u16() }
    };
    assert_eq!((status("echo").await, status("version").await), (200, 200));

    // Signatures required from now on: the unsigned component already
    // serving stops, though its file did not change; the signed one stays.
    site.write_config("trust { key \"release.pub\" }\n");
    wait_until("the unsigned echo unserved", || async {
        status("echo").await == 503
    })
    .await;
    assert!(
        refusal(&server, "echo.wasm")
            .unwrap()
            .contains("not signed")
    );
    assert_eq!(status("version").await, 200);

    // Another key trusted in its place: the component it no longer
    // vouches for stops too.
    site.write_config("trust { key \"other.pub\" }\n");
    wait_until("version unserved under the other key", || async {
        status("version").await == 503
    })
    .await;

    // No trust block, but a pin the serving file does not match.
    site.write_config("");
    wait_until("both back without a trust block", || async {
        status("echo").await == 200 && status("version").await == 200
    })
    .await;
    site.write_config(&format!(
        "agent \"version\" {{ digest \"{}\" }}\n",
        sha256(b"something else")
    ));
    wait_until("version unserved by its pin", || async {
        status("version").await == 503
    })
    .await;
    assert!(
        refusal(&server, "version.wasm")
            .unwrap()
            .contains("digest mismatch")
    );
    assert_eq!(status("echo").await, 200);
    server.stop().await;
}
