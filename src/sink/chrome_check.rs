//! A checker for `--chrome` output, shared by the unit tests (goldens) and the end-to-end tests
//! (included there with `#[path]`): parses the trace as JSON and checks the rules of the Chrome
//! Trace Event Format that Perfetto and chrome://tracing rely on, and that every process has its
//! slice. Only `std` and `serde_json`.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::Value;

/// The memory counter's name (the sink's `MEMORY_COUNTER`; this file is shared with the
/// end-to-end tests and names only `std` and `serde_json`).
pub const MEMORY_COUNTER: &str = "peak RSS of running processes, summed (upper bound)";

/// A process the trace must show.
#[derive(Debug, Clone)]
pub struct Expect {
    /// Its pid.
    pub pid: i64,
    /// Start, ns after the session start (clamped to it).
    pub start_ns: u64,
    /// End − start, ns (to the session end for one still running).
    pub dur_ns: u64,
    /// The slice's `status` arg: `exit 0`, `exit 3`, `killed by SIGKILL`, `exit lost`, `running`.
    pub status: String,
}

/// A region (Trace2) the trace must show as a slice inside its process's slice.
#[derive(Debug, Clone)]
pub struct ExpectRegion {
    /// Its process.
    pub pid: i64,
    /// `category:label`.
    pub name: String,
    /// Start, ns after the session start, clamped into its process's slice; the slice may start
    /// up to [`REGION_NUDGE_NS`] later (the sink moves each start by its nesting depth).
    pub start_ns: u64,
    /// End, ns after the session start, clamped into its process's slice (may be as much later
    /// as the start, for a region of no length).
    pub end_ns: u64,
}

/// How much later than expected a region's slice may start (see [`ExpectRegion::start_ns`]).
pub const REGION_NUDGE_NS: u64 = 64;

/// What a valid trace held.
#[derive(Debug, Default)]
pub struct Checked {
    /// `X` slices.
    pub slices: usize,
    /// Lanes (tids with slices).
    pub lanes: usize,
    /// Instant events by `cat`.
    pub instants: BTreeMap<String, usize>,
    /// Counter events.
    pub counters: usize,
    /// Highest counter value.
    pub peak_running: i64,
    /// Memory counter events (peak RSS of the running processes, summed).
    pub memory_counters: usize,
    /// Its highest value, KiB.
    pub peak_memory_kib: i64,
    /// Slices with cost figures (`max_rss_kib` in their args).
    pub measured: usize,
    /// Region slices (`cat` `region`), not counted in `slices`.
    pub regions: usize,
    /// Region slices on the same lane as their process's slice.
    pub regions_on_process_lane: usize,
    /// Image slices (`cat` `image`, one per image of a process of two or more), in file order;
    /// not counted in `slices`.
    pub images: Vec<ImageSlice>,
    /// Image slices on the same lane as their process's slice.
    pub images_on_process_lane: usize,
    /// Flow arrows (`s` → `f` pairs, `--files`): (writer pid, reader pid, `name`), each end
    /// inside a process slice on its lane.
    pub flows: Vec<(i64, i64, String)>,
}

/// An image's slice (see [`Checked::images`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageSlice {
    /// Its process.
    pub pid: i64,
    /// Its position among its process's images, from 1, and how many there are.
    pub index: i64,
    /// How many images its process has.
    pub of: i64,
    /// The slice's name (the image's program).
    pub name: String,
    /// `args.cmd`: its command line.
    pub cmd: String,
    /// Start and end, ns after the session start.
    pub start_ns: i64,
    /// End, ns after the session start.
    pub end_ns: i64,
    /// The fork image (`cat` `image,fork`).
    pub fork: bool,
}

/// µs (a JSON number) to ns, rounded as Perfetto does (`llround(v * 1000)`).
fn ns(v: &Value) -> Option<i64> {
    v.as_f64().map(|f| (f * 1000.0).round() as i64)
}

/// Checks `text` and that it shows exactly the processes in `expected`; region slices must lie
/// inside a slice of their process.
pub fn validate(text: &str, expected: &[Expect]) -> Result<Checked, String> {
    validate_impl(text, expected, None)
}

/// [`validate`], and the trace shows exactly the regions in `regions`, each as one slice.
pub fn validate_regions(
    text: &str,
    expected: &[Expect],
    regions: &[ExpectRegion],
) -> Result<Checked, String> {
    validate_impl(text, expected, Some(regions))
}

fn validate_impl(
    text: &str,
    expected: &[Expect],
    want_regions: Option<&[ExpectRegion]>,
) -> Result<Checked, String> {
    let all: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let events = all.as_array().ok_or("not a JSON array")?;
    let mut out = Checked::default();
    let mut named_pids = HashSet::new();
    let mut named_tids = HashSet::new();
    // Threads that hold slices or thread-scoped instants: each must be named.
    let mut used_tids = HashSet::new();
    let mut pids = HashSet::new();
    // (tid) -> [(start, end)]
    let mut by_tid: HashMap<i64, Vec<(i64, i64)>> = HashMap::new();
    // (pid, start) -> (dur, status), from the slices
    let mut slices: HashMap<(i64, i64), Vec<(i64, String)>> = HashMap::new();
    let mut counter: BTreeMap<i64, i64> = BTreeMap::new();
    let mut memory: BTreeMap<i64, i64> = BTreeMap::new();
    let mut all_spans = Vec::new();
    // (start, end, peak KiB) of the measured slices in the memory counter.
    let mut mem_spans: Vec<(i64, i64, i64)> = Vec::new();
    // (tid, start, dur) of every slice, in file order.
    let mut x_order: Vec<(i64, i64, i64)> = Vec::new();
    // Flow points by id: (is the start, tid, ts, name).
    let mut flow_points: BTreeMap<i64, Vec<(bool, i64, i64, String)>> = BTreeMap::new();
    // Region slices: (pid, tid, start, end, name), and process slices by pid: (tid, start, end).
    let mut regions: Vec<(i64, i64, i64, i64, String)> = Vec::new();
    let mut procs: HashMap<i64, Vec<(i64, i64, i64)>> = HashMap::new();
    // The lane of each of `out.images`.
    let mut image_tids: Vec<i64> = Vec::new();
    for (n, ev) in events.iter().enumerate() {
        let at = || format!("event {n}: {ev}");
        let ph = ev["ph"].as_str().ok_or_else(|| format!("{}: no ph", at()))?;
        let pid = ev["pid"]
            .as_i64()
            .ok_or_else(|| format!("{}: pid not an integer", at()))?;
        let tid = ev["tid"]
            .as_i64()
            .ok_or_else(|| format!("{}: tid not an integer", at()))?;
        if ph == "M" {
            match ev["name"].as_str() {
                Some("process_name") => {
                    named_pids.insert(pid);
                }
                Some("thread_name") => {
                    named_tids.insert((pid, tid));
                }
                Some("thread_sort_index") => {}
                other => return Err(format!("{}: unknown metadata {other:?}", at())),
            }
            ev["args"]
                .as_object()
                .ok_or_else(|| format!("{}: no args", at()))?;
            continue;
        }
        let ts = ns(&ev["ts"]).ok_or_else(|| format!("{}: ts not a number", at()))?;
        if ts < 0 {
            return Err(format!("{}: negative ts", at()));
        }
        if ev["name"].as_str().is_none() {
            return Err(format!("{}: no name", at()));
        }
        pids.insert(pid);
        if ph == "X" || (ph == "i" && ev["s"].as_str().unwrap_or("t") == "t") {
            used_tids.insert((pid, tid));
        }
        match ph {
            "X" => {
                let dur = ns(&ev["dur"]).ok_or_else(|| format!("{}: dur not a number", at()))?;
                if dur < 0 {
                    return Err(format!("{}: negative dur", at()));
                }
                let args = &ev["args"];
                let p = args["pid"]
                    .as_i64()
                    .ok_or_else(|| format!("{}: no args.pid", at()))?;
                if let Some(cat @ ("image" | "image,fork")) = ev["cat"].as_str() {
                    let int = |k: &str| args[k].as_i64().ok_or_else(|| format!("{}: no args.{k}", at()));
                    let (index, of) = (int("image")?, int("of")?);
                    if !(1..=of).contains(&index) || of < 2 {
                        return Err(format!("{}: image {index} of {of}", at()));
                    }
                    let cmd = args["cmd"]
                        .as_str()
                        .ok_or_else(|| format!("{}: no args.cmd", at()))?;
                    by_tid.entry(tid).or_default().push((ts, ts + dur));
                    x_order.push((tid, ts, dur));
                    out.images.push(ImageSlice {
                        pid: p,
                        index,
                        of,
                        name: ev["name"].as_str().unwrap_or_default().to_string(),
                        cmd: cmd.to_string(),
                        start_ns: ts,
                        end_ns: ts + dur,
                        fork: cat == "image,fork",
                    });
                    image_tids.push(tid);
                    continue;
                }
                if ev["cat"].as_str() == Some("region") {
                    args["nesting"]
                        .as_u64()
                        .ok_or_else(|| format!("{}: no args.nesting", at()))?;
                    args["thread"]
                        .as_str()
                        .ok_or_else(|| format!("{}: no args.thread", at()))?;
                    let name = ev["name"].as_str().unwrap_or_default().to_string();
                    by_tid.entry(tid).or_default().push((ts, ts + dur));
                    x_order.push((tid, ts, dur));
                    regions.push((p, tid, ts, ts + dur, name));
                    out.regions += 1;
                    continue;
                }
                procs.entry(p).or_default().push((tid, ts, ts + dur));
                args["ppid"]
                    .as_i64()
                    .ok_or_else(|| format!("{}: no args.ppid", at()))?;
                let status = args["status"]
                    .as_str()
                    .ok_or_else(|| format!("{}: no args.status", at()))?;
                if status.starts_with("exit ") && status != "exit lost" {
                    let code = args["code"]
                        .as_i64()
                        .ok_or_else(|| format!("{}: no args.code", at()))?;
                    if status != format!("exit {code}") {
                        return Err(format!("{}: status and code disagree", at()));
                    }
                }
                if status.starts_with("killed by ") && args["signal"].as_str().is_none() {
                    return Err(format!("{}: no args.signal", at()));
                }
                let failed = status != "exit 0" && status != "running" && status != "exit lost";
                if failed && ev["cname"].as_str() != Some("terrible") {
                    return Err(format!("{}: a failure not coloured", at()));
                }
                by_tid.entry(tid).or_default().push((ts, ts + dur));
                x_order.push((tid, ts, dur));
                slices.entry((p, ts)).or_default().push((dur, status.to_string()));
                // `counted: false`: seen too late for the counter, which says so.
                if args["counted"].as_bool() != Some(false) {
                    all_spans.push((ts, ts + dur));
                }
                if let Some(kib) = args.get("max_rss_kib") {
                    // The sink caps what one process adds at 1 PiB (a hostile trace's figures).
                    let kib = kib
                        .as_u64()
                        .ok_or_else(|| format!("{}: max_rss_kib not a size", at()))?
                        .min(1 << 40) as i64;
                    for k in ["cpu_user_s", "cpu_sys_s"] {
                        if !args[k].as_f64().is_some_and(|v| v >= 0.0) {
                            return Err(format!("{}: measured, but no {k}", at()));
                        }
                    }
                    out.measured += 1;
                    if args["in_memory_counter"].as_bool() != Some(false) && status != "running" {
                        mem_spans.push((ts, ts + dur, kib));
                    }
                }
                out.slices += 1;
            }
            "i" => {
                let s = ev["s"].as_str().unwrap_or("t");
                if !["t", "p", "g"].contains(&s) {
                    return Err(format!("{}: bad instant scope", at()));
                }
                let cat = ev["cat"].as_str().unwrap_or("").to_string();
                *out.instants.entry(cat).or_default() += 1;
            }
            "C" if ev["name"].as_str() == Some(MEMORY_COUNTER) => {
                let v = ev["args"]["KiB"]
                    .as_i64()
                    .ok_or_else(|| format!("{}: memory counter without KiB", at()))?;
                if v < 0 {
                    return Err(format!("{}: negative memory", at()));
                }
                if memory.insert(ts, v).is_some() {
                    return Err(format!("{}: two memory values at one moment", at()));
                }
                out.memory_counters += 1;
                out.peak_memory_kib = out.peak_memory_kib.max(v);
            }
            "C" => {
                if ev["name"].as_str() != Some("running") {
                    return Err(format!("{}: unknown counter", at()));
                }
                let v = ev["args"]["processes"]
                    .as_i64()
                    .ok_or_else(|| format!("{}: counter without processes", at()))?;
                if v < 0 {
                    return Err(format!("{}: negative counter", at()));
                }
                counter.insert(ts, v);
                out.counters += 1;
                out.peak_running = out.peak_running.max(v);
            }
            "s" | "f" => {
                let id = ev["id"]
                    .as_i64()
                    .ok_or_else(|| format!("{}: a flow without an integer id", at()))?;
                if ev["cat"].as_str().is_none() {
                    return Err(format!("{}: a flow without cat", at()));
                }
                if ph == "f" && ev["bp"].as_str() != Some("e") {
                    return Err(format!("{}: a flow end not bound to its enclosing slice", at()));
                }
                let name = ev["name"].as_str().unwrap_or_default().to_string();
                flow_points
                    .entry(id)
                    .or_default()
                    .push((ph == "s", tid, ts, name));
            }
            other => return Err(format!("{}: unexpected phase {other}", at())),
        }
    }
    for pid in &pids {
        if !named_pids.contains(pid) {
            return Err(format!("pid {pid} has no process_name"));
        }
    }
    for (pid, tid) in &used_tids {
        if *tid == 0 || !named_tids.contains(&(*pid, *tid)) {
            return Err(format!(
                "lane {tid} has no thread_name (or is tid 0, the idle task's)"
            ));
        }
    }
    // Slices on one lane that start together: the viewers nest them in file order, so a
    // longer one must not come after a shorter one that is still open.
    x_order.sort_by_key(|x| (x.0, x.1)); // stable: file order within a moment
    let mut open: Option<(i64, i64, i64)> = None; // (tid, start, shortest open duration)
    for &(t, st, d) in &x_order {
        match open {
            Some((ot, os, od)) if ot == t && os == st => {
                if d > od {
                    return Err(format!(
                        "lane {t}: two slices start at {st} ns, the longer one last"
                    ));
                }
                if d > 0 {
                    open = Some((t, st, d));
                }
            }
            _ => open = (d > 0).then_some((t, st, d)),
        }
    }
    // Slices on one lane nest: sorted by start (longest first), each one ends before the
    // enclosing one does, or starts after it ended.
    for (tid, spans) in &mut by_tid {
        spans.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        let mut stack: Vec<(i64, i64)> = Vec::new();
        for &(s, e) in spans.iter() {
            while stack.last().is_some_and(|top| top.1 <= s) {
                stack.pop();
            }
            if let Some(top) = stack.last()
                && e > top.1
            {
                return Err(format!(
                    "lane {tid}: slice {s}..{e} ns overlaps {}..{} without nesting",
                    top.0, top.1
                ));
            }
            stack.push((s, e));
        }
    }
    out.lanes = by_tid.len();
    // Each flow: one start and one end, the end not before the start, each inside a process
    // slice on its own lane (the slice the viewer binds it to).
    let slice_at = |tid: i64, ts: i64| -> Option<i64> {
        procs
            .iter()
            .filter_map(|(p, v)| {
                v.iter()
                    .find(|x| x.0 == tid && x.1 <= ts && ts <= x.2)
                    .map(|x| (*p, x.2 - x.1))
            })
            .min_by_key(|x| x.1)
            .map(|x| x.0)
    };
    for (id, pts) in &flow_points {
        let (Some(s), Some(f), 2) = (pts.iter().find(|p| p.0), pts.iter().find(|p| !p.0), pts.len()) else {
            return Err(format!(
                "flow {id}: {} points, not one start and one end",
                pts.len()
            ));
        };
        if f.2 < s.2 || s.3 != f.3 {
            return Err(format!(
                "flow {id}: its end comes before its start, or is named otherwise"
            ));
        }
        let (Some(from), Some(to)) = (slice_at(s.1, s.2), slice_at(f.1, f.2)) else {
            return Err(format!(
                "flow {id}: an end outside every process slice of its lane"
            ));
        };
        out.flows.push((from, to, s.3.clone()));
    }
    // The counter says how many slices cover each moment it names.
    let mut starts: Vec<i64> = all_spans.iter().map(|s| s.0).collect();
    let mut ends: Vec<i64> = all_spans.iter().map(|s| s.1).collect();
    starts.sort_unstable();
    ends.sort_unstable();
    for (&t, &v) in &counter {
        let covering = starts.partition_point(|&s| s <= t) as i64 - ends.partition_point(|&e| e <= t) as i64;
        if covering != v {
            return Err(format!("counter at {t} ns says {v}, {covering} slices cover it"));
        }
    }
    // The memory counter says, at each moment it names, the sum of the peaks of the measured
    // slices covering it; it ends at zero, and a trace with measured slices has it.
    for (&t, &v) in &memory {
        let covering: i64 = mem_spans
            .iter()
            .filter(|(s, e, _)| *s <= t && t < *e)
            .map(|m| m.2)
            .sum();
        if covering != v {
            return Err(format!(
                "memory counter at {t} ns says {v} KiB, the slices covering it peak at {covering} KiB"
            ));
        }
    }
    if memory.last_key_value().is_some_and(|(_, &v)| v != 0) {
        return Err("the memory counter does not end at zero".into());
    }
    if mem_spans.iter().any(|m| m.1 > m.0 && m.2 > 0) && memory.is_empty() {
        return Err("measured processes but no memory counter".into());
    }
    // Each region inside a slice of its process (on its lane where it could go there).
    for (p, tid, s, e, name) in &regions {
        let inside = procs.get(p).and_then(|v| {
            v.iter()
                .filter(|x| x.1 <= *s && *e <= x.2)
                .min_by_key(|x| (x.0 != *tid, x.2 - x.1))
        });
        match inside {
            Some(x) if x.0 == *tid => out.regions_on_process_lane += 1,
            Some(_) => {}
            None => {
                return Err(format!(
                    "region {name:?} of pid {p} ({s}..{e} ns) is not inside a slice of its process"
                ));
            }
        }
    }
    // Each image inside a slice of its process (on its lane where it could go there); the
    // images of a process come in order, one after the other, never overlapping.
    // pid -> (index, of, end) of its last image slice; a process's images are written together.
    let mut last_image: HashMap<i64, (i64, i64, i64)> = HashMap::new();
    let complete = |b: Option<(i64, i64, i64)>| b.is_none_or(|(k, of, _)| k == of);
    for (im, tid) in out.images.iter().zip(&image_tids) {
        let inside = procs.get(&im.pid).and_then(|v| {
            v.iter()
                .filter(|x| x.1 <= im.start_ns && im.end_ns <= x.2)
                .min_by_key(|x| (x.0 != *tid, x.2 - x.1))
        });
        match inside {
            Some(x) if x.0 == *tid => out.images_on_process_lane += 1,
            Some(_) => {}
            None => return Err(format!("image {im:?} is not inside a slice of its process")),
        }
        let before = last_image.insert(im.pid, (im.index, im.of, im.end_ns));
        let ok = match before {
            // The first image of a process (or of a later one with the same pid).
            _ if im.index == 1 => complete(before),
            Some((k, of, end)) => im.index == k + 1 && im.of == of && end <= im.start_ns,
            None => false,
        };
        if !ok {
            return Err(format!("image {im:?} out of order (after {before:?})"));
        }
    }
    if let Some((pid, _)) = last_image.iter().find(|(_, b)| !complete(Some(**b))) {
        return Err(format!("pid {pid}: fewer image slices than images"));
    }
    if let Some(want) = want_regions {
        if want.len() != regions.len() {
            return Err(format!(
                "{} region slices for {} regions",
                regions.len(),
                want.len()
            ));
        }
        let mut used = vec![false; regions.len()];
        for w in want {
            let found = regions.iter().enumerate().position(|(i, (p, _, s, e, name))| {
                !used[i]
                    && *p == w.pid
                    && *name == w.name
                    && (w.end_ns as i64..=(w.end_ns + REGION_NUDGE_NS) as i64).contains(e)
                    && (w.start_ns as i64..=(w.start_ns + REGION_NUDGE_NS) as i64).contains(s)
            });
            match found {
                Some(i) => used[i] = true,
                None => return Err(format!("region {w:?}: no slice")),
            }
        }
    }
    // Exactly the expected processes, each once, with its duration and status.
    if out.slices != expected.len() {
        return Err(format!("{} slices for {} processes", out.slices, expected.len()));
    }
    for x in expected {
        let got = slices
            .get(&(x.pid, x.start_ns as i64))
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        match got {
            [(dur, status)] if *dur == x.dur_ns as i64 && *status == x.status => {}
            _ => return Err(format!("process {x:?}: slices {got:?}")),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: &str = r#"{"ph":"M","pid":1,"tid":1,"name":"process_name","args":{"name":"x"}},
{"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"lane 1"}},"#;

    fn x(ts: &str, dur: &str, pid: i64) -> String {
        format!(
            r#"{{"ph":"X","pid":1,"tid":2,"ts":{ts},"dur":{dur},"name":"p","args":{{"pid":{pid},"ppid":1,"status":"exit 0","code":0}}}}"#
        )
    }

    fn expect(pid: i64, start_ns: u64, dur_ns: u64) -> Expect {
        Expect {
            pid,
            start_ns,
            dur_ns,
            status: "exit 0".into(),
        }
    }

    /// The checker catches what it is there to catch.
    #[test]
    fn rejects_broken_traces() {
        let ok = format!(
            "[{M}\n{},\n{},\n{}]",
            x("1.000", "10.000", 10),
            x("2.000", "3.000", 11),
            r#"{"ph":"C","pid":1,"tid":1,"ts":3.0,"name":"running","args":{"processes":2}}"#
        );
        let want = [expect(10, 1_000, 10_000), expect(11, 2_000, 3_000)];
        validate(&ok, &want).unwrap();
        // Partial overlap on one lane.
        let t = format!(
            "[{M}\n{},\n{}]",
            x("1.000", "10.000", 10),
            x("5.000", "10.000", 11)
        );
        let e = validate(&t, &[expect(10, 1_000, 10_000), expect(11, 5_000, 10_000)]).unwrap_err();
        assert!(e.contains("without nesting"), "{e}");
        // A counter that does not match the slices.
        let t = ok.replace(r#""processes":2"#, r#""processes":1"#);
        assert!(validate(&t, &want).unwrap_err().contains("counter"));
        // A wrong duration, a missing process, an unnamed lane.
        assert!(validate(&ok, &[expect(10, 1_000, 9_000), want[1].clone()]).is_err());
        assert!(validate(&ok, &want[..1]).is_err());
        let t = ok.replace("thread_name", "thread_sort_index");
        assert!(validate(&t, &want).unwrap_err().contains("thread_name"));
        // Two slices starting together, the longer one later in the file.
        let t = format!(
            "[{M}\n{},\n{}]",
            x("1.000", "3.000", 11),
            x("1.000", "10.000", 10)
        );
        let e = validate(&t, &[expect(10, 1_000, 10_000), expect(11, 1_000, 3_000)]).unwrap_err();
        assert!(e.contains("the longer one last"), "{e}");
        // Regions: inside their process's slice, nesting with the rest of the lane.
        let region = |ts: &str, dur: &str, pid: i64| {
            format!(
                r#"{{"ph":"X","pid":1,"tid":2,"ts":{ts},"dur":{dur},"name":"c:l","cat":"region","args":{{"pid":{pid},"thread":"main","nesting":1}}}}"#
            )
        };
        let with = |r: &str| {
            format!(
                "[{M}\n{},\n{},\n{},\n{r}]",
                x("1.000", "10.000", 10),
                x("2.000", "3.000", 11),
                r#"{"ph":"C","pid":1,"tid":1,"ts":3.0,"name":"running","args":{"processes":2}}"#
            )
        };
        let want_r = |s, e| ExpectRegion {
            pid: 10,
            name: "c:l".into(),
            start_ns: s,
            end_ns: e,
        };
        let t = with(&region("6.000", "2.000", 10));
        let got = validate_regions(&t, &want, &[want_r(6_000, 8_000)]).unwrap();
        assert_eq!((got.slices, got.regions, got.regions_on_process_lane), (2, 1, 1));
        assert!(
            validate_regions(&t, &want, &[])
                .unwrap_err()
                .contains("1 region slices for 0")
        );
        assert!(validate_regions(&t, &want, &[want_r(6_000, 9_000)]).is_err());
        // Outside its process's slice; another process's; overlapping a slice partly.
        let e = validate(&with(&region("9.000", "5.000", 10)), &want).unwrap_err();
        assert!(e.contains("not inside") || e.contains("without nesting"), "{e}");
        let e = validate(&with(&region("6.000", "1.000", 11)), &want).unwrap_err();
        assert!(e.contains("not inside"), "{e}");
        let e = validate(&with(&region("4.000", "2.000", 10)), &want).unwrap_err();
        assert!(e.contains("without nesting"), "{e}");
        // Not closed: not valid JSON (the viewers would cope; the checker wants the whole file).
        assert!(validate(&ok[..ok.len() - 1], &want).is_err());
    }
}
