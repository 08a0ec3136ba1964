//! Every output proctrace has, in the order of `--help`. Adding an output is one line here and
//! the file that implements and declares it (ARCHITECTURE.md, "Add an output").

use super::OutputSpec;
use crate::report::{summary, svg};
use crate::sink::{chrome, jsonl, otlp, record, trace2};

/// The outputs.
pub static OUTPUTS: &[&OutputSpec] = &[
    &jsonl::OUTPUT,
    &trace2::EVENT_OUTPUT,
    &trace2::PERF_OUTPUT,
    &trace2::NORMAL_OUTPUT,
    &chrome::OUTPUT,
    &summary::MARKDOWN_OUTPUT,
    &summary::JSON_OUTPUT,
    &svg::OUTPUT,
    &otlp::OUTPUT,
    &record::OUTPUT,
];
