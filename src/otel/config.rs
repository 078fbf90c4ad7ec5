//! What span export runs under, resolved once from `--otel`, its flags and
//! the OpenTelemetry SDK's environment variables, as every OTel SDK reads
//! them. Pure: the environment is handed in as a lookup.
//!
//! The rule for a setting that cannot be used (an `https://` endpoint, a
//! `grpc` protocol, a header without `=`): with `--otel on` on the command
//! line it is a usage error; from the environment, which hosts share with
//! their own telemetry, export is off and the record says why. Header
//! values are never quoted back: they hold API keys.

use std::time::Duration;

/// Where the spans go: an `http://` URL taken apart.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Endpoint {
    /// As written in the URL (brackets kept for IPv6), for `Host:`.
    pub host: String,
    pub port: u16,
    /// The path and query, at least `/`.
    pub path: String,
}

impl Endpoint {
    /// The URL as the record may show it.
    pub(crate) fn url(&self) -> String {
        format!("http://{}:{}{}", self.host, self.port, self.path)
    }
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.url())
    }
}

/// Export on: everything the exporter needs.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct OtelConfig {
    pub endpoint: Endpoint,
    /// Sent with each export; never printed (Debug shows the names only).
    pub headers: Vec<(String, String)>,
    /// The resource's attributes, `service.name` first.
    pub resource: Vec<(String, String)>,
    /// How long the exit waits for the last export.
    pub flush_timeout: Duration,
    /// How long one export may take (connect, send, answer).
    pub export_timeout: Duration,
    /// Finished spans waiting for the exporter; past it they are dropped.
    pub max_queue: usize,
    pub max_batch: usize,
    /// How long a finished span may wait before its batch is sent.
    pub schedule_delay: Duration,
    /// --otel-propagate: our request span's context goes to the server.
    pub propagate: bool,
    /// TRACEPARENT and TRACESTATE (the OTel environment carrier): the
    /// call's span is then their child, as sent (checked when used).
    pub parent: Option<(String, Option<String>)>,
    /// `mcp.client.operation.duration`, when metrics go too.
    pub metrics: Option<MetricsConfig>,
}

/// Where the one metric goes, and how often.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct MetricsConfig {
    pub endpoint: Endpoint,
    /// Never printed.
    pub headers: Vec<(String, String)>,
    /// OTEL_METRIC_EXPORT_INTERVAL: cumulative points this often (and at
    /// the end).
    pub interval: Duration,
}

impl std::fmt::Debug for MetricsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsConfig")
            .field("endpoint", &self.endpoint)
            .field("interval", &self.interval)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for OtelConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("OtelConfig")
            .field("endpoint", &self.endpoint)
            .field("headers", &names)
            .field("resource", &self.resource)
            .field("flush_timeout", &self.flush_timeout)
            .finish_non_exhaustive()
    }
}

/// What export does this run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) enum Resolved {
    /// Nothing asked for it (or it was turned off): nothing is started.
    #[default]
    Off,
    On(Box<OtelConfig>),
    /// Asked for by the environment, but not usable: off, and the record
    /// says why.
    Unusable(String),
}

/// What the command line said.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Flags {
    /// --otel: Some(true) on, Some(false) off.
    pub otel: Option<bool>,
    /// Whether --otel on came from the command line itself (a refusal is
    /// then a usage error).
    pub explicit: bool,
    pub flush_timeout: Option<Duration>,
    pub propagate: bool,
}

/// The default flush bound when neither --otel-flush-timeout nor
/// OTEL_BSP_EXPORT_TIMEOUT says.
pub(super) const DEFAULT_FLUSH: Duration = Duration::from_secs(1);

/// Resolve export. Err: a usage error (only with `--otel on` given on the
/// command line).
pub(crate) fn resolve(
    flags: Flags,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Resolved, String> {
    let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let wanted = match flags.otel {
        Some(false) => return Ok(Resolved::Off),
        Some(true) => true,
        None => {
            let disabled =
                var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
            let none = var("OTEL_TRACES_EXPORTER")
                .is_some_and(|v| v.split(',').any(|e| e.trim() == "none"));
            let endpoint = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some()
                || var("OTEL_EXPORTER_OTLP_ENDPOINT").is_some();
            !disabled && !none && endpoint
        }
    };
    if !wanted {
        return Ok(Resolved::Off);
    }
    match config(flags, &var) {
        Ok(config) => Ok(Resolved::On(Box::new(config))),
        Err(why) if flags.explicit => Err(format!("--otel on: {why}")),
        Err(why) => Ok(Resolved::Unusable(why)),
    }
}

fn config(flags: Flags, var: &dyn Fn(&str) -> Option<String>) -> Result<OtelConfig, String> {
    if let Some(exporters) = var("OTEL_TRACES_EXPORTER")
        && !exporters.split(',').any(|e| e.trim() == "otlp")
    {
        return Err(format!(
            "OTEL_TRACES_EXPORTER={}: only otlp is supported",
            exporters.trim()
        ));
    }
    let protocol = var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        .map(|p| ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", p))
        .or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL").map(|p| ("OTEL_EXPORTER_OTLP_PROTOCOL", p)));
    if let Some((name, protocol)) = protocol
        && protocol.trim() != "http/protobuf"
    {
        return Err(format!(
            "{name}={}: only http/protobuf is supported (set OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf and the Collector's port 4318)",
            protocol.trim()
        ));
    }
    let endpoint = match var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
        Some(url) => endpoint(url.trim(), "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", None)?,
        None => match var("OTEL_EXPORTER_OTLP_ENDPOINT") {
            Some(url) => endpoint(url.trim(), "OTEL_EXPORTER_OTLP_ENDPOINT", Some("v1/traces"))?,
            None => Endpoint {
                host: "localhost".into(),
                port: 4318,
                path: "/v1/traces".into(),
            },
        },
    };
    let general = pairs(
        var("OTEL_EXPORTER_OTLP_HEADERS"),
        "OTEL_EXPORTER_OTLP_HEADERS",
    )?;
    let headers = signal_headers(&general, var, "OTEL_EXPORTER_OTLP_TRACES_HEADERS")?;
    // --otel on with no endpoint at all: metrics go to the default too.
    let endpoint_default = (var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_none()
        && var("OTEL_EXPORTER_OTLP_ENDPOINT").is_none())
    .then(|| endpoint.clone());
    for (key, _) in &headers {
        if key.is_empty()
            || !key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
        {
            return Err("OTEL_EXPORTER_OTLP_HEADERS: a header name is not a token".into());
        }
    }
    let mut resource = pairs(var("OTEL_RESOURCE_ATTRIBUTES"), "OTEL_RESOURCE_ATTRIBUTES")?;
    let service = var("OTEL_SERVICE_NAME")
        .map(|s| s.trim().to_string())
        .or_else(|| {
            resource
                .iter()
                .find(|(k, _)| k == "service.name")
                .map(|(_, v)| v.clone())
        })
        .unwrap_or_else(|| "mcp-bound".into());
    resource.retain(|(k, _)| k != "service.name");
    resource.insert(0, ("service.name".into(), service));
    let ms = |name: &str, default: u64| millis(var, name, default);
    let count =
        |name: &str, default: u64| positive(var, name, default).map(|n| n.min(1 << 20) as usize);
    let export_timeout = match var("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT") {
        Some(_) => ms("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", 10_000)?,
        None => ms("OTEL_EXPORTER_OTLP_TIMEOUT", 10_000)?,
    };
    let flush_timeout = match flags.flush_timeout {
        Some(timeout) => timeout,
        None => match var("OTEL_BSP_EXPORT_TIMEOUT") {
            Some(_) => ms("OTEL_BSP_EXPORT_TIMEOUT", 0)?,
            None => DEFAULT_FLUSH,
        },
    };
    let max_queue = count("OTEL_BSP_MAX_QUEUE_SIZE", 2048)?;
    Ok(OtelConfig {
        endpoint,
        headers,
        resource,
        flush_timeout,
        export_timeout: export_timeout.max(Duration::from_millis(1)),
        max_queue,
        max_batch: count("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512)?.min(max_queue),
        schedule_delay: ms("OTEL_BSP_SCHEDULE_DELAY", 5000)?,
        propagate: flags.propagate,
        parent: var("TRACEPARENT").map(|tp| (tp.trim().to_string(), var("TRACESTATE"))),
        metrics: metrics(var, &general, &endpoint_default)?,
    })
}

/// A variable in milliseconds, or its default.
fn millis(
    var: &dyn Fn(&str) -> Option<String>,
    name: &str,
    default: u64,
) -> Result<Duration, String> {
    match var(name) {
        None => Ok(Duration::from_millis(default)),
        Some(text) => text
            .trim()
            .parse::<u64>()
            .map(Duration::from_millis)
            .map_err(|_| format!("{name}={}: not a whole number of milliseconds", text.trim())),
    }
}

/// A variable that must be a positive whole number, or its default.
fn positive(var: &dyn Fn(&str) -> Option<String>, name: &str, default: u64) -> Result<u64, String> {
    match var(name) {
        None => Ok(default),
        Some(text) => match text.trim().parse::<u64>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(format!(
                "{name}={}: not a positive whole number",
                text.trim()
            )),
        },
    }
}

/// The headers for one signal: the general ones, its own winning.
fn signal_headers(
    general: &[(String, String)],
    var: &dyn Fn(&str) -> Option<String>,
    name: &str,
) -> Result<Vec<(String, String)>, String> {
    let mut headers = general.to_vec();
    for (key, value) in pairs(var(name), name)? {
        headers.retain(|(k, _)| !k.eq_ignore_ascii_case(&key));
        headers.push((key, value));
    }
    Ok(headers)
}

/// Metrics go where the general endpoint (or their own) says, unless
/// OTEL_METRICS_EXPORTER says none; not with only a traces endpoint.
fn metrics(
    var: &dyn Fn(&str) -> Option<String>,
    general: &[(String, String)],
    default: &Option<Endpoint>,
) -> Result<Option<MetricsConfig>, String> {
    if let Some(exporters) = var("OTEL_METRICS_EXPORTER")
        && !exporters.split(',').any(|e| e.trim() == "otlp")
    {
        return Ok(None);
    }
    if let Some(protocol) = var("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL")
        && protocol.trim() != "http/protobuf"
    {
        return Err(format!(
            "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL={}: only http/protobuf is supported",
            protocol.trim()
        ));
    }
    let endpoint = match var("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") {
        Some(url) => endpoint(url.trim(), "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", None)?,
        None => match var("OTEL_EXPORTER_OTLP_ENDPOINT") {
            Some(url) => endpoint(
                url.trim(),
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                Some("v1/metrics"),
            )?,
            None => match default {
                Some(traces) => Endpoint {
                    path: "/v1/metrics".into(),
                    ..traces.clone()
                },
                None => return Ok(None),
            },
        },
    };
    let interval = Duration::from_millis(positive(var, "OTEL_METRIC_EXPORT_INTERVAL", 60_000)?);
    Ok(Some(MetricsConfig {
        endpoint,
        headers: signal_headers(general, var, "OTEL_EXPORTER_OTLP_METRICS_HEADERS")?,
        interval,
    }))
}

/// An `http://` URL (`join`: the signal's path, appended as the OTLP
/// exporter spec says for the all-signals endpoint).
fn endpoint(url: &str, name: &str, join: Option<&str>) -> Result<Endpoint, String> {
    let rest = match url.split_once("://") {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => rest,
        Some((scheme, _)) if scheme.eq_ignore_ascii_case("https") => {
            return Err(format!(
                "{name}: https:// is not supported (mcp-bound carries no TLS): send to a local Collector over http://, which forwards over TLS"
            ));
        }
        _ => return Err(format!("{name}: not an http:// URL")),
    };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, ""),
    };
    if authority.contains('@') {
        return Err(format!(
            "{name}: credentials in the URL are not supported (use OTEL_EXPORTER_OTLP_HEADERS)"
        ));
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !port.contains(']') => {
            let port = port
                .parse::<u16>()
                .ok()
                .filter(|p| *p > 0)
                .ok_or_else(|| format!("{name}: the port is not a number from 1 to 65535"))?;
            (host, port)
        }
        _ => (authority, 80),
    };
    let ipv6 = host.starts_with('[') && host.ends_with(']') && host.len() > 2;
    let plain = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b));
    if !(ipv6 || plain) || path.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err(format!("{name}: not a valid host and path"));
    }
    let path = match join {
        Some(signal) if path.contains('?') => format!("{path}&{signal}"),
        Some(signal) if path.ends_with('/') => format!("{path}{signal}"),
        Some(signal) => format!("{path}/{signal}"),
        None if path.is_empty() => "/".to_string(),
        None if path.starts_with('?') => format!("/{path}"),
        None => path.to_string(),
    };
    Ok(Endpoint {
        host: host.to_ascii_lowercase(),
        port,
        path,
    })
}

/// `key=value,key2=value2`, values percent-decoded (the W3C Baggage form
/// the OTel SDK variables use). Errors name the variable, never a value.
fn pairs(text: Option<String>, name: &str) -> Result<Vec<(String, String)>, String> {
    let Some(text) = text else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for (n, entry) in text.split(',').enumerate() {
        if entry.trim().is_empty() {
            continue;
        }
        let Some((key, value)) = entry.split_once('=') else {
            return Err(format!("{name}: entry {} has no '='", n + 1));
        };
        let value = percent_decode(value.trim())
            .filter(|v| !v.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0))
            .ok_or_else(|| format!("{name}: the value of entry {} is not valid", n + 1))?;
        out.push((key.trim().to_string(), value));
    }
    Ok(out)
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(vars: &[(&str, &str)], flags: Flags) -> Result<Resolved, String> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        resolve(flags, &move |name| {
            vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        })
    }

    fn on(resolved: Result<Resolved, String>) -> OtelConfig {
        match resolved {
            Ok(Resolved::On(config)) => *config,
            other => panic!("not on: {other:?}"),
        }
    }

    #[test]
    fn off_unless_an_endpoint_or_the_flag_asks() {
        assert_eq!(with(&[], Flags::default()), Ok(Resolved::Off));
        assert_eq!(
            with(&[("OTEL_SERVICE_NAME", "x")], Flags::default()),
            Ok(Resolved::Off)
        );
        let endpoint = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")];
        let config = on(with(&endpoint, Flags::default()));
        assert_eq!(config.endpoint.url(), "http://127.0.0.1:4318/v1/traces");
        assert_eq!(
            config.resource[0],
            ("service.name".into(), "mcp-bound".into())
        );
        assert_eq!(config.flush_timeout, DEFAULT_FLUSH);
        // Disabled the standard ways, and the flag wins over both.
        for off in [
            ("OTEL_SDK_DISABLED", "TRUE"),
            ("OTEL_TRACES_EXPORTER", "none"),
        ] {
            assert_eq!(
                with(&[endpoint[0], off], Flags::default()),
                Ok(Resolved::Off)
            );
            let flags = Flags {
                otel: Some(true),
                explicit: true,
                ..Flags::default()
            };
            if off.0 == "OTEL_SDK_DISABLED" {
                on(with(&[endpoint[0], off], flags));
            }
        }
        let off = Flags {
            otel: Some(false),
            ..Flags::default()
        };
        assert_eq!(with(&endpoint, off), Ok(Resolved::Off));
        // --otel on alone: the spec's default endpoint.
        let flags = Flags {
            otel: Some(true),
            explicit: true,
            ..Flags::default()
        };
        assert_eq!(
            on(with(&[], flags)).endpoint.url(),
            "http://localhost:4318/v1/traces"
        );
    }

    #[test]
    fn endpoints_as_the_otlp_exporter_spec_joins_them() {
        let cases = [
            (
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                "http://Collector:4318/",
                "http://collector:4318/v1/traces",
            ),
            (
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                "http://c/base",
                "http://c:80/base/v1/traces",
            ),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "http://[::1]:9/x",
                "http://[::1]:9/x",
            ),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "http://c:9",
                "http://c:9/",
            ),
        ];
        for (name, url, want) in cases {
            assert_eq!(
                on(with(&[(name, url)], Flags::default())).endpoint.url(),
                want,
                "{url}"
            );
        }
    }

    #[test]
    fn unusable_from_the_environment_refused_on_the_command_line() {
        let bad = [
            (
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "https://api.example.com"),
                "https://",
            ),
            (
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://u:p@c:4318"),
                "credentials",
            ),
            (("OTEL_EXPORTER_OTLP_ENDPOINT", "c:4318"), "not an http://"),
            (("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:99999"), "port"),
            (
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://c d/"),
                "host",
            ),
        ];
        for ((name, value), says) in bad {
            match with(&[(name, value)], Flags::default()) {
                Ok(Resolved::Unusable(why)) => assert!(why.contains(says), "{why}"),
                other => panic!("{value}: {other:?}"),
            }
            let flags = Flags {
                otel: Some(true),
                explicit: true,
                ..Flags::default()
            };
            let err = with(&[(name, value)], flags).unwrap_err();
            assert!(
                err.starts_with("--otel on: ") && err.contains(says),
                "{err}"
            );
        }
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317");
        match with(
            &[endpoint, ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")],
            Flags::default(),
        ) {
            Ok(Resolved::Unusable(why)) => assert!(why.contains("only http/protobuf"), "{why}"),
            other => panic!("{other:?}"),
        }
        // The traces variable wins: a host's grpc setting can be overridden for us.
        on(with(
            &[
                endpoint,
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
                ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"),
            ],
            Flags::default(),
        ));
    }

    #[test]
    fn headers_and_resource_decoded_and_never_quoted() {
        let config = on(with(
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"),
                (
                    "OTEL_EXPORTER_OTLP_HEADERS",
                    "x-api-key=s%3Dcret , x-team=a",
                ),
                ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "X-Team=b"),
                (
                    "OTEL_RESOURCE_ATTRIBUTES",
                    "deployment.environment=prod,service.name=agents",
                ),
            ],
            Flags::default(),
        ));
        assert_eq!(
            config.headers,
            vec![
                ("x-api-key".into(), "s=cret".into()),
                ("X-Team".into(), "b".into())
            ]
        );
        assert_eq!(config.resource[0], ("service.name".into(), "agents".into()));
        assert!(!format!("{config:?}").contains("s=cret"));
        let secret = "x-api-key=hunter2%zz";
        match with(
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"),
                ("OTEL_EXPORTER_OTLP_HEADERS", secret),
            ],
            Flags::default(),
        ) {
            Ok(Resolved::Unusable(why)) => {
                assert!(why.contains("entry 1") && !why.contains("hunter2"), "{why}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn metrics_follow_the_general_endpoint_not_the_traces_one() {
        let general = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318");
        let metrics = on(with(&[general], Flags::default())).metrics.unwrap();
        assert_eq!(metrics.endpoint.url(), "http://c:4318/v1/metrics");
        assert_eq!(metrics.interval, Duration::from_secs(60));
        let traces_only = (
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "http://c:4318/v1/traces",
        );
        assert_eq!(on(with(&[traces_only], Flags::default())).metrics, None);
        let none = ("OTEL_METRICS_EXPORTER", "none");
        assert_eq!(on(with(&[general, none], Flags::default())).metrics, None);
        let own = ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://m:9/x");
        let interval = ("OTEL_METRIC_EXPORT_INTERVAL", "500");
        let headers = ("OTEL_EXPORTER_OTLP_METRICS_HEADERS", "k=m");
        let metrics = on(with(
            &[traces_only, own, interval, headers],
            Flags::default(),
        ))
        .metrics
        .unwrap();
        assert_eq!(
            (metrics.endpoint.url(), metrics.interval),
            ("http://m:9/x".into(), Duration::from_millis(500))
        );
        assert_eq!(metrics.headers, vec![("k".into(), "m".into())]);
        let flags = Flags {
            otel: Some(true),
            explicit: true,
            ..Flags::default()
        };
        assert_eq!(
            on(with(&[], flags)).metrics.unwrap().endpoint.url(),
            "http://localhost:4318/v1/metrics"
        );
    }

    #[test]
    fn timeouts_and_queue() {
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c");
        let config = on(with(
            &[
                endpoint,
                ("OTEL_BSP_EXPORT_TIMEOUT", "250"),
                ("OTEL_BSP_MAX_QUEUE_SIZE", "8"),
            ],
            Flags::default(),
        ));
        assert_eq!(config.flush_timeout, Duration::from_millis(250));
        assert_eq!((config.max_queue, config.max_batch), (8, 8));
        let flags = Flags {
            flush_timeout: Some(Duration::from_millis(50)),
            ..Flags::default()
        };
        assert_eq!(
            on(with(&[endpoint, ("OTEL_BSP_EXPORT_TIMEOUT", "250")], flags)).flush_timeout,
            Duration::from_millis(50)
        );
        match with(
            &[endpoint, ("OTEL_BSP_MAX_QUEUE_SIZE", "0")],
            Flags::default(),
        ) {
            Ok(Resolved::Unusable(why)) => {
                assert!(why.contains("OTEL_BSP_MAX_QUEUE_SIZE"), "{why}")
            }
            other => panic!("{other:?}"),
        }
    }
}
