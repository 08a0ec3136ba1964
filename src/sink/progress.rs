//! The live status line of `run` on a terminal: elapsed time, processes running, finished and
//! failed so far, and the command that has been running longest.
//!
//! Unlike the other sinks this one is for a person watching, not a file: it exists only when
//! [`crate::output`] decided stderr is a terminal, and it is the one sink that uses the clock
//! (through indicatif's own elapsed time), so it is never part of the golden tests or replay.
//!
//! Cost per fact: a counter or two (O(1), no allocation, no I/O). Drawing is indicatif's job:
//! its stderr draw target is rate-limited to [`REFRESH_HZ`], and a steady-tick thread of its
//! own redraws the line (for the elapsed time) while no events come. Only at [`Sink::refresh`]
//! (when the engine writes a batch out: at most every 50 ms while events flow) and only when a
//! fact came since, the text is rebuilt: the longest-running command is looked up in the
//! tracker's live set, capped at [`SCAN_CAP`] records.
//!
//! indicatif (not hand-written escape codes) because it already does what a status line needs:
//! width-aware truncation (`{wide_msg}`), rate-limited redraws, a ticker thread, and clearing.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

use super::Sink;
use super::text::fmt_duration;
use crate::model::event::ExitStatus;
use crate::model::naming::command_line;
use crate::model::session::{Header, Summary};
use crate::model::tracker::{Fact, ProcId, Tracker};

/// Most redraws per second (indicatif's draw-target rate limit).
pub const REFRESH_HZ: u8 = 4;
/// The steady tick that keeps the elapsed time moving between events.
const TICK: Duration = Duration::from_millis(250);
/// Live records looked at, at most, to find the longest-running command.
pub const SCAN_CAP: usize = 4096;
/// No `longest` part.
const NONE: u64 = u64::MAX;

/// The status line.
pub struct Progress {
    bar: ProgressBar,
    redact: bool,
    start_ts: u64,
    /// When the longest-running command started, ns after `start_ts` (`NONE`: nothing running).
    longest_since: Arc<AtomicU64>,
    finished: u64,
    failed: u64,
    dirty: bool,
}

impl Progress {
    /// A status line on stderr; `redact` hides URL credentials in the command shown.
    pub fn new(redact: bool) -> Progress {
        Progress::with_target(ProgressDrawTarget::stderr_with_hz(REFRESH_HZ), redact)
    }

    fn with_target(target: ProgressDrawTarget, redact: bool) -> Progress {
        let longest_since = Arc::new(AtomicU64::new(NONE));
        let since = longest_since.clone();
        // The template is a constant: it parses (the unit test below checks), so the fallback
        // is never taken.
        let style = ProgressStyle::with_template("{spinner} {elapsed_s} {prefix}{longest}{wide_msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner())
            .with_key("elapsed_s", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = w.write_str(&short_duration(s.elapsed()));
            })
            .with_key(
                "longest",
                move |s: &ProgressState, w: &mut dyn std::fmt::Write| {
                    let at = since.load(Ordering::Relaxed);
                    if at != NONE {
                        let for_ns = (s.elapsed().as_nanos() as u64).saturating_sub(at);
                        let _ = write!(w, " · longest {}: ", fmt_duration(for_ns));
                    }
                },
            );
        let bar = ProgressBar::with_draw_target(None, target).with_style(style);
        Progress {
            bar,
            redact,
            start_ts: 0,
            longest_since,
            finished: 0,
            failed: 0,
            dirty: true,
        }
    }

    fn update(&mut self, t: &Tracker) {
        self.bar.set_prefix(format!(
            "{} running · {} finished · {} failed",
            t.live_count(),
            self.finished,
            self.failed
        ));
        match longest_running(t) {
            Some((id, start)) => {
                self.longest_since
                    .store(start.saturating_sub(self.start_ts), Ordering::Relaxed);
                let what = t
                    .get(id)
                    .map_or_else(String::new, |r| command_line(r, self.redact));
                self.bar.set_message(what);
            }
            None => {
                self.longest_since.store(NONE, Ordering::Relaxed);
                self.bar.set_message("");
            }
        }
    }
}

/// The live process with no live child that started first (a build's `make` waits on its
/// compilers: the compiler is the command worth naming), with its start; at most [`SCAN_CAP`]
/// records are looked at.
pub fn longest_running(t: &Tracker) -> Option<(ProcId, u64)> {
    let mut best: Option<(ProcId, u64)> = None;
    for id in t.live_ids().take(SCAN_CAP) {
        let Some(r) = t.get(id) else { continue };
        let Some(start) = r.start_ns else { continue };
        // A daemon's node and its processes from before the run (`--include-daemons`) are not
        // commands the run is waiting on.
        if r.ran_in.is_some() && (r.parent.is_none() || r.pre_existing) {
            continue;
        }
        if best.is_some_and(|(_, b)| b <= start) {
            continue;
        }
        let busy_child = r.children.iter().any(|&c| t.get(c).is_some_and(|c| c.is_alive()));
        if !busy_child {
            best = Some((id, start));
        }
    }
    best
}

/// `4.2s`, `2m05s`, `1h02m`.
fn short_duration(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, (s / 60) % 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

impl Sink for Progress {
    fn start(&mut self, h: &Header) -> io::Result<()> {
        self.start_ts = h.ts;
        self.bar.set_prefix("0 running · 0 finished · 0 failed");
        self.bar.enable_steady_tick(TICK);
        Ok(())
    }

    fn fact(&mut self, fact: &Fact, t: &Tracker) -> io::Result<()> {
        if let Fact::Exit(id) = *fact {
            self.finished += 1;
            let status = t.get(id).and_then(|r| r.exit).and_then(|x| x.status);
            if matches!(status, Some(ExitStatus::Code(c)) if c != 0)
                || matches!(status, Some(ExitStatus::Signal { .. }))
            {
                self.failed += 1;
            }
        }
        self.dirty = true;
        Ok(())
    }

    fn refresh(&mut self, t: &Tracker) {
        if self.dirty {
            self.dirty = false;
            self.update(t);
        }
    }

    fn finish(&mut self, _s: &Summary, _t: &Tracker) -> io::Result<()> {
        self.clear();
        Ok(())
    }
}

impl Progress {
    /// Stops the ticker and erases the line.
    pub fn clear(&mut self) {
        self.bar.disable_steady_tick();
        self.bar.finish_and_clear();
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_parses() {
        assert!(ProgressStyle::with_template("{spinner} {elapsed_s} {prefix}{longest}{wide_msg}").is_ok());
    }

    #[test]
    fn longest_running_is_the_oldest_live_process_without_live_children() {
        use crate::model::tracker::Scope;
        use crate::testkit::{fork, tracker};
        let mut t = tracker(Scope::All, true, false);
        let mut f = Vec::new();
        let exit = |ts, pid| crate::testkit::exit(ts, pid, 0);
        assert_eq!(longest_running(&t), None);
        // make (10) starts cc (11) at 2, then cc (12) at 3; make itself is not the answer.
        for ev in [fork(1, 1, 10), fork(2, 10, 11), fork(3, 10, 12)] {
            t.apply(&ev, &mut f);
        }
        let pid = |t: &Tracker| longest_running(t).map(|(id, s)| (t.get(id).unwrap().pid, s));
        assert_eq!(pid(&t), Some((11, 2)));
        t.apply(&exit(4, 11), &mut f);
        assert_eq!(pid(&t), Some((12, 3)));
        t.apply(&exit(5, 12), &mut f);
        assert_eq!(pid(&t), Some((10, 1)), "with no children left, make is what runs");
        t.apply(&exit(6, 10), &mut f);
        assert_eq!(pid(&t), None);
    }

    #[test]
    fn the_command_shown_is_escaped() {
        use crate::model::tracker::Scope;
        use crate::testkit::{exec, fork, tracker};
        let mut t = tracker(Scope::All, true, true);
        let mut f = Vec::new();
        let argv = ["/bin/echo", "\x1b]0;PWNED\x07\x1b[31mRED", "x\nforged\r"];
        for ev in [[fork(1, 1, 10)].as_slice(), &exec(2, 10, &argv, None)].concat() {
            t.apply(&ev, &mut f);
        }
        let mut p = Progress::with_target(ProgressDrawTarget::hidden(), false);
        p.update(&t);
        assert_eq!(
            p.bar.message(),
            r"/bin/echo $'\e]0;PWNED\a\e[31mRED' $'x\nforged\r'"
        );
    }

    #[test]
    fn durations() {
        assert_eq!(short_duration(Duration::from_millis(4200)), "4.2s");
        assert_eq!(short_duration(Duration::from_secs(125)), "2m05s");
        assert_eq!(short_duration(Duration::from_secs(3720)), "1h02m");
    }
}
