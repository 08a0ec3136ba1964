//! The summary as Markdown (a heading, the headline, tables), for a CI job summary such as
//! GitHub Actions' `$GITHUB_STEP_SUMMARY`.
//!
//! Reads only the [`RunReport`]. Every name from a process goes into a code span (`code`), so
//! nothing a traced process chose can become Markdown (a link, a table cell break, an image).

use std::fmt::Write as _;

use super::text::{
    PathView, bg_text, cause_chain, cause_outcome, cost_line, cost_text, headline, offset, parallel_note,
    path_view, share,
};
use super::{RunReport, StatusJson, TOP};
use crate::model::escape;
use crate::model::naming::{cut, fit, quote_argv};
use crate::sink::text::{Paint, exit_text, fmt_duration, fmt_kib};

/// Markdown code span for `s`, safe inside a table cell.
pub(super) fn code(s: &str) -> String {
    let s = s.replace(['\n', '\r'], " ").replace('|', "\\|");
    let mut longest = 0;
    let mut run = 0;
    for c in s.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    let fence = "`".repeat(longest + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

fn md_status(s: &StatusJson) -> String {
    exit_text(s.raw, Paint { on: false })
}

/// Commands in Markdown are cut to this many characters (the JSON has them whole).
const MD_WIDTH: usize = 120;

/// The same summary as Markdown (a heading, the headline, tables), for a CI job summary such as
/// GitHub Actions' `$GITHUB_STEP_SUMMARY`. Ends with a blank line so appended summaries stay
/// apart.
pub fn render_markdown(r: &RunReport) -> String {
    let mut out = String::new();
    let title = match &r.command {
        Some(argv) => format!("proctrace: {}", code(&fit(&quote_argv(argv, false), MD_WIDTH))),
        None => "proctrace".to_string(),
    };
    let _ = writeln!(out, "### {title}\n");
    let status = match &r.status {
        Some(s) => format!("**{}** · ", md_status(s)),
        None => String::new(),
    };
    let _ = writeln!(out, "{status}{}\n", headline(r, Paint { on: false }));
    // A failed command's summary opens with what failed first.
    if !r.causes.is_empty() {
        let _ = writeln!(out, "#### Why it failed\n");
        for c in r.causes.iter().take(TOP) {
            let _ = writeln!(
                out,
                "- {} (pid {}): {}",
                code(&fit(&c.failure.label, MD_WIDTH)),
                c.failure.pid,
                cause_outcome(c, Paint { on: false })
            );
            if let Some(chain) = cause_chain(c) {
                let _ = writeln!(out, "  under {}", code(&cut(chain, MD_WIDTH)));
            }
        }
        if r.causes.len() > TOP {
            let _ = writeln!(out, "\n… {} more causes", r.causes.len() - TOP);
        }
        out.push('\n');
    }
    if let Some(f) = &r.files {
        let _ = writeln!(out, "#### Files\n");
        let _ = writeln!(out, "{}\n", super::text::files_line(f));
        // Most read: files read by more than one process (one read each is no "most").
        if f.most_read.iter().any(|m| m.readers > 1) {
            let _ = writeln!(out, "| read by | file |\n|---:|---|");
            for m in f.most_read.iter().filter(|m| m.readers > 1) {
                let _ = writeln!(out, "| {} | {} |", m.readers, code(&fit(&m.people, MD_WIDTH)));
            }
            out.push('\n');
        }
        // The directories that stand for more than `--files-dirs` files (docs/files.md).
        let d = &f.directories;
        for (verb, list) in [("read", &d.read), ("written", &d.written)] {
            let dirs: Vec<&super::DirEntry> = list.iter().filter(|e| e.dir).collect();
            if dirs.is_empty() {
                continue;
            }
            let _ = writeln!(
                out,
                "| files {verb} | in directory | by processes | most used |\n|---:|---|---:|---|"
            );
            for e in dirs.iter().take(TOP) {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} |",
                    e.files,
                    code(&cut(e.people(), MD_WIDTH)),
                    e.processes.unwrap_or(0),
                    code(&cut(&super::text::top_names(e), MD_WIDTH))
                );
            }
            if dirs.len() > TOP {
                let _ = writeln!(
                    out,
                    "\n… {} with more than {} of the files {verb}",
                    super::text::plural((dirs.len() - TOP) as u64, "more directory", "more directories"),
                    d.more_than.unwrap_or(0)
                );
            }
            out.push('\n');
        }
    }
    if !r.outside.is_empty() {
        let _ = writeln!(out, "#### Work outside the traced tree\n");
        for w in &r.outside {
            let _ = writeln!(out, "- {}; fix: {}", super::text::outside_words(w), w.fix);
        }
        out.push('\n');
    }
    if !r.daemons.is_empty() {
        let _ = writeln!(out, "#### Work in daemons\n");
        for d in &r.daemons {
            let _ = writeln!(out, "- {}", super::text::daemon_words(d));
        }
        out.push('\n');
    }
    if let Some(c) = &r.costs {
        let _ = writeln!(out, "#### What it cost\n");
        let _ = writeln!(out, "{}\n", cost_line(r, c));
        if let Some(h) = c.top_cpu.first() {
            let _ = writeln!(
                out,
                "Hungriest: {} (pid {}, {})\n",
                code(&fit(&h.label, MD_WIDTH)),
                h.pid,
                cost_text(h)
            );
        }
        for (title, list) in [
            ("Most CPU (user + system)", &c.top_cpu),
            ("Most memory (peak RSS)", &c.top_rss),
        ] {
            let _ = writeln!(out, "| {title} | cpu | peak | pid |");
            let _ = writeln!(out, "|---|---:|---:|---:|");
            for x in list.iter() {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} |",
                    code(&fit(&x.label, MD_WIDTH)),
                    fmt_duration(x.cpu_ns),
                    fmt_kib(x.max_rss_kib),
                    x.pid
                );
            }
            out.push('\n');
        }
    }

    if !r.critical_path.is_empty() {
        let _ = writeln!(out, "#### Critical path\n");
        match path_view(r) {
            PathView::Whole(steps) => {
                let _ = writeln!(out, "| start | duration | share | pid | command |");
                let _ = writeln!(out, "|---:|---:|---:|---:|---|");
                for s in steps {
                    let _ = writeln!(
                        out,
                        "| {} | {} | {} | {} | {}{}{} |",
                        offset(s.step.start_ns),
                        fmt_duration(s.step.duration_ns),
                        share(s.step.duration_ns, r.wall_ns),
                        s.step.pid,
                        "&emsp;".repeat(s.depth),
                        s.ran_in.map(|d| format!("in {d}: ")).unwrap_or_default(),
                        code(&fit(&s.step.label, MD_WIDTH))
                    );
                }
                for x in &r.parallel {
                    let _ = writeln!(out, "\n{}", code(&cut(&parallel_note(x), MD_WIDTH)));
                }
            }
            PathView::Carrying { rows, held_ns } => {
                let _ = writeln!(
                    out,
                    "{} steps; {} shown, holding {} of the {} wall:\n",
                    r.critical_path.len(),
                    rows.len(),
                    share(held_ns, r.wall_ns),
                    fmt_duration(r.wall_ns)
                );
                let _ = writeln!(out, "| start | time | share | pid | command | under |");
                let _ = writeln!(out, "|---:|---:|---:|---:|---|---|");
                for c in rows {
                    let mut what = code(&c.what_in(MD_WIDTH));
                    for l in c.details_in(MD_WIDTH) {
                        let _ = write!(what, "<br>{}", code(&l));
                    }
                    let _ = writeln!(
                        out,
                        "| {} | {} | {} | {} | {} | {} |",
                        offset(c.step.step.start_ns),
                        fmt_duration(c.held_ns),
                        share(c.held_ns, r.wall_ns),
                        c.step.step.pid,
                        what,
                        if c.via.is_empty() {
                            String::new()
                        } else {
                            code(&cut(&c.via, MD_WIDTH))
                        }
                    );
                }
                let _ = writeln!(out, "\nThe whole path is in `--summary-json`.");
            }
        }
        out.push('\n');
    }
    if !r.slowest.is_empty() {
        let _ = writeln!(out, "#### Slowest\n");
        let _ = writeln!(out, "| duration | start | pid | command |");
        let _ = writeln!(out, "|---:|---:|---:|---|");
        for s in &r.slowest {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                fmt_duration(s.duration_ns),
                offset(s.start_ns),
                s.pid,
                code(&fit(&s.label, MD_WIDTH))
            );
        }
        out.push('\n');
    }
    if !r.by_program.0.is_empty() {
        let _ = writeln!(out, "#### By program\n");
        if r.costs.is_some() {
            let _ = writeln!(out, "| program | count | total | cpu | largest peak |");
            let _ = writeln!(out, "|---|---:|---:|---:|---:|");
        } else {
            let _ = writeln!(out, "| program | count | total |");
            let _ = writeln!(out, "|---|---:|---:|");
        }
        for (name, s) in r.by_program.0.iter().take(TOP) {
            let mut row = format!("| {} | {} | {} |", code(name), s.count, fmt_duration(s.total_ns));
            if r.costs.is_some() {
                let _ = write!(
                    row,
                    " {} | {} |",
                    s.cpu_ns.map(fmt_duration).unwrap_or_default(),
                    s.max_rss_kib.map(fmt_kib).unwrap_or_default()
                );
            }
            let _ = writeln!(out, "{row}");
        }
        if r.by_program.0.len() > TOP {
            let _ = writeln!(out, "\n… {} more programs", r.by_program.0.len() - TOP);
        }
        out.push('\n');
    }
    if let Some(g) = &r.regions {
        let _ = writeln!(out, "#### Regions ({} reported by the processes)\n", g.count);
        let _ = writeln!(out, "| duration | start | pid | program | region | thread |");
        let _ = writeln!(out, "|---:|---:|---:|---|---|---|");
        for s in &g.slowest {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} |",
                fmt_duration(s.duration_ns),
                offset(s.start_ns),
                s.pid,
                code(&s.program),
                code(&cut(&s.name, MD_WIDTH)),
                code(&escape::text(&s.thread))
            );
        }
        let _ = writeln!(out, "\n| region | count | total |");
        let _ = writeln!(out, "|---|---:|---:|");
        for (name, s) in g.by_name.0.iter().take(TOP) {
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                code(&cut(name, MD_WIDTH)),
                s.count,
                fmt_duration(s.total_ns)
            );
        }
        if g.by_name.0.len() > TOP {
            let _ = writeln!(out, "\n… {} more names", g.by_name.0.len() - TOP);
        }
        out.push('\n');
    }
    if !r.failures.is_empty() {
        let _ = writeln!(out, "#### Failures\n");
        let _ = writeln!(out, "| pid | status | command |");
        let _ = writeln!(out, "|---:|---|---|");
        for f in r.failures.iter().take(TOP) {
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                f.pid,
                md_status(&f.status),
                code(&fit(&f.label, MD_WIDTH))
            );
        }
        if r.failures.len() > TOP {
            let _ = writeln!(out, "\n… {} more", r.failures.len() - TOP);
        }
        out.push('\n');
    }
    if !r.background.is_empty() {
        let _ = writeln!(out, "#### Background children (leaks)\n");
        let _ = writeln!(out, "| pid | state | command |");
        let _ = writeln!(out, "|---:|---|---|");
        for b in r.background.iter().take(TOP) {
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                b.pid,
                bg_text(b, Paint { on: false }),
                code(&fit(&b.label, MD_WIDTH))
            );
        }
        if r.background.len() > TOP {
            let _ = writeln!(out, "\n… {} more", r.background.len() - TOP);
        }
        out.push('\n');
    }
    out
}

/// `--summary-md FILE`: the summary as Markdown, appended (CI step summaries share the file).
pub const OUTPUT: crate::output::OutputSpec = crate::output::OutputSpec {
    flag: "summary-md",
    short: None,
    value_name: "FILE",
    help: "Append the end-of-run summary (critical path, slowest, by program, failures, leaks) as \
           Markdown to FILE, e.g. \"$GITHUB_STEP_SUMMARY\"",
    what: "summary",
    golden: Some("summary-md"),
    dest: crate::output::DestKind::Append,
    live_only: false,
    // One write in append mode: summaries of several steps share a file ($GITHUB_STEP_SUMMARY).
    make: crate::output::Make::WholeRun(|run, w| w.write_all(render_markdown(run.report()).as_bytes())),
};
