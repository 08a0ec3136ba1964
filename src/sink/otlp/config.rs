//! What the OTLP exporter is told: endpoint, headers, resource, time budget, the caller's trace
//! context, and the seed span and trace ids are derived from.
//!
//! Built in the CLI layer from `--otlp` and the variables the OpenTelemetry specification defines
//! (`OTEL_EXPORTER_OTLP_*`, `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, `TRACEPARENT`); the
//! functions here take a lookup closure instead of reading the environment, so they are pure and
//! tested with plain maps. The sink never reads the environment itself.

use std::time::Duration;

/// A W3C Trace Context `traceparent` (version 00).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceParent {
    /// The trace.
    pub trace_id: [u8; 16],
    /// The parent span.
    pub span_id: [u8; 8],
    /// Trace flags (bit 0: sampled).
    pub flags: u8,
}

fn hex_into(s: &str, out: &mut [u8]) -> bool {
    if s.len() != out.len() * 2
        || !s
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return false;
    }
    for (i, o) in out.iter_mut().enumerate() {
        match u8::from_str_radix(&s[2 * i..2 * i + 2], 16) {
            Ok(v) => *o = v,
            Err(_) => return false,
        }
    }
    true
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

impl TraceParent {
    /// Parses a `traceparent` header value as W3C Trace Context level 1 defines it: version 00 is
    /// exactly `00-<32 hex>-<16 hex>-<2 hex>`; a higher version may carry more fields after the
    /// fourth; version ff, upper-case hex and all-zero ids are invalid.
    pub fn parse(s: &str) -> Result<TraceParent, String> {
        let s = s.trim();
        let mut parts = s.split('-');
        let (Some(ver), Some(tid), Some(sid), Some(fl)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err("expected VERSION-TRACEID-SPANID-FLAGS".into());
        };
        let mut v = [0u8; 1];
        if !hex_into(ver, &mut v) || v[0] == 0xff {
            return Err(format!("bad version '{ver}'"));
        }
        if v[0] == 0 && parts.next().is_some() {
            return Err("version 00 has exactly four fields".into());
        }
        let mut trace_id = [0u8; 16];
        if !hex_into(tid, &mut trace_id) || trace_id == [0; 16] {
            return Err(format!("bad trace id '{tid}'"));
        }
        let mut span_id = [0u8; 8];
        if !hex_into(sid, &mut span_id) || span_id == [0; 8] {
            return Err(format!("bad parent id '{sid}'"));
        }
        let mut flags = [0u8; 1];
        if !hex_into(fl, &mut flags) {
            return Err(format!("bad flags '{fl}'"));
        }
        Ok(TraceParent {
            trace_id,
            span_id,
            flags: flags[0],
        })
    }

    /// The header value, version 00.
    pub fn to_header(&self) -> String {
        format!(
            "00-{}-{}-{:02x}",
            hex(&self.trace_id),
            hex(&self.span_id),
            self.flags
        )
    }
}

/// The longest request timeout (and time budget at exit) proctrace accepts: a larger
/// `OTEL_EXPORTER_OTLP_TIMEOUT` is cut to this, so the end of a run is always bounded.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(30);

/// Everything the OTLP sink and its exporter need, decided before the session starts.
#[derive(Debug, Clone)]
pub struct OtlpConfig {
    /// Full URL requests are POSTed to (ends in `/v1/traces` unless a traces endpoint said
    /// otherwise).
    pub url: String,
    /// Extra request headers (`OTEL_EXPORTER_OTLP_HEADERS`), decoded.
    pub headers: Vec<(String, String)>,
    /// Gzip request bodies (`OTEL_EXPORTER_OTLP_COMPRESSION`, gzip unless `none`).
    pub gzip: bool,
    /// Longest wait for one request, and the time budget for what is left at exit
    /// (`OTEL_EXPORTER_OTLP_TIMEOUT`, 10 s by default, at most [`MAX_TIMEOUT`]).
    pub timeout: Duration,
    /// Resource attributes besides `host.name` (which comes from the session header):
    /// `service.name` first.
    pub resource: Vec<(String, String)>,
    /// The caller's trace context (`TRACEPARENT`): the session's root spans are its children.
    pub parent: Option<TraceParent>,
    /// Why `TRACEPARENT` was set but ignored.
    pub parent_error: Option<String>,
    /// `TRACESTATE` that came with it, passed on unchanged in every span.
    pub trace_state: String,
    /// Seed of every trace and span id the session makes (random per session; fixed in tests,
    /// so the spans are a function of the events).
    pub seed: u64,
    /// Give the traced command a `TRACEPARENT` naming its own process span (`run`; off with
    /// `--no-propagate`).
    pub propagate: bool,
    /// The events come from a saved trace (`analyze`, `replay`): with the queue full, wait for
    /// room (up to the timeout) instead of dropping, since no capture can fall behind.
    pub offline: bool,
}

/// A setting that could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The flag or variable.
    pub name: String,
    /// What is wrong with it.
    pub reason: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.name, self.reason)
    }
}

fn err(name: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError {
        name: name.into(),
        reason: reason.into(),
    }
}

/// A URL's credentials never reach a message: `--otlp=ftp://user:secret@host` is quoted redacted.
fn check_url(name: &str, url: &str) -> Result<(), ConfigError> {
    let shown = crate::redact::redact_arg(url);
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or_else(|| err(name, format!("'{shown}' is not an http:// or https:// URL")))?;
    if rest.is_empty() || rest.starts_with('/') {
        return Err(err(name, format!("'{shown}' has no host")));
    }
    Ok(())
}

/// `OTEL_EXPORTER_OTLP_ENDPOINT` semantics: the signal path `v1/traces` is appended to the base.
pub fn traces_url(base: &str) -> String {
    if base.ends_with("/v1/traces") {
        base.to_string()
    } else if base.ends_with('/') {
        format!("{base}v1/traces")
    } else {
        format!("{base}/v1/traces")
    }
}

/// `what` names the text in a message; the text itself is never quoted (a header value is a
/// credential).
fn decode(name: &str, what: &str, s: &str) -> Result<String, ConfigError> {
    percent_encoding::percent_decode_str(s.trim())
        .decode_utf8()
        .map(|c| c.into_owned())
        .map_err(|_| err(name, format!("{what} is not UTF-8 once percent-decoded")))
}

/// `key1=value1,key2=value2` with percent-encoded values (the W3C Baggage form the specification
/// uses for `OTEL_EXPORTER_OTLP_HEADERS` and `OTEL_RESOURCE_ATTRIBUTES`). Empty members are
/// skipped. A message names a member by its place (and key), never by its text: the headers
/// carry credentials (`Authorization=Bearer …`; `Authorization: Bearer …` is a common mistake).
pub fn parse_pairs(name: &str, s: &str) -> Result<Vec<(String, String)>, ConfigError> {
    let mut out = Vec::new();
    for (n, item) in s.split(',').enumerate() {
        if item.trim().is_empty() {
            continue;
        }
        let place = n + 1;
        let (k, v) = item.split_once('=').ok_or_else(|| {
            err(
                name,
                format!("member {place} is not key=value (not shown: it may be a secret)"),
            )
        })?;
        let k = decode(name, &format!("the key of member {place}"), k)?;
        if k.is_empty() {
            return Err(err(name, format!("member {place} has an empty key")));
        }
        let v = decode(name, &format!("the value of '{k}'"), v)?;
        out.push((k, v));
    }
    Ok(out)
}

fn set(list: &mut Vec<(String, String)>, k: String, v: String) {
    match list.iter_mut().find(|(key, _)| key.eq_ignore_ascii_case(&k)) {
        Some(slot) => slot.1 = v,
        None => list.push((k, v)),
    }
}

/// Builds the configuration from `--otlp` (`flag`) and the environment (`var`). `Ok(None)`: no
/// export asked for — neither the flag nor an endpoint variable is set, or
/// `OTEL_TRACES_EXPORTER=none` / `OTEL_SDK_DISABLED=true` turns it off.
///
/// The flag is a base endpoint like `OTEL_EXPORTER_OTLP_ENDPOINT` (`/v1/traces` is appended
/// unless it is there already); `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is used as it is. Signal
/// specific variables win over the general ones; the flag wins over both.
pub fn from_env(
    flag: Option<&str>,
    propagate: bool,
    seed: u64,
    var: impl Fn(&str) -> Option<String>,
) -> Result<Option<OtlpConfig>, ConfigError> {
    let get = |k: &str| var(k).filter(|v| !v.trim().is_empty());
    if flag.is_none() {
        if get("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        if get("OTEL_TRACES_EXPORTER").is_some_and(|v| v.split(',').any(|e| e.trim() == "none")) {
            return Ok(None);
        }
    }
    let url = if let Some(f) = flag {
        check_url("--otlp", f)?;
        traces_url(f)
    } else if let Some(u) = get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
        check_url("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", u.trim())?;
        u.trim().to_string()
    } else if let Some(u) = get("OTEL_EXPORTER_OTLP_ENDPOINT") {
        check_url("OTEL_EXPORTER_OTLP_ENDPOINT", u.trim())?;
        traces_url(u.trim())
    } else {
        return Ok(None);
    };
    for name in [
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ] {
        if let Some(p) = get(name) {
            if p.trim() != "http/protobuf" {
                return Err(err(
                    name,
                    format!("'{}': only http/protobuf is supported", p.trim()),
                ));
            }
            break;
        }
    }
    let mut headers = Vec::new();
    for name in ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"] {
        if let Some(h) = get(name) {
            for (k, v) in parse_pairs(name, &h)? {
                set(&mut headers, k, v);
            }
        }
    }
    let mut gzip = true;
    for name in [
        "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
        "OTEL_EXPORTER_OTLP_COMPRESSION",
    ] {
        if let Some(c) = get(name) {
            gzip = match c.trim() {
                "gzip" => true,
                "none" => false,
                other => return Err(err(name, format!("'{other}': gzip or none"))),
            };
            break;
        }
    }
    let mut timeout = Duration::from_secs(10);
    for name in ["OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"] {
        if let Some(t) = get(name) {
            let ms: u64 = t
                .trim()
                .parse()
                .map_err(|_| err(name, format!("'{}' is not a number of milliseconds", t.trim())))?;
            timeout = Duration::from_millis(ms.max(1));
            if timeout > MAX_TIMEOUT {
                crate::say!(
                    "proctrace: otlp: {name}={ms} ms is more than proctrace waits; using {} s",
                    MAX_TIMEOUT.as_secs()
                );
                timeout = MAX_TIMEOUT;
            }
            break;
        }
    }
    let mut resource = vec![("service.name".to_string(), "proctrace".to_string())];
    if let Some(r) = get("OTEL_RESOURCE_ATTRIBUTES") {
        for (k, v) in parse_pairs("OTEL_RESOURCE_ATTRIBUTES", &r)? {
            set(&mut resource, k, v);
        }
    }
    if let Some(s) = get("OTEL_SERVICE_NAME") {
        set(&mut resource, "service.name".into(), s.trim().to_string());
    }
    // An invalid traceparent is ignored, as W3C Trace Context says (a fresh trace starts); the
    // CLI says so on stderr.
    let (parent, parent_error) = match get("TRACEPARENT") {
        None => (None, None),
        Some(t) => match TraceParent::parse(&t) {
            Ok(p) => (Some(p), None),
            Err(e) => (None, Some(format!("ignoring TRACEPARENT '{t}': {e}"))),
        },
    };
    let trace_state = if parent.is_some() {
        get("TRACESTATE").unwrap_or_default()
    } else {
        String::new()
    };
    Ok(Some(OtlpConfig {
        url,
        headers,
        gzip,
        timeout,
        resource,
        parent,
        parent_error,
        trace_state,
        seed,
        propagate,
        offline: false,
    }))
}

/// A random seed for a session's ids, from the standard library's per-process random hash keys
/// (no extra crate: ids need uniqueness, not cryptographic strength).
pub fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn traceparent_round_trip_and_rejects() {
        let s = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let t = TraceParent::parse(s).unwrap();
        assert_eq!(t.flags, 1);
        assert_eq!(t.to_header(), s);
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-xx",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
        ] {
            assert!(TraceParent::parse(bad).is_err(), "{bad}");
        }
        // A later version may add fields.
        assert!(TraceParent::parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-zz").is_ok());
    }

    #[test]
    fn endpoints_follow_the_specification() {
        let c = from_env(
            None,
            true,
            1,
            env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(c.url, "http://c:4318/v1/traces");
        let c = from_env(
            None,
            true,
            1,
            env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "https://c/otlp/")]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(c.url, "https://c/otlp/v1/traces");
        let c = from_env(
            None,
            true,
            1,
            env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:1/custom"),
            ]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(c.url, "http://t:1/custom");
        let c = from_env(
            Some("http://127.0.0.1:4318"),
            true,
            1,
            env(&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:1/custom")]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(c.url, "http://127.0.0.1:4318/v1/traces");
        assert!(from_env(None, true, 1, env(&[])).unwrap().is_none());
        assert!(
            from_env(
                None,
                true,
                1,
                env(&[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"),
                    ("OTEL_TRACES_EXPORTER", "none")
                ])
            )
            .unwrap()
            .is_none()
        );
        let e = from_env(Some("c:4318"), true, 1, env(&[])).unwrap_err();
        assert_eq!(e.name, "--otlp");
    }

    #[test]
    fn a_huge_timeout_is_capped() {
        let c = from_env(
            Some("http://c"),
            true,
            1,
            env(&[("OTEL_EXPORTER_OTLP_TIMEOUT", "99999999999999")]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(c.timeout, MAX_TIMEOUT);
        let c = from_env(
            Some("http://c"),
            true,
            1,
            env(&[("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "29000")]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(c.timeout, Duration::from_secs(29));
    }

    #[test]
    fn headers_resource_and_service_name() {
        let c = from_env(
            Some("http://c"),
            true,
            1,
            env(&[
                ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=a%20b, x=1"),
                ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "X=2"),
                (
                    "OTEL_RESOURCE_ATTRIBUTES",
                    "service.name=ci,deployment.environment=prod%2Ceu",
                ),
                ("OTEL_EXPORTER_OTLP_TIMEOUT", "1500"),
                ("OTEL_EXPORTER_OTLP_COMPRESSION", "none"),
            ]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            c.headers,
            vec![
                ("api-key".to_string(), "a b".to_string()),
                ("x".to_string(), "2".to_string())
            ]
        );
        assert_eq!(c.resource[0], ("service.name".to_string(), "ci".to_string()));
        assert_eq!(c.resource[1].1, "prod,eu");
        assert_eq!(c.timeout, Duration::from_millis(1500));
        assert!(!c.gzip);
        let c = from_env(
            Some("http://c"),
            true,
            1,
            env(&[
                ("OTEL_RESOURCE_ATTRIBUTES", "service.name=ci"),
                ("OTEL_SERVICE_NAME", "build"),
            ]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            c.resource,
            vec![("service.name".to_string(), "build".to_string())]
        );
        let e = from_env(
            Some("http://c"),
            true,
            1,
            env(&[("OTEL_EXPORTER_OTLP_HEADERS", "novalue")]),
        )
        .unwrap_err();
        assert_eq!(e.name, "OTEL_EXPORTER_OTLP_HEADERS");
        let c = from_env(Some("http://c"), true, 1, env(&[("TRACEPARENT", "junk")]))
            .unwrap()
            .unwrap();
        assert!(c.parent.is_none());
        assert!(c.parent_error.unwrap().contains("junk"));
        let e = from_env(
            Some("http://c"),
            true,
            1,
            env(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]),
        )
        .unwrap_err();
        assert!(e.reason.contains("http/protobuf"));
    }
}
