//! A process's life as *images*: what it was running, one after the other.
//!
//! A process starts as a forked copy of its parent's program; each exec replaces that with a
//! new program. So its life is a sequence of images:
//!
//! - the **fork image**, from the fork to the first exec, when it stands on its own
//!   ([`fork_image_stands`]): it forked a child of its own, or ran at least
//!   [`FORK_IMAGE_MIN_NS`] before it exec'd (dash's `(a; b)` subshell runs `a` as a child and
//!   then execs `b`). Otherwise it is the usual few hundred microseconds a shell or `make` takes
//!   between `fork` and `exec`, and counts as part of the first exec's image, so a plain
//!   `fork+exec` is one image from fork to exit, as it always was;
//! - one **exec image** per exec, from that exec to the next one or to the exit. A process that
//!   never exec'd has its fork image only.
//!
//! A child belongs to the image its parent was running when it forked ([`Images::index_at`]). Every
//! output that shows time by program (the tree, the summary's slowest and by program, the
//! critical path, Chrome, the SVG, OTLP, `diff`) counts images, so `sh -c 'x; exec y'` is `sh`
//! then `y`, never `y` for the whole of its life.
//!
//! Pure: derived from a finished or live record on demand, never stored (the model's per-event
//! path is unchanged) and never allocating ([`Images`] is an iterator over the record).

use crate::model::tracker::{ExecRecord, ProcessRecord, Tracker};

/// A fork image at least this long stands on its own even when it forked nothing: 100 ms, far
/// above what a shell, `make` or a compiler driver spends between `fork` and `exec` (0.1–1 ms
/// here, and 10.3 ms for a `cc` forking `cc1` on a loaded machine in a recorded capture).
pub const FORK_IMAGE_MIN_NS: u64 = 100_000_000;

/// Whether a fork image from `fork_ns` to the first exec at `exec_ns` stands on its own (see the
/// module docs); `forked_child` says whether a child was forked in between.
pub fn fork_image_stands(fork_ns: u64, exec_ns: u64, forked_child: bool) -> bool {
    forked_child || exec_ns.saturating_sub(fork_ns) >= FORK_IMAGE_MIN_NS
}

/// One image of a process.
#[derive(Debug, Clone, Copy)]
pub struct Image<'a> {
    /// The process.
    pub record: &'a ProcessRecord,
    /// The exec that started it; `None` for the fork image.
    pub exec: Option<&'a ExecRecord>,
    /// Its position among the process's images (0 for the first).
    pub index: usize,
    /// How many images the process has (so far).
    pub count: usize,
    /// When it started: the fork (first image) or its exec; `None` for a process whose start is
    /// not known.
    pub start_ns: Option<u64>,
    /// When it ended: the next exec, or the exit; `None` while it runs.
    pub end_ns: Option<u64>,
    /// The kernel's name of the program a fork image copies (its parent's at the fork).
    inherited: Option<&'a str>,
}

impl<'a> Image<'a> {
    /// The process's last image: the one that exited (or runs).
    pub fn is_last(&self) -> bool {
        self.index + 1 == self.count
    }

    /// The fork image (the parent's program, before any exec).
    pub fn is_fork(&self) -> bool {
        self.exec.is_none()
    }

    /// From start to end, when both are known (never negative).
    pub fn duration_ns(&self) -> Option<u64> {
        Some(self.end_ns?.saturating_sub(self.start_ns?))
    }

    /// The argv of its exec, when read.
    pub fn argv(&self) -> Option<&'a crate::model::event::Argv> {
        self.exec?.details.as_ref()?.argv.as_ref()
    }

    /// The kernel's name while it ran: the exec's `comm` (the process's current one for the last
    /// image, which includes the name at exit and renames).
    pub fn comm(&self) -> Option<&'a str> {
        if self.is_last() {
            return self.record.comm.as_deref();
        }
        match self.exec {
            Some(e) => e.details.as_ref()?.comm.as_deref(),
            None => self.inherited,
        }
    }

    /// Whether `ts` falls in this image (its start inclusive, its end exclusive; an image still
    /// running holds everything after its start).
    pub fn holds(&self, ts: u64) -> bool {
        self.start_ns.is_none_or(|s| ts >= s) && self.end_ns.is_none_or(|e| ts < e)
    }
}

/// The images of a process, in order (see the module docs).
#[derive(Debug, Clone)]
pub struct Images<'a> {
    r: &'a ProcessRecord,
    fork: bool,
    inherited: Option<&'a str>,
    next: usize,
    count: usize,
}

/// The kernel's name of what `r` ran at `ts`: the `comm` of its exec current then, or, before
/// its first exec, its parent's at its fork (and so on up).
pub fn comm_at<'a>(t: &'a Tracker, mut r: &'a ProcessRecord, mut ts: u64) -> Option<&'a str> {
    // Bounded by the tree's depth; a hostile file's cycle ends at the step limit.
    for _ in 0..4096 {
        if r.execs.is_empty() {
            return r.comm.as_deref();
        }
        match r.execs.iter().rposition(|e| e.ts <= ts) {
            Some(k) => {
                let d = r.execs[k].details.as_ref().and_then(|d| d.comm.as_deref());
                return if k + 1 == r.execs.len() {
                    d.or(r.comm.as_deref())
                } else {
                    d
                };
            }
            None => {
                ts = r.start_ns?;
                r = t.get(r.parent?)?;
            }
        }
    }
    None
}

/// Whether the fork image of `r`, which has exec'd, stands on its own
/// ([`fork_image_stands`]): only for a process whose fork was seen under a tracked parent. The
/// traced command (`run`'s root: its parent is proctrace, not traced) is never a fork image:
/// what it did before its exec was proctrace's setup (a loaded machine made it 10 ms).
pub fn fork_image_stands_for(r: &ProcessRecord, forked_child: bool) -> bool {
    match (r.execs.first(), r.start_ns) {
        (Some(first), Some(s)) if !r.pre_existing && r.parent.is_some() => {
            fork_image_stands(s, first.ts, forked_child)
        }
        _ => false,
    }
}

/// The images of `r`; `t` holds its children (whether its fork image forked one) and its
/// parent (the name a fork image copies).
pub fn images<'a>(t: &'a Tracker, r: &'a ProcessRecord) -> Images<'a> {
    let fork = match r.execs.first() {
        None => true,
        Some(first) => {
            // Children are in fork order: the first whose fork is known says it (a `make`
            // with 6,000 children is not walked for each of them).
            let forked_child = r
                .children
                .iter()
                .find_map(|&c| t.get(c)?.start_ns)
                .is_some_and(|cs| cs < first.ts);
            fork_image_stands_for(r, forked_child)
        }
    };
    let inherited = match (fork && !r.execs.is_empty(), r.start_ns, r.parent) {
        (true, Some(s), Some(p)) => t.get(p).and_then(|p| comm_at(t, p, s)),
        _ => None,
    };
    images_decided(r, fork, inherited)
}

/// The images of `r` as [`images`] gives them, with the fork image's standing and the name it
/// copies decided by the caller: a streaming sink decides when the first exec arrives (whether
/// a child was forked before it), as the children's records may be gone by the exit.
pub fn images_decided<'a>(r: &'a ProcessRecord, fork: bool, inherited: Option<&'a str>) -> Images<'a> {
    let fork = fork || r.execs.is_empty();
    Images {
        r,
        fork,
        inherited,
        next: 0,
        count: r.execs.len() + usize::from(fork),
    }
}

impl<'a> Images<'a> {
    /// How many images there are (all of them, however far the iteration went).
    pub fn total(&self) -> usize {
        self.count
    }

    /// Whether the fork image stands on its own.
    pub fn has_fork_image(&self) -> bool {
        self.fork && !self.r.execs.is_empty()
    }

    /// The image at `i`.
    pub fn get(&self, i: usize) -> Option<Image<'a>> {
        if i >= self.count {
            return None;
        }
        let r = self.r;
        let k = if self.fork { i.checked_sub(1) } else { Some(i) };
        let exec = k.map(|k| &r.execs[k]);
        let start_ns = match (i, exec) {
            (0, _) => r.start_ns.or(exec.map(|e| e.ts)),
            (_, Some(e)) => Some(e.ts),
            (_, None) => r.start_ns,
        };
        let next_exec = match k {
            Some(k) => r.execs.get(k + 1),
            None => r.execs.first(),
        };
        let end_ns = match next_exec {
            Some(n) => Some(n.ts),
            None => r.exit.map(|x| x.ts),
        };
        Some(Image {
            record: r,
            exec,
            index: i,
            count: self.count,
            start_ns,
            inherited: self.inherited,
            // An exit before the start (a hostile or reordered file) makes an empty image.
            end_ns: match (start_ns, end_ns) {
                (Some(s), Some(e)) => Some(e.max(s)),
                (_, e) => e,
            },
        })
    }

    /// The index of the image running at `ts` (a child's fork): the last one started at or
    /// before it, the first when none was.
    pub fn index_at(&self, ts: u64) -> usize {
        let mut at = 0;
        for i in 1..self.count {
            match self.get(i).and_then(|im| im.start_ns) {
                Some(s) if s <= ts => at = i,
                _ => break,
            }
        }
        at
    }

    /// The last image (every process has one).
    pub fn last_image(&self) -> Option<Image<'a>> {
        self.get(self.count.checked_sub(1)?)
    }
}

impl<'a> Iterator for Images<'a> {
    type Item = Image<'a>;

    fn next(&mut self) -> Option<Image<'a>> {
        let im = self.get(self.next)?;
        self.next += 1;
        Some(im)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.count - self.next.min(self.count);
        (n, Some(n))
    }
}

impl ExactSizeIterator for Images<'_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::event::Event;
    use crate::model::tracker::Scope;
    use crate::testkit::{exec, exit, fork, tracker};

    const MS: u64 = 1_000_000;

    fn run(events: Vec<Event>) -> Tracker {
        let mut t = tracker(Scope::All, true, true);
        let mut facts = Vec::new();
        for e in &events {
            t.apply(e, &mut facts);
        }
        t
    }

    /// dash's `(sleep 0.3; sleep 0.4)`: the subshell forks sleep 0.3, then execs sleep 0.4.
    #[test]
    fn a_subshell_is_its_fork_then_its_exec_and_its_child_belongs_to_the_fork() {
        let mut ev = vec![fork(0, 1, 10)];
        ev.extend(exec(MS / 2, 10, &["sh", "-c", "(x)"], None));
        ev.push(fork(MS, 10, 11));
        ev.push(fork(2 * MS, 11, 12));
        ev.extend(exec(2 * MS + 100_000, 12, &["/bin/sleep", "0.3"], None));
        ev.push(exit(302 * MS, 12, 0));
        ev.extend(exec(303 * MS, 11, &["/bin/sleep", "0.4"], None));
        ev.push(exit(703 * MS, 11, 0));
        ev.push(exit(704 * MS, 10, 0));
        let t = run(ev);
        let sub = t.get(t.lookup_at(11, 703 * MS - 1).unwrap()).unwrap();
        let ims: Vec<_> = images(&t, sub).collect();
        assert_eq!(ims.len(), 2);
        assert!(ims[0].is_fork() && !ims[1].is_fork());
        assert_eq!((ims[0].start_ns, ims[0].end_ns), (Some(MS), Some(303 * MS)));
        assert_eq!((ims[1].start_ns, ims[1].end_ns), (Some(303 * MS), Some(703 * MS)));
        assert_eq!(ims[0].comm(), Some("sh"));
        assert_eq!(&ims[1].argv().unwrap()[1], "0.4");
        assert_eq!(images(&t, sub).index_at(2 * MS), 0);
        // The plain fork+exec of sleep 0.3: one image from its fork.
        let s3 = t.get(t.lookup_at(12, 300 * MS).unwrap()).unwrap();
        let ims: Vec<_> = images(&t, s3).collect();
        assert_eq!(ims.len(), 1);
        assert_eq!((ims[0].start_ns, ims[0].end_ns), (Some(2 * MS), Some(302 * MS)));
        assert!(ims[0].is_last());
    }

    #[test]
    fn exec_chains_and_long_forks_and_forks_that_never_exec() {
        // Under a traced parent (the traced command's own fork is never a fork image).
        let mut ev = vec![fork(0, 1, 2)];
        ev.extend(exec(1, 2, &["sh"], None));
        ev.push(fork(0, 2, 20));
        // Ran 150 ms on its own before exec'ing: stands.
        ev.extend(exec(150 * MS, 20, &["env", "x"], None));
        ev.extend(exec(160 * MS, 20, &["x"], None));
        ev.push(exit(300 * MS, 20, 0));
        // A fork that exec'd after 12 ms, as a loaded machine's `cc` forking `cc1`: one image.
        ev.push(fork(0, 2, 22));
        ev.extend(exec(12 * MS, 22, &["cc1"], None));
        ev.push(exit(40 * MS, 22, 0));
        ev.push(fork(0, 2, 21));
        ev.push(exit(5 * MS, 21, 0));
        // A root (its parent untraced, as `run`'s command under proctrace) that exec'd late:
        // what it did first was its launcher's, one image.
        ev.push(fork(0, 1, 30));
        ev.extend(exec(200 * MS, 30, &["make"], None));
        ev.push(exit(300 * MS, 30, 0));
        let t = run(ev);
        let r = t.get(t.lookup_at(20, 200 * MS).unwrap()).unwrap();
        let ims = images(&t, r);
        assert!(ims.has_fork_image());
        let v: Vec<_> = ims
            .map(|i| (i.start_ns.unwrap() / MS, i.end_ns.unwrap() / MS))
            .collect();
        assert_eq!(v, [(0, 150), (150, 160), (160, 300)]);
        assert_eq!(images(&t, r).index_at(200 * MS), 2);
        let c = t.get(t.lookup_at(22, 20 * MS).unwrap()).unwrap();
        let v: Vec<_> = images(&t, c)
            .map(|i| (i.start_ns.unwrap() / MS, i.end_ns.unwrap() / MS))
            .collect();
        assert_eq!(v, [(0, 40)]);
        let f = t.get(t.lookup_at(21, MS).unwrap()).unwrap();
        let ims: Vec<_> = images(&t, f).collect();
        assert_eq!(ims.len(), 1);
        assert!(ims[0].is_fork() && ims[0].is_last());
        assert_eq!(ims[0].duration_ns(), Some(5 * MS));
        let root = t.get(t.lookup_at(30, 250 * MS).unwrap()).unwrap();
        let v: Vec<_> = images(&t, root)
            .map(|i| (i.start_ns.unwrap() / MS, i.end_ns.unwrap() / MS))
            .collect();
        assert_eq!(v, [(0, 300)]);
    }
}
