//! The OTLP destination: a thread that batches spans, gzips them and POSTs them to the
//! collector's `/v1/traces` as protobuf, with retries.
//!
//! It must never harm the traced command nor hold up capture: the sink hands spans over a
//! bounded queue without waiting (what does not fit is counted, not waited for); while the
//! collector is down, slow or answering 429/502/503/504 the thread retries with exponential
//! backoff, honouring `Retry-After`; at the end it gets one time budget (the request timeout,
//! `OTEL_EXPORTER_OTLP_TIMEOUT`) for what is left — cut short when every connection has been
//! refused for `REFUSED_GIVE_UP` (nothing listens: waiting out the budget would only keep the
//! user waiting) — and everything it could not deliver is counted with the last reason. It formats nothing: spans come ready-made from the sink.
//!
//! Crates: `ureq` (blocking, no async runtime: one thread is all an exporter needs) over `rustls`
//! with the `ring` provider (no OpenSSL to link against, no C toolchain beyond `cc`), roots from
//! the system's store (`rustls-native-certs`: Debian's `ca-certificates`, and `SSL_CERT_FILE` /
//! `SSL_CERT_DIR` honoured), read only when the endpoint is https. `flate2` (pure-Rust miniz
//! backend) gzips. Environment proxies are not used: the collector is usually local or on the
//! same network, and a CI proxy variable must not silently redirect spans.

use std::io::{self, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::InstrumentationScope;
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use prost::Message;

use super::config::OtlpConfig;

/// Spans per request (the batch span processor's default, `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`).
const MAX_BATCH: usize = 512;
/// How long a part-filled batch waits for more spans before it is sent.
const BATCH_DELAY: Duration = Duration::from_millis(1000);
/// Spans held (queued or waiting for the collector) at most; beyond this, live capture drops new
/// ones (counted) and offline input (`analyze`, `replay`) waits for room up to the timeout.
const MAX_HELD: usize = 32_768;
/// First retry delay; doubled per failed attempt up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(8);
/// At exit, a collector that has refused every connection for this long is taken to be absent:
/// what is left is counted as undelivered at once instead of retried until the budget runs out.
/// (A refused connection is a definite answer — nothing listens on that port — unlike a timeout;
/// a collector being restarted is back within this.)
const REFUSED_GIVE_UP: Duration = Duration::from_secs(2);

/// What became of the spans handed to an exporter.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// Accepted by the collector.
    pub delivered: u64,
    /// Not delivered: dropped because the queue was full, rejected, or still unsent when the
    /// time budget at exit ran out.
    pub undelivered: u64,
    /// The last reason a span was not delivered.
    pub reason: Option<String>,
    /// Requests sent (attempts, retries included).
    pub requests: u64,
}

impl Delivery {
    fn lose(&mut self, n: u64, reason: &str) {
        if n > 0 {
            self.undelivered += n;
            self.reason = Some(reason.to_string());
        }
    }
}

enum Msg {
    Spans(Vec<Span>),
    Finish(Instant),
}

/// The export thread's handle.
pub struct Exporter {
    tx: Option<Sender<Msg>>,
    thread: Option<JoinHandle<()>>,
    /// What the thread has made of the spans so far (kept current after every request), and
    /// its final account once it is done.
    account: Arc<std::sync::Mutex<(Delivery, bool)>>,
    done: Option<Receiver<()>>,
    timeout: Duration,
    dropped: u64,
    /// Spans handed over and not yet delivered or given up on.
    held: Arc<AtomicUsize>,
    wait_for_room: bool,
}

impl Exporter {
    /// Starts the thread. Fails only when the thread or the TLS roots cannot be had.
    pub fn start(cfg: &OtlpConfig, resource: Resource) -> io::Result<Exporter> {
        let agent = agent(&cfg.url)?;
        let (tx, rx) = channel();
        let held = Arc::new(AtomicUsize::new(0));
        let thread_held = held.clone();
        let post = Post {
            agent,
            url: cfg.url.clone(),
            headers: cfg.headers.clone(),
            gzip: cfg.gzip,
            timeout: cfg.timeout,
        };
        let account = Arc::new(std::sync::Mutex::new((Delivery::default(), false)));
        let thread_account = account.clone();
        let (done_tx, done) = channel();
        let thread = std::thread::Builder::new()
            .name("proctrace-otlp".into())
            .spawn(move || {
                export_loop(post, resource, rx, &thread_held, &thread_account);
                let _ = done_tx.send(());
            })?;
        Ok(Exporter {
            tx: Some(tx),
            thread: Some(thread),
            account,
            done: Some(done),
            timeout: cfg.timeout,
            dropped: 0,
            held,
            wait_for_room: cfg.offline,
        })
    }

    /// Hands spans over. When `MAX_HELD` are already held they are counted as lost — or, when
    /// waiting for room was asked for, after waiting up to the timeout for the thread to make some.
    pub fn send(&mut self, mut spans: Vec<Span>) {
        // A batch larger than a request goes in request-sized parts, so it always fits once
        // the thread has room.
        while spans.len() > MAX_BATCH {
            let rest = spans.split_off(MAX_BATCH);
            self.send_part(spans);
            spans = rest;
        }
        self.send_part(spans);
    }

    fn send_part(&mut self, spans: Vec<Span>) {
        let n = spans.len();
        let Some(tx) = &self.tx else {
            self.dropped += n as u64;
            return;
        };
        let mut waited: Option<Instant> = None;
        while self.held.load(Ordering::Acquire) + n > MAX_HELD {
            let start = *waited.get_or_insert_with(Instant::now);
            if !self.wait_for_room || start.elapsed() >= self.timeout {
                self.dropped += n as u64;
                return;
            }
            // Offline only: nothing is being captured while this waits.
            std::thread::sleep(Duration::from_millis(2));
        }
        self.held.fetch_add(n, Ordering::AcqRel);
        if tx.send(Msg::Spans(spans)).is_err() {
            self.held.fetch_sub(n, Ordering::AcqRel);
            self.dropped += n as u64;
        }
    }

    /// Sends what is left within the time budget and says what became of everything. Bounded
    /// by the budget, and cut short when a signal asks proctrace to hurry
    /// ([`crate::supervise::hurry_deadline`]): a request still in flight then is abandoned and
    /// its spans, with every other one not yet delivered, are counted as not delivered.
    pub fn finish(&mut self) -> Delivery {
        let deadline = Instant::now() + self.timeout;
        let mut d = match (self.tx.take(), self.thread.take(), self.done.take()) {
            (Some(tx), Some(t), Some(done)) => {
                let _ = tx.send(Msg::Finish(deadline));
                drop(tx);
                // The thread gives up at the deadline; a request it cannot cut short ends a
                // moment later at most.
                let last = deadline + Duration::from_secs(1);
                let finished = loop {
                    let now = Instant::now();
                    let until = crate::supervise::hurry_deadline().map_or(last, |h| h.min(last));
                    if now >= until {
                        break false;
                    }
                    match done.recv_timeout((until - now).min(Duration::from_millis(50))) {
                        Ok(()) | Err(RecvTimeoutError::Disconnected) => break true,
                        Err(RecvTimeoutError::Timeout) => {}
                    }
                };
                if finished {
                    let _ = t.join();
                }
                let acc = self.account.lock().unwrap_or_else(|e| e.into_inner());
                let mut d = acc.0.clone();
                if !finished || !acc.1 {
                    // Abandoned (the thread ends with the process): what it still held is lost.
                    let why = if crate::supervise::hurrying() {
                        "proctrace was interrupted while exporting"
                    } else {
                        "the collector did not answer within the time budget at exit"
                    };
                    d.lose(self.held.load(Ordering::Acquire) as u64, why);
                }
                d
            }
            _ => Delivery::default(),
        };
        d.lose(self.dropped, "export queue full");
        self.dropped = 0;
        d
    }
}

fn agent(url: &str) -> io::Result<ureq::Agent> {
    let mut tls = ureq::tls::TlsConfig::builder()
        .unversioned_rustls_crypto_provider(Arc::new(rustls::crypto::ring::default_provider()));
    if url.starts_with("https://") {
        let found = rustls_native_certs::load_native_certs();
        if found.certs.is_empty() {
            let why = found
                .errors
                .first()
                .map_or_else(|| "none found".to_string(), |e| e.to_string());
            return Err(io::Error::other(format!(
                "no TLS root certificates in the system store ({why})"
            )));
        }
        let roots: Vec<_> = found
            .certs
            .iter()
            .map(|c| ureq::tls::Certificate::from_der(c.as_ref()).to_owned())
            .collect();
        tls = tls.root_certs(ureq::tls::RootCerts::new_with_certs(&roots));
    }
    Ok(ureq::Agent::config_builder()
        .http_status_as_error(false)
        .proxy(None)
        .tls_config(tls.build())
        .build()
        .new_agent())
}

/// How one request ended, when not with success.
enum Failure {
    /// Worth another try (transport error, 429, 502, 503, 504), after `after` if the collector
    /// said so.
    Retry {
        reason: String,
        after: Option<Duration>,
        /// Nothing listens: the connection was refused.
        refused: bool,
    },
    /// Will not get better (400, 404, a TLS failure).
    Fatal(String),
}

struct Post {
    agent: ureq::Agent,
    url: String,
    headers: Vec<(String, String)>,
    gzip: bool,
    timeout: Duration,
}

impl Post {
    /// Encodes, compresses and sends one request; `Ok(rejected)` counts spans the collector
    /// refused in a partial success.
    fn send(&self, body: &[u8], timeout: Duration) -> Result<(u64, String), Failure> {
        let mut req = self
            .agent
            .post(&self.url)
            .header("Content-Type", "application/x-protobuf");
        if self.gzip {
            req = req.header("Content-Encoding", "gzip");
        }
        for (k, v) in &self.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let res = req.config().timeout_global(Some(timeout)).build().send(body);
        let mut resp = match res {
            Ok(r) => r,
            Err(e) => return Err(transport_failure(e)),
        };
        let status = resp.status().as_u16();
        let retry_after = resp
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let text = resp
            .body_mut()
            .with_config()
            .limit(64 << 10)
            .read_to_vec()
            .unwrap_or_default();
        match status {
            200..=299 => {
                let partial = ExportTraceServiceResponse::decode(text.as_slice())
                    .ok()
                    .and_then(|r| r.partial_success)
                    .filter(|p| p.rejected_spans > 0);
                Ok(match partial {
                    Some(p) => (
                        p.rejected_spans as u64,
                        format!("rejected by the collector: {}", p.error_message),
                    ),
                    None => (0, String::new()),
                })
            }
            429 | 502 | 503 | 504 => Err(Failure::Retry {
                reason: format!("HTTP {status}"),
                after: retry_after,
                refused: false,
            }),
            _ => Err(Failure::Fatal(format!("HTTP {status}"))),
        }
    }
}

fn transport_failure(e: ureq::Error) -> Failure {
    use ureq::Error as E;
    let refused = matches!(&e, E::Io(io) if io.kind() == io::ErrorKind::ConnectionRefused);
    let reason = match &e {
        _ if refused => "connection refused".to_string(),
        E::Io(io) if io.kind() == io::ErrorKind::TimedOut => "timed out".to_string(),
        E::Timeout(_) => "timed out".to_string(),
        E::HostNotFound => "host not found".to_string(),
        // An error may quote the URL: never its credentials.
        other => crate::redact::redact_arg(&other.to_string()).into_owned(),
    };
    // A certificate the roots do not vouch for will not be vouched for on a retry.
    let tls = match &e {
        E::Io(io) => io.get_ref().is_some_and(|inner| inner.is::<rustls::Error>()),
        _ => false,
    };
    match e {
        E::Io(io) if tls => Failure::Fatal(format!("TLS: {io}")),
        E::Tls(_) | E::Rustls(_) | E::BadUri(_) | E::Http(_) => Failure::Fatal(reason),
        _ => Failure::Retry {
            reason,
            after: None,
            refused,
        },
    }
}

/// The request body: one resource, one scope, the spans; gzipped when asked.
fn encode(resource: &Resource, spans: Vec<Span>, gzip: bool) -> io::Result<Vec<u8>> {
    let req = ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(resource.clone()),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: "proctrace".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    ..Default::default()
                }),
                spans,
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
    };
    let raw = req.encode_to_vec();
    if !gzip {
        return Ok(raw);
    }
    let mut z = flate2::write::GzEncoder::new(Vec::with_capacity(raw.len() / 4), flate2::Compression::fast());
    z.write_all(&raw)?;
    z.finish()
}

/// The thread: gather spans, send a batch when it is full or [`BATCH_DELAY`] old, retry with
/// backoff, give up at the deadline the finish message brings.
fn export_loop(
    post: Post,
    resource: Resource,
    rx: Receiver<Msg>,
    held: &AtomicUsize,
    account: &std::sync::Mutex<(Delivery, bool)>,
) {
    let mut d = Delivery::default();
    let publish = |d: &Delivery, done: bool| {
        *account.lock().unwrap_or_else(|e| e.into_inner()) = (d.clone(), done);
    };
    let mut pending: std::collections::VecDeque<Span> = std::collections::VecDeque::new();
    let mut oldest: Option<Instant> = None;
    let mut deadline: Option<Instant> = None;
    let mut retry_at: Option<Instant> = None;
    let mut backoff = FIRST_BACKOFF;
    let mut last_error: Option<String> = None;
    // Since when every attempt has been refused (reset by any other outcome).
    let mut refused_since: Option<Instant> = None;
    let mut open = true;
    loop {
        let now = Instant::now();
        if let Some(end) = deadline {
            if pending.is_empty() {
                break;
            }
            if now >= end {
                let why = last_error
                    .clone()
                    .unwrap_or_else(|| "time budget at exit ran out".into());
                d.lose(pending.len() as u64, &why);
                break;
            }
        }
        // When to act next: a due retry, a full or old batch, the deadline.
        let due = if pending.is_empty() {
            None
        } else if let Some(r) = retry_at {
            Some(r)
        } else if deadline.is_some() || pending.len() >= MAX_BATCH {
            Some(now)
        } else {
            oldest.map(|o| o + BATCH_DELAY)
        };
        let due = match (due, deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if open && due.is_none_or(|t| t > now) {
            let wait = due.map_or(Duration::from_secs(3600), |t| t - now);
            match rx.recv_timeout(wait) {
                Ok(Msg::Spans(v)) => {
                    if oldest.is_none() {
                        oldest = Some(Instant::now());
                    }
                    pending.extend(v);
                }
                Ok(Msg::Finish(end)) => {
                    deadline = Some(end);
                    // Nothing listened the last time: one more try now, not after the backoff
                    // (it may be back), then give up if it is still refused (below).
                    if refused_since.is_some() {
                        retry_at = Some(Instant::now());
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    open = false;
                    // Dropped without a finish: whatever is pending gets one try, now.
                    deadline.get_or_insert(Instant::now() + post.timeout);
                }
            }
            continue;
        }
        if !open && due.is_some_and(|t| t > now) {
            std::thread::sleep(due.map_or(Duration::ZERO, |t| t - now));
            continue;
        }
        if pending.is_empty() {
            if !open {
                break;
            }
            continue;
        }
        // Send one batch.
        let n = pending.len().min(MAX_BATCH);
        let batch: Vec<Span> = pending.iter().take(n).cloned().collect();
        let body = match encode(&resource, batch, post.gzip) {
            Ok(b) => b,
            Err(e) => {
                pending.drain(..n);
                held.fetch_sub(n, Ordering::AcqRel);
                d.lose(n as u64, &format!("cannot compress a request: {e}"));
                continue;
            }
        };
        let timeout = match deadline {
            Some(end) => post
                .timeout
                .min(end.saturating_duration_since(now))
                .max(Duration::from_millis(1)),
            None => post.timeout,
        };
        d.requests += 1;
        match post.send(&body, timeout) {
            Ok((rejected, why)) => {
                pending.drain(..n);
                held.fetch_sub(n, Ordering::AcqRel);
                d.delivered += n as u64 - rejected.min(n as u64);
                d.lose(rejected.min(n as u64), &why);
                retry_at = None;
                refused_since = None;
                backoff = FIRST_BACKOFF;
                oldest = if pending.is_empty() {
                    None
                } else {
                    Some(Instant::now())
                };
            }
            Err(Failure::Fatal(why)) => {
                pending.drain(..n);
                held.fetch_sub(n, Ordering::AcqRel);
                d.lose(n as u64, &why);
                last_error = Some(why);
                retry_at = None;
                refused_since = None;
            }
            Err(Failure::Retry {
                reason,
                after,
                refused,
            }) => {
                let since = match refused {
                    true => *refused_since.get_or_insert(now),
                    false => {
                        refused_since = None;
                        now
                    }
                };
                if refused && deadline.is_some() && now.duration_since(since) >= REFUSED_GIVE_UP {
                    let why = format!(
                        "{reason} (nothing listened for {:.1} s: gave up)",
                        now.duration_since(since).as_secs_f64()
                    );
                    d.lose(pending.len() as u64, &why);
                    held.fetch_sub(pending.len(), Ordering::AcqRel);
                    pending.clear();
                    break;
                }
                // The collector's Retry-After wins over our own backoff; at exit, a refusing
                // collector gets its last try when the give-up time comes.
                let mut wait = after.unwrap_or(backoff);
                if refused && deadline.is_some() {
                    wait = wait.min((since + REFUSED_GIVE_UP).saturating_duration_since(now));
                }
                retry_at = Some(Instant::now() + wait);
                backoff = (backoff * 2).min(MAX_BACKOFF);
                last_error = Some(reason);
            }
        }
        publish(&d, false);
    }
    publish(&d, true);
}
