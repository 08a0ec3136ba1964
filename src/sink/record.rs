//! `--record FILE`: the capture — the header, every event the model is fed (with the `/proc`
//! details the live run read) and the summary, in the format of [`crate::capture_file`] — for
//! `proctrace replay` and `analyze`. An output like the others: lines are written whole (a full
//! disk cuts the file back to its last whole line), a failure is reported by its path.
//!
//! Credentials in the traced argv are redacted in what it records unless `--no-redact`, as in
//! every output; proctrace's own command line always (a capture written by an older proctrace
//! is redacted again when re-recorded).

use std::borrow::Cow;
use std::io;

use super::{LineWriter, Sink};
use crate::capture_file;
use crate::model::event::Event;
use crate::model::session::{Header, Mode, Summary};
use crate::model::tracker::{Fact, Tracker};
use crate::redact::redact_argv;

/// The capture writer.
pub struct Recorder {
    out: LineWriter,
    redact: bool,
}

impl Recorder {
    /// Records to `out`; `redact` hides URL credentials in argv.
    pub fn new(out: super::LineDest, redact: bool) -> Recorder {
        Recorder {
            out: LineWriter::new(out),
            redact,
        }
    }
}

fn json_error(e: serde_json::Error) -> io::Error {
    io::Error::other(e)
}

impl Sink for Recorder {
    fn start(&mut self, h: &Header) -> io::Result<()> {
        let mut header = h.clone();
        header.tool.argv = crate::redact::own_argv(&header.tool.argv);
        if self.redact
            && let Mode::Run { argv } = &mut header.mode
        {
            redact_all(argv);
        }
        capture_file::write_header(self.out.buf(), &header).map_err(json_error)?;
        self.out.line_done()
    }

    fn fact(&mut self, _fact: &Fact, _tracker: &Tracker) -> io::Result<()> {
        Ok(())
    }

    fn wants_events(&self) -> bool {
        true
    }

    fn event(&mut self, ev: &Event) -> io::Result<()> {
        // A capture is an output too: URL credentials stay out of it unless asked for.
        if let (true, Event::ExecDetails { tgid, details }) = (self.redact, ev)
            && let Some(argv) = &details.argv
        {
            let redacted = redact_argv(argv);
            if redacted.iter().any(|a| matches!(a, Cow::Owned(_))) {
                let mut d = details.clone();
                d.argv = Some(redacted.into_iter().map(Cow::into_owned).collect());
                let ev = Event::ExecDetails {
                    tgid: *tgid,
                    details: d,
                };
                capture_file::write_event(self.out.buf(), &ev).map_err(json_error)?;
                return self.out.line_done();
            }
        }
        capture_file::write_event(self.out.buf(), ev).map_err(json_error)?;
        self.out.line_done()
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    fn finish(&mut self, sum: &Summary, _tracker: &Tracker) -> io::Result<()> {
        capture_file::write_summary(self.out.buf(), sum).map_err(json_error)?;
        self.out.flush()
    }
}

/// Redacts an argv in place, copying only the words that change.
fn redact_all(argv: &mut [String]) {
    let mut r = crate::redact::Argv::new();
    for a in argv {
        if let Cow::Owned(w) = r.word(a) {
            *a = w;
        }
    }
}

/// `--record FILE` (`run`, `watch`).
pub const OUTPUT: crate::output::OutputSpec = crate::output::OutputSpec {
    flag: "record",
    short: None,
    value_name: "FILE",
    help: "Record every event (with /proc details) to FILE for `proctrace replay` and `analyze` \
           (the capture format: docs/capture-format.md)",
    what: "capture",
    golden: None,
    dest: crate::output::DestKind::File,
    live_only: true,
    make: crate::output::Make::Stream(|to, s| Ok(Box::new(Recorder::new(to.lines()?, s.redact)))),
};
