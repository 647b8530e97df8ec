//! Where a webhook may point: the URL checked against the `push` allow-list
//! when a config is created, and each address its host resolves to checked
//! again when a notification is sent, so a name that later resolves to a
//! private address (DNS rebinding) reaches nothing it was not allowed.

use std::net::{IpAddr, SocketAddr};

use crate::config::Target;

/// A webhook URL that passed the allow-list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Webhook {
    /// Lower-case, without brackets for IPv6.
    pub host: String,
    pub port: u16,
    /// The `Host` header.
    pub authority: String,
    /// Path and query, at least `/`.
    pub path: String,
}

/// Checks `url` against `allow`; the error says why it is refused.
pub(super) fn check_url(url: &str, allow: &[Target]) -> Result<Webhook, String> {
    let parsed = url::Url::parse(url).map_err(|e| format!("`url` is not a URL: {e}"))?;
    match parsed.scheme() {
        "http" => {}
        "https" => {
            return Err("`url` must be an http:// webhook: this host does not send \
                        notifications over TLS"
                .into());
        }
        other => return Err(format!("`url` must be an http:// webhook, not {other}:")),
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("`url` must not carry credentials: use `authentication`".into());
    }
    let host = match parsed.host() {
        Some(url::Host::Domain(d)) => d.to_ascii_lowercase(),
        Some(url::Host::Ipv4(ip)) => ip.to_string(),
        Some(url::Host::Ipv6(ip)) => ip.to_string(),
        None => return Err("`url` has no host".into()),
    };
    let port = parsed.port_or_known_default().unwrap_or(80);
    if !allow.iter().any(|t| t.admits_host(&host, port)) {
        return Err(format!(
            "webhook host `{host}:{port}` is not allowed by this host's `push` allow-list"
        ));
    }
    let authority = match parsed.port() {
        Some(p) => format!("{}:{p}", parsed.host_str().unwrap_or(&host)),
        None => parsed.host_str().unwrap_or(&host).to_string(),
    };
    let mut path = parsed.path().to_string();
    if let Some(query) = parsed.query() {
        path.push('?');
        path.push_str(query);
    }
    Ok(Webhook {
        host,
        port,
        authority,
        path,
    })
}

/// The addresses of `hook` it may connect to: public ones, and private ones
/// only when an address or range entry admits them.
pub(super) async fn resolve(hook: &Webhook, allow: &[Target]) -> Result<Vec<SocketAddr>, String> {
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((hook.host.as_str(), hook.port))
        .await
        .map_err(|e| format!("cannot resolve `{}`: {e}", hook.host))?
        .collect();
    let admitted: Vec<SocketAddr> = addrs
        .iter()
        .copied()
        .filter(|a| is_public(a.ip()) || allow.iter().any(|t| t.admits_addr(a.ip())))
        .collect();
    if admitted.is_empty() {
        return Err(format!(
            "`{}` resolves only to addresses the allow-list does not admit ({})",
            hook.host,
            addrs
                .iter()
                .map(|a| a.ip().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(admitted)
}

/// Whether `ip` is an ordinary public address: not loopback, private,
/// shared, link-local, unspecified, multicast, broadcast, documentation or
/// reserved (IPv4-mapped IPv6 addresses are judged as the IPv4 they carry).
pub(super) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_multicast()
                || v4.is_broadcast()
                || v4.is_documentation()
                || a == 0
                || a >= 240
                || (a == 100 && (64..128).contains(&b)))
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                || first == 0x2001 && v6.segments()[1] == 0x0db8)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allow(entries: &[&str]) -> Vec<Target> {
        entries.iter().map(|e| Target::parse(e).unwrap()).collect()
    }

    #[test]
    fn urls_pass_only_when_listed_and_plain_http() {
        let list = allow(&["hooks.example.com", "127.0.0.1"]);
        let hook = check_url("http://Hooks.Example.com/a2a?x=1", &list).unwrap();
        assert_eq!(
            (hook.host.as_str(), hook.port, hook.path.as_str()),
            ("hooks.example.com", 80, "/a2a?x=1")
        );
        assert_eq!(hook.authority, "hooks.example.com");
        let local = check_url("http://127.0.0.1:9000", &list).unwrap();
        assert_eq!(
            (local.authority.as_str(), local.path.as_str()),
            ("127.0.0.1:9000", "/")
        );
        for (url, why) in [
            ("http://169.254.169.254/latest", "not allowed"),
            ("http://10.0.0.1/", "not allowed"),
            ("https://hooks.example.com/", "TLS"),
            ("file:///etc/passwd", "not file"),
            ("http://user:pw@hooks.example.com/", "credentials"),
            ("not a url", "not a URL"),
        ] {
            let err = check_url(url, &list).unwrap_err();
            assert!(err.contains(why), "{url}: {err}");
        }
    }

    #[test]
    fn private_addresses_are_not_public() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["93.184.216.34", "2606:4700::1111", "::ffff:8.8.8.8"] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
    }

    #[tokio::test]
    async fn a_name_that_resolves_to_loopback_needs_the_address_listed() {
        let hook = check_url("http://localhost:9/", &allow(&["localhost"])).unwrap();
        let err = resolve(&hook, &allow(&["localhost"])).await.unwrap_err();
        assert!(err.contains("does not admit"), "{err}");
        let ok = resolve(&hook, &allow(&["localhost", "127.0.0.0/8", "::1"]))
            .await
            .unwrap();
        assert!(ok.iter().all(|a| a.ip().is_loopback()), "{ok:?}");
    }
}
