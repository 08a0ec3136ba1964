"use strict";
// The page of `proctrace diff OLD NEW --html FILE` (docs/html-report.md, "The data of a diff"):
// both runs' wall and CPU time, their critical paths side by side, and what changed (new, gone,
// failed now, fixed, slower, faster) with change bars; a search field filters every list.
// Untrusted text (argv, names) only ever goes in as text nodes.
(function () {
  const el = document.getElementById("proctrace-data");
  if (!el) return;
  const data = JSON.parse(el.textContent);
  if (data.format !== "proctrace-html-diff") return;
  const root = document.getElementById("report") || document.body;

  function node(tag, cls, text) {
    const n = document.createElement(tag);
    if (cls) n.className = cls;
    if (text !== undefined && text !== null) n.textContent = String(text);
    return n;
  }
  function secs(s) {
    if (s === null || s === undefined) return "–";
    const a = Math.abs(s);
    if (a >= 1) return s.toFixed(2) + "s";
    if (a >= 0.001) return (s * 1e3).toFixed(1) + "ms";
    return (s * 1e6).toFixed(0) + "µs";
  }
  function signed(s) {
    return (s > 0 ? "+" : s < 0 ? "−" : "±") + secs(Math.abs(s));
  }
  function pct(a, b) {
    if (!a) return "";
    return " (" + (b >= a ? "+" : "−") + Math.abs(((b - a) / a) * 100).toFixed(0) + "%)";
  }
  // A word as a shell would take it back, as every other output shows argv (model/escape.rs):
  // bare when plain, in '…' when it has spaces or quotes, as a $'…' word with \xNN when it has
  // control characters or characters that reorder or hide text.
  const HIDDEN = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2028\u2029\u2066-\u2069\ufeff]/;
  function word(w) {
    // `<TMP>`, `conf<N>`: the placeholders of diff's normalised names, shown bare.
    if (/^[A-Za-z0-9_.\/:=@%+,<>-]+$/.test(w)) return w;
    if (!HIDDEN.test(w)) return "'" + w.replace(/'/g, "'\\''") + "'";
    let out = "$'";
    for (const ch of w) {
      const c = ch.codePointAt(0);
      if (ch === "'" || ch === "\\") out += "\\" + ch;
      else if (c < 0x20 || c === 0x7f) out += "\\x" + c.toString(16).padStart(2, "0");
      else if (HIDDEN.test(ch)) out += "\\u" + c.toString(16).padStart(4, "0");
      else out += ch;
    }
    return out + "'";
  }
  // A path as the run's page shows it: control characters and characters that hide or reorder
  // text as escapes (`\n`, `\e`, `\x7f`, `\u202e`); a byte that is not UTF-8 is already `\xNN`.
  function pathText(p) {
    if (!HIDDEN.test(p)) return p;
    let out = "";
    const named = { "\n": "\\n", "\t": "\\t", "\r": "\\r", "\x1b": "\\e" };
    for (const ch of p) {
      const c = ch.codePointAt(0);
      if (named[ch]) out += named[ch];
      else if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) out += "\\x" + c.toString(16).padStart(2, "0");
      else if (HIDDEN.test(ch)) out += "\\u" + c.toString(16).padStart(4, "0");
      else out += ch;
    }
    return out;
  }
  function words(a) {
    a = a || [];
    // `[fork of sh]`, `[cc1]`: proctrace's own names for what has no argv, shown as they are.
    if (a.length === 1 && /^\[.*\]$/.test(a[0]) && !HIDDEN.test(a[0])) return a[0];
    return a.map(word).join(" ");
  }
  function argvText(e) {
    return words(e.argv || e.example || []);
  }

  const d = data.diff;
  const sides = { old: data.old, new: data.new };
  const cmd = (s) => (s.run.command === null ? "watch" : s.strings[s.run.command]);

  // Header: both runs.
  const head = node("header", "diff-head");
  head.appendChild(node("h1", null, "proctrace diff"));
  const table = node("table", "diff-runs");
  const hr = node("tr");
  ["", "old", "new", "change"].forEach((t) => hr.appendChild(node("th", null, t)));
  table.appendChild(hr);
  function row(label, a, b, fmt, change) {
    const tr = node("tr");
    tr.appendChild(node("th", null, label));
    tr.appendChild(node("td", null, fmt(a)));
    tr.appendChild(node("td", null, fmt(b)));
    tr.appendChild(node("td", change ? "change" : null, change || ""));
    table.appendChild(tr);
  }
  row("command", cmd(sides.old), cmd(sides.new), (x) => x);
  row("status", sides.old.run.status, sides.new.run.status, (x) => x || "running");
  const wo = sides.old.run.wall_us / 1e6, wn = sides.new.run.wall_us / 1e6;
  row("wall", wo, wn, secs, signed(wn - wo) + pct(wo, wn));
  const co = sides.old.run.cpu_us, cn = sides.new.run.cpu_us;
  if (co !== null || cn !== null) {
    row("CPU", co === null ? null : co / 1e6, cn === null ? null : cn / 1e6, secs,
      co !== null && cn !== null ? signed((cn - co) / 1e6) + pct(co, cn) : "");
  }
  row("processes", sides.old.run.processes, sides.new.run.processes, (x) => x);
  row("failures", sides.old.run.failures, sides.new.run.failures, (x) => x);
  head.appendChild(table);
  root.appendChild(head);

  const search = node("input", "search");
  search.type = "search";
  search.placeholder = "filter by command…";
  root.appendChild(search);

  // What changed: sortable tables (table.js, as a run's page has them), each entry with a bar
  // as long as its change.
  const tables = [];
  const wrap = node("section", "tables diff-tables");
  root.appendChild(wrap);
  const t = (key, label, fmt) => ({ key, label, num: true, fmt });
  const cmdCol = { key: "command", label: "Command", mono: true };
  function list(id, title, entries, bar, cols, hint) {
    const rows = entries.map((e, k) => {
      const r = Object.assign({}, e);
      r.command = argvText(e);
      r.text = (r.command + (r.paths ? "\n" + r.paths : "")).toLowerCase();
      r.bar = bar(e);
      r.seq = k;
      return r;
    });
    tables.push(proctraceTables.make(wrap, {
      id, title, hint, rows, sort: "bar",
      cols: [{ key: "bar", label: "Change", bar: true }].concat(cols, [cmdCol]),
    }));
  }
  const own = (e) => e.delta_own_s || 0;
  const runs = t("count", "Runs", (v) => (v == null ? "–" : String(v)));
  const timeCols = [
    t("delta_own_s", "Own change", signed), t("old_s", "Old", secs), t("new_s", "New", secs), runs,
  ];
  list("diff-slower", "slower", d.slower || [], own, timeCols, "Commands whose own time grew (their children's time aside), most first.");
  list("diff-faster", "faster", d.faster || [], own, timeCols, "Commands whose own time shrank, most first.");
  list("diff-failed", "failed now", d.failed || [], (e) => e.new_s || 0,
    [t("new_failed", "Failed", (v) => "×" + (v || 1)), t("new_s", "New", secs), t("old_s", "Old", secs)],
    "Commands that exited non-zero in the new run and did not in the old.");
  list("diff-fixed", "fixed", d.fixed || [], (e) => e.old_s || 0, [t("old_s", "Old", secs), t("new_s", "New", secs)]);
  list("diff-new", "new", d.new || [], (e) => e.new_s || 0,
    [t("new_s", "Time", secs), t("new_count", "Runs", (v, r) => String(v || r.count || 0))], "Run only in the new run.");
  list("diff-gone", "gone", d.gone || [], (e) => -(e.old_s || 0),
    [t("old_s", "Time", secs), t("old_count", "Runs", (v, r) => String(v || r.count || 0))], "Run only in the old run.");
  // Both runs traced with --files: the commands that read or wrote other files now, each
  // path as text (`+ read`: reads it now, `− read`: no longer), the counts whole.
  if (Array.isArray(d.files)) {
    const n = (v) => (v == null ? "–" : String(v));
    const KINDS = [["newly_read", "+ read ", "up"], ["no_longer_read", "− read ", "down"],
      ["newly_written", "+ wrote ", "up"], ["no_longer_written", "− wrote ", "down"]];
    const pathsCol = {
      key: "paths", label: "Paths", cls: "cmd paths",
      render: (td, v, r) => {
        const items = [];
        // each list summarised by directory when the data has it (`_dirs`, docs/files.md): a
        // directory holding more than --files-dirs of its files as one line with their count
        KINDS.forEach(([k, sign, cls]) => {
          let listed = 0;
          if (Array.isArray(r[k + "_dirs"])) {
            r[k + "_dirs"].forEach((e) => {
              items.push([sign, e.dir ? pathText(e.path) + "  (" + e.files + " files)" : pathText(e.path), cls]);
              listed += e.files || 1;
            });
          } else {
            (r[k] || []).forEach((p) => items.push([sign, pathText(p), cls]));
            listed = (r[k] || []).length;
          }
          const more = (r[k + "_count"] || 0) - listed;
          if (more > 0) items.push([sign, "… " + more + " more not listed", cls]);
        });
        const put = (from, to) => items.slice(from, to).forEach(([sign, p, cls]) => {
          const line = node("div", "fpath " + cls);
          line.appendChild(node("span", "sign", sign));
          // cut at its start when narrow, so that the file's name shows
          const text = node("span", "ptext");
          text.appendChild(node("span", null, p));
          line.appendChild(text);
          line.title = sign + p;
          td.appendChild(line);
        });
        put(0, 4);
        if (items.length > 4) {
          const more = node("a", "more-link", "+" + (items.length - 4) + " more");
          more.href = "#";
          more.addEventListener("click", (ev) => { ev.preventDefault(); ev.stopPropagation(); td.removeChild(more); put(4, items.length); });
          td.appendChild(more);
        }
      },
    };
    list("diff-files", "files read or written differently", d.files.map((e) => Object.assign({}, e, {
      paths: KINDS.map(([k, sign]) => (e[k] || []).concat((e[k + "_dirs"] || []).filter((d) => d.dir).map((d) => d.path))
        .map((p) => sign + pathText(p)).join("\n")).join("\n"),
    })), (e) => e.newly_read_count + e.no_longer_read_count + e.newly_written_count + e.no_longer_written_count,
    [t("newly_read_count", "Newly read", n), t("no_longer_read_count", "No longer read", n),
      t("newly_written_count", "Newly written", n), t("no_longer_written_count", "No longer written", n), pathsCol],
    "Commands in both runs that read or wrote other files (both traced with --files); paths with their volatile parts replaced as argv\u2019s are.");
    // the paths need the width: the whole row of the grid
    tables[tables.length - 1].table.closest("section").classList.add("wide");
  }

  // The critical paths side by side: each run's steps that held ≥ 2% of its wall time, with a
  // bar for the step's share of its run and, in the new run's, a change bar against the old
  // run's same step.
  const lists = [];
  const paths = node("section", "diff-paths");
  paths.appendChild(node("h2", null, "critical paths"));
  const grid = node("div", "paths-grid");
  const maxChange = Math.max(1e-9, ...(d.critical_path.new || [])
    .filter((s) => s.other_s !== null && s.other_s !== undefined)
    .map((s) => Math.abs(s.duration_s - s.other_s)));
  ["old", "new"].forEach((k) => {
    const col = node("div", "path-col");
    col.appendChild(node("h3", null, k + " (" + (d.critical_path[k] || []).length + " steps, " + secs(sides[k].run.wall_us / 1e6) + ")"));
    const wall = sides[k].run.wall_us / 1e6 || 1;
    const steps = (d.critical_path[k] || []).filter((s) => s.duration_s >= 0.02 * wall).slice(0, 60);
    const ol = node("ol", "path");
    ol.id = "path-" + k;
    steps.forEach((s) => {
      const li = node("li", "step");
      const share = node("span", "share");
      const sb = node("span", "share-bar");
      sb.style.width = Math.max(1, Math.min(1, s.duration_s / wall) * 60).toFixed(0) + "px";
      share.appendChild(sb);
      li.appendChild(share);
      li.appendChild(node("span", "num", secs(s.duration_s)));
      const cb = node("span", "change-cell");
      if (k === "new" && s.other_s !== null && s.other_s !== undefined) {
        const ch = s.duration_s - s.other_s;
        const bar = node("span", ch > 0 ? "bar up" : "bar down");
        bar.style.width = Math.max(1, (Math.abs(ch) / maxChange) * 50).toFixed(0) + "px";
        cb.appendChild(bar);
        cb.appendChild(node("span", ch > 0 ? "change up" : "change down", signed(ch)));
        li.dataset.change = String(ch);
      } else if (k === "new") {
        cb.appendChild(node("span", "change", "new"));
      }
      if (k === "new") li.appendChild(cb);
      const text = words(s.argv);
      const lab = node("span", "cmd", "\u00a0".repeat(2 * Math.min(s.depth, 8)) + text);
      lab.title = text;
      li.appendChild(lab);
      li.dataset.text = text.toLowerCase();
      ol.appendChild(li);
    });
    col.appendChild(ol);
    grid.appendChild(col);
    lists.push(ol);
  });
  paths.appendChild(grid);
  // the paths before the tables: what gated each run first
  root.insertBefore(paths, wrap);

  search.addEventListener("input", () => {
    const q = search.value.toLowerCase();
    let shown = 0;
    tables.forEach((st) => { st.filter(q); shown += st.shown.length; });
    lists.forEach((t) => {
      for (const r of t.children) {
        if (r.dataset.text === undefined) continue;
        const on = !q || r.dataset.text.includes(q);
        r.hidden = !on;
        if (on) shown++;
      }
    });
    document.body.dataset.shown = String(shown);
  });
  document.body.dataset.rows = String(tables.reduce((n, st) => n + st.spec.rows.length, 0) +
    lists.reduce((n, t) => n + t.children.length, 0));
  document.body.dataset.ready = "1";
})();
