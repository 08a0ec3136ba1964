//! The HTML report (`--html FILE`): one self-contained page per run — its HTML, CSS and
//! JavaScript (`src/report/html/`, embedded with `include_str!`) and the run's data, in one file
//! that opens offline (docs/html-report.md).
//!
//! This side only serialises the data (version 2 of the contract in docs/html-report.md: the
//! processes in tree order with their images, outcomes and costs; the critical path and its
//! stretches bounded by job slots; the causes; Trace2 regions; with `--files`, each process's
//! file uses and the summary's most-read and produced lists) and fills the template; the page
//! draws and computes everything else. Text people read is the escaped text of every other
//! output (`naming.rs`), interned once (`strings`), so a 10,000-process build's page stays
//! proportionate to its JSON Lines.
//!
//! Must never: put a byte of the traced processes' text into the page as markup (the data is JSON
//! inside `<script type="application/json">` with `<` and `>` escaped, so not even `</script>`
//! can end it), or make the page load anything from elsewhere (the Content-Security-Policy allows
//! only the page's own script and style, by their SHA-256).

use foldhash::{HashMap, HashMapExt as _};
use std::fmt::Write as _;

use base64::Engine as _;
use sha2::Digest as _;

use crate::model::bytes::shown;
use crate::model::event::ExitStatus;
use crate::model::images::images;
use crate::model::naming::{
    command_line, fit, image_command_line, image_program, quote_argv, short_command_line,
};
use crate::model::session::{Header, Mode, Summary};
use crate::model::tracker::{ProcId, Tracker};
use crate::output::FinishedRun;
use crate::report::summary::failures::Failures;
use crate::report::summary::{self, RunReport};
use crate::sink::text::{Paint, exit_text};

/// The page's template (placeholders `{{TITLE}}`, `{{CSP}}`, `{{STYLE}}`, `{{SCRIPT}}`,
/// `{{DATA}}`, each once).
const PAGE: &str = include_str!("html/page.html");
/// The page's style: a run's page and a diff's.
const STYLE: &str = concat!(include_str!("html/report.css"), include_str!("html/diff.css"));
/// The page's code: the sortable tables both use (`table.js`), a run's page (`report.js`) and a
/// diff's (`diff.js`); each draws only the data of its kind (`format`).
const SCRIPT: &str = concat!(
    include_str!("html/table.js"),
    include_str!("html/report.js"),
    include_str!("html/diff.js")
);

/// Columns of a Gantt row's label ([`fit`] keeps the file a compile works on).
const ROW_LABEL: usize = 40;

/// The data's version (docs/html-report.md).
pub const DATA_VERSION: u32 = 2;

/// The registry's declaration.
pub const OUTPUT: crate::output::OutputSpec = crate::output::OutputSpec {
    flag: "html",
    short: None,
    value_name: "FILE",
    help: "Write an interactive report of the run to FILE at the end: one self-contained HTML page \
           (a Gantt of the process tree with each process's images, the critical path, what ran \
           at once, sortable tables, search), opened offline",
    what: "HTML report",
    golden: None,
    dest: crate::output::DestKind::File,
    live_only: false,
    make: crate::output::Make::WholeRun(|run, w| w.write_all(render(run).as_bytes())),
};

/// Interned text: each distinct string once, in one allocation shared by the list and the
/// index (a 100,000-process page interns some 200,000 labels: a copy each for both was a
/// tenth of writing the page).
#[derive(Default)]
struct Strings {
    list: Vec<std::rc::Rc<str>>,
    index: HashMap<std::rc::Rc<str>, usize>,
}

impl Strings {
    fn id(&mut self, s: &str) -> usize {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let s: std::rc::Rc<str> = s.into();
        self.list.push(s.clone());
        self.index.insert(s, self.list.len() - 1);
        self.list.len() - 1
    }
}

/// Microseconds from `origin` (signed: a process older than the trace starts before it).
fn us(ts: u64, origin: u64) -> i64 {
    (ts as i128 - origin as i128).div_euclid(1000) as i64
}

/// JSON for people's text: a JSON string with `<`, `>` and `&` escaped, so no `</script>` or
/// `<!--` can appear in the page.
fn push_json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            // Line and paragraph separators are valid JSON but were not valid JavaScript.
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `null` or the number, written where it is formatted (no string of its own: eight of them
/// per process).
struct Opt<T>(Option<T>);

impl<T: std::fmt::Display> std::fmt::Display for Opt<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(v) => v.fmt(f),
            None => f.write_str("null"),
        }
    }
}

/// Integers written into the data with `itoa` (a 100,000-process page writes some two million:
/// `write!`'s formatting machinery was a tenth of writing the page).
fn num(out: &mut String, v: impl itoa::Integer) {
    out.push_str(itoa::Buffer::new().format(v));
}

/// `null` or the integer, then `sep`.
fn num_or_null(out: &mut String, v: Option<impl itoa::Integer>, sep: char) {
    match v {
        Some(v) => num(out, v),
        None => out.push_str("null"),
    }
    out.push(sep);
}

/// `null` or the number.
fn opt<T: std::fmt::Display>(v: Option<T>) -> Opt<T> {
    Opt(v)
}

/// The page of a finished run.
pub fn render(run: &FinishedRun<'_>) -> String {
    let data = data(run.header, run.tracker, run.summary, run.report(), run.redact);
    let title = match &run.header.mode {
        Mode::Run { argv } => format!("proctrace: {}", quote_argv(argv, run.redact)),
        Mode::Watch { root: Some(p) } => format!("proctrace: watch -p {p}"),
        Mode::Watch { root: None } => "proctrace: watch".to_string(),
        Mode::Replay { path } => format!("proctrace: replay {}", crate::model::escape::text(path)),
        Mode::Analyze { inputs } => format!("proctrace: analyze {}", quote_argv(inputs, false)),
    };
    page(&title, &data)
}

/// The template filled: `title` as text, the CSP from the style's and script's hashes, `data`
/// (already safe inside a `<script>`).
pub fn page(title: &str, data: &str) -> String {
    let hash = |s: &str| base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(s.as_bytes()));
    let csp = format!(
        "default-src 'none'; script-src 'sha256-{}'; style-src 'sha256-{}'; img-src data:; base-uri 'none'; form-action 'none'",
        hash(SCRIPT),
        hash(STYLE)
    );
    let values = [
        ("{{TITLE}}", html_text(title)),
        ("{{CSP}}", html_text(&csp)),
        ("{{STYLE}}", STYLE.to_string()),
        ("{{DATA}}", data.to_string()),
        ("{{SCRIPT}}", SCRIPT.to_string()),
    ];
    // Left to right through the template, each placeholder once: a value is never searched
    // again (a traced process's text `{{SCRIPT}}` in the data stays text).
    let mut out = String::with_capacity(PAGE.len() + STYLE.len() + SCRIPT.len() + data.len() + 256);
    let mut rest = PAGE;
    loop {
        let next = values
            .iter()
            .filter_map(|(k, v)| rest.find(k).map(|at| (at, k.len(), v)))
            .min_by_key(|x| x.0);
        let Some((at, len, v)) = next else { break };
        out.push_str(&rest[..at]);
        out.push_str(v);
        rest = &rest[at + len..];
    }
    out.push_str(rest);
    out
}

/// The page of `diff OLD NEW` (docs/html-report.md, "The data of a diff"): both runs' data as a
/// run's page has it, and the comparison as `diff --json` gives it.
pub fn diff_page(
    old: crate::cmd::diff::Side<'_>,
    new: crate::cmd::diff::Side<'_>,
    r: &crate::cmd::diff::DiffReport,
    redact: bool,
    files_dirs: Option<usize>,
) -> String {
    let side = |s: crate::cmd::diff::Side<'_>| {
        let rep = summary::summarize(s.header, s.tracker, s.summary, redact, files_dirs);
        data(s.header, s.tracker, s.summary, &rep, redact)
    };
    // `diff --json`'s object, made safe inside a `<script>`: `<`, `>` and `&` appear only in
    // its strings, where their escapes mean the same.
    let diff = serde_json::to_string(r)
        .unwrap_or_else(|_| "null".into())
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026");
    let data = format!(
        "{{\"format\":\"proctrace-html-diff\",\"version\":{DATA_VERSION},\"old\":{},\"new\":{},\"diff\":{diff}}}",
        side(old),
        side(new)
    );
    page("proctrace diff", &data)
}

/// Text for HTML (an element's text or an attribute's value): the SVG's XML escaping, which
/// HTML reads the same (control characters shown as their pictures).
fn html_text(s: &str) -> String {
    crate::report::svg::xml_escape(s)
}

/// The data object (docs/html-report.md, version 2).
pub fn data(h: &Header, t: &Tracker, sum: &Summary, rep: &RunReport, redact: bool) -> String {
    let (origin, wall) = summary::wall(h, t, sum);
    let verdict = Failures::of(t, &h.mode, sum);
    let ids = summary::all_records(t);
    let index: HashMap<ProcId, usize> = ids.iter().enumerate().map(|(i, &id)| (id, i)).collect();
    let mut strings = Strings::default();
    // `[i,j,…]` of an argv's words, redacted as asked, written into `out` (a million words in
    // a big build: no string per word).
    let words = |out: &mut String, strings: &mut Strings, a: Option<&crate::model::event::Argv>| {
        let Some(a) = a else {
            out.push_str("null");
            return;
        };
        out.push('[');
        let mut push = |k: usize, w: &str| {
            if k > 0 {
                out.push(',');
            }
            num(out, strings.id(&shown(w)));
        };
        if redact {
            // word by word, as redact_argv does, without its Vec
            let mut red = crate::redact::Argv::default();
            for (k, w) in a.iter().enumerate() {
                push(k, &red.word(w));
            }
        } else {
            for (k, w) in a.iter().enumerate() {
                push(k, w);
            }
        }
        out.push(']');
    };

    let mut procs = String::new();
    let mut argv_buf = String::new();
    let mut ims = String::new();
    let mut image_count = 0usize;
    let (mut cpu_total, mut measured) = (0u64, false);
    for (i, &id) in ids.iter().enumerate() {
        let Some(r) = t.get(id) else { continue };
        let parent = r.parent.and_then(|p| index.get(&p)).map_or(-1, |&p| p as i64);
        let status = r.exit.and_then(|x| x.status);
        let outcome = match (r.exit, status) {
            (None, _) => 4,
            (Some(_), None) => 5,
            (Some(_), Some(s)) if s.success() => 0,
            (Some(_), Some(_)) if verdict.contains(id) => 1,
            (Some(_), Some(ExitStatus::Signal { .. })) => 3,
            _ => 2,
        };
        let outcome = if r.background.is_some() && r.exit.is_none() {
            4
        } else {
            outcome
        };
        let label = strings.id(&command_line(r, redact));
        // The Gantt's row label: what tells rows apart, in the label column's width.
        let row_label = strings.id(&fit(&short_command_line(r, redact), ROW_LABEL));
        let mut argv = std::mem::take(&mut argv_buf);
        argv.clear();
        words(&mut argv, &mut strings, r.argv());
        let cwd = r
            .execs
            .last()
            .and_then(|e| e.details.as_ref())
            .and_then(|d| d.cwd.as_deref())
            .map_or(-1, |c| strings.id(&shown(c)) as i64);
        let u = r.usage.as_deref();
        if let Some(u) = u {
            measured = true;
            cpu_total = cpu_total.saturating_add(u.cpu_user_ns.saturating_add(u.cpu_sys_ns));
        }
        let imgs = images(t, r);
        let (first, count) = if imgs.total() > 1 {
            let first = image_count;
            for im in imgs.clone() {
                if image_count > 0 {
                    ims.push(',');
                }
                image_count += 1;
                let l = strings.id(&image_command_line(&im, redact));
                let mut a = String::new();
                words(&mut a, &mut strings, im.argv());
                let _ = write!(
                    ims,
                    "[{},{},{l},{a},{}]",
                    opt(im.start_ns.map(|s| us(s, origin))),
                    opt(im.end_ns.map(|e| us(e, origin))),
                    u8::from(im.is_fork())
                );
            }
            (first as i64, imgs.total())
        } else {
            (-1, 1)
        };
        if i > 0 {
            procs.push(',');
        }
        // [pid,parent,start,end,status,outcome,label,argv,cwd,cpu,rss,read,written,first,count,row_label]
        procs.push('[');
        num(&mut procs, r.pid);
        procs.push(',');
        num(&mut procs, parent);
        procs.push(',');
        num_or_null(&mut procs, r.start_ns.map(|s| us(s, origin)), ',');
        num_or_null(&mut procs, r.exit.map(|x| us(x.ts, origin)), ',');
        let code = status.map(|s| match s {
            ExitStatus::Code(c) => i64::from(c),
            ExitStatus::Signal { signal, .. } => -i64::from(signal),
        });
        num_or_null(&mut procs, code, ',');
        num(&mut procs, outcome);
        procs.push(',');
        num(&mut procs, label);
        procs.push(',');
        procs.push_str(&argv);
        procs.push(',');
        num(&mut procs, cwd);
        procs.push(',');
        num_or_null(
            &mut procs,
            u.map(|u| u.cpu_user_ns.saturating_add(u.cpu_sys_ns) / 1000),
            ',',
        );
        num_or_null(&mut procs, u.map(|u| u.max_rss_kib), ',');
        num_or_null(&mut procs, u.map(|u| u.read_chars), ',');
        num_or_null(&mut procs, u.map(|u| u.write_chars), ',');
        num(&mut procs, first);
        procs.push(',');
        num(&mut procs, count);
        procs.push(',');
        num(&mut procs, row_label);
        procs.push(']');
        argv_buf = argv;
    }

    // The critical path: each step's process (steps name a pid and a start; a pid can be
    // reused: the record whose life holds the step's start) and image.
    let mut by_pid: HashMap<i32, Vec<usize>> = HashMap::new();
    for (i, &id) in ids.iter().enumerate() {
        if let Some(r) = t.get(id) {
            by_pid.entry(r.pid).or_default().push(i);
        }
    }
    let mut path = String::new();
    {
        for (k, s) in rep.critical_path.iter().enumerate() {
            let start = (origin as i128 + s.step.start_ns as i128).max(0) as u64;
            let p = by_pid.get(&s.step.pid).and_then(|c| {
                c.iter().copied().find(|&i| {
                    t.get(ids[i]).is_some_and(|r| {
                        r.start_ns.is_none_or(|st| st <= start) && r.exit.is_none_or(|x| x.ts >= start)
                    })
                })
            });
            if k > 0 {
                path.push(',');
            }
            // The daemon the path went into from a client (`--include-daemons`), as the text
            // summary shows it.
            let label = match s.ran_in {
                Some(d) => strings.id(&format!("[in {d}] {}", s.step.label)),
                None => strings.id(&s.step.label),
            };
            let _ = write!(
                path,
                "[{},{},{},{},{},{},{label}]",
                p.map_or(-1, |p| p as i64),
                s.step.image.unwrap_or(0),
                s.depth,
                s.own_ns / 1000,
                s.step.start_ns.div_euclid(1000),
                s.step.duration_ns / 1000,
            );
        }
    }
    let mut parallel = String::new();
    for (k, x) in rep.parallel.iter().enumerate() {
        if k > 0 {
            parallel.push(',');
        }
        // The longest job's step names the process doing its work, timed as the job: the
        // record of that pid that started in the job.
        let job = x
            .longest_job
            .as_ref()
            .and_then(|j| {
                let from = (origin as i128 + j.start_ns as i128).max(0) as u64;
                by_pid.get(&j.pid)?.iter().copied().find(|&i| {
                    t.get(ids[i])
                        .is_some_and(|r| r.start_ns.is_none_or(|s| s >= from))
                })
            })
            .map_or(-1, |p| p as i64);
        let _ = write!(
            parallel,
            "[{},{},{},{},{job}]",
            x.step,
            x.slots,
            x.window_ns / 1000,
            x.full_ns / 1000
        );
    }
    // The tables the summary has, as it computes them (src/report/summary): every image the
    // slowest list draws from, in its order; every program; how the cost lists name a process
    // (where not by its command line).
    let mut slow = String::new();
    {
        let mut all = rep.slowest_all.clone();
        all.sort_unstable_by(summary::slowest_order);
        for &(dur, _, _, id, im) in &all {
            let (Some(&p), Some(r)) = (index.get(&id), t.get(id)) else {
                continue;
            };
            let Some(image) = images(t, r).get(im) else {
                continue;
            };
            if !slow.is_empty() {
                slow.push(',');
            }
            let program = strings.id(&image_program(&image));
            num(&mut slow, p);
            slow.push(',');
            num(&mut slow, im);
            slow.push(',');
            num(&mut slow, dur / 1000);
            slow.push(',');
            num(&mut slow, program);
        }
    }
    let mut programs = String::new();
    for (k, (name, st)) in rep.by_program.0.iter().enumerate() {
        if k > 0 {
            programs.push(',');
        }
        let _ = write!(
            programs,
            "[{},{},{},{},{},{}]",
            strings.id(name),
            st.count,
            st.total_ns / 1000,
            st.max_ns / 1000,
            opt(st.cpu_ns.map(|c| c / 1000)),
            opt(st.max_rss_kib)
        );
    }
    let mut cost_labels = String::new();
    for (i, &id) in ids.iter().enumerate() {
        let Some(r) = t.get(id) else { continue };
        if r.usage.is_none() {
            continue;
        }
        let l = summary::cost_label(t, r, redact);
        if l != command_line(r, redact) {
            if !cost_labels.is_empty() {
                cost_labels.push(',');
            }
            let _ = write!(cost_labels, "{i},{}", strings.id(&l));
        }
    }
    let causes: Vec<String> = ids
        .iter()
        .enumerate()
        .filter(|&(_, &id)| verdict.is_cause(t, id))
        .map(|(i, _)| i.to_string())
        .collect();
    let mut regions = String::new();
    for (i, &id) in ids.iter().enumerate() {
        let Some(r) = t.get(id) else { continue };
        for g in &r.regions {
            if !regions.is_empty() {
                regions.push(',');
            }
            let name = strings.id(&summary::region_name(&g.category, &g.label));
            let thread = strings.id(&crate::model::escape::text(&g.thread));
            let category = strings.id(&crate::model::escape::text(&g.category));
            let label = strings.id(&crate::model::escape::text(&g.label));
            let msg = g.msg.as_deref().map_or(-1, |m| {
                let m = if redact {
                    crate::redact::redact_arg(m)
                } else {
                    m.into()
                };
                strings.id(&crate::model::escape::text(&m)) as i64
            });
            let _ = write!(
                regions,
                "[{i},{},{},{name},{thread},{},{category},{label},{msg}]",
                us(g.ts, origin),
                us(g.end, origin),
                g.nesting
            );
        }
    }

    // The summary's rule for lists of files by directory (its threshold; the command's
    // working directory).
    let rule = summary::dirs::DirRule::new(
        rep.files
            .as_ref()
            .map_or(Some(summary::dirs::DIRS_MORE_THAN), |f| f.directories.more_than),
        summary::command_cwd(h, t, sum),
    );
    let files = (h.files || t.stats().files > 0).then(|| {
        let dirs = rep.files.as_ref().map(|f| &f.directories);
        files_data(t, &ids, &index, &mut strings, origin, sum, (&rule, dirs))
    });

    // The header.
    // The command: `run`'s, else (`watch -p`, a saved trace) the designated root's, whose exit
    // is then the run's status.
    let root = crate::report::summary::failures::designated_root(t, &h.mode, sum).and_then(|id| t.get(id));
    let command = match &h.mode {
        Mode::Run { argv } => Some(strings.id(&quote_argv(argv, redact))),
        _ => root.map(|r| strings.id(&command_line(r, redact))),
    };
    let run_status = sum.status.or_else(|| root?.exit?.status);
    let start = crate::report::svg::local_iso(h, origin);
    let mut out = String::with_capacity(procs.len() + ims.len() + 4096);
    let _ = write!(
        out,
        "{{\"format\":\"proctrace-html\",\"version\":{DATA_VERSION},\"run\":{{"
    );
    let mode = match h.mode {
        Mode::Run { .. } => "run",
        Mode::Watch { .. } => "watch",
        Mode::Replay { .. } => "replay",
        Mode::Analyze { .. } => "analyze",
    };
    let _ = write!(out, "\"mode\":\"{mode}\",\"command\":{},", opt(command));
    out.push_str("\"status\":");
    match run_status {
        Some(s) => push_json_str(&mut out, &exit_text(Some(s), Paint { on: false })),
        None => out.push_str("null"),
    }
    let _ = write!(out, ",\"ok\":{},\"start\":", opt(run_status.map(|s| s.success())));
    push_json_str(&mut out, &start);
    out.push_str(",\"host\":");
    match &h.tool.host {
        Some(host) => push_json_str(&mut out, &crate::model::escape::text(host)),
        None => out.push_str("null"),
    }
    out.push_str(",\"backend\":");
    match sum.backend.as_deref().or(h.backend.as_deref()) {
        Some(b) => push_json_str(&mut out, b),
        None => out.push_str("null"),
    }
    out.push_str(",\"tool\":");
    push_json_str(&mut out, &format!("proctrace {}", h.tool.version));
    let _ = write!(
        out,
        ",\"wall_us\":{},\"cpu_us\":{},\"processes\":{},\"execs\":{},\"failures\":{},\"handled\":{},\"lost\":{},\"untraced\":{},\"background\":{}}}",
        wall / 1000,
        opt(measured.then_some(cpu_total / 1000)),
        sum.stats.processes,
        sum.stats.execs,
        rep.failures.len(),
        rep.nonzero_exits.len() - rep.failures.len(),
        sum.stats.lost,
        sum.capture.untraced,
        sum.background
    );
    out.push_str(",\"strings\":[");
    for (k, s) in strings.list.iter().enumerate() {
        if k > 0 {
            out.push(',');
        }
        push_json_str(&mut out, s);
    }
    let _ = write!(
        out,
        "],\"procs\":[{procs}],\"images\":[{ims}],\"path\":[{path}],\"parallel\":[{parallel}],\"causes\":[{}],\"regions\":[{regions}],\"slow\":[{slow}],\"programs\":[{programs}],\"cost_labels\":[{cost_labels}]",
        causes.join(",")
    );
    if let Some(f) = files {
        out.push_str(",\"files\":");
        out.push_str(&f);
    }
    out.push('}');
    out
}

/// The data's `files` (docs/html-report.md): what the summary's files report counts, each
/// process's uses (path, access, first time), every file read with its readers in the summary's
/// order, and each file written then read by another with its producers and consumers (the
/// summary's `produced`, by record). Paths are interned as people read them (`\n`, `\xff`).
fn files_data(
    t: &Tracker,
    ids: &[ProcId],
    index: &HashMap<ProcId, usize>,
    strings: &mut Strings,
    origin: u64,
    sum: &Summary,
    (rule, dirs): (&summary::dirs::DirRule, Option<&summary::Directories>),
) -> String {
    use crate::model::escape::text;
    let x = summary::FileIndex::of(t, ids);
    let mut out = String::new();
    let _ = write!(
        out,
        "{{\"processes\":{},\"read\":{},\"written\":{},\"created\":{},\"deleted\":{},\"renamed\":{},\"lost\":{},\"dropped\":{},\"uses\":[",
        x.processes,
        x.count(|p| !p.readers.is_empty()),
        x.count(|p| !p.writers.is_empty()),
        x.count(|p| p.created),
        x.count(|p| p.deleted),
        x.renamed,
        sum.capture.files_lost,
        sum.stats.files_dropped
    );
    // Each process that used a file, in tree order: `[proc, access, ts, path, …]`, a rename's
    // path followed by its new one.
    let mut first = true;
    for (i, &id) in ids.iter().enumerate() {
        let Some(set) = t.get(id).and_then(|r| r.files.as_deref()) else {
            continue;
        };
        if set.uses.is_empty() {
            continue;
        }
        if !first {
            out.push(',');
        }
        first = false;
        out.push('[');
        num(&mut out, i);
        for u in &set.uses {
            out.push(',');
            num(&mut out, u.access as u8);
            out.push(',');
            num(&mut out, us(u.ts, origin));
            out.push(',');
            num(&mut out, strings.id(&text(&u.path)));
            if u.access == crate::model::event::FileAccess::Rename {
                out.push(',');
                match &u.to {
                    Some(to) => num(&mut out, strings.id(&text(to))),
                    None => num(&mut out, -1),
                }
            }
        }
        out.push(']');
    }
    out.push_str("],\"most_read\":[");
    for (k, (path, readers)) in x.most_read().into_iter().enumerate() {
        if k > 0 {
            out.push(',');
        }
        num(&mut out, strings.id(&text(path)));
        out.push(',');
        num(&mut out, readers);
    }
    out.push_str("],\"produced\":[");
    let procs = |out: &mut String, list: &mut dyn Iterator<Item = ProcId>| {
        out.push('[');
        for (k, id) in list.enumerate() {
            if k > 0 {
                out.push(',');
            }
            num(out, index.get(&id).map_or(-1, |&i| i as i64));
        }
        out.push(']');
    };
    for (k, (path, p, consumers)) in x.produced().enumerate() {
        if k > 0 {
            out.push(',');
        }
        out.push('[');
        num(&mut out, strings.id(&text(path)));
        out.push(',');
        procs(&mut out, &mut p.writers.iter().map(|w| w.1));
        out.push(',');
        procs(&mut out, &mut consumers.iter().map(|c| c.1));
        out.push(']');
    }
    // The rule the page summarises its lists of files by (the summary's), and the whole run's
    // files read and written by directory: the summary's `directories` (made from the same
    // index), its paths as people read them.
    out.push_str("],\"more_than\":");
    match rule.more_than {
        Some(n) => num(&mut out, n),
        None => out.push_str("null"),
    }
    out.push_str(",\"project\":");
    num(
        &mut out,
        rule.project
            .as_deref()
            .map_or(-1, |p| strings.id(&text(p)) as i64),
    );
    out.push_str(",\"dirs\":[");
    let mut first = true;
    if let Some(d) = dirs {
        for (written, list) in [(0u8, &d.read), (1, &d.written)] {
            for e in list {
                if !first {
                    out.push(',');
                }
                first = false;
                // [access, path, dir, files, processes, [top paths]]
                out.push('[');
                num(&mut out, written);
                out.push(',');
                num(&mut out, strings.id(e.people()));
                out.push(',');
                num(&mut out, u8::from(e.dir));
                out.push(',');
                num(&mut out, e.files);
                out.push(',');
                num(&mut out, e.processes.unwrap_or(0));
                out.push_str(",[");
                for (k, t) in e.top.iter().enumerate() {
                    if k > 0 {
                        out.push(',');
                    }
                    num(&mut out, strings.id(t.people()));
                }
                out.push_str("]]");
            }
        }
    }
    out.push_str("]}");
    out
}

#[cfg(test)]
mod tests;
