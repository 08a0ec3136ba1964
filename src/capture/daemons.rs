//! `run --include-daemons`: the daemons running at the start whose new work the run follows.
//!
//! A daemon is told by its argv, read from `/proc` ([`crate::model::elsewhere::running_server`]:
//! the sccache server, the Bazel and buck2 servers, the Gradle daemon, dockerd, containerd and
//! its shims, conmon, a podman service). Found with it: the processes under it now (a worker, buck2's
//! forkserver, a container's shim), since what it starts during the run may be started by one
//! of them. None of these is in the trace yet: the model takes each in when it (or a process
//! under it) starts a process during the run ([`crate::model::tracker::Followup::TakeIn`]),
//! so a daemon that started nothing adds nothing.
//!
//! Never followed: proctrace itself and the processes it runs under (a `proctrace run` inside
//! a Bazel action would otherwise follow the whole Bazel server, every other action included),
//! and a daemon under another one found (it is part of that one's tree).

use std::collections::HashMap;

use crate::capture::procfs;
use crate::model::elsewhere::{DaemonKind, running_server};
use crate::model::event::Pid;

/// The daemons found, and the processes under them.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Found {
    /// Each daemon, with its kind, in order of start.
    pub servers: Vec<(Pid, DaemonKind)>,
    /// Every process under one of them now.
    pub under: Vec<Pid>,
}

impl Found {
    /// Every pid: the daemons, then the processes under them.
    pub fn pids(&self) -> Vec<Pid> {
        self.servers
            .iter()
            .map(|&(p, _)| p)
            .chain(self.under.iter().copied())
            .collect()
    }
}

/// Scans `/proc` for the daemons of `kinds` running now (see the module docs). `me`: proctrace.
pub fn find(kinds: &[DaemonKind], me: Pid) -> Found {
    let all = procfs::all_processes();
    let procs: Vec<(Pid, Pid)> = all.iter().map(|(p, st)| (*p, st.ppid)).collect();
    find_among(&procs, me, |pid| {
        procfs::cmdline(pid).and_then(|a| running_server(&a, kinds))
    })
}

/// [`find`] over `procs` (pid, parent), in order of start, with `kind` telling a daemon.
fn find_among(procs: &[(Pid, Pid)], me: Pid, kind: impl Fn(Pid) -> Option<DaemonKind>) -> Found {
    let parent: HashMap<Pid, Pid> = procs.iter().copied().collect();
    // proctrace and every process it runs under.
    let mut mine = vec![me];
    let mut cur = me;
    while let Some(&p) = parent.get(&cur) {
        if p <= 0 || mine.contains(&p) {
            break;
        }
        mine.push(p);
        cur = p;
    }
    let mut children: HashMap<Pid, Vec<Pid>> = HashMap::new();
    for &(pid, ppid) in procs {
        children.entry(ppid).or_default().push(pid);
    }
    // A process is under a daemon when one of its ancestors is one.
    let under_daemon = |mut p: Pid, daemons: &[(Pid, DaemonKind)]| {
        for _ in 0..4096 {
            match parent.get(&p) {
                Some(&pp) if pp > 0 => {
                    if daemons.iter().any(|&(d, _)| d == pp) {
                        return true;
                    }
                    p = pp;
                }
                _ => break,
            }
        }
        false
    };
    let mut found = Found::default();
    let candidates: Vec<(Pid, DaemonKind)> = procs
        .iter()
        .filter(|(p, _)| !mine.contains(p))
        .filter_map(|&(p, _)| Some((p, kind(p)?)))
        .collect();
    for &(pid, k) in &candidates {
        if !under_daemon(pid, &candidates) {
            found.servers.push((pid, k));
        }
    }
    // Everything under them, breadth first (bounded by the process table).
    let mut todo: std::collections::VecDeque<Pid> = found.servers.iter().map(|&(p, _)| p).collect();
    let mut seen: std::collections::HashSet<Pid> = todo.iter().copied().collect();
    while let Some(p) = todo.pop_front() {
        for &c in children.get(&p).map_or(&[][..], Vec::as_slice) {
            if !mine.contains(&c) && seen.insert(c) {
                found.under.push(c);
                todo.push_back(c);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(name: &str) -> DaemonKind {
        DaemonKind::of_name(name).unwrap_or_else(|| panic!("{name}"))
    }

    #[test]
    fn daemons_and_what_is_under_them_but_never_proctrace_s_own() {
        // 10 a daemon with 11 and its child 12 under it; 20 a daemon proctrace (30) runs under;
        // 40 a daemon under 10 (part of 10's tree); 50 an unrelated process.
        let procs = [
            (10, 1),
            (20, 1),
            (11, 10),
            (12, 11),
            (21, 20),
            (30, 21),
            (40, 10),
            (50, 1),
        ];
        let found = find_among(&procs, 30, |p| match p {
            10 | 20 | 40 => Some(kind("sccache")),
            _ => None,
        });
        assert_eq!(found.servers, vec![(10, kind("sccache"))]);
        assert_eq!(found.under, vec![11, 40, 12]);
        assert_eq!(found.pids(), vec![10, 11, 40, 12]);
    }
}
