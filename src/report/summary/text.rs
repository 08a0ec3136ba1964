//! The summary for people on a terminal: aligned columns, cut to the width, coloured like the
//! tree when asked; and the phrases the Markdown shares with it (the headline, offsets, shares,
//! the critical path as shown, what it cost).
//!
//! Reads only the [`RunReport`]; never looks at a terminal or the environment (the width and
//! colour come in [`TextOptions`]).

use std::fmt::Write as _;

use super::{Background, Cause, Cost, Costs, Failure, PathStep, ProgramStat, RunReport, TOP};
use crate::model::escape;
use crate::model::naming::{cut, fit, width};
use crate::sink::text::{Paint, exit_text, fmt_duration, fmt_kib};

/// How to render the text.
#[derive(Debug, Clone, Copy)]
pub struct TextOptions {
    /// Colour.
    pub color: bool,
    /// Columns for a line; longer commands are cut with `…`.
    pub width: usize,
}

pub(super) fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

pub(super) fn share(part: u64, whole: u64) -> String {
    if whole == 0 {
        return "-".into();
    }
    format!("{:.0}%", part as f64 * 100.0 / whole as f64)
}

pub(super) fn offset(ns: i64) -> String {
    if ns < 0 {
        format!("-{}", fmt_duration(ns.unsigned_abs()))
    } else {
        format!("+{}", fmt_duration(ns as u64))
    }
}

pub(super) fn bg_text(b: &Background, p: Paint) -> String {
    match &b.exit {
        Some(s) => format!(
            "{}, then {}",
            p.background("outlived the command"),
            exit_text(s.raw, p)
        ),
        None => p.background(match b.state {
            "timeout" => "still running after --wait-bg",
            "error" => "could not be probed",
            _ => "still running",
        }),
    }
}

/// The headline numbers, one line.
pub(super) fn headline(r: &RunReport, p: Paint) -> String {
    let mut parts = vec![
        format!("wall {}", p.emphasis(&fmt_duration(r.wall_ns))),
        plural(r.processes, "process", "processes"),
        plural(r.execs, "exec", "execs"),
    ];
    let f = r.failures.len() as u64;
    parts.push(if f > 0 {
        p.failure(&plural(f, "failure", "failures"))
    } else {
        "0 failures".into()
    });
    let handled = (r.nonzero_exits.len() - r.failures.len()) as u64;
    if handled > 0 {
        parts.push(p.handled(&plural(
            handled,
            "handled non-zero exit",
            "handled non-zero exits",
        )));
    }
    let b = r.background.len() as u64;
    parts.push(if b > 0 {
        p.background(&format!("{b} background"))
    } else {
        "0 background".into()
    });
    if r.exit_unknown > 0 {
        parts.push(p.loss(&format!("{} exits unknown", r.exit_unknown)));
    }
    if r.lost > 0 {
        parts.push(p.loss(&plural(r.lost, "event lost", "events lost")));
    }
    if r.untraced > 0 {
        parts.push(p.loss(&plural(r.untraced, "process untraced", "processes untraced")));
    }
    // Never "0 events lost" for a trace known to be incomplete.
    if r.lost == 0 && r.untraced == 0 {
        parts.push("0 events lost".into());
    }
    parts.join(", ")
}

/// Most critical-path lines the text and Markdown show (the JSON has the whole path).
pub(super) const PATH_LINES: usize = 40;

/// A line of the critical path as shown.
pub(super) enum PathRow<'a> {
    Step(&'a PathStep),
    /// Steps left out between the shown ones: how many, their summed duration.
    Gap(usize, u64),
}

/// The critical path cut to [`PATH_LINES`] for people: when longer, only the command's own
/// children (depth ≤ 1); when still longer, the first and last 20 of those around a count of
/// the rest. Returns the rows and how many deeper steps were hidden.
pub(super) fn shown_path(r: &RunReport) -> (Vec<PathRow<'_>>, usize) {
    let all = &r.critical_path;
    if all.len() <= PATH_LINES {
        return (all.iter().map(PathRow::Step).collect(), 0);
    }
    let top: Vec<&PathStep> = all.iter().filter(|s| s.depth <= 1).collect();
    let deeper = all.len() - top.len();
    if top.len() <= PATH_LINES {
        return (top.into_iter().map(PathRow::Step).collect(), deeper);
    }
    let half = PATH_LINES / 2;
    let hidden = &top[half..top.len() - half];
    let mut rows: Vec<PathRow<'_>> = top[..half].iter().map(|s| PathRow::Step(s)).collect();
    rows.push(PathRow::Gap(
        hidden.len(),
        hidden.iter().map(|s| s.step.duration_ns).sum(),
    ));
    rows.extend(top[top.len() - half..].iter().map(|s| PathRow::Step(s)));
    (rows, deeper)
}

/// "CPU 12.3s over 4.1s wall: 3.0 cores on average", and how many were measured when not all.
pub(super) fn cost_line(r: &RunReport, c: &Costs) -> String {
    let mut s = format!(
        "CPU {} over {} wall",
        fmt_duration(c.cpu_ns),
        fmt_duration(r.wall_ns)
    );
    if let Some(x) = c.parallelism {
        let _ = write!(s, ": {x:.1} cores on average");
    }
    if c.measured < r.processes {
        let _ = write!(s, " ({} of {} processes measured)", c.measured, r.processes);
    }
    s
}

/// "2.38s CPU, 64.4 MiB peak".
pub(super) fn cost_text(c: &Cost) -> String {
    format!("{} CPU, {} peak", fmt_duration(c.cpu_ns), fmt_kib(c.max_rss_kib))
}

/// What a cause did, after its command line: "exit 1 after 12.3ms" (its status and, when its
/// fork is known, its duration).
pub(super) fn cause_outcome(c: &Cause, p: Paint) -> String {
    let mut s = exit_text(c.failure.status.raw, p);
    if let Some(d) = c.duration_ns {
        let _ = write!(s, " after {}", fmt_duration(d));
    }
    s
}

/// Its failed parents on one line: "make → sh -c … → gcc -c bad.c" (`None` for the command).
pub(super) fn cause_chain(c: &Cause) -> Option<&str> {
    (!c.chain_label.is_empty()).then_some(c.chain_label.as_str())
}

/// The summary for people, as printed on stderr after the tree: aligned columns, coloured like
/// the tree when `o.color`. A failed command's summary opens with its causes.
pub fn render_text(r: &RunReport, o: TextOptions) -> String {
    let p = Paint { on: o.color };
    let mut out = String::new();
    let _ = writeln!(out, "{} {}", p.emphasis("summary:"), headline(r, p));
    for c in r.causes.iter().take(TOP) {
        let _ = writeln!(
            out,
            "{} {} {}: {}",
            p.failure("cause:"),
            p.emphasis(&c.failure.pid.to_string()),
            cause_outcome(c, p),
            fit(&c.failure.label, o.width.saturating_sub(40))
        );
        if let Some(chain) = cause_chain(c) {
            let _ = writeln!(
                out,
                "  {} {}",
                p.secondary("under:"),
                cut(chain, o.width.saturating_sub(9))
            );
        }
    }
    if r.causes.len() > TOP {
        let _ = writeln!(
            out,
            "  {}",
            p.secondary(&format!("… {} more causes", r.causes.len() - TOP))
        );
    }
    let pidw = |pids: &mut dyn Iterator<Item = i32>| pids.map(|x| x.to_string().len()).max().unwrap_or(1);
    if let Some(c) = &r.costs {
        let _ = writeln!(out, "{} {}", p.emphasis("cost:"), cost_line(r, c));
        if let Some(h) = c.top_cpu.first() {
            let what = format!("{}:", cost_text(h));
            let _ = writeln!(
                out,
                "{} {what} {} {}",
                p.emphasis("hungriest:"),
                p.emphasis(&h.pid.to_string()),
                fit(
                    &h.label,
                    o.width
                        .saturating_sub(what.chars().count() + h.pid.to_string().len() + 13)
                )
            );
        }
    }

    if !r.failures.is_empty() {
        let _ = writeln!(out, "{}", p.emphasis("failures:"));
        let w = pidw(&mut r.failures.iter().take(TOP).map(|f| f.pid));
        let rows: Vec<(String, &Failure)> = r
            .failures
            .iter()
            .take(TOP)
            .map(|f| (exit_text(f.status.raw, Paint { on: false }), f))
            .collect();
        let sw = rows.iter().map(|(s, _)| s.chars().count()).max().unwrap_or(0);
        for (plain, f) in rows {
            let pad = sw - plain.chars().count();
            let _ = writeln!(
                out,
                "  {:>w$}  {}{:pad$}  {}",
                f.pid,
                exit_text(f.status.raw, p),
                "",
                fit(&f.label, o.width.saturating_sub(w + sw + 6))
            );
        }
        if r.failures.len() > TOP {
            let _ = writeln!(
                out,
                "  {}",
                p.secondary(&format!("… {} more", r.failures.len() - TOP))
            );
        }
    }

    if !r.background.is_empty() {
        let _ = writeln!(
            out,
            "{}",
            p.emphasis("background children (outlived the command):")
        );
        let w = pidw(&mut r.background.iter().take(TOP).map(|b| b.pid));
        for b in r.background.iter().take(TOP) {
            let _ = writeln!(
                out,
                "  {:>w$}  {}  {}",
                b.pid,
                fit(&b.label, o.width.saturating_sub(w + 40)),
                bg_text(b, p)
            );
        }
        if r.background.len() > TOP {
            let _ = writeln!(
                out,
                "  {}",
                p.secondary(&format!("… {} more", r.background.len() - TOP))
            );
        }
    }

    if !r.slowest.is_empty() {
        let _ = writeln!(out, "{}", p.emphasis("slowest:"));
        let dw = r
            .slowest
            .iter()
            .map(|s| fmt_duration(s.duration_ns).len())
            .max()
            .unwrap_or(0);
        let w = pidw(&mut r.slowest.iter().map(|s| s.pid));
        for s in &r.slowest {
            let _ = writeln!(
                out,
                "  {:>dw$}  {}  {}",
                fmt_duration(s.duration_ns),
                p.emphasis(&format!("{:>w$}", s.pid)),
                fit(&s.label, o.width.saturating_sub(dw + w + 6))
            );
        }
    }

    if let Some(c) = &r.costs {
        cost_table(
            &mut out,
            p,
            o.width,
            "most CPU: (user + system)",
            &c.top_cpu,
            false,
        );
        cost_table(&mut out, p, o.width, "most memory: (peak RSS)", &c.top_rss, true);
    }

    if !r.by_program.0.is_empty() {
        totals_table(
            &mut out,
            p,
            if r.costs.is_some() {
                "by program (total time, CPU, largest peak memory):"
            } else {
                "by program (total time):"
            },
            &r.by_program.0,
            32,
            "programs",
        );
    }

    if let Some(g) = &r.regions {
        let _ = writeln!(
            out,
            "{} {}",
            p.emphasis("regions:"),
            p.secondary(&format!(
                "({} reported by the processes themselves; slowest)",
                g.count
            ))
        );
        let dw = g
            .slowest
            .iter()
            .map(|s| fmt_duration(s.duration_ns).len())
            .max()
            .unwrap_or(0);
        let w = pidw(&mut g.slowest.iter().map(|s| s.pid));
        for s in &g.slowest {
            let thread = if s.thread == "main" {
                String::new()
            } else {
                format!(" [{}]", escape::text(&s.thread))
            };
            let _ = writeln!(
                out,
                "  {:>dw$}  {}  {}",
                fmt_duration(s.duration_ns),
                p.emphasis(&format!("{:>w$}", s.pid)),
                cut(
                    &format!("{} {}{thread}", s.program, s.name),
                    o.width.saturating_sub(dw + w + 6)
                )
            );
        }
        totals_table(
            &mut out,
            p,
            "regions by name (total time):",
            &g.by_name.0,
            48,
            "names",
        );
    }

    if !r.critical_path.is_empty() {
        let _ = writeln!(
            out,
            "{} {}",
            p.emphasis("critical path:"),
            p.secondary("(start, duration, share of wall time)")
        );
        let ow = r
            .critical_path
            .iter()
            .map(|s| offset(s.step.start_ns).len())
            .max()
            .unwrap_or(0);
        let dw = r
            .critical_path
            .iter()
            .map(|s| fmt_duration(s.step.duration_ns).len())
            .max()
            .unwrap_or(0);
        let (rows, deeper) = shown_path(r);
        for row in rows {
            let s = match row {
                PathRow::Step(s) => s,
                PathRow::Gap(n, ns) => {
                    let _ = writeln!(
                        out,
                        "  {}",
                        p.secondary(&format!("… {n} more steps, {} in all …", fmt_duration(ns)))
                    );
                    continue;
                }
            };
            let indent = "  ".repeat(s.depth);
            let used = ow + dw + 5 + 2 + indent.len() + s.step.pid.to_string().len() + 4;
            let _ = writeln!(
                out,
                "  {}  {:>dw$}  {:>4}  {indent}{} {}",
                p.secondary(&format!("{:>ow$}", offset(s.step.start_ns))),
                fmt_duration(s.step.duration_ns),
                share(s.step.duration_ns, r.wall_ns),
                p.emphasis(&s.step.pid.to_string()),
                fit(&s.step.label, o.width.saturating_sub(used))
            );
        }
        if deeper > 0 {
            let _ = writeln!(
                out,
                "  {}",
                p.secondary(&format!(
                    "({deeper} steps inside these not shown: the whole path is in --summary-json)"
                ))
            );
        }
    }
    out
}

/// A "name  count×  total" table of the first [`TOP`] entries (names cut at `max_name`), and how
/// many more there are.
fn totals_table(
    out: &mut String,
    p: Paint,
    title: &str,
    items: &[(String, ProgramStat)],
    max_name: usize,
    more: &str,
) {
    let _ = writeln!(out, "{}", p.emphasis(title));
    let top = &items[..items.len().min(TOP)];
    let nw = top.iter().map(|(n, _)| width(n)).max().unwrap_or(0).min(max_name);
    let cw = top
        .iter()
        .map(|(_, s)| s.count.to_string().len())
        .max()
        .unwrap_or(1);
    let tw = top
        .iter()
        .map(|(_, s)| fmt_duration(s.total_ns).len())
        .max()
        .unwrap_or(0);
    let costs: Vec<(String, String)> = top
        .iter()
        .map(|(_, s)| {
            (
                s.cpu_ns.map(fmt_duration).unwrap_or_default(),
                s.max_rss_kib.map(fmt_kib).unwrap_or_default(),
            )
        })
        .collect();
    let uw = costs.iter().map(|c| c.0.chars().count()).max().unwrap_or(0);
    let mw = costs.iter().map(|c| c.1.chars().count()).max().unwrap_or(0);
    for ((name, s), (cpu, mem)) in top.iter().zip(costs.iter()) {
        let name = cut(name, nw);
        let pad = nw.saturating_sub(width(&name));
        let mut line = format!(
            "  {name}{:pad$}  {:>cw$}×  {:>tw$}",
            "",
            s.count,
            fmt_duration(s.total_ns)
        );
        if uw + mw > 0 {
            let _ = write!(line, "  {cpu:>uw$}  {mem:>mw$}");
            line.truncate(line.trim_end().len());
        }
        let _ = writeln!(out, "{line}");
    }
    if items.len() > TOP {
        let _ = writeln!(
            out,
            "  {}",
            p.secondary(&format!("… {} more {more}", items.len() - TOP))
        );
    }
}

/// A list of processes by CPU (or, `by_rss`, by peak memory): the figure it is sorted by first.
fn cost_table(out: &mut String, p: Paint, width: usize, title: &str, items: &[Cost], by_rss: bool) {
    if items.is_empty() {
        return;
    }
    let _ = writeln!(out, "{}", p.emphasis(title));
    let cols: Vec<(String, String)> = items
        .iter()
        .map(|c| {
            let (cpu, mem) = (fmt_duration(c.cpu_ns), fmt_kib(c.max_rss_kib));
            if by_rss { (mem, cpu) } else { (cpu, mem) }
        })
        .collect();
    let aw = cols.iter().map(|c| c.0.chars().count()).max().unwrap_or(0);
    let bw = cols.iter().map(|c| c.1.chars().count()).max().unwrap_or(0);
    let w = items.iter().map(|c| c.pid.to_string().len()).max().unwrap_or(1);
    for (c, (a, b)) in items.iter().zip(cols) {
        let _ = writeln!(
            out,
            "  {a:>aw$}  {}  {}  {}",
            p.secondary(&format!("{b:>bw$}")),
            p.emphasis(&format!("{:>w$}", c.pid)),
            fit(&c.label, width.saturating_sub(aw + bw + w + 8))
        );
    }
}
