//! Trace export: the OpenTelemetry tracer a `telemetry` block asks for,
//! sampling new traces at its ratio, sending finished spans in batches
//! over OTLP/gRPC from a task of the server's runtime, and flushing what
//! is left when the server stops.

use opentelemetry::InstrumentationScope;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::span_processor_with_async_runtime::BatchSpanProcessor;
use opentelemetry_sdk::trace::{Sampler, SdkTracer, SdkTracerProvider};

use crate::config::Telemetry;

/// How long one export may take before it is given up.
const EXPORT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Why traces cannot be exported as configured.
#[derive(Debug, thiserror::Error)]
#[error("cannot export traces to `{endpoint}`: {source}")]
pub struct TelemetryError {
    endpoint: String,
    source: opentelemetry_otlp::ExporterBuildError,
}

/// The exporting tracer; flushed by [`Tracing::shutdown`], or in the
/// background when dropped.
pub struct Tracing {
    provider: Option<SdkTracerProvider>,
    tracer: SdkTracer,
}

impl Tracing {
    /// The tracer for `settings`. Call it inside the server's runtime:
    /// exports run as its tasks. The receiver is reached lazily, so one
    /// that is down loses spans (each failed export, and the first span
    /// dropped, are logged), not the start.
    pub fn start(settings: &Telemetry) -> Result<Tracing, TelemetryError> {
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(settings.endpoint.clone())
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|source| TelemetryError {
                endpoint: settings.endpoint.clone(),
                source,
            })?;
        let batches =
            BatchSpanProcessor::builder(exporter, opentelemetry_sdk::runtime::Tokio).build();
        let sampler = Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(settings.sampling)));
        let provider = SdkTracerProvider::builder()
            .with_span_processor(batches)
            .with_sampler(sampler)
            .with_resource(
                Resource::builder()
                    .with_service_name(settings.service.clone())
                    .build(),
            )
            .build();
        let scope = InstrumentationScope::builder("wharf")
            .with_version(crate::VERSION)
            .build();
        let tracer = provider.tracer_with_scope(scope);
        Ok(Tracing {
            provider: Some(provider),
            tracer,
        })
    }

    /// The tracer every stage starts its spans with.
    pub fn tracer(&self) -> &SdkTracer {
        &self.tracer
    }

    /// Sends the spans still waiting and stops exporting. The SDK waits
    /// for its export on a blocking thread, so the runtime stays free to
    /// run it.
    pub async fn shutdown(mut self) {
        let Some(provider) = self.provider.take() else {
            return;
        };
        let done = tokio::task::spawn_blocking(move || provider.shutdown()).await;
        if let Ok(Err(err)) = done {
            tracing::warn!(error = %err, "the last traces were not all sent");
        }
    }
}

impl Drop for Tracing {
    /// Dropped without [`Tracing::shutdown`] (a server that never
    /// served): the SDK's own shutdown blocks until the runtime runs its
    /// export, so it runs on a blocking thread, never on a runtime worker.
    fn drop(&mut self) {
        if let Some(provider) = self.provider.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn_blocking(move || provider.shutdown());
        }
    }
}
