//! Every output proctrace has, in the order of `--help`. Adding an output is one line here and
//! the file that implements and declares it (ARCHITECTURE.md, "Add an output").

use super::OutputSpec;
use crate::report::summary::{json as summary_json, markdown as summary_md};
use crate::report::{html, svg};
use crate::sink::{chrome, jsonl, otlp, record, trace2};

/// The outputs.
pub static OUTPUTS: &[&OutputSpec] = &[
    &jsonl::OUTPUT,
    &trace2::EVENT_OUTPUT,
    &trace2::PERF_OUTPUT,
    &trace2::NORMAL_OUTPUT,
    &chrome::OUTPUT,
    &summary_md::OUTPUT,
    &summary_json::OUTPUT,
    &svg::OUTPUT,
    &html::OUTPUT,
    &otlp::OUTPUT,
    &record::OUTPUT,
];
