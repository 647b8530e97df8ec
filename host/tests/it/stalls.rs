//! Connections whose answers wait on the client: an HTTP/2 client that
//! advertises a flow-control window of zero and never opens it, while it
//! acknowledges every other frame (so no socket write ever blocks and no
//! ping goes unanswered), holds its answers only until `write-timeout`,
//! and at the connection limit makes room for clients that read.

use std::time::{Duration, Instant};

use crate::common::*;

/// The connection's task, which ends when the server closes it, and the
/// response heads it awaited (kept, so that nothing is reset from here).
pub type Held = (
    tokio::task::JoinHandle<Result<(), h2::Error>>,
    Vec<http::Response<h2::RecvStream>>,
);

/// An HTTP/2 connection over `io` (to `authority`) that acknowledges
/// SETTINGS and PINGs but grants the server no window on any stream, with
/// `answers` echo requests on it, their response heads awaited (their
/// bodies can never come).
pub async fn zero_window<T>(io: T, authority: &str, scheme: &str, answers: usize) -> Held
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (sender, conn) = h2::client::Builder::new()
        .initial_window_size(0)
        .handshake::<_, bytes::Bytes>(io)
        .await
        .unwrap();
    let conn = tokio::spawn(conn);
    let mut heads = Vec::new();
    for _ in 0..answers {
        let mut sender = sender.clone().ready().await.unwrap();
        let req = http::Request::post(format!("{scheme}://{authority}/agents/echo"))
            .body(())
            .unwrap();
        let (resp, mut body) = sender.send_request(req, false).unwrap();
        body.send_data(bytes::Bytes::from_static(b"held"), true)
            .unwrap();
        heads.push(resp.await.unwrap());
    }
    (conn, heads)
}

/// [`zero_window`] over h2c.
async fn zero_window_h2c(addr: &str, answers: usize) -> Held {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    zero_window(tcp, addr, "http", answers).await
}

fn addr(server: &Server) -> String {
    server.base.trim_start_matches("http://").to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_http2_answer_the_client_never_takes_is_cut_off_at_the_write_timeout() {
    let dir = agents_dir(&["echo"]);
    let server = Server::start(config(dir.path(), "server { write-timeout \"1s\" }\n")).await;
    let started = Instant::now();
    let (conn, heads) = zero_window_h2c(&addr(&server), 8).await;
    assert!(heads.iter().all(|r| r.status() == http::StatusCode::OK));
    // The server closes the connection once the answers have waited the
    // write timeout (the bound here only keeps a broken build from hanging).
    let ended = tokio::time::timeout(Duration::from_secs(60), conn)
        .await
        .expect("the stalled connection is closed by the server");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(900),
        "closed after {waited:?}, before the write timeout"
    );
    // Closed under the client: an error, or a GOAWAY seen as an end.
    let _ = ended.unwrap();
    let stalled = r#"wharf_connections_stalled_total{listener="http"}"#;
    assert!(metric(&server, stalled).await >= 1.0);
    // A client that reads is served on the same server.
    assert_eq!(
        post(&server.url("/agents/echo"), "next").await.text(),
        "next"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn zero_window_http2_connections_in_every_slot_do_not_lock_clients_out() {
    let dir = agents_dir(&["echo"]);
    // The default connection limit, and a write timeout far longer than
    // the test: only eviction can make room for the clients after them.
    let kdl = "server { connections 1024; write-timeout \"1h\" }\n";
    let server = Server::start(config(dir.path(), kdl)).await;
    let target = addr(&server);
    let mut held = Vec::new();
    for _ in 0..1024 {
        held.push(zero_window_h2c(&target, 1).await);
    }
    // Every slot holds a connection whose only answer waits on the client.
    let mut slowest = Duration::ZERO;
    for i in 0..10 {
        let started = Instant::now();
        let reply = tokio::time::timeout(
            Duration::from_secs(600),
            post(&server.url("/agents/echo"), format!("good {i}")),
        )
        .await
        .expect("a good client is served while the stalled connections stay open");
        assert_eq!(reply.text(), format!("good {i}"));
        slowest = slowest.max(started.elapsed());
    }
    println!("10 good clients among 1,024 stalled connections: slowest {slowest:?}");
    // The first of them found every slot held: a stalled connection was
    // evicted for it (the later ones had the slots their predecessors'
    // closed connections gave back), and it was one of the stalled ones.
    let evicted = r#"wharf_connections_evicted_total{listener="http"}"#;
    assert!(metric(&server, evicted).await >= 1.0);
    wait_until("a stalled connection closed by the server", || async {
        held.iter().any(|(conn, _)| conn.is_finished())
    })
    .await;
    for (conn, _) in &held {
        conn.abort();
    }
    drop(held);
    server.stop().await;
}
