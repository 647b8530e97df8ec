//! A filter's declared effects (the `filter-effects` world): calling its
//! `effects` export once at load time and checking what it declared into
//! [`Effects`], which the filter chain applies without calling the guest.
//! A declaration that breaks the contract refuses the filter's load.

use http::{HeaderName, HeaderValue};

use super::bindings::{FilterEffectsPre, GuestCors, GuestEffects, GuestHeaderLimits, GuestVerdict};
use super::call::{CallError, LOAD_DEADLINE, classify, new_store, watched};
use super::convert::host_owned;
use super::filter::{FilterImage, clip, phases_from_guest, verdict_from_guest};
use wharf_core::effects::{Cors, Effects, HeaderLimits, Refusal};
use wharf_core::verdict::{Decision, Phase};

/// The export a filter that declares effects provides.
const EFFECTS: &str = "effects";

/// Most default response headers a declaration may carry (as many as one
/// verdict's header operations): the host, not the guest's deadline, pays
/// for each on every response.
const MAX_DEFAULTS: usize = 256;

/// Most CORS origins a declaration may list: each request with an
/// `origin` is compared with every one, on the host.
const MAX_ORIGINS: usize = 1024;

impl FilterImage {
    /// Calls the filter's `effects` export on a new instance, when it has
    /// one, and checks the answer. `Ok(None)`: it declares nothing.
    pub fn declared_effects(&self) -> Result<Option<Effects>, String> {
        let instance_pre = self.pre.instance_pre();
        if instance_pre
            .component()
            .get_export_index(None, EFFECTS)
            .is_none()
        {
            return Ok(None);
        }
        let pre = FilterEffectsPre::new(instance_pre.clone())
            .map_err(|e| format!("its `effects` export is not `func() -> effects`: {e:#}"))?;
        let mut limits = self.limits;
        limits.deadline = limits.deadline.max(LOAD_DEADLINE);
        let mut store = new_store(&self.engine, &self.identity, &limits, false);
        let declared = watched(limits.deadline, move || {
            let exports = pre
                .instantiate(&mut store)
                .map_err(|e| classify(&store, e))?;
            exports
                .call_effects(&mut store)
                .map_err(|e| classify(&store, e))
        })
        .map_err(|e: CallError| format!("effects() failed: {e}"))?;
        effects_from_guest(declared, self.limits.response_body).map(Some)
    }
}

/// Checks a guest's declaration.
fn effects_from_guest(fx: GuestEffects, max_body: usize) -> Result<Effects, String> {
    let header_limits = fx.header_limits.map(|l| limits(l, max_body)).transpose()?;
    let cors = fx.cors.map(|c| cors(c, max_body)).transpose()?;
    if fx.response_defaults.len() > MAX_DEFAULTS {
        return Err(format!(
            "{} default response headers, more than {MAX_DEFAULTS}",
            fx.response_defaults.len()
        ));
    }
    let response_defaults = fx
        .response_defaults
        .into_iter()
        .map(|(name, value)| {
            let name = header_name(&name)?;
            let value = HeaderValue::from_bytes(&value)
                .map_err(|_| format!("the value of default header `{name}` is not valid"))?;
            Ok((name, value))
        })
        .collect::<Result<_, String>>()?;
    Ok(Effects {
        phases: phases_from_guest(fx.phases),
        header_limits,
        cors,
        response_defaults,
    })
}

fn limits(l: GuestHeaderLimits, max_body: usize) -> Result<HeaderLimits, String> {
    Ok(HeaderLimits {
        max_count: l.max_count as usize,
        too_many: refusal(l.too_many, max_body, "too-many")?,
        max_bytes: l.max_bytes as usize,
        too_large: refusal(l.too_large, max_body, "too-large")?,
    })
}

fn cors(c: GuestCors, max_body: usize) -> Result<Cors, String> {
    let value = |what: &str, text: &str| {
        HeaderValue::from_str(text)
            .map_err(|_| format!("cors {what} `{}` is not a valid header value", clip(text)))
    };
    if c.origins.len() > MAX_ORIGINS {
        return Err(format!(
            "{} cors origins, more than {MAX_ORIGINS}",
            c.origins.len()
        ));
    }
    let any = c.origins.iter().any(|o| o == "*");
    Ok(Cors {
        methods: value("methods", &c.methods)?,
        headers: c
            .headers
            .as_deref()
            .map(|h| value("headers", h))
            .transpose()?,
        max_age: value("max-age", &c.max_age)?,
        credentials: c.credentials,
        refused: refusal(c.refused, max_body, "refused")?,
        origins: if any { Vec::new() } else { c.origins },
        any,
    })
}

/// A declared answer: a `block` verdict with an audit and nothing else.
fn refusal(v: GuestVerdict, max_body: usize, what: &str) -> Result<Refusal, String> {
    let v = verdict_from_guest(v, Phase::RequestHeaders, max_body)
        .map_err(|e| format!("its `{what}` answer: {e}"))?;
    let plain = v.request_ops.is_empty()
        && v.response_ops.is_empty()
        && v.metadata.is_empty()
        && !v.want_body;
    match v.decision {
        Decision::Block(resp) if plain => Ok(Refusal {
            status: resp.status,
            headers: resp.headers,
            body: resp.body,
            audit: v.audit,
        }),
        _ => Err(format!(
            "its `{what}` answer is not a block with nothing but an audit"
        )),
    }
}

fn header_name(name: &str) -> Result<HeaderName, String> {
    let parsed = HeaderName::from_bytes(name.as_bytes())
        .ok()
        .filter(|n| n.as_str() == name)
        .ok_or_else(|| format!("`{}` is not a lower-case header name", clip(name)))?;
    if host_owned(&parsed) {
        return Err(format!("header `{parsed}` is owned by the host"));
    }
    Ok(parsed)
}
