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

  // Lists of what changed, each entry with a bar as long as its change.
  const lists = [];
  function list(title, entries, value, what) {
    const sec = node("section", "diff-list");
    sec.appendChild(node("h2", null, title + " (" + entries.length + ")"));
    if (!entries.length) {
      sec.appendChild(node("p", "none", "none"));
      root.appendChild(sec);
      return;
    }
    const max = Math.max(...entries.map((e) => Math.abs(value(e)) || 0), 1e-9);
    const t = node("table", "diff-table");
    entries.slice(0, 500).forEach((e) => {
      const tr = node("tr", "entry");
      const v = value(e);
      const bar = node("td", "bar-cell");
      const b = node("div", v >= 0 ? "bar up" : "bar down");
      b.style.width = Math.max(1, (Math.abs(v) / max) * 120).toFixed(0) + "px";
      bar.appendChild(b);
      tr.appendChild(bar);
      tr.appendChild(node("td", "num", what(e)));
      tr.appendChild(node("td", "cmd", argvText(e)));
      tr.dataset.text = argvText(e).toLowerCase();
      t.appendChild(tr);
    });
    sec.appendChild(t);
    root.appendChild(sec);
    lists.push(t);
  }
  const own = (e) => e.delta_own_s || 0;
  list("slower", d.slower || [], own, (e) => signed(own(e)) + " own, " + secs(e.old_s) + " → " + secs(e.new_s));
  list("faster", d.faster || [], own, (e) => signed(own(e)) + " own, " + secs(e.old_s) + " → " + secs(e.new_s));
  list("failed now", d.failed || [], (e) => e.new_s || 0, (e) => "exit ≠ 0 ×" + (e.new_failed || 1));
  list("fixed", d.fixed || [], (e) => e.old_s || 0, () => "now exits 0");
  list("new", d.new || [], (e) => e.new_s || 0, (e) => secs(e.new_s) + " ×" + (e.new_count || e.count));
  list("gone", d.gone || [], (e) => -(e.old_s || 0), (e) => secs(e.old_s) + " ×" + (e.old_count || e.count));

  // The critical paths side by side: each run's steps that held ≥ 2% of its wall time.
  const paths = node("section", "diff-paths");
  paths.appendChild(node("h2", null, "critical paths"));
  const grid = node("div", "paths-grid");
  ["old", "new"].forEach((k) => {
    const col = node("div", "path-col");
    col.appendChild(node("h3", null, k + " (" + (d.critical_path[k] || []).length + " steps)"));
    const wall = sides[k].run.wall_us / 1e6 || 1;
    const steps = (d.critical_path[k] || []).filter((s) => s.duration_s >= 0.02 * wall).slice(0, 60);
    const ol = node("ol", "path");
    steps.forEach((s) => {
      const li = node("li", "step");
      li.appendChild(node("span", "num", secs(s.duration_s)));
      if (k === "new" && s.other_s !== null && s.other_s !== undefined) {
        const ch = s.duration_s - s.other_s;
        li.appendChild(node("span", ch > 0 ? "change up" : "change down", signed(ch)));
      }
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
  root.appendChild(paths);

  search.addEventListener("input", () => {
    const q = search.value.toLowerCase();
    let shown = 0;
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
  document.body.dataset.rows = String(lists.reduce((n, t) => n + t.children.length, 0));
  document.body.dataset.ready = "1";
})();
