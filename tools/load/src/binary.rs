//! A small client for Wharf's binary transport (docs/binary.md):
//! length-prefixed MessagePack frames over a Unix socket or TCP, requests
//! pipelined on one connection and answers matched by id.

use std::net::SocketAddr;
use std::path::PathBuf;

use bytes::{Buf, BufMut, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Where a binary listener is.
#[derive(Debug, Clone)]
pub enum Addr {
    Unix(PathBuf),
    Tcp(SocketAddr),
}

pub type Reader = Box<dyn AsyncRead + Unpin + Send>;
pub type Writer = Box<dyn AsyncWrite + Unpin + Send>;

/// Opens a connection, split into its two halves.
pub async fn connect(addr: &Addr) -> std::io::Result<(Reader, Writer)> {
    Ok(match addr {
        Addr::Unix(path) => {
            let (rd, wr) = tokio::net::UnixStream::connect(path).await?.into_split();
            (Box::new(rd), Box::new(wr))
        }
        Addr::Tcp(addr) => {
            let stream = tokio::net::TcpStream::connect(addr).await?;
            stream.set_nodelay(true)?;
            let (rd, wr) = stream.into_split();
            (Box::new(rd), Box::new(wr))
        }
    })
}

/// One request to send.
#[derive(Debug, Clone, Default)]
pub struct Request<'a> {
    pub id: u64,
    pub agent: &'a str,
    pub affinity: Option<&'a str>,
    pub body: &'a [u8],
}

/// Appends `req` as one frame to `out`.
pub fn encode(req: &Request<'_>, out: &mut BytesMut) {
    let start = out.len();
    out.put_u32(0);
    let mut w = out.writer();
    let fields = 3 + u32::from(req.affinity.is_some());
    let ok = (|| -> Result<(), rmp::encode::ValueWriteError> {
        rmp::encode::write_map_len(&mut w, fields)?;
        rmp::encode::write_str(&mut w, "id")?;
        rmp::encode::write_uint(&mut w, req.id)?;
        rmp::encode::write_str(&mut w, "agent")?;
        rmp::encode::write_str(&mut w, req.agent)?;
        if let Some(key) = req.affinity {
            rmp::encode::write_str(&mut w, "affinity")?;
            rmp::encode::write_str(&mut w, key)?;
        }
        rmp::encode::write_str(&mut w, "body")?;
        rmp::encode::write_bin(&mut w, req.body)?;
        Ok(())
    })();
    ok.expect("writing to memory does not fail");
    let out = w.into_inner();
    let len = (out.len() - start - 4) as u32;
    out[start..start + 4].copy_from_slice(&len.to_be_bytes());
}

/// What came back for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub id: Option<u64>,
    pub status: u16,
    /// The error code of an error frame.
    pub code: Option<String>,
    pub body: Vec<u8>,
}

/// Reads the next answer; `None` when the server closed the connection.
pub async fn read_answer(rd: &mut Reader, buf: &mut BytesMut) -> std::io::Result<Option<Answer>> {
    loop {
        if buf.len() >= 4 {
            let len = u32::from_be_bytes(buf[..4].try_into().expect("four bytes")) as usize;
            if buf.len() >= 4 + len {
                buf.advance(4);
                let frame = buf.split_to(len);
                return decode(&frame).map(Some);
            }
            buf.reserve(4 + len - buf.len());
        } else {
            buf.reserve(64 << 10);
        }
        if rd.read_buf(buf).await? == 0 {
            return Ok(None);
        }
    }
}

fn decode(frame: &[u8]) -> std::io::Result<Answer> {
    let bad = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string());
    let value = rmpv::decode::read_value(&mut &frame[..]).map_err(|_| bad("not MessagePack"))?;
    let map = value.as_map().ok_or_else(|| bad("not a map"))?;
    let mut answer = Answer {
        id: None,
        status: 0,
        code: None,
        body: Vec::new(),
    };
    for (key, value) in map {
        match key.as_str() {
            Some("id") => answer.id = value.as_u64(),
            Some("status") => answer.status = value.as_u64().unwrap_or(0) as u16,
            Some("body") => {
                if let rmpv::Value::Binary(b) = value {
                    answer.body.clone_from(b);
                }
            }
            Some("error") => {
                let code = value.as_map().and_then(|m| {
                    m.iter()
                        .find(|(k, _)| k.as_str() == Some("code"))
                        .and_then(|(_, v)| v.as_str())
                });
                answer.code = code.map(str::to_string);
            }
            _ => {}
        }
    }
    Ok(answer)
}

/// Sends one request and waits for its answer (no other request in flight).
pub async fn call(
    rd: &mut Reader,
    wr: &mut Writer,
    buf: &mut BytesMut,
    req: &Request<'_>,
) -> std::io::Result<Answer> {
    let mut out = BytesMut::with_capacity(64 + req.body.len());
    encode(req, &mut out);
    wr.write_all(&out).await?;
    read_answer(rd, buf)
        .await?
        .ok_or_else(|| std::io::ErrorKind::UnexpectedEof.into())
}
