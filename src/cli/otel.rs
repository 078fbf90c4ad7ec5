//! The span export options group (`--otel`): the OTel SDK's own
//! environment variables turn it on and point it; these flags win over
//! them. Resolved with that environment in `Settings::resolve`, once.

use std::time::Duration;

use clap::builder::BoolishValueParser;
use clap::{Args, ValueEnum};

use crate::units;

/// on or off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum OtelMode {
    Off,
    On,
}

/// OpenTelemetry options.
#[derive(Args, Debug)]
pub(crate) struct OtelArgs {
    /// Send OpenTelemetry spans (OTLP/HTTP protobuf, `http://` only): one per call, and one per MCP
    /// request under the session layer. Set up by the OTel SDK variables
    /// (OTEL_EXPORTER_OTLP_ENDPOINT and the rest; see OPENTELEMETRY in the man page) [default: on
    /// when an endpoint is set; off when OTEL_SDK_DISABLED=true].
    #[arg(
        long,
        value_name = "MODE",
        env = "MCP_BOUND_OTEL",
        value_enum,
        help_heading = "OpenTelemetry options"
    )]
    pub otel: Option<OtelMode>,

    /// Most time the exit waits for the last spans to reach the collector, after the record and the
    /// journal are written [default: OTEL_BSP_EXPORT_TIMEOUT, else 1s].
    #[arg(long, value_name = "DURATION", env = "MCP_BOUND_OTEL_FLUSH_TIMEOUT", value_parser = units::parse_duration, help_heading = "OpenTelemetry options")]
    pub otel_flush_timeout: Option<Duration>,

    /// Rewrite each request's `params._meta.traceparent` to mcp-bound's request span, so that an
    /// instrumented server's spans are its children (the bytes forwarded change: off by default;
    /// the journal's params_sha256 stays the client's).
    #[arg(long, env = "MCP_BOUND_OTEL_PROPAGATE", value_parser = BoolishValueParser::new(), default_value_t = false, num_args = 0, default_missing_value = "true", help_heading = "OpenTelemetry options")]
    pub otel_propagate: bool,
}
