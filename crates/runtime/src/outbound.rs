//! Outbound HTTP from guests (`wasi:http/outgoing-handler`): denied unless
//! the agent's `outbound` block allows the host, then checked again on
//! every address the host resolves to ([`wharf_core::egress::resolve`]), sent
//! over HTTP/1.1 (`https://` over TLS verified against the system's roots
//! and the block's `ca`, see [`crate::tls`]) with the block's timeout, and
//! answered with at most its body limit. Every request is logged when
//! denied and counted.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper_util::rt::TokioIo;
use metrics::Counter;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

use wharf_config::Outbound;
use wharf_core::metrics::OutboundCounters;
use wharf_core::trace::{self, Attribute, Kind, Trace};

use crate::tls::{ClientTls, TlsError};

/// What a guest's store needs to decide on its outbound requests.
#[derive(Debug, Default, Clone)]
pub struct OutboundAccess {
    /// Where the guest's requests may go; none: nowhere.
    pub policy: Option<Arc<Outbound>>,
    /// The counters of its outcomes, set when the route is built.
    pub counters: Arc<OnceLock<OutboundCounters>>,
    /// TLS for its `https://` requests, trusting the policy's `ca`: made
    /// at the first one, shared by every instance of the agent.
    tls: Arc<OnceLock<ClientTls>>,
}

impl OutboundAccess {
    /// Access under `policy` (none: every request denied).
    pub fn new(policy: Option<Arc<Outbound>>) -> OutboundAccess {
        OutboundAccess {
            policy,
            ..OutboundAccess::default()
        }
    }
}

/// The `wasi:http` hooks of one store.
pub(crate) struct Hooks {
    pub(crate) guest: Arc<str>,
    pub(crate) access: OutboundAccess,
    /// The span of the call the requests are made in, when the host
    /// exports traces: each request gets a span under it, and carries it
    /// as its `traceparent`.
    pub(crate) trace: Option<Trace>,
}

type SendResult = Result<(http::Response<WasiBody>, IoFuture), Error>;
type IoFuture = Box<dyn Future<Output = Result<(), Error>> + Send>;

impl WasiHttpHooks for Hooks {
    /// The default list, without the allocation the default makes per
    /// header a guest sets.
    fn is_forbidden_header(&mut self, name: &http::HeaderName) -> bool {
        wasmtime_wasi_http::DEFAULT_FORBIDDEN_HEADERS.contains(name)
    }

    fn send_request(
        &mut self,
        mut request: http::Request<WasiBody>,
        _options: Option<RequestOptions>,
        _fut: IoFuture,
    ) -> Box<dyn Future<Output = SendResult> + Send> {
        let guest = self.guest.clone();
        let access = self.access.clone();
        let span = trace::child(self.trace.as_ref(), "wharf.outbound", Kind::Client, || {
            let uri = request.uri();
            vec![
                Attribute::new("http.request.method", request.method().to_string()),
                Attribute::new("server.address", uri.host().unwrap_or("").to_string()),
                Attribute::new("url.scheme", uri.scheme_str().unwrap_or("").to_string()),
            ]
        });
        if let Some(span) = &span {
            span.trace().inject(request.headers_mut());
        }
        Box::new(async move {
            let count = |pick: fn(&OutboundCounters) -> &Counter| {
                if let Some(c) = access.counters.get() {
                    pick(c).increment(1);
                }
            };
            let uri = request.uri().to_string();
            let result = match &access.policy {
                None => Err(Refusal::Denied(
                    "the agent has no `outbound` block: outbound HTTP is denied".into(),
                )),
                Some(policy) => {
                    let tls = access
                        .tls
                        .get_or_init(|| ClientTls::new("outbound", policy.ca.clone()));
                    send(request, policy, tls).await
                }
            };
            if let Some(span) = span {
                match &result {
                    Ok(resp) => span.status(resp.status().as_u16()),
                    Err(Refusal::Denied(why) | Refusal::Failed(why, _)) => span.fail(why.clone()),
                }
            }
            match result {
                Ok(resp) => {
                    count(|c| &c.allowed);
                    Ok((resp, Box::new(async { Ok(()) }) as IoFuture))
                }
                Err(Refusal::Denied(why)) => {
                    count(|c| &c.denied);
                    tracing::warn!(agent = %guest, uri, "outbound request denied: {why}");
                    Err(Error::HttpRequestDenied)
                }
                Err(Refusal::Failed(why, err)) => {
                    count(|c| &c.failed);
                    tracing::info!(agent = %guest, uri, "outbound request failed: {why}");
                    Err(err)
                }
            }
        })
    }
}

enum Refusal {
    /// The policy does not allow it.
    Denied(String),
    /// Allowed, and it failed on the way.
    Failed(String, Error),
}

/// Checks `request` against `policy` and sends it.
async fn send(
    request: http::Request<WasiBody>,
    policy: &Outbound,
    tls: &ClientTls,
) -> Result<http::Response<WasiBody>, Refusal> {
    let uri = request.uri().clone();
    let secure = match uri.scheme_str() {
        Some("http") => false,
        Some("https") => true,
        other => {
            return Err(Refusal::Denied(format!(
                "only http:// and https:// are supported for outbound requests, not `{}`",
                other.unwrap_or("")
            )));
        }
    };
    let host = uri
        .host()
        .map(|h| h.trim_matches(['[', ']']).to_ascii_lowercase())
        .ok_or_else(|| Refusal::Denied("the request names no host".into()))?;
    let port = uri.port_u16().unwrap_or(if secure { 443 } else { 80 });
    if !policy.allow.iter().any(|t| t.admits_host(&host, port)) {
        return Err(Refusal::Denied(format!(
            "`{host}:{port}` is not in the agent's `outbound` allow-list"
        )));
    }
    let addrs = wharf_core::egress::resolve(&host, port, &policy.allow)
        .await
        .map_err(|e| Refusal::Denied(e.to_string()))?;
    let timeout = policy.timeout;
    let stream = connect(&addrs, timeout).await?;
    if !secure {
        return exchange(stream, request, &uri, policy).await;
    }
    let stream = tokio::time::timeout(timeout, tls.connect(&host, stream))
        .await
        .map_err(|_| {
            failed(
                format!("no TLS handshake within {timeout:?}"),
                Error::ConnectionTimeout,
            )
        })?
        .map_err(|e| {
            let err = match e {
                TlsError::Certificate { .. } => Error::TlsCertificateError,
                _ => Error::TlsProtocolError,
            };
            failed(e.to_string(), err)
        })?;
    exchange(stream, request, &uri, policy).await
}

/// Sends `request` to `uri` over `io` (plain or TLS) and hands back the
/// answer, its body bounded by the policy.
async fn exchange<IO>(
    io: IO,
    mut request: http::Request<WasiBody>,
    uri: &http::Uri,
    policy: &Outbound,
) -> Result<http::Response<WasiBody>, Refusal>
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let timeout = policy.timeout;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(|e| failed(format!("handshake: {e}"), Error::HttpProtocolError))?;
    tokio::spawn(async move {
        if let Err(err) = conn.await {
            tracing::debug!("outbound connection ended: {err}");
        }
    });
    // The request line carries the path; the host goes in `Host`.
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    *request.uri_mut() = path.parse().unwrap_or_else(|_| http::Uri::from_static("/"));
    if let Some(authority) = uri.authority()
        && !request.headers().contains_key(http::header::HOST)
        && let Ok(value) = http::HeaderValue::from_str(authority.as_str())
    {
        request.headers_mut().insert(http::header::HOST, value);
    }
    let resp = tokio::time::timeout(timeout, sender.send_request(request))
        .await
        .map_err(|_| {
            failed(
                format!("no answer within {timeout:?}"),
                Error::HttpResponseTimeout,
            )
        })?
        .map_err(|e| failed(format!("{e}"), Error::HttpProtocolError))?;
    let limit = policy.max_body;
    Ok(resp.map(|body| {
        http_body_util::Limited::new(body, usize::try_from(limit).unwrap_or(usize::MAX))
            .map_err(move |e| match e.downcast::<hyper::Error>() {
                Ok(e) => Error::Hyper(*e),
                Err(_) => Error::HttpResponseBodySize(Some(limit)),
            })
            .boxed_unsync()
    }))
}

fn failed(why: String, err: Error) -> Refusal {
    Refusal::Failed(why, err)
}

/// A connection to the first address that answers within `timeout`.
async fn connect(
    addrs: &[std::net::SocketAddr],
    timeout: Duration,
) -> Result<tokio::net::TcpStream, Refusal> {
    let mut last = String::from("no address");
    for addr in addrs {
        match tokio::time::timeout(timeout, tokio::net::TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(err)) => last = format!("{addr}: {err}"),
            Err(_) => last = format!("{addr}: no connection within {timeout:?}"),
        }
    }
    Err(failed(last, Error::ConnectionRefused))
}

/// A request body the host hands to a component: the bytes it already
/// holds, shared, never copied.
pub(crate) fn full_body(bytes: Bytes) -> WasiBody {
    http_body_util::Full::new(bytes)
        .map_err(|never| match never {})
        .boxed_unsync()
}
