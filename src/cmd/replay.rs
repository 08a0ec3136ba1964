//! `proctrace replay CAPTURE`: a `--record` capture through the model and every output, read as
//! a stream as `analyze` reads it ([`crate::input::capture::CaptureInput`]): memory follows what
//! is alive (or the records an output reads at the end), not the file. It ends as `analyze`
//! does ([`crate::cmd::analyze::finish`]): the same exit statuses, the same messages.

use std::path::PathBuf;

use crate::ProctraceError;
use crate::cli::ReplayArgs;
use crate::input::InputOptions;
use crate::input::capture::CaptureInput;
use crate::model::session::Tool;
use crate::output::{Ask, Outputs};

#[cfg(test)]
pub use crate::testkit::{Capture, parse_capture, replay};

/// `proctrace replay CAPTURE`. A capture without a header gets a `replay` one, with the time of
/// its first event.
pub fn command(a: ReplayArgs) -> Result<i32, ProctraceError> {
    let path = PathBuf::from(&a.capture);
    let mut outputs = Outputs::plan(
        &a.out,
        Ask {
            live: false,
            human_stdout: false,
            tree: a.tree.into(),
            summary_text: true,
            progress: false,
            inputs: vec![path.clone()],
            propagate: false,
        },
    )?;
    let opts = InputOptions {
        lenient: false,
        tool: Some(Tool::this_process()),
        max_line: a.max_line,
    };
    let mut input = CaptureInput::open(&path, &opts)?;
    let sinks = outputs.start()?;
    let retain = outputs.reads_records_at_end();
    let an = crate::cmd::analyze::analyze(&mut input, a.root, sinks, retain);
    Ok(crate::cmd::analyze::finish(an, &mut outputs, true, None))
}
