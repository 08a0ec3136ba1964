//! The streaming reader: each Trace2 line goes into its family's session state as it is read;
//! a family whose processes all ended (and that saw no line for the window) is built and dropped;
//! built events go out in time order through [`super::order::Out`]. This is where memory stays
//! bounded by what is alive: it must never keep a family longer than its window.

use std::collections::{BTreeSet, BinaryHeap};
use std::io::BufRead;
use std::path::Path;

use foldhash::HashMap;
use trace2::reader::{EventReader, ReadOptions};
use trace2::{EventKind, ReadyState};

use super::super::notes::NoteBuilder;
use super::build::build;
use super::order::Out;
use super::session::{Child, Family, Phase, Session};
use super::{MAX_HELD, WINDOW_LINES, WINDOW_NS, input_error, ns, secs_ns, strings};
use crate::input::{InputError, InputStats};
use crate::model::event::{Event, Pid};
use crate::model::tracker::BackgroundState;

/// The streaming reader: lines in, families of sessions built as they end, events out in time
/// order.
pub(super) struct Stream {
    pub(super) lenient: bool,
    /// Live families (a slab: built ones leave a hole for the next).
    pub(super) fams: Vec<Option<Family>>,
    pub(super) free: Vec<usize>,
    pub(super) fam_of: HashMap<String, usize>,
    pub(super) next_id: u64,
    /// The family of the previous line.
    pub(super) last_fam: Option<usize>,
    /// Live families by first time: the earliest bounds what may be fed.
    pub(super) starts: BTreeSet<(u64, u64)>,
    /// Families whose processes all ended: (time they may be built, slot, id).
    pub(super) closing: BinaryHeap<std::cmp::Reverse<(u64, usize, u64)>>,
    /// The same families in the order they closed: (line, slot, id).
    pub(super) closed_fifo: std::collections::VecDeque<(u64, usize, u64)>,
    /// Lines taken.
    pub(super) lines: u64,
    /// The time of the latest line that had one: stream time. (Not the newest time seen: when
    /// a stream's times jump back — streams concatenated — the window follows the lines.)
    pub(super) now: u64,
    /// Earliest time seen.
    pub(super) min_time: Option<u64>,
    /// Root sessions seen (a parent SID not among the family's sessions).
    pub(super) root_sessions: u64,
    pub(super) out: Out,
    pub(super) stats: InputStats,
    pub(super) error: Option<InputError>,
}

impl Stream {
    pub(super) fn new(lenient: bool) -> Stream {
        Stream {
            lenient,
            fams: Vec::new(),
            free: Vec::new(),
            fam_of: HashMap::default(),
            next_id: 0,
            last_fam: None,
            starts: BTreeSet::new(),
            closing: BinaryHeap::new(),
            closed_fifo: Default::default(),
            lines: 0,
            now: 0,
            min_time: None,
            root_sessions: 0,
            out: Out::new(),
            stats: InputStats {
                sessions: Some(0),
                ..Default::default()
            },
            error: None,
        }
    }

    /// Reads one stream; `name` names it in errors. Returns false when reading must stop (a
    /// bad line in strict mode).
    pub(super) fn read<R: BufRead>(&mut self, input: R, name: &Path, feed: &mut dyn FnMut(Event)) -> bool {
        self.stats.files += 1;
        let mut r = EventReader::new(
            input,
            name.display().to_string(),
            ReadOptions {
                lenient: self.lenient,
                rewrite: Some(crate::model::bytes::hold_line),
            },
        );
        let res = r.for_each_event(|ev, _| {
            self.take(&ev, feed);
            true
        });
        self.count(r.stats());
        match res {
            Ok(()) => true,
            Err(e) => {
                self.error = Some(input_error(e, name));
                false
            }
        }
    }

    pub(super) fn count(&mut self, st: trace2::reader::ReadStats) {
        self.stats.lines += st.lines as u64;
        self.stats.skipped_lines += st.bad_lines as u64;
        if st.truncated_last_line {
            self.stats.truncated += 1;
        }
    }

    /// The family of `sid` (made when new).
    pub(super) fn family(&mut self, sid: &str) -> usize {
        // Lines mostly come in runs of one family: its key, then nothing or a '/', without
        // looking for the '/' first.
        if let Some(i) = self.last_fam.filter(|&i| {
            self.fams[i].as_ref().is_some_and(|f| {
                sid.strip_prefix(f.key.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            })
        }) {
            return i;
        }
        let key = sid.split('/').next().unwrap_or(sid);
        let i = match self.fam_of.get(key) {
            Some(&i) => i,
            None => {
                let f = Family {
                    id: self.next_id,
                    key: key.to_string(),
                    sessions: Vec::new(),
                    by_sid: HashMap::default(),
                    last_session: None,
                    notes: NoteBuilder::new(),
                    slots: Vec::new(),
                    slot_of: HashMap::default(),
                    last_slot: None,
                    note_events: Vec::new(),
                    first: None,
                    last: None,
                    open: 0,
                    closed_line: 0,
                };
                self.next_id += 1;
                let i = match self.free.pop() {
                    Some(i) => {
                        self.fams[i] = Some(f);
                        i
                    }
                    None => {
                        self.fams.push(Some(f));
                        self.fams.len() - 1
                    }
                };
                self.fam_of.insert(key.to_string(), i);
                i
            }
        };
        self.last_fam = Some(i);
        i
    }

    /// Takes one event.
    pub(super) fn take(&mut self, ev: &trace2::Event<'_>, feed: &mut dyn FnMut(Event)) {
        let sid = ev.sid.as_ref();
        self.lines += 1;
        let fi = self.family(sid);
        let Some(fam) = self.fams[fi].as_mut() else {
            return;
        };
        // Lines mostly come in runs of one session: compare before hashing.
        let idx = match fam.last_session.filter(|&i| fam.sessions[i].sid == sid) {
            Some(i) => i,
            None => match fam.by_sid.get(sid) {
                Some(&i) => i,
                None => {
                    let i = fam.sessions.len();
                    let root = sid
                        .rsplit_once('/')
                        .is_none_or(|(p, _)| !fam.by_sid.contains_key(p));
                    self.root_sessions += u64::from(root);
                    if root && self.root_sessions >= 2 {
                        // Several roots: no `Root` event; what is held may go.
                        self.out.decided = true;
                    }
                    fam.sessions.push(Session {
                        sid: sid.to_string(),
                        ..Default::default()
                    });
                    fam.by_sid.insert(sid.to_string(), i);
                    fam.open += 1;
                    let n = self.stats.sessions.unwrap_or(0) + 1;
                    self.stats.sessions = Some(n);
                    i
                }
            },
        };
        fam.last_session = Some(idx);
        let s = &mut fam.sessions[idx];
        if let (EventKind::Version { .. }, Some(t)) = (&ev.kind, ev.time) {
            s.base.get_or_insert(t);
        }
        // When it happened: its time, version.time + t_abs (brief), or the session's last time.
        let ts = ev
            .time
            .map(ns)
            .or_else(|| Some(ns(s.base?.add_seconds(ev.t_abs?))))
            .or(s.last);
        if let Some(t) = ts {
            s.first = Some(s.first.map_or(t, |f| f.min(t)));
            s.last = Some(s.last.map_or(t, |l| l.max(t)));
            if fam.first.is_none_or(|f| t < f) {
                if let Some(f) = fam.first {
                    self.starts.remove(&(f, fam.id));
                }
                self.starts.insert((t, fam.id));
                fam.first = Some(t);
            }
            fam.last = Some(fam.last.map_or(t, |l| l.max(t)));
            self.now = t;
            self.min_time = Some(self.min_time.map_or(t, |m| m.min(t)));
            if t < self.out.watermark {
                // Later events were fed already: this line's events come out of order.
                self.stats.late_lines += 1;
            }
        }
        // Lines after an atexit (or a second exit) are a detached fork's.
        let second_exit =
            matches!(ev.kind, EventKind::Exit { .. }) && s.phases.last().is_some_and(|p| p.exit.is_some());
        if s.phase_closed || second_exit {
            if s.phase_closed {
                fam.open += 1;
            }
            s.phases.push(Phase::default());
            s.phase_closed = false;
        }
        s.phase();
        let phase_idx = s.phase_index();
        if let Some(t) = ts {
            let ph = s.phase();
            ph.last = Some(ph.last.map_or(t, |l| l.max(t)));
        }
        let t = ts.unwrap_or(0);
        let mut closed = false;
        match &ev.kind {
            EventKind::Start { argv } => {
                s.argv.get_or_insert_with(|| strings(argv));
            }
            EventKind::TooManyFiles => {
                s.too_many_files = true;
                self.stats.too_many_files += 1;
            }
            EventKind::Exit { code } => {
                s.phase().exit.get_or_insert((t, *code));
            }
            EventKind::Atexit { code } => {
                s.phase().atexit.get_or_insert((t, *code));
                s.phase_closed = true;
                closed = true;
            }
            EventKind::Signal { signo } => {
                s.phase().signal.get_or_insert((t, *signo));
                s.phase_closed = true;
                closed = true;
            }
            EventKind::ChildStart {
                child_id,
                argv,
                use_shell,
                ..
            } => s.children.push(Child {
                id: *child_id,
                phase: phase_idx,
                argv: strings(argv),
                use_shell: *use_shell,
                start: t,
                end: None,
                pid: None,
                code: None,
                ready: None,
                failed_spawn: false,
                signal: None,
            }),
            EventKind::ChildExit {
                child_id,
                pid,
                code,
                t_rel,
            } => {
                if let Some(c) = s.children.iter_mut().rev().find(|c| c.id == *child_id) {
                    c.end = Some(ev.time.map_or(c.start.saturating_add(secs_ns(*t_rel)), ns));
                    c.code = Some(*code);
                    c.pid = Pid::try_from(*pid).ok().filter(|&p| p > 0);
                    c.failed_spawn = *pid <= 0;
                    // wait_or_whine() said the child died of a signal just before.
                    c.signal = s.died_of.take().filter(|n| code - 128 == *n);
                }
            }
            EventKind::ChildReady {
                child_id,
                pid,
                ready,
                t_rel,
            } => {
                if let Some(c) = s.children.iter_mut().rev().find(|c| c.id == *child_id) {
                    c.end = Some(ev.time.map_or(c.start.saturating_add(secs_ns(*t_rel)), ns));
                    c.pid = Pid::try_from(*pid).ok().filter(|&p| p > 0);
                    c.ready = Some(match ready {
                        ReadyState::Ready => BackgroundState::Ready,
                        ReadyState::Timeout => BackgroundState::Timeout,
                        ReadyState::Error => BackgroundState::Error,
                    });
                }
            }
            EventKind::Error { msg, fmt } => {
                s.died_of = died_of_signal(msg.as_deref(), fmt.as_deref());
            }
            EventKind::Exec { exec_id, argv, .. } if phase_idx == 0 => {
                s.execs.push((*exec_id, t, strings(argv)));
            }
            EventKind::ExecResult { exec_id, .. } => {
                // The exec failed: the process goes on as it was.
                if let Some(i) = s.execs.iter().rposition(|e| e.0 == *exec_id) {
                    s.execs.remove(i);
                }
            }
            EventKind::RegionEnter { .. }
            | EventKind::RegionLeave { .. }
            | EventKind::Data { .. }
            | EventKind::DataJson { .. }
            | EventKind::Timer { .. }
            | EventKind::Counter { .. } => {
                let slot = fam.slot(idx, phase_idx);
                if let Some(e) = fam.notes.on_event(slot, t, ev) {
                    fam.note_events.push(e);
                }
            }
            _ => {}
        }
        if closed {
            fam.open = fam.open.saturating_sub(1);
            if fam.open == 0 {
                let at = fam.last.unwrap_or(0).saturating_add(WINDOW_NS);
                self.closing.push(std::cmp::Reverse((at, fi, fam.id)));
                fam.closed_line = self.lines;
                self.closed_fifo.push_back((self.lines, fi, fam.id));
            }
        }
        self.poll(feed);
    }

    /// Builds the families whose time came, and feeds what can go.
    pub(super) fn poll(&mut self, feed: &mut dyn FnMut(Event)) {
        let mut built = false;
        while let Some(&std::cmp::Reverse((at, fi, id))) = self.closing.peek() {
            if at > self.now {
                break;
            }
            self.closing.pop();
            let Some(fam) = self.fams[fi].as_ref().filter(|f| f.id == id) else {
                continue;
            };
            if fam.open > 0 {
                continue;
            }
            let ready = fam.last.unwrap_or(0).saturating_add(WINDOW_NS);
            if ready > self.now {
                self.closing.push(std::cmp::Reverse((ready, fi, id)));
                continue;
            }
            self.build_family(fi);
            built = true;
        }
        // Entries of families built by the line rule stay in `closing` when stream time never
        // reaches them: dropped once they outnumber the live families.
        if self.closing.len() > 2 * (self.fam_of.len() + 512) {
            let fams = &self.fams;
            self.closing
                .retain(|e| fams[e.0.1].as_ref().is_some_and(|f| f.id == e.0.2 && f.open == 0));
        }
        while let Some(&(line, fi, id)) = self.closed_fifo.front() {
            if line + WINDOW_LINES > self.lines {
                break;
            }
            self.closed_fifo.pop_front();
            let ready = self.fams[fi]
                .as_ref()
                .is_some_and(|f| f.id == id && f.open == 0 && f.closed_line == line);
            if ready {
                self.build_family(fi);
                built = true;
            }
        }
        if built || self.out.held.len() > MAX_HELD {
            self.emit(feed);
        }
    }

    /// Feeds what nothing can come before any more: earlier than every live family's start
    /// and than the window behind the latest time.
    pub(super) fn emit(&mut self, feed: &mut dyn FnMut(Event)) {
        let live = self.starts.first().map_or(u64::MAX, |&(t, _)| t);
        let low = live.min(self.now.saturating_sub(WINDOW_NS));
        self.out.emit(low, feed);
    }

    pub(super) fn build_family(&mut self, fi: usize) {
        let Some(fam) = self.fams[fi].take() else {
            return;
        };
        self.free.push(fi);
        self.fam_of.remove(&fam.key);
        if let Some(f) = fam.first {
            self.starts.remove(&(f, fam.id));
        }
        if self.last_fam == Some(fi) {
            self.last_fam = None;
        }
        // A family that showed no time at all is placed where the output is (in order).
        let fallback = fam
            .first
            .unwrap_or_else(|| self.out.watermark.max(self.min_time.unwrap_or(0)));
        build(fam, fallback, &mut self.out);
    }

    /// End of input: every family left is built (in start order), everything is fed.
    pub(super) fn finish(&mut self, feed: &mut dyn FnMut(Event)) {
        let mut left: Vec<(u64, u64, usize)> = self
            .fams
            .iter()
            .enumerate()
            .filter_map(|(i, f)| f.as_ref().map(|f| (f.first.unwrap_or(0), f.id, i)))
            .collect();
        left.sort_unstable();
        for (_, _, fi) in left {
            self.build_family(fi);
        }
        self.closing.clear();
        self.closed_fifo.clear();
        self.out.finish(feed);
    }
}

/// N of git's `"%s died of signal %d"` error (run-command.c `wait_or_whine`).
pub(super) fn died_of_signal(msg: Option<&str>, fmt: Option<&str>) -> Option<i32> {
    if fmt.is_some_and(|f| f != "%s died of signal %d") {
        return None;
    }
    let n = msg?.rsplit_once(" died of signal ")?.1.parse::<i32>().ok()?;
    (1..65).contains(&n).then_some(n)
}
