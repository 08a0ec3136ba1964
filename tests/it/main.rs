//! proctrace end to end: the real binary, the real kernel connector, real processes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;
mod analyze_jsonl;
mod analyze_trace2;
mod blind;
mod builds;
mod bytes;
#[path = "../../src/sink/chrome_check.rs"]
mod chrome_check;
mod chrome_out;
mod cli;
mod creds;
mod diff;
mod diff_builds;
mod ebpf;
mod errors;
mod failures;
mod faults;
mod floods;
mod handled_exits;
mod hostile;
mod html;
mod images;
mod inputs;
mod kernel_names;
mod otlp;
mod progress;
mod ptrace;
mod readers_props;
mod replay;
mod run_realtime;
mod run_shapes;
mod run_spawns;
mod run_status;
mod run_trace2;
mod signals;
mod summary;
mod svg_out;
mod trace2_out;
mod trace2_stream;
mod usage;
mod usage_out;
mod usage_time;
mod watch;
