//! The page's data and template, from recorded captures (the page itself is tested in a real
//! browser: tests/it/html.rs).
use serde_json::Value;

use super::*;
use crate::cmd::replay::{parse_capture, replay};
use crate::sink::Fanout;

/// The data of a recorded capture, parsed back, and the page.
fn of(dir: &str, name: &str) -> (Value, String) {
    let path = format!("{}/tests/fixtures/{dir}/{name}.jsonl", env!("CARGO_MANIFEST_DIR"));
    let cap = parse_capture(std::fs::read(&path).unwrap().as_slice(), &path).unwrap();
    let h = cap
        .header
        .clone()
        .unwrap_or_else(|| crate::testkit::header(0, &[name]));
    let root = cap.command_pid();
    let (engine, sum) = replay(&cap, root, Fanout::new(), h.clone());
    let run = FinishedRun::new(
        &h,
        &engine.tracker,
        &sum,
        &crate::output::Settings {
            redact: true,
            ..Default::default()
        },
    );
    let page = render(&run);
    let d = data(&h, &engine.tracker, &sum, run.report(), true);
    (
        serde_json::from_str(&d).unwrap_or_else(|e| panic!("{name}: {e}\n{d}")),
        page,
    )
}

#[test]
fn the_failing_make_has_every_process_its_outcomes_and_its_cause() {
    let (d, page) = of("builds", "make-fails");
    assert_eq!(d["format"], "proctrace-html");
    assert_eq!(d["version"], 2);
    let procs = d["procs"].as_array().unwrap();
    assert_eq!(procs.len() as u64, d["run"]["processes"].as_u64().unwrap());
    assert_eq!(procs.len(), 24);
    assert_eq!(d["run"]["status"], "exit 2");
    assert_eq!(d["run"]["ok"], false);
    let s = |i: &Value| {
        d["strings"][i.as_u64().unwrap() as usize]
            .as_str()
            .unwrap()
            .to_string()
    };
    // Tree order: the root first, a parent before each child.
    assert_eq!(procs[0][1], -1);
    for (i, p) in procs.iter().enumerate().skip(1) {
        assert!(p[1].as_i64().unwrap() < i as i64, "{p}");
    }
    // The cause: cc1 of f07 (27913), a failure (outcome 1), exit 1.
    let causes: Vec<i64> = d["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| procs[c.as_u64().unwrap() as usize][0].as_i64().unwrap())
        .collect();
    assert_eq!(causes, [27913]);
    let f07 = procs.iter().find(|p| p[0] == 27911).unwrap();
    assert_eq!((f07[4].as_i64(), f07[5].as_i64()), (Some(1), Some(1)));
    assert_eq!(s(&f07[6]), "gcc -O2 -Wall -c f07.c -o f07.o");
    assert!(
        page.contains("<title>proctrace: make -j2</title>"),
        "{}",
        &page[..400]
    );
}

#[test]
fn the_held_out_subshell_has_two_images_and_its_path() {
    let (d, _) = of("builds", "dash-subshell");
    let procs = d["procs"].as_array().unwrap();
    let sub = procs.iter().find(|p| p[0] == 27996).unwrap();
    assert_eq!(sub[14], 2);
    let first = sub[13].as_u64().unwrap() as usize;
    let ims = d["images"].as_array().unwrap();
    let (a, b) = (&ims[first], &ims[first + 1]);
    assert_eq!((a[4].as_u64(), b[4].as_u64()), (Some(1), Some(0)));
    let dur = |im: &Value| (im[1].as_i64().unwrap() - im[0].as_i64().unwrap()) as f64 / 1e6;
    assert!(
        (dur(a) - 0.3).abs() < 0.05 && (dur(b) - 0.4).abs() < 0.05,
        "{a} {b}"
    );
    assert_eq!(d["strings"][b[2].as_u64().unwrap() as usize], "/bin/sleep 0.4");
    // The path: sh -c, the fork image, sleep 0.3, sleep 0.4.
    let path: Vec<(i64, u64)> = d["path"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                procs[s[0].as_u64().unwrap() as usize][0].as_i64().unwrap(),
                s[1].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(path, [(27994, 0), (27996, 0), (27997, 0), (27996, 1)]);
}

#[test]
fn libffi_has_its_stretch_bounded_by_job_slots_and_is_proportionate() {
    let (d, page) = of("builds", "libffi-run1");
    assert_eq!(d["procs"].as_array().unwrap().len(), 3545);
    let par = &d["parallel"][0];
    assert_eq!(par[1], 2);
    let job = par[4].as_i64().unwrap();
    assert!(job >= 0);
    let argv = d["procs"][job as usize][7].as_array().unwrap();
    let words: Vec<&str> = argv
        .iter()
        .map(|w| d["strings"][w.as_u64().unwrap() as usize].as_str().unwrap())
        .collect();
    assert!(words.contains(&"../src/closures.c"), "{words:?}");
    // The Gantt's row labels of the compiles name their files.
    let row = |p: &Value| {
        d["strings"][p[15].as_u64().unwrap() as usize]
            .as_str()
            .unwrap()
            .to_string()
    };
    let gcc: Vec<String> = d["procs"]
        .as_array()
        .unwrap()
        .iter()
        .map(row)
        .filter(|l| l.starts_with("gcc ") && l.contains("closures.c"))
        .collect();
    assert!(gcc.len() >= 2, "{gcc:?}");
    assert!(
        gcc.iter().all(|l| crate::model::naming::width(l) <= ROW_LABEL),
        "{gcc:?}"
    );
    // Proportionate: the page (data, code and all) under the size of the JSON Lines.
    let jsonl = std::fs::metadata(format!(
        "{}/tests/fixtures/builds/libffi-run1.jsonl",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
    .len();
    assert!((page.len() as u64) < jsonl, "{} vs {jsonl}", page.len());
}

/// A traced process's text cannot end the data's `<script>` or open a comment, and a
/// placeholder in it stays text.
#[test]
fn hostile_text_stays_data() {
    let mut out = String::new();
    push_json_str(&mut out, "</script><!-- {{SCRIPT}} & \u{2028}\u{1b}");
    assert!(
        !out.contains('<') && !out.contains('>') && !out.contains('&'),
        "{out}"
    );
    let back: String = serde_json::from_str(&out).unwrap();
    assert_eq!(back, "</script><!-- {{SCRIPT}} & \u{2028}\u{1b}");
    let p = page("a <b> & \"c\"", &out);
    assert!(
        p.contains("<title>a &lt;b&gt; &amp; &quot;c&quot;</title>"),
        "{}",
        &p[..300]
    );
    assert_eq!(p.matches(SCRIPT).count(), 1);
    assert!(p.contains(&out));
}

/// The CSP names the SHA-256 of the exact style and script in the page.
#[test]
fn the_csp_allows_only_the_pages_own_code() {
    let p = page("t", "{}");
    let hash = |s: &str| base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(s.as_bytes()));
    let csp = p
        .split("http-equiv=\"Content-Security-Policy\" content=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap();
    assert!(csp.starts_with("default-src &apos;none&apos;"), "{csp}");
    let script = p
        .split("<script>")
        .nth(1)
        .and_then(|r| r.split("</script>").next())
        .unwrap();
    let style = p
        .split("<style>")
        .nth(1)
        .and_then(|r| r.split("</style>").next())
        .unwrap();
    assert!(csp.contains(&format!("sha256-{}", hash(script))), "{csp}");
    assert!(csp.contains(&format!("sha256-{}", hash(style))), "{csp}");
    for attr in ["src=", "href=", "url("] {
        assert!(
            !p.contains(&format!("{attr}\"http")) && !p.contains(&format!("{attr}http")),
            "{attr}"
        );
    }
}

/// A trace with files: each process's uses (a rename's new path after its path), the files
/// read by most processes first, each produced file with its producers and consumers as the
/// summary's files report has them, paths as escaped text.
#[test]
fn files_are_each_processs_uses_and_the_summarys_lists() {
    let cap = br#"{"e":"header","header":{"mode":{"run":{"argv":["sh"]}},"ts":0,"real_minus_mono":0,"tool":{"pid":1,"argv":["proctrace"],"version":"0","parent_sid":null},"backend":"connector","files":true}}
{"e":"root","tgid":100}
{"e":"fork","ts":1000000,"parent_tgid":1,"child_pid":100,"child_tgid":100}
{"e":"exec","ts":1100000,"tgid":100}
{"e":"exec_details","tgid":100,"details":{"argv":["sh"],"exe":"/bin/sh","cwd":"/w","uid":0,"comm":"sh"}}
{"e":"fork","ts":2000000,"parent_tgid":100,"child_pid":101,"child_tgid":101}
{"e":"exec","ts":2100000,"tgid":101}
{"e":"exec_details","tgid":101,"details":{"argv":["gen"],"exe":"/bin/gen","cwd":"/w","uid":0,"comm":"gen"}}
{"e":"file","ts":2200000,"tgid":101,"access":"create","path":"/w/x.tmp"}
{"e":"file","ts":2300000,"tgid":101,"access":"write","path":"/w/x.h"}
{"e":"file","ts":2400000,"tgid":101,"access":"rename","path":"/w/x.tmp","to":"/w/x2"}
{"e":"exit","ts":3000000,"pid":101,"tgid":101,"status":0,"parent_tgid":100}
{"e":"fork","ts":4000000,"parent_tgid":100,"child_pid":102,"child_tgid":102}
{"e":"exec","ts":4100000,"tgid":102}
{"e":"exec_details","tgid":102,"details":{"argv":["cc"],"exe":"/bin/cc","cwd":"/w","uid":0,"comm":"cc"}}
{"e":"file","ts":4200000,"tgid":102,"access":"read","path":"/w/y<b>\n.c"}
{"e":"file","ts":4300000,"tgid":102,"access":"read","path":"/w/x.h"}
{"e":"exit","ts":5000000,"pid":102,"tgid":102,"status":0,"parent_tgid":100}
{"e":"fork","ts":6000000,"parent_tgid":100,"child_pid":103,"child_tgid":103}
{"e":"exec","ts":6100000,"tgid":103}
{"e":"exec_details","tgid":103,"details":{"argv":["cc"],"exe":"/bin/cc","cwd":"/w","uid":0,"comm":"cc"}}
{"e":"file","ts":6200000,"tgid":103,"access":"read","path":"/w/x.h"}
{"e":"exit","ts":7000000,"pid":103,"tgid":103,"status":0,"parent_tgid":100}
{"e":"exit","ts":8000000,"pid":100,"tgid":100,"status":0,"parent_tgid":1}
"#;
    let cap = parse_capture(&cap[..], "files.cap").unwrap();
    let h = cap.header.clone().unwrap();
    let (engine, sum) = replay(&cap, cap.command_pid(), Fanout::new(), h.clone());
    let rep = summary::summarize(&h, &engine.tracker, &sum, false, Some(3));
    let d: Value = serde_json::from_str(&data(&h, &engine.tracker, &sum, &rep, false)).unwrap();
    let f = &d["files"];
    let s = |i: &Value| {
        d["strings"][i.as_u64().unwrap() as usize]
            .as_str()
            .unwrap()
            .to_string()
    };
    let pid = |i: &Value| d["procs"][i.as_u64().unwrap() as usize][0].as_i64().unwrap();
    let report = rep.files.as_ref().unwrap();
    for (k, want) in [
        ("processes", report.processes),
        ("read", report.read),
        ("written", report.written),
        ("created", report.created),
        ("renamed", report.renamed),
    ] {
        assert_eq!(f[k].as_u64(), Some(want), "{k}");
    }
    assert_eq!((report.read, report.written, report.renamed), (2, 1, 1));
    // gen: create, write, then the rename with its new path (µs from the command's fork).
    let uses = f["uses"].as_array().unwrap();
    assert_eq!(uses.len(), 3);
    let gn = uses[0].as_array().unwrap();
    assert_eq!(pid(&gn[0]), 101);
    assert_eq!(gn.len(), 1 + 3 + 3 + 4);
    assert_eq!((gn[1].as_u64(), gn[2].as_i64()), (Some(2), Some(1200)));
    assert_eq!(s(&gn[3]), "/w/x.tmp");
    assert_eq!((gn[4].as_u64(), s(&gn[6])), (Some(1), "/w/x.h".to_string()));
    assert_eq!(gn[7].as_u64(), Some(3));
    assert_eq!(
        (s(&gn[9]), s(&gn[10])),
        ("/w/x.tmp".to_string(), "/w/x2".to_string())
    );
    // The first cc's hostile path, as escaped text.
    assert_eq!(s(&uses[1][3]), "/w/y<b>\\n.c");
    // Most read: x.h (2 readers), then the other; the summary's list in its order.
    let mr = f["most_read"].as_array().unwrap();
    assert_eq!(mr.len(), 4);
    assert_eq!((s(&mr[0]), mr[1].as_u64()), ("/w/x.h".to_string(), Some(2)));
    assert_eq!(mr[3].as_u64(), Some(1));
    assert_eq!(report.most_read[0].path, "/w/x.h");
    // Produced: x.h by gen, consumed by both compiles; as the summary names them by pid.
    let p = &f["produced"][0];
    assert_eq!(s(&p[0]), "/w/x.h");
    let pids = |l: &Value| l.as_array().unwrap().iter().map(pid).collect::<Vec<_>>();
    assert_eq!(pids(&p[1]), [101]);
    assert_eq!(pids(&p[2]), [102, 103]);
    assert_eq!(report.produced[0].producers, [101]);
    assert_eq!(report.produced[0].consumers, [102, 103]);
    assert_eq!(f["produced"].as_array().unwrap().len(), report.produced.len());
}

/// A trace without files has no `files` key (version 2: none recorded).
#[test]
fn a_trace_without_files_has_no_files_key() {
    let (d, _) = of("builds", "make-fails");
    assert!(d.get("files").is_none(), "{}", d["files"]);
}
