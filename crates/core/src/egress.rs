//! Where guests' and the host's own outbound calls may connect: every
//! address a host name resolves to must be public, or admitted by an
//! address or range entry of the allow-list, so a listed name that
//! resolves (or later rebinds) to a private address reaches nothing.
//! Shared by A2A push notifications and wasi:http outbound requests.

use std::net::{IpAddr, SocketAddr};

use wharf_config::Target;

/// Why an outbound connection may not be made.
#[derive(Debug, thiserror::Error)]
pub enum EgressError {
    /// The name does not resolve.
    #[error("cannot resolve `{host}`: {reason}")]
    Resolve {
        /// The name.
        host: String,
        /// What the resolver said.
        reason: String,
    },
    /// Every address it resolves to is one the allow-list does not admit.
    #[error("`{host}` resolves only to addresses the allow-list does not admit ({addrs})")]
    NotAdmitted {
        /// The name.
        host: String,
        /// The addresses it resolved to, comma-separated.
        addrs: String,
    },
}

/// The addresses of `host` it may connect to on `port`: public ones, and
/// private ones only when an address or range entry admits them.
pub async fn resolve(
    host: &str,
    port: u16,
    allow: &[Target],
) -> Result<Vec<SocketAddr>, EgressError> {
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| EgressError::Resolve {
            host: host.to_string(),
            reason: e.to_string(),
        })?
        .collect();
    let admitted: Vec<SocketAddr> = addrs
        .iter()
        .copied()
        .filter(|a| is_public(a.ip()) || allow.iter().any(|t| t.admits_addr(*a)))
        .collect();
    if admitted.is_empty() {
        return Err(EgressError::NotAdmitted {
            host: host.to_string(),
            addrs: addrs
                .iter()
                .map(|a| a.ip().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    Ok(admitted)
}

/// IPv4 ranges that are never an ordinary public host, from IANA's
/// special-purpose address registry (RFC 6890 and later): where a guest or
/// a webhook may not go unless an allow entry names the range.
const SPECIAL_V4: &[(u32, u8)] = &[
    (0x0000_0000, 8),  // 0.0.0.0/8: this network
    (0x0a00_0000, 8),  // 10.0.0.0/8: private
    (0x6440_0000, 10), // 100.64.0.0/10: shared (carrier-grade NAT)
    (0x7f00_0000, 8),  // 127.0.0.0/8: loopback
    (0xa9fe_0000, 16), // 169.254.0.0/16: link-local (cloud metadata)
    (0xac10_0000, 12), // 172.16.0.0/12: private
    (0xc000_0000, 24), // 192.0.0.0/24: IETF protocol assignments
    (0xc000_0200, 24), // 192.0.2.0/24: documentation
    (0xc01f_c400, 24), // 192.31.196.0/24: AS112
    (0xc034_c100, 24), // 192.52.193.0/24: AMT
    (0xc058_6300, 24), // 192.88.99.0/24: 6to4 relay anycast
    (0xc0a8_0000, 16), // 192.168.0.0/16: private
    (0xc0af_3000, 24), // 192.175.48.0/24: AS112 direct delegation
    (0xc612_0000, 15), // 198.18.0.0/15: benchmarking
    (0xc633_6400, 24), // 198.51.100.0/24: documentation
    (0xcb00_7100, 24), // 203.0.113.0/24: documentation
    (0xe000_0000, 4),  // 224.0.0.0/4: multicast
    (0xf000_0000, 4),  // 240.0.0.0/4: reserved, and the broadcast address
];

/// The IPv6 ones; IPv4-mapped addresses (`::ffff:a.b.c.d`) are judged as
/// the IPv4 address they carry.
const SPECIAL_V6: &[(u128, u8)] = &[
    (0, 96), // ::/96: unspecified, loopback, IPv4-compatible
    (0x0064_ff9b_0000_0000_0000_0000_0000_0000, 96), // 64:ff9b::/96: NAT64
    (0x0064_ff9b_0001_0000_0000_0000_0000_0000, 48), // 64:ff9b:1::/48: local NAT64
    (0x0100_0000_0000_0000_0000_0000_0000_0000, 64), // 100::/64: discard-only
    (0x2001_0000_0000_0000_0000_0000_0000_0000, 23), // 2001::/23: IETF protocol assignments (Teredo, …)
    (0x2001_0db8_0000_0000_0000_0000_0000_0000, 32), // 2001:db8::/32: documentation
    (0x2002_0000_0000_0000_0000_0000_0000_0000, 16), // 2002::/16: 6to4
    (0x3fff_0000_0000_0000_0000_0000_0000_0000, 20), // 3fff::/20: documentation
    (0x5f00_0000_0000_0000_0000_0000_0000_0000, 16), // 5f00::/16: segment routing
    (0xfc00_0000_0000_0000_0000_0000_0000_0000, 7),  // fc00::/7: unique local
    (0xfe80_0000_0000_0000_0000_0000_0000_0000, 10), // fe80::/10: link-local
    (0xfec0_0000_0000_0000_0000_0000_0000_0000, 10), // fec0::/10: site-local (deprecated)
    (0xff00_0000_0000_0000_0000_0000_0000_0000, 8),  // ff00::/8: multicast
];

/// Whether `ip` is an ordinary public address: in none of IANA's
/// special-purpose ranges (loopback, private, shared, link-local,
/// multicast, documentation, benchmarking, translation and tunnel
/// prefixes, reserved). IPv4-mapped IPv6 addresses are judged as the IPv4
/// they carry.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let bits = u32::from(v4);
            !SPECIAL_V4
                .iter()
                .any(|&(net, len)| bits >> (32 - len) == net >> (32 - len))
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let bits = u128::from(v6);
            !SPECIAL_V6
                .iter()
                .any(|&(net, len)| bits >> (128 - len) == net >> (128 - len))
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
            // The rest of IANA's special-purpose ranges.
            "192.0.0.8",
            "198.18.0.1",
            "198.19.255.255",
            "192.88.99.1",
            "255.255.255.255",
            "224.0.0.1",
            "::127.0.0.1",
            "::a9fe:a9fe",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::1",
            "2002:7f00:1::",
            "2001::1",
            "2001:db8::1",
            "3fff::1",
            "100::1",
            "fec0::1",
            "ff02::1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "93.184.216.34",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "198.20.0.1",
            "192.0.3.1",
            "2001:4860:4860::8888",
            "1.1.1.1",
        ] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
    }

    #[tokio::test]
    async fn a_name_that_resolves_to_loopback_needs_the_address_listed() {
        let err = resolve("localhost", 9, &allow(&["localhost"]))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not admit"), "{err}");
        let ok = resolve("localhost", 9, &allow(&["localhost", "127.0.0.0/8", "::1"]))
            .await
            .unwrap();
        assert!(ok.iter().all(|a| a.ip().is_loopback()), "{ok:?}");
    }
}
