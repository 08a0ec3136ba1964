//! `watch` filters: which facts reach the outputs.
//!
//! A [`FactFilter`] sits between the tracker and the sinks ([`crate::engine::Engine`] asks it about
//! every fact before formatting). The tracker still applies every event, so parentage, pid reuse
//! and loss accounting stay right; only what is *written* is narrowed. Each check is O(1) or a
//! short comparison, with no allocation, so a filter costs nothing measurable per event.

use crate::model::tracker::{Fact, ProcessRecord, Tracker};

/// A kind of fact, named as the JSON Lines `event` field names it (plus forkstat's spellings
/// as aliases).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FactKind {
    /// A process started (`fork`).
    Fork,
    /// A program was executed (`exec`).
    Exec,
    /// A process ended (`exit`).
    Exit,
    /// A process outlived the traced command (`background`).
    Background,
    /// Events were lost (`lost`).
    Lost,
    /// Real/effective uid changed (`uid`).
    Uid,
    /// Real/effective gid changed (`gid`).
    Gid,
    /// setsid() (`setsid`).
    Setsid,
    /// ptrace attach or detach (`ptrace`).
    Ptrace,
    /// The process renamed itself (`comm`).
    Comm,
    /// A region the process reported through Trace2 (`region`, `run --trace2`).
    Region,
    /// A value the process reported through Trace2 (`data`, timers, counters).
    Data,
    /// A file the process used (`file`, `run --files`).
    File,
}

impl FactKind {
    /// Every kind, in the order the help lists them.
    pub const ALL: [FactKind; 13] = [
        FactKind::Fork,
        FactKind::Exec,
        FactKind::Exit,
        FactKind::Background,
        FactKind::Lost,
        FactKind::Uid,
        FactKind::Gid,
        FactKind::Setsid,
        FactKind::Ptrace,
        FactKind::Comm,
        FactKind::Region,
        FactKind::Data,
        FactKind::File,
    ];

    /// The JSON Lines `event` name.
    pub fn as_str(self) -> &'static str {
        match self {
            FactKind::Fork => "fork",
            FactKind::Exec => "exec",
            FactKind::Exit => "exit",
            FactKind::Background => "background",
            FactKind::Lost => "lost",
            FactKind::Uid => "uid",
            FactKind::Gid => "gid",
            FactKind::Setsid => "setsid",
            FactKind::Ptrace => "ptrace",
            FactKind::Comm => "comm",
            FactKind::Region => "region",
            FactKind::Data => "data",
            FactKind::File => "file",
        }
    }

    /// The kind of a fact.
    pub fn of(f: &Fact) -> FactKind {
        match f {
            Fact::Fork(_) => FactKind::Fork,
            Fact::Exec { .. } => FactKind::Exec,
            Fact::Exit(_) => FactKind::Exit,
            Fact::Background(_) => FactKind::Background,
            Fact::Lost { .. } => FactKind::Lost,
            Fact::Uid { .. } => FactKind::Uid,
            Fact::Gid { .. } => FactKind::Gid,
            Fact::Sid { .. } => FactKind::Setsid,
            Fact::Ptrace { .. } => FactKind::Ptrace,
            Fact::Comm { .. } => FactKind::Comm,
            Fact::Region { .. } => FactKind::Region,
            Fact::Data { .. } => FactKind::Data,
            Fact::File { .. } => FactKind::File,
        }
    }

    fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

/// `-e/--events LIST`: a comma-separated list of kinds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindList(pub Vec<FactKind>);

/// Parses a comma-separated `-e/--events` list (see [`parse_kinds`]).
pub fn parse_kind_list(list: &str) -> Result<KindList, String> {
    let mut v = Vec::new();
    for name in list.split(',').filter(|n| !n.trim().is_empty()) {
        v.extend(parse_kinds(name)?);
    }
    if v.is_empty() {
        return Err("an empty list of events".into());
    }
    Ok(KindList(v))
}

/// Parses one name of `-e/--events`: a JSON Lines `event` name, forkstat's spelling (`sid`,
/// `ptrce`) or `all`. The error lists the valid names.
pub fn parse_kinds(name: &str) -> Result<Vec<FactKind>, String> {
    let n = name.trim().to_ascii_lowercase();
    if n == "all" {
        return Ok(FactKind::ALL.to_vec());
    }
    let alias = match n.as_str() {
        "sid" => "setsid",
        "ptrce" => "ptrace",
        other => other,
    };
    FactKind::ALL
        .iter()
        .find(|k| k.as_str() == alias)
        .map(|&k| vec![k])
        .ok_or_else(|| {
            let valid: Vec<&str> = FactKind::ALL.iter().map(|k| k.as_str()).collect();
            format!("unknown event '{name}' (valid: {}, all)", valid.join(", "))
        })
}

/// What `watch` lets through. Conditions combine with AND; the values of one condition with OR.
/// `lost` markers always pass when their kind does: a filtered view must still say it is
/// incomplete.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FactFilter {
    /// Bit set of [`FactKind`]s; `None`: every kind.
    kinds: Option<u16>,
    /// Real or effective uid must be one of these (empty: any).
    uids: Vec<u32>,
    /// The process's comm or program name must be one of these (empty: any).
    comms: Vec<String>,
}

/// How far up the parent chain to look for a process's uid (a forked child inherits its
/// parent's credentials; the kernel reports them only when they change or at exec).
const UID_ANCESTRY: usize = 16;

impl FactFilter {
    /// A filter; `kinds` empty means every kind.
    pub fn new(kinds: &[FactKind], uids: Vec<u32>, comms: Vec<String>) -> FactFilter {
        FactFilter {
            kinds: (!kinds.is_empty()).then(|| kinds.iter().fold(0, |m, k| m | k.bit())),
            uids,
            comms,
        }
    }

    /// True when the filter lets everything through.
    pub fn is_empty(&self) -> bool {
        self.kinds.is_none() && self.uids.is_empty() && self.comms.is_empty()
    }

    /// Should this fact reach the outputs?
    pub fn pass(&self, f: &Fact, t: &Tracker) -> bool {
        if let Some(k) = self.kinds
            && k & FactKind::of(f).bit() == 0
        {
            return false;
        }
        let id = match *f {
            Fact::Lost { .. } => return true,
            Fact::Fork(id) | Fact::Exit(id) | Fact::Background(id) => id,
            Fact::Exec { id, .. }
            | Fact::Uid { id, .. }
            | Fact::Gid { id, .. }
            | Fact::Sid { id, .. }
            | Fact::Ptrace { id, .. }
            | Fact::Comm { id, .. }
            | Fact::Region { id, .. }
            | Fact::Data { id, .. }
            | Fact::File { id, .. } => id,
        };
        let Some(r) = t.get(id) else { return false };
        if !self.uids.is_empty() {
            let uid = match *f {
                // The fact itself says which uids the process has from now on.
                Fact::Uid { ruid, euid, .. } => Some((ruid, euid)),
                _ => uid_of(r, t),
            };
            match uid {
                Some((ru, eu)) if self.uids.contains(&ru) || self.uids.contains(&eu) => {}
                _ => return false,
            }
        }
        if !self.comms.is_empty() && !self.comms.iter().any(|c| name_matches(r, c)) {
            return false;
        }
        true
    }
}

/// The process's uids, or the nearest ancestor's when none was reported for it.
fn uid_of(r: &ProcessRecord, t: &Tracker) -> Option<(u32, u32)> {
    let mut cur = r;
    for _ in 0..UID_ANCESTRY {
        if let Some(u) = cur.uid {
            return Some(u);
        }
        cur = t.get(cur.parent?)?;
    }
    None
}

/// The kernel keeps 15 bytes of a program name as comm.
const COMM_LEN: usize = 15;

/// Does `name` name this process: its comm (the kernel's 15-byte truncation allowed), or the
/// last path component of its latest program (`exe`, else `argv[0]`)?
fn name_matches(r: &ProcessRecord, name: &str) -> bool {
    if let Some(comm) = r.comm.as_deref()
        && (comm == name
            || (name.len() > COMM_LEN
                && comm.len() == COMM_LEN
                && name.as_bytes().starts_with(comm.as_bytes())))
    {
        return true;
    }
    let Some(d) = r.execs.last().and_then(|e| e.details.as_ref()) else {
        return false;
    };
    let base = |p: &str| p.rsplit('/').next().unwrap_or(p) == name;
    d.exe.as_deref().is_some_and(base) || d.argv.as_ref().and_then(|a| a.first()).is_some_and(base)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::event::{Event, ExecDetails};
    use crate::model::tracker::Scope;
    use crate::testkit::{fork, tracker};

    /// A model fed with events by hand; returns every fact in order.
    fn feed(t: &mut Tracker, evs: &[Event]) -> Vec<Fact> {
        let mut facts = Vec::new();
        for ev in evs {
            t.apply(ev, &mut facts);
        }
        facts
    }

    fn exec(t: &mut Tracker, ts: u64, pid: i32, argv: &[&str], uid: u32) -> Vec<Fact> {
        let mut facts = feed(t, &[Event::Exec { ts, tgid: pid }]);
        t.apply_exec_details(
            pid,
            ExecDetails {
                argv: Some(argv.iter().map(|s| s.to_string()).collect()),
                exe: Some(format!("/usr/bin/{}", argv[0].rsplit('/').next().unwrap()).into()),
                cwd: None,
                uid: Some(uid),
                comm: Some(argv[0].rsplit('/').next().unwrap().chars().take(15).collect()),
                filename: None,
            },
            &mut facts,
        );
        facts
    }

    fn model() -> Tracker {
        tracker(Scope::All, true, true)
    }

    /// Names of the facts that pass, as the JSON Lines would call them, with pids.
    fn passed(f: &FactFilter, t: &Tracker, facts: &[Fact]) -> Vec<(String, i32)> {
        facts
            .iter()
            .filter(|x| f.pass(x, t))
            .map(|x| {
                let pid = match *x {
                    Fact::Fork(id) | Fact::Exit(id) => t.get(id).unwrap().pid,
                    Fact::Exec { id, .. } | Fact::Uid { id, .. } => t.get(id).unwrap().pid,
                    _ => 0,
                };
                (FactKind::of(x).as_str().to_string(), pid)
            })
            .collect()
    }

    /// A root shell (uid 0) forks a child that becomes nobody and execs a long-named program,
    /// events are lost, both exit. Each fact is judged right after the event that made it, as
    /// the engine does live; returns what passed.
    fn session(f: &FactFilter) -> Vec<(String, i32)> {
        let mut t = model();
        let t = &mut t;
        let mut out = Vec::new();
        let facts = feed(t, &[fork(1, 1, 10)]);
        out.extend(passed(f, t, &facts));
        let facts = exec(t, 2, 10, &["sh", "-c", "x"], 0);
        out.extend(passed(f, t, &facts));
        let facts = feed(t, &[fork(3, 10, 11)]);
        out.extend(passed(f, t, &facts));
        let uid = Event::Uid {
            ts: 4,
            tgid: 11,
            ruid: 65534,
            euid: 65534,
        };
        let facts = feed(t, &[uid]);
        out.extend(passed(f, t, &facts));
        let facts = exec(t, 5, 11, &["/opt/a-very-long-program-name", "y"], 65534);
        out.extend(passed(f, t, &facts));
        out.extend(passed(
            f,
            t,
            &[Fact::Lost {
                ts: Some(6),
                count: 2,
            }],
        ));
        for (ts, pid) in [(7, 11), (8, 10)] {
            let exit = Event::Exit {
                ts,
                pid,
                tgid: pid,
                status: 0,
                parent_tgid: 0,
            };
            let facts = feed(t, &[exit]);
            out.extend(passed(f, t, &facts));
        }
        out
    }

    fn strs(v: &[(&str, i32)]) -> Vec<(String, i32)> {
        v.iter().map(|(k, p)| (k.to_string(), *p)).collect()
    }

    #[test]
    fn kinds_keep_only_their_facts() {
        let f = FactFilter::new(&[FactKind::Exec], vec![], vec![]);
        assert_eq!(session(&f), strs(&[("exec", 10), ("exec", 11)]));
        let f = FactFilter::new(&[FactKind::Exec, FactKind::Lost], vec![], vec![]);
        assert_eq!(session(&f).len(), 3);
        assert_eq!(session(&FactFilter::default()).len(), 8);
        assert!(FactFilter::new(&[], vec![], vec![]).is_empty());
    }

    #[test]
    fn user_matches_the_process_and_its_uid_change() {
        let f = FactFilter::new(&[], vec![65534], vec![]);
        // 11 was forked as root (its parent's uid): its fork is root's, the rest nobody's.
        assert_eq!(
            session(&f),
            strs(&[("uid", 11), ("exec", 11), ("lost", 0), ("exit", 11)])
        );
        // 10's own fork: no uid known yet (its parent is not tracked), so it matches no user.
        let root = FactFilter::new(&[], vec![0], vec![]);
        assert_eq!(
            session(&root),
            strs(&[("exec", 10), ("fork", 11), ("lost", 0), ("exit", 10)])
        );
        let either = FactFilter::new(&[FactKind::Fork, FactKind::Exit], vec![0, 65534], vec![]);
        assert_eq!(
            session(&either),
            strs(&[("fork", 11), ("exit", 11), ("exit", 10)])
        );
    }

    #[test]
    fn forked_child_inherits_the_parents_uid_until_told_otherwise() {
        let mut t = model();
        let mut facts = feed(&mut t, &[fork(1, 1, 10)]);
        facts.extend(exec(&mut t, 2, 10, &["sh"], 1000));
        let child_fork = feed(&mut t, &[fork(3, 10, 11)]);
        let f = FactFilter::new(&[], vec![1000], vec![]);
        assert_eq!(passed(&f, &t, &child_fork), strs(&[("fork", 11)]));
        let f = FactFilter::new(&[], vec![0], vec![]);
        assert!(passed(&f, &t, &child_fork).is_empty());
    }

    #[test]
    fn comm_matches_name_truncated_comm_and_program() {
        // The full name matches (exe's file name), and so does any longer name whose first 15
        // bytes are the comm (the kernel keeps no more); a shorter prefix does not.
        for (name, want) in [
            ("a-very-long-program-name", strs(&[("exec", 11)])),
            ("a-very-long-progr", strs(&[("exec", 11)])),
            ("a-very-long-pr", vec![]),
            ("b-very-long-program-name", vec![]),
        ] {
            let f = FactFilter::new(&[FactKind::Exec], vec![], vec![name.into()]);
            assert_eq!(session(&f), want, "{name}");
        }
        // A forked child carries its parent's name until it execs.
        let f = FactFilter::new(&[], vec![], vec!["sh".into(), "nothing".into()]);
        assert_eq!(
            session(&f),
            strs(&[("exec", 10), ("fork", 11), ("uid", 11), ("lost", 0), ("exit", 10)])
        );
    }

    #[test]
    fn names_and_aliases() {
        assert_eq!(parse_kinds("exec").unwrap(), vec![FactKind::Exec]);
        assert_eq!(parse_kinds("SID").unwrap(), vec![FactKind::Setsid]);
        assert_eq!(parse_kinds("ptrce").unwrap(), vec![FactKind::Ptrace]);
        assert_eq!(parse_kinds("all").unwrap().len(), FactKind::ALL.len());
        let e = parse_kinds("execc").unwrap_err();
        assert!(e.contains("execc") && e.contains("valid: fork, exec"), "{e}");
    }

    #[test]
    fn every_kind_has_a_distinct_bit() {
        let all = FactKind::ALL.iter().fold(0u16, |m, k| {
            assert_eq!(m & k.bit(), 0, "{k:?}");
            m | k.bit()
        });
        assert_eq!(all.count_ones() as usize, FactKind::ALL.len());
    }
}
