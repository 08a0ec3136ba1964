//! The run as one self-contained SVG picture: a Gantt chart of the jobs in tree order, a time
//! axis, and a strip showing how many processes (and jobs) ran at each moment.
//!
//! Layout, top to bottom: a title (the command, wall time, counts, start date), a legend, the
//! concurrency strip (computed from every process, drawn or not), the time axis, one row per
//! drawn job ([`jobs`]: a process with the processes it only waited for; label column on the
//! left, indented by depth with a thin tree guide; each member's bar from fork to exit on the
//! right, coloured by outcome and split into the process's images, the head's duration after
//! it) or summary of what was folded, and a note counting the processes without a bar. Each bar
//! has a `<title>` (the hover text) with the full command, pid, parent, start, duration, status
//! and working directory, and what the process cost when the trace has it (CPU, peak memory,
//! bytes read and written); each image segment its own command line and time.
//!
//! Readability at thousands of processes comes from folding (short rows and handled non-zero
//! exits, such as configure's probes, become summary rows: [`jobs`], [`Failures`]) and a row
//! cap ([`SvgOptions::max_rows`]): the rows with failures that mattered, unfinished processes
//! and lost exits are drawn first, then the longest, each with its ancestors so the tree stays
//! connected, and the rest are counted in the note; a row draws at most [`BARS_PER_ROW`] bars.
//! The picture's size is therefore bounded whatever the run's: it is built as a `String` in
//! memory (a few hundred kilobytes at most), while the work over all records is linear apart
//! from sorting.
//!
//! Hand-written rather than through an SVG crate: the output is a few element kinds with fixed
//! attributes, and writing them directly keeps the bytes stable for the golden tests and costs
//! no dependency. A pure function of what it is given (no clock, no environment), like every
//! report; it never decides which processes share a row (that is [`jobs`]). Here: the layout
//! worked out once as a [`Plot`]; `header.rs` draws its top (title, legend, axis, strip),
//! `rows.rs` its rows.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use crate::model::escape;
use crate::model::event::ExitStatus;
use crate::model::images::images;
use crate::model::naming::{
    command_line, cut, fit, image_command_line, image_program, program, quote_argv, region_name,
    short_command_line,
};
use crate::model::session::{Header, Mode, Summary};
use crate::model::tracker::{ProcId, ProcessRecord, Tracker};
use crate::report::summary::failures::Failures;
use crate::sink::text::{Paint, exit_text, fmt_bytes, fmt_duration, fmt_kib};

/// How to draw.
#[derive(Debug, Clone, Copy)]
pub struct SvgOptions {
    /// Hide URL credentials in argv.
    pub redact: bool,
    /// Most rows (jobs and summary rows) to draw; the shortest of the rest are counted.
    pub max_rows: usize,
}

impl Default for SvgOptions {
    fn default() -> Self {
        SvgOptions {
            redact: true,
            max_rows: 200,
        }
    }
}

/// Picture width, px.
const WIDTH: f64 = 1280.0;
/// Left margin, px.
const MARGIN: f64 = 12.0;
/// The label column's width, px.
const LABEL_W: f64 = 392.0;
/// Where the time axis begins, px.
pub const PLOT_X: f64 = MARGIN + LABEL_W + 8.0;
/// The time axis's length, px (room is left on the right for a duration after the last bar).
pub const PLOT_W: f64 = WIDTH - PLOT_X - 64.0;
/// Height of one process row, px.
const ROW_H: f64 = 16.0;
/// Height of a bar, px.
const BAR_H: f64 = 11.0;
/// Narrowest bar, px: a process too short to see still shows.
pub const MIN_BAR_W: f64 = 1.5;
/// Concurrency strip height, px.
const STRIP_H: f64 = 56.0;
/// Indentation per tree level, px.
const INDENT: f64 = 10.0;
/// Most bars drawn in one row (a job's members; the rest are counted in its label's hover).
const BARS_PER_ROW: usize = 64;
/// Deepest indentation drawn (deeper levels line up with it).
const MAX_INDENT_LEVEL: usize = 14;
/// Advance of one character of the 11 px monospace font, px (DejaVu Sans Mono: 0.602 em).
const CHAR_W: f64 = 6.65;

/// How a process ended, as the bar's colour class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Exit 0.
    Ok,
    /// Exit code other than 0.
    Failed,
    /// Killed by a signal.
    Signalled,
    /// No exit seen: still running at the end, or left in the background.
    Running,
    /// The exit was lost (inferred from pid reuse or a probe).
    Lost,
    /// Exited non-zero or was killed, but not as part of the command's failure (a probe,
    /// `test`, `grep -q`: [`Failures`]). Muted, and not a notable row.
    Handled,
}

impl Outcome {
    /// Of a record.
    pub fn of(r: &ProcessRecord) -> Outcome {
        match r.exit {
            None => Outcome::Running,
            Some(x) => match x.status {
                Some(ExitStatus::Code(0)) => Outcome::Ok,
                Some(ExitStatus::Code(_)) => Outcome::Failed,
                Some(ExitStatus::Signal { .. }) => Outcome::Signalled,
                None => Outcome::Lost,
            },
        }
    }

    /// Of a record in a run: [`Outcome::of`], but a non-zero exit or a kill that is not one of
    /// the `failures` is [`Outcome::Handled`].
    pub fn in_run(r: &ProcessRecord, id: ProcId, failures: &Failures) -> Outcome {
        match Outcome::of(r) {
            Outcome::Failed | Outcome::Signalled if !failures.contains(id) => Outcome::Handled,
            oc => oc,
        }
    }

    /// The CSS class of its bars.
    pub fn class(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Failed => "fail",
            Outcome::Signalled => "sig",
            Outcome::Running => "run",
            Outcome::Lost => "lost",
            Outcome::Handled => "handled",
        }
    }

    fn legend(self) -> &'static str {
        match self {
            Outcome::Ok => "exit 0",
            Outcome::Failed => "exit ≠ 0",
            Outcome::Signalled => "killed by a signal",
            Outcome::Running => "still running / background",
            Outcome::Lost => "exit lost",
            Outcome::Handled => "handled exit ≠ 0",
        }
    }
}

const STYLE: &str = "\
text{font-family:'DejaVu Sans',Verdana,Arial,sans-serif;font-size:12px;fill:#222}\
.mono{font-family:'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:11px}\
.title{font-size:15px;font-weight:bold}\
.sub{fill:#555}.dim{fill:#888}.warn{fill:#c0392b;font-weight:bold}.loss{fill:#a4239f;font-weight:bold}\
.tick{font-size:10px;fill:#666}.dur{font-size:10px;fill:#555}\
.grid{stroke:#e3e3e3;stroke-width:1}.guide{stroke:#c4c4c4;stroke-width:1;fill:none}\
.zebra{fill:#f5f6f8}.exec{stroke:#1d1d1d;stroke-width:1}\
.conc{fill:#8fb3d9;stroke:#4a78a8;stroke-width:1}.maxline{stroke:#4a78a8;stroke-dasharray:3 3}\
.seg{fill:#fff;fill-opacity:0}.forkimg{fill-opacity:.5}.seglabel{font-size:9px;fill:#fff}\
.fold text{font-style:italic}.foldtick{stroke:#7d8a99;stroke-width:1}\
.ok{fill:#59a14f}.fail{fill:#e15759}.sig{fill:#9c5fc7}.run{fill:#edc948}.lost{fill:#a7a7a7}\
";

/// Added to [`STYLE`] when a handled non-zero exit is drawn or in the legend: muted, not red.
const HANDLED_STYLE: &str = ".handled{fill:#b8c4d0}";

/// Added to [`STYLE`] when there are regions to draw.
const REGION_STYLE: &str =
    ".region{fill:#1f3a68;fill-opacity:.42;stroke:#ffffff;stroke-width:.5;stroke-opacity:.8}";

/// Escapes text for XML content and attribute values. Control characters, which XML 1.0 cannot
/// carry at all, become their visible Unicode pictures (U+2400…); the noncharacters U+FFFE and
/// U+FFFF become U+FFFD.
pub fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' => out.push(c),
            '\u{0}'..='\u{1f}' => out.push(char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}')),
            '\u{fffe}' | '\u{ffff}' => out.push('\u{fffd}'),
            _ => out.push(c),
        }
    }
    out
}

/// One process in tree order.
pub(crate) struct Proc {
    id: ProcId,
    pub(crate) parent: Option<usize>,
    pub(crate) start: u64,
    pub(crate) end: u64,
}

/// Every record, depth first from the roots, children in fork order.
fn tree_order(t: &Tracker, t0: u64, t1: u64) -> Vec<Proc> {
    let mut rows = Vec::new();
    let mut stack: Vec<(ProcId, Option<usize>)> = t.roots().iter().rev().map(|&r| (r, None)).collect();
    while let Some((id, parent)) = stack.pop() {
        let Some(r) = t.get(id) else { continue };
        let start = r.start_ns.unwrap_or(t0).clamp(t0, t1);
        let end = r.exit.map_or(t1, |x| x.ts).clamp(start, t1);
        let me = rows.len();
        rows.push(Proc {
            id,
            parent,
            start,
            end,
        });
        for &c in r.children.iter().rev() {
            stack.push((c, Some(me)));
        }
    }
    rows
}

/// Which rows to draw, given each row's parent row and length: all when they fit, else the
/// notable ones (failures, including kills that are part of the command's failure; still
/// running; exit lost) and then the longest, each with its ancestors.
fn choose(parents: &[Option<usize>], lens: &[u64], notable: &[bool], max_rows: usize) -> Vec<bool> {
    let n = parents.len();
    if n <= max_rows {
        return vec![true; n];
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| (!notable[i], std::cmp::Reverse(lens[i]), i));
    let mut chosen = vec![false; n];
    let mut count = 0;
    let mut chain = Vec::new();
    for i in order {
        if count >= max_rows {
            break;
        }
        chain.clear();
        let mut at = Some(i);
        while let Some(j) = at.filter(|&j| !chosen[j]) {
            chain.push(j);
            at = parents[j];
        }
        if !chain.is_empty() && count + chain.len() <= max_rows {
            for &j in &chain {
                chosen[j] = true;
            }
            count += chain.len();
        }
    }
    chosen
}

/// Most intervals `[start, end)` open at once over `[t0, t1]`, and per pixel column of `cols`
/// the most open at any moment within it. Half-open: one ending when another starts do not
/// overlap; an empty one is open at no moment.
fn concurrency(iv: &[(u64, u64)], t0: u64, t1: u64, cols: usize) -> (u32, Vec<u32>) {
    let mut ev: Vec<(u64, i32)> = Vec::with_capacity(iv.len() * 2);
    for &(s, e) in iv.iter().filter(|(s, e)| e > s) {
        ev.push((s, 1));
        ev.push((e, -1));
    }
    ev.sort_unstable();
    let span = (t1 - t0).max(1) as u128;
    let col_of = |t: u64| (((t - t0) as u128 * cols as u128 / span) as usize).min(cols - 1);
    let mut per_col = vec![0u32; cols];
    let (mut cur, mut max, mut col) = (0i64, 0i64, 0usize);
    for (t, d) in ev {
        let c = col_of(t);
        while col < c {
            col += 1;
            per_col[col] = cur as u32; // running at the column's start
        }
        cur += i64::from(d);
        max = max.max(cur);
        per_col[c] = per_col[c].max(cur as u32);
    }
    while col + 1 < cols {
        col += 1;
        per_col[col] = cur as u32;
    }
    (max as u32, per_col)
}

/// A tick step for the axis: about one tick per `px_per_tick` pixels, from 1-2-5 steps (then
/// 10 s, 20 s, 30 s, minutes and hours), with the unit it is labelled in.
fn tick_step(span_ns: u64, px_per_tick: f64) -> (u64, u64, &'static str) {
    let target = span_ns as f64 / (PLOT_W / px_per_tick);
    let mut candidates: Vec<u64> = Vec::new();
    let mut p = 1u64;
    while p <= 1_000_000_000 {
        candidates.extend([p, 2 * p, 5 * p]);
        p *= 10;
    }
    candidates.extend(
        [
            10, 20, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 18000, 36000, 86400,
        ]
        .map(|s: u64| s * 1_000_000_000),
    );
    let step = candidates
        .iter()
        .copied()
        .find(|&c| c as f64 >= target)
        .unwrap_or_else(|| ((target / 86_400e9).ceil() as u64).saturating_mul(86_400_000_000_000));
    let (mut unit, mut name) = match step {
        s if s >= 3_600_000_000_000 => (3_600_000_000_000, "h"),
        s if s >= 60_000_000_000 => (60_000_000_000, "min"),
        s if s >= 1_000_000_000 => (1_000_000_000, "s"),
        s if s >= 1_000_000 => (1_000_000, "ms"),
        s if s >= 1_000 => (1_000, "µs"),
        _ => (1, "ns"),
    };
    // `0.5 ms … 3.5 ms` reads better than `500 µs … 3500 µs`: the next decimal unit when the
    // run reaches it and a step is at least a tenth of it.
    if unit < 1_000_000_000 && span_ns >= unit * 1000 && step * 10 >= unit * 1000 {
        unit *= 1000;
        name = match name {
            "ns" => "µs",
            "µs" => "ms",
            _ => "s",
        };
    }
    (step, unit, name)
}

fn tick_label(t: u64, unit: u64, name: &str) -> String {
    if t.is_multiple_of(unit) {
        format!("{} {name}", t / unit)
    } else {
        let v = t as f64 / unit as f64;
        let s = format!("{v:.3}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        format!("{s} {name}")
    }
}

/// `2024-06-01T14:00:00+02:00` for monotonic `ts`: the local time proctrace ran in (the
/// header's UTC offset), to the second. The HTML report's start time too.
pub(crate) fn local_iso(h: &Header, ts: u64) -> String {
    let ns = ts as i128 + h.real_minus_mono as i128;
    let off = h.tool.utc_offset.unwrap_or(0);
    let secs = ns.div_euclid(1_000_000_000) as i64;
    let mut b = Vec::new();
    trace2::Timestamp {
        secs: secs.saturating_add(off),
        micros: 0,
    }
    .write_utc_extended(&mut b);
    let s = String::from_utf8_lossy(&b);
    let sign = if off < 0 { '-' } else { '+' };
    let a = off.unsigned_abs();
    format!(
        "{}{sign}{:02}:{:02}",
        s.get(..19).unwrap_or(&s),
        a / 3600,
        (a % 3600) / 60
    )
}

/// `2024-06-01 14:00:00 +02:00` for monotonic `ts` ([`local_iso`] for people).
fn wall_clock(h: &Header, ts: u64) -> String {
    let iso = local_iso(h, ts);
    match (iso.get(..10), iso.get(11..19), iso.get(19..)) {
        (Some(date), Some(time), Some(zone)) => format!("{date} {time} {zone}"),
        _ => iso,
    }
}

fn hover(r: &ProcessRecord, row: &Proc, t0: u64, redact: bool) -> String {
    let mut s = command_line(r, redact);
    let _ = write!(s, "\npid {}, parent {}", r.pid, r.ppid);
    match r.start_ns {
        Some(st) if st >= t0 => {
            let _ = write!(s, "\nstarted +{}", fmt_duration(st - t0));
        }
        Some(st) => {
            let _ = write!(s, "\nstarted {} before tracing began", fmt_duration(t0 - st));
        }
        None => s.push_str("\nrunning when tracing began"),
    }
    let plain = Paint { on: false };
    let ran = run_text(r, row);
    match r.exit {
        Some(x) => {
            let _ = write!(s, ", ran {ran}, {}", exit_text(x.status, plain));
        }
        None => {
            let _ = write!(s, ", still running after {ran}");
        }
    }
    if let Some(u) = r.usage.as_deref() {
        s.push_str(&usage_text(u));
    }
    if r.background.is_some() {
        s.push_str("\noutlived the command (background)");
    }
    if r.execs.len() > 1 {
        let _ = write!(s, "\nexec'd {} times", r.execs.len());
    }
    if let Some(cwd) = r
        .execs
        .last()
        .and_then(|e| e.details.as_ref())
        .and_then(|d| d.cwd.as_deref())
    {
        let _ = write!(s, "\ncwd {}", escape::text(cwd));
    }
    s.push_str(&notes_text(r));
    s
}

/// What a process cost, for its bar's hover text: CPU (user + system, then each), peak memory,
/// and the bytes it read and wrote (through calls; to and from storage).
fn usage_text(u: &crate::model::event::Usage) -> String {
    format!(
        "\nCPU {} (user {}, system {}), peak memory {}\nread {}, wrote {} (storage: {} read, {} written)",
        fmt_duration(u.cpu_user_ns.saturating_add(u.cpu_sys_ns)),
        fmt_duration(u.cpu_user_ns),
        fmt_duration(u.cpu_sys_ns),
        fmt_kib(u.max_rss_kib),
        fmt_bytes(u.read_chars),
        fmt_bytes(u.write_chars),
        fmt_bytes(u.read_bytes),
        fmt_bytes(u.write_bytes),
    )
}

/// How far a top-level region's band is inset in its bar, px (each level deeper: half again).
const REGION_INSET: f64 = 2.0;
/// Most regions drawn in one bar (the longest), so the picture stays bounded whatever the run.
const REGIONS_PER_BAR: usize = 24;
/// Narrowest region drawn, px: shorter ones would be slivers (the hover text counts them).
const MIN_REGION_W: f64 = 1.0;

/// The regions of `r` as bands inside its bar (top at `bar_y`): each a translucent band inset
/// from the bar, deeper levels inset further and so darker where they overlap the ones around
/// them, each with its hover text (name, message, thread, depth, start, duration). Only the
/// [`REGIONS_PER_BAR`] longest of those at least [`MIN_REGION_W`] wide; the bar's own hover
/// text counts them all.
fn regions(s: &mut String, r: &ProcessRecord, row: &Proc, bar_y: f64, t0: u64, x_of: &dyn Fn(u64) -> f64) {
    if r.regions.is_empty() {
        return;
    }
    let mut wide: Vec<(u64, usize)> = r
        .regions
        .iter()
        .enumerate()
        .filter_map(|(k, g)| {
            let (a, b) = (g.ts.clamp(row.start, row.end), g.end.clamp(row.start, row.end));
            // A region whose end precedes its start (a hostile trace) is not drawn.
            (b > a && x_of(b) - x_of(a) >= MIN_REGION_W).then(|| (b - a, k))
        })
        .collect();
    wide.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    wide.truncate(REGIONS_PER_BAR);
    // Outer ones first, so inner ones are drawn over them.
    wide.sort_by_key(|&(_, k)| (r.regions[k].nesting, r.regions[k].ts, k));
    for (_, k) in wide {
        let g = &r.regions[k];
        let (a, b) = (g.ts.clamp(row.start, row.end), g.end.clamp(row.start, row.end));
        let level = g.nesting.clamp(1, 4) as f64;
        let inset = REGION_INSET * (1.0 + (level - 1.0) * 0.5);
        let name = region_name(&g.category, &g.label);
        let mut title = name.clone();
        if let Some(m) = &g.msg {
            let _ = write!(title, " ({})", cut(&escape::text(m), 80));
        }
        let _ = write!(
            title,
            "\n{} pid {}, thread {}, nesting {}\nentered +{}, took {}",
            program(r),
            r.pid,
            escape::text(&g.thread),
            g.nesting,
            fmt_duration(g.ts.saturating_sub(t0)),
            fmt_duration(g.end.saturating_sub(g.ts))
        );
        let _ = writeln!(
            s,
            r#"<rect class="region" x="{}" y="{}" width="{}" height="{}" data-pid="{}" data-nesting="{}"><title>{}</title></rect>"#,
            f1(x_of(a)),
            f1(bar_y + inset),
            f1(x_of(b) - x_of(a)),
            f1(BAR_H - 2.0 * inset),
            r.pid,
            g.nesting,
            xml_escape(&title)
        );
    }
}

/// What a process reported about itself, for its bar's hover text: its regions (how many, the
/// longest) and its data points, timers and counters (the first few, values cut short).
fn notes_text(r: &ProcessRecord) -> String {
    use crate::model::event::DataValue;
    let mut s = String::new();
    if let Some(g) = r.regions.iter().max_by_key(|g| g.end.saturating_sub(g.ts)) {
        let _ = write!(
            s,
            "\n{} region{} reported, longest {} ({})",
            r.regions.len(),
            if r.regions.len() == 1 { "" } else { "s" },
            region_name(&g.category, &g.label),
            fmt_duration(g.end.saturating_sub(g.ts))
        );
    }
    const SHOWN: usize = 8;
    for d in r.data.iter().take(SHOWN) {
        let key = if d.category.is_empty() {
            escape::text(&d.key).into_owned()
        } else {
            format!("{}/{}", escape::text(&d.category), escape::text(&d.key))
        };
        let value = match &d.value {
            DataValue::Text(v) | DataValue::Json(v) => cut(&escape::text(v), 48),
            DataValue::Timer {
                intervals, total_ns, ..
            } => format!(
                "{} in {intervals} interval{}",
                fmt_duration(*total_ns),
                if *intervals == 1 { "" } else { "s" }
            ),
            DataValue::Counter { count, .. } => count.to_string(),
        };
        let _ = write!(s, "\n{key} = {value}");
    }
    if r.data.len() > SHOWN {
        let _ = write!(s, "\n… {} more data points", r.data.len() - SHOWN);
    }
    s
}

/// How long the process ran: from its fork, even one before the picture begins; `≥` the part
/// drawn when the fork time is unknown.
fn run_text(r: &ProcessRecord, row: &Proc) -> String {
    match r.start_ns {
        Some(st) => fmt_duration(row.end.saturating_sub(st)),
        None => format!("≥ {}", fmt_duration(row.end - row.start)),
    }
}

fn f1(v: f64) -> String {
    format!("{v:.1}")
}

/// Renders the picture, top to bottom: the opening and style, the title lines, the legend, the
/// grid and axis, the concurrency strip, the process rows, the note on what was folded away.
pub fn render(h: &Header, t: &Tracker, sum: &Summary, o: SvgOptions) -> String {
    let p = Plot::new(h, t, sum, o);
    let tally = p.tally();
    let mut s = String::with_capacity(64 * 1024 + p.drawn.len() * 700);
    p.open(&mut s);
    p.title(&mut s, &tally);
    p.legend(&mut s, &tally);
    p.axis(&mut s);
    p.strip(&mut s);
    p.process_rows(&mut s);
    p.folded_note(&mut s);
    s.push_str("</svg>\n");
    s
}

/// The outcomes of every process, drawn or not: for the title's counts and the legend.
struct Tally {
    failed: usize,
    signalled: usize,
    handled: usize,
    /// By [`Outcome`] (as its index): whether any process ended so.
    seen: [bool; 6],
}

/// Vertical positions, px.
struct Layout {
    legend_y: f64,
    strip_top: f64,
    strip_base: f64,
    axis_y: f64,
    rows_top: f64,
    rows_bottom: f64,
    note_y: f64,
    bottom_axis_y: f64,
    height: f64,
}

/// One row of the picture: a job ([`jobs::Job`], by its index) or what was folded under one.
#[derive(Debug, Clone, Copy)]
enum Unit {
    Job(usize),
    Fold(usize),
}

/// What the picture is drawn from, worked out once: the time range, every process in tree order,
/// the rows (jobs and summaries) drawn and what was folded, the layout.
struct Plot<'a> {
    h: &'a Header,
    t: &'a Tracker,
    sum: &'a Summary,
    o: SvgOptions,
    /// Which non-zero exits are the command's failure (the rest are handled).
    failures: Failures,
    t0: u64,
    t1: u64,
    /// Every process, in tree order.
    rows: Vec<Proc>,
    /// The jobs and what was folded (see [`jobs`]).
    jobs: jobs::Rows,
    /// Every row that could be drawn, in tree order, with its parent row and depth.
    units: Vec<(Unit, Option<usize>, usize)>,
    /// Indexes into `units` of those drawn, in order.
    drawn: Vec<usize>,
    /// Per process: it has a bar.
    has_bar: Vec<bool>,
    /// Processes without a bar (in summary rows, rows over the cap, or sub-millisecond members
    /// of a drawn row).
    folded: usize,
    /// Rows left out by the cap.
    capped: usize,
    /// The longest head of the rows left out by the cap, ns.
    folded_max: u64,
    any_regions: bool,
    /// Some process's non-zero exit was handled (it is in the legend, so the style is needed).
    any_handled: bool,
    /// A folded row's head was short under this, ns.
    short_ns: u64,
    y: Layout,
}

impl<'a> Plot<'a> {
    fn new(h: &'a Header, t: &'a Tracker, sum: &'a Summary, o: SvgOptions) -> Self {
        let t0 = h.ts;
        let mut t1 = sum.ts.max(t0.saturating_add(1));
        // The picture ends at the summary or the last exit, whichever is later.
        let mut stack: Vec<ProcId> = t.roots().to_vec();
        while let Some(id) = stack.pop() {
            if let Some(r) = t.get(id) {
                if let Some(x) = r.exit {
                    t1 = t1.max(x.ts);
                }
                stack.extend(r.children.iter().copied());
            }
        }
        let rows = tree_order(t, t0, t1);
        let failures = Failures::of(t, &h.mode, sum);
        // Handled non-zero exits (configure's probes) are not notable: they do not take the
        // first rows of a big build.
        let outcome: Vec<Option<Outcome>> = rows
            .iter()
            .map(|r| t.get(r.id).map(|p| Outcome::in_run(p, r.id, &failures)))
            .collect();
        let notable: Vec<bool> = outcome
            .iter()
            .map(|o| o.is_some_and(|o| !matches!(o, Outcome::Ok | Outcome::Handled)))
            .collect();
        let handled: Vec<bool> = outcome.iter().map(|&o| o == Some(Outcome::Handled)).collect();
        // A row is short when its bar would be under four pixels wide (and at least 1 ms).
        let short_ns = jobs::VISIBLE_NS.max(((t1 - t0) as f64 * 4.0 / PLOT_W) as u64);
        let jr = jobs::rows(&rows, &notable, &handled, short_ns);
        // The rows in tree order: each job not folded, its summary row first under it.
        let mut units: Vec<(Unit, Option<usize>, usize)> = Vec::new();
        let mut unit_of_job = vec![usize::MAX; jr.jobs.len()];
        for (k, job) in jr.jobs.iter().enumerate() {
            if jr.folded[k] {
                continue;
            }
            let parent = job.parent.map(|p| unit_of_job[p]).filter(|&u| u != usize::MAX);
            let depth = parent.map_or(0, |u| units[u].2 + 1);
            unit_of_job[k] = units.len();
            units.push((Unit::Job(k), parent, depth));
            if jr.folds[k]
                .as_ref()
                .is_some_and(|f| f.processes >= jobs::FOLD_ROW_MIN)
            {
                units.push((Unit::Fold(k), Some(unit_of_job[k]), depth + 1));
            }
        }
        let head_len = |u: &Unit| match *u {
            Unit::Job(k) => {
                let p = &rows[jr.jobs[k].members[0]];
                p.end - p.start
            }
            Unit::Fold(k) => jr.folds[k].as_ref().map_or(0, |f| f.longest),
        };
        let parents: Vec<Option<usize>> = units.iter().map(|u| u.1).collect();
        let lens: Vec<u64> = units.iter().map(|u| head_len(&u.0)).collect();
        let unit_notable: Vec<bool> = units
            .iter()
            .map(|u| match u.0 {
                Unit::Job(k) => jr.jobs[k].members.iter().any(|&m| notable[m]),
                Unit::Fold(_) => false,
            })
            .collect();
        let chosen = choose(&parents, &lens, &unit_notable, o.max_rows.max(1));
        let drawn: Vec<usize> = (0..units.len()).filter(|&i| chosen[i]).collect();
        // A drawn row's members have bars; when rows are folded, only those visible or
        // notable, and the members above those (a bar is never drawn without its parent's).
        let mut has_bar = vec![false; rows.len()];
        for &u in &drawn {
            let Unit::Job(k) = units[u].0 else { continue };
            let job = &jr.jobs[k];
            for &m in job.members.iter().rev() {
                let p = &rows[m];
                if !jr.folding
                    || m == job.members[0]
                    || m == job.work
                    || notable[m]
                    || p.end - p.start >= jobs::VISIBLE_NS
                    || has_bar[m]
                {
                    has_bar[m] = true;
                    if let Some(pa) = p.parent.filter(|_| m != job.members[0]) {
                        has_bar[pa] = true;
                    }
                }
            }
            // At most BARS_PER_ROW of those (the notable, the head, the work, then the
            // longest, each with the members above it), so the picture stays bounded even
            // when a 200,000-deep chain is one row.
            let eligible: Vec<usize> = job.members.iter().copied().filter(|&m| has_bar[m]).collect();
            if eligible.len() > BARS_PER_ROW {
                let pos: HashMap<usize, usize> = eligible.iter().enumerate().map(|(k, &m)| (m, k)).collect();
                let parents: Vec<Option<usize>> = eligible
                    .iter()
                    .map(|&m| rows[m].parent.and_then(|p| pos.get(&p).copied()))
                    .collect();
                let lens: Vec<u64> = eligible.iter().map(|&m| rows[m].end - rows[m].start).collect();
                let first: Vec<bool> = eligible
                    .iter()
                    .map(|&m| notable[m] || m == job.members[0] || m == job.work)
                    .collect();
                let keep = choose(&parents, &lens, &first, BARS_PER_ROW);
                for (k, &m) in eligible.iter().enumerate() {
                    has_bar[m] = keep[k];
                }
            }
        }
        let bars = has_bar.iter().filter(|&&b| b).count();
        let folded = rows.len() - bars;
        let capped = units.len() - drawn.len();
        let folded_max = (0..units.len())
            .filter(|&i| !chosen[i])
            .map(|i| lens[i])
            .max()
            .unwrap_or(0);
        let any_regions =
            (0..rows.len()).any(|i| has_bar[i] && t.get(rows[i].id).is_some_and(|p| !p.regions.is_empty()));

        let legend_y = 66.0;
        let strip_top = 84.0;
        let strip_base = strip_top + STRIP_H;
        let axis_y = strip_base + 18.0;
        let rows_top = axis_y + 8.0;
        let rows_bottom = rows_top + drawn.len() as f64 * ROW_H;
        let note_y = rows_bottom + 18.0;
        let bottom_axis_y = if folded > 0 {
            note_y + 18.0
        } else {
            rows_bottom + 16.0
        };
        let height = (bottom_axis_y + 14.0).ceil();
        Plot {
            h,
            t,
            sum,
            o,
            any_handled: handled.iter().any(|&x| x),
            short_ns,
            failures,
            t0,
            t1,
            rows,
            jobs: jr,
            units,
            drawn,
            has_bar,
            folded,
            capped,
            folded_max,
            any_regions,
            y: Layout {
                legend_y,
                strip_top,
                strip_base,
                axis_y,
                rows_top,
                rows_bottom,
                note_y,
                bottom_axis_y,
                height,
            },
        }
    }

    /// The *jobs* running at once: images that forked no child (the programs doing the work
    /// rather than waiting: cc1 and as, not the make, shell, libtool and gcc above them). The
    /// most at one moment, and how many on average over the picture's time.
    fn jobs_running(&self) -> (u32, f64) {
        let mut iv: Vec<(u64, u64)> = Vec::new();
        let mut spans: Vec<(u64, u64, bool)> = Vec::new();
        for row in &self.rows {
            let Some(r) = self.t.get(row.id) else { continue };
            let ims = images(self.t, r);
            if ims.total() == 1 {
                // Most processes of a build: one image, a job when it forked nothing (the
                // first child seen says; a compile's leaves have none).
                if let Some(im) = ims.get(0)
                    && r.children
                        .iter()
                        .all(|&c| self.t.get(c).and_then(|c| c.start_ns).is_none())
                {
                    let a = im.start_ns.unwrap_or(row.start).clamp(row.start, row.end);
                    iv.push((a, im.end_ns.unwrap_or(row.end).clamp(a, row.end)));
                }
                continue;
            }
            spans.clear();
            for im in ims {
                let a = im.start_ns.unwrap_or(row.start).clamp(row.start, row.end);
                let b = im.end_ns.unwrap_or(row.end).clamp(a, row.end);
                spans.push((a, b, true));
            }
            for c in r.children.iter().filter_map(|&c| self.t.get(c)?.start_ns) {
                if let Some(k) = spans.iter().rposition(|&(a, _, _)| a <= c) {
                    spans[k].2 = false;
                } else if let Some(first) = spans.first_mut() {
                    first.2 = false;
                }
            }
            iv.extend(spans.iter().filter(|x| x.2).map(|&(a, b, _)| (a, b)));
        }
        let (max, _) = concurrency(&iv, self.t0, self.t1, 1);
        let total: u128 = iv.iter().map(|&(a, b)| u128::from(b - a)).sum();
        let span = u128::from((self.t1 - self.t0).max(1));
        (max, total as f64 / span as f64)
    }

    /// Where time `ts` is on the axis, px.
    fn x_of(&self, ts: u64) -> f64 {
        PLOT_X + (ts - self.t0) as f64 / (self.t1 - self.t0) as f64 * PLOT_W
    }

    fn tally(&self) -> Tally {
        let mut tally = Tally {
            failed: 0,
            signalled: 0,
            handled: 0,
            seen: [false; 6],
        };
        for row in &self.rows {
            if let Some(r) = self.t.get(row.id) {
                let oc = Outcome::in_run(r, row.id, &self.failures);
                tally.seen[oc as usize] = true;
                match oc {
                    Outcome::Failed => tally.failed += 1,
                    Outcome::Signalled => tally.signalled += 1,
                    Outcome::Handled => tally.handled += 1,
                    _ => {}
                }
            }
        }
        tally
    }
}

/// `--svg FILE`: the picture of the run, made at the end.
pub const OUTPUT: crate::output::OutputSpec = crate::output::OutputSpec {
    flag: "svg",
    short: None,
    value_name: "FILE",
    help: "Write an SVG picture of the run to FILE at the end: a timeline of the jobs (a process \
           with those it only waited for, split into its images) coloured by outcome (at most 200 \
           rows: failures first, then the longest; short and handled ones folded into summary \
           rows), with how many processes and jobs ran at each moment",
    what: "SVG",
    golden: Some("svg"),
    dest: crate::output::DestKind::File,
    live_only: false,
    make: crate::output::Make::WholeRun(|run, w| {
        let o = SvgOptions {
            redact: run.redact,
            ..SvgOptions::default()
        };
        w.write_all(render(run.header, run.tracker, run.summary, o).as_bytes())
    }),
};

mod header;
mod jobs;
mod rows;

#[cfg(test)]
mod tests;
