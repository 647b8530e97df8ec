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
//! - `cache`: verified tokens an instance remembers (default 1024; `0`:
//!   none), see [`Verified`]; unless `0`, the host is also asked to give a
//!   verified credential's allow again without a call (`remember-verdict`)

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode, decode_header};
use sha2::{Digest, Sha256};
use wharf_guest::filter::{Phases, Verdict, remember_verdict};
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
    /// Tokens this instance verified for this route.
    verified: RefCell<Verified>,
}

/// The longest a verified token is remembered, whatever its `exp`.
const MAX_REMEMBER_SECS: u64 = 300;

/// Tokens verified, so that a token presented again costs a lookup
/// instead of a signature check. Keyed by the token itself, as Envoy's
/// `jwt_authn` cache is: a lookup hashes it with the standard map's keyed
/// SipHash and compares the bytes, about a fifth of what its SHA-256 cost
/// in the guest, and no digest can stand for a token it is not. Tokens
/// over [`MAX_REMEMBERED_TOKEN`] bytes are checked every time. An entry
/// holds the metadata the token's claims gave and is used only before
/// its `exp` and at most [`MAX_REMEMBER_SECS`] after it was
/// verified. At most `capacity` entries: a full cache drops expired ones,
/// then the one expiring soonest. Only tokens that verified are kept, so
/// only an issuer's signed tokens can fill it. The cache lives in the
/// instance: a configuration change (a key revoked, an issuer no longer
/// accepted) starts new instances, with empty caches.
struct Verified {
    capacity: usize,
    entries: HashMap<Box<str>, Remembered>,
}

/// The longest token remembered: the cache holds at most `capacity`
/// times this.
const MAX_REMEMBERED_TOKEN: usize = 4096;

struct Remembered {
    /// Seconds since the epoch after which the entry is not used.
    until: u64,
    metadata: Metadata,
}

/// The metadata a verified token's claims give, shared by its uses.
type Metadata = Rc<[(String, String)]>;

/// Until when a token verified at `now` may be used without a check: its
/// `exp`, and at most [`MAX_REMEMBER_SECS`].
fn remember_until(exp: Option<u64>, now: u64) -> u64 {
    exp.unwrap_or(u64::MAX).min(now + MAX_REMEMBER_SECS)
}

/// Asks the host to give this allow again, without a call, to requests
/// presenting the same credential until `until`: it depends on nothing
/// else (the credential's header values, and the config, whose change
/// empties the host's memory). Not with `cache "0"`.
fn remember(s: &Settings, until: u64) {
    if s.verified.borrow().capacity == 0 {
        return;
    }
    let asked = if s.api_keys.is_empty() {
        remember_verdict(&["authorization"], until)
    } else {
        remember_verdict(&[s.api_key_header.as_str(), "authorization"], until)
    };
    if let Err(e) = asked {
        log(
            Level::Warn,
            &format!("auth: the host keeps no verdict: {e}"),
        );
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Verified {
    fn new(capacity: usize) -> Verified {
        Verified {
            capacity,
            entries: HashMap::new(),
        }
    }

    /// The metadata of a token verified before and not yet expired, and
    /// until when it may be used.
    fn get(&mut self, token: &str, now: u64) -> Option<(Metadata, u64)> {
        let entry = self.entries.get(token)?;
        if now < entry.until {
            return Some((entry.metadata.clone(), entry.until));
        }
        self.entries.remove(token);
        None
    }

    /// Remembers a verified token until `until` ([`remember_until`]).
    fn put(&mut self, token: &str, until: u64, now: u64, metadata: Metadata) {
        if self.capacity == 0 || until <= now || token.len() > MAX_REMEMBERED_TOKEN {
            return;
        }
        if self.entries.len() >= self.capacity {
            self.entries.retain(|_, e| e.until > now);
        }
        if self.entries.len() >= self.capacity
            && let Some(soonest) = self
                .entries
                .iter()
                .min_by_key(|(_, e)| e.until)
                .map(|(k, _)| k.clone())
        {
            self.entries.remove(&soonest);
        }
        self.entries
            .insert(token.into(), Remembered { until, metadata });
    }
}

thread_local! {
    static SETTINGS: RefCell<HashMap<String, Rc<Settings>>> = RefCell::new(HashMap::new());
}

const KEYS: [&str; 13] = [
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
    "cache",
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
        verified: RefCell::new(Verified::new(match get("cache") {
            "" => 1024,
            n => n
                .parse()
                .map_err(|_| format!("`cache` must be a number of tokens, not `{n}`"))?,
        })),
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

/// The metadata a verified token's claims give (`auth.sub`, …).
fn claim_metadata(s: &Settings, claims: &serde_json::Map<String, serde_json::Value>) -> Metadata {
    s.claims
        .iter()
        .filter_map(|name| {
            let mut text = claim_text(claims.get(name)?);
            text.truncate(text.floor_char_boundary(1024));
            Some((format!("auth.{}", name.to_ascii_lowercase()), text))
        })
        .collect()
}

struct Auth;

impl wharf_guest::filter::Guest for Auth {
    fn phases() -> Phases {
        Phases::REQUEST_HEADERS
    }

    fn on_request_headers(head: Vec<u8>, headers: Vec<u8>) -> Verdict {
        let s = settings(Head::field(&head, "agent").unwrap_or_default());
        let pairs = header_pairs(&headers).unwrap_or_default();
        let find = |name: &str| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| *v);
        if !s.api_keys.is_empty()
            && let Some(presented) = find(&s.api_key_header)
        {
            let digest: [u8; 32] = Sha256::digest(presented).into();
            return match s.api_keys.iter().find(|(_, d)| same(d, &digest)) {
                Some((name, _)) => {
                    remember(&s, remember_until(None, now_secs()));
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
        let now = now_secs();
        let remembered = s.verified.borrow_mut().get(token, now);
        let (metadata, until) = match remembered {
            Some(kept) => kept,
            None => match check_jwt(&s, token) {
                Ok(claims) => {
                    let metadata = claim_metadata(&s, &claims);
                    // Whole seconds, or a fractional `exp` rounded down.
                    let exp = claims
                        .get("exp")
                        .and_then(|e| e.as_u64().or_else(|| e.as_f64().map(|f| f.max(0.0) as u64)));
                    let until = remember_until(exp, now);
                    s.verified
                        .borrow_mut()
                        .put(token, until, now, metadata.clone());
                    (metadata, until)
                }
                Err((rule, why)) => return refuse(&s, rule, &why, true),
            },
        };
        remember(&s, until);
        let mut v = Verdict::allow().meta("auth.method", "jwt");
        for (name, value) in metadata.iter() {
            v = v.meta(name, value);
        }
        if s.keep {
            v
        } else {
            v.remove_request_header("authorization")
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
