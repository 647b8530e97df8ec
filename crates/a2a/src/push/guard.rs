//! Where a webhook may point: the URL (`https://` or `http://`) checked
//! against the `push` allow-list when a config is created. Each address its host resolves to is checked
//! again when a notification is sent ([`wharf_core::egress::resolve`]).

use wharf_config::Target;

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
    /// `https://`: delivered over TLS.
    pub tls: bool,
}

/// Checks `url` against `allow`; the error says why it is refused.
pub(super) fn check_url(url: &str, allow: &[Target]) -> Result<Webhook, String> {
    let parsed = url::Url::parse(url).map_err(|e| format!("`url` is not a URL: {e}"))?;
    let tls = match parsed.scheme() {
        "http" => false,
        "https" => true,
        other => {
            return Err(format!(
                "`url` must be an https:// or http:// webhook, not {other}:"
            ));
        }
    };
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("`url` must not carry credentials: use `authentication`".into());
    }
    let host = match parsed.host() {
        Some(url::Host::Domain(d)) => d.to_ascii_lowercase(),
        Some(url::Host::Ipv4(ip)) => ip.to_string(),
        Some(url::Host::Ipv6(ip)) => ip.to_string(),
        None => return Err("`url` has no host".into()),
    };
    let port = parsed
        .port_or_known_default()
        .unwrap_or(if tls { 443 } else { 80 });
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
        tls,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allow(entries: &[&str]) -> Vec<Target> {
        entries.iter().map(|e| Target::parse(e).unwrap()).collect()
    }

    #[test]
    fn urls_pass_only_when_listed_over_http_or_https() {
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
        assert!(!local.tls);
        let secure = check_url("https://hooks.example.com/a2a", &list).unwrap();
        assert_eq!((secure.port, secure.tls), (443, true));
        for (url, why) in [
            ("http://169.254.169.254/latest", "not allowed"),
            ("http://10.0.0.1/", "not allowed"),
            ("https://10.0.0.1/", "not allowed"),
            ("https://hooks.example.org/", "not allowed"),
            ("file:///etc/passwd", "not file"),
            ("http://user:pw@hooks.example.com/", "credentials"),
            ("not a url", "not a URL"),
        ] {
            let err = check_url(url, &list).unwrap_err();
            assert!(err.contains(why), "{url}: {err}");
        }
    }
}
