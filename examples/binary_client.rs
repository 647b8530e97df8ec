//! One call over Wharf's binary transport from Rust, with the client in
//! `tools/load` (which the benchmarks and the reliability suite use):
//!
//!     cargo run --example binary-client -- wharf.sock echo hello

use bytes::BytesMut;
use wharf_load::binary::{self, Addr, Request};

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [socket, agent, body] = args.as_slice() else {
        eprintln!("usage: binary-client SOCKET AGENT BODY");
        std::process::exit(2);
    };
    let (mut rd, mut wr) = binary::connect(&Addr::Unix(socket.into())).await?;
    let req = Request {
        id: 1,
        agent,
        affinity: None,
        body: body.as_bytes(),
    };
    let answer = binary::call(&mut rd, &mut wr, &mut BytesMut::new(), &req).await?;
    match answer.code {
        Some(code) => println!("{} {code}", answer.status),
        None => println!(
            "{} {}",
            answer.status,
            String::from_utf8_lossy(&answer.body)
        ),
    }
    Ok(())
}
