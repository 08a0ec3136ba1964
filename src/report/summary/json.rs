//! The summary as one JSON object for dashboards: the report's `serde::Serialize` shape (times
//! in seconds, the by-program map in its order), pretty-printed.
//!
//! Reads only the [`RunReport`]; writes as it goes (no copy of a big build's object is held).

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

use super::{ByProgram, RunReport};

/// The summary as one JSON object (pretty-printed, ending in a newline).
pub fn render_json(r: &RunReport) -> String {
    json_string(|out| write_json(r, out))
}

/// What `write` writes, as a string (an object that could not be written: `{"error": …}`).
pub(crate) fn json_string(write: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> String {
    let mut out = Vec::new();
    if let Err(e) = write(&mut out) {
        return format!("{{\"error\": \"{e}\"}}\n");
    }
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// [`render_json`] written to `w` as it is made (no copy of a big build's object is held).
pub fn write_json(r: &RunReport, w: &mut impl std::io::Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *w, r)?;
    w.write_all(b"\n")
}

impl Serialize for ByProgram {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

pub(super) fn secs<S: Serializer>(ns: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(*ns as f64 / 1e9)
}

pub(super) fn secs_signed<S: Serializer>(ns: &i64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(*ns as f64 / 1e9)
}

pub(super) fn opt_secs<S: Serializer>(ns: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
    match ns {
        Some(ns) => s.serialize_f64(*ns as f64 / 1e9),
        None => s.serialize_none(),
    }
}

pub(super) fn opt_secs_signed<S: Serializer>(ns: &Option<i64>, s: S) -> Result<S::Ok, S::Error> {
    match ns {
        Some(ns) => s.serialize_f64(*ns as f64 / 1e9),
        None => s.serialize_none(),
    }
}

/// `--summary-json FILE`: the summary as one JSON object.
pub const OUTPUT: crate::output::OutputSpec = crate::output::OutputSpec {
    flag: "summary-json",
    short: None,
    value_name: "FILE",
    help: "Write the end-of-run summary as one JSON object to FILE",
    what: "summary",
    golden: Some("summary-json"),
    dest: crate::output::DestKind::File,
    live_only: false,
    make: crate::output::Make::WholeRun(|run, mut w| write_json(run.report(), &mut w)),
};
