//! The one name for a process, made from its record, for every output.
//!
//! The tree, the human lines, the summary (text, Markdown, JSON), the Chrome trace, the SVG
//! timeline, the OTLP spans, the progress line and `diff` all name a process here, so one process
//! has one name wherever it is shown (they used to disagree: `sh (fork)` in the summary, `[fork
//! of sh]` in Perfetto, `sh` or `pid 12` in Jaeger).
//!
//! What a record says about who it is ([`Identity`]), and the names made from it:
//!
//! - [`command_line`]: the argv of its last exec, quoted as a shell would take it back (git's
//!   `sq_quote_argv_pretty`, [`quote_argv`]), URL credentials redacted when asked;
//!   `[fork of COMM]` for a process that never exec'd; `[COMM]` for one whose argv was not read.
//!   [`command_line_with_notes`] adds what the tree says beside it (`(exec ×2)`,
//!   `(argv unavailable)`); [`exec_command_line`] names one exec (the human lines).
//! - [`short_command_line`]: the same with the program's directory left out
//!   (`/usr/lib/gcc/…/cc1 -quiet` → `cc1 -quiet`), for a row label where width is short.
//! - [`program`]: the program it counts under: the script it runs by its `#!` line
//!   ([`script`]: `/bin/sh ./psutil.sh` is `psutil.sh`, as the kernel names it; known from the
//!   exec'd path where the backend gives it, else from the name at exit), else the base
//!   name of `argv[0]` of its last exec, else of its executable (without the kernel's ` (deleted)`), else its `comm`;
//!   `[fork of COMM]` for a process that never exec'd. The span name, the slice title, the
//!   summary's by-program key.
//! - [`fit`]: a name limited to a width so that it still says what it works on: the program,
//!   its source and `-o` target, its script, its subcommand, the middle elided (`gcc … -c
//!   ../src/closures.c -o src/closures.lo`); the rules are in [`fit`'s module](fit). Every
//!   label of a process or an image that is cut to a width goes through it.
//! - [`cut`]: any text limited to a width, the last character `…` (not a label: a label's tail
//!   is what tells it apart).
//!
//! `?` stands for a `comm` that is not known.
//!
//! Names come from the traced processes and are untrusted, and every name made here is
//! escaped for people ([`crate::model::escape`]): argv words through [`quote_argv`] (git's
//! quoting, or a `$'…'` word when a word holds a control character, a byte that is not UTF-8,
//! or a character that reorders or hides text), and the kernel's names (`comm`, the
//! executable's base name), `argv[0]`'s base name as a program and region names as bare
//! escaped text. So every output that names a process shows the same visible characters and
//! never one a terminal interprets; a name holds no line break, and [`cut`] and the columns
//! count what is shown. Each output still escapes what it writes for its own format on top
//! (JSON strings, XML, Markdown code spans). git's Trace2 formats do not come here: they write
//! the bytes as git does ([`crate::sink::trace2`]).
//!
//! Must never: read anything but the record (no `/proc`, no environment, no terminal width: the
//! caller passes the width), or allocate on the model's per-event path (only outputs call it).

use std::borrow::Cow;
use std::fmt::Write as _;

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use crate::model::escape;
use crate::model::event::Argv;
use crate::model::images::Image;
use crate::model::tracker::{ExecRecord, ProcessRecord};

pub mod fit;
pub use fit::{cut_middle, fit};

/// What a record says about who a process is, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Identity<'a> {
    /// It exec'd and the last exec's argv was read (and is not empty).
    Command(&'a Argv),
    /// It exec'd but that argv was not read (the process was gone, or nothing was asked):
    /// the kernel's names only.
    Unread {
        /// Its `comm`.
        comm: Option<&'a str>,
        /// The executable's path, when read.
        exe: Option<&'a str>,
    },
    /// It never exec'd: a fork still running its parent's program.
    Fork {
        /// Its `comm` (inherited from the parent, or a rename).
        comm: Option<&'a str>,
    },
}

impl<'a> Identity<'a> {
    /// What `r` says about who it is.
    pub fn of(r: &'a ProcessRecord) -> Identity<'a> {
        let comm = r.comm.as_deref();
        let Some(last) = r.execs.last() else {
            return Identity::Fork { comm };
        };
        let d = last.details.as_ref();
        match d.and_then(|d| d.argv.as_ref()) {
            Some(a) if !a.is_empty() => Identity::Command(a),
            _ => Identity::Unread {
                comm,
                exe: d.and_then(|d| d.exe.as_deref()),
            },
        }
    }
}

/// The kernel's name for a process as a name's part, escaped: `?` when unknown.
fn kernel_name(comm: Option<&str>) -> Cow<'_, str> {
    escape::text(comm.unwrap_or("?"))
}

/// `[fork of COMM]`: the one wording for a process that never exec'd.
fn fork_name(comm: Option<&str>) -> String {
    format!("[fork of {}]", kernel_name(comm))
}

/// `[COMM]`: a process whose argv was not read.
fn unread_name(comm: Option<&str>) -> String {
    format!("[{}]", kernel_name(comm))
}

/// What the tree and the human lines say after an exec whose argv was not read.
const ARGV_UNAVAILABLE: &str = " (argv unavailable)";

/// The last part of a path (`/usr/bin/cc` → `cc`, `dir/` → `dir`); the whole text when it has
/// none.
pub fn base_name(path: &str) -> &str {
    path.rsplit('/').find(|p| !p.is_empty()).unwrap_or(path)
}

/// argv as a shell would take it back, URL credentials redacted when asked, escaped for
/// people: git's `sq_quote_argv_pretty` (what git's trace2 `normal` target prints) for words
/// with nothing to escape, a `$'…'` word for the others ([`escape::word`]).
pub fn quote_argv<S: AsRef<str>>(argv: impl IntoIterator<Item = S>, redact: bool) -> String {
    if redact {
        // Redaction reads the words in order (`--password V`); a word it leaves alone is
        // borrowed, not copied (the watch lines name every exec this way).
        let argv: Vec<S> = argv.into_iter().collect();
        escape::words(crate::redact::redact_argv(argv.iter()))
    } else {
        escape::words(argv)
    }
}

/// An argv quoted as [`quote_argv`] does, its program's directory left out.
pub fn short_argv<S: AsRef<str>>(argv: &[S], redact: bool) -> String {
    match argv.split_first() {
        Some((a0, rest)) => quote_argv(
            std::iter::once(base_name(a0.as_ref())).chain(rest.iter().map(AsRef::as_ref)),
            redact,
        ),
        None => String::new(),
    }
}

/// `[ran in the sccache server]`: the one wording for a daemon's node
/// (`run --include-daemons`): what ran under it ran in that daemon.
fn daemon_name(r: &ProcessRecord) -> Option<String> {
    r.daemon_node().map(|k| format!("[ran in {}]", k.client().server))
}

/// The process's command line (see the module docs); a daemon's node
/// (`run --include-daemons`) is `[ran in the sccache server] ARGV`.
pub fn command_line(r: &ProcessRecord, redact: bool) -> String {
    let s = match Identity::of(r) {
        Identity::Command(a) => quote_argv(a, redact),
        Identity::Unread { comm, .. } => unread_name(comm),
        Identity::Fork { comm } => fork_name(comm),
    };
    match daemon_name(r) {
        Some(d) => format!("{d} {s}"),
        None => s,
    }
}

/// [`command_line`] with what the tree says beside it: how many times the process exec'd
/// (`  (exec ×2)`), or that its argv was not read.
pub fn command_line_with_notes(r: &ProcessRecord, redact: bool) -> String {
    let mut s = command_line(r, redact);
    match Identity::of(r) {
        Identity::Command(_) if r.execs.len() > 1 => {
            let _ = write!(s, "  (exec ×{})", r.execs.len());
        }
        // An empty argv was read: it says nothing, but it is not unavailable.
        Identity::Unread { .. } if r.argv().is_none() => s.push_str(ARGV_UNAVAILABLE),
        _ => {}
    }
    s
}

/// The command line of one exec `e` of a process whose `comm` is `comm` now: its argv, or
/// `[COMM] (argv unavailable)`.
pub fn exec_command_line(e: &ExecRecord, comm: Option<&str>, redact: bool) -> String {
    match e.details.as_ref().and_then(|d| d.argv.as_ref()) {
        Some(a) if !a.is_empty() => quote_argv(a, redact),
        Some(_) => unread_name(comm),
        None => unread_name(comm) + ARGV_UNAVAILABLE,
    }
}

/// [`command_line`] with the program's directory left out (see the module docs).
pub fn short_command_line(r: &ProcessRecord, redact: bool) -> String {
    match Identity::of(r) {
        Identity::Command(a) if r.daemon_node().is_none() => quote_argv(
            std::iter::once(base_name(a.first().unwrap_or_default())).chain(a.iter().skip(1)),
            redact,
        ),
        _ => command_line(r, redact),
    }
}

/// Whether `comm` is what the kernel makes of `name`: its first `TASK_COMM_LEN - 1` (15)
/// bytes.
fn kernel_names(comm: &str, name: &str) -> bool {
    const TASK_COMM_LEN: usize = 16;
    let (c, n) = (comm.as_bytes(), name.as_bytes());
    !c.is_empty() && n.starts_with(c) && c.len() == n.len().min(TASK_COMM_LEN - 1)
}

/// The base name of the script a process runs by its `#!` line, when it does: the kernel
/// names a process by the file it exec'd (`psutil.sh`) while argv starts with the interpreter
/// the `#!` line gave (`/bin/sh ./psutil.sh`, or `/usr/bin/env python3 ./x.py` with its one
/// option), then the path that was exec'd. So a process whose exec'd path (the eBPF backend's
/// [`ExecDetails::filename`](crate::model::event::ExecDetails::filename)) is not `argv[0]` but
/// is `argv[1]` or `argv[2]` runs that script, and is named by it: a wrapper script is its
/// script, not `sh`. Without that path, the same from the kernel's name at exit
/// ([`ProcessRecord::comm_at_exit`]: the exec's name is taken from `argv[0]`): a name that is
/// not `argv[0]`'s but that of `argv[1]` or `argv[2]`, given as a path. `sh ./psutil.sh` typed
/// as such is `sh` (the kernel was given `/usr/bin/sh`, and names it `sh`).
pub fn script(r: &ProcessRecord) -> Option<&str> {
    if let Some(d) = r.execs.last().and_then(|e| e.details.as_ref())
        && let (Some(f), Some(a)) = (d.filename.as_deref(), d.argv.as_ref())
    {
        // The exec'd path says it: the kernel puts it after the interpreter (and its one
        // option). Not a script when argv[0] is that path (a program run as itself).
        if a.first().is_some_and(|a0| a0 != f) && a.iter().skip(1).take(2).any(|w| w == f) {
            return Some(base_name(f));
        }
        return None;
    }
    // Only a name the exit gave that the exec had not: a process that renamed itself after
    // one of its arguments (`shapes rename worker`) is not a script.
    if !r.comm_at_exit {
        return None;
    }
    let comm = r.comm.as_deref()?;
    let Identity::Command(a) = Identity::of(r) else {
        return None;
    };
    if kernel_names(comm, base_name(a.first()?)) {
        return None;
    }
    // The kernel gives the script as the path it was exec'd by, which has a `/` (a shell or
    // `execvp` runs `./x.sh` or `/usr/bin/x.sh`, never a bare `x.sh`): a bare word is an
    // argument, not a script.
    a.iter()
        .skip(1)
        .take(2)
        .filter(|w| w.contains('/'))
        .map(base_name)
        .find(|w| kernel_names(comm, w))
}

/// The program a process counts under (see the module docs); a daemon's node is
/// `[ran in the sccache server]`.
pub fn program(r: &ProcessRecord) -> String {
    if let Some(d) = daemon_name(r) {
        return d;
    }
    let (comm, exe) = match Identity::of(r) {
        Identity::Fork { comm } => return fork_name(comm),
        Identity::Command(a) => match a.first().filter(|a0| !a0.is_empty()) {
            Some(a0) => {
                let name = script(r).unwrap_or_else(|| base_name(a0));
                return escape::text(name).into_owned();
            }
            None => {
                let d = r.execs.last().and_then(|e| e.details.as_ref());
                (r.comm.as_deref(), d.and_then(|d| d.exe.as_deref()))
            }
        },
        Identity::Unread { comm, exe } => (comm, exe),
    };
    match exe
        .map(|e| e.trim_end_matches(" (deleted)"))
        .filter(|e| !e.is_empty())
    {
        Some(exe) => escape::text(base_name(exe)).into_owned(),
        None => kernel_name(comm).into_owned(),
    }
}

/// The command line of one image ([`crate::model::images`]): its exec's argv as
/// [`command_line`] quotes it, `[COMM]` when that was not read, `[fork of COMM]` for the fork
/// image. The last image is named as its process is.
pub fn image_command_line(im: &Image<'_>, redact: bool) -> String {
    if im.is_last() && (im.exec.is_some() || im.count == 1) {
        return command_line(im.record, redact);
    }
    match im.exec {
        None => fork_name(im.comm()),
        Some(e) => match e.details.as_ref().and_then(|d| d.argv.as_ref()) {
            Some(a) if !a.is_empty() => quote_argv(a, redact),
            _ => unread_name(im.comm()),
        },
    }
}

/// [`image_command_line`] with the program's directory left out, as [`short_command_line`].
pub fn short_image_command_line(im: &Image<'_>, redact: bool) -> String {
    if im.is_last() && im.record.daemon_node().is_some() {
        return command_line(im.record, redact);
    }
    match im.argv().filter(|a| !a.is_empty()) {
        Some(a) => quote_argv(
            std::iter::once(base_name(a.first().unwrap_or_default())).chain(a.iter().skip(1)),
            redact,
        ),
        None => image_command_line(im, redact),
    }
}

/// The program an image counts under, as [`program`] names a process: the last image is named
/// as its process is; an earlier one by its exec's `argv[0]`, else its executable, else its
/// `comm`; the fork image `[fork of COMM]`.
pub fn image_program(im: &Image<'_>) -> String {
    if im.is_last() && (im.exec.is_some() || im.count == 1) {
        return program(im.record);
    }
    let Some(e) = im.exec else {
        return fork_name(im.comm());
    };
    let d = e.details.as_ref();
    if let Some(a0) = d
        .and_then(|d| d.argv.as_ref())
        .and_then(|a| a.first())
        .filter(|a0| !a0.is_empty())
    {
        return escape::text(base_name(a0)).into_owned();
    }
    match d
        .and_then(|d| d.exe.as_deref())
        .map(|e| e.trim_end_matches(" (deleted)"))
        .filter(|e| !e.is_empty())
    {
        Some(exe) => escape::text(base_name(exe)).into_owned(),
        None => kernel_name(im.comm()).into_owned(),
    }
}

/// A region's name: `category:label`, or whichever is given, escaped as bare text.
pub fn region_name(category: &str, label: &str) -> String {
    let (category, label) = (escape::text(category), escape::text(label));
    match (category.is_empty(), label.is_empty()) {
        (false, false) => format!("{category}:{label}"),
        (true, _) => label.into_owned(),
        (false, true) => category.into_owned(),
    }
}

/// The columns `s` takes on a terminal: a character of East Asian width two, a combining mark
/// none ([`unicode_width`]). A name made here is escaped, so this is what is shown.
pub fn width(s: &str) -> usize {
    UnicodeWidthStr::width(s)
}

/// `s` in at most `width` columns ([`width()`]): cut short with `…` as its last when it is
/// wider. `s` is a name made here (escaped), so the columns counted are the ones shown; a cut
/// may fall inside an escape (`$'\e]0…`), which stays visible text.
pub fn cut(s: &str, width: usize) -> String {
    if self::width(s) <= width {
        return s.to_string();
    }
    let room = width.saturating_sub(1);
    let mut t = String::with_capacity(s.len().min(4 * width) + 3);
    let mut used = 0;
    for c in s.chars() {
        let w = UnicodeWidthChar::width(c).unwrap_or(0);
        if used + w > room {
            break;
        }
        used += w;
        t.push(c);
    }
    t.push('…');
    t
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::model::event::{Event, ExecDetails};
    use crate::model::tracker::Scope;
    use crate::testkit::{fork, tracker};

    /// `pid` execs at `ts`, and `/proc` says `details` of it.
    fn exec(ts: u64, pid: i32, details: ExecDetails) -> [Event; 2] {
        [
            Event::Exec { ts, tgid: pid },
            Event::ExecDetails { tgid: pid, details },
        ]
    }

    /// The one record of a tracker fed `events`.
    fn one(events: &[Event], check: impl FnOnce(&ProcessRecord)) {
        let mut t = tracker(Scope::All, true, true);
        let mut facts = Vec::new();
        for ev in events {
            t.apply(ev, &mut facts);
        }
        let id = t.roots()[0];
        check(t.get(id).unwrap());
    }

    #[test]
    fn a_fork_that_never_execd_is_named_the_same_everywhere() {
        one(&[fork(10, 1, 20)], |r| {
            // No comm known (the parent was not followed).
            assert_eq!(Identity::of(r), Identity::Fork { comm: None });
            assert_eq!(command_line(r, false), "[fork of ?]");
            assert_eq!(short_command_line(r, false), "[fork of ?]");
            assert_eq!(program(r), "[fork of ?]");
            assert_eq!(command_line_with_notes(r, false), "[fork of ?]");
        });
    }

    #[test]
    fn argv_is_quoted_and_its_directory_left_out_of_the_short_forms() {
        let d = ExecDetails {
            argv: Some(Argv::from(&["/usr/bin/printf", "it's", "https://u:pw@h/x"][..])),
            exe: Some(Arc::from("/usr/bin/printf")),
            comm: Some("printf".into()),
            ..Default::default()
        };
        one(
            &[[fork(10, 1, 20)].as_slice(), &exec(11, 20, d.clone())].concat(),
            |r| {
                assert_eq!(
                    command_line(r, false),
                    r"/usr/bin/printf 'it'\''s' https://u:pw@h/x"
                );
                assert_eq!(
                    command_line(r, true),
                    r"/usr/bin/printf 'it'\''s' 'https://u:<REDACTED>@h/x'"
                );
                assert_eq!(
                    short_command_line(r, true),
                    r"printf 'it'\''s' 'https://u:<REDACTED>@h/x'"
                );
                assert_eq!(program(r), "printf");
                assert_eq!(command_line_with_notes(r, false), command_line(r, false));
            },
        );
        one(
            &[
                [fork(10, 1, 20)].as_slice(),
                &exec(11, 20, d.clone()),
                &exec(12, 20, d),
            ]
            .concat(),
            |r| {
                assert!(command_line_with_notes(r, false).ends_with("x  (exec ×2)"));
            },
        );
    }

    /// What the kernel names a process when it exits (taskstats' `ac_comm`): the exec that was
    /// missed, the script a `#!` line ran; an argument named like the process is no script.
    #[test]
    fn the_name_at_exit_names_unread_execs_and_scripts() {
        let name = |c: &str| crate::model::event::KernelName::new(c.as_bytes()).unwrap();
        let with_argv = |argv: &[&str], comm: &str| ExecDetails {
            argv: Some(argv.iter().copied().collect()),
            comm: Some(comm.into()),
            ..Default::default()
        };
        let exit = |comm: &str| Event::ExitName {
            tgid: 1,
            comm: name(comm),
        };
        // `as` exec'd by `cc` and gone before its argv was read: the name it inherited is
        // the parent's; the exit's is its own.
        let mut ev = vec![fork(0, 0, 1)];
        ev.push(Event::Comm {
            ts: 1,
            pid: 1,
            tgid: 1,
            comm: "gcc".into(),
        });
        ev.extend(exec(2, 1, ExecDetails::default()));
        one(&[ev.clone(), vec![exit("as")]].concat(), |r| {
            assert_eq!(command_line(r, false), "[as]");
            assert_eq!(program(r), "as");
            assert!(r.comm_at_exit);
        });
        let cases: [(&[&str], &str, &str, &str); 6] = [
            // The kernel names a `#!` script by its file; argv starts with its interpreter.
            (&["/bin/sh", "./psutil.sh"], "sh", "psutil.sh", "psutil.sh"),
            // One option on the `#!` line.
            (
                &["/usr/bin/env", "python3", "/usr/local/bin/pip-wrap"],
                "env",
                "pip-wrap",
                "pip-wrap",
            ),
            // 15 bytes of a longer name.
            (
                &["/bin/bash", "./configure-helper.sh"],
                "bash",
                "configure-helpe",
                "configure-helper.sh",
            ),
            // `sh ./x.sh` as typed: the kernel names it `sh`.
            (&["sh", "./x.sh"], "sh", "sh", "sh"),
            // A rename to an argument that is no path: not a script.
            (&["/tmp/shapes", "rename", "worker"], "shapes", "worker", "shapes"),
            // The exit says what the exec said.
            (&["/usr/bin/cc", "-c", "a.c"], "cc", "cc", "cc"),
        ];
        for (argv, at_exec, at_exit, want) in cases {
            let mut ev = vec![fork(0, 0, 1)];
            ev.extend(exec(1, 1, with_argv(argv, at_exec)));
            ev.push(exit(at_exit));
            one(&ev, |r| {
                assert_eq!(program(r), want, "{argv:?}");
                assert_eq!(r.comm.as_deref(), Some(at_exit));
                assert_eq!(r.comm_at_exit, at_exec != at_exit, "{argv:?}");
            });
        }
    }

    /// The exec'd path (eBPF) names a script from the exec on, without waiting for its exit's
    /// name, and says when a process is no script whatever its name at exit.
    #[test]
    fn the_execd_path_names_scripts() {
        let d = |argv: &[&str], filename: &str| ExecDetails {
            argv: Some(argv.iter().copied().collect()),
            comm: Some(base_name(argv[0]).into()),
            filename: Some(Arc::from(filename)),
            ..Default::default()
        };
        let cases: [(&[&str], &str, &str); 6] = [
            (
                &["/bin/sh", "./configure", "--prefix=/usr"],
                "./configure",
                "configure",
            ),
            (&["/usr/bin/env", "python3", "./x.py"], "./x.py", "x.py"),
            // Past 15 bytes: the whole name (the kernel's comm would be cut).
            (
                &["/bin/bash", "./configure-helper.sh"],
                "./configure-helper.sh",
                "configure-helper.sh",
            ),
            // Typed as `sh ./x.sh`: the kernel was given sh itself.
            (&["sh", "./x.sh"], "/usr/bin/sh", "sh"),
            // A program run as itself.
            (&["/usr/bin/cc", "-c", "a.c"], "/usr/bin/cc", "cc"),
            // argv[0] set to something else (`exec -a`): still not a script.
            (&["worker", "./x.sh"], "/usr/bin/python3", "worker"),
        ];
        for (argv, filename, want) in cases {
            let mut ev = vec![fork(0, 0, 1)];
            ev.extend(exec(1, 1, d(argv, filename)));
            one(&ev, |r| assert_eq!(program(r), want, "{argv:?} {filename}"));
        }
    }

    #[test]
    fn without_argv_the_executable_then_the_comm_names_the_program() {
        let unread = |exe: Option<&str>, comm: Option<&str>| ExecDetails {
            argv: None,
            exe: exe.map(Arc::from),
            comm: comm.map(String::from),
            ..Default::default()
        };
        let cases = [
            (
                unread(Some("/opt/x/cc1plus (deleted)"), Some("cc1plus")),
                "cc1plus",
                "[cc1plus]",
            ),
            (
                unread(Some("/usr/bin/python3.11"), Some("build.py")),
                "python3.11",
                "[build.py]",
            ),
            (unread(None, Some("build.py")), "build.py", "[build.py]"),
            (unread(None, None), "?", "[?]"),
        ];
        for (d, prog, line) in cases {
            one(&[[fork(10, 1, 20)].as_slice(), &exec(11, 20, d)].concat(), |r| {
                assert_eq!(program(r), prog);
                assert_eq!(command_line(r, false), line);
                assert_eq!(
                    command_line_with_notes(r, false),
                    format!("{line} (argv unavailable)")
                );
                assert_eq!(
                    exec_command_line(&r.execs[0], r.comm.as_deref(), false),
                    format!("{line} (argv unavailable)")
                );
            });
        }
        // An empty argv (execve with none) says nothing: the kernel's names stand in.
        let empty = ExecDetails {
            argv: Some(Argv::from(&[][..] as &[&str])),
            comm: Some("odd".into()),
            ..Default::default()
        };
        one(
            &[[fork(10, 1, 20)].as_slice(), &exec(11, 20, empty)].concat(),
            |r| {
                assert_eq!(command_line(r, false), "[odd]");
                assert_eq!(program(r), "odd");
            },
        );
    }

    #[test]
    fn every_name_is_escaped() {
        let d = ExecDetails {
            argv: Some(Argv::from(
                &["/tmp/\x1b[2Jevil", "x\nroot 1 <- 0 exec /sbin/init FAKE", "ok"][..],
            )),
            exe: Some(Arc::from("/tmp/\x1b[2Jevil")),
            comm: Some("\x1b[2Jevil".into()),
            ..Default::default()
        };
        one(&[[fork(10, 1, 20)].as_slice(), &exec(11, 20, d)].concat(), |r| {
            assert_eq!(
                command_line(r, false),
                r"$'/tmp/\e[2Jevil' $'x\nroot 1 <- 0 exec /sbin/init FAKE' ok"
            );
            assert_eq!(
                short_command_line(r, true),
                r"$'\e[2Jevil' $'x\nroot 1 <- 0 exec /sbin/init FAKE' ok"
            );
            assert_eq!(program(r), r"\e[2Jevil");
        });
        let unread = ExecDetails {
            exe: Some(Arc::from(crate::model::bytes::encode(b"/bin/caf\xe9").as_ref())),
            comm: Some("a\rb".into()),
            ..Default::default()
        };
        one(
            &[[fork(10, 1, 20)].as_slice(), &exec(11, 20, unread)].concat(),
            |r| {
                assert_eq!(program(r), r"caf\xe9");
                assert_eq!(command_line(r, false), r"[a\rb]");
            },
        );
        assert_eq!(fork_name(Some("\u{202e}gpj.exe")), r"[fork of \u202egpj.exe]");
        assert_eq!(region_name("cat\x07", "l\nx"), r"cat\a:l\nx");
    }

    #[test]
    fn base_names_and_cuts() {
        assert_eq!(base_name("/usr/lib/gcc/x86_64-linux-gnu/12/cc1"), "cc1");
        assert_eq!(base_name("cc"), "cc");
        assert_eq!(base_name("./dir/"), "dir");
        assert_eq!(base_name("/"), "/");
        assert_eq!(short_argv(&["/bin/sh", "-c", "exit 3"], false), "sh -c 'exit 3'");
        assert_eq!(short_argv::<&str>(&[], false), "");
        assert_eq!(cut("abcdef", 6), "abcdef");
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("ééééé", 3), "éé…");
        assert_eq!(cut("abc", 0), "…");
        // Columns, not characters: a wide character takes two, a combining mark none.
        assert_eq!(width("日本"), 4);
        assert_eq!(width("e\u{301}"), 1);
        assert_eq!(cut("日本語です", 6), "日本…");
        assert_eq!(cut("日本語です", 7), "日本語…");
        assert_eq!(cut("日本", 4), "日本");
        assert_eq!(region_name("index", "do_read_index"), "index:do_read_index");
        assert_eq!(region_name("", "l"), "l");
        assert_eq!(region_name("c", ""), "c");
    }
}
