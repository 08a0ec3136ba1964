//! The HTML report (`--html FILE`, docs/html-report.md) in a real browser: pages written by the
//! proctrace binary from recorded builds and from a live run are loaded in headless Chromium
//! (`/usr/bin/chromium`) by `tests/html/check.mjs` (puppeteer-core), one browser for the pages
//! of a test. It reports, per page, what a person would see and what went wrong: console and page
//! errors, requests that left the file, the record count, the rows drawn, the visible text, the
//! search field's effect, the slowest table sorted by duration and the load time.
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::*;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A recorded build's path (tests/fixtures/builds/).
fn capture(name: &str) -> String {
    root()
        .join(format!("tests/fixtures/builds/{name}.jsonl"))
        .to_string_lossy()
        .into_owned()
}

/// `proctrace SUBCOMMAND --html PAGE ARGS…`, checked to succeed (or to end as the command did, `code`).
fn write_page(args: &[&str], page: &str, code: i32) {
    let out = Command::new(PROCTRACE)
        .arg(args[0])
        .args(["--html", page])
        .args(&args[1..])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(code),
        "proctrace {args:?}: {}",
        stderr(&out)
    );
    assert!(Path::new(page).exists(), "no page at {page}");
}

/// `node tests/html/check.mjs [opts] PAGES...`: one JSON object per page, in order.
fn check(pages: &[&str], opts: &[&str]) -> Vec<Value> {
    let dir = root().join("tests/html");
    let hint = "run tests/run: it installs chromium, nodejs and npm, then `npm ci --prefix tests/html`";
    assert!(
        Path::new("/usr/bin/chromium").exists(),
        "no /usr/bin/chromium for the HTML report's browser tests; {hint}"
    );
    assert!(
        dir.join("node_modules/puppeteer-core").exists(),
        "tests/html/node_modules/puppeteer-core is missing; {hint}"
    );
    let out = Command::new("node")
        .arg(dir.join("check.mjs"))
        .args(opts)
        .args(pages)
        .output()
        .unwrap_or_else(|e| panic!("node: {e}; {hint}"));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "check.mjs failed: {}\n{text}", stderr(&out));
    let got: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(got.len(), pages.len(), "{text}");
    got
}

/// The data embedded in a page (`#proctrace-data`), parsed here, independently of the page.
fn embedded(page: &str) -> Value {
    let html = std::fs::read_to_string(page).unwrap();
    let open = "<script type=\"application/json\" id=\"proctrace-data\">";
    let at = html.find(open).expect("the data's script element") + open.len();
    let len = html[at..].find("</script>").expect("its end");
    serde_json::from_str(&html[at..at + len]).unwrap()
}

/// What every page must show: no error, no request leaving the file, every record a row,
/// the slowest table sorted by duration puts the slowest first, the tooltip filled.
fn assert_sound(r: &Value, data: &Value) {
    let page = r["page"].as_str().unwrap();
    assert!(r["error"].is_null(), "{page}: {}", r["error"]);
    for k in ["console_errors", "page_errors", "foreign_requests"] {
        assert_eq!(r[k], serde_json::json!([]), "{page}: {k}");
    }
    let procs = data["procs"].as_array().unwrap().len() as u64;
    assert_eq!(
        procs,
        data["run"]["processes"].as_u64().unwrap(),
        "{page}: records vs processes"
    );
    assert_eq!(r["records"].as_u64(), Some(procs), "{page}");
    assert_eq!(r["page_records"].as_u64(), Some(procs), "{page}");
    assert_eq!(
        r["rows_expanded"].as_u64(),
        Some(procs),
        "{page}: every process a row once expanded"
    );
    let rows = r["rows"].as_u64().unwrap();
    assert!((1..=procs).contains(&rows), "{page}: {rows} rows");
    assert_eq!(
        r["rows_after_clear"].as_u64(),
        Some(rows),
        "{page}: clearing the search"
    );
    // the CSP the page runs under allows nothing from elsewhere
    let csp = r["csp"].as_str().unwrap();
    assert!(
        csp.starts_with("default-src 'none'; script-src 'sha256-"),
        "{page}: {csp}"
    );
    // sorted by duration, longest first, and the first is the longest of all images listed
    let slow = r["slowest"].as_array().unwrap();
    assert!(!slow.is_empty(), "{page}: an empty slowest table");
    let us: Vec<u64> = slow.iter().map(|s| s["us"].as_u64().unwrap()).collect();
    assert!(us.windows(2).all(|w| w[0] >= w[1]), "{page}: {us:?}");
    assert_eq!(r["slowest_sorted_desc"], true, "{page}");
    // zoom in halves the time in view, dragging the axis to the right shows earlier time, Fit
    // shows the whole run again
    let z = &r["zoom"];
    let span = |v: &Value| v[1].as_f64().unwrap() - v[0].as_f64().unwrap();
    assert!(
        (span(&z["zoomed"]) * 2.0 - span(&z["fit"])).abs() < 1.0,
        "{page}: {z}"
    );
    assert!(z["dragged"][0].as_f64() < z["zoomed"][0].as_f64(), "{page}: {z}");
    assert_eq!(z["refit"], z["fit"], "{page}");
    // a click on the root's label folds everything under it, a second unfolds it
    let f = &r["fold"];
    if procs > 1 {
        assert_eq!(f["folded"].as_u64(), Some(1), "{page}: {f}");
        assert_eq!(f["unfolded"], f["rows"], "{page}: {f}");
    }
    // a click on a step of the critical path shows its time (unless every step but the first
    // is folded into a line)
    let rv = &r["reveal"];
    if rv.is_null() {
        let folded = r["text"].as_str().unwrap().contains("shorter steps");
        assert!(data["path"].as_array().unwrap().len() <= 1 || folded, "{page}");
    } else {
        let s = &data["path"][rv["step"].as_u64().unwrap() as usize];
        let (from, to) = image_span(
            data,
            s[0].as_u64().unwrap() as usize,
            s[1].as_u64().unwrap() as usize,
        );
        let v = &rv["view"];
        assert!(
            v[0].as_f64().unwrap() <= from as f64 && v[1].as_f64().unwrap() >= to as f64,
            "{page}: {rv}"
        );
        assert!(
            span(v) <= 2.0 * (to - from) as f64 + 0.06 * span(&z["fit"]),
            "{page}: {rv}"
        );
    }
    let tip = r["tooltip"].as_str().unwrap();
    assert!(
        tip.contains("cwd: ") && tip.contains("status: ") && tip.contains("peak RSS: "),
        "{page}: {tip}"
    );
    assert_concurrency_hover(r, data);
    assert!(
        r["load_ms"].as_u64().unwrap() < 30_000,
        "{page}: {}",
        r["load_ms"]
    );
}

/// The concurrency graph's tooltip at the time it was hovered says what ran then, counted here
/// from the data: processes running (started at or before it, not ended), jobs (images that
/// forked no child, as the page defines them) and cores in use (each measured process's CPU
/// spread evenly over its life).
fn assert_concurrency_hover(r: &Value, data: &Value) {
    let page = r["page"].as_str().unwrap();
    let h = &r["conc_hover"];
    let t = h["t"]
        .as_f64()
        .unwrap_or_else(|| panic!("{page}: not hovered: {h}"));
    let tip = h["text"].as_str().unwrap();
    let procs = data["procs"].as_array().unwrap();
    let images = data["images"].as_array().unwrap();
    let wall = data["run"]["wall_us"].as_f64().unwrap();
    let tend = procs
        .iter()
        .filter_map(|p| p[3].as_f64())
        .fold(wall.max(1.0), f64::max);
    let start = |p: &Value| p[2].as_f64().unwrap_or(0.0);
    let end = |p: &Value| p[3].as_f64().unwrap_or(tend);
    let live = |s: f64, e: f64| i64::from(s <= t) - i64::from(e <= t);
    // which image of its parent each child was forked in
    let mut forked = vec![false; images.len()];
    let mut forked_one = vec![false; procs.len()];
    for p in procs {
        let Some(pa) = p[1].as_i64().filter(|&pa| pa >= 0) else {
            continue;
        };
        let pp = &procs[pa as usize];
        let first = pp[13].as_i64().unwrap();
        if first < 0 {
            forked_one[pa as usize] = true;
            continue;
        }
        let n = pp[14].as_u64().unwrap() as usize;
        let k = (0..n - 1)
            .find(|&k| {
                images[first as usize + k][1]
                    .as_f64()
                    .is_some_and(|e| start(p) < e)
            })
            .unwrap_or(n - 1);
        forked[first as usize + k] = true;
    }
    let (mut running, mut jobs, mut cores) = (0i64, 0i64, 0f64);
    for (i, p) in procs.iter().enumerate() {
        if p[2].is_null() {
            continue;
        }
        let (s, e) = (start(p), end(p));
        running += live(s, e);
        if let Some(cpu) = p[9].as_f64().filter(|_| e > s) {
            cores += cpu / (e - s) * live(s, e) as f64;
        }
        let first = p[13].as_i64().unwrap();
        if first < 0 {
            if !forked_one[i] {
                jobs += live(s, e);
            }
            continue;
        }
        for k in 0..p[14].as_u64().unwrap() as usize {
            let im = &images[first as usize + k];
            if !forked[first as usize + k] {
                jobs += live(im[0].as_f64().unwrap_or(s), im[1].as_f64().unwrap_or(e));
            }
        }
    }
    assert!(
        tip.contains(&format!("\njobs running: {jobs} (")),
        "{page}: at {t}: {tip}"
    );
    assert!(
        tip.contains(&format!("\nprocesses running: {running}\n")),
        "{page}: at {t}: {tip}"
    );
    if data["run"]["cpu_us"].is_null() {
        assert!(tip.contains("CPU in use: not measured"), "{page}: {tip}");
    } else {
        let at = tip
            .find("CPU in use: ")
            .unwrap_or_else(|| panic!("{page}: {tip}"))
            + 12;
        let shown: f64 = tip[at..].split(' ').next().unwrap().parse().unwrap();
        assert!(
            (shown - cores.max(0.0)).abs() <= 0.011,
            "{page}: at {t}: {shown} vs {cores}"
        );
    }
}

fn string(data: &Value, i: &Value) -> String {
    i.as_u64()
        .and_then(|i| data["strings"][i as usize].as_str())
        .unwrap_or("")
        .to_string()
}

/// How many processes the search for `q` should leave: those whose label, argv or an image's
/// label or argv contains it (case-insensitive), from the data.
fn matching(data: &Value, q: &str) -> u64 {
    let q = q.to_lowercase();
    let words = |a: &Value| {
        a.as_array()
            .map(|a| a.iter().map(|w| string(data, w)).collect::<Vec<_>>().join(" "))
    };
    let images = data["images"].as_array().unwrap();
    data["procs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| {
            let mut t = vec![string(data, &p[6]), words(&p[7]).unwrap_or_default()];
            let first = p[13].as_i64().unwrap();
            if first >= 0 {
                for k in 0..p[14].as_u64().unwrap() as usize {
                    let im = &images[first as usize + k];
                    t.push(string(data, &im[2]));
                    t.push(words(&im[3]).unwrap_or_default());
                }
            }
            t.iter().any(|s| s.to_lowercase().contains(&q))
        })
        .count() as u64
}

/// An image's start and end, µs (step `[proc, image, …]` of the path).
fn image_span(data: &Value, proc: usize, image: usize) -> (i64, i64) {
    let p = &data["procs"][proc];
    let first = p[13].as_i64().unwrap();
    let (s, e) = if first < 0 {
        (&p[2], &p[3])
    } else {
        let im = &data["images"][first as usize + image];
        (&im[0], &im[1])
    };
    (s.as_i64().unwrap(), e.as_i64().unwrap())
}

/// An image's label (step `[proc, image, …]` of the path).
fn image_label(data: &Value, proc: usize, image: usize) -> (String, i64) {
    let p = &data["procs"][proc];
    let first = p[13].as_i64().unwrap();
    if first < 0 {
        let d = p[3].as_i64().unwrap_or(0) - p[2].as_i64().unwrap_or(0);
        return (string(data, &p[6]), d);
    }
    let im = &data["images"][first as usize + image];
    (
        string(data, &im[2]),
        im[1].as_i64().unwrap_or(0) - im[0].as_i64().unwrap_or(0),
    )
}

/// A diff page's largest table sorts by each column as a run page's do (numbers largest first,
/// text A to Z, a second click reverses; rows without the figure last), and its critical paths
/// stand side by side, the new run's steps with their change bars.
fn assert_diff_sorts(r: &Value) {
    let page = r["page"].as_str().unwrap();
    assert!(r["error"].is_null(), "{page}: {}", r["error"]);
    let s = &r["diff_sort"];
    let cols: Vec<&str> = s["cols"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(cols.first(), Some(&"bar"), "{page}: {cols:?}");
    assert_eq!(cols.last(), Some(&"command"), "{page}: {cols:?}");
    let column = |rows: &Value, col: &str| -> Vec<Value> {
        let k = cols.iter().position(|c| *c == col).unwrap();
        rows.as_array()
            .unwrap()
            .iter()
            .map(|row| row[k].clone())
            .collect()
    };
    let n = s["first"].as_array().unwrap().len();
    // as it opens: by its change bar, largest first; and so again after the other sorts
    assert_eq!(s["first"], s["by"]["bar"], "{page}");
    for col in &cols {
        let v = column(&s["by"][*col], col);
        assert_eq!(v.len(), n, "{page}: {col}");
        if *col == "command" {
            let t: Vec<&str> = v.iter().map(|x| x.as_str().unwrap()).collect();
            assert!(t.windows(2).all(|w| w[0] <= w[1]), "{page}: by command: {t:?}");
        } else {
            // numbers largest first, the rows without one (shown as –) after them
            let nums: Vec<Option<f64>> = v.iter().map(Value::as_f64).collect();
            let known: Vec<f64> = nums.iter().map_while(|x| *x).collect();
            assert!(
                nums[known.len()..].iter().all(Option::is_none),
                "{page}: {col}: {nums:?}"
            );
            assert!(known.windows(2).all(|w| w[0] >= w[1]), "{page}: {col}: {known:?}");
        }
    }
    let asc: Vec<f64> = column(&s["bar_asc"], "bar")
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert!(
        asc.windows(2).all(|w| w[0] <= w[1]),
        "{page}: a second click: {asc:?}"
    );
    if n > 1 {
        assert_ne!(s["bar_asc"], s["first"], "{page}");
    }
    // the paths: both runs' columns, each step with its share bar; the new run's with a change
    // bar where the old run had the step
    let paths = r["diff_paths"].as_array().unwrap();
    assert_eq!(paths.len(), 2, "{page}");
    for (k, side) in paths.iter().enumerate() {
        let steps = side.as_array().unwrap();
        assert!(!steps.is_empty(), "{page}: side {k}");
        for st in steps {
            let bars = st["bars"].as_u64().unwrap();
            let want = if k == 1 && !st["change"].is_null() { 2 } else { 1 };
            assert_eq!(bars, want, "{page}: {st}");
        }
    }
}

#[test]
fn recorded_builds_in_a_browser() {
    let names = ["make-fails", "libffi-run1", "dash-subshell"];
    let pages: Vec<String> = names.iter().map(|n| tmp(&format!("{n}.html"))).collect();
    for (n, p) in names.iter().zip(&pages) {
        write_page(&["replay", &capture(n), "--tree", "none", "--quiet"], p, 0);
    }
    // and the page of `diff` between libffi's two runs, in the same browser
    let diff_page = tmp("diff.html");
    let out = Command::new(PROCTRACE)
        .args([
            "diff",
            &capture("libffi-run1"),
            &capture("libffi-run2"),
            "--html",
            &diff_page,
        ])
        .output()
        .unwrap();
    assert!(Path::new(&diff_page).exists(), "diff --html: {}", stderr(&out));
    // and of a diff between two different builds (the failing make, then libffi): long lists
    let diff2_page = tmp("diff2.html");
    let out = Command::new(PROCTRACE)
        .args([
            "diff",
            &capture("make-fails"),
            &capture("libffi-run1"),
            "--html",
            &diff2_page,
        ])
        .output()
        .unwrap();
    assert!(Path::new(&diff2_page).exists(), "diff --html: {}", stderr(&out));
    let mut refs: Vec<&str> = pages.iter().map(String::as_str).collect();
    refs.push(&diff_page);
    refs.push(&diff2_page);
    let mut got = check(&refs, &["--search", "cc1"]);
    assert_diff_sorts(&got.pop().unwrap());
    let diff = got.pop().unwrap();
    assert_diff_sorts(&diff);
    // libffi's two runs share their path's steps: the new run's mostly have change bars, the
    // configure's faster (run 2 took 5.12 s, not 5.65 s)
    let new_path = diff["diff_paths"][1].as_array().unwrap();
    let changed = new_path.iter().filter(|s| !s["change"].is_null()).count();
    assert!(changed * 2 > new_path.len(), "{new_path:?}");
    assert!(new_path[0]["change"].as_f64().unwrap() < -0.4, "{}", new_path[0]);
    assert!(diff["error"].is_null(), "{}", diff["error"]);
    for k in ["console_errors", "page_errors", "foreign_requests"] {
        assert_eq!(diff[k], serde_json::json!([]), "diff page: {k}");
    }
    assert_eq!(diff["diff"], true);
    let text = diff["text"].as_str().unwrap();
    let dj = embedded(&diff_page);
    assert_eq!(dj["format"], "proctrace-html-diff");
    // the page diff.js draws inside the run page's template: the run's parts hidden (no Gantt
    // toolbar in the text), both runs' wall time (the README: 5.65 s and 5.12 s), both critical
    // paths, the lists
    assert!(
        !text.contains("Expand all") && !text.contains("Processes over time"),
        "{text}"
    );
    assert!(text.contains("wall\t5.65s\t5.12s"), "{text}");
    assert!(text.contains("old (") && text.contains("new ("), "{text}");
    for side in ["old", "new"] {
        let first = &dj["diff"]["critical_path"][side][0]["argv"];
        assert_eq!(first[0], "sh", "{first}");
    }
    assert!(
        text.contains("./configure >/dev/null && make -j2 >/dev/null"),
        "{text}"
    );
    let failed = dj["diff"]["failed"].as_array().unwrap();
    assert!(!failed.is_empty(), "run 2's mkdir src/.libs failed");
    assert!(
        text.contains("failed now (1)") && text.contains("mkdir src/.libs"),
        "{text}"
    );
    let (before, after) = (
        diff["diff_rows"].as_u64().unwrap(),
        diff["search"]["rows"].as_u64().unwrap(),
    );
    assert!(after < before, "the search filters the lists: {before} → {after}");
    let datas: Vec<Value> = pages.iter().map(|p| embedded(p)).collect();
    for (r, d) in got.iter().zip(&datas) {
        assert_sound(r, d);
        println!("{}: loaded in {} ms", r["page"], r["load_ms"]);
        // the search field leaves exactly the processes that match, in the Gantt and tables
        let want = matching(d, "cc1");
        assert_eq!(r["search"]["rows"].as_u64(), Some(want), "{}: search", r["page"]);
        for c in r["search"]["slowest_commands"].as_array().unwrap() {
            assert!(
                c.as_str().unwrap().to_lowercase().contains("cc1") || want > 0,
                "{c}"
            );
        }
    }
    let counts: Vec<u64> = got.iter().map(|r| r["records"].as_u64().unwrap()).collect();
    assert_eq!(counts, [24, 3545, 3], "the fixtures' README's process counts");

    // make-fails: the failed compile is named, with its status, where a person starts reading
    let (mf, mfd) = (&got[0], &datas[0]);
    let text = mf["text"].as_str().unwrap();
    let causes = mfd["causes"].as_array().unwrap();
    assert_eq!(causes.len(), 1, "{causes:?}");
    let cause = string(mfd, &mfd["procs"][causes[0].as_u64().unwrap() as usize][6]);
    assert!(cause.contains("cc1") && cause.contains("f07.c"), "{cause}");
    assert!(text.contains(&format!("Cause: {cause} — exit 1")), "{text}");
    assert!(text.contains("Failed (exit 2)"), "{text}");
    let cc1 = mf["search"]["rows"].as_u64().unwrap();
    assert!((1..24).contains(&cc1), "{}", mf["search"]);

    // libffi: the critical path's steps a person is shown (every one longer than 0.5% of the run;
    // shorter ones are folded into a line) and the compile of closures.c that bounded make
    let (lf, lfd) = (&got[1], &datas[1]);
    let text = lf["text"].as_str().unwrap();
    let wall = lfd["run"]["wall_us"].as_i64().unwrap();
    let mut shown = 0;
    for s in lfd["path"].as_array().unwrap() {
        let (label, us) = image_label(
            lfd,
            s[0].as_u64().unwrap() as usize,
            s[1].as_u64().unwrap() as usize,
        );
        if us * 200 >= wall {
            assert!(
                text.contains(&label),
                "the path's step {label:?} ({us} µs) is not shown"
            );
            shown += 1;
        }
    }
    assert!(shown >= 5, "{shown} steps");
    assert!(
        text.contains("shorter steps"),
        "the short steps are folded into a line"
    );
    assert!(text.contains("../src/closures.c"), "closures.c");
    assert!(
        text.contains("bounded by parallelism: 2 job slots busy"),
        "the job-slot stretch"
    );
    // compiles by directory: libtool's gcc runs in the build directory on ../src/x86/*.c
    assert!(text.contains("Compiles by directory"), "{text}");
    assert!(text.contains("/tmp/fx23/libffi/src/x86\t"), "{text}");

    // dash-subshell: the subshell's two images (its fork image, then the exec of sleep 0.4)
    let (ds, dsd) = (&got[2], &datas[2]);
    let text = ds["text"].as_str().unwrap();
    let sub = dsd["procs"]
        .as_array()
        .unwrap()
        .iter()
        .position(|p| p[14] == 2)
        .expect("a process of two images");
    let (fork, _) = image_label(dsd, sub, 0);
    let (exec, _) = image_label(dsd, sub, 1);
    assert_eq!(exec, "/bin/sleep 0.4");
    assert!(fork.starts_with("[fork of "), "{fork}");
    assert!(text.contains(&fork) && text.contains(&exec), "{text}");
    // hovering the subshell's row at its start: its first image, which ran no exec of its own
    let tip = ds["tooltip"].as_str().unwrap();
    assert!(tip.contains(&format!("image 1 of 2: {fork}")), "{tip}");
    assert!(
        tip.contains("argv: none (it runs its parent’s program: sh -c"),
        "{tip}"
    );
    let slow: Vec<&str> = ds["slowest"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["command"].as_str().unwrap())
        .collect();
    assert_eq!(
        slow,
        ["/bin/sleep 0.4", "/bin/sleep 0.3"],
        "the fork image is left out for its child"
    );
}

#[test]
fn a_live_run_in_a_browser() {
    let page = tmp("live.html");
    // text that would be markup, and an image that would make a request, were it put as HTML
    let script = "/bin/sleep 0.05; /bin/echo '<b>x</b><img src=http://example.invalid/x.png>' >/dev/null; /bin/false || true";
    // ptrace reads every argv at its exec stop: the short echo's too, under any load
    write_page(
        &["run", "--backend", "ptrace", "--quiet", "--", "sh", "-c", script],
        &page,
        0,
    );
    let data = embedded(&page);
    let r = &check(&[&page], &["--search", "sleep"])[0];
    assert_sound(r, &data);
    println!("live page: loaded in {} ms", r["load_ms"]);
    let text = r["text"].as_str().unwrap();
    assert!(text.contains("Succeeded (exit 0)"), "{text}");
    // the traced text shown as text, not markup
    assert!(
        text.contains("/bin/echo '<b>x</b><img src=http://example.invalid/x.png>'"),
        "{text}"
    );
    assert!(text.contains("/bin/sleep 0.05"), "{text}");
    assert_eq!(r["search"]["rows"].as_u64(), Some(matching(&data, "sleep")));
    assert!(r["search"]["rows"].as_u64().unwrap() >= 1);
    // `false` exited 1 and the shell went on: a handled exit, in the failures table
    assert!(text.contains("handled\texit 1\t"), "{text}");
    assert!(text.contains("/bin/false"), "{text}");
}

#[test]
fn ten_thousand_processes_open() {
    let cap = tmp("10k.jsonl");
    let st = Command::new("python3")
        .arg(root().join("bench/summary-capture.py"))
        .args([&cap, "2500"])
        .status()
        .unwrap();
    assert!(st.success());
    let page = tmp("10k.html");
    write_page(&["replay", &cap, "--tree", "none", "--quiet"], &page, 0);
    let data = embedded(&page);
    let r = &check(&[&page], &["--search", "f123.c"])[0];
    assert_sound(r, &data);
    assert_eq!(r["records"].as_u64(), Some(10_001));
    println!(
        "10,001 processes: {} bytes, loaded in {} ms ({} ms in the page's script), search {} ms",
        std::fs::metadata(&page).unwrap().len(),
        r["load_ms"],
        r["setup_ms"],
        r["search"]["ms"]
    );
    // f123.c: the cc and its cc1 (as reads /tmp/cc123.s)
    assert_eq!(r["search"]["rows"].as_u64(), Some(matching(&data, "f123.c")));
    assert_eq!(r["search"]["rows"].as_u64(), Some(2));
}

/// The page of a diff whose new run ran a command with markup and a terminal escape in its argv:
/// shown as text, the escape as the `$'\x1b[2J'` word every other output shows, no request.
#[test]
fn a_hostile_diff_in_a_browser() {
    let (a, b) = (tmp("calm.jsonl"), tmp("hostile.jsonl"));
    let calm = "/bin/sleep 0.05; true";
    let hostile = "/bin/sleep 0.05; /bin/echo '<img src=http://example.invalid/x.png>' \"$(printf '\\033[2J')\" >/dev/null; true";
    for (out, script) in [(&a, calm), (&b, hostile)] {
        let o = Command::new(PROCTRACE)
            // ptrace reads every argv at its exec stop: the 2 ms echo's too, under any load
            .args([
                "run",
                "--backend",
                "ptrace",
                "--quiet",
                "--tree",
                "none",
                "-o",
                out,
            ])
            .args(["--", "sh", "-c", script])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let page = tmp("hostile-diff.html");
    let o = Command::new(PROCTRACE)
        .args(["diff", &a, &b, "--html", &page])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r = &check(&[&page], &["--search", "echo"])[0];
    assert_eq!(r["console_errors"].as_array().map(Vec::len), Some(0), "{r}");
    assert_eq!(r["page_errors"].as_array().map(Vec::len), Some(0), "{r}");
    assert_eq!(r["foreign_requests"].as_array().map(Vec::len), Some(0), "{r}");
    let text = r["text"].as_str().unwrap();
    // The echo, and the fork image of the `$(printf …)` subshell.
    assert!(
        text.contains("new (2)") && text.contains("[fork of sh]"),
        "{text}"
    );
    assert!(!text.contains("'[fork of sh]'"), "{text}");
    assert!(
        text.contains("/bin/echo '<img src=http://example.invalid/x.png>' $'\\x1b[2J'"),
        "{text}"
    );
    assert!(
        !text.contains('\u{1b}'),
        "the escape itself never reaches the page's text"
    );
}

/// `watch -p PID --html`: the page names the watched process and how it ended (not "still
/// running": the watch saw it exit), with every process it started.
#[test]
fn a_watched_process_in_a_browser() {
    let page = tmp("watch.html");
    let (out, pid) = watch_sh(
        "sleep 0.3; /bin/true; sleep 0.2; exit 3",
        &["--html", &page, "-q"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let data = embedded(&page);
    assert_eq!(data["run"]["mode"], "watch");
    assert_eq!(data["run"]["status"], "exit 3");
    assert_eq!(data["procs"][0][0], pid);
    let r = &check(&[&page], &["--search", "sleep"])[0];
    assert_sound(r, &data);
    let text = r["text"].as_str().unwrap();
    assert!(text.contains("Failed (exit 3)"), "{text}");
    assert!(
        text.contains("sh -c 'sleep 0.3; /bin/true; sleep 0.2; exit 3'"),
        "{text}"
    );
    assert!(!text.contains("Still running"), "{text}");
}

/// Seconds of `--summary-json` as the page's microseconds (its figures are the summary's, cut
/// to whole µs).
fn us_of(secs: &Value) -> i64 {
    (secs.as_f64().unwrap() * 1e6).round() as i64
}

/// The page's table `id` at load: its rows as `col key → cell` maps.
fn table_rows(r: &Value, id: &str) -> Vec<std::collections::HashMap<String, Value>> {
    let t = &r["tables"][id];
    let cols: Vec<String> = t["cols"]
        .as_array()
        .unwrap_or_else(|| panic!("no table {id}"))
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect();
    t["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            cols.iter()
                .cloned()
                .zip(row.as_array().unwrap().iter().cloned())
                .collect()
        })
        .collect()
}

/// A cell's number (`data-v`) or text.
fn cell_v(c: &Value) -> i64 {
    c["v"]
        .as_f64()
        .map_or_else(|| c["t"].as_str().unwrap().parse().unwrap(), |v| v as i64)
}

/// The page's tables and critical path say what `analyze --summary-json` of the same capture
/// says: the slowest images, by program, failures and causes, the hungriest by CPU and by
/// memory (names, pids, durations, counts, in the summary's order), and the same critical path
/// step for step.
#[test]
fn the_pages_tables_are_the_summarys() {
    let names = ["make-fails", "libffi-run1"];
    let pages: Vec<String> = names.iter().map(|n| tmp(&format!("agree-{n}.html"))).collect();
    let mut sums = Vec::new();
    for (n, p) in names.iter().zip(&pages) {
        write_page(&["replay", &capture(n), "--tree", "none", "--quiet"], p, 0);
        let json = tmp(&format!("agree-{n}.json"));
        let out = Command::new(PROCTRACE)
            .args([
                "analyze",
                "--summary-json",
                &json,
                "--tree",
                "none",
                "--quiet",
                &capture(n),
            ])
            .output()
            .unwrap();
        assert!(Path::new(&json).exists(), "analyze: {}", stderr(&out));
        sums.push(serde_json::from_str::<Value>(&std::fs::read_to_string(&json).unwrap()).unwrap());
    }
    let refs: Vec<&str> = pages.iter().map(String::as_str).collect();
    let got = check(&refs, &["--search", "cc1"]);
    for ((r, s), page) in got.iter().zip(&sums).zip(&pages) {
        let data = embedded(page);
        assert_sound(r, &data);
        // slowest: the summary's ten, then more of the same list
        let slow = table_rows(r, "slowest");
        let want = s["slowest"].as_array().unwrap();
        assert!(!want.is_empty() && slow.len() >= want.len(), "{page}: {slow:?}");
        for (row, w) in slow.iter().zip(want) {
            assert_eq!(
                cell_v(&row["pid"]),
                w["pid"].as_i64().unwrap(),
                "{page}: {row:?} vs {w}"
            );
            assert_eq!(row["program"]["t"], w["program"], "{page}: {row:?} vs {w}");
            assert!(
                (cell_v(&row["duration"]) - us_of(&w["duration_s"])).abs() <= 1,
                "{page}: {row:?} vs {w}"
            );
        }
        // by program: most total time first, ties by name (the summary's order)
        let mut progs: Vec<(&String, &Value)> = s["by_program"].as_object().unwrap().iter().collect();
        progs.sort_by(|a, b| {
            us_of(&b.1["total_s"])
                .cmp(&us_of(&a.1["total_s"]))
                .then(a.0.cmp(b.0))
        });
        let by = table_rows(r, "by-program");
        assert_eq!(by.len(), progs.len().min(20), "{page}");
        for (row, (name, w)) in by.iter().zip(&progs) {
            assert_eq!(
                row["program"]["t"].as_str(),
                Some(name.as_str()),
                "{page}: {row:?}"
            );
            assert_eq!(
                cell_v(&row["count"]),
                w["count"].as_i64().unwrap(),
                "{page}: {name}"
            );
            assert!(
                (cell_v(&row["total"]) - us_of(&w["total_s"])).abs() <= 1,
                "{page}: {name}"
            );
            if !w["cpu_s"].is_null() {
                assert!(
                    (cell_v(&row["cpu"]) - us_of(&w["cpu_s"])).abs() <= 1,
                    "{page}: {name}"
                );
            }
        }
        // failures and causes: the causes, then the other failures, then the handled exits,
        // each in the summary's order (start, then pid)
        let pids = |v: &Value, pick: &dyn Fn(&Value) -> bool| -> Vec<i64> {
            v.as_array()
                .unwrap()
                .iter()
                .filter(|f| pick(f))
                .map(|f| f["pid"].as_i64().unwrap())
                .collect()
        };
        let causes = pids(&s["causes"], &|_| true);
        let mut want = causes.clone();
        want.extend(pids(&s["failures"], &|f| {
            !causes.contains(&f["pid"].as_i64().unwrap())
        }));
        want.extend(pids(&s["nonzero_exits"], &|f| f["handled"] == true));
        let fails: Vec<i64> = table_rows(r, "failures")
            .iter()
            .map(|row| cell_v(&row["pid"]))
            .collect();
        assert_eq!(fails, want[..want.len().min(20)], "{page}");
        let kinds: Vec<String> = table_rows(r, "failures")
            .iter()
            .take(causes.len())
            .map(|row| row["rank"]["t"].as_str().unwrap().to_string())
            .collect();
        assert!(kinds.iter().all(|k| k == "cause"), "{page}: {kinds:?}");
        // the hungriest: the summary's five by CPU and by peak RSS
        for (id, list, key, json) in [
            ("hungry-cpu", "top_cpu", "cpu", "cpu_s"),
            ("hungry-mem", "top_rss", "rss", "max_rss_kib"),
        ] {
            let rows = table_rows(r, id);
            let want = s[list].as_array().unwrap();
            assert_eq!(want.len(), 5, "{page}: {list}");
            for (row, w) in rows.iter().zip(want) {
                assert_eq!(
                    cell_v(&row["pid"]),
                    w["pid"].as_i64().unwrap(),
                    "{page}: {id} {row:?} vs {w}"
                );
                let v = if json == "cpu_s" {
                    us_of(&w[json])
                } else {
                    w[json].as_i64().unwrap()
                };
                assert!((cell_v(&row[key]) - v).abs() <= 1, "{page}: {id} {row:?} vs {w}");
            }
        }
        // libffi's biggest compile is named as the summary names it: cc1 doing gcc's work
        if page.contains("libffi") {
            let first = &table_rows(r, "hungry-cpu")[0]["command"]["t"];
            assert!(first.as_str().unwrap().starts_with("cc1, for: gcc "), "{first}");
        }
        // the critical path: the same steps, in order, each its pid, program and time
        let steps = r["path_steps"].as_array().unwrap();
        let want = s["critical_path"].as_array().unwrap();
        assert!(!want.is_empty(), "{page}");
        assert_eq!(
            steps.len(),
            want.len(),
            "{page}: every step listed once its lines are opened"
        );
        for (k, (st, w)) in steps.iter().zip(want).enumerate() {
            assert_eq!(st[0].as_u64(), Some(k as u64), "{page}");
            let d = &data["path"][k];
            let proc = d[0].as_i64().unwrap();
            assert!(proc >= 0, "{page}: step {k} has its record");
            assert_eq!(data["procs"][proc as usize][0], w["pid"], "{page}: step {k}");
            assert!(
                (d[5].as_i64().unwrap() - us_of(&w["duration_s"])).abs() <= 1,
                "{page}: step {k}"
            );
            let label = st[1].as_str().unwrap();
            let program = w["program"].as_str().unwrap();
            assert!(
                label.contains(program.trim_start_matches("[fork of ").trim_end_matches(']')),
                "{page}: step {k}: {label:?} vs {program}"
            );
        }
    }
}

/// `run --trace2 --html` of a real git: git's own regions are in the page's data, inside the
/// git process, drawn in its row (the canvas is a region's green there) and named by the
/// tooltip when hovered.
#[test]
fn git_trace2_regions_inside_their_process() {
    let dir = tmp("t2repo");
    std::fs::create_dir_all(&dir).unwrap();
    let git = |args: &[&str]| {
        let st = Command::new("git")
            .current_dir(&dir)
            .args(args)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env_remove("GIT_TRACE2_EVENT")
            .status()
            .unwrap();
        assert!(st.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    for i in 0..20 {
        std::fs::write(Path::new(&dir).join(format!("f{i}")), format!("{i}\n")).unwrap();
    }
    git(&["add", "."]);
    git(&["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c"]);
    let page = tmp("trace2.html");
    let out = Command::new(PROCTRACE)
        .args([
            "run",
            "--backend",
            "ptrace",
            "--trace2",
            "--tree",
            "none",
            "--quiet",
            "--html",
            &page,
        ])
        // under a shell, so the git process is a child (the slowest list leaves the root out)
        .args([
            "--",
            "sh",
            "-c",
            &format!("git -C {dir} status --porcelain; true"),
        ])
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env_remove("GIT_TRACE2_EVENT")
        .env_remove("GIT_TRACE2_PARENT_SID")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let data = embedded(&page);
    let regions = data["regions"].as_array().unwrap();
    assert!(!regions.is_empty(), "no region in the data: {}", stderr(&out));
    // every region is the git process's, within its life, with its category and label
    for g in regions {
        let p = &data["procs"][g[0].as_u64().unwrap() as usize];
        assert_eq!(string(&data, &p[7][0]), "git", "{g}");
        let (s, e) = (g[1].as_i64().unwrap(), g[2].as_i64().unwrap());
        assert!(
            p[2].as_i64().unwrap() <= s && s <= e && e <= p[3].as_i64().unwrap(),
            "{g} in {p}"
        );
        let name = string(&data, &g[3]);
        let (cat, label) = (string(&data, &g[6]), string(&data, &g[7]));
        assert_eq!(name, format!("{cat}:{label}"), "{g}");
    }
    assert!(
        regions
            .iter()
            .any(|g| string(&data, &g[3]) == "index:do_read_index"),
        "git status reads its index"
    );
    let r = &check(&[&page], &["--search", "git"])[0];
    assert_sound(r, &data);
    let reg = &r["region"];
    let name = reg["name"].as_str().unwrap();
    let tip = reg["tooltip"]
        .as_str()
        .unwrap_or_else(|| panic!("not hovered: {reg}"));
    assert!(tip.starts_with(&format!("Trace2 region {name}\n")), "{tip}");
    assert!(
        tip.contains("category: ") && tip.contains("time: ") && tip.contains("nesting "),
        "{tip}"
    );
    assert!(
        tip.contains("in the process\ngit -C "),
        "the process below it: {tip}"
    );
    // the region's own colour at its middle: one of the greens, not the bar's blue
    let px: Vec<u64> = reg["pixel"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert!(px[1] > px[0] + 40 && px[1] > px[2] + 20, "{px:?} at {reg}");
    let text = r["text"].as_str().unwrap();
    assert!(
        text.contains("git Trace2 region (inside its process)"),
        "the legend"
    );
}

/// A path as the page shows it, from the summary JSON's: the control characters the trace's
/// text keeps as they are escaped as every output for people escapes them (a byte that is not
/// UTF-8 is `\xNN` in both).
fn people(p: &str) -> String {
    p.replace('\n', "\\n").replace('\u{1b}', "\\e")
}

/// `run --files --html --summary-json` of a real `make -j2` over a generated C project: the
/// page's files tables are the summary's (its most-read files, each produced file's producers
/// and consumers); hovering and clicking a compile shows its headers and its object; the links
/// of a producer and a consumer select those processes, a file's link shows the processes that
/// used it; a file named with markup, a newline, a terminal escape and a byte that is not UTF-8
/// is text. And `diff --html` of that run against the one before it says which commands newly
/// read a file.
#[test]
fn files_in_a_browser() {
    use crate::files::{c_project, run_files};
    let dir = c_project(6);
    let make = |args: &[&str]| {
        let st = Command::new("make")
            .args(args)
            .current_dir(&dir)
            .status()
            .unwrap();
        assert!(st.success(), "make {args:?}");
    };
    // The link step also runs `sh step.sh`: in the old run it writes a plain file and reads it
    // back, in the new one it writes a file whose name holds markup, a newline, an escape and
    // the byte 0xff, which cat then reads. (`31m-red`, not `31mred`: under /tmp, where a CI
    // clone's test files are, `diff` shows a word of letters and digits as a temp name.)
    let step = format!("{dir}/step.sh");
    std::fs::write(&step, "echo x > plain.txt\nread x < plain.txt\n").unwrap();
    let mk = std::fs::read_to_string(format!("{dir}/Makefile")).unwrap();
    assert!(mk.contains("\tcc -o $@ $^\n"), "{mk}");
    std::fs::write(
        format!("{dir}/Makefile"),
        mk.replace("\tcc -o $@ $^\n", "\tcc -o $@ $^\n\tsh step.sh\n"),
    )
    .unwrap();
    let old = tmp("files-old.jsonl");
    let o = run_files("ptrace", &dir, &old, &[], &["make", "-j2", "-s"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    make(&["-s", "clean"]);
    // The new run: f3.c also includes extra.h, and the hostile name.
    std::fs::write(format!("{dir}/extra.h"), "#define EXTRA 1\n").unwrap();
    std::fs::write(
        format!("{dir}/f3.c"),
        "#include \"common.h\"\n#include \"h3.h\"\n#include \"extra.h\"\n#include <stdio.h>\nint f3(void) { return COMMON + EXTRA; }\n",
    )
    .unwrap();
    std::fs::write(
        &step,
        "d='h<script>alert(1)<'\nmkdir -p \"$d\"\nf=\"$d/$(printf 'script>\\n\\033[31m-red\\377.txt')\"\necho x > \"$f\"\ncat \"$f\" >/dev/null\n",
    )
    .unwrap();
    let (new, page, summary) = (
        tmp("files-new.jsonl"),
        tmp("files.html"),
        tmp("files-summary.json"),
    );
    let o = run_files(
        "ptrace",
        &dir,
        &new,
        &["--html", &page, "--summary-json", &summary],
        &["make", "-j2", "-s"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let hostile = format!("{dir}/h<script>alert(1)</script>\\n\\e[31m-red\\xff.txt");
    let diff_page = tmp("files-diff.html");
    let o = Command::new(PROCTRACE)
        .args(["diff", &old, &new, "--html", &diff_page])
        .output()
        .unwrap();
    assert!(Path::new(&diff_page).exists(), "diff --html: {}", stderr(&o));
    let dj = Command::new(PROCTRACE)
        .args(["diff", "--json", &old, &new])
        .output()
        .unwrap();
    let dj: Value = serde_json::from_slice(&dj.stdout).unwrap();

    let data = embedded(&page);
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    let (f, sf) = (&data["files"], &s["files"]);
    assert_eq!(data["version"], 2);
    for k in ["processes", "read", "written", "created", "deleted", "renamed"] {
        assert_eq!(f[k], sf[k], "{k}");
    }
    assert_eq!(
        (f["lost"].as_u64(), f["dropped"].as_u64()),
        (Some(0), Some(0)),
        "{f}"
    );
    let procs = data["procs"].as_array().unwrap();
    let pid = |i: &Value| procs[i.as_u64().unwrap() as usize][0].clone();
    let pids = |l: &Value| -> Vec<Value> { l.as_array().unwrap().iter().map(pid).collect() };
    let label = |i: u64| string(&data, &procs[i as usize][6]);
    // The data's produced files are the summary's, record for pid.
    let produced = f["produced"].as_array().unwrap();
    let sp = sf["produced"].as_array().unwrap();
    assert_eq!(produced.len(), sp.len());
    for (x, w) in produced.iter().zip(sp) {
        assert_eq!(
            string(&data, &x[0]),
            people(w["path"].as_str().unwrap()),
            "{x} vs {w}"
        );
        assert_eq!(pids(&x[1]), *w["producers"].as_array().unwrap(), "{w}");
        assert_eq!(pids(&x[2]), *w["consumers"].as_array().unwrap(), "{w}");
    }
    // The hostile file: written by sh, read by cat, its name escaped in the data.
    let h = produced
        .iter()
        .find(|x| string(&data, &x[0]) == hostile)
        .unwrap_or_else(|| panic!("{hostile:?} produced: {sf}"));
    assert_eq!(label(h[1][0].as_u64().unwrap()), "sh step.sh", "{h}");
    assert!(label(h[2][0].as_u64().unwrap()).starts_with("cat "), "{h}");

    let got = check(
        &[&page, &diff_page],
        &["--search", "cc1", "--select", "cc -c -o f3.o f3.c"],
    );
    let (r, dr) = (&got[0], &got[1]);
    assert_sound(r, &data);
    assert_eq!(r["scripts"], 2, "the page's own two script elements, no other");
    let text = r["text"].as_str().unwrap();
    // The header and the section say the summary's counts.
    let line = format!("{} read, {} written", sf["read"], sf["written"]);
    assert!(text.contains(&format!("\nfiles\n{line}\n")), "{text}");
    assert!(
        text.contains(&format!("{line}, {} created", sf["created"])),
        "{text}"
    );
    // Most-read: the summary's ten first, each its readers.
    let read = table_rows(r, "files-read");
    let want = sf["most_read"].as_array().unwrap();
    assert_eq!(want.len(), 10);
    assert!(read.len() >= want.len(), "{read:?}");
    for (row, w) in read.iter().zip(want) {
        assert_eq!(row["path"]["title"], w["path"], "{row:?} vs {w}");
        assert_eq!(cell_v(&row["readers"]), w["readers"].as_i64().unwrap(), "{row:?}");
    }
    // Produced and consumed: the summary's list in its order, each row's producers and first
    // consumers linked, its count whole.
    let rows = table_rows(r, "files-produced");
    assert_eq!(rows.len(), sp.len().min(20));
    let linked = |c: &Value| -> Vec<Value> {
        c["procs"]
            .as_array()
            .map(|l| l.iter().map(pid).collect())
            .unwrap_or_default()
    };
    for (row, w) in rows.iter().zip(sp) {
        let path = people(w["path"].as_str().unwrap());
        assert_eq!(row["path"]["title"].as_str(), Some(path.as_str()), "{row:?}");
        let (producers, consumers) = (
            w["producers"].as_array().unwrap(),
            w["consumers"].as_array().unwrap(),
        );
        assert_eq!(
            linked(&row["producer"]),
            producers[..producers.len().min(3)],
            "{path}"
        );
        assert_eq!(
            linked(&row["consumer"]),
            consumers[..consumers.len().min(3)],
            "{path}"
        );
        assert_eq!(cell_v(&row["count"]), consumers.len() as i64, "{path}");
    }
    // The hostile name is text: escaped, whole in the cell's title, no escape or newline of its
    // own, no element made of it.
    assert!(
        text.contains("h<script>alert(1)</script>\\n\\e[31m-red\\xff.txt"),
        "{rows:?}\n{sp:?}"
    );
    assert!(
        !text.contains('\u{1b}'),
        "the escape itself never reaches the page"
    );
    assert!(
        rows.iter()
            .any(|row| row["path"]["title"].as_str() == Some(hostile.as_str())),
        "{rows:?}"
    );

    // Hovering the compile of f3.c: what it and its cc1 and as read and wrote.
    let fr = &r["files"];
    let tip = fr["hover"]["tooltip"].as_str().unwrap();
    assert!(tip.starts_with("cc -c -o f3.o f3.c\n"), "{tip}");
    let reads = tip
        .lines()
        .find(|l| l.starts_with("reads: "))
        .unwrap_or_else(|| panic!("{tip}"));
    // the build's own files first, named from the compile's directory
    assert!(
        reads.starts_with("reads: f3.c, common.h, h3.h, extra.h, … ("),
        "{tip}"
    );
    let writes = tip
        .lines()
        .find(|l| l.starts_with("writes: "))
        .unwrap_or_else(|| panic!("{tip}"));
    assert!(writes.ends_with(", f3.o"), "{tip}");
    // Clicking it selects it: the panel lists cc1's headers and as's object, the object consumed
    // by the link's ld (the summary's consumers of f3.o).
    let c = &fr["click"];
    let me = fr["hover"]["proc"].as_u64().unwrap();
    assert_eq!(c["selected"].as_u64(), Some(me), "{c}");
    let list = |k: &str| c["lists"][k].as_array().cloned().unwrap_or_default();
    let by = |e: &Value| label(e["proc"].as_u64().unwrap());
    for hdr in ["f3.c", "common.h", "h3.h", "extra.h"] {
        let p = format!("{dir}/{hdr}");
        let e = list("read")
            .into_iter()
            .find(|e| e["path"] == p.as_str())
            .unwrap_or_else(|| panic!("{p} in {c}"));
        assert!(by(&e).contains("cc1 "), "{e}");
    }
    assert!(
        list("read").iter().any(|e| e["path"] == "/usr/include/stdio.h"),
        "{c}"
    );
    let obj = format!("{dir}/f3.o");
    let e = list("written")
        .into_iter()
        .find(|e| e["path"] == obj.as_str())
        .unwrap_or_else(|| panic!("{obj} in {c}"));
    assert!(by(&e).starts_with("as "), "{e}");
    let w = sp.iter().find(|w| w["path"] == obj.as_str()).unwrap();
    assert_eq!(pids(&e["rel"]), *w["consumers"].as_array().unwrap(), "{e} vs {w}");
    // Its files graph: nothing it read came from outside it; its object went to the link.
    assert_eq!(c["graph"], e["rel"], "{c}");
    // Its cc1's reads in the panel are the summary's count for it.
    let cc1 = list("read")
        .iter()
        .find(|e| e["path"] == format!("{dir}/f3.c").as_str())
        .map(|e| e["proc"].clone())
        .unwrap();
    let n = list("read").iter().filter(|e| e["proc"] == cc1).count();
    let bp = sf["by_process"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["pid"] == pid(&cc1))
        .unwrap();
    assert_eq!(bp["read"].as_u64(), Some(n as u64), "{bp}");
    // The first produced file's producer and consumer links select those processes.
    for (k, key) in [("producer_link", "producers"), ("consumer_link", "consumers")] {
        let l = &fr[k];
        assert_eq!(l["selected"], l["link"], "{k}: {l}");
        assert_eq!(pid(&l["link"]), sp[0][key][0], "{k}: {l}");
        assert_eq!(
            l["detail"].as_str(),
            Some(label(l["link"].as_u64().unwrap()).as_str()),
            "{k}: the panel shows it"
        );
    }
    // The most-read file's link: the chart shows the processes that used it, then every one.
    let fl = &fr["file_link"];
    let k = fl["path"].as_u64().unwrap();
    let users = f["uses"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| {
            let u = u.as_array().unwrap();
            let mut q = 1;
            let mut hit = false;
            while q + 2 < u.len() {
                hit |= u[q + 2].as_u64() == Some(k);
                q += if u[q] == 3 { 4 } else { 3 };
            }
            hit
        })
        .count() as u64;
    assert_eq!(string(&data, &Value::from(k)), want[0]["path"].as_str().unwrap());
    assert!(users >= want[0]["readers"].as_u64().unwrap(), "{fl}");
    assert_eq!(fl["file"][1].as_u64(), Some(users), "{fl}");
    assert_eq!(fl["rows"].as_u64(), Some(users), "{fl}");
    assert_eq!(fr["file_cleared"]["rows"].as_u64(), Some(procs.len() as u64));

    // Directories summarised (docs/files.md): the data's whole-run lists are the summary's
    // `directories`, entry for entry; the by-directory table shows them.
    let dd = f["dirs"].as_array().unwrap();
    let sd = &sf["directories"];
    assert_eq!(f["more_than"], sd["more_than"], "{sd}");
    assert_eq!(string(&data, &f["project"]), format!("{dir}/"));
    let want_dirs: Vec<(u64, String, bool, u64, u64)> = [(0, "read"), (1, "written")]
        .into_iter()
        .flat_map(|(a, k)| {
            sd[k].as_array().unwrap().iter().map(move |e| {
                (
                    a,
                    people(e["path"].as_str().unwrap()),
                    e["dir"].as_bool().unwrap(),
                    e["files"].as_u64().unwrap(),
                    e["processes"].as_u64().unwrap(),
                )
            })
        })
        .collect();
    let got_dirs: Vec<(u64, String, bool, u64, u64)> = dd
        .iter()
        .map(|e| {
            (
                e[0].as_u64().unwrap(),
                string(&data, &e[1]),
                e[2] == 1,
                e[3].as_u64().unwrap(),
                e[4].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got_dirs, want_dirs);
    let rows = table_rows(r, "files-dirs");
    assert!(!rows.is_empty());
    for row in &rows {
        let path = row["path"]["title"].as_str().unwrap();
        let access = if row["access"]["t"] == "read" { 0 } else { 1 };
        assert!(
            got_dirs.iter().any(|d| d.0 == access
                && d.1 == path
                && d.3 as i64 == cell_v(&row["files"])
                && d.4 as i64 == cell_v(&row["processes"])),
            "{row:?}"
        );
    }
    // Its first (largest) directory's link: the chart shows the processes that used a file in
    // it, as many as the data's uses say.
    let dl = &fr["dir_link"];
    let d0 = dl["dir"].as_str().unwrap();
    assert!(d0.ends_with('/'), "{dl}");
    let in_dir = |k: u64| {
        let p = string(&data, &Value::from(k));
        p.rfind('/').is_some_and(|i| &p[..=i] == d0)
    };
    let users = f["uses"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| {
            let u = u.as_array().unwrap();
            let mut q = 1;
            let mut hit = false;
            while q + 2 < u.len() {
                hit |= in_dir(u[q + 2].as_u64().unwrap());
                q += if u[q] == 3 { 4 } else { 3 };
            }
            hit
        })
        .count() as u64;
    assert!(users > 1, "{dl}");
    assert_eq!(dl["file"][1].as_u64(), Some(users), "{dl}");
    assert_eq!(dl["rows"].as_u64(), Some(users), "{dl}");
    // The compile's panel as it shows: each directory holding more than 3 of the distinct files
    // its subtree read (the project's aside) on one closed row with their count, the rest one
    // by one; opened, its rows are every use (the lists above).
    let closed = &fr["closed"];
    let mut by_dir: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
        Default::default();
    for e in list("read") {
        let p = e["path"].as_str().unwrap();
        if !p.starts_with(&format!("{dir}/")) {
            by_dir
                .entry(p[..=p.rfind('/').unwrap()].to_string())
                .or_default()
                .insert(p.to_string());
        }
    }
    let want: Vec<(String, u64)> = by_dir
        .iter()
        .filter(|(_, v)| v.len() > 3)
        .map(|(d, v)| (d.clone(), v.len() as u64))
        .collect();
    let mut got: Vec<(String, u64)> = closed["dirs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["access"] == "read")
        .map(|d| {
            (
                d["dir"].as_str().unwrap().to_string(),
                d["files"].as_u64().unwrap(),
            )
        })
        .collect();
    got.sort();
    assert!(!want.is_empty(), "{by_dir:?}");
    assert_eq!(got, want, "{closed}");
    assert!(
        closed["dirs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["open"] == false),
        "{closed}"
    );
    let closed_rows = closed["lists"]["read"].as_array().unwrap();
    let collapsed: u64 = want.iter().map(|w| w.1).sum();
    assert!(
        closed_rows.len() + want.len() < list("read").len(),
        "fewer lines than uses: {} + {} vs {}",
        closed_rows.len(),
        want.len(),
        list("read").len()
    );
    assert!(collapsed > 3, "{want:?}");
    assert!(
        closed["text"].as_str().unwrap().contains(&format!(
            "{} directories holding more than 3 of the files on a line each",
            want.len()
        )) || want.len() == 1,
        "{}",
        closed["text"]
    );

    // The diff: the compile of f3.c newly reads extra.h; as many rows as `diff --json` has.
    assert!(dr["error"].is_null(), "{}", dr["error"]);
    for k in ["console_errors", "page_errors", "foreign_requests"] {
        assert_eq!(dr[k], serde_json::json!([]), "diff page: {k}");
    }
    assert_eq!(dr["scripts"], 2);
    let changes = dj["files"].as_array().unwrap();
    assert!(!changes.is_empty(), "{dj}");
    let t = &dr["tables"]["diff-files"];
    assert_eq!(
        t["count"].as_str(),
        Some(format!("({})", changes.len()).as_str()),
        "{t}"
    );
    let rows = table_rows(dr, "diff-files");
    let f3 = rows
        .iter()
        .find(|row| {
            let c = row["command"]["t"].as_str().unwrap();
            c.contains("cc1") && c.contains(" f3.c")
        })
        .unwrap_or_else(|| panic!("the compile of f3.c: {rows:?}"));
    let paths = f3["paths"]["t"].as_str().unwrap();
    assert!(
        paths.contains("+ read ") && paths.contains("/proj/extra.h"),
        "{paths}"
    );
    assert_eq!(cell_v(&f3["newly_read_count"]), 1, "{f3:?}");
    // `sh step.sh` newly writes the hostile name, no longer the plain one: as text.
    let sh = rows
        .iter()
        .find(|row| row["command"]["t"] == "sh step.sh")
        .unwrap_or_else(|| panic!("sh step.sh: {rows:?}"));
    let paths = sh["paths"]["t"].as_str().unwrap();
    assert!(
        paths.contains("+ wrote ") && paths.contains("h<script>alert(1)</script>\\n\\e[31m-red\\xff.txt"),
        "{paths}"
    );
    assert!(
        paths.contains("− wrote ") && paths.contains("/plain.txt"),
        "{paths}"
    );
    assert!(!dr["text"].as_str().unwrap().contains('\u{1b}'));
}
