//! Where guests' and the host's own outbound calls may connect: every
//! address a host name resolves to must be public, or admitted by an
//! address or range entry of the allow-list, so a listed name that
//! resolves (or later rebinds) to a private address reaches nothing.
//! Shared by A2A push notifications and wasi:http outbound requests.

use std::net::{IpAddr, SocketAddr};

use crate::config::Target;

/// The addresses of `host` it may connect to on `port`: public ones, and
/// private ones only when an address or range entry admits them.
pub async fn resolve(host: &str, port: u16, allow: &[Target]) -> Result<Vec<SocketAddr>, String> {
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| format!("cannot resolve `{host}`: {e}"))?
        .collect();
    let admitted: Vec<SocketAddr> = addrs
        .iter()
        .copied()
        .filter(|a| is_public(a.ip()) || allow.iter().any(|t| t.admits_addr(a.ip())))
        .collect();
    if admitted.is_empty() {
        return Err(format!(
            "`{host}` resolves only to addresses the allow-list does not admit ({})",
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
pub fn is_public(ip: IpAddr) -> bool {
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
        let err = resolve("localhost", 9, &allow(&["localhost"]))
            .await
            .unwrap_err();
        assert!(err.contains("does not admit"), "{err}");
        let ok = resolve("localhost", 9, &allow(&["localhost", "127.0.0.0/8", "::1"]))
            .await
            .unwrap();
        assert!(ok.iter().all(|a| a.ip().is_loopback()), "{ok:?}");
    }
}
