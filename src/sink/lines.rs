//! One human-readable line per fact, as they happen (`watch` without `-o`).
//!
//! What a traced process chose (its argv, its name) is shown escaped
//! ([`crate::model::escape`]): one fact is one line, and nothing in it is a control character.

use std::io;

use super::text::{Paint, exit_text, fmt_duration};
use super::{LineWriter, Sink};
use crate::model::escape;
use crate::model::naming::exec_command_line;
use crate::model::session::{Header, Summary};
use crate::model::tracker::{Fact, Tracker};

/// The line sink.
pub struct HumanLines {
    w: LineWriter,
    start: u64,
    paint: Paint,
    redact: bool,
}

impl HumanLines {
    /// Writes to `out`.
    pub fn new(out: super::LineDest, color: bool, redact: bool) -> Self {
        HumanLines {
            w: LineWriter::new(out),
            start: 0,
            paint: Paint { on: color },
            redact,
        }
    }
}

impl Sink for HumanLines {
    fn start(&mut self, h: &Header) -> io::Result<()> {
        self.start = h.ts;
        Ok(())
    }

    fn fact(&mut self, fact: &Fact, t: &Tracker) -> io::Result<()> {
        use std::fmt::Write as _;
        let mut s = String::with_capacity(120);
        let rel = |ts: Option<u64>| match ts {
            Some(ts) => format!("{:>11.6}", (ts.saturating_sub(self.start)) as f64 / 1e9),
            None => format!("{:>11}", "?"),
        };
        let p = self.paint;
        match *fact {
            // A human line per region would drown the lifecycle; `-o` has them.
            Fact::Region { .. } | Fact::Data { .. } | Fact::File { .. } => return Ok(()),
            Fact::Lost { ts, count } => {
                let _ = write!(s, "{} {}", rel(ts), p.loss(&format!("LOST {count} events")));
            }
            Fact::Fork(id) => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let _ = write!(s, "{} fork   {:>7} <- {}", rel(r.start_ns), r.pid, r.ppid);
                if r.pre_existing {
                    s.push_str(" (already running)");
                }
            }
            Fact::Exec { id, index } => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let Some(e) = r.execs.get(index) else {
                    return Ok(());
                };
                let what = exec_command_line(e, r.comm.as_deref(), self.redact);
                let _ = write!(s, "{} exec   {:>7}    {}", rel(Some(e.ts)), r.pid, what);
            }
            Fact::Exit(id) => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let Some(x) = r.exit else { return Ok(()) };
                let status = exit_text(x.status, p);
                let dur = r.duration_ns().map(fmt_duration).unwrap_or_default();
                let _ = write!(s, "{} exit   {:>7}    {status} {dur}", rel(Some(x.ts)), r.pid);
            }
            Fact::Background(id) => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let Some(bg) = r.background else { return Ok(()) };
                let _ = write!(
                    s,
                    "{} {}",
                    rel(Some(bg.ts)),
                    p.background(&format!("background {:>7} {}", r.pid, bg.state.as_str()))
                );
            }
            Fact::Uid { id, ts, ruid, euid } => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let _ = write!(
                    s,
                    "{} uid    {:>7}    ruid={ruid} euid={euid}",
                    rel(Some(ts)),
                    r.pid
                );
            }
            Fact::Gid { id, ts, rgid, egid } => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let _ = write!(
                    s,
                    "{} gid    {:>7}    rgid={rgid} egid={egid}",
                    rel(Some(ts)),
                    r.pid
                );
            }
            Fact::Sid { id, ts } => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let _ = write!(s, "{} setsid {:>7}", rel(Some(ts)), r.pid);
            }
            Fact::Ptrace { id, ts, tracer } => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let what = if tracer == 0 {
                    "detached".to_string()
                } else {
                    format!("traced by {tracer}")
                };
                let _ = write!(s, "{} ptrace {:>7}    {what}", rel(Some(ts)), r.pid);
            }
            Fact::Comm { id, ts } => {
                let Some(r) = t.get(id) else { return Ok(()) };
                let _ = write!(
                    s,
                    "{} comm   {:>7}    {}",
                    rel(Some(ts)),
                    r.pid,
                    escape::text(r.comm.as_deref().unwrap_or(""))
                );
            }
        }
        s.push('\n');
        self.w.buf().extend_from_slice(s.as_bytes());
        self.w.line_done()
    }

    fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }

    fn finish(&mut self, _s: &Summary, _t: &Tracker) -> io::Result<()> {
        self.w.flush()
    }
}
