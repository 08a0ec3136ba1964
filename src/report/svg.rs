//! The run as one self-contained SVG picture: a Gantt chart of the processes in tree order, a
//! time axis, and a strip showing how many processes ran at each moment.
//!
//! Layout, top to bottom: a title (the command, wall time, counts, start date), a legend, the
//! concurrency strip (computed from every process, drawn or not), the time axis, one row per
//! drawn process (label column on the left, indented by depth with a thin tree guide; the bar
//! from fork to exit on the right, coloured by outcome, the duration after it), and a note
//! counting the processes folded away. Each bar has a `<title>` (the hover text) with the full
//! command, pid, parent, start, duration, status and working directory, and what the process
//! cost when the trace has it (CPU, peak memory, bytes read and written).
//!
//! Readability at thousands of processes comes from a row cap ([`SvgOptions::max_rows`]): the
//! failures, kills that were part of the command's failure and unfinished processes are drawn
//! first (a handled non-zero exit, such as a configure probe, is muted and not among them:
//! [`Failures`]), then the longest, each with its
//! ancestors so the tree stays connected, and the rest are counted in the note. The picture's size is therefore bounded whatever the run's: it is
//! built as a `String` in memory (a few hundred kilobytes at most), while the work over all
//! records is linear apart from one sort.
//!
//! Hand-written rather than through an SVG crate: the output is a few element kinds with fixed
//! attributes, and writing them directly keeps the bytes stable for the golden tests and costs
//! no dependency. A pure function of what it is given (no clock, no environment), like every
//! report.

use std::fmt::Write as _;

use crate::model::escape;
use crate::model::event::ExitStatus;
use crate::model::naming::{command_line, cut, program, quote_argv, region_name, short_command_line};
use crate::model::session::{Header, Mode, Summary};
use crate::model::tracker::{ProcId, ProcessRecord, Tracker};
use crate::report::summary::failures::Failures;
use crate::sink::text::{Paint, exit_text, fmt_bytes, fmt_duration, fmt_kib};

/// How to draw.
#[derive(Debug, Clone, Copy)]
pub struct SvgOptions {
    /// Hide URL credentials in argv.
    pub redact: bool,
    /// Most process rows to draw; the shortest of the rest are folded into a count.
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
struct Row {
    id: ProcId,
    depth: usize,
    parent: Option<usize>,
    start: u64,
    end: u64,
}

/// Every record, depth first from the roots, children in fork order.
fn tree_order(t: &Tracker, t0: u64, t1: u64) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut stack: Vec<(ProcId, usize, Option<usize>)> =
        t.roots().iter().rev().map(|&r| (r, 0, None)).collect();
    while let Some((id, depth, parent)) = stack.pop() {
        let Some(r) = t.get(id) else { continue };
        let start = r.start_ns.unwrap_or(t0).clamp(t0, t1);
        let end = r.exit.map_or(t1, |x| x.ts).clamp(start, t1);
        let me = rows.len();
        rows.push(Row {
            id,
            depth,
            parent,
            start,
            end,
        });
        for &c in r.children.iter().rev() {
            stack.push((c, depth + 1, Some(me)));
        }
    }
    rows
}

/// Which rows to draw: all when they fit, else the notable ones (failures, including kills that
/// are part of the command's failure; still running; exit lost) and then the longest, each with
/// its ancestors.
fn choose(rows: &[Row], notable: &[bool], max_rows: usize) -> Vec<bool> {
    if rows.len() <= max_rows {
        return vec![true; rows.len()];
    }
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by_key(|&i| (!notable[i], std::cmp::Reverse(rows[i].end - rows[i].start), i));
    let mut chosen = vec![false; rows.len()];
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
            at = rows[j].parent;
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

/// Most processes running at once over `[t0, t1]`, and per pixel column of `cols` the most
/// running at any moment within it. Intervals are half-open: one process ending when another
/// starts do not overlap; a zero-length process runs at no moment.
fn concurrency(rows: &[Row], t0: u64, t1: u64, cols: usize) -> (u32, Vec<u32>) {
    let mut ev: Vec<(u64, i32)> = Vec::with_capacity(rows.len() * 2);
    for r in rows.iter().filter(|r| r.end > r.start) {
        ev.push((r.start, 1));
        ev.push((r.end, -1));
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
    if t % unit == 0 {
        format!("{} {name}", t / unit)
    } else {
        let v = t as f64 / unit as f64;
        let s = format!("{v:.3}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        format!("{s} {name}")
    }
}

/// `2024-06-01 14:00:00 +02:00` for monotonic `ts`.
fn wall_clock(h: &Header, ts: u64) -> String {
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
    let date = s.get(..19).unwrap_or(&s).replace('T', " ");
    let sign = if off < 0 { '-' } else { '+' };
    let a = off.unsigned_abs();
    format!("{date} {sign}{:02}:{:02}", a / 3600, (a % 3600) / 60)
}

fn hover(r: &ProcessRecord, row: &Row, t0: u64, redact: bool) -> String {
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
fn regions(s: &mut String, r: &ProcessRecord, row: &Row, bar_y: f64, t0: u64, x_of: &dyn Fn(u64) -> f64) {
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
fn run_text(r: &ProcessRecord, row: &Row) -> String {
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

/// What the picture is drawn from, worked out once: the time range, every process in tree order,
/// the rows drawn and what was folded, the layout.
struct Plot<'a> {
    h: &'a Header,
    t: &'a Tracker,
    sum: &'a Summary,
    o: SvgOptions,
    /// Which non-zero exits are the command's failure (the rest are handled).
    failures: Failures,
    t0: u64,
    t1: u64,
    rows: Vec<Row>,
    /// Indexes into `rows` of those drawn, in tree order.
    drawn: Vec<usize>,
    folded: usize,
    /// The longest of the folded processes, ns.
    folded_max: u64,
    any_regions: bool,
    /// Some process's non-zero exit was handled (it is in the legend, so the style is needed).
    any_handled: bool,
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
        let notable: Vec<bool> = rows
            .iter()
            .map(|r| {
                t.get(r.id).is_some_and(|p| {
                    !matches!(
                        Outcome::in_run(p, r.id, &failures),
                        Outcome::Ok | Outcome::Handled
                    )
                })
            })
            .collect();
        let chosen = choose(&rows, &notable, o.max_rows.max(1));
        let drawn: Vec<usize> = (0..rows.len()).filter(|&i| chosen[i]).collect();
        let folded = rows.len() - drawn.len();
        let folded_max = (0..rows.len())
            .filter(|&i| !chosen[i])
            .map(|i| rows[i].end - rows[i].start)
            .max()
            .unwrap_or(0);
        let any_regions = drawn
            .iter()
            .any(|&i| t.get(rows[i].id).is_some_and(|p| !p.regions.is_empty()));

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
            any_handled: rows.iter().any(|r| {
                t.get(r.id)
                    .is_some_and(|p| Outcome::in_run(p, r.id, &failures) == Outcome::Handled)
            }),
            failures,
            t0,
            t1,
            rows,
            drawn,
            folded,
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

    /// The `<svg>` element (with the time range and plot geometry as data attributes), the style
    /// and the white background.
    fn open(&self, s: &mut String) {
        let (t0, t1, height) = (self.t0, self.t1, self.y.height);
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{height}" viewBox="0 0 {w} {height}" data-t0="{t0}" data-t1="{t1}" data-plot-x="{px}" data-plot-width="{pw}" data-min-bar="{MIN_BAR_W}">"#,
            w = WIDTH,
            px = PLOT_X,
            pw = PLOT_W,
        );
        let _ = writeln!(
            s,
            "<style>{STYLE}{}{}</style>",
            if self.any_handled { HANDLED_STYLE } else { "" },
            if self.any_regions { REGION_STYLE } else { "" }
        );
        let _ = writeln!(s, r##"<rect width="100%" height="100%" fill="#ffffff"/>"##);
    }

    /// The command, the line of counts under it (wall time, CPU, processes, failures, losses,
    /// status), and when and how on the right.
    fn title(&self, s: &mut String, tally: &Tally) {
        let (h, t, sum) = (self.h, self.t, self.sum);
        let what = match &h.mode {
            Mode::Run { argv } => quote_argv(argv, self.o.redact),
            Mode::Watch { root: Some(r) } => format!("watch -p {r}"),
            Mode::Watch { root: None } => "watch (system-wide)".to_string(),
            Mode::Replay { path } => format!("replay {path}"),
            Mode::Analyze { inputs } => format!("analyze {}", quote_argv(inputs, false)),
        };
        let _ = writeln!(
            s,
            r#"<text class="title" x="{MARGIN}" y="24">{}</text>"#,
            xml_escape(&cut(&what, 96))
        );
        let n = self.rows.len();
        let wall_ns = super::summary::wall(h, t, sum).1;
        let mut sub = format!("wall {} · ", xml_escape(&fmt_duration(wall_ns)));
        // What the whole tree cost, when measured: CPU and the cores it kept busy on average.
        // With some processes unmeasured the sum is a lower bound, and says so.
        let (mut cpu, mut measured) = (0u64, 0usize);
        for r in self.rows.iter().filter_map(|row| t.get(row.id)) {
            if let Some(u) = r.usage.as_deref() {
                cpu = cpu.saturating_add(u.cpu_user_ns.saturating_add(u.cpu_sys_ns));
                measured += 1;
            }
        }
        if measured > 0 {
            let _ = write!(sub, "CPU {}", xml_escape(&fmt_duration(cpu)));
            if wall_ns > 0 {
                let _ = write!(sub, " ({:.1} cores on average)", cpu as f64 / wall_ns as f64);
            }
            if measured < n {
                let _ = write!(sub, " of the {measured} measured");
            }
            sub.push_str(" · ");
        }
        let _ = write!(
            sub,
            "{n} process{} · {} execs · ",
            if n == 1 { "" } else { "es" },
            sum.stats.execs
        );
        let failed = tally.failed;
        let _ = write!(
            sub,
            r#"<tspan class="{}">{failed} failed</tspan> · "#,
            if failed > 0 { "warn" } else { "sub" }
        );
        if tally.signalled > 0 {
            let _ = write!(
                sub,
                r#"<tspan class="warn">{} killed by a signal</tspan> · "#,
                tally.signalled
            );
        }
        if tally.handled > 0 {
            let _ = write!(
                sub,
                "{} handled non-zero exit{} · ",
                tally.handled,
                if tally.handled == 1 { "" } else { "s" }
            );
        }
        let _ = write!(sub, "{} background · ", sum.background);
        if sum.stats.lost > 0 || !sum.incomplete() {
            let _ = write!(
                sub,
                r#"<tspan class="{}">{} events lost{}</tspan> · "#,
                if sum.stats.lost > 0 { "loss" } else { "sub" },
                sum.stats.lost,
                if sum.stats.lost > 0 {
                    ": the picture may be incomplete"
                } else {
                    ""
                }
            );
        }
        if sum.capture.untraced > 0 {
            let _ = write!(
                sub,
                r#"<tspan class="loss">{} untraced: the picture is incomplete</tspan> · "#,
                if sum.capture.untraced == 1 {
                    "1 process".to_string()
                } else {
                    format!("{} processes", sum.capture.untraced)
                }
            );
        }
        if let Some(st) = sum.status {
            let _ = write!(
                sub,
                "{} · ",
                xml_escape(&exit_text(Some(st), Paint { on: false }))
            );
        }
        let sub = sub.trim_end_matches(" · ");
        let _ = writeln!(s, r#"<text class="sub" x="{MARGIN}" y="44">{sub}</text>"#);
        // When and how, on the title line's right.
        let mut when = format!("started {}", wall_clock(h, self.t0));
        if let Some(b) = &h.backend {
            let _ = write!(when, " · {b}");
        }
        let _ = writeln!(
            s,
            r#"<text class="sub" x="{}" y="24" text-anchor="end">{}</text>"#,
            WIDTH - MARGIN,
            xml_escape(&when)
        );
    }

    /// The outcomes that occur, always "exit 0" first; the exec mark and the region band when
    /// any is drawn.
    fn legend(&self, s: &mut String, tally: &Tally) {
        let legend_y = self.y.legend_y;
        let mut lx = MARGIN;
        for oc in [
            Outcome::Ok,
            Outcome::Failed,
            Outcome::Signalled,
            Outcome::Handled,
            Outcome::Running,
            Outcome::Lost,
        ] {
            if oc != Outcome::Ok && !tally.seen[oc as usize] {
                continue;
            }
            let _ = writeln!(
                s,
                r#"<rect class="{}" x="{}" y="{}" width="14" height="{BAR_H}"/><text x="{}" y="{}">{}</text>"#,
                oc.class(),
                f1(lx),
                legend_y - 10.0,
                f1(lx + 19.0),
                legend_y,
                xml_escape(oc.legend())
            );
            lx += 19.0 + oc.legend().chars().count() as f64 * 6.6 + 16.0;
        }
        if self
            .rows
            .iter()
            .any(|r| self.t.get(r.id).is_some_and(|p| p.execs.len() > 1))
        {
            let _ = writeln!(
                s,
                r#"<line class="exec" x1="{x}" y1="{}" x2="{x}" y2="{}"/><text x="{}" y="{legend_y}">exec (after the first)</text>"#,
                legend_y - 11.0,
                legend_y + 1.0,
                f1(lx + 6.0),
                x = f1(lx + 1.0)
            );
            lx += 6.0 + 22.0 * 6.6 + 16.0;
        }
        if self.any_regions {
            let _ = writeln!(
                s,
                r#"<rect class="ok" x="{}" y="{}" width="24" height="{BAR_H}"/><rect class="region" x="{}" y="{}" width="14" height="{}"/><text x="{}" y="{legend_y}">region the process reported (Trace2), darker when nested</text>"#,
                f1(lx),
                legend_y - 10.0,
                f1(lx + 5.0),
                legend_y - 10.0 + REGION_INSET,
                BAR_H - 2.0 * REGION_INSET,
                f1(lx + 29.0)
            );
        }
    }

    /// The grid lines and the time axis (repeated under the rows when there are many).
    fn axis(&self, s: &mut String) {
        let Layout {
            strip_top,
            axis_y,
            rows_bottom,
            bottom_axis_y,
            ..
        } = self.y;
        let span = self.t1 - self.t0;
        let (step, unit, unit_name) = tick_step(span, 90.0);
        let mut ticks = Vec::new();
        let mut tk = 0u64;
        while tk <= span {
            ticks.push(tk);
            tk = match tk.checked_add(step) {
                Some(v) => v,
                None => break,
            };
        }
        s.push_str("<g class=\"axis\">\n");
        for &tk in &ticks {
            let x = f1(self.x_of(self.t0 + tk));
            let _ = writeln!(
                s,
                r#"<line class="grid" x1="{x}" y1="{strip_top}" x2="{x}" y2="{}"/>"#,
                rows_bottom
            );
            let label = xml_escape(&tick_label(tk, unit, unit_name));
            let _ = writeln!(
                s,
                r#"<text class="tick" x="{x}" y="{axis_y}" text-anchor="middle">{label}</text>"#
            );
            if !self.drawn.is_empty() && self.drawn.len() > 30 {
                let _ = writeln!(
                    s,
                    r#"<text class="tick" x="{x}" y="{bottom_axis_y}" text-anchor="middle">{label}</text>"#
                );
            }
        }
        s.push_str("</g>\n");
    }

    /// How many processes ran at each moment (every process, drawn or not).
    fn strip(&self, s: &mut String) {
        let Layout {
            strip_top,
            strip_base,
            ..
        } = self.y;
        let cols = PLOT_W as usize;
        let (conc_max, per_col) = concurrency(&self.rows, self.t0, self.t1, cols);
        let _ = writeln!(s, r#"<g id="concurrency" data-max="{conc_max}">"#);
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="end">processes running</text>"#,
            PLOT_X - 8.0,
            strip_top + 22.0
        );
        let _ = writeln!(
            s,
            r#"<text class="sub" x="{}" y="{}" text-anchor="end">max {conc_max}</text>"#,
            PLOT_X - 8.0,
            strip_top + 38.0
        );
        let _ = writeln!(
            s,
            r##"<line x1="{PLOT_X}" y1="{strip_base}" x2="{}" y2="{strip_base}" stroke="#999"/>"##,
            PLOT_X + PLOT_W
        );
        if conc_max > 0 {
            let y_of = |v: u32| strip_base - f64::from(v) / f64::from(conc_max) * STRIP_H;
            let mut d = format!("M{} {}", f1(PLOT_X), f1(strip_base));
            let col_w = PLOT_W / cols as f64;
            let mut prev = None;
            for (c, &v) in per_col.iter().enumerate() {
                if prev != Some(v) {
                    let _ = write!(d, "H{}V{}", f1(PLOT_X + c as f64 * col_w), f1(y_of(v)));
                    prev = Some(v);
                }
            }
            let _ = write!(d, "H{}V{}Z", f1(PLOT_X + PLOT_W), f1(strip_base));
            let _ = writeln!(s, r#"<path class="conc" d="{d}"/>"#);
            let _ = writeln!(
                s,
                r#"<line class="maxline" x1="{PLOT_X}" y1="{}" x2="{}" y2="{}"/>"#,
                f1(strip_top),
                PLOT_X + PLOT_W,
                f1(strip_top)
            );
        }
        s.push_str("</g>\n");
    }

    /// The drawn rows: zebra stripes, tree guides, then each process's label, bar (with its
    /// hover text and regions), later execs and duration.
    fn process_rows(&self, s: &mut String) {
        let (rows, drawn, rows_top) = (&self.rows, &self.drawn, self.y.rows_top);
        let mut row_of = vec![usize::MAX; rows.len()];
        for (k, &i) in drawn.iter().enumerate() {
            row_of[i] = k;
        }
        let indent = |depth: usize| MARGIN + depth.min(MAX_INDENT_LEVEL) as f64 * INDENT;
        s.push_str("<g class=\"rows\">\n");
        for (k, _) in drawn.iter().enumerate().filter(|(k, _)| k % 2 == 1) {
            let _ = writeln!(
                s,
                r#"<rect class="zebra" x="0" y="{}" width="{WIDTH}" height="{ROW_H}"/>"#,
                f1(rows_top + k as f64 * ROW_H)
            );
        }
        // Tree guides: from under the parent's label down to the child's row.
        for &i in drawn {
            let Some(p) = rows[i].parent else { continue };
            let (pk, ck) = (row_of[p], row_of[i]);
            if pk == usize::MAX {
                continue;
            }
            let x = indent(rows[p].depth) + 3.0;
            let x_end = indent(rows[i].depth) - 2.0;
            if x_end <= x {
                continue;
            }
            let _ = writeln!(
                s,
                r#"<path class="guide" d="M{} {}V{}H{}"/>"#,
                f1(x),
                f1(rows_top + pk as f64 * ROW_H + ROW_H - 2.0),
                f1(rows_top + ck as f64 * ROW_H + ROW_H / 2.0),
                f1(x_end)
            );
        }
        for (k, &i) in drawn.iter().enumerate() {
            let row = &rows[i];
            let Some(r) = self.t.get(row.id) else { continue };
            self.process_row(s, r, row, rows_top + k as f64 * ROW_H, indent(row.depth));
        }
        s.push_str("</g>\n");
    }

    /// One process's row at `y`, its label starting at `lx`.
    fn process_row(&self, s: &mut String, r: &ProcessRecord, row: &Row, y: f64, lx: f64) {
        let base = y + ROW_H - 4.0;
        let pid = r.pid.to_string();
        let room = ((LABEL_W + MARGIN - lx) / CHAR_W) as usize;
        let desc = cut(
            &short_command_line(r, self.o.redact),
            room.saturating_sub(pid.len() + 1),
        );
        let _ = writeln!(
            s,
            r#"<text class="mono" x="{}" y="{}"><tspan class="dim">{pid}</tspan> {}</text>"#,
            f1(lx),
            f1(base),
            xml_escape(&desc)
        );
        let oc = Outcome::in_run(r, row.id, &self.failures);
        let x = self.x_of(row.start);
        let w = (self.x_of(row.end) - x).max(MIN_BAR_W);
        let _ = writeln!(
            s,
            r#"<rect class="bar {}" x="{}" y="{}" width="{}" height="{BAR_H}" data-pid="{}"><title>{}</title></rect>"#,
            oc.class(),
            f1(x),
            f1(y + (ROW_H - BAR_H) / 2.0),
            f1(w),
            r.pid,
            xml_escape(&hover(r, row, self.t0, self.o.redact))
        );
        regions(s, r, row, y + (ROW_H - BAR_H) / 2.0, self.t0, &|ts| self.x_of(ts));
        for e in r.execs.iter().skip(1) {
            if e.ts < row.start || e.ts > row.end {
                continue;
            }
            let ex = f1(self.x_of(e.ts));
            let _ = writeln!(
                s,
                r#"<line class="exec" x1="{ex}" y1="{}" x2="{ex}" y2="{}"/>"#,
                f1(y + 1.0),
                f1(y + ROW_H - 1.0)
            );
        }
        // How it ended, printed on the row when it did not end well: a PNG saved from CI has no
        // hover and no colour legend to go by.
        let dur = match r.exit {
            Some(x) if oc != Outcome::Ok => format!(
                "{} · {}",
                run_text(r, row),
                exit_text(x.status, Paint { on: false })
            ),
            Some(_) => run_text(r, row),
            None => "running".to_string(),
        };
        // Beside the bar; inside its end when the picture's edge would cut it (DejaVu Sans at
        // 10 px is under 6 px a character).
        let room = WIDTH - (x + w + 4.0);
        let wide = dur.chars().count() as f64 * 6.0;
        if wide > room && w > wide + 8.0 {
            let _ = writeln!(
                s,
                r#"<text class="dur" x="{}" y="{}" text-anchor="end" style="fill:#fff">{}</text>"#,
                f1(x + w - 4.0),
                f1(base - 0.5),
                xml_escape(&dur)
            );
        } else {
            let _ = writeln!(
                s,
                r#"<text class="dur" x="{}" y="{}">{}</text>"#,
                f1(x + w + 4.0),
                f1(base - 0.5),
                xml_escape(&dur)
            );
        }
    }

    /// How many processes were not drawn, and the longest of them.
    fn folded_note(&self, s: &mut String) {
        let folded = self.folded;
        if folded > 0 {
            let _ = writeln!(
                s,
                r#"<text class="sub" id="folded" data-count="{folded}" x="{PLOT_X}" y="{}">… {folded} more process{} not drawn (none longer than {}); the strip above counts every process</text>"#,
                self.y.note_y,
                if folded == 1 { "" } else { "es" },
                xml_escape(&fmt_duration(self.folded_max))
            );
        }
    }
}

/// `--svg FILE`: the picture of the run, made at the end.
pub const OUTPUT: crate::output::OutputSpec = crate::output::OutputSpec {
    flag: "svg",
    short: None,
    value_name: "FILE",
    help: "Write an SVG picture of the run to FILE at the end: a timeline of the processes coloured \
           by outcome (at most 200 rows: failures first, then the longest), with how many ran at \
           each moment",
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

#[cfg(test)]
mod tests;
