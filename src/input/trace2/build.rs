//! A family of sessions into processes: which session is whose child (by pid, else by time and
//! argv, against its parent's `child_start`s), which is an exec of its parent, which writes a
//! detached fork's lines, how each ended; then the events of each process, handed to
//! [`super::order::Out`] (pids claimed there). Pure: it reads no input and feeds nothing.

use foldhash::HashMap;

use super::order::Out;
use super::session::{Family, Session};
use super::{PID_MAX_LIMIT, status_of, wait_status};
use crate::model::event::{Argv, DataValue, Event, ExecDetails, ExitStatus, Pid, Usage};
use crate::model::tracker::BackgroundState;

/// A process being built from sessions.
#[derive(Debug, Default)]
pub(super) struct Proc {
    pub(super) parent: Option<usize>,
    /// Known real pid (from the parent's `child_exit`/`child_ready` or the SID).
    pub(super) pid: Option<Pid>,
    pub(super) fork: u64,
    /// Execs: time and argv (the first at fork for processes started by `child_start`).
    pub(super) execs: Vec<(u64, Vec<String>)>,
    pub(super) exit: Option<(u64, ExitStatus)>,
    /// Status the parent reported (`child_exit`), used when the process wrote no exit.
    pub(super) reported: Option<(u64, i32)>,
    pub(super) background: Option<(u64, BackgroundState)>,
    /// Wrote a session of its own (a parent's 128+N then means signal N).
    pub(super) has_session: bool,
    /// The parent said it died of this signal.
    pub(super) died_of: Option<i32>,
}

/// The `-P<hex>` suffix of a SID's last component (git's pid), if it has one.
pub(super) fn sid_pid(sid: &str) -> Option<Pid> {
    let last = sid.rsplit('/').next()?;
    let at = last.rfind("-P")?;
    let rest = &last[at + 2..];
    // Google's repo tool may add `-<n>`.
    let hex = rest.split('-').next()?;
    if hex.is_empty() || hex.len() > 8 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let v = u32::from_str_radix(hex, 16).ok()?;
    Pid::try_from(v).ok().filter(|&p| p > 0 && p <= PID_MAX_LIMIT)
}

/// argv as comparable command words: `git-upload-pack x` and `/usr/bin/git upload-pack x` are
/// both `git upload-pack x`.
pub(super) fn words(argv: &[String]) -> Vec<&str> {
    let mut out = Vec::with_capacity(argv.len() + 1);
    if let Some(a0) = argv.first() {
        let base = a0.rsplit('/').next().unwrap_or(a0);
        if let Some(sub) = base.strip_prefix("git-") {
            out.push("git");
            out.push(sub);
        } else {
            out.push(base);
        }
    }
    out.extend(argv.iter().skip(1).map(|s| s.as_str()));
    out
}

pub(super) fn argv_matches(a: &[String], b: &[String]) -> bool {
    words(a) == words(b)
}

/// What a `child_start` ran: git runs a `use_shell` command with shell syntax in it as
/// `/bin/sh -c 'CMD "$@"' CMD ARGS...` (`prepare_shell_cmd` in run-command.c), else directly.
pub(super) fn spawned_argv(argv: &[String], use_shell: bool) -> Vec<String> {
    const META: &[char] = &[
        '|', '&', ';', '<', '>', '(', ')', '$', '`', '\\', '"', '\'', ' ', '\t', '\n', '*', '?', '[', '#',
        '~', '=', '%',
    ];
    match argv.split_first() {
        Some((cmd, rest)) if use_shell && cmd.contains(META) => {
            let mut v = vec!["/bin/sh".to_string(), "-c".to_string()];
            if rest.is_empty() {
                v.push(cmd.clone());
            } else {
                v.push(format!("{cmd} \"$@\""));
                v.push(cmd.clone());
                v.extend(rest.iter().cloned());
            }
            v
        }
        _ => argv.to_vec(),
    }
}

pub(super) fn comm_of(argv: &[String]) -> Option<String> {
    let a0 = argv.first()?;
    let base = a0.rsplit('/').next().unwrap_or(a0);
    let mut end = base.len().min(15);
    while !base.is_char_boundary(end) {
        end -= 1;
    }
    Some(base[..end].to_string())
}

/// Builds one family's processes and hands their events to `out` (pids claimed there).
/// `earliest`: the time of a session that showed none.
///
/// In steps: close the regions left open, find each session's parent session, place every
/// session in a process (its own, an exec of its parent's, or a `child_start`'s), fill in the
/// ends the sessions did not write, make the times consistent, claim pids, then push the
/// lifecycle events, the notes and costs, and what `out` needs about the roots.
pub(super) fn build(mut r: Family, earliest: u64, out: &mut Out) {
    close_open_regions(&mut r);
    let (kids, roots) = session_tree(&r, earliest);
    let mut tree = Tree::new(&r.sessions, &kids, earliest);
    tree.start_roots(&roots);
    while let Some(job) = tree.work.pop() {
        tree.place(job);
    }
    let Tree {
        mut procs, proc_of, ..
    } = tree;
    take_reported_ends(&mut procs);
    make_times_consistent(&mut procs);
    let pid_of = claim_pids(&procs, out);
    push_lifecycles(&mut procs, &pid_of, out);
    push_notes(
        std::mem::take(&mut r.note_events),
        &r.slots,
        &proc_of,
        &procs,
        &pid_of,
        out,
    );
    count_roots(&procs, &pid_of, out);
    out.held.end_run();
}

/// Closes the regions still open at the end of their session (the last time it showed), so
/// every region has an end before it is fed.
fn close_open_regions(r: &mut Family) {
    let by_sid = &r.by_sid;
    let sessions = &r.sessions;
    let closed = r
        .notes
        .close_all_at(|sid| by_sid.get(sid).and_then(|&i| sessions[i].last).unwrap_or(0));
    r.note_events.extend(closed);
}

/// The sessions' tree by SID: each session's child sessions and the roots (sessions whose
/// parent SID is not in the family), each in start order, so processes are created parents
/// first and children in the order they started.
fn session_tree(r: &Family, earliest: u64) -> (Vec<Vec<usize>>, Vec<usize>) {
    let sessions = &r.sessions;
    let mut kids: Vec<Vec<usize>> = vec![Vec::new(); sessions.len()];
    let mut roots = Vec::new();
    for (i, s) in sessions.iter().enumerate() {
        let parent = s.sid.rsplit_once('/').and_then(|(p, _)| r.by_sid.get(p).copied());
        match parent {
            Some(p) if p != i => kids[p].push(i),
            _ => roots.push(i),
        }
    }
    let start_of = |i: usize| sessions[i].first.unwrap_or(earliest);
    for k in kids.iter_mut() {
        k.sort_by_key(|&i| (start_of(i), i));
    }
    roots.sort_by_key(|&i| (start_of(i), i));
    (kids, roots)
}

/// A session to place: (session, the process it runs in, exec'd into it at this time (a
/// continuation of its parent's process)).
type Job = (usize, usize, Option<u64>);

/// The processes made so far from a family's sessions, and the sessions still to place.
struct Tree<'a> {
    sessions: &'a [Session],
    /// Child sessions per session, in start order.
    kids: &'a [Vec<usize>],
    earliest: u64,
    procs: Vec<Proc>,
    /// (session, phase) → process.
    proc_of: HashMap<(usize, usize), usize>,
    /// Sessions still to place, the next last (depth first, children in start order).
    work: Vec<Job>,
}

/// What one session's child sessions are matched against: its `child_start`s (their
/// processes, which are taken) and its execs (which are used).
struct Offers {
    /// Process of each `child_start` (`None`: the spawn failed).
    child_proc: Vec<Option<usize>>,
    /// The `child_start` already has its session.
    direct_taken: Vec<bool>,
    /// `child_start`s are in start order (almost always): then a binary search bounds them.
    starts_sorted: bool,
    /// `child_start`s by reported pid (a pid can come round again within one parent).
    children_by_pid: HashMap<Pid, Vec<usize>>,
    /// The exec already has its session.
    execs_used: Vec<bool>,
    own_pid: Option<Pid>,
}

impl<'a> Tree<'a> {
    fn new(sessions: &'a [Session], kids: &'a [Vec<usize>], earliest: u64) -> Self {
        Tree {
            sessions,
            kids,
            earliest,
            procs: Vec::new(),
            proc_of: HashMap::default(),
            work: Vec::new(),
        }
    }

    fn start_of(&self, i: usize) -> u64 {
        self.sessions[i].first.unwrap_or(self.earliest)
    }

    /// A process for each root session, its pid from the SID; queued so the first root is
    /// placed first.
    fn start_roots(&mut self, roots: &[usize]) {
        for &ri in roots.iter().rev() {
            let s = &self.sessions[ri];
            let p = self.procs.len();
            self.procs.push(Proc {
                pid: sid_pid(&s.sid),
                fork: self.start_of(ri),
                execs: vec![(self.start_of(ri), s.argv.clone().unwrap_or_default())],
                has_session: true,
                ..Default::default()
            });
            self.work.push((ri, p, None));
        }
    }

    /// Places one session in process `p`: its exec (for a continuation), its end, its
    /// detached forks and `child_start`s as processes, then its child sessions (queued), and
    /// its execs no session followed.
    fn place(&mut self, (si, p, exec_at): Job) {
        let (sessions, kids) = (self.sessions, self.kids);
        let s = &sessions[si];
        self.procs[p].has_session = true;
        if let Some(t) = exec_at {
            let argv = s.argv.clone().unwrap_or_default();
            self.procs[p].execs.push((t, argv));
        }
        self.proc_of.insert((si, 0), p);
        self.own_end(si, p);
        self.detached_forks(si, p);
        let mut offers = self.started_children(si, p);
        for &ci in &kids[si] {
            self.place_child_session(si, p, ci, &mut offers);
        }
        // Execs with no session after them: the process runs something else now.
        for (i, e) in s.execs.iter().enumerate() {
            if !offers.execs_used[i] {
                self.procs[p].execs.push((e.1, e.2.clone()));
            }
        }
    }

    /// The session's own end (phase 0): a signal it wrote, else its `atexit` or `exit`.
    fn own_end(&mut self, si: usize, p: usize) {
        let ph0 = self.sessions[si].phases.first().copied().unwrap_or_default();
        if let Some((t, sig)) = ph0.signal {
            self.procs[p].exit = Some((
                t,
                ExitStatus::Signal {
                    signal: sig,
                    core: false,
                },
            ));
        } else if let Some((t, code)) = ph0.atexit.or(ph0.exit) {
            self.procs[p].exit = Some((t, status_of(code)));
        }
    }

    /// A process for each detached fork (phase k ≥ 1), forked from the previous phase's process
    /// when that one ended, already released to the background.
    fn detached_forks(&mut self, si: usize, p: usize) {
        let s = &self.sessions[si];
        for (k, ph) in s.phases.iter().enumerate().skip(1) {
            let at = s.phases[k - 1]
                .exit
                .or(s.phases[k - 1].atexit)
                .map(|e| e.0)
                .or(s.phases[k - 1].last)
                .unwrap_or(self.procs[p].fork);
            let parent = self.proc_of.get(&(si, k - 1)).copied().unwrap_or(p);
            let q = self.procs.len();
            let exit = if let Some((t, sig)) = ph.signal {
                Some((
                    t,
                    ExitStatus::Signal {
                        signal: sig,
                        core: false,
                    },
                ))
            } else {
                ph.atexit.or(ph.exit).map(|(t, c)| (t, status_of(c)))
            };
            self.procs.push(Proc {
                parent: Some(parent),
                fork: at,
                exit,
                background: Some((at, BackgroundState::Ready)),
                has_session: true,
                ..Default::default()
            });
            self.proc_of.insert((si, k), q);
        }
    }

    /// A process for each `child_start` that spawned (what it ran, what the parent reported
    /// about it), and the offers its child sessions are matched against.
    fn started_children(&mut self, si: usize, p: usize) -> Offers {
        let s = &self.sessions[si];
        let mut child_proc = Vec::with_capacity(s.children.len());
        for c in &s.children {
            if c.failed_spawn {
                child_proc.push(None);
                continue;
            }
            let parent = self.proc_of.get(&(si, c.phase)).copied().unwrap_or(p);
            let q = self.procs.len();
            self.procs.push(Proc {
                parent: Some(parent),
                pid: c.pid,
                fork: c.start,
                execs: vec![(c.start, spawned_argv(&c.argv, c.use_shell))],
                reported: c.code.map(|code| (c.end.unwrap_or(c.start), code)),
                background: c.ready.map(|st| (c.end.unwrap_or(c.start), st)),
                died_of: c.signal,
                ..Default::default()
            });
            child_proc.push(Some(q));
        }
        let mut children_by_pid: HashMap<Pid, Vec<usize>> = HashMap::default();
        for (k, c) in s.children.iter().enumerate() {
            if let Some(pid) = c.pid {
                children_by_pid.entry(pid).or_default().push(k);
            }
        }
        Offers {
            child_proc,
            direct_taken: vec![false; s.children.len()],
            starts_sorted: s.children.windows(2).all(|w| w[0].start <= w[1].start),
            children_by_pid,
            execs_used: vec![false; s.execs.len()],
            own_pid: sid_pid(&s.sid),
        }
    }

    /// Finds where child session `ci` of session `si` (in process `p`) runs, and queues it: an
    /// exec of `p`; else the `child_start` it came from, by pid, else by time and argv; else a
    /// process of its own, under the `child_start` whose span holds it (through a shell or a
    /// hook script) or under `p` (a child no `child_start` reported).
    fn place_child_session(&mut self, si: usize, p: usize, ci: usize, offers: &mut Offers) {
        let s = &self.sessions[si];
        let c = &self.sessions[ci];
        let cstart = self.start_of(ci);
        let cpid = sid_pid(&c.sid);
        // An exec of this session's process.
        let own_pid = offers.own_pid;
        let execs_used = &offers.execs_used;
        let exec = s.execs.iter().enumerate().rev().find(|(i, e)| {
            !execs_used[*i]
                && e.1 <= cstart
                && match (own_pid, cpid) {
                    (Some(a), Some(b)) => a == b,
                    _ => true,
                }
        });
        if let Some((i, e)) = exec {
            offers.execs_used[i] = true;
            self.work.push((ci, p, Some(e.1)));
            return;
        }
        // The child_start it came from: by pid, else by time and argv.
        let Offers {
            child_proc,
            direct_taken,
            children_by_pid,
            ..
        } = offers;
        let by_pid = cpid.and_then(|cp| {
            let ks = children_by_pid.get_mut(&cp)?;
            let at = ks
                .iter()
                .position(|&k| !direct_taken[k] && child_proc[k].is_some())?;
            Some(ks.remove(at))
        });
        if let Some(k) = by_pid {
            direct_taken[k] = true;
            let q = child_proc[k].unwrap_or(p);
            let shell = s.children[k].use_shell
                || !argv_matches(&s.children[k].argv, c.argv.as_deref().unwrap_or(&[]));
            if shell {
                // A shell (or hook script) that exec'd the command.
                self.work.push((ci, q, Some(cstart.max(s.children[k].start))));
            } else {
                if let Some(a) = &c.argv {
                    self.procs[q].execs[0].1 = a.clone();
                }
                self.work.push((ci, q, None));
            }
            return;
        }
        let covers = |k: usize| {
            let ch = &s.children[k];
            child_proc[k].is_some() && ch.start <= cstart && ch.end.is_none_or(|e| cstart <= e)
        };
        let cargv = c.argv.as_deref().unwrap_or(&[]);
        // Only children started by then can contain it (children are in start order,
        // almost always: then a binary search keeps this linear overall).
        let hi = if offers.starts_sorted {
            s.children.partition_point(|ch| ch.start <= cstart)
        } else {
            s.children.len()
        };
        let direct = (0..hi).rev().find(|&k| {
            covers(k)
                && !direct_taken[k]
                && argv_matches(&s.children[k].argv, cargv)
                && match (s.children[k].pid, cpid) {
                    (Some(a), Some(b)) => a == b,
                    _ => true,
                }
        });
        if let Some(k) = direct {
            direct_taken[k] = true;
            let q = child_proc[k].unwrap_or(p);
            if let Some(a) = &c.argv {
                self.procs[q].execs[0].1 = a.clone();
            }
            // No child_exit (the parent died first): the SID knows the pid.
            self.procs[q].pid = self.procs[q].pid.or(cpid);
            self.work.push((ci, q, None));
            return;
        }
        // Inside a child's span but another process: that child's child (via a shell, a
        // hook script). Otherwise a child of this process no child_start reported.
        let parent = (0..hi)
            .rev()
            .find(|&k| covers(k))
            .and_then(|k| child_proc[k])
            .unwrap_or(p);
        let q = self.procs.len();
        self.procs.push(Proc {
            parent: Some(parent),
            pid: cpid,
            fork: cstart,
            execs: vec![(cstart, c.argv.clone().unwrap_or_default())],
            has_session: true,
            ..Default::default()
        });
        self.work.push((ci, q, None));
    }
}

/// Ends the sessions did not write: what the parent reported (`child_exit`), a 128+N of a
/// process that wrote a session read as signal N.
fn take_reported_ends(procs: &mut [Proc]) {
    for pr in procs.iter_mut() {
        if pr.exit.is_none()
            && let Some((t, code)) = pr.reported
        {
            let st = if let Some(signal) = pr.died_of {
                ExitStatus::Signal { signal, core: false }
            } else if pr.has_session && code > 128 && code < 128 + 65 {
                ExitStatus::Signal {
                    signal: code - 128,
                    core: false,
                }
            } else {
                status_of(code)
            };
            pr.exit = Some((t, st));
        }
    }
}

/// Times consistent: a child forks after its parent, execs and exits after its fork, is
/// released to the background between its fork and its exit (clocks of different processes
/// and parents' reports can disagree; the model requires this order).
fn make_times_consistent(procs: &mut [Proc]) {
    for i in 0..procs.len() {
        if let Some(par) = procs[i].parent
            && par < i
        {
            procs[i].fork = procs[i].fork.max(procs[par].fork);
        }
        let f = procs[i].fork;
        let mut last = f;
        for e in procs[i].execs.iter_mut() {
            e.0 = e.0.max(last);
            last = e.0;
        }
        if let Some(x) = procs[i].exit.as_mut() {
            x.0 = x.0.max(last);
        }
        let exit = procs[i].exit.map(|x| x.0);
        if let Some(b) = procs[i].background.as_mut() {
            // Released before it ended (a stream saying otherwise contradicts itself).
            b.0 = b.0.max(f).min(exit.unwrap_or(u64::MAX));
        }
    }
}

/// The pid each process is fed with: its known one unless the same pid is alive twice at once
/// (in this family or one built before whose exit is not fed yet); a stand-in otherwise.
fn claim_pids(procs: &[Proc], out: &mut Out) -> Vec<Pid> {
    let mut order: Vec<usize> = (0..procs.len()).collect();
    order.sort_by_key(|&i| (procs[i].pid, procs[i].fork, i));
    let mut pid_of = vec![0; procs.len()];
    for &i in &order {
        let end = procs[i].exit.map_or(u64::MAX, |x| x.0);
        pid_of[i] = out.claim(procs[i].pid, procs[i].fork, end);
    }
    pid_of
}

/// Each process's fork, execs, background release and exit, pushed at priorities that order
/// them at equal times (fork < exec < notes < background < exit), parents before children.
/// Takes the execs out of `procs` (nothing reads them after this).
fn push_lifecycles(procs: &mut [Proc], pid_of: &[Pid], out: &mut Out) {
    // Parents are created before their children (a parent's index is smaller), so one pass
    // gives every depth; feeding by depth puts a parent's fork before its children's at equal
    // times.
    let mut depth = vec![0usize; procs.len()];
    for i in 0..procs.len() {
        if let Some(p) = procs[i].parent.filter(|&p| p < i) {
            depth[i] = depth[p] + 1;
        }
    }
    let mut by_depth: Vec<usize> = (0..procs.len()).collect();
    by_depth.sort_by_key(|&i| (depth[i], i));
    for &i in &by_depth {
        // Moved, not copied: nothing reads a process's execs after this.
        let execs = std::mem::take(&mut procs[i].execs);
        let pr = &procs[i];
        let pid = pid_of[i];
        let ppid = pr.parent.map_or(0, |p| pid_of[p]);
        out.push(
            pr.fork,
            0,
            Event::Fork {
                ts: pr.fork,
                parent_tgid: ppid,
                child_pid: pid,
                child_tgid: pid,
            },
        );
        for (t, argv) in execs {
            out.push(t, 1, Event::Exec { ts: t, tgid: pid });
            out.push(
                t,
                1,
                Event::ExecDetails {
                    tgid: pid,
                    details: ExecDetails {
                        comm: comm_of(&argv),
                        argv: Some(Argv::from(argv)),
                        ..Default::default()
                    },
                },
            );
        }
        if let Some((t, state)) = pr.background {
            out.push(
                t,
                3,
                Event::Background {
                    ts: t,
                    tgid: pid,
                    state,
                    report: true,
                },
            );
        }
        if let Some((t, st)) = pr.exit {
            out.push(
                t,
                4,
                Event::Exit {
                    ts: t,
                    pid,
                    tgid: pid,
                    status: wait_status(st),
                    parent_tgid: ppid,
                },
            );
        }
    }
}

/// The notes (regions, data) with their slot replaced by their process's pid and their times
/// kept at or after its fork; proctrace's own cost figures (`data` in category `proctrace`,
/// as its Trace2 output writes them) go back into one `Event::Usage` per process instead,
/// pushed just before its exit.
fn push_notes(
    note_events: Vec<Event>,
    slots: &[(usize, usize)],
    proc_of: &HashMap<(usize, usize), usize>,
    procs: &[Proc],
    pid_of: &[Pid],
    out: &mut Out,
) {
    let mut costs: Vec<Option<Box<Usage>>> = Vec::new();
    // Notes come in runs of one slot: its process is looked up once per run.
    let mut last: Option<(Pid, usize)> = None;
    for mut e in note_events {
        let slot = match &e {
            Event::Region { tgid, .. } | Event::Data { tgid, .. } => *tgid,
            _ => continue,
        };
        let p = match last {
            Some((s, p)) if s == slot => p,
            _ => {
                let Some(&(si, ph)) = usize::try_from(slot).ok().and_then(|s| slots.get(s)) else {
                    continue;
                };
                let Some(&p) = proc_of.get(&(si, ph)).or_else(|| proc_of.get(&(si, 0))) else {
                    continue;
                };
                last = Some((slot, p));
                p
            }
        };
        let fork = procs[p].fork;
        let pid = pid_of[p];
        let ts = match &mut e {
            Event::Region { tgid, region } => {
                *tgid = pid;
                region.ts = region.ts.max(fork);
                region.end = region.end.max(region.ts);
                region.end
            }
            Event::Data { tgid, data } => {
                if data.category == "proctrace"
                    && let DataValue::Text(v) = &data.value
                    && let Some((set, x)) = cost_figure(&data.key, v)
                {
                    if costs.is_empty() {
                        costs.resize(procs.len(), None);
                    }
                    set(costs[p].get_or_insert_with(Box::default), x);
                    continue;
                }
                *tgid = pid;
                data.ts = data.ts.max(fork);
                data.ts
            }
            _ => continue,
        };
        out.push(ts, 2, e);
    }
    for (p, u) in costs.into_iter().enumerate() {
        // Before the exit at the same time (prio 3 < 4); figures of a process that never ended
        // in the stream are left out, as a backend would.
        if let (Some(usage), Some((t, _))) = (u, procs[p].exit) {
            out.push(
                t,
                3,
                Event::Usage {
                    tgid: pid_of[p],
                    usage,
                },
            );
        }
    }
}

/// Counts the family's root processes into `out` and names the last one's pid: with two or
/// more roots in all there is no single root to feed first, so that is settled (`decided`).
fn count_roots(procs: &[Proc], pid_of: &[Pid], out: &mut Out) {
    let roots: Vec<usize> = (0..procs.len()).filter(|&i| procs[i].parent.is_none()).collect();
    out.roots += roots.len();
    if let Some(&last) = roots.last() {
        out.root_pid = Some(pid_of[last]);
    }
    if out.roots >= 2 {
        out.decided = true;
    }
}

/// Puts one figure into a [`Usage`].
pub(super) type SetFigure = fn(&mut Usage, u64);

/// One cost figure as proctrace's Trace2 sink writes it (`data`, category `proctrace`, key
/// named as on the JSON Lines `exit` line, seconds with decimals or a count): where it goes in
/// a [`Usage`] and its value (ns for seconds). `None` for any other key, or a value that is not
/// a non-negative number (then it stays an ordinary `data` event).
pub(super) fn cost_figure(key: &str, value: &str) -> Option<(SetFigure, u64)> {
    let secs = || {
        value
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && *x >= 0.0 && *x < 1e9)
            .map(|x| (x * 1e9).round() as u64)
    };
    let count = || value.trim().parse::<u64>().ok();
    let set: SetFigure = match key {
        "cpu_user_s" => |u, x| u.cpu_user_ns = x,
        "cpu_sys_s" => |u, x| u.cpu_sys_ns = x,
        "cpu_delay_s" => |u, x| u.cpu_delay_ns = Some(x),
        "io_delay_s" => |u, x| u.io_delay_ns = Some(x),
        "max_rss_kib" => |u, x| u.max_rss_kib = x,
        "read_chars" => |u, x| u.read_chars = x,
        "write_chars" => |u, x| u.write_chars = x,
        "read_bytes" => |u, x| u.read_bytes = x,
        "write_bytes" => |u, x| u.write_bytes = x,
        "cancelled_write_bytes" => |u, x| u.cancelled_write_bytes = x,
        "ctx_switches_voluntary" => |u, x| u.vol_ctx_switches = x,
        "ctx_switches_involuntary" => |u, x| u.invol_ctx_switches = x,
        _ => return None,
    };
    let x = match key.ends_with("_s") {
        true => secs()?,
        false => count()?,
    };
    Some((set, x))
}
