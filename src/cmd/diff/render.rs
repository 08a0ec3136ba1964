//! The comparison as text for a person (a terminal's width, colour when allowed) and as one JSON
//! object for tools: functions of the [`DiffReport`], nothing else.

use std::fmt::Write as _;

use super::{CostEntry, DiffReport, Entry, FilesChange, RegionEntry};
use crate::model::naming::{cut, short_argv};
use crate::sink::text::{Paint, exit_text, fmt_duration, fmt_kib};

/// The report as one JSON object (pretty, with a final newline).
pub fn render_json(r: &DiffReport) -> String {
    let mut s = serde_json::to_string_pretty(r).unwrap_or_default();
    s.push('\n');
    s
}

/// Most entries the text shows in each list (the JSON has them all).
const TEXT_MAX: usize = 20;

fn ns(s: f64) -> u64 {
    (s.abs() * 1e9).round() as u64
}

fn signed(s: f64) -> String {
    format!("{}{}", if s < 0.0 { "-" } else { "+" }, fmt_duration(ns(s)))
}

fn pct(old: f64, new: f64) -> String {
    if old <= 0.0 {
        return String::new();
    }
    format!(" ({:+.0}%)", (new - old) * 100.0 / old)
}

/// A group for people: its example's argv with the program's directory left out
/// (`/usr/lib/gcc/…/cc1` → `cc1`), so what tells commands apart fits on the line; the JSON keeps
/// it whole.
fn label(e: &Entry) -> String {
    if e.example.is_empty() {
        e.argv.join(" ")
    } else {
        short_argv(&e.example, false)
    }
}

/// A critical path step for people: its argv as [`label`] shows a group's, a name the model
/// made (`[fork of sh]`, `[cc1]`) as it is, not quoted as a word.
fn path_label(argv: &[String]) -> String {
    match argv {
        // Nothing in it to escape (the model's names are escaped already).
        [one] if one.starts_with('[') && crate::model::escape::text(one) == one.as_str() => one.clone(),
        _ => short_argv(argv, false),
    }
}

/// One list of the text: its title and size, at most [`TEXT_MAX`] lines, and how many more the
/// JSON has; nothing when it is empty.
fn write_list<T>(out: &mut String, p: Paint, title: &str, es: &[T], line: &dyn Fn(&T) -> String) {
    if es.is_empty() {
        return;
    }
    let _ = writeln!(out, "{} ({})", p.emphasis(title), es.len());
    for e in es.iter().take(TEXT_MAX) {
        let _ = writeln!(out, "  {}", line(e));
    }
    if es.len() > TEXT_MAX {
        let _ = writeln!(
            out,
            "  {}",
            p.secondary(&format!("… {} more (--json lists all)", es.len() - TEXT_MAX))
        );
    }
}

/// The report for people: the wall time, each list, and the new critical path with each step's
/// change. `color` paints slower and failed red, faster and fixed green; `width` cuts lines.
pub fn render_text(r: &DiffReport, color: bool, width: usize) -> String {
    let p = Paint { on: color };
    let mut out = String::new();
    let w = &r.wall_s;
    let change = w.new - w.old;
    let paint_change = |s: &str, d: f64| if d > 0.0 { p.failure(s) } else { p.success(s) };
    let _ = writeln!(
        out,
        "{} {} → {}  {}",
        p.emphasis("wall time:"),
        fmt_duration(ns(w.old)),
        fmt_duration(ns(w.new)),
        paint_change(&format!("{}{}", signed(change), pct(w.old, w.new)), change)
    );
    let _ = writeln!(
        out,
        "{} {} → {}, failures {} → {}",
        p.emphasis("processes:"),
        r.runs.old.processes,
        r.runs.new.processes,
        r.runs.old.failures,
        r.runs.new.failures
    );
    if let (Some(o), Some(n)) = (r.cpu_s.old, r.cpu_s.new) {
        let d = n - o;
        let _ = writeln!(
            out,
            "{} {} → {}  {}",
            p.emphasis("cpu time:"),
            fmt_duration(ns(o)),
            fmt_duration(ns(n)),
            paint_change(&format!("{}{}", signed(d), pct(o, n)), d)
        );
    }
    if let (Some(o), Some(n)) = (r.max_rss_kib.old, r.max_rss_kib.new) {
        let _ = writeln!(
            out,
            "{} {} → {}{}",
            p.emphasis("largest peak memory:"),
            fmt_kib(o),
            fmt_kib(n),
            pct(o as f64, n as f64)
        );
    }
    let cmd_w = width.saturating_sub(40).max(30);
    let list = |out: &mut String, title: &str, es: &[Entry], line: &dyn Fn(&Entry) -> String| {
        write_list(out, p, title, es, line)
    };
    // Own time (lifetime minus its children's): what slower and faster compare.
    let timed = |e: &Entry| {
        let o = e.old_own_s.unwrap_or(0.0);
        let n = e.new_own_s.unwrap_or(0.0);
        let counts = if e.old_count != e.new_count {
            format!(", ×{} → ×{}", e.old_count, e.new_count)
        } else if e.new_count > 1 {
            format!(", ×{}", e.new_count)
        } else {
            String::new()
        };
        // Padded before painting: escape codes have no width.
        format!(
            "{}  {}  {}",
            paint_change(&format!("{:>9}", signed(e.delta_own_s)), e.delta_own_s),
            cut(&label(e), cmd_w),
            p.secondary(&format!(
                "{} → {}{}{counts}",
                fmt_duration(ns(o)),
                fmt_duration(ns(n)),
                pct(o, n)
            ))
        )
    };
    list(&mut out, "slower:", &r.slower, &timed);
    list(&mut out, "faster:", &r.faster, &timed);
    list(&mut out, "failed now:", &r.failed, &|e| {
        format!(
            "{}  {}{}",
            cut(&label(e), cmd_w),
            exit_text(e.first_status, p),
            if e.old_count == 0 {
                " (new)"
            } else {
                " (ok before)"
            }
        )
    });
    list(&mut out, "fixed:", &r.fixed, &|e| {
        format!(
            "{}  {}",
            cut(&label(e), cmd_w),
            p.success(&format!(
                "ok now, {} before",
                exit_text(e.first_status, Paint { on: false })
            ))
        )
    });
    let one_side = |e: &Entry, s: Option<f64>| {
        format!(
            "{}  {}",
            cut(&label(e), cmd_w),
            p.secondary(&format!("×{} {}", e.count, fmt_duration(ns(s.unwrap_or(0.0)))))
        )
    };
    list(&mut out, "new:", &r.new, &|e| one_side(e, e.new_s));
    list(&mut out, "gone:", &r.gone, &|e| one_side(e, e.old_s));
    let cost_label = |e: &CostEntry| {
        if e.example.is_empty() {
            e.argv.join(" ")
        } else {
            short_argv(&e.example, false)
        }
    };
    let counts = |e: &CostEntry| match (e.old_count, e.new_count) {
        (a, b) if a != b => format!(", ×{a} → ×{b}"),
        (_, b) if b > 1 => format!(", ×{b}"),
        _ => String::new(),
    };
    let cpu_line = |e: &CostEntry| {
        format!(
            "{}  {}  {}",
            paint_change(&format!("{:>9}", signed(e.delta_cpu_s)), e.delta_cpu_s),
            cut(&cost_label(e), cmd_w),
            p.secondary(&format!(
                "{} → {} CPU{}{}",
                fmt_duration(ns(e.old_cpu_s)),
                fmt_duration(ns(e.new_cpu_s)),
                pct(e.old_cpu_s, e.new_cpu_s),
                counts(e)
            ))
        )
    };
    let rss_line = |e: &CostEntry| {
        let d = e.delta_rss_kib;
        format!(
            "{}  {}  {}",
            paint_change(
                &format!(
                    "{:>9}",
                    format!("{}{}", if d < 0 { "-" } else { "+" }, fmt_kib(d.unsigned_abs()))
                ),
                d as f64
            ),
            cut(&cost_label(e), cmd_w),
            p.secondary(&format!(
                "{} → {} peak{}{}",
                fmt_kib(e.old_max_rss_kib),
                fmt_kib(e.new_max_rss_kib),
                pct(e.old_max_rss_kib as f64, e.new_max_rss_kib as f64),
                counts(e)
            ))
        )
    };
    let c = &r.costs;
    write_list(&mut out, p, "more CPU:", &c.more_cpu, &cpu_line);
    write_list(&mut out, p, "less CPU:", &c.less_cpu, &cpu_line);
    write_list(&mut out, p, "more memory:", &c.more_memory, &rss_line);
    write_list(&mut out, p, "less memory:", &c.less_memory, &rss_line);
    let rg = &r.regions;
    let region_line = |e: &RegionEntry| {
        let (o, n) = (e.old_s.unwrap_or(0.0), e.new_s.unwrap_or(0.0));
        let counts = if e.old_count != e.new_count {
            format!(", ×{} → ×{}", e.old_count, e.new_count)
        } else {
            format!(", ×{}", e.new_count)
        };
        format!(
            "{}  {}  {}",
            paint_change(&format!("{:>9}", signed(e.delta_s)), e.delta_s),
            cut(&e.name, cmd_w),
            p.secondary(&format!(
                "{} → {}{}{counts}",
                fmt_duration(ns(o)),
                fmt_duration(ns(n)),
                pct(o, n)
            ))
        )
    };
    let region_list =
        |out: &mut String, title: &str, es: &[RegionEntry]| write_list(out, p, title, es, &region_line);
    region_list(&mut out, "regions slower:", &rg.slower);
    region_list(&mut out, "regions faster:", &rg.faster);
    region_list(&mut out, "regions new:", &rg.new);
    region_list(&mut out, "regions gone:", &rg.gone);
    let files_line = |e: &FilesChange| {
        // The first entry of the list summarised by directory (`/usr/include/openssl/ (37
        // files)`, the build's own files first), then how many files more.
        let part = |verb: &str, list: &[crate::report::summary::DirEntry], n: usize| -> Option<String> {
            let first = list.first()?;
            let left = n.saturating_sub(first.files as usize);
            let more = if left > 0 {
                format!(" (+{left} more)")
            } else {
                String::new()
            };
            let what = if first.dir {
                format!("{} files in {}", first.files, first.people())
            } else {
                first.people().to_string()
            };
            Some(format!("{verb} {what}{more}"))
        };
        let parts: Vec<String> = [
            part("newly reads", &e.newly_read_dirs, e.newly_read_count),
            part("no longer reads", &e.no_longer_read_dirs, e.no_longer_read_count),
            part("newly writes", &e.newly_written_dirs, e.newly_written_count),
            part(
                "no longer writes",
                &e.no_longer_written_dirs,
                e.no_longer_written_count,
            ),
        ]
        .into_iter()
        .flatten()
        .collect();
        format!("{}: {}", cut(&path_label(&e.argv), cmd_w), parts.join("; "))
    };
    let files = r.files.as_deref().unwrap_or(&[]);
    write_list(
        &mut out,
        p,
        "files read or written differently:",
        files,
        &files_line,
    );
    if r.slower.is_empty()
        && files.is_empty()
        && r.faster.is_empty()
        && r.failed.is_empty()
        && r.new.is_empty()
        && r.gone.is_empty()
        && c.more_cpu.is_empty()
        && c.less_cpu.is_empty()
        && c.more_memory.is_empty()
        && c.less_memory.is_empty()
    {
        let _ = writeln!(
            out,
            "no command changed beyond {}% and {} ms",
            r.threshold.pct, r.threshold.min_ms
        );
    }
    let path = &r.critical_path.new;
    if let Some(rows) = r.path_rows.as_ref().filter(|_| !path.is_empty()) {
        // A long path: the steps that carry its time, as the summary shows them.
        let _ = writeln!(
            out,
            "{} {}",
            p.emphasis("critical path (new):"),
            p.secondary(&format!(
                "({} steps; the {} that carry its time)",
                path.len(),
                rows.len()
            ))
        );
        for row in rows {
            let Some(s) = path.get(row.step) else { continue };
            let d = match s.other_s {
                Some(o) => {
                    let d = s.duration_s - o;
                    paint_change(&signed(d), d)
                }
                None => p.secondary("(no one step of the old path matches)"),
            };
            let _ = writeln!(
                out,
                "  {}  {}  {d}",
                cut(&path_label(&s.argv), cmd_w),
                fmt_duration(row.held_ns),
            );
            if let Some(detail) = &row.detail {
                let _ = writeln!(out, "      {}", p.secondary(&cut(detail, cmd_w)));
            }
        }
    } else if !path.is_empty() {
        let _ = writeln!(out, "{}", p.emphasis("critical path (new):"));
        for s in path.iter().take(40) {
            let d = match s.other_s {
                Some(o) => {
                    let d = s.duration_s - o;
                    paint_change(&signed(d), d)
                }
                None => p.secondary("(not on the old path)"),
            };
            let indent = "  ".repeat(s.depth.min(10));
            let _ = writeln!(
                out,
                "  {indent}{}  {}  {d}",
                cut(&path_label(&s.argv), cmd_w.saturating_sub(indent.len())),
                fmt_duration(ns(s.duration_s)),
            );
        }
        if path.len() > 40 {
            let _ = writeln!(
                out,
                "  {}",
                p.secondary(&format!("… {} more steps (--json lists all)", path.len() - 40))
            );
        }
    }
    out
}
