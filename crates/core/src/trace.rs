//! A request's place in an OpenTelemetry trace: the context every stage
//! starts its span under, the W3C `traceparent` read from a request's
//! headers and written into the headers of what the host sends on, and a
//! span that ends when dropped. A request carries a [`Trace`] only when
//! the host exports traces; with tracing off every stage sees `None` and
//! does nothing.

use std::borrow::Cow;

use http::{HeaderMap, HeaderName, HeaderValue};
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::{SpanBuilder, SpanKind, Status, TraceContextExt, Tracer as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::propagation::TraceContextPropagator;

pub use opentelemetry::KeyValue as Attribute;
pub use opentelemetry::trace::SpanKind as Kind;
pub use opentelemetry_sdk::trace::SdkTracer as Tracer;

/// Where new spans start: the tracer and the span they are children of.
#[derive(Clone)]
pub struct Trace {
    tracer: Tracer,
    cx: Context,
}

impl std::fmt::Debug for Trace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let span = self.cx.span();
        let sc = span.span_context();
        write!(f, "Trace({}-{})", sc.trace_id(), sc.span_id())
    }
}

impl Trace {
    /// The span of a request that comes from outside the host: a child of
    /// the caller's span when `headers` carry a valid W3C `traceparent`
    /// (and its `tracestate`), else the root of a new trace.
    pub fn enter(
        tracer: &Tracer,
        name: &'static str,
        headers: &HeaderMap,
        attributes: Vec<KeyValue>,
    ) -> Span {
        let parent = TraceContextPropagator::new().extract(&Headers(headers));
        let builder = SpanBuilder::from_name(name)
            .with_kind(SpanKind::Server)
            .with_attributes(attributes);
        let span = tracer.build_with_context(builder, &parent);
        Span(Trace {
            tracer: tracer.clone(),
            cx: parent.with_span(span),
        })
    }

    /// A span under this one, started now. Its attributes are made only
    /// when it is kept: under a span that was not sampled, it is not
    /// either.
    pub fn child(
        &self,
        name: impl Into<Cow<'static, str>>,
        kind: SpanKind,
        attributes: impl FnOnce() -> Vec<KeyValue>,
    ) -> Span {
        let mut builder = SpanBuilder::from_name(name).with_kind(kind);
        if self.cx.span().span_context().is_sampled() {
            builder = builder.with_attributes(attributes());
        }
        let span = self.tracer.build_with_context(builder, &self.cx);
        Span(Trace {
            tracer: self.tracer.clone(),
            cx: self.cx.with_span(span),
        })
    }

    /// Writes this span's `traceparent` (and `tracestate`, when it has
    /// one) into `headers`, replacing what was there: whoever receives
    /// them continues the trace under this span.
    pub fn inject(&self, headers: &mut HeaderMap) {
        headers.remove(TRACESTATE);
        TraceContextPropagator::new().inject_context(&self.cx, &mut HeadersMut(headers));
    }

    /// The trace id, lowercase hex.
    pub fn trace_id(&self) -> String {
        self.cx.span().span_context().trace_id().to_string()
    }

    /// The trace and span ids as a `traceparent` would carry them
    /// (`TRACE-SPAN`, lowercase hex), for logs.
    pub fn ids(&self) -> String {
        let span = self.cx.span();
        let sc = span.span_context();
        format!("{}-{}", sc.trace_id(), sc.span_id())
    }
}

const TRACESTATE: HeaderName = HeaderName::from_static("tracestate");

/// A span that ends when it is dropped (or at [`Span::end`]); the
/// [`Trace`] its children start under.
pub struct Span(Trace);

impl Span {
    /// Where this span's children start.
    pub fn trace(&self) -> &Trace {
        &self.0
    }

    /// Adds `attribute` to the span.
    pub fn set(&self, attribute: KeyValue) {
        self.0.cx.span().set_attribute(attribute);
    }

    /// Records the HTTP status it answered with; a 5xx marks the span an
    /// error (a 4xx is the client's, not this span's).
    pub fn status(&self, status: u16) {
        let span = self.0.cx.span();
        span.set_attribute(KeyValue::new(
            "http.response.status_code",
            i64::from(status),
        ));
        if status >= 500 {
            span.set_status(Status::error(format!("answered {status}")));
        }
    }

    /// Marks the span failed, saying why.
    pub fn fail(&self, why: impl Into<Cow<'static, str>>) {
        self.0.cx.span().set_status(Status::error(why));
    }

    /// Ends the span now.
    pub fn end(self) {}
}

impl Drop for Span {
    fn drop(&mut self) {
        self.0.cx.span().end();
    }
}

impl std::fmt::Debug for Span {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// A span under `trace` when there is one: nothing at all with tracing off.
pub fn child(
    trace: Option<&Trace>,
    name: &'static str,
    kind: SpanKind,
    attributes: impl FnOnce() -> Vec<KeyValue>,
) -> Option<Span> {
    trace.map(|t| t.child(name, kind, attributes))
}

struct Headers<'a>(&'a HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(HeaderName::as_str).collect()
    }
}

struct HeadersMut<'a>(&'a mut HeaderMap);

impl Injector for HeadersMut<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(key.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            self.0.insert(name, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_sdk::trace::SdkTracerProvider;

    fn tracer() -> Tracer {
        SdkTracerProvider::builder().build().tracer("test")
    }

    #[test]
    fn a_valid_traceparent_is_continued_and_a_malformed_one_starts_a_new_trace() {
        let tracer = tracer();
        let mut headers = HeaderMap::new();
        let parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        headers.insert("traceparent", HeaderValue::from_static(parent));
        let span = Trace::enter(&tracer, "t", &headers, Vec::new());
        assert!(
            span.trace()
                .ids()
                .starts_with("0af7651916cd43dd8448eb211c80319c-")
        );
        assert!(!span.trace().ids().ends_with("b7ad6b7169203331"));

        let mut out = HeaderMap::new();
        span.trace().inject(&mut out);
        let sent = out["traceparent"].to_str().unwrap();
        assert_eq!(sent, format!("00-{}-01", span.trace().ids()));

        for bad in [
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "junk",
        ] {
            headers.insert("traceparent", HeaderValue::from_static(bad));
            let span = Trace::enter(&tracer, "t", &headers, Vec::new());
            assert!(!span.trace().ids().starts_with("0af7651916cd43dd"), "{bad}");
        }
    }

    #[test]
    fn a_span_not_kept_makes_no_attributes_and_still_propagates() {
        let tracer = SdkTracerProvider::builder()
            .with_sampler(opentelemetry_sdk::trace::Sampler::AlwaysOff)
            .build()
            .tracer("test");
        let root = Trace::enter(&tracer, "t", &HeaderMap::new(), Vec::new());
        let made = std::cell::Cell::new(false);
        let child = root.trace().child("c", SpanKind::Internal, || {
            made.set(true);
            Vec::new()
        });
        assert!(!made.get(), "attributes were made for a span not kept");
        let mut out = HeaderMap::new();
        child.trace().inject(&mut out);
        let sent = out["traceparent"].to_str().unwrap();
        assert!(
            sent.ends_with("-00") && sent.contains(&root.trace().trace_id()),
            "{sent}"
        );
    }
}
