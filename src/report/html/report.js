// proctrace's HTML report: draws the run embedded in #proctrace-data (docs/html-report.md).
// Plain JavaScript, no library. Everything the traced processes wrote (argv, names, paths) is
// untrusted: it reaches the page only through textContent and canvas fillText, never as HTML.
// Scale: aggregates are computed once; the Gantt draws only the rows and time range in view;
// tables show the first rows with "show more".
(function () {
  'use strict';
  var T0 = performance.now();
  var D = JSON.parse(document.getElementById('proctrace-data').textContent);
  // A diff's page is drawn by diff.js (concatenated after this script): hide the run's parts.
  if (D.format !== 'proctrace-html') {
    ['head', 'toolbar', 'gantt-section', 'path-section', 'conc-section', 'tables'].forEach(function (id) {
      var e = document.getElementById(id); if (e) e.hidden = true;
    });
    document.body.dataset.diff = '1';
    return;
  }
  var S = D.strings || [];
  var R = D.run || {};
  var P = D.procs || [];
  var IM = D.images || [];
  var N = P.length;
  var WALL = Math.max(1, R.wall_us || 0);

  // ---- per process arrays, computed once ---------------------------------------------------
  var parent = new Int32Array(N), depth = new Int32Array(N), nkids = new Int32Array(N);
  var start = new Float64Array(N), end = new Float64Array(N), outcome = new Uint8Array(N);
  var lastEnd = 0;
  for (var i = 0; i < N; i++) {
    var p = P[i];
    parent[i] = p[1];
    depth[i] = p[1] >= 0 && p[1] < i ? depth[p[1]] + 1 : 0;
    if (p[1] >= 0) nkids[p[1]]++;
    start[i] = p[2] == null ? 0 : p[2];
    outcome[i] = p[5];
    if (p[3] != null && p[3] > lastEnd) lastEnd = p[3];
  }
  var TEND = Math.max(WALL, lastEnd);
  // a process that started before the trace (`watch -p`: the watched one and its first
  // children) starts before 0: the whole view begins at the earliest start
  var TSTART = 0;
  for (i = 0; i < N; i++) if (start[i] < TSTART) TSTART = start[i];
  for (i = 0; i < N; i++) end[i] = P[i][3] == null ? TEND : P[i][3];

  function str(k) { return k == null || k < 0 ? '' : (S[k] == null ? '' : String(S[k])); }
  function label(i) { return str(P[i][6]); }
  // the Gantt row's label: fitted by proctrace to keep what tells rows apart (field 15)
  function rowLabel(i) { return P[i].length > 15 ? str(P[i][15]) : label(i); }
  function argvText(a) { if (!a) return ''; var w = []; for (var k = 0; k < a.length; k++) w.push(str(a[k])); return w.join(' '); }
  // The images of process i as [start, end, label, argv|null, fork]
  function imagesOf(i) {
    var p = P[i];
    if (p[13] < 0) return [[start[i], end[i], p[6], p[7], 0]];
    var out = [];
    for (var k = 0; k < p[14]; k++) {
      var im = IM[p[13] + k];
      out.push([im[0] == null ? start[i] : im[0], im[1] == null ? end[i] : im[1], im[2], im[3], im[4]]);
    }
    return out;
  }
  var imgCache = new Array(N);
  function imgs(i) { return imgCache[i] || (imgCache[i] = imagesOf(i)); }
  function base(s) { var j = s.lastIndexOf('/'); return j >= 0 ? s.slice(j + 1) : s; }
  function programOf(im) {
    if (im[4]) return str(im[2]);
    if (im[3] && im[3].length) return base(str(im[3][0]));
    var l = str(im[2]); var sp = l.indexOf(' ');
    return base(sp > 0 ? l.slice(0, sp) : l);
  }
  var hay = null; // lower-cased label + argv, built on the first search
  function haystack() {
    if (hay) return hay;
    hay = new Array(N);
    for (var i = 0; i < N; i++) {
      var t = label(i), a = argvText(P[i][7]);
      if (a && a !== t) t += '\n' + a;
      var p = P[i];
      if (p[13] >= 0) for (var k = 0; k < p[14]; k++) { var im = IM[p[13] + k]; t += '\n' + str(im[2]) + '\n' + argvText(im[3]); }
      hay[i] = t.toLowerCase();
    }
    return hay;
  }

  // ---- formatting --------------------------------------------------------------------------
  function fmtUs(us) {
    if (us == null) return '—';
    var a = Math.abs(us);
    if (a >= 60e6) { var m = Math.floor(a / 60e6); return (us < 0 ? '-' : '') + m + ' min ' + ((a - m * 60e6) / 1e6).toFixed(1) + ' s'; }
    if (a >= 1e6) return (us / 1e6).toFixed(a >= 10e6 ? 1 : 2) + ' s';
    if (a >= 1e3) return (us / 1e3).toFixed(a >= 10e3 ? 1 : 2) + ' ms';
    return Math.round(us) + ' µs';
  }
  // a time axis tick: in the unit of its size, with the decimals its step needs (4.963 ms at a
  // 1 µs step, not 4.96 ms ten times)
  function fmtTick(t, step) {
    var a = Math.abs(t), unit = a >= 1e6 ? 1e6 : a >= 1e3 ? 1e3 : 1, name = unit === 1e6 ? ' s' : unit === 1e3 ? ' ms' : ' µs';
    if (a >= 60e6 && step >= 1e6) return fmtUs(t);
    var dec = Math.max(0, Math.min(6, Math.ceil(Math.log10(unit / step) - 1e-9)));
    return (t / unit).toFixed(dec) + name;
  }
  function fmtKiB(k) {
    if (k == null) return '—';
    if (k >= 1048576) return (k / 1048576).toFixed(2) + ' GiB';
    if (k >= 1024) return (k / 1024).toFixed(1) + ' MiB';
    return k + ' KiB';
  }
  function fmtBytes(b) { return b == null ? '—' : b < 1024 ? b + ' B' : fmtKiB(Math.round(b / 1024)); }
  function fmtInt(n) { return n == null ? '—' : Number(n).toLocaleString('en-US'); }
  var SIGNALS = ['', 'SIGHUP', 'SIGINT', 'SIGQUIT', 'SIGILL', 'SIGTRAP', 'SIGABRT', 'SIGBUS', 'SIGFPE', 'SIGKILL', 'SIGUSR1', 'SIGSEGV', 'SIGUSR2', 'SIGPIPE', 'SIGALRM', 'SIGTERM', 'SIGSTKFLT', 'SIGCHLD', 'SIGCONT', 'SIGSTOP', 'SIGTSTP', 'SIGTTIN', 'SIGTTOU', 'SIGURG', 'SIGXCPU', 'SIGXFSZ', 'SIGVTALRM', 'SIGPROF', 'SIGWINCH', 'SIGIO', 'SIGPWR', 'SIGSYS'];
  function statusText(i) {
    var s = P[i][4];
    if (s == null) return outcome[i] === 5 ? 'exit lost' : 'running';
    if (s < 0) return 'killed by ' + (SIGNALS[-s] || 'signal ' + (-s));
    return 'exit ' + s;
  }
  var OUTCOME = ['ok', 'failure', 'handled non-zero exit', 'killed (not a failure)', 'running / background', 'exit lost'];
  var COLORS = ['#4a86c8', '#d23f3f', '#d9a23a', '#8a5cc2', '#9aa3b0', '#c2c7cf'];
  var COLORS_ALT = ['#6fa3db', '#e36b6b', '#e8bb62', '#a582d4', '#b5bcc6', '#d5d9df'];
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text != null) e.textContent = text;
    return e;
  }

  // ---- files (`--files`): each process's uses, who produced and who consumed each file -------
  // D.files.uses: per process that used a file, [proc, access, ts, path, …] (a rename's path
  // followed by its new one); most_read: path, readers pairs in the summary's order; produced:
  // [path, [producers], [consumers]] in the summary's order.
  var F = D.files || null;
  var ACCESS = ['read', 'write', 'create', 'rename', 'delete'];
  var fileRow = F ? new Map() : null; // proc -> its raw uses array
  var producedOf = new Map(); // path (string index) -> its `produced` entry
  if (F) {
    (F.uses || []).forEach(function (u) { if (u[0] >= 0 && u[0] < N) fileRow.set(u[0], u); });
    (F.produced || []).forEach(function (x) { producedOf.set(x[0], x); });
  }
  // whether process j is one of a produced file's consumers (a set made the first time asked:
  // a generated header can have thousands)
  function consumed(pr, j) {
    if (pr[2].length < 8) return pr[2].indexOf(j) >= 0;
    if (!pr.cs) pr.cs = new Set(pr[2]);
    return pr.cs.has(j);
  }
  var useCache = new Map();
  // process i's file uses, in the order first seen: [{ a: access, t: µs, path: string index, to }]
  function usesOf(i) {
    if (!fileRow) return [];
    var c = useCache.get(i); if (c) return c;
    var u = fileRow.get(i), out = [];
    if (u) for (var q = 1; q + 2 < u.length;) {
      var x = { a: u[q], t: u[q + 1], path: u[q + 2], to: -1 }; q += 3;
      if (x.a === 3) { x.to = u[q]; q++; }
      out.push(x);
    }
    if (useCache.size > 2000) useCache.clear();
    useCache.set(i, out);
    return out;
  }
  // distinct paths read and written by each process (the tree's "reads N, writes M"), counted
  // once; and by the processes each one ran (its subtree but itself), with how many used files
  var nRead = new Int32Array(F ? N : 0), nWrite = new Int32Array(F ? N : 0);
  if (F) fileRow.forEach(function (u, i) {
    for (var q = 1; q + 2 < u.length; q += u[q] === 3 ? 4 : 3) { if (u[q] === 0) nRead[i]++; else if (u[q] === 1) nWrite[i]++; }
  });
  function fileCounts(i) { return [nRead[i], nWrite[i]]; }
  // the summary's files line: "87 read, 30 written, 30 created by 43 processes; 15 written then read by another"
  function filesLine() {
    var parts = [fmtInt(F.read) + ' read', fmtInt(F.written) + ' written'];
    [[F.created, 'created'], [F.deleted, 'deleted'], [F.renamed, 'renamed']].forEach(function (x) { if (x[0] > 0) parts.push(fmtInt(x[0]) + ' ' + x[1]); });
    var s = parts.join(', ') + ' by ' + fmtInt(F.processes) + (F.processes === 1 ? ' process' : ' processes');
    if ((F.produced || []).length) s += '; ' + fmtInt(F.produced.length) + ' written then read by another';
    return s;
  }

  // ---- directories summarised (docs/files.md): the rule src/report/summary/dirs.rs has ------
  // Paths (distinct strings, in their order) grouped by the directory holding them; a directory
  // holding more than F.more_than of them (null: none) is one entry; with keepProject, the files
  // under the project (the command's working directory, F.project) stay listed one by one.
  // Entries in the order of their first file: { path, dir, members: [indexes into paths] }.
  function parentDir(p) { var i = p.lastIndexOf('/'); return i >= 0 && i + 1 < p.length ? p.slice(0, i + 1) : null; }
  var PROJECT = F && F.project != null && F.project >= 0 ? str(F.project) : null;
  function collapse(paths, keepProject) {
    var n = F.more_than, by = new Map(), out = [];
    var kept = function (p) { return keepProject && PROJECT != null && p.lastIndexOf(PROJECT, 0) === 0; };
    var dirOf = paths.map(function (p) { return kept(p) ? null : parentDir(p); });
    if (n != null) dirOf.forEach(function (d, i) { if (d == null) return; var m = by.get(d); if (!m) by.set(d, m = []); m.push(i); });
    paths.forEach(function (p, i) {
      var d = dirOf[i], m = d != null ? by.get(d) : null;
      if (m && m.length > n) { if (m[0] === i) out.push({ path: d, dir: true, members: m }); }
      else out.push({ path: p, dir: false, members: [i] });
    });
    return out;
  }

  // ---- header ------------------------------------------------------------------------------
  var causeSet = new Set(D.causes || []);
  (function header() {
    var cmd = R.command == null ? (R.mode === 'watch' ? 'watch' : '') : str(R.command);
    document.getElementById('command').textContent = cmd || 'proctrace report';
    var v = document.getElementById('verdict');
    v.textContent = R.status == null ? (R.mode === 'watch' && R.command == null ? 'Watched for ' + fmtUs(R.wall_us) : 'Still running when the report was written') :
      (R.ok ? 'Succeeded' : 'Failed') + ' (' + R.status + ') after ' + fmtUs(R.wall_us);
    v.className = R.ok ? 'ok' : (R.ok === false ? 'bad' : '');
    var facts = [
      ['status', R.status == null ? 'running' : R.status],
      ['wall', fmtUs(R.wall_us)],
      ['CPU', R.cpu_us == null ? 'not measured' : fmtUs(R.cpu_us) + (R.wall_us ? ' (' + (R.cpu_us / R.wall_us).toFixed(2) + ' cores)' : '')],
      ['processes', fmtInt(R.processes)], ['execs', fmtInt(R.execs)],
      ['failures', fmtInt(R.failures)], ['causes', fmtInt((D.causes || []).length)],
      ['handled exits', fmtInt(R.handled)], ['lost events', fmtInt(R.lost)],
      ['untraced', fmtInt(R.untraced)], ['background', fmtInt(R.background)],
      ['backend', R.backend || '—'], ['host', R.host || '—'], ['start', R.start || '—'],
      ['mode', R.mode || '—'], ['tool', R.tool || '—']
    ];
    if (F) {
      facts.splice(11, 0, ['files', fmtInt(F.read) + ' read, ' + fmtInt(F.written) + ' written']);
      if (F.lost) facts.splice(12, 0, ['file events lost', fmtInt(F.lost) + ' (lists incomplete)']);
      if (F.dropped) facts.splice(12, 0, ['file uses dropped', fmtInt(F.dropped) + ' (over the caps)']);
    }
    var dl = document.getElementById('facts');
    facts.forEach(function (f) { var d = el('div', f[0] === 'start' || f[0] === 'host' ? 'wide' : null); d.appendChild(el('dt', null, f[0])); d.appendChild(el('dd', null, String(f[1]))); d.title = f[0] + ': ' + f[1]; dl.appendChild(d); });
    var cz = document.getElementById('causes');
    (D.causes || []).forEach(function (c) {
      if (c < 0 || c >= N) return;
      var p = el('p', 'cause');
      p.appendChild(el('strong', null, 'Cause: '));
      p.appendChild(el('code', null, label(c)));
      p.appendChild(document.createTextNode(' — ' + statusText(c) + ' after ' + fmtUs(end[c] - start[c]) + (P[c][8] >= 0 ? ' in ' + str(P[c][8]) : '')));
      var a = argvText(P[c][7]);
      if (a && a !== label(c)) { p.appendChild(el('br')); p.appendChild(el('code', 'muted', a)); }
      cz.appendChild(p);
    });
  })();

  var legend = document.getElementById('legend');
  OUTCOME.forEach(function (o, k) { var s = el('span'); s.appendChild(el('span', 'swatch sw-' + k)); s.appendChild(document.createTextNode(o)); legend.appendChild(s); });
  (function () { var s = el('span'); s.appendChild(el('span', 'swatch sw-path')); s.appendChild(document.createTextNode('critical path')); legend.appendChild(s); })();
  if ((D.regions || []).length) (function () { var s = el('span'); s.appendChild(el('span', 'swatch sw-region')); s.appendChild(document.createTextNode('git Trace2 region (inside its process)')); legend.appendChild(s); })();

  // ---- critical path -----------------------------------------------------------------------
  // The summary's steps, each [process (-1: none of the data's records), image, depth, own,
  // start, duration, label]: listed as the summary lists them, even a step of no record.
  var PATH = D.path || [];
  function stepOf(s) { return s[0] >= 0 && s[0] < N; }
  function stepDur(s) { if (s.length > 5) return s[5]; var im = imgs(s[0])[s[1]] || imgs(s[0])[0]; return im[1] - im[0]; }
  function stepLabel(s) { if (s.length > 6) return str(s[6]); var im = imgs(s[0])[s[1]] || imgs(s[0])[0]; return str(im[2]); }
  var onPath = new Map(); // proc -> Set of image indices
  PATH.forEach(function (s) { if (!stepOf(s)) return; if (!onPath.has(s[0])) onPath.set(s[0], new Set()); onPath.get(s[0]).add(s[1]); });
  var parAt = new Map(); (D.parallel || []).forEach(function (x) { parAt.set(x[0], x); });
  // Steps shorter than 0.5% of the run that follow one another are one line ("… 12 shorter
  // steps"), opened by a click: a configure's path is hundreds of probes of a millisecond.
  (function pathList() {
    var ol = document.getElementById('path');
    if (!PATH.length) { ol.appendChild(el('li', 'empty', 'No critical path (no single command, or its end is unknown).')); return; }
    var SHORT = TEND * 0.005, items = [], run = null;
    PATH.forEach(function (s, k) {
      var d = stepDur(s);
      var short = k > 0 && d < SHORT && !parAt.has(k);
      if (short) { if (!run) { run = { from: k, to: k, us: 0 }; items.push(run); } run.to = k; run.us += d; }
      else { run = null; items.push(k); }
    });
    var shown = 0, btn = null;
    function more(n) {
      var stop = Math.min(items.length, shown + n);
      for (; shown < stop; shown++) { var it = items[shown]; ol.appendChild(typeof it === 'number' ? step(it) : group(it)); }
      if (btn) { btn.hidden = shown >= items.length; btn.textContent = 'Show all ' + fmtInt(items.length) + ' lines'; }
    }
    if (items.length > 300) {
      btn = el('button', 'more'); btn.type = 'button';
      btn.addEventListener('click', function () { more(items.length); });
      ol.parentNode.insertBefore(btn, ol.nextSibling);
    }
    more(300);
    function group(g) {
      var li = el('li', 'fold');
      li.value = g.from + 1;
      var n = g.to - g.from + 1;
      if (n === 1) return step(g.from);
      li.appendChild(el('span', 'dur', '\u00a0'.repeat(Math.min(PATH[g.from][2], 20) * 2) + '\u2026 ' + fmtInt(n) + ' shorter steps (' + fmtUs(g.us) + ' in all; click to list them)'));
      li.addEventListener('click', function () {
        var frag = document.createDocumentFragment();
        for (var k = g.from; k <= g.to; k++) frag.appendChild(step(k));
        ol.replaceChild(frag, li);
      });
      return li;
    }
    function step(k) {
      var s = PATH[k];
      var li = el('li');
      li.value = k + 1;
      li.dataset.step = String(k);
      li.appendChild(el('code', null, '\u00a0'.repeat(Math.min(s[2], 20) * 2) + stepLabel(s)));
      li.appendChild(document.createTextNode(' '));
      li.appendChild(el('span', 'dur', fmtUs(stepDur(s)) + (s[3] != null ? ', own ' + fmtUs(s[3]) : '')));
      var par = parAt.get(k);
      if (par) {
        var t = 'bounded by parallelism: ' + par[1] + ' job slots busy ' + fmtUs(par[3]) + ' of ' + fmtUs(par[2]);
        li.appendChild(document.createTextNode(' '));
        li.appendChild(el('span', 'par', t));
        if (par[4] >= 0 && par[4] < N) {
          li.appendChild(el('br'));
          li.appendChild(el('span', 'par', '\u00a0'.repeat(Math.min(s[2], 20) * 2 + 2) + 'longest job: '));
          li.appendChild(el('code', null, label(par[4])));
          li.appendChild(document.createTextNode(' '));
          li.appendChild(el('span', 'dur', fmtUs(end[par[4]] - start[par[4]])));
        }
      }
      if (stepOf(s)) li.addEventListener('click', function (ev) { ev.stopPropagation(); select(s[0], true, s[1]); });
      return li;
    }
  })();

  // ---- Gantt: rows, folding, search --------------------------------------------------------
  var ROWH = 18, AXIS = 26, LABELW = 320;
  // Folded at first, with more than 200 processes: the subtrees of processes shorter than 0.5%
  // of the run (libtool's shells: slivers at full zoom) and of those but a root with more than 50 children
  // (configure and its probes), so the first screen shows the build's shape.
  var collapsed = new Uint8Array(N);
  if (N > 200) for (var ci = 0; ci < N; ci++) if ((nkids[ci] > 50 && parent[ci] >= 0) || (nkids[ci] && end[ci] - start[ci] < TEND * 0.005)) collapsed[ci] = 1;
  // The rows banded as the critical path's: its steps of at least 0.5% of the run (every step
  // is outlined).
  var banded = new Uint8Array(N);
  PATH.forEach(function (s) { if (stepOf(s) && stepDur(s) >= TEND * 0.005) banded[s[0]] = 1; });
  var query = '';
  var rows = new Int32Array(N), nrows = 0, matches = N;
  // the selected process (a click on its bar, its row in a table, a link to it), -1 for none;
  // the file whose users the chart shows (a click on a file), null for none
  var selected = -1, fileFilter = null, SELECTED = '#dbe7fb';
  function rebuildRows() {
    nrows = 0;
    var hidden = new Uint8Array(N);
    var h = query ? haystack() : null, fu = fileFilter ? fileFilter.users : null;
    matches = 0;
    for (var i = 0; i < N; i++) {
      var pa = parent[i];
      if (!h && !fu && pa >= 0 && pa < i && (collapsed[pa] || hidden[pa])) hidden[i] = 1;
      var m = (!h || h[i].indexOf(query) >= 0) && (!fu || fu[i]);
      if (m) matches++;
      if (!hidden[i] && m) rows[nrows++] = i;
    }
    document.body.dataset.rows = String(nrows);
    document.body.dataset.matches = String(matches);
    document.getElementById('shown').textContent = query || fu ?
      fmtInt(matches) + ' of ' + fmtInt(N) + ' processes match' :
      fmtInt(nrows) + ' of ' + fmtInt(N) + ' processes shown' + (nrows < N ? ' (the rest folded: click a \u25b8 label, or Expand all)' : '');
  }

  var wrap = document.getElementById('gantt-wrap');
  var gc = document.getElementById('gantt');
  var spacer = document.getElementById('gantt-spacer');
  var gx = gc.getContext('2d');
  var cc = document.getElementById('conc');
  var cx = cc.getContext('2d');
  var view = { t0: TSTART, t1: TEND }; var W = 800, H = 400, DPR = 1;
  function layout() {
    DPR = window.devicePixelRatio || 1;
    W = Math.max(400, wrap.clientWidth);
    var want = AXIS + nrows * ROWH + 2;
    H = Math.max(AXIS + ROWH * 4, Math.min(want, Math.round(window.innerHeight * 0.62)));
    wrap.style.height = H + 'px';
    gc.width = Math.round(W * DPR); gc.height = Math.round(H * DPR);
    gc.style.width = W + 'px'; gc.style.height = H + 'px';
    spacer.style.height = Math.max(0, want - H) + 'px';
    cc.width = Math.round(W * DPR); cc.height = Math.round(160 * DPR); cc.style.height = '160px';
  }
  function tx(t) { return LABELW + (t - view.t0) / (view.t1 - view.t0) * (W - LABELW - 8); }
  function xt(x) { return view.t0 + (x - LABELW) / (W - LABELW - 8) * (view.t1 - view.t0); }
  function niceStep(span, px) {
    var raw = span / Math.max(1, px / 90), p10 = Math.pow(10, Math.floor(Math.log10(raw)));
    var m = raw / p10; return (m < 2 ? 2 : m < 5 ? 5 : 10) * p10;
  }
  // a tick's label right of its line, none where it would leave the canvas
  function tick(ctx, text, x) {
    if (x + 3 + ctx.measureText(text).width <= W - 2) ctx.fillText(text, x + 3, 12);
  }
  function drawAxis(ctx, top, height) {
    var step = niceStep(view.t1 - view.t0, W - LABELW);
    ctx.fillStyle = '#5b6475'; ctx.font = '11px system-ui, sans-serif'; ctx.textBaseline = 'middle';
    ctx.strokeStyle = '#e6e9ef'; ctx.lineWidth = 1;
    for (var t = Math.ceil(view.t0 / step) * step; t <= view.t1; t += step) {
      var x = Math.round(tx(t)) + 0.5;
      ctx.beginPath(); ctx.moveTo(x, top); ctx.lineTo(x, top + height); ctx.stroke();
      tick(ctx, fmtTick(t, step), x);
    }
  }
  var scheduled = false;
  function redraw() { if (!scheduled) { scheduled = true; requestAnimationFrame(function () { scheduled = false; drawGantt(); drawConc(); }); } }
  function drawGantt() {
    var ctx = gx;
    ctx.setTransform(DPR, 0, 0, DPR, 0, 0);
    ctx.clearRect(0, 0, W, H);
    var scroll = wrap.scrollTop;
    var first = Math.max(0, Math.floor(scroll / ROWH)), last = Math.min(nrows, Math.ceil((scroll + H - AXIS) / ROWH) + 1);
    // row backgrounds
    for (var r = first; r < last; r++) {
      var i = rows[r], y = AXIS + r * ROWH - scroll;
      if (i === selected) { ctx.fillStyle = SELECTED; ctx.fillRect(0, y, W, ROWH); }
      else if (banded[i]) { ctx.fillStyle = '#fff4e0'; ctx.fillRect(0, y, W, ROWH); }
      else if (r % 2) { ctx.fillStyle = '#fafbfc'; ctx.fillRect(0, y, W, ROWH); }
    }
    drawAxis(ctx, AXIS, H - AXIS);
    // bars
    ctx.save(); ctx.beginPath(); ctx.rect(LABELW, AXIS, W - LABELW, H - AXIS); ctx.clip();
    ctx.font = '11px system-ui, sans-serif'; ctx.textBaseline = 'middle';
    for (r = first; r < last; r++) {
      i = rows[r]; y = AXIS + r * ROWH - scroll;
      if (end[i] < view.t0 || start[i] > view.t1) continue;
      var list = imgs(i), pathImgs = onPath.get(i);
      for (var k = 0; k < list.length; k++) {
        var im = list[k];
        if (im[1] < view.t0 || im[0] > view.t1) continue;
        var x0 = Math.max(LABELW - 2, tx(im[0])), x1 = Math.min(W + 2, tx(im[1]));
        var w = Math.max(1, x1 - x0);
        var o = outcome[i];
        // every image but the last ended in an exec: it is not the one the outcome is about
        ctx.fillStyle = im[4] ? '#b9c4d2' : (k < list.length - 1 ? COLORS_ALT[o] : COLORS[o]);
        ctx.fillRect(x0, y + 3, w, ROWH - 6);
        if (k > 0 && w > 2) { ctx.fillStyle = '#ffffff'; ctx.fillRect(x0, y + 3, 1, ROWH - 6); }
        if (pathImgs && pathImgs.has(k)) { ctx.strokeStyle = '#ff8c00'; ctx.lineWidth = 2; ctx.strokeRect(x0 - 1, y + 2, w + 2, ROWH - 4); }
        if (w > 40) {
          ctx.save(); ctx.beginPath(); ctx.rect(x0, y, w, ROWH); ctx.clip();
          ctx.fillStyle = o === 5 || o === 4 || im[4] ? '#1d2330' : '#ffffff';
          ctx.fillText(programOf(im), Math.max(x0, LABELW) + 3, y + ROWH / 2);
          ctx.restore();
        }
      }
      // its Trace2 regions, inside its bar: each nesting level inset 2 px more, outer ones
      // first, named where wide enough
      var rg = regionsOf.get(i);
      if (rg) for (k = 0; k < rg.length; k++) {
        var g = rg[k];
        if (g[2] < view.t0 || g[1] > view.t1) continue;
        var lv = regionLevel(g, i), gx0 = Math.max(LABELW - 2, tx(g[1])), gw = Math.max(1, Math.min(W + 2, tx(g[2])) - gx0);
        var gy = y + 3 + lv * 2, gh = Math.max(2, ROWH - 6 - lv * 4);
        ctx.fillStyle = REGION_COLORS[lv % REGION_COLORS.length];
        ctx.fillRect(gx0, gy, gw, gh);
        if (gw > 3) { ctx.strokeStyle = '#0f4d24'; ctx.lineWidth = 1; ctx.strokeRect(gx0 + 0.5, gy + 0.5, gw - 1, gh - 1); }
        if (gw > 50 && gh >= 8) {
          ctx.save(); ctx.beginPath(); ctx.rect(gx0, gy, gw, gh); ctx.clip();
          ctx.fillStyle = '#ffffff'; ctx.font = '10px system-ui, sans-serif';
          ctx.fillText(str(g[3]), Math.max(gx0, LABELW) + 3, y + ROWH / 2);
          ctx.restore(); ctx.font = '11px system-ui, sans-serif';
        }
      }
    }
    ctx.restore();
    // labels
    ctx.fillStyle = '#ffffff'; ctx.fillRect(0, AXIS, LABELW, H - AXIS);
    ctx.save(); ctx.beginPath(); ctx.rect(0, AXIS, LABELW - 6, H - AXIS); ctx.clip();
    ctx.font = '12px ui-monospace, "DejaVu Sans Mono", monospace'; ctx.textBaseline = 'middle';
    for (r = first; r < last; r++) {
      i = rows[r]; y = AXIS + r * ROWH - scroll;
      if (i === selected) { ctx.fillStyle = SELECTED; ctx.fillRect(0, y, LABELW, ROWH); ctx.fillStyle = '#2b6cb0'; ctx.fillRect(0, y, 3, ROWH); }
      else if (banded[i]) { ctx.fillStyle = '#fff4e0'; ctx.fillRect(0, y, LABELW, ROWH); }
      var ind = 4 + Math.min(depth[i], 40) * 10;
      ctx.fillStyle = '#5b6475';
      if (nkids[i]) ctx.fillText(collapsed[i] ? '\u25b8' : '\u25be', ind, y + ROWH / 2);
      ctx.fillStyle = outcome[i] === 1 ? '#b02a2a' : '#1d2330';
      ctx.fillText(rowLabel(i), ind + 12, y + ROWH / 2);
    }
    ctx.restore();
    ctx.strokeStyle = '#d8dde6'; ctx.beginPath(); ctx.moveTo(LABELW - 0.5, AXIS); ctx.lineTo(LABELW - 0.5, H); ctx.stroke();
    // axis band
    ctx.fillStyle = '#f5f7fa'; ctx.fillRect(0, 0, W, AXIS);
    ctx.strokeStyle = '#d8dde6'; ctx.beginPath(); ctx.moveTo(0, AXIS - 0.5); ctx.lineTo(W, AXIS - 0.5); ctx.stroke();
    ctx.fillStyle = '#5b6475'; ctx.font = '11px system-ui, sans-serif'; ctx.textBaseline = 'middle';
    var vstep = niceStep(view.t1 - view.t0, W - LABELW);
    ctx.fillText(fmtInt(nrows) + ' rows · ' + fmtTick(view.t0, vstep / 10) + ' – ' + fmtTick(view.t1, vstep / 10), 6, 12);
    ctx.save(); ctx.beginPath(); ctx.rect(LABELW, 0, W - LABELW, AXIS); ctx.clip();
    var step = niceStep(view.t1 - view.t0, W - LABELW);
    for (var t = Math.ceil(view.t0 / step) * step; t <= view.t1; t += step) {
      var xx = Math.round(tx(t)) + 0.5;
      ctx.strokeStyle = '#aab2bf'; ctx.beginPath(); ctx.moveTo(xx, AXIS - 6); ctx.lineTo(xx, AXIS); ctx.stroke();
      tick(ctx, fmtTick(t, step), xx);
    }
    ctx.restore();
  }

  // Trace2 regions by process, outer (least nested) first, each [proc, start, end, name,
  // thread, nesting, category, label, message]; a level is the nesting less the process's least
  var regionsOf = new Map(), regionBase = new Map();
  var REGION_COLORS = ['#1f7a3a', '#2f9a52', '#49b36c', '#6cc78a'];
  (D.regions || []).forEach(function (g) {
    if (!(g[0] >= 0 && g[0] < N)) return;
    if (!regionsOf.has(g[0])) regionsOf.set(g[0], []);
    regionsOf.get(g[0]).push(g);
    var b = regionBase.get(g[0]); if (b == null || (g[5] || 0) < b) regionBase.set(g[0], g[5] || 0);
  });
  regionsOf.forEach(function (l) { l.sort(function (a, b) { return (a[5] || 0) - (b[5] || 0) || a[1] - b[1]; }); });
  function regionLevel(g, i) { return Math.min(3, Math.max(0, (g[5] || 0) - (regionBase.get(i) || 0))); }
  // the innermost region of process i running at t (within `slack`), or null
  function regionAt(i, t, slack) {
    var rg = regionsOf.get(i), best = null;
    if (rg) for (var k = 0; k < rg.length; k++) { var g = rg[k]; if (t >= g[1] - slack && t <= g[2] + slack && (!best || (g[5] || 0) >= (best[5] || 0))) best = g; }
    return best;
  }

  // ---- concurrency: processes, jobs (images that forked nothing), CPU spread over each life -----
  var conc = (function () {
    // which image of its parent each process was forked in
    var forked = new Uint8Array(IM.length), forkedOne = new Uint8Array(N);
    for (var i = 0; i < N; i++) {
      var pa = parent[i]; if (pa < 0 || pa >= N) continue;
      var pp = P[pa];
      if (pp[13] < 0) { forkedOne[pa] = 1; continue; }
      var s = start[i], k = 0;
      for (; k < pp[14] - 1; k++) { var im = IM[pp[13] + k]; if (im[1] != null && s < im[1]) break; }
      forked[pp[13] + k] = 1;
    }
    var ev = [];
    for (i = 0; i < N; i++) {
      var p = P[i];
      if (p[2] == null) continue;
      var e = end[i], cpuRate = p[9] != null && e > start[i] ? p[9] / (e - start[i]) : 0;
      ev.push([start[i], 1, 0, cpuRate], [e, -1, 0, -cpuRate]);
      if (p[13] < 0) { if (!forkedOne[i]) ev.push([start[i], 0, 1, 0], [e, 0, -1, 0]); }
      else for (var k2 = 0; k2 < p[14]; k2++) {
        if (forked[p[13] + k2]) continue;
        var g = IM[p[13] + k2], gs = g[0] == null ? start[i] : g[0], ge = g[1] == null ? e : g[1];
        ev.push([gs, 0, 1, 0], [ge, 0, -1, 0]);
      }
    }
    ev.sort(function (a, b) { return a[0] - b[0] || a[1] - b[1] || a[2] - b[2]; });
    var n = ev.length, t = new Float64Array(n), procs = new Float64Array(n), jobs = new Float64Array(n), cpu = new Float64Array(n);
    var a = 0, b = 0, c = 0, maxP = 0, anyCpu = false;
    for (i = 0; i < n; i++) {
      a += ev[i][1]; b += ev[i][2]; c += ev[i][3]; if (ev[i][3]) anyCpu = true;
      t[i] = ev[i][0]; procs[i] = a; jobs[i] = b; cpu[i] = Math.max(0, c);
      if (a > maxP) maxP = a;
    }
    return { n: n, t: t, procs: procs, jobs: jobs, cpu: cpu, max: Math.max(1, maxP), anyCpu: anyCpu };
  })();
  document.getElementById('conc-hint').textContent = 'Processes running (light), jobs running (dark: images that forked nothing)' +
    (conc.anyCpu ? ', and cores in use (line: each process\u2019s CPU spread evenly over its life)' : '') + '; peak ' + conc.max + ' processes. Follows the chart\u2019s zoom.';
  function drawConc() {
    var ctx = cx, HH = 160, top = 18, bottom = HH - 4, h = bottom - top;
    ctx.setTransform(DPR, 0, 0, DPR, 0, 0);
    ctx.clearRect(0, 0, W, HH);
    var cols = Math.max(1, Math.ceil(W - LABELW));
    var mp = new Float64Array(cols), mj = new Float64Array(cols), mc = new Float64Array(cols), seen = new Uint8Array(cols);
    // value in force over each pixel column: the max of the step function there
    var span = view.t1 - view.t0, scale = (W - LABELW - 8) / span;
    var idx = 0, n = conc.n;
    // binary search the last event at or before t0
    var lo = 0, hi = n - 1, at = -1;
    while (lo <= hi) { var mid = (lo + hi) >> 1; if (conc.t[mid] <= view.t0) { at = mid; lo = mid + 1; } else hi = mid - 1; }
    var curP = at >= 0 ? conc.procs[at] : 0, curJ = at >= 0 ? conc.jobs[at] : 0, curC = at >= 0 ? conc.cpu[at] : 0;
    idx = at + 1;
    for (var c = 0; c < cols; c++) {
      var tEnd = view.t0 + (c + 1) / scale;
      var vp = curP, vj = curJ, vc = curC;
      while (idx < n && conc.t[idx] < tEnd) {
        curP = conc.procs[idx]; curJ = conc.jobs[idx]; curC = conc.cpu[idx]; idx++;
        if (curP > vp) vp = curP; if (curJ > vj) vj = curJ; if (curC > vc) vc = curC;
      }
      mp[c] = vp; mj[c] = vj; mc[c] = vc; seen[c] = 1;
    }
    var maxv = 1; for (c = 0; c < cols; c++) { if (mp[c] > maxv) maxv = mp[c]; if (mc[c] > maxv) maxv = mc[c]; }
    drawAxis(ctx, top, h);
    ctx.fillStyle = '#b8d0ea';
    for (c = 0; c < cols; c++) { var v = mp[c] / maxv * h; if (v > 0) ctx.fillRect(LABELW + c, bottom - v, 1, v); }
    ctx.fillStyle = '#3f6fa5';
    for (c = 0; c < cols; c++) { v = mj[c] / maxv * h; if (v > 0) ctx.fillRect(LABELW + c, bottom - v, 1, v); }
    if (conc.anyCpu) {
      ctx.strokeStyle = '#d2691e'; ctx.lineWidth = 1.5; ctx.beginPath();
      for (c = 0; c < cols; c++) { var yy = bottom - mc[c] / maxv * h; if (c) ctx.lineTo(LABELW + c, yy); else ctx.moveTo(LABELW + c, yy); }
      ctx.stroke();
    }
    ctx.fillStyle = '#1d2330'; ctx.font = '12px system-ui, sans-serif'; ctx.textBaseline = 'middle';
    ctx.fillText('max ' + Math.round(maxv) + ' in view', 6, top + 6);
    ctx.fillStyle = '#b8d0ea'; ctx.fillRect(6, top + 22, 10, 10); ctx.fillStyle = '#1d2330'; ctx.fillText('processes', 20, top + 27);
    ctx.fillStyle = '#3f6fa5'; ctx.fillRect(6, top + 40, 10, 10); ctx.fillStyle = '#1d2330'; ctx.fillText('jobs', 20, top + 45);
    if (conc.anyCpu) { ctx.fillStyle = '#d2691e'; ctx.fillRect(6, top + 62, 10, 2); ctx.fillStyle = '#1d2330'; ctx.fillText('cores in use', 20, top + 63); }
    if (concHover != null && concHover >= view.t0 && concHover <= view.t1) {
      var hx = Math.round(tx(concHover)) + 0.5;
      ctx.strokeStyle = '#1d2330'; ctx.lineWidth = 1; ctx.beginPath(); ctx.moveTo(hx, top); ctx.lineTo(hx, bottom); ctx.stroke();
    }
  }
  // what ran at time t: [processes, jobs, cores in use], after every start and end at or before t
  function concAt(t) {
    var lo = 0, hi = conc.n - 1, at = -1;
    while (lo <= hi) { var mid = (lo + hi) >> 1; if (conc.t[mid] <= t) { at = mid; lo = mid + 1; } else hi = mid - 1; }
    return at < 0 ? [0, 0, 0] : [conc.procs[at], conc.jobs[at], conc.cpu[at]];
  }
  var concHover = null;
  cc.addEventListener('mousemove', function (ev) {
    if (drag && drag.moved) { hideTip(); return; }
    var xy = localXY(ev, cc);
    if (xy[0] < LABELW) { hideTip(); if (concHover != null) { concHover = null; redraw(); } return; }
    var t = xt(xy[0]), v = concAt(t);
    concHover = t; redraw();
    tip.textContent = '';
    tip.dataset.t = String(t);
    tip.appendChild(el('div', 't', 'at ' + fmtUs(t)));
    line('jobs running', fmtInt(v[1]) + ' (images that forked nothing)');
    line('processes running', fmtInt(v[0]));
    line('CPU in use', conc.anyCpu ? v[2].toFixed(2) + ' cores (each process’s CPU spread over its life)' : 'not measured');
    placeTip(ev.clientX, ev.clientY);
  });
  cc.addEventListener('mouseleave', function () { hideTip(); concHover = null; redraw(); });

  // ---- interaction: zoom, pan, fold, hover --------------------------------------------------
  function zoom(f, at) {
    var t = at == null ? (view.t0 + view.t1) / 2 : at;
    var span = Math.min((TEND - TSTART) * 1.05, Math.max(10, (view.t1 - view.t0) * f));
    var a = t - (t - view.t0) * span / (view.t1 - view.t0);
    view.t0 = a; view.t1 = a + span; clampView(); redraw();
  }
  function clampView() {
    var span = view.t1 - view.t0, lo = TSTART - (TEND - TSTART) * 0.02, hi = TEND + (TEND - TSTART) * 0.03;
    if (view.t0 < lo) { view.t0 = lo; view.t1 = lo + span; }
    if (view.t1 > hi) { view.t1 = hi; view.t0 = Math.max(lo, hi - span); }
  }
  document.getElementById('zoom-in').addEventListener('click', function () { zoom(0.5); });
  document.getElementById('zoom-out').addEventListener('click', function () { zoom(2); });
  document.getElementById('zoom-fit').addEventListener('click', function () { view.t0 = TSTART; view.t1 = TEND; redraw(); });
  document.getElementById('expand-all').addEventListener('click', function () { collapsed.fill(0); rebuildRows(); layout(); redraw(); refreshTables(); });
  function localXY(ev, c) { var b = c.getBoundingClientRect(); return [ev.clientX - b.left, ev.clientY - b.top]; }
  function onWheel(ev, c, axisBand) {
    var xy = localXY(ev, c);
    if (xy[0] < LABELW) return;
    if (ev.ctrlKey || ev.metaKey || xy[1] < axisBand) { ev.preventDefault(); zoom(ev.deltaY > 0 ? 1.25 : 0.8, xt(xy[0])); }
    else if (ev.shiftKey || Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) {
      ev.preventDefault(); var d = (ev.deltaX || ev.deltaY) / (W - LABELW) * (view.t1 - view.t0);
      view.t0 += d; view.t1 += d; clampView(); redraw();
    }
  }
  gc.addEventListener('wheel', function (ev) { onWheel(ev, gc, AXIS); }, { passive: false });
  cc.addEventListener('wheel', function (ev) { onWheel(ev, cc, 160); }, { passive: false });
  var drag = null;
  function startDrag(ev, c) { var xy = localXY(ev, c); if (xy[0] < LABELW) return false; drag = { x: ev.clientX, t0: view.t0, t1: view.t1, moved: false }; c.classList.add('dragging'); return true; }
  gc.addEventListener('mousedown', function (ev) { if (ev.button === 0) startDrag(ev, gc); });
  cc.addEventListener('mousedown', function (ev) { if (ev.button === 0) startDrag(ev, cc); });
  window.addEventListener('mousemove', function (ev) {
    if (!drag) return;
    var dx = ev.clientX - drag.x; if (Math.abs(dx) > 2) drag.moved = true;
    var d = dx / (W - LABELW - 8) * (drag.t1 - drag.t0);
    view.t0 = drag.t0 - d; view.t1 = drag.t1 - d; clampView(); redraw();
  });
  var dragMoved = false;
  window.addEventListener('mouseup', function () { if (drag) { dragMoved = drag.moved; drag = null; gc.classList.remove('dragging'); cc.classList.remove('dragging'); } });
  wrap.addEventListener('scroll', function () { hideTip(); redraw(); });
  window.addEventListener('resize', function () { layout(); redraw(); });
  function rowAt(y) { var r = Math.floor((y - AXIS + wrap.scrollTop) / ROWH); return y >= AXIS && r >= 0 && r < nrows ? r : -1; }
  gc.addEventListener('click', function (ev) {
    var xy = localXY(ev, gc);
    if (xy[0] >= LABELW) {
      // a click (not the end of a drag) on a row's bar selects its process
      if (dragMoved) return;
      var rr = rowAt(xy[1]); if (rr < 0) return;
      var t = xt(xy[0]), slack = 3 / (W - LABELW) * (view.t1 - view.t0), j = rows[rr];
      if (t >= start[j] - slack && t <= end[j] + slack) select(j, false);
      return;
    }
    var r = rowAt(xy[1]); if (r < 0) return;
    var i = rows[r]; if (!nkids[i]) return;
    collapsed[i] = collapsed[i] ? 0 : 1; rebuildRows(); layout(); redraw();
  });
  var tip = document.getElementById('tip');
  function hideTip() { tip.className = 'hidden'; }
  function line(k, v) { var d = el('div'); d.appendChild(el('span', 'k', k + ': ')); d.appendChild(document.createTextNode(v)); tip.appendChild(d); }
  function showTip(i, k, cx0, cy0, region) {
    tip.textContent = '';
    var p = P[i], list = imgs(i), im = list[k];
    if (region) {
      var g = region;
      tip.appendChild(el('div', 't', 'Trace2 region ' + str(g[3])));
      if (g.length > 6) { line('category', str(g[6]) || '—'); line('label', str(g[7]) || '—'); if (g[8] >= 0) line('message', str(g[8])); }
      line('time', fmtUs(g[1]) + ' → ' + fmtUs(g[2]) + ' (' + fmtUs(g[2] - g[1]) + ')');
      line('thread', str(g[4]) + ', nesting ' + g[5]);
      tip.appendChild(el('div', 'sep', 'in the process'));
    }
    tip.appendChild(el('div', 't', label(i)));
    if (list.length > 1) line('image ' + (k + 1) + ' of ' + list.length, str(im[2]) + (im[4] ? ' (before its first exec)' : ''));
    // an image's own argv; a process of one image has its last exec's; a fork image has none
    var a = im[4] ? '' : argvText(list.length > 1 ? im[3] : (im[3] || p[7]));
    if (a) line('argv', a);
    else if (im[4] && p[1] >= 0) line('argv', 'none (it runs its parent\u2019s program: ' + label(p[1]) + ')');
    line('cwd', p[8] >= 0 ? str(p[8]) : 'not read');
    line('pid', String(p[0]) + (p[1] >= 0 ? ', parent ' + P[p[1]][0] : ''));
    line('status', statusText(i) + ' — ' + OUTCOME[outcome[i]] + (causeSet.has(i) ? ' (a cause of the failure)' : ''));
    line('time', fmtUs(p[2]) + ' → ' + (p[3] == null ? '…' : fmtUs(p[3])) + ' (' + fmtUs(end[i] - start[i]) + (list.length > 1 ? '; this image ' + fmtUs(im[1] - im[0]) : '') + ')');
    line('CPU', p[9] == null ? 'not measured' : fmtUs(p[9]));
    line('peak RSS', fmtKiB(p[10]));
    line('I/O', 'read ' + fmtBytes(p[11]) + ', written ' + fmtBytes(p[12]));
    if (F) tipFiles(i);
    if (onPath.has(i)) line('critical path', 'on it');
    var rg = regionsOf.get(i);
    if (rg && !region) {
      var names = rg.slice(0, 6).map(function (g) { return str(g[3]) + ' ' + fmtUs(g[2] - g[1]); });
      line('Trace2 regions', names.join(', ') + (rg.length > 6 ? ', \u2026 (' + rg.length + ')' : ''));
    }
    placeTip(cx0, cy0);
  }
  function placeTip(cx0, cy0) {
    tip.className = '';
    var tw = tip.offsetWidth, th = tip.offsetHeight;
    var left = cx0 + 14, topp = cy0 + 14;
    if (left + tw > window.innerWidth - 4) left = Math.max(4, cx0 - tw - 14);
    if (topp + th > window.innerHeight - 4) topp = Math.max(4, cy0 - th - 14);
    tip.style.left = left + 'px'; tip.style.top = topp + 'px';
  }
  gc.addEventListener('mousemove', function (ev) {
    if (drag && drag.moved) { hideTip(); return; }
    var xy = localXY(ev, gc), r = rowAt(xy[1]);
    if (r < 0) { hideTip(); return; }
    var i = rows[r], list = imgs(i), t = xt(xy[0]), k = 0, region = null;
    if (xy[0] >= LABELW) {
      var slack = 3 / (W - LABELW) * (view.t1 - view.t0);
      for (k = 0; k < list.length; k++) if (t >= list[k][0] - slack && t <= list[k][1] + slack) break;
      if (k === list.length) { hideTip(); return; }
      region = regionAt(i, t, 1 / (W - LABELW) * (view.t1 - view.t0));
    }
    gc.style.cursor = xy[0] < LABELW ? (nkids[i] ? 'pointer' : 'default') : '';
    showTip(i, k, ev.clientX, ev.clientY, region);
  });
  gc.addEventListener('mouseleave', hideTip);
  function reveal(i, k, from, to) {
    // unfold its ancestors, clear a search that hides it, scroll to it and fit its time
    for (var a = parent[i]; a >= 0 && a < N; a = parent[a]) collapsed[a] = 0;
    if (query && haystack()[i].indexOf(query) < 0) { query = ''; search.value = ''; refreshTables(); }
    rebuildRows(); layout();
    for (var r = 0; r < nrows; r++) if (rows[r] === i) break;
    wrap.scrollTop = Math.max(0, r * ROWH - (H - AXIS) / 3);
    var im = k != null ? imgs(i)[k] : null, a = im ? im[0] : start[i], b = im ? im[1] : end[i];
    if (from != null) { a = from; b = to; }
    var span = Math.max(b - a, 10);
    view.t0 = a - span * 0.5; view.t1 = b + span * 0.5; clampView(); redraw();
    wrap.scrollIntoView({ block: 'nearest' });
  }

  // ---- the selected process: its row marked, its details and files below the chart ----------
  // A click on a bar, on a row of a table that names a process, or on a process's link (a
  // file's producer or consumer) selects it: the chart shows it, the panel lists what it did.
  var detailSec = document.getElementById('detail-section'), detail = document.getElementById('detail'), DETAIL_MAX = 20000;
  function select(i, show, k) {
    if (!(i >= 0 && i < N)) return;
    selected = i;
    if (show !== false) reveal(i, k == null ? null : k); else redraw();
    showDetail(i);
    document.body.dataset.selected = String(i);
  }
  document.getElementById('detail-close').addEventListener('click', function () {
    selected = -1; detailSec.hidden = true; delete document.body.dataset.selected; redraw();
  });
  // a link that selects process j: its Gantt label (what tells it apart), its full label and pid
  // in the title
  function procLink(j, text) {
    var a = el('a', 'plink', text != null ? text : procName(j));
    a.href = '#'; a.title = label(j) + ' (pid ' + P[j][0] + ')'; a.dataset.proc = String(j);
    a.addEventListener('click', function (ev) { ev.preventDefault(); ev.stopPropagation(); select(j); });
    return a;
  }
  // a file's path; a click shows in the chart the processes that used it. Cut at its start (an
  // ellipsis) when the cell is narrow, so that its name shows (report.css: one text node, so
  // copying it copies the path).
  function fileLink(k) {
    var a = el('a', 'flink');
    a.appendChild(el('span', null, str(k)));
    a.href = '#'; a.title = str(k) + ' \u2014 click to show the processes that used it'; a.dataset.path = String(k);
    a.addEventListener('click', function (ev) { ev.preventDefault(); ev.stopPropagation(); setFileFilter(k); });
    return a;
  }
  // a long path kept to its end (the file's name and the directories nearest it): `…/bits/types.h`
  function shortPath(p, max) {
    if (p.length <= max) return p;
    var tail = p.slice(p.length - max + 1), j = tail.indexOf('/');
    return '\u2026' + (j > 0 && j < tail.length - 12 ? tail.slice(j) : tail);
  }
  // links to processes `list` (indices) into `parent`, the first `max`, then "+N more" that
  // lists the rest where it is
  function procLinks(parentEl, list, max) {
    max = max || 3;
    list.slice(0, max).forEach(function (j, n) { if (n) parentEl.appendChild(document.createTextNode(', ')); parentEl.appendChild(procLink(j)); });
    if (list.length > max) {
      var more = el('a', 'more-link', ' +' + fmtInt(list.length - max) + ' more'); more.href = '#';
      more.addEventListener('click', function (ev) {
        ev.preventDefault(); ev.stopPropagation();
        parentEl.removeChild(more); parentEl.classList.add('open');
        list.slice(max).forEach(function (j) { parentEl.appendChild(document.createTextNode(', ')); parentEl.appendChild(procLink(j)); });
      });
      parentEl.appendChild(more);
    }
    if (!list.length) parentEl.appendChild(document.createTextNode('\u2014'));
  }
  // the subtree of i in tree order (parents before children, depth first): i .. subEnd[i] - 1
  var subEnd = new Int32Array(N);
  for (i = 0; i < N; i++) subEnd[i] = i + 1;
  for (i = N - 1; i > 0; i--) if (parent[i] >= 0 && parent[i] < i && subEnd[i] > subEnd[parent[i]]) subEnd[parent[i]] = subEnd[i];
  function programName(j) { var l = imgs(j); return programOf(l[l.length - 1]); }
  // a process named short, in a list: its program and pid (`as 12764`)
  function procName(j) { return programName(j) + ' ' + P[j][0]; }
  // the tooltip's lines about files: what it read and wrote, and with the processes it ran
  var subRead = new Float64Array(F ? N : 0), subWrite = new Float64Array(F ? N : 0), subUsers = new Int32Array(F ? N : 0);
  if (F) for (i = N - 1; i > 0; i--) {
    var pa = parent[i]; if (!(pa >= 0 && pa < i)) continue;
    subRead[pa] += subRead[i] + nRead[i]; subWrite[pa] += subWrite[i] + nWrite[i]; subUsers[pa] += subUsers[i] + (fileRow.has(i) ? 1 : 0);
  }
  function tipFiles(i) {
    var c = fileCounts(i), sr = subRead[i], sw = subWrite[i], sp = subUsers[i], j;
    line('files', 'reads ' + fmtInt(c[0]) + ', writes ' + fmtInt(c[1]) + ' (click for the list)');
    if (sp) line('with what it ran', 'reads ' + fmtInt(sr) + ', writes ' + fmtInt(sw) + ' (' + fmtInt(sp) + (sp === 1 ? ' process)' : ' processes)'));
    // a few of the paths it and what it ran wrote and read: the build's own before the system's,
    // those under its working directory relative to it
    var seen = [new Set(), new Set()], list = [[], []], cwd = P[i][8] >= 0 ? str(P[i][8]) + '/' : null;
    for (j = i; j < subEnd[i] && j < i + 200; j++) usesOf(j).forEach(function (x) {
      if (x.a > 1 || seen[x.a].has(x.path)) return;
      seen[x.a].add(x.path); list[x.a].push(str(x.path));
    });
    // a directory holding more than F.more_than of them as one item, `…/bits/ (65)`
    [1, 0].forEach(function (a) {
      var l = list[a]; if (!l.length) return;
      var sys = function (p) { return p.lastIndexOf('/usr/', 0) === 0 ? 1 : 0; };
      var rel = function (p) { return cwd && cwd.length > 1 && p.lastIndexOf(cwd, 0) === 0 ? p.slice(cwd.length) : p; };
      var items = collapse(l, true).map(function (e, n) { return [sys(e.path), n, e.dir ? shortPath(rel(e.path), 28) + ' (' + fmtInt(e.members.length) + ')' : rel(e.path)]; })
        .sort(function (x, y) { return x[0] - y[0] || x[1] - y[1]; }).map(function (x) { return x[2]; });
      line(a ? 'writes' : 'reads', items.slice(0, 4).join(', ') + (items.length > 4 ? ', \u2026 (' + fmtInt(l.length) + ')' : ''));
    });
  }
  // The files graph of the selected process (buildprof's "produced by / consumed by", around
  // one process): the processes outside its subtree that wrote what it (or what it ran) read
  // afterwards, on the left; those that read what it wrote, on the right; each edge named by
  // the files (an SVG of text nodes and shapes, drawn only for the selection: it stays readable
  // on a big build).
  var SVGNS = 'http://www.w3.org/2000/svg';
  function svg(tag, attrs, text) {
    var e = document.createElementNS(SVGNS, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text != null) e.textContent = text;
    return e;
  }
  function baseName(p) { var j = p.lastIndexOf('/'); return j >= 0 ? p.slice(j + 1) : p; }
  function filesGraph(i) {
    var inside = function (j) { return j >= i && j < subEnd[i]; };
    var ups = new Map(), downs = new Map();
    function add(m, j, k) { var s = m.get(j); if (!s) m.set(j, s = new Set()); s.add(k); }
    // every use of the subtree (not only those the panel lists)
    for (var j = i; j < subEnd[i]; j++) {
      var u = fileRow.get(j);
      if (u) for (var q = 1; q + 2 < u.length; q += u[q] === 3 ? 4 : 3) {
        var a = u[q], k = u[q + 2], pr = a < 2 ? producedOf.get(k) : null;
        if (!pr) continue;
        if (a === 0 && consumed(pr, j)) pr[1].forEach(function (w) { if (!inside(w)) add(ups, w, k); });
        else if (a === 1) pr[2].forEach(function (c) { if (!inside(c)) add(downs, c, k); });
      }
    }
    if (!ups.size && !downs.size) return null;
    var MAXN = 8, BW = 300, BH = 38, GAP = 12, W0 = 1200;
    var left = Array.from(ups.entries()), right = Array.from(downs.entries());
    var rowsN = Math.max(1, Math.min(MAXN + 1, Math.max(left.length, right.length)));
    var H0 = rowsN * (BH + GAP) + GAP;
    var root = svg('svg', { viewBox: '0 0 ' + W0 + ' ' + H0, width: '100%', class: 'files-graph', role: 'img' });
    root.setAttribute('aria-label', 'Files graph: ' + left.length + ' producers of what it read, ' + right.length + ' consumers of what it wrote');
    var cx = (W0 - BW) / 2, cy = (H0 - BH) / 2;
    // a box: the process's label and, under it, the files of its edge
    function box(x, y, text, j, cls, files) {
      var g = svg('g', { class: 'gbox ' + (cls || '') });
      var r = svg('rect', { x: x, y: y, width: BW, height: BH, rx: 4 });
      g.appendChild(r);
      g.appendChild(svg('text', { x: x + 8, y: files ? y + 15 : y + BH / 2 + 4 }, text));
      if (files) g.appendChild(svg('text', { x: x + 8, y: y + 31, class: 'glabel' }, files));
      if (j != null) {
        g.appendChild(svg('title', {}, label(j) + ' (pid ' + P[j][0] + ')'));
        g.dataset.proc = String(j);
        g.addEventListener('click', function () { select(j); });
      }
      root.appendChild(g);
    }
    function side(list, x, toCenter) {
      var n = Math.min(list.length, MAXN), total = list.length > MAXN ? n + 1 : n;
      var y0 = (H0 - (total * (BH + GAP) - GAP)) / 2;
      list.slice(0, n).forEach(function (e, k) {
        var y = y0 + k * (BH + GAP), files = Array.from(e[1]).map(function (p) { return baseName(str(p)); });
        var x1 = toCenter ? x + BW : cx + BW, y1 = toCenter ? y + BH / 2 : cy + BH / 2;
        var x2 = toCenter ? cx : x, y2 = toCenter ? cy + BH / 2 : y + BH / 2;
        var mx = (x1 + x2) / 2;
        root.appendChild(svg('path', { d: 'M' + x1 + ' ' + y1 + ' C' + mx + ' ' + y1 + ' ' + mx + ' ' + y2 + ' ' + x2 + ' ' + y2, class: 'gedge', 'marker-end': 'url(#arrow)' }));
        var lab = (toCenter ? 'wrote ' : 'read ') + fitText(files.slice(0, 3).join(', '), 32) + (files.length > 3 ? ' +' + (files.length - 3) : '');
        box(x, y, fitText(rowLabel(e[0]), 40), e[0], null, lab);
      });
      if (list.length > MAXN) box(x, y0 + n * (BH + GAP), '\u2026 ' + fmtInt(list.length - MAXN) + ' more (listed below)', null, 'gmore');
    }
    var defs = svg('defs', {}), m = svg('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' });
    m.appendChild(svg('path', { d: 'M0 0 L10 5 L0 10 z', class: 'garrow' }));
    defs.appendChild(m); root.appendChild(defs);
    side(left, 0, true);
    side(right, W0 - BW, false);
    box(cx, cy, fitText(rowLabel(i), 40), null, 'gself');
    var wrapEl = el('div', 'graph-wrap');
    wrapEl.appendChild(el('h3', null, 'Produced by \u2192 this \u2192 consumed by'));
    wrapEl.appendChild(root);
    return wrapEl;
  }
  // text cut to n characters with an ellipsis (the SVG has no text-overflow)
  function fitText(t, n) { return t.length > n ? t.slice(0, n - 1) + '\u2026' : t; }
  // the uses `g` ([process, use]) as the panel lists them: each use a row, but those of a
  // directory holding more than F.more_than of the distinct files listed (the project's files
  // aside): one item for the directory, at its first use, with its uses
  function dirItems(g) {
    var order = [], at = new Map();
    g.forEach(function (r) { var p = r[1].path; if (!at.has(p)) { at.set(p, order.length); order.push(p); } });
    var entries = collapse(order.map(str), true), entryOf = new Int32Array(order.length);
    entries.forEach(function (e, n) { e.members.forEach(function (m) { entryOf[m] = n; }); });
    var items = [], item = new Map();
    g.forEach(function (r) {
      var e = entries[entryOf[at.get(r[1].path)]];
      if (!e.dir) { items.push({ row: r }); return; }
      var it = item.get(e);
      if (!it) { it = { dir: e.path, files: e.members.length, rows: [] }; item.set(e, it); items.push(it); }
      it.rows.push(r);
    });
    return items;
  }
  // a directory's path; a click shows in the chart the processes that used files in it
  function dirLink(d) {
    var a = el('a', 'flink');
    a.appendChild(el('span', null, d));
    a.href = '#'; a.title = d + ' \u2014 click to show the processes that used files in it'; a.dataset.dir = d;
    a.addEventListener('click', function (ev) { ev.preventDefault(); ev.stopPropagation(); setFileFilter(d); });
    return a;
  }
  // the panel: what the tooltip says, then the files it and the processes it ran used, by
  // access, each read file with its producer, each written file with its consumers
  function showDetail(i) {
    detail.textContent = '';
    detailSec.hidden = false;
    var p = P[i];
    detail.appendChild(el('p', 'detail-cmd', label(i)));
    var dl = el('dl', 'detail-facts');
    function fact(k, v) { var d = el('div'); d.appendChild(el('dt', null, k)); var dd = el('dd'); if (typeof v === 'string') dd.textContent = v; else dd.appendChild(v); d.appendChild(dd); dl.appendChild(d); }
    fact('pid', String(p[0]));
    if (p[1] >= 0) fact('parent', procLink(p[1]));
    fact('status', statusText(i) + ' \u2014 ' + OUTCOME[outcome[i]] + (causeSet.has(i) ? ' (a cause of the failure)' : ''));
    fact('time', fmtUs(p[2]) + ' \u2192 ' + (p[3] == null ? '\u2026' : fmtUs(p[3])) + ' (' + fmtUs(end[i] - start[i]) + ')');
    fact('CPU', p[9] == null ? 'not measured' : fmtUs(p[9]));
    fact('peak RSS', fmtKiB(p[10]));
    fact('cwd', p[8] >= 0 ? str(p[8]) : 'not read');
    detail.appendChild(dl);
    if (!F) return;
    // its uses and its descendants', each with who did it
    // read, written, created/renamed/deleted: the first DETAIL_MAX of each listed (the root of a
    // big build ran them all), every one counted
    var groups = [[], [], []], totals = [0, 0, 0];
    for (var j = i; j < subEnd[i]; j++) {
      if (!fileRow.has(j)) continue;
      usesOf(j).forEach(function (x) { var g = x.a === 0 ? 0 : x.a === 1 ? 1 : 2; totals[g]++; if (groups[g].length < DETAIL_MAX) groups[g].push([j, x]); });
    }
    var own = fileCounts(i), head = el('p', 'detail-files');
    head.textContent = 'Files: it reads ' + fmtInt(own[0]) + ' and writes ' + fmtInt(own[1]) +
      (subUsers[i] ? '; with the ' + fmtInt(subUsers[i]) + (subUsers[i] === 1 ? ' process' : ' processes') + ' it ran that used files, ' + fmtInt(totals[0]) + ' reads and ' + fmtInt(totals[1]) + ' writes in all' : '') + '.';
    detail.appendChild(head);
    var graph = filesGraph(i);
    if (graph) detail.appendChild(graph);
    var titles = ['Read', 'Written', 'Created, renamed, deleted'];
    groups.forEach(function (g, k) {
      if (!g.length) return;
      // read and written: a directory holding more than F.more_than of the files listed is one
      // row, its uses under it when opened (docs/files.md)
      var items = k < 2 ? dirItems(g) : g.map(function (r) { return { row: r }; });
      var ndirs = 0; items.forEach(function (it) { if (it.dir != null) ndirs++; });
      var box = el('div', 'detail-group');
      box.appendChild(el('h3', null, titles[k] + ' (' + fmtInt(totals[k]) + (totals[k] > g.length ? '; the first ' + fmtInt(g.length) + ' listed' : '') +
        (ndirs ? '; ' + fmtInt(ndirs) + (ndirs === 1 ? ' directory' : ' directories') + ' holding more than ' + fmtInt(F.more_than) + ' of the files on a line each' : '') + ')'));
      var tbl = el('table', 'detail-table'); tbl.id = 'detail-' + ['read', 'written', 'other'][k];
      var hr = el('tr');
      ['File', 'When', 'By', k === 0 ? 'Produced by' : k === 1 ? 'Consumed by' : 'What'].forEach(function (h) { hr.appendChild(el('th', null, h)); });
      var th = el('thead'); th.appendChild(hr); tbl.appendChild(th);
      var tb = el('tbody'); tbl.appendChild(tb);
      var shown = 0;
      function useRow(j, x, inDir) {
          var tr = el('tr', inDir ? 'in-dir' : null);
          if (inDir) tr.hidden = true;
          tr.dataset.proc = String(j); tr.dataset.path = String(x.path); tr.dataset.access = ACCESS[x.a];
          var f = el('td', 'path'); f.appendChild(fileLink(x.path)); tr.appendChild(f);
          tr.appendChild(el('td', 'num', fmtUs(x.t)));
          var by = el('td', 'cmd');
          if (j === i) by.textContent = 'itself'; else by.appendChild(procLink(j));
          tr.appendChild(by);
          var rel = el('td', 'cmd'), pr = producedOf.get(x.path);
          // a read of a file another process wrote before: its producers (the summary's rule)
          if (k === 0) procLinks(rel, pr && consumed(pr, j) ? pr[1] : []);
          else if (k === 1) procLinks(rel, pr ? pr[2] : []);
          else { rel.textContent = ACCESS[x.a]; if (x.a === 3) { rel.textContent += ' to '; rel.appendChild(fileLink(x.to)); } }
          tr.appendChild(rel);
          return tr;
      }
      // a directory's row: its path (a click shows in the chart the processes that used files
      // in it), how many files, the first time, who, its most used files; a click on the row
      // opens its uses under it
      function dirRow(it) {
        var tr = el('tr', 'dir-row'), members = [];
        tr.dataset.dir = it.dir; tr.dataset.files = String(it.files); tr.dataset.access = ACCESS[k];
        var f = el('td', 'path'), tg = el('button', 'dir-toggle', '\u25b8'); tg.type = 'button'; tg.title = 'Show its ' + fmtInt(it.rows.length) + ' uses';
        f.appendChild(tg); f.appendChild(dirLink(it.dir));
        var t0 = Infinity, who = [], seenP = new Set(), per = new Map(), rel = [], seenR = new Set();
        it.rows.forEach(function (r) {
          if (r[1].t < t0) t0 = r[1].t;
          if (!seenP.has(r[0])) { seenP.add(r[0]); who.push(r[0]); }
          per.set(r[1].path, (per.get(r[1].path) || 0) + 1);
          // the producers of what was read in it, the consumers of what was written (as a use's row has them)
          var pr = producedOf.get(r[1].path);
          (k === 0 ? (pr && consumed(pr, r[0]) ? pr[1] : []) : (pr ? pr[2] : [])).forEach(function (j) { if (!seenR.has(j)) { seenR.add(j); rel.push(j); } });
        });
        // its most used files (by how many of the processes listed used each), by name
        var top = Array.from(per.entries()).map(function (e, n) { return [e[1], n, e[0]]; }).sort(function (a, b) { return b[0] - a[0] || a[1] - b[1]; })
          .slice(0, 3).map(function (e) { return str(e[2]).slice(it.dir.length); });
        f.appendChild(el('span', 'dir-count', ' ' + fmtInt(it.files) + ' files: ' + top.join(', ') + (top.length < it.files ? ', \u2026' : '')));
        tr.appendChild(f);
        tr.appendChild(el('td', 'num', fmtUs(t0)));
        var by = el('td', 'cmd');
        if (who.length === 1 && who[0] === i) by.textContent = 'itself'; else procLinks(by, who, 2);
        tr.appendChild(by);
        var rc = el('td', 'cmd'); procLinks(rc, rel, 2); tr.appendChild(rc);
        // its uses' rows made when first opened (a big build's root has thousands)
        tr.addEventListener('click', function () {
          var open = !tr.classList.contains('open');
          if (open && !members.length) {
            var frag = document.createDocumentFragment();
            it.rows.forEach(function (r) { var m = useRow(r[0], r[1], true); members.push(m); frag.appendChild(m); });
            tr.after(frag);
          }
          tr.classList.toggle('open', open); tg.textContent = open ? '\u25be' : '\u25b8';
          members.forEach(function (m) { m.hidden = !open; });
        });
        return tr;
      }
      function more(n) {
        var stop = Math.min(items.length, shown + n), frag = document.createDocumentFragment();
        for (; shown < stop; shown++) {
          var it = items[shown];
          if (it.dir == null) { frag.appendChild(useRow(it.row[0], it.row[1], false)); continue; }
          frag.appendChild(dirRow(it));
        }
        tb.appendChild(frag);
        btn.hidden = shown >= items.length;
        btn.textContent = 'Show all ' + fmtInt(items.length) + (ndirs ? ' lines' : '');
      }
      box.appendChild(tbl);
      var btn = el('button', 'more'); btn.type = 'button';
      btn.addEventListener('click', function () { more(items.length); });
      box.appendChild(btn);
      more(50);
      detail.appendChild(box);
    });
    if (!groups[0].length && !groups[1].length && !groups[2].length) detail.appendChild(el('p', 'empty', 'No file used (of those --files records).'));
  }

  // ---- the file filter: the chart shows the processes that used one file --------------------
  var ffBox = document.getElementById('file-filter'), ffText = document.getElementById('file-filter-text');
  // k: a path's string index, or a directory (a string ending in `/`): the processes that used
  // a file directly in it
  function setFileFilter(k) {
    if (k == null) { fileFilter = null; ffBox.hidden = true; delete document.body.dataset.file; }
    else {
      var users = new Uint8Array(N), n = 0, isDir = typeof k === 'string', inDir = new Map();
      var hit = isDir ? function (p) { var h = inDir.get(p); if (h == null) { h = parentDir(str(p)) === k; inDir.set(p, h); } return h; } : function (p) { return p === k; };
      fileRow.forEach(function (u, j) { for (var q = 1; q + 2 < u.length;) { if (hit(u[q + 2])) { if (!users[j]) n++; users[j] = 1; } q += u[q] === 3 ? 4 : 3; } });
      fileFilter = { path: k, users: users, count: n };
      // the time they used it in: from the first one's start to the last one's end
      var a = Infinity, b = -Infinity;
      for (var j = 0; j < N; j++) if (users[j]) { if (start[j] < a) a = start[j]; if (end[j] > b) b = end[j]; }
      if (a < b) { var span = b - a; view.t0 = a - span * 0.03; view.t1 = b + span * 0.03; clampView(); }
      var path = isDir ? k : str(k);
      ffText.textContent = 'used ' + (isDir ? 'files in ' : '') + shortPath(path, 60);
      ffBox.title = path;
      ffBox.hidden = false;
      document.body.dataset.file = String(k);
    }
    rebuildRows(); layout(); wrap.scrollTop = 0; redraw();
    wrap.scrollIntoView({ block: 'nearest' });
  }
  document.getElementById('file-filter-clear').addEventListener('click', function () { setFileFilter(null); });

  // ---- tables --------------------------------------------------------------------------------
  // The tables: table.js's, filtered by the search (a row of a process by the process's text,
  // else by its own), a click on a row finds it in the Gantt.
  var tables = [];
  function makeTable(spec, into) {
    spec.match = function (r, q) { return r.text != null ? r.text.indexOf(q) >= 0 : haystack()[r.proc].indexOf(q) >= 0; };
    spec.onRow = spec.onRow || function (r) { if (r.proc != null) select(r.proc, true, r.image != null ? r.image : null); };
    spec.rowClass = function (r) { return r.cause ? 'cause-row' : ''; };
    var st = proctraceTables.make(into || document.getElementById('tables'), spec);
    if (query) st.filter(query);
    tables.push(st);
    return st;
  }
  function refreshTables() { tables.forEach(function (st) { st.filter(query); }); }

  // The tables the summary has are the summary's (src/report/summary): the data carries its
  // figures — every image its slowest list draws from, in its order (`slow`), every program
  // (`programs`), how its cost lists name a process (`cost_labels`) — so the page and
  // `--summary-json` agree; failures follow its order (start, then pid).
  var seq = 0;
  var slowRows = [], progRows = [], costRows = [], failRows = [];
  (function aggregates() {
    var SL = D.slow || [];
    for (var q = 0; q + 3 < SL.length; q += 4) {
      var i = SL[q], k = SL[q + 1];
      if (i < 0 || i >= N) continue;
      var im = imgs(i)[k] || imgs(i)[0];
      slowRows.push({ proc: i, image: k, seq: seq++, duration: SL[q + 2], command: str(im[2]), program: str(SL[q + 3]), pid: P[i][0], status: statusText(i), start: im[0] });
    }
    (D.programs || []).forEach(function (g) {
      var name = str(g[0]);
      progRows.push({ program: name, count: g[1], total: g[2], max: g[3], mean: g[1] ? g[2] / g[1] : null, cpu: g[4], rss: g[5], text: name.toLowerCase(), seq: seq++ });
    });
    var costLabel = new Map(), CL = D.cost_labels || [];
    for (q = 0; q + 1 < CL.length; q += 2) costLabel.set(CL[q], CL[q + 1]);
    var fails = [];
    for (i = 0; i < N; i++) {
      var p = P[i];
      if (p[9] != null || p[10] != null) {
        var known = p[2] != null && p[3] != null && p[4] != null && outcome[i] !== 4;
        costRows.push({ proc: i, seq: seq++, cpu: p[9], rss: p[10], read: p[11], written: p[12], duration: known ? p[3] - p[2] : null, command: costLabel.has(i) ? str(costLabel.get(i)) : label(i), pid: p[0] });
      }
      if (outcome[i] === 1 || outcome[i] === 2 || outcome[i] === 3 || causeSet.has(i)) fails.push(i);
    }
    fails.sort(function (a, b) {
      var x = P[a][2], y = P[b][2];
      if (x !== y) { if (x == null) return -1; if (y == null) return 1; return x - y; }
      return P[a][0] - P[b][0] || a - b;
    });
    fails.forEach(function (i) {
      var c = causeSet.has(i);
      failRows.push({ proc: i, seq: seq++, cause: c, kind: c ? 'cause' : outcome[i] === 1 ? 'failure' : outcome[i] === 2 ? 'handled' : 'killed', status: statusText(i), duration: end[i] - start[i], command: label(i), cwd: P[i][8] >= 0 ? str(P[i][8]) : '', pid: P[i][0], rank: c ? 0 : outcome[i] === 1 ? 1 : 2, start: start[i] });
    });
  })();
  // By directory, for compiles: a compiler driver's `-c` of a source file, grouped by the
  // file's directory (resolved against the process's cwd); time is the driver's, CPU that of its
  // whole subtree (cc1, as).
  var dirRows = (function () {
    var sub = new Float64Array(N), any = new Uint8Array(N);
    for (var i = N - 1; i >= 0; i--) {
      if (P[i][9] != null) { sub[i] += P[i][9]; any[i] = 1; }
      var pa = parent[i]; if (pa >= 0 && pa < i) { sub[pa] += sub[i]; if (any[i]) any[pa] = 1; }
    }
    var CC = /^(cc|c\+\+|gcc|g\+\+|clang|clang\+\+|[\w.+-]*-(gcc|g\+\+|clang|clang\+\+|cc|c\+\+))(-[\d.]+)?$/;
    var SRC = /\.(c|cc|cp|cpp|cxx|c\+\+|m|mm|s|S|sx|f|f90|f95|for)$/;
    function norm(path) {
      var out = [], parts = path.split('/');
      for (var k = 0; k < parts.length; k++) {
        var w = parts[k];
        if (w === '' || w === '.') { if (k === 0 && w === '') out.push(''); continue; }
        if (w === '..' && out.length && out[out.length - 1] !== '..' && out[out.length - 1] !== '') out.pop(); else out.push(w);
      }
      return out.join('/') || '/';
    }
    var dirs = new Map();
    for (i = 0; i < N; i++) {
      var a = P[i][7]; if (!a || !a.length || P[i][2] == null || P[i][3] == null) continue;
      if (!CC.test(base(str(a[0])))) continue;
      var hasC = false, src = null;
      for (var k = 1; k < a.length; k++) {
        var w = str(a[k]);
        if (w === '-c') hasC = true;
        else if (w === '-o' || w === '-MF' || w === '-MT' || w === '-MQ') k++;
        else if (w[0] !== '-' && SRC.test(w)) src = w;
      }
      if (!hasC || !src) continue;
      var j = src.lastIndexOf('/'), dir = j >= 0 ? src.slice(0, j) || '/' : '.';
      var cwd = P[i][8] >= 0 ? str(P[i][8]) : '';
      if (dir[0] !== '/' && cwd) dir = norm(cwd + '/' + dir); else dir = norm(dir);
      var g = dirs.get(dir);
      if (!g) { g = { directory: dir, count: 0, total: 0, max: 0, cpu: null, text: dir.toLowerCase(), seq: seq++ }; dirs.set(dir, g); }
      var d = end[i] - start[i];
      g.count++; g.total += d; if (d > g.max) g.max = d;
      if (any[i]) g.cpu = (g.cpu || 0) + sub[i];
    }
    return Array.from(dirs.values());
  })();
  var dur = function (v) { return fmtUs(v); };
  makeTable({ id: 'slowest', title: 'Slowest', sort: 'duration', rows: slowRows,
    hint: 'Programs run (images), longest first; a child doing nearly all of its parent\u2019s work (\u2265 90%) is folded into the parent. Click a row to find it in the chart.',
    cols: [{ key: 'duration', label: 'Duration', num: true, fmt: dur }, { key: 'program', label: 'Program' }, { key: 'command', label: 'Command', mono: true }, { key: 'status', label: 'Status' }, { key: 'pid', label: 'PID', num: true }] });
  makeTable({ id: 'by-program', title: 'By program', sort: 'total', rows: progRows,
    hint: 'Every image, grouped by program (argv[0]\u2019s base name), as the summary counts them: time is that of the images of processes that exited; CPU is the sum over processes whose last program it is; peak memory the largest one process reached.',
    cols: [{ key: 'program', label: 'Program', mono: true }, { key: 'count', label: 'Runs', num: true, fmt: fmtInt }, { key: 'total', label: 'Total time', num: true, fmt: dur }, { key: 'mean', label: 'Mean', num: true, fmt: dur }, { key: 'max', label: 'Longest', num: true, fmt: dur }, { key: 'cpu', label: 'CPU', num: true, fmt: dur }, { key: 'rss', label: 'Peak RSS', num: true, fmt: fmtKiB }] });
  if (dirRows.length) makeTable({ id: 'by-directory', title: 'Compiles by directory', sort: 'total', rows: dirRows,
    hint: 'Each compiler driver run with -c, grouped by its source file\u2019s directory; CPU counts the compiler it ran (cc1, as).',
    cols: [{ key: 'directory', label: 'Directory', mono: true }, { key: 'count', label: 'Compiles', num: true, fmt: fmtInt }, { key: 'total', label: 'Total time', num: true, fmt: dur }, { key: 'max', label: 'Longest', num: true, fmt: dur }, { key: 'cpu', label: 'CPU', num: true, fmt: dur }] });
  makeTable({ id: 'failures', title: 'Failures and causes', sort: 'rank', desc: false, rows: failRows,
    hint: 'Causes are the deepest failures (what failed first, not make); handled non-zero exits (configure probes, test, grep -q) did not fail the run.',
    cols: [{ key: 'rank', label: 'Kind', num: false, fmt: function (v, r) { return r.kind; } }, { key: 'status', label: 'Status' }, { key: 'duration', label: 'Duration', num: true, fmt: dur }, { key: 'command', label: 'Command', mono: true }, { key: 'cwd', label: 'Directory', mono: true }, { key: 'pid', label: 'PID', num: true }] });
  makeTable({ id: 'hungry-cpu', title: 'Hungriest by CPU', sort: 'cpu', rows: costRows,
    hint: 'User + system CPU of each process itself (not its children).',
    cols: [{ key: 'cpu', label: 'CPU', num: true, fmt: dur }, { key: 'rss', label: 'Peak RSS', num: true, fmt: fmtKiB }, { key: 'duration', label: 'Duration', num: true, fmt: dur }, { key: 'command', label: 'Command', mono: true }, { key: 'read', label: 'Read', num: true, fmt: fmtBytes }, { key: 'written', label: 'Written', num: true, fmt: fmtBytes }, { key: 'pid', label: 'PID', num: true }] });
  makeTable({ id: 'hungry-mem', title: 'Hungriest by memory', sort: 'rss', rows: costRows.slice(),
    hint: 'Peak resident set of each process.',
    cols: [{ key: 'rss', label: 'Peak RSS', num: true, fmt: fmtKiB }, { key: 'cpu', label: 'CPU', num: true, fmt: dur }, { key: 'duration', label: 'Duration', num: true, fmt: dur }, { key: 'command', label: 'Command', mono: true }, { key: 'pid', label: 'PID', num: true }] });

  // ---- files (`--files`): the most-read files and what was produced and consumed --------------
  // Both are the summary's (src/report/summary: its `most_read` is this table's first ten, its
  // `produced` this one's rows), by record rather than pid.
  if (F) (function filesTables() {
    document.getElementById('files-section').hidden = false;
    var hint = document.getElementById('files-hint');
    hint.textContent = filesLine() + '.' + (F.lost ? ' The kernel dropped file events ' + fmtInt(F.lost) + ' times: the lists are incomplete.' : '') +
      (F.dropped ? ' ' + fmtInt(F.dropped) + ' uses over the caps were not kept.' : '') +
      ' A click on a file shows in the chart the processes that used it; on a process, selects it.';
    var into = document.getElementById('files-tables');
    var labels = function (list) { return list.map(function (j) { return label(j); }).join('\n'); };
    var readRows = [], MR = F.most_read || [];
    for (var q = 0; q + 1 < MR.length; q += 2) {
      var k = MR[q], pr = producedOf.get(k), path = str(k);
      readRows.push({ seq: seq++, path: path, pathIdx: k, readers: MR[q + 1], producers: pr ? pr[1] : [], producer: pr ? procName(pr[1][0]) : null,
        text: (path + '\n' + (pr ? labels(pr[1]) : '')).toLowerCase() });
    }
    var fileCol = { key: 'path', label: 'File', cls: 'cmd', render: function (td, v, r) { td.title = v; td.appendChild(fileLink(r.pathIdx)); } };
    var linksCol = function (key, labelText, listKey, max) {
      return { key: key, label: labelText, cls: 'cmd links', render: function (td, v, r) { procLinks(td, r[listKey], max); } };
    };
    makeTable({ id: 'files-read', title: 'Most-read files', sort: 'readers', rows: readRows,
      onRow: function (r) { setFileFilter(r.pathIdx); },
      hint: 'Every file read, by how many processes read it (the summary\u2019s most-read list is the first ten); written by: the processes that wrote it before another read it.',
      cols: [fileCol, { key: 'readers', label: 'Read by', num: true, fmt: fmtInt }, linksCol('producer', 'Written by', 'producers', 3)] }, into);
    // The whole run's files by directory: the summary's `directories` (a directory holding
    // more than F.more_than of the files read, or written, on one row), read then written.
    var dirRows = [], DR = F.dirs || [];
    DR.forEach(function (x) {
      var path = str(x[1]);
      dirRows.push({ seq: seq++, path: path, pathIdx: x[1], dir: x[2] === 1, access: x[0] ? 'written' : 'read', files: x[3], processes: x[4], top: x[5],
        text: (path + '\n' + x[5].map(str).join('\n')).toLowerCase() });
    });
    if (dirRows.some(function (r) { return r.dir; })) makeTable({ id: 'files-dirs', title: 'Files by directory', sort: 'files', rows: dirRows,
      onRow: function (r) { setFileFilter(r.dir ? r.path : r.pathIdx); },
      hint: 'The files read and written, a directory holding more than ' + fmtInt(F.more_than) + ' of them on one row (--files-dirs; the most used named), the others one by one; processes: how many used them. A click on a row shows in the chart the processes that used them.',
      cols: [{ key: 'path', label: 'Directory or file', cls: 'cmd', render: function (td, v, r) { td.title = v; td.appendChild(r.dir ? dirLink(v) : fileLink(r.pathIdx)); } },
        { key: 'access', label: 'Access' }, { key: 'files', label: 'Files', num: true, fmt: fmtInt }, { key: 'processes', label: 'Processes', num: true, fmt: fmtInt },
        { key: 'topText', label: 'Most used', cls: 'cmd', render: function (td, v, r) {
          r.top.forEach(function (t, n) { if (n) td.appendChild(document.createTextNode(', ')); var a = fileLink(t); a.firstChild.textContent = str(t).slice(r.path.length); td.appendChild(a); });
          if (r.dir && r.files > r.top.length) td.appendChild(document.createTextNode(', \u2026'));
          if (!r.dir) td.textContent = '\u2014';
        } }] }, into);
    var prodRows = [];
    (F.produced || []).forEach(function (x) {
      var path = str(x[0]);
      prodRows.push({ seq: seq++, path: path, pathIdx: x[0], producers: x[1], consumers: x[2], producer: x[1].length ? procName(x[1][0]) : null,
        count: x[2].length, consumer: x[2].length ? procName(x[2][0]) : null, proc: x[1].length ? x[1][0] : null,
        text: (path + '\n' + labels(x[1]) + '\n' + labels(x[2])).toLowerCase() });
    });
    makeTable({ id: 'files-produced', title: 'Produced and consumed', sort: 'seq', desc: false, rows: prodRows,
      hint: 'Each file one process wrote and another read afterwards: its producers and its consumers (producer \u2192 file \u2192 consumers), in the order first seen. A click on a row selects its producer.',
      cols: [fileCol, linksCol('producer', 'Producer', 'producers', 3), { key: 'count', label: 'Consumers', num: true, fmt: fmtInt }, linksCol('consumer', 'Consumed by', 'consumers', 3)] }, into);
  })();

  // ---- search ----------------------------------------------------------------------------------
  var search = document.getElementById('search'), timer = 0;
  function applySearch() {
    var q = search.value.trim().toLowerCase();
    if (q === query) return;
    query = q; rebuildRows(); layout(); wrap.scrollTop = 0; redraw(); refreshTables();
    document.body.dataset.query = query;
  }
  search.addEventListener('input', function () { clearTimeout(timer); timer = setTimeout(applySearch, N > 20000 ? 150 : 0); });
  search.addEventListener('search', applySearch);
  search.addEventListener('keydown', function (ev) { if (ev.key === 'Enter') { clearTimeout(timer); applySearch(); } });

  // ---- first draw; then the "ready" marker the tests wait for -----------------------------------
  gc.setAttribute('role', 'img');
  gc.setAttribute('aria-label', 'Gantt chart of ' + N + ' processes over ' + fmtUs(TEND) + '; the tables below list the same processes');
  cc.setAttribute('role', 'img');
  cc.setAttribute('aria-label', 'Processes and jobs running over time; peak ' + conc.max + ' processes');
  rebuildRows(); layout(); drawGantt(); drawConc();
  window.proctrace = {
    records: N,
    rows: function () { return nrows; },
    matches: function () { return matches; },
    search: function (q) { search.value = q; applySearch(); return nrows; },
    view: function () { return [view.t0, view.t1]; },
    // the Gantt's row r as [process index, its label, the y of its middle on the canvas]
    row: function (r) { return r >= 0 && r < nrows ? [rows[r], label(rows[r]), AXIS + r * ROWH - wrap.scrollTop + ROWH / 2] : null; },
    // show process i (and the time from..to, else its life) as a click on it in a table does
    reveal: function (i, from, to) { reveal(i, null, from, to); drawGantt(); drawConc(); },
    // where on the Gantt's canvas time t of process i's row is: [x, y], null when not in view
    at: function (i, t) {
      for (var r = 0; r < nrows; r++) if (rows[r] === i) break;
      var y = AXIS + r * ROWH - wrap.scrollTop + ROWH / 2;
      return r < nrows && y > AXIS && y < H && t >= view.t0 && t <= view.t1 ? [tx(t), y] : null;
    },
    // the selected process's index (-1: none); select process i as a click on it does
    selected: function () { return selected; },
    select: function (i) { select(i); drawGantt(); drawConc(); },
    // the file whose users the chart shows: [its string index, how many used it], null for none
    fileFilter: function () { return fileFilter ? [fileFilter.path, fileFilter.count] : null; },
    setupMs: 0
  };
  document.body.dataset.records = String(N);
  requestAnimationFrame(function () {
    window.proctrace.setupMs = performance.now() - T0;
    document.body.dataset.ready = '1';
  });
})();
