//! `auth`: authenticates every request before its body is read. A bearer
//! JWT (HS256, RS256, ES256 or EdDSA; keys from config or a JWKS document;
//! `iss`, `aud`, `exp` and `nbf` checked with clock skew) or an API key
//! (stored in config as its SHA-256, never in clear). Claims travel on as
//! metadata (`auth.sub`, …); a refusal is a 401 with `WWW-Authenticate`.
//!
//! Config (per filter, overridable per route):
//! - `secret` (HS256), `public-key` (PEM: RSA, P-256 or Ed25519), `jwks`
//!   (a JWKS JSON document); `algorithms` (default: what the keys allow)
//! - `issuer`, `audience` (space-separated accepted values), `leeway`
//!   (seconds of clock skew, default 60)
//! - `api-keys`: space-separated `NAME:SHA256HEX`; `api-key-header`
//!   (default `x-api-key`)
//! - `claims`: claims passed on as metadata (default `sub iss scope`)
//! - `realm` (default `wharf`); `keep-credentials "true"` passes the
//!   credential on to the agent (by default it is removed)

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode, decode_header};
use sha2::{Digest, Sha256};
use wharf_guest::filter::{Phases, Verdict};
use wharf_guest::{Head, Level, config, header_pairs, json_string, log};

/// Keys and checks for one configuration, parsed once per instance.
struct Settings {
    secret: Option<DecodingKey>,
    public: Vec<(Algorithm, DecodingKey)>,
    jwks: Option<JwkSet>,
    algorithms: Vec<Algorithm>,
    issuer: Vec<String>,
    audience: Vec<String>,
    leeway: u64,
    api_keys: Vec<(String, [u8; 32])>,
    api_key_header: String,
    claims: Vec<String>,
    realm: String,
    keep: bool,
}

thread_local! {
    static SETTINGS: RefCell<HashMap<String, Rc<Settings>>> = RefCell::new(HashMap::new());
}

const KEYS: [&str; 12] = [
    "secret",
    "public-key",
    "jwks",
    "algorithms",
    "issuer",
    "audience",
    "leeway",
    "api-keys",
    "api-key-header",
    "claims",
    "realm",
    "keep-credentials",
];

/// The settings for the route `agent`, parsed on its first request: the
/// config values may differ per route, and reading them costs a dozen
/// host calls, so an instance keeps each route's settings.
fn settings(agent: &str) -> Rc<Settings> {
    if let Some(s) = SETTINGS.with(|s| s.borrow().get(agent).cloned()) {
        return s;
    }
    let values: Vec<String> = KEYS.iter().map(|k| config(k).unwrap_or_default()).collect();
    let s = Rc::new(parse(&values).unwrap_or_else(|e| {
        log(Level::Error, &format!("auth: {e}"));
        panic!("auth: {e}")
    }));
    SETTINGS.with(|m| m.borrow_mut().insert(agent.to_string(), s.clone()));
    s
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

fn parse(v: &[String]) -> Result<Settings, String> {
    let get = |k: &str| v[KEYS.iter().position(|x| *x == k).expect("a known key")].as_str();
    let secret =
        (!get("secret").is_empty()).then(|| DecodingKey::from_secret(get("secret").as_bytes()));
    let mut public = Vec::new();
    let pem = get("public-key").as_bytes();
    if !pem.is_empty() {
        if let Ok(k) = DecodingKey::from_rsa_pem(pem) {
            public.push((Algorithm::RS256, k));
        } else if let Ok(k) = DecodingKey::from_ec_pem(pem) {
            public.push((Algorithm::ES256, k));
        } else if let Ok(k) = DecodingKey::from_ed_pem(pem) {
            public.push((Algorithm::EdDSA, k));
        } else {
            return Err("`public-key` is not an RSA, P-256 or Ed25519 public key in PEM".into());
        }
    }
    let jwks = match get("jwks") {
        "" => None,
        text => Some(serde_json::from_str::<JwkSet>(text).map_err(|e| format!("`jwks`: {e}"))?),
    };
    let algorithms = match words(get("algorithms")) {
        list if list.is_empty() => {
            let mut a = Vec::new();
            if secret.is_some() {
                a.push(Algorithm::HS256);
            }
            a.extend(public.iter().map(|(alg, _)| *alg));
            if jwks.is_some() {
                a.extend([Algorithm::RS256, Algorithm::ES256, Algorithm::EdDSA]);
            }
            a
        }
        list => list
            .iter()
            .map(|a| {
                a.parse::<Algorithm>()
                    .map_err(|_| format!("unknown algorithm `{a}`"))
            })
            .collect::<Result<_, _>>()?,
    };
    let mut api_keys = Vec::new();
    for entry in words(get("api-keys")) {
        let (name, hex_digest) = entry
            .split_once(':')
            .ok_or_else(|| format!("api key entry `{entry}` is not NAME:SHA256HEX"))?;
        let digest: [u8; 32] = hex::decode(hex_digest)
            .ok()
            .and_then(|d| d.try_into().ok())
            .ok_or_else(|| format!("api key `{name}`: not a SHA-256 in hex"))?;
        api_keys.push((name.to_string(), digest));
    }
    Ok(Settings {
        secret,
        public,
        jwks,
        algorithms,
        issuer: words(get("issuer")),
        audience: words(get("audience")),
        leeway: get("leeway").parse().unwrap_or(60),
        api_keys,
        api_key_header: match get("api-key-header") {
            "" => "x-api-key".into(),
            h => h.to_ascii_lowercase(),
        },
        claims: match words(get("claims")) {
            c if c.is_empty() => words("sub iss scope"),
            c => c,
        },
        realm: match get("realm") {
            "" => "wharf".into(),
            r => r.to_string(),
        },
        keep: get("keep-credentials") == "true",
    })
}

/// A 401 naming why, with the challenge RFC 6750 asks for.
fn refuse(s: &Settings, rule: &str, description: &str, invalid_token: bool) -> Verdict {
    let challenge = if invalid_token {
        format!(
            "Bearer realm=\"{}\", error=\"invalid_token\", error_description=\"{description}\"",
            s.realm
        )
    } else {
        format!("Bearer realm=\"{}\"", s.realm)
    };
    let body = format!(
        "{{\"error\":{{\"code\":\"unauthorized\",\"message\":{}}}}}",
        json_string(description)
    );
    Verdict::block(
        401,
        &[
            ("content-type", "application/json"),
            ("www-authenticate", &challenge),
        ],
        body,
    )
    .rule(rule, description)
    .tag("auth")
}

/// The keys that may verify a token with this header: the JWKS key its
/// `kid` names, else every configured key of the algorithm's family.
fn keys_for(s: &Settings, header: &jsonwebtoken::Header) -> Vec<DecodingKey> {
    use Algorithm::*;
    if let (Some(jwks), Some(kid)) = (&s.jwks, &header.kid) {
        return jwks
            .find(kid)
            .and_then(|jwk| DecodingKey::from_jwk(jwk).ok())
            .into_iter()
            .collect();
    }
    let family = |a: Algorithm| match a {
        HS256 | HS384 | HS512 => 0,
        RS256 | RS384 | RS512 | PS256 | PS384 | PS512 => 1,
        ES256 | ES384 => 2,
        EdDSA => 3,
        _ => 4,
    };
    if family(header.alg) == 0 {
        return s.secret.clone().into_iter().collect();
    }
    let configured = s
        .public
        .iter()
        .filter(|(a, _)| family(*a) == family(header.alg))
        .map(|(_, k)| k.clone());
    let from_jwks = s
        .jwks
        .iter()
        .flat_map(|set| set.keys.iter())
        .filter_map(|jwk| DecodingKey::from_jwk(jwk).ok());
    configured.chain(from_jwks).collect()
}

fn check_jwt(
    s: &Settings,
    token: &str,
) -> Result<serde_json::Map<String, serde_json::Value>, (&'static str, String)> {
    let header = decode_header(token)
        .map_err(|_| ("jwt-malformed", "the token is malformed".to_string()))?;
    // RFC 7515 §4.1.11: a token naming extensions the receiver must
    // understand is rejected unless it understands them all; this filter
    // understands none (and an empty list is itself invalid).
    if let Some(crit) = &header.crit {
        let named: Vec<&str> = crit.iter().map(|c| c.as_str()).take(4).collect();
        return Err((
            "jwt-crit",
            format!("the token requires extensions this host does not support: {named:?}"),
        ));
    }
    if !s.algorithms.contains(&header.alg) {
        return Err((
            "jwt-algorithm",
            format!("algorithm {:?} is not accepted", header.alg),
        ));
    }
    let keys = keys_for(s, &header);
    if keys.is_empty() {
        return Err(("jwt-unknown-key", "no key verifies this token".to_string()));
    }
    let mut validation = Validation::new(header.alg);
    validation.algorithms = vec![header.alg];
    validation.leeway = s.leeway;
    validation.validate_nbf = true;
    if s.issuer.is_empty() {
        validation.iss = None;
    } else {
        validation.set_issuer(&s.issuer);
    }
    if s.audience.is_empty() {
        validation.validate_aud = false;
    } else {
        validation.set_audience(&s.audience);
    }
    use jsonwebtoken::errors::ErrorKind as K;
    let mut result = Err(jsonwebtoken::errors::ErrorKind::InvalidSignature.into());
    for key in &keys {
        result = decode::<serde_json::Map<String, serde_json::Value>>(token, key, &validation);
        let wrong_key = matches!(&result, Err(e) if matches!(e.kind(), K::InvalidSignature | K::InvalidKeyFormat));
        if !wrong_key {
            break;
        }
    }
    result
        .map(|data| data.claims)
        .map_err(|e: jsonwebtoken::errors::Error| match e.kind() {
            K::ExpiredSignature => ("jwt-expired", "the token has expired".into()),
            K::ImmatureSignature => ("jwt-not-yet-valid", "the token is not valid yet".into()),
            K::InvalidIssuer => ("jwt-issuer", "the token's issuer is not accepted".into()),
            K::InvalidAudience => (
                "jwt-audience",
                "the token's audience is not accepted".into(),
            ),
            K::InvalidSignature => (
                "jwt-signature",
                "the token's signature does not verify".into(),
            ),
            K::MissingRequiredClaim(c) => ("jwt-claims", format!("the token lacks `{c}`")),
            _ => ("jwt-invalid", "the token is invalid".into()),
        })
}

/// Compares without an early exit on the first differing byte.
fn same(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn claim_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(items) => {
            items.iter().map(claim_text).collect::<Vec<_>>().join(" ")
        }
        other => other.to_string(),
    }
}

struct Auth;

impl wharf_guest::filter::Guest for Auth {
    fn phases() -> Phases {
        Phases::REQUEST_HEADERS
    }

    fn on_request_headers(head: Vec<u8>, headers: Vec<u8>) -> Verdict {
        let agent = Head::decode(&head).map(|h| h.agent).unwrap_or_default();
        let s = settings(&agent);
        let pairs = header_pairs(&headers).unwrap_or_default();
        let find = |name: &str| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| *v);
        if !s.api_keys.is_empty()
            && let Some(presented) = find(&s.api_key_header)
        {
            let digest: [u8; 32] = Sha256::digest(presented).into();
            return match s.api_keys.iter().find(|(_, d)| same(d, &digest)) {
                Some((name, _)) => {
                    let v = Verdict::allow()
                        .meta("auth.method", "api-key")
                        .meta("auth.key", name);
                    if s.keep {
                        v
                    } else {
                        v.remove_request_header(&s.api_key_header)
                    }
                }
                None => refuse(&s, "api-key-invalid", "the API key is not valid", false),
            };
        }
        let Some(authorization) = find("authorization") else {
            return refuse(&s, "auth-missing", "credentials are required", false);
        };
        let text = String::from_utf8_lossy(authorization);
        let Some(token) = text
            .strip_prefix("Bearer ")
            .or_else(|| text.strip_prefix("bearer "))
            .map(str::trim)
        else {
            return refuse(&s, "auth-scheme", "use a Bearer token", false);
        };
        match check_jwt(&s, token) {
            Ok(claims) => {
                let mut v = Verdict::allow().meta("auth.method", "jwt");
                for name in &s.claims {
                    if let Some(value) = claims.get(name) {
                        let mut text = claim_text(value);
                        text.truncate(1024);
                        v = v.meta(&format!("auth.{}", name.to_ascii_lowercase()), &text);
                    }
                }
                if s.keep {
                    v
                } else {
                    v.remove_request_header("authorization")
                }
            }
            Err((rule, why)) => refuse(&s, rule, &why, true),
        }
    }

    fn on_request_body(_: Vec<u8>, _: Vec<u8>, _: Vec<u8>) -> Verdict {
        Verdict::allow()
    }

    fn on_response_headers(_: Vec<u8>, _: Vec<u8>, _: u16, _: Vec<u8>) -> Verdict {
        Verdict::allow()
    }

    fn on_response_body(_: Vec<u8>, _: Vec<u8>, _: u16, _: Vec<u8>, _: Vec<u8>) -> Verdict {
        Verdict::allow()
    }
}

wharf_guest::export_filter!(Auth);
