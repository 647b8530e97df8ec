//! TLS in and out, with certificates made in the test (rcgen): the HTTPS
//! listener answers hyper over h2 and HTTP/1.1 (ALPN) and TLS 1.2 and 1.3,
//! and curl; a card served over it names `https` URLs; a plaintext client
//! and a client that never finishes its handshake cost a bounded time and
//! the listener keeps serving; a certificate swapped under load fails no
//! request, and a bad new pair keeps the old one; unusable files are
//! refused at load with the file named. Guests' `https://` requests are
//! verified against the `outbound` block's `ca`, and fail cleanly without
//! it.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Method, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{PrivateKeyDer, ServerName};
use tokio::io::AsyncReadExt;

use crate::common::*;
use crate::wasi_http::{expect_fetch, outbound_count};

/// A certificate authority made for one test.
pub struct TestCa {
    params: CertificateParams,
    key: KeyPair,
    pem: String,
}

/// A certificate for `127.0.0.1` and `localhost`, signed by a [`TestCa`].
pub struct Leaf {
    pub cert: rcgen::Certificate,
    pub key: KeyPair,
}

impl TestCa {
    pub fn new() -> TestCa {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        // Names of their own: OpenSSL (curl) takes a leaf whose subject is
        // its issuer's for a self-signed certificate.
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "Wharf test CA");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let pem = params.self_signed(&key).unwrap().pem();
        TestCa { params, key, pem }
    }

    /// The CA's certificate (PEM).
    pub fn pem(&self) -> &str {
        &self.pem
    }

    /// A new leaf with a key of its own.
    pub fn leaf(&self) -> Leaf {
        let key = KeyPair::generate().unwrap();
        let mut params =
            CertificateParams::new(vec!["127.0.0.1".into(), "localhost".into()]).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "localhost");
        let cert = params
            .signed_by(&key, &Issuer::from_params(&self.params, &self.key))
            .unwrap();
        Leaf { cert, key }
    }
}

impl Leaf {
    /// A server configuration serving this leaf with `alpn`.
    pub fn server_config(&self, alpn: &[&[u8]]) -> rustls::ServerConfig {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![self.cert.der().clone()],
                PrivateKeyDer::Pkcs8(self.key.serialize_der().into()),
            )
            .unwrap();
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        config
    }

    /// Writes `{stem}.pem` and `{stem}.key` in `dir`, each replaced whole
    /// (written aside, then renamed over), key first.
    fn install(&self, dir: &Path, stem: &str) {
        let put = |name: String, text: String| {
            let aside = dir.join(format!("{name}.new"));
            std::fs::write(&aside, text).unwrap();
            std::fs::rename(&aside, dir.join(name)).unwrap();
        };
        put(format!("{stem}.key"), self.key.serialize_pem());
        put(format!("{stem}.pem"), self.cert.pem());
    }
}

const TLS_KDL: &str = r#"tls { certificate "server.pem"; key "server.key"; }"#;

/// A client trusting `ca`, offering `alpn`, with TLS `versions`.
fn connector(
    ca: &TestCa,
    alpn: &[&[u8]],
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> tokio_rustls::TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    let der = rustls::pki_types::CertificateDer::from_pem_slice(ca.pem().as_bytes()).unwrap();
    roots.add(der).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    // Every connection a full handshake, so each sees the certificate
    // served at that moment (a resumed session carries the one it began
    // with).
    config.resumption = rustls::client::Resumption::disabled();
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

/// What one request over a new TLS connection saw.
struct Seen {
    status: StatusCode,
    body: Bytes,
    alpn: Option<Vec<u8>>,
    version: Option<rustls::ProtocolVersion>,
    /// The leaf certificate the server presented (DER).
    peer: Vec<u8>,
}

/// POSTs `body` to `path` on a new TLS connection to `addr` (named
/// `localhost`), in HTTP/2 when ALPN chose it.
async fn post_tls(
    tls: &tokio_rustls::TlsConnector,
    addr: SocketAddr,
    path: &str,
    body: &'static str,
) -> Result<Seen, String> {
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| e.to_string())?;
    let name = ServerName::try_from("localhost").unwrap();
    let stream = tls.connect(name, tcp).await.map_err(|e| e.to_string())?;
    let (_, session) = stream.get_ref();
    let alpn = session.alpn_protocol().map(<[u8]>::to_vec);
    let version = session.protocol_version();
    let peer = session.peer_certificates().unwrap()[0].to_vec();
    let uri = format!("https://localhost:{}{path}", addr.port());
    let req = http::Request::builder()
        .method(Method::POST)
        .uri(&uri)
        .body(Full::new(Bytes::from_static(body.as_bytes())))
        .unwrap();
    let io = TokioIo::new(stream);
    let resp = if alpn.as_deref() == Some(b"h2") {
        let (mut sender, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(conn);
        sender.send_request(req).await
    } else {
        let (mut sender, conn) = hyper::client::conn::http1::handshake(io)
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(conn);
        sender.send_request(req).await
    }
    .map_err(|e| e.to_string())?;
    let status = resp.status();
    let body = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok(Seen {
        status,
        body,
        alpn,
        version,
        peer,
    })
}

fn addr_of(server: &Server) -> SocketAddr {
    server
        .base
        .strip_prefix("https://")
        .expect("an https base")
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_listener_serves_https_over_h2_and_http1_with_its_certificate() {
    let ca = TestCa::new();
    let leaf = ca.leaf();
    let dir = agents_dir(&["echo", "scribe"]);
    leaf.install(dir.path(), "server");
    let server = Server::start(config(dir.path(), TLS_KDL)).await;
    let addr = addr_of(&server);
    use rustls::version::{TLS12, TLS13};

    // hyper, offered h2 and HTTP/1.1 (h2 chosen), or HTTP/1.1 alone; and
    // TLS 1.2 as well as 1.3.
    for (alpn, versions, want_alpn, want_version) in [
        (
            &[&b"h2"[..], b"http/1.1"][..],
            &[&TLS13][..],
            &b"h2"[..],
            rustls::ProtocolVersion::TLSv1_3,
        ),
        (
            &[&b"http/1.1"[..]][..],
            &[&TLS13][..],
            &b"http/1.1"[..],
            rustls::ProtocolVersion::TLSv1_3,
        ),
        (
            &[&b"h2"[..]][..],
            &[&TLS12][..],
            &b"h2"[..],
            rustls::ProtocolVersion::TLSv1_2,
        ),
    ] {
        let tls = connector(&ca, alpn, versions);
        let seen = post_tls(&tls, addr, "/agents/echo", "over tls")
            .await
            .unwrap();
        assert_eq!(seen.status, StatusCode::OK);
        assert_eq!(&seen.body[..], b"over tls");
        assert_eq!(seen.alpn.as_deref(), Some(want_alpn));
        assert_eq!(seen.version, Some(want_version));
        assert_eq!(seen.peer, leaf.cert.der().to_vec());
    }

    // curl, in both HTTP versions, verifying against the CA.
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    for (flag, version) in [("--http2", "2"), ("--http1.1", "1.1")] {
        let mut curl = std::process::Command::new("curl");
        curl.args(["-sS", "--max-time", "30", flag, "--cacert"])
            .arg(&ca_file)
            .args(["-w", "\n%{http_version}", "--data-binary", "from curl"])
            .arg(format!("https://localhost:{}/agents/echo", addr.port()));
        let out = tokio::task::spawn_blocking(move || curl.output())
            .await
            .unwrap()
            .expect("curl runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "curl {flag}: {stdout} {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(stdout, format!("from curl\n{version}"), "curl {flag}");
    }

    // An agent card read over TLS names https:// URLs.
    let tls = connector(&ca, &[b"http/1.1"], &[&TLS13]);
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let stream = tls
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    let req = http::Request::get("/a2a/scribe/.well-known/agent-card.json")
        .header("host", format!("localhost:{}", addr.port()))
        .body(Full::new(Bytes::new()))
        .unwrap();
    let resp = sender.send_request(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let card: serde_json::Value =
        serde_json::from_slice(&resp.into_body().collect().await.unwrap().to_bytes()).unwrap();
    let urls: Vec<&str> = card["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["url"].as_str().unwrap())
        .collect();
    let base = format!("https://localhost:{}", addr.port());
    assert_eq!(
        urls,
        [
            format!("{base}/a2a/scribe"),
            format!("{base}/a2a/scribe"),
            base.clone()
        ]
    );

    // A client that does not trust the certificate gets no answer.
    let other = TestCa::new();
    let untrusting = connector(&other, &[b"http/1.1"], &[&TLS13]);
    let refused = post_tls(&untrusting, addr, "/agents/echo", "x").await;
    assert!(
        refused.as_ref().is_err_and(|e| e.contains("certificate")),
        "{:?}",
        refused.map(|s| s.status)
    );
    // Plaintext to the TLS port is closed, not answered; TLS still works.
    let plain = client()
        .request(
            http::Request::get(format!("http://{addr}/healthz"))
                .body(Full::new(Bytes::new()))
                .unwrap(),
        )
        .await;
    assert!(plain.is_err(), "plaintext was answered");
    let again = post_tls(&tls, addr, "/agents/echo", "still").await.unwrap();
    assert_eq!(&again.body[..], b"still");
    server.stop().await;
}

/// Reads from `conn` until the server closes it.
async fn closed_by_server(mut conn: tokio::net::TcpStream) {
    let mut buf = [0u8; 16];
    let read = tokio::time::timeout(Duration::from_secs(60), conn.read(&mut buf))
        .await
        .expect("the silent connection was closed");
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_never_finishes_its_handshake_holds_its_slot_only_until_needed() {
    let ca = TestCa::new();
    let dir = agents_dir(&["echo"]);
    ca.leaf().install(dir.path(), "server");
    let tls = connector(&ca, &[b"h2"], &[&rustls::version::TLS13]);

    // A connection that sends nothing is closed at the header timeout.
    let kdl = format!("{TLS_KDL}\nserver {{ header-timeout \"300ms\"; }}");
    let server = Server::start(config(dir.path(), &kdl)).await;
    let silent = tokio::net::TcpStream::connect(addr_of(&server))
        .await
        .unwrap();
    closed_by_server(silent).await;
    server.stop().await;

    // With a header timeout of an hour, two silent connections fill both
    // slots; a client arriving after them gets one (a connection in its
    // handshake is idle, and the idle one longest gives way) and is served.
    let kdl = format!("{TLS_KDL}\nserver {{ header-timeout \"1h\"; connections 2; }}");
    let server = Server::start(config(dir.path(), &kdl)).await;
    let addr = addr_of(&server);
    let first = tokio::net::TcpStream::connect(addr).await.unwrap();
    let second = tokio::net::TcpStream::connect(addr).await.unwrap();
    let served = tokio::time::timeout(
        Duration::from_secs(60),
        post_tls(&tls, addr, "/agents/echo", "after"),
    )
    .await
    .expect("a slot was made for the new client")
    .unwrap();
    assert_eq!(&served.body[..], b"after");
    closed_by_server(first).await;
    drop(second);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn zero_window_h2_connections_over_tls_make_room_and_are_cut_off() {
    let ca = TestCa::new();
    let dir = agents_dir(&["echo"]);
    ca.leaf().install(dir.path(), "server");
    let tls = connector(&ca, &[b"h2"], &[&rustls::version::TLS13]);
    // Every slot taken by an h2 connection (ALPN) whose answer waits on a
    // window the client never opens.
    let kdl = format!("{TLS_KDL}\nserver {{ connections 16; write-timeout \"1h\"; }}");
    let server = Server::start(config(dir.path(), &kdl)).await;
    let addr = addr_of(&server);
    let authority = format!("localhost:{}", addr.port());
    let mut held = Vec::new();
    for _ in 0..16 {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let name = ServerName::try_from("localhost").unwrap();
        let stream = tls.connect(name, tcp).await.unwrap();
        assert_eq!(stream.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
        held.push(crate::stalls::zero_window(stream, &authority, "https", 1).await);
    }
    // A client that reads is served: a stalled connection made room.
    let served = tokio::time::timeout(
        Duration::from_secs(600),
        post_tls(&tls, addr, "/agents/echo", "reads"),
    )
    .await
    .expect("a slot was made for the new client")
    .unwrap();
    assert_eq!(&served.body[..], b"reads");
    for (conn, _) in &held {
        conn.abort();
    }
    server.stop().await;

    // With a short write timeout the stalled connection is closed by the
    // server, over TLS as over h2c.
    let kdl = format!("{TLS_KDL}\nserver {{ write-timeout \"1s\"; }}");
    let server = Server::start(config(dir.path(), &kdl)).await;
    let addr = addr_of(&server);
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    let stream = tls.connect(name, tcp).await.unwrap();
    let (conn, _heads) =
        crate::stalls::zero_window(stream, &format!("localhost:{}", addr.port()), "https", 4).await;
    let _ = tokio::time::timeout(Duration::from_secs(60), conn)
        .await
        .expect("the stalled TLS connection is closed by the server");
    // And a client that reads is served after it.
    let served = post_tls(&tls, addr, "/agents/echo", "after").await.unwrap();
    assert_eq!(&served.body[..], b"after");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_certificate_swapped_under_load_fails_no_request() {
    let ca = TestCa::new();
    let (first, second) = (ca.leaf(), ca.leaf());
    let dir = agents_dir(&["echo"]);
    first.install(dir.path(), "server");
    let server = Server::start(config(dir.path(), TLS_KDL)).await;
    let addr = addr_of(&server);
    let tls = connector(&ca, &[b"h2", b"http/1.1"], rustls::DEFAULT_VERSIONS);

    // Clients making a new connection for every request until stopped.
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicUsize::new(0));
    let failures = Arc::new(Mutex::new(Vec::<String>::new()));
    let presented = Arc::new(Mutex::new(Vec::<Vec<u8>>::new()));
    let mut workers = Vec::new();
    for _ in 0..4 {
        let (tls, stop, done, failures, presented) = (
            tls.clone(),
            stop.clone(),
            done.clone(),
            failures.clone(),
            presented.clone(),
        );
        workers.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                match post_tls(&tls, addr, "/agents/echo", "load").await {
                    Ok(seen) if seen.status == StatusCode::OK && &seen.body[..] == b"load" => {
                        done.fetch_add(1, Ordering::Relaxed);
                        let mut p = presented.lock().unwrap();
                        if !p.contains(&seen.peer) {
                            p.push(seen.peer);
                        }
                    }
                    Ok(seen) => failures
                        .lock()
                        .unwrap()
                        .push(format!("{}: {:?}", seen.status, seen.body)),
                    Err(e) => failures.lock().unwrap().push(e),
                }
            }
        }));
    }
    let serving = |cert: &Leaf| {
        let want = cert.cert.der().to_vec();
        let presented = presented.clone();
        move || {
            let seen = presented.lock().unwrap().contains(&want);
            async move { seen }
        }
    };
    wait_until("the first certificate is served", serving(&first)).await;
    second.install(dir.path(), "server");
    wait_until("the swapped certificate is served", serving(&second)).await;
    let after_swap = done.load(Ordering::Relaxed);
    wait_until("requests go on after the swap", || async {
        done.load(Ordering::Relaxed) > after_swap + 20
    })
    .await;

    // A pair that does not fit (the first certificate, the second key) is
    // refused: the second certificate stays. The watcher needs two looks
    // of a second to read a change, so three seconds is past it.
    std::fs::write(dir.path().join("server.pem"), first.cert.pem()).unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let before = done.load(Ordering::Relaxed);
    wait_until("requests go on after the bad pair", || async {
        done.load(Ordering::Relaxed) > before + 20
    })
    .await;
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.await.unwrap();
    }
    let failures = std::mem::take(&mut *failures.lock().unwrap());
    assert!(
        failures.is_empty(),
        "{} failed: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
    assert_eq!(
        *presented.lock().unwrap(),
        [first.cert.der().to_vec(), second.cert.der().to_vec()],
        "the first certificate, then the second, and nothing else"
    );
    let now = post_tls(&tls, addr, "/agents/echo", "load").await.unwrap();
    assert_eq!(
        now.peer,
        second.cert.der().to_vec(),
        "the bad pair was not taken"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn unusable_tls_files_are_refused_with_the_file_named() {
    let ca = TestCa::new();
    let (one, two) = (ca.leaf(), ca.leaf());
    let dir = agents_dir(&[]);
    one.install(dir.path(), "one");
    two.install(dir.path(), "two");
    std::fs::write(dir.path().join("junk.pem"), "not pem at all").unwrap();
    let parse = |kdl: &str| {
        wharf::config::Config::parse("t.kdl", kdl, dir.path())
            .map(|_| ())
            .map_err(|e| e.plain())
    };
    for (kdl, says) in [
        (
            r#"tls { certificate "missing.pem"; key "one.key"; }"#,
            "missing.pem`: cannot read it",
        ),
        (
            r#"tls { certificate "junk.pem"; key "one.key"; }"#,
            "holds no certificate",
        ),
        (
            r#"tls { certificate "one.pem"; key "one.pem"; }"#,
            "no usable private key",
        ),
        (r#"tls { certificate "one.pem"; }"#, "`tls` names no `key`"),
        (
            r#"tls { certificate "one.pem"; key "one.key"; chain "x"; }"#,
            "chain",
        ),
    ] {
        let err = parse(kdl).expect_err(kdl);
        assert!(err.contains(says), "{kdl}: {err}");
    }
    // Files that parse but do not belong together stop the start.
    let mut config = config(
        dir.path(),
        r#"tls { certificate "one.pem"; key "two.key"; }"#,
    );
    config.tasks.path = Some(dir.path().join("tasks.db"));
    let err = wharf::app::App::start(config, test_engine())
        .await
        .err()
        .expect("a mismatched pair is refused");
    let text = err.to_string();
    assert!(
        text.contains("two.key") && text.contains("does not fit"),
        "{text}"
    );
}

/// An HTTPS server on loopback answering every request `from tls upstream`.
async fn tls_upstream(leaf: &Leaf) -> SocketAddr {
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(leaf.server_config(&[b"http/1.1"])));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper::service::service_fn(|_req| async {
                    Ok::<_, std::convert::Infallible>(http::Response::new(Full::new(
                        Bytes::from_static(b"from tls upstream"),
                    )))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    addr
}

#[tokio::test(flavor = "multi_thread")]
async fn guests_call_https_verified_against_the_outbound_ca() {
    let ca = TestCa::new();
    let upstream = tls_upstream(&ca.leaf()).await;
    let plain = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let plain_addr = plain.local_addr().unwrap();
    // A plain HTTP server, reached with https://: it answers the
    // ClientHello with an HTTP error and closes.
    tokio::spawn(async move {
        while let Ok((tcp, _)) = plain.accept().await {
            tokio::spawn(async move {
                let service = hyper::service::service_fn(|_req| async {
                    Ok::<_, std::convert::Infallible>(http::Response::new(Full::new(
                        Bytes::from_static(b"plain"),
                    )))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), service)
                    .await;
            });
        }
    });
    let dir = tempfile::tempdir().unwrap();
    for name in ["trusting", "untrusting", "elsewhere"] {
        copy_guest(dir.path(), "http_faults", name);
    }
    std::fs::write(dir.path().join("ca.pem"), ca.pem()).unwrap();
    let kdl = r#"
        agent "trusting" { outbound { allow "127.0.0.1"; ca "ca.pem"; } }
        agent "untrusting" { outbound { allow "127.0.0.1"; } }
        agent "elsewhere" { outbound { allow "10.9.9.9"; ca "ca.pem"; } }
    "#;
    let server = Server::start(config(dir.path(), kdl)).await;
    for (agent, target, status, says) in [
        (
            "trusting",
            format!("https://{upstream}/x"),
            200,
            "from tls upstream",
        ),
        (
            "untrusting",
            format!("https://{upstream}/x"),
            502,
            "TlsCertificateError",
        ),
        (
            "trusting",
            format!("https://{plain_addr}/x"),
            502,
            "TlsProtocolError",
        ),
        // https:// is held to the allow-list as http:// is.
        (
            "elsewhere",
            format!("https://{upstream}/x"),
            502,
            "HttpRequestDenied",
        ),
    ] {
        expect_fetch(&server, agent, &target, status, says).await;
    }
    let count = outbound_count;
    assert_eq!(metric(&server, &count("trusting", "allowed")).await, 1.0);
    assert_eq!(metric(&server, &count("trusting", "failed")).await, 1.0);
    assert_eq!(metric(&server, &count("untrusting", "failed")).await, 1.0);
    assert_eq!(metric(&server, &count("elsewhere", "denied")).await, 1.0);
    server.stop().await;
}
