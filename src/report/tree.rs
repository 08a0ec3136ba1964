//! The process tree for people, printed when a run ends.
//!
//! Indentation follows parentage, one indent per level down to [`INDENT_MAX`]; deeper lines start
//! with a marker of their depth instead (`… [depth 200] └─ `), so the tree of a 200,000-deep chain
//! is linear in size, not quadratic. Each line shows pid, the process's command line
//! ([`crate::model::naming::command_line_with_notes`]: argv, or the kernel's name when argv could
//! not be read), duration and how the process ended. When the trace has what processes cost
//! (`ProcessRecord::usage`), two more columns under a heading line: CPU (user + system) and peak
//! memory (peak RSS); a process without figures leaves them blank, and a trace without any
//! prints exactly as before. Background children and lost events are called out. A failure
//! (part of the command's failure, [`Failures`]) is red; a handled non-zero exit (a probe,
//! `test`, `grep -q`) is muted. Colour only when asked (a terminal without `NO_COLOR`).

use std::fmt::Write as _;

use crate::model::escape;
use crate::model::event::BackgroundState;
use crate::model::event::ExitStatus;
use crate::model::images::{Images, images};
use crate::model::naming::{
    command_line_with_notes, cut, fit, image_command_line, image_program, quote_argv,
    short_image_command_line, width,
};
use crate::model::session::{Mode, Summary};
use crate::model::tracker::{ProcId, ProcessRecord, Tracker};
use crate::report::summary::failures::Failures;
use crate::sink::text::{Paint, exit_text_handled, fmt_duration, fmt_kib, signal_name};

/// How to render.
#[derive(Debug, Clone, Copy)]
pub struct TreeOptions {
    /// Colour.
    pub color: bool,
    /// Hide URL credentials.
    pub redact: bool,
    /// Most process lines to print (the rest are counted).
    pub max_lines: usize,
    /// Width for argv before truncation.
    pub width: usize,
}

/// How `r` ended, as shown: a failure in red, a handled non-zero exit (`handled`: not part of
/// the command's failure, [`Failures`]) muted.
fn status(r: &ProcessRecord, handled: bool, p: Paint) -> String {
    let s = status_only(r, handled, p);
    // `--files`: what it read and wrote, after how it ended.
    match r.files.as_deref() {
        Some(f) if !f.uses.is_empty() => {
            use crate::model::event::FileAccess;
            let files = format!(
                " · reads {}, writes {}",
                f.count(FileAccess::Read),
                f.count(FileAccess::Write)
            );
            format!("{s}{}", p.secondary(&files))
        }
        _ => s,
    }
}

fn status_only(r: &ProcessRecord, handled: bool, p: Paint) -> String {
    if let Some(x) = r.exit {
        let s = exit_text_handled(x.status, handled, p);
        if r.background.is_some() {
            return format!("{s} {}", p.background("(outlived the command)"));
        }
        return s;
    }
    match r.background {
        Some(bg) => p.background(&format!(
            "background: {}",
            match bg.state {
                BackgroundState::Ready => "still running (ready)",
                BackgroundState::Timeout => "still running after --wait-bg (timeout)",
                BackgroundState::Error => "could not be probed (error)",
            }
        )),
        None => p.background("running"),
    }
}

/// The images of a process before its last, each with its time, each followed by ` → `:
/// `[fork of sh] 302.1ms → ` (so that the line reads `[fork of sh] 302.1ms → /bin/sleep 0.4`
/// with the last image's time in the duration column). Named in full when the line then fits
/// `room` with the last image's name (`last` columns), else by program (`env 1.2ms → `) when
/// that leaves the last at least half, else counted (`2 images 3.4ms → `).
fn earlier_images(ims: &Images<'_>, redact: bool, room: usize, last: usize) -> String {
    let n = ims.total().saturating_sub(1);
    let part = |full: bool| -> String {
        let mut s = String::new();
        for im in ims.clone().take(n) {
            let name = if full {
                short_image_command_line(&im, redact)
            } else {
                image_program(&im)
            };
            let d = im.duration_ns().map(fmt_duration).unwrap_or_else(|| "?".into());
            let _ = write!(s, "{name} {d} → ");
        }
        s
    };
    let s = part(true);
    if width(&s) + last <= room {
        return s;
    }
    let s = part(false);
    if width(&s) + last.min(room / 2) <= room {
        return s;
    }
    let d: u64 = ims.clone().take(n).filter_map(|im| im.duration_ns()).sum();
    format!(
        "{n} image{} {} → ",
        if n == 1 { "" } else { "s" },
        fmt_duration(d)
    )
}

/// Deepest level drawn with one indent per level; deeper lines start with a marker of their depth
/// (`… [depth 200] └─ `) instead, so the tree of a very deep chain stays linear in size.
pub const INDENT_MAX: usize = 64;

/// Columns kept for duration and status right of the command.
const RIGHT: usize = 30;
/// Columns kept right of the command for duration, CPU, peak memory and a short status when
/// the trace has cost figures (a long status runs past the width; the columns stay aligned).
const RIGHT_COSTS: usize = 40;

/// CPU (user + system) and peak memory of `r`, as shown; blank when not measured.
fn costs(r: &ProcessRecord) -> (String, String) {
    match r.usage.as_deref() {
        Some(u) => (
            fmt_duration(u.cpu_user_ns.saturating_add(u.cpu_sys_ns)),
            fmt_kib(u.max_rss_kib),
        ),
        None => (String::new(), String::new()),
    }
}

/// A process line: width of its plain left part, that part as shown, duration, status, and
/// [`costs`].
type Line = (usize, String, String, String, (String, String));

/// "1 process", "2 processes".
fn plural_processes(n: u64) -> String {
    format!("{n} process{}", if n == 1 { "" } else { "es" })
}

/// Renders the tree and summary as text.
pub fn render(t: &Tracker, mode: &Mode, sum: &Summary, o: TreeOptions) -> String {
    let p = Paint { on: o.color };
    let mut out = String::new();
    let mut lines = 0usize;
    let mut hidden = 0usize;
    // Every record, in the order the walk below takes them (the same walk).
    let all = crate::report::summary::all_records(t);
    let verdict = Failures::of(t, mode, sum);
    // Whether any record has cost figures: only then the two columns (and their heading).
    let with_costs = all.iter().any(|&id| t.get(id).is_some_and(|r| r.usage.is_some()));
    let right = if with_costs { RIGHT_COSTS } else { RIGHT };
    let mut rows: Vec<Line> = Vec::new();
    // (record, prefix for its children's lines, last among siblings, is a root, depth)
    let mut stack: Vec<(ProcId, String, bool, bool, usize)> = Vec::new();
    for &r in t.roots().iter().rev() {
        stack.push((r, String::new(), true, true, 0));
    }
    while let Some((id, prefix, last, is_root, depth)) = stack.pop() {
        let Some(r) = t.get(id) else { continue };
        if lines >= o.max_lines {
            // The walk has taken the shown records, the first `lines` of `all`: the rest are
            // hidden, counted without walking on (600,000 records under `--tree none`: their
            // prefixes were 4% of `analyze`, then the walk that only counted them 3%).
            hidden = all.len().saturating_sub(lines);
            break;
        }
        let branch = if last { "└─ " } else { "├─ " };
        let head = if is_root {
            String::new()
        } else if depth > INDENT_MAX {
            // Past the cap the prefix is a marker of the depth, not one indent per level: a
            // 200,000-deep chain stays linear in size.
            format!("… [depth {depth}] {branch}")
        } else {
            format!("{prefix}{branch}")
        };
        // With costs, the pid counts too, so that every line fits its column.
        let room = o.width.saturating_sub(
            head.chars().count()
                + right
                + if with_costs {
                    r.pid.to_string().len() + 1
                } else {
                    0
                },
        );
        let ims = images(t, r);
        let (desc, dur) = if ims.total() > 1 {
            // Each image before the last with its time, then the last: its time is the column.
            let last = ims.last_image();
            let name = last
                .map(|im| image_command_line(&im, o.redact))
                .unwrap_or_default();
            let before = earlier_images(&ims, o.redact, room, width(&name));
            (
                format!("{before}{}", fit(&name, room.saturating_sub(width(&before)))),
                last.and_then(|im| im.duration_ns())
                    .map(fmt_duration)
                    .unwrap_or_default(),
            )
        } else {
            (
                fit(&command_line_with_notes(r, o.redact), room),
                r.duration_ns().map(fmt_duration).unwrap_or_default(),
            )
        };
        let plain = format!("{head}{} {desc}", r.pid);
        let shown = format!("{}{} {desc}", p.secondary(&head), p.emphasis(&r.pid.to_string()));
        rows.push((
            width(&plain),
            shown,
            dur,
            status(r, !verdict.contains(id), p),
            costs(r),
        ));
        lines += 1;
        let child_prefix = if is_root || lines >= o.max_lines || depth >= INDENT_MAX {
            String::new()
        } else {
            format!("{prefix}{}", if last { "   " } else { "│  " })
        };
        let n = r.children.len();
        for (i, &c) in r.children.iter().enumerate().rev() {
            stack.push((c, child_prefix.clone(), i + 1 == n, false, depth + 1));
        }
    }
    let left = rows
        .iter()
        .map(|r| r.0)
        .max()
        .unwrap_or(0)
        .min(o.width.saturating_sub(right));
    let durw = rows.iter().map(|r| r.2.chars().count()).max().unwrap_or(0);
    if with_costs {
        let cpuw = rows
            .iter()
            .map(|r| r.4.0.chars().count())
            .max()
            .unwrap_or(0)
            .max(3);
        let memw = rows
            .iter()
            .map(|r| r.4.1.chars().count())
            .max()
            .unwrap_or(0)
            .max(4);
        let durw = durw.max(4);
        let _ = writeln!(
            out,
            "{}",
            p.secondary(&format!(
                "{:left$}  {:>durw$}  {:>cpuw$}  {:>memw$}",
                "", "wall", "cpu", "peak"
            ))
        );
        for (len, shown, dur, st, (cpu, mem)) in rows {
            let pad = left.saturating_sub(len);
            let _ = writeln!(
                out,
                "{shown}{:pad$}  {}  {cpu:>cpuw$}  {mem:>memw$}  {st}",
                "",
                p.secondary(&format!("{dur:>durw$}"))
            );
        }
    } else {
        for (len, shown, dur, st, _) in rows {
            let pad = left.saturating_sub(len);
            let _ = writeln!(
                out,
                "{shown}{:pad$}  {}  {st}",
                "",
                p.secondary(&format!("{dur:>durw$}"))
            );
        }
    }
    if hidden > 0 {
        let _ = writeln!(
            out,
            "{}",
            p.secondary(&format!("… {hidden} more processes (see --tree full or -o FILE)"))
        );
    }
    // Summary line.
    let what = match mode {
        Mode::Run { argv } => format!(
            "{} {}",
            p.emphasis("proctrace:"),
            fit(&quote_argv(argv, o.redact), 60)
        ),
        Mode::Watch { root: Some(r) } => format!("{} watch -p {r}", p.emphasis("proctrace:")),
        Mode::Watch { root: None } => format!("{} watch", p.emphasis("proctrace:")),
        Mode::Replay { path } => format!("{} replay {}", p.emphasis("proctrace:"), escape::text(path)),
        Mode::Analyze { inputs } => format!(
            "{} analyze {}",
            p.emphasis("proctrace:"),
            cut(&quote_argv(inputs, false), 60)
        ),
    };
    let mut parts = vec![format!(
        "{} process{}",
        sum.stats.processes,
        if sum.stats.processes == 1 { "" } else { "es" }
    )];
    if let Some(s) = sum.status {
        parts.push(match s {
            ExitStatus::Code(0) => p.success("exit 0"),
            ExitStatus::Code(c) => p.failure(&format!("exit {c}")),
            ExitStatus::Signal { signal, .. } => p.failure(&format!("killed by {}", signal_name(signal))),
        });
    }
    if sum.stats.execs > 0 {
        parts.push(format!(
            "argv read for {}/{} execs",
            sum.stats.execs_with_argv, sum.stats.execs
        ));
    }
    if sum.background > 0 {
        parts.push(p.background(&format!(
            "{} background child{} left running",
            sum.background,
            if sum.background == 1 { "" } else { "ren" }
        )));
    }
    if sum.stats.lost > 0 {
        parts.push(p.loss(&format!(
            "{} events LOST: the tree may be incomplete",
            sum.stats.lost
        )));
    }
    if sum.capture.untraced > 0 {
        // Processes the capture never saw start: their trees are missing.
        parts.push(p.loss(&format!(
            "{} untraced: the tree is incomplete",
            plural_processes(sum.capture.untraced)
        )));
    }
    if !sum.incomplete() {
        parts.push("0 events lost".to_string());
    }
    if sum.stats.notes_dropped > 0 {
        parts.push(p.loss(&format!(
            "{} Trace2 regions/data not kept for the reports (a process sent more than proctrace keeps)",
            sum.stats.notes_dropped
        )));
    }
    if sum.capture.rejected > 0 {
        parts.push(p.loss(&format!(
            "{} forged or malformed datagrams rejected",
            sum.capture.rejected
        )));
    }
    let _ = writeln!(out, "{what} — {}", parts.join(", "));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::event::Event;
    use crate::model::tracker::Scope;
    use crate::testkit::{self, exec, exit, fork, usage};

    const MS: u64 = 1_000_000;

    fn tree(events: &[Event], width: usize) -> String {
        tree_cut(events, width, usize::MAX)
    }

    fn tree_cut(events: &[Event], width: usize, max_lines: usize) -> String {
        let mut t = testkit::tracker(Scope::Tree, true, true);
        t.expect_root(1);
        let mut facts = Vec::new();
        for e in events {
            t.apply(e, &mut facts);
        }
        let sum = testkit::summary(1000 * MS, &t, Some(1));
        let mode = Mode::Run {
            argv: vec!["make".into()],
        };
        let o = TreeOptions {
            color: false,
            redact: true,
            max_lines,
            width,
        };
        render(&t, &mode, &sum, o)
    }

    /// A failure's status is red; a handled non-zero exit's (the command went on and
    /// succeeded) is muted, never red.
    #[test]
    fn failures_are_red_and_handled_exits_muted() {
        let paint = |root_code: u32| {
            let mut t = testkit::tracker(Scope::Tree, true, true);
            t.expect_root(1);
            let mut facts = Vec::new();
            for e in [
                fork(0, 0, 1),
                fork(MS, 1, 2),
                exit(2 * MS, 2, 1),
                exit(10 * MS, 1, root_code),
            ] {
                t.apply(&e, &mut facts);
            }
            let sum = testkit::summary(20 * MS, &t, Some(1));
            let mode = Mode::Run {
                argv: vec!["x".into()],
            };
            let o = TreeOptions {
                color: true,
                redact: true,
                max_lines: usize::MAX,
                width: 100,
            };
            render(&t, &mode, &sum, o)
        };
        let ok = paint(0);
        assert!(ok.contains("\x1b[90mexit 1\x1b[0m"), "{ok:?}");
        assert!(!ok.contains("\x1b[31mexit 1"), "{ok:?}");
        let failed = paint(3);
        assert!(failed.contains("\x1b[31mexit 1\x1b[0m"), "{failed:?}");
        assert!(failed.contains("\x1b[31mexit 3\x1b[0m"), "{failed:?}");
    }

    /// A chain deeper than [`INDENT_MAX`] is drawn with one indent per level down to the cap,
    /// then with a marker of the depth: each line's prefix stays bounded.
    #[test]
    fn a_deep_chain_caps_its_indentation_with_a_depth_marker() {
        let depth = INDENT_MAX + 40;
        let mut ev = vec![fork(0, 0, 1)];
        for pid in 2..=(depth as i32 + 1) {
            ev.push(fork(pid as u64 * MS, pid - 1, pid));
        }
        let text = tree(&ev, 100_000);
        let lines: Vec<&str> = text.lines().collect();
        // One line per process, then the end line.
        assert_eq!(lines.len(), depth + 2, "{text}");
        // Pid p is at depth p - 1.
        let at = |d: usize| lines[d];
        assert!(at(1).starts_with("└─ 2 "), "{}", at(1));
        assert!(
            at(INDENT_MAX).starts_with(&format!("{}└─ {} ", "   ".repeat(INDENT_MAX - 1), INDENT_MAX + 1)),
            "{}",
            at(INDENT_MAX)
        );
        for d in INDENT_MAX + 1..=depth {
            let want = format!("… [depth {d}] └─ {} ", d + 1);
            assert!(at(d).starts_with(&want), "depth {d}: {}", at(d));
        }
        let longest = lines.iter().map(|l| l.chars().count()).max().unwrap_or(0);
        assert!(longest < 3 * INDENT_MAX + 60, "longest line {longest}");
    }

    /// A tree cut after any number of lines shows the first records of the walk (parents
    /// before children, in fork order) and counts exactly the rest as hidden.
    #[test]
    fn a_cut_tree_counts_every_record_it_does_not_show() {
        // make (1) → sh (2..=4), each sh → cc (10 + 10·k ..) with one child of its own.
        let mut ev = vec![fork(0, 0, 1)];
        ev.extend(exec(0, 1, &["make"], None));
        let mut order = vec![1];
        for k in 1..=3 {
            let sh = 1 + k;
            ev.push(fork(k as u64 * MS, 1, sh));
            ev.extend(exec(k as u64 * MS, sh, &["sh", "-c", "cc"], None));
            order.push(sh);
            for j in 0..k {
                let cc = 10 * sh + j;
                ev.push(fork(k as u64 * MS + 1, sh, cc));
                ev.extend(exec(k as u64 * MS + 1, cc, &["cc"], None));
                ev.push(fork(k as u64 * MS + 2, cc, 100 * cc));
                order.extend([cc, 100 * cc]);
            }
        }
        let all = order.len();
        for max in 0..=all + 1 {
            let text = tree_cut(&ev, 100, max);
            let shown: Vec<i32> = text
                .lines()
                .filter_map(|l| {
                    let w = l.trim_start_matches(|c: char| " │├└─".contains(c));
                    w.split(' ').next()?.parse().ok()
                })
                .collect();
            assert_eq!(shown, order[..max.min(all)], "max_lines {max}:\n{text}");
            let more = format!("… {} more processes", all.saturating_sub(max));
            assert_eq!(text.contains(&more), max < all, "max_lines {max}:\n{text}");
        }
    }

    /// `make` runs a long compile and a short one; `measured` says which of them have figures.
    fn build(measured: &[i32]) -> Vec<Event> {
        let mut ev = vec![fork(0, 0, 1)];
        ev.extend(exec(0, 1, &["make", "-j2"], None));
        ev.push(fork(MS, 1, 2));
        ev.extend(exec(
            MS,
            2,
            &[
                "cc",
                "-O2",
                "-c",
                "-o",
                "a-file-with-a-long-name.o",
                "a-file-with-a-long-name.c",
            ],
            None,
        ));
        ev.push(fork(2 * MS, 1, 3));
        ev.extend(exec(2 * MS, 3, &["cc", "-c", "b.c"], None));
        for (pid, end, cpu, rss) in [
            (3, 300, 90, 20_000),
            (2, 900, 2_150, 1_289_748),
            (1, 1000, 5, 2_100),
        ] {
            if measured.contains(&pid) {
                ev.push(usage(pid, cpu, 3, rss));
            }
            ev.push(exit(end * MS, pid, 0));
        }
        ev
    }

    #[test]
    fn cpu_and_peak_memory_columns_only_with_figures() {
        let plain = tree(&build(&[]), 80);
        assert!(!plain.contains("cpu") && !plain.contains("MiB"), "{plain}");
        assert!(
            plain.starts_with("1 make -j2"),
            "no heading without figures: {plain}"
        );

        let text = tree(&build(&[1, 2]), 80);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].trim_start().starts_with("wall") && lines[0].ends_with("cpu      peak"),
            "{text}"
        );
        assert!(lines[1].contains("  8.0ms  2.05 MiB  exit 0"), "{text}");
        assert!(lines[2].contains("  2.15s  1.23 GiB  exit 0"), "{text}");
        // Not measured: blank cells, the status in its column all the same.
        assert!(lines[3].ends_with(&format!("298.0ms{:19}exit 0", "")), "{text}");
        let col = |l: &str| l[..l.find("exit 0").unwrap()].chars().count();
        assert!(
            lines[1..4].iter().all(|l| col(l) == col(lines[1])),
            "aligned at 80 columns:\n{text}"
        );
        for l in &lines[..4] {
            assert!(l.chars().count() <= 80, "{} columns: {l}", l.chars().count());
        }
        assert!(lines[2].contains('…'), "the long command is cut to fit: {text}");
    }
}
