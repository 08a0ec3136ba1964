//! A family of sessions into processes: which session is whose child (by pid, else by time and
//! argv, against its parent's `child_start`s), which is an exec of its parent, which writes a
//! detached fork's lines, how each ended; then the events of each process, handed to
//! [`super::order::Out`] (pids claimed there). Pure: it reads no input and feeds nothing.

use foldhash::HashMap;

use super::order::Out;
use super::session::Family;
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

/// Builds the processes and the event stream from what was read.
/// Builds one family's processes and hands their events to `out` (pids claimed there).
/// `earliest`: the time of a session that showed none.
pub(super) fn build(mut r: Family, earliest: u64, out: &mut Out) {
    // Regions still open: closed at the end of their session (the last time it showed).
    let by_sid = &r.by_sid;
    let sessions = &r.sessions;
    let closed = r
        .notes
        .close_all_at(|sid| by_sid.get(sid).and_then(|&i| sessions[i].last).unwrap_or(0));
    r.note_events.extend(closed);
    let sessions = &r.sessions;

    // Child sessions per session, in start order; roots.
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

    let mut procs: Vec<Proc> = Vec::new();
    // (session, phase) → process.
    let mut proc_of: HashMap<(usize, usize), usize> = HashMap::default();
    // Work list: (session, the process it runs in, exec'd into it at this time (continuation)).
    let mut work: Vec<(usize, usize, Option<u64>)> = Vec::new();
    for &ri in roots.iter().rev() {
        let s = &sessions[ri];
        let p = procs.len();
        procs.push(Proc {
            pid: sid_pid(&s.sid),
            fork: start_of(ri),
            execs: vec![(start_of(ri), s.argv.clone().unwrap_or_default())],
            has_session: true,
            ..Default::default()
        });
        work.push((ri, p, None));
    }
    while let Some((si, p, exec_at)) = work.pop() {
        let s = &sessions[si];
        procs[p].has_session = true;
        if let Some(t) = exec_at {
            let argv = s.argv.clone().unwrap_or_default();
            procs[p].execs.push((t, argv));
        }
        proc_of.insert((si, 0), p);
        // The session's own end.
        let ph0 = s.phases.first().copied().unwrap_or_default();
        if let Some((t, sig)) = ph0.signal {
            procs[p].exit = Some((
                t,
                ExitStatus::Signal {
                    signal: sig,
                    core: false,
                },
            ));
        } else if let Some((t, code)) = ph0.atexit.or(ph0.exit) {
            procs[p].exit = Some((t, status_of(code)));
        }
        // Detached forks.
        for (k, ph) in s.phases.iter().enumerate().skip(1) {
            let at = s.phases[k - 1]
                .exit
                .or(s.phases[k - 1].atexit)
                .map(|e| e.0)
                .or(s.phases[k - 1].last)
                .unwrap_or(procs[p].fork);
            let parent = proc_of.get(&(si, k - 1)).copied().unwrap_or(p);
            let q = procs.len();
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
            procs.push(Proc {
                parent: Some(parent),
                fork: at,
                exit,
                background: Some((at, BackgroundState::Ready)),
                has_session: true,
                ..Default::default()
            });
            proc_of.insert((si, k), q);
        }
        // Children started with child_start.
        let mut child_proc = Vec::with_capacity(s.children.len());
        for c in &s.children {
            if c.failed_spawn {
                child_proc.push(None);
                continue;
            }
            let parent = proc_of.get(&(si, c.phase)).copied().unwrap_or(p);
            let q = procs.len();
            procs.push(Proc {
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
        let mut direct_taken = vec![false; s.children.len()];
        let starts_sorted = s.children.windows(2).all(|w| w[0].start <= w[1].start);
        // Children by reported pid (a pid can come round again within one parent).
        let mut children_by_pid: HashMap<Pid, Vec<usize>> = HashMap::default();
        for (k, c) in s.children.iter().enumerate() {
            if let Some(pid) = c.pid {
                children_by_pid.entry(pid).or_default().push(k);
            }
        }
        let mut execs_used = vec![false; s.execs.len()];
        let own_pid = sid_pid(&s.sid);
        for &ci in &kids[si] {
            let c = &sessions[ci];
            let cstart = start_of(ci);
            let cpid = sid_pid(&c.sid);
            // An exec of this session's process.
            let exec = s.execs.iter().enumerate().rev().find(|(i, e)| {
                !execs_used[*i]
                    && e.1 <= cstart
                    && match (own_pid, cpid) {
                        (Some(a), Some(b)) => a == b,
                        _ => true,
                    }
            });
            if let Some((i, e)) = exec {
                execs_used[i] = true;
                work.push((ci, p, Some(e.1)));
                continue;
            }
            // The child_start it came from: by pid, else by time and argv.
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
                    work.push((ci, q, Some(cstart.max(s.children[k].start))));
                } else {
                    if let Some(a) = &c.argv {
                        procs[q].execs[0].1 = a.clone();
                    }
                    work.push((ci, q, None));
                }
                continue;
            }
            let covers = |k: usize| {
                let ch = &s.children[k];
                child_proc[k].is_some() && ch.start <= cstart && ch.end.is_none_or(|e| cstart <= e)
            };
            let cargv = c.argv.as_deref().unwrap_or(&[]);
            // Only children started by then can contain it (children are in start order,
            // almost always: then a binary search keeps this linear overall).
            let hi = if starts_sorted {
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
                    procs[q].execs[0].1 = a.clone();
                }
                // No child_exit (the parent died first): the SID knows the pid.
                procs[q].pid = procs[q].pid.or(cpid);
                work.push((ci, q, None));
                continue;
            }
            // Inside a child's span but another process: that child's child (via a shell, a
            // hook script). Otherwise a child of this process no child_start reported.
            let parent = (0..hi)
                .rev()
                .find(|&k| covers(k))
                .and_then(|k| child_proc[k])
                .unwrap_or(p);
            let q = procs.len();
            procs.push(Proc {
                parent: Some(parent),
                pid: cpid,
                fork: cstart,
                execs: vec![(cstart, c.argv.clone().unwrap_or_default())],
                has_session: true,
                ..Default::default()
            });
            work.push((ci, q, None));
        }
        // Execs with no session after them: the process runs something else now.
        for (i, e) in s.execs.iter().enumerate() {
            if !execs_used[i] {
                procs[p].execs.push((e.1, e.2.clone()));
            }
        }
    }

    // Ends the sessions did not write: what the parent reported.
    for pr in procs.iter_mut() {
        if pr.exit.is_none() {
            if let Some((t, code)) = pr.reported {
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
    // Times consistent: a child forks after its parent, execs and exits after its fork.
    for i in 0..procs.len() {
        if let Some(par) = procs[i].parent {
            if par < i {
                procs[i].fork = procs[i].fork.max(procs[par].fork);
            }
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
    // pids: known ones unless the same pid is alive twice at once (in this family or one
    // built before whose exit is not fed yet); stand-ins otherwise.
    let mut order: Vec<usize> = (0..procs.len()).collect();
    order.sort_by_key(|&i| (procs[i].pid, procs[i].fork, i));
    let mut pid_of = vec![0; procs.len()];
    for &i in &order {
        let end = procs[i].exit.map_or(u64::MAX, |x| x.0);
        pid_of[i] = out.claim(procs[i].pid, procs[i].fork, end);
    }

    // The events, in time order: fork < exec < notes < background < exit at equal times,
    // parents before children (creation order).
    let mut push = |ts: u64, prio: u8, e: Event| out.push(ts, prio, e);
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
        push(
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
            push(t, 1, Event::Exec { ts: t, tgid: pid });
            push(
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
            push(
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
            push(
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
    // What each process cost, when the stream carries it (proctrace's own Trace2 output writes
    // the figures as `data` in category `proctrace`): back into `Event::Usage`, by process.
    let mut costs: Vec<Option<Box<Usage>>> = Vec::new();
    // Notes come in runs of one slot: its process is looked up once per run.
    let mut last: Option<(Pid, usize)> = None;
    for mut e in std::mem::take(&mut r.note_events) {
        let slot = match &e {
            Event::Region { tgid, .. } | Event::Data { tgid, .. } => *tgid,
            _ => continue,
        };
        let p = match last {
            Some((s, p)) if s == slot => p,
            _ => {
                let Some(&(si, ph)) = usize::try_from(slot).ok().and_then(|s| r.slots.get(s)) else {
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
                if data.category == "proctrace" {
                    if let DataValue::Text(v) = &data.value {
                        if let Some((set, x)) = cost_figure(&data.key, v) {
                            if costs.is_empty() {
                                costs.resize(procs.len(), None);
                            }
                            set(costs[p].get_or_insert_with(Box::default), x);
                            continue;
                        }
                    }
                }
                *tgid = pid;
                data.ts = data.ts.max(fork);
                data.ts
            }
            _ => continue,
        };
        push(ts, 2, e);
    }
    for (p, u) in costs.into_iter().enumerate() {
        // Before the exit at the same time (prio 3 < 4); figures of a process that never ended
        // in the stream are left out, as a backend would.
        if let (Some(usage), Some((t, _))) = (u, procs[p].exit) {
            push(
                t,
                3,
                Event::Usage {
                    tgid: pid_of[p],
                    usage,
                },
            );
        }
    }
    let roots: Vec<usize> = (0..procs.len()).filter(|&i| procs[i].parent.is_none()).collect();
    out.roots += roots.len();
    if let Some(&last) = roots.last() {
        out.root_pid = Some(pid_of[last]);
    }
    if out.roots >= 2 {
        out.decided = true;
    }
    out.held.end_run();
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
