// Sortable tables, shared by a run's page (report.js) and a diff's (diff.js): a click on a
// header sorts by that column (numbers largest first, a second click reverses), the first
// `top` rows are shown, then "Show more". Cells are text nodes only (the rows hold untrusted
// argv); a number's cell keeps its value in data-v, a bar column draws a bar as long as the
// value's share of the column's largest.
var proctraceTables = (function () {
  'use strict';
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text != null) e.textContent = text;
    return e;
  }
  function fmtInt(n) { return n == null ? '\u2014' : Number(n).toLocaleString('en-US'); }
  // spec: { id, title, hint, cols: [{ key, label, num, mono, fmt(v, row), bar, render(td, v, row),
  //   cls }], rows, sort (a key of the rows, a column's or not: `seq`, their given order),
  //   desc (default true), top (default 20), match(row, query) (default: row.text contains it),
  //   onRow(row) (a click on a row), rowClass(row) }
  function make(parent, spec) {
    var top = spec.top || 20;
    var sec = el('section', 'table');
    var h = el('h2', null, spec.title + ' '); var count = el('span', 'count'); h.appendChild(count);
    sec.appendChild(h);
    if (spec.hint) sec.appendChild(el('p', 'hint', spec.hint));
    var tbl = el('table'); tbl.id = spec.id;
    var thead = el('thead'), tr = el('tr'), tb = el('tbody');
    var more = el('button', 'more', 'Show more'); more.type = 'button';
    var st = { spec: spec, key: spec.sort, desc: spec.desc !== false, limit: top, shown: spec.rows.slice(), ths: [], query: '' };
    spec.rows.forEach(function (r, k) { if (r.seq == null) r.seq = k; });
    // the largest magnitude of each bar column, over every row
    var barMax = {};
    spec.cols.forEach(function (c) {
      if (!c.bar) return;
      var m = 0; spec.rows.forEach(function (r) { var v = Math.abs(r[c.key] || 0); if (v > m) m = v; });
      barMax[c.key] = m || 1;
    });
    spec.cols.forEach(function (c) {
      var th = el('th', c.num || c.bar ? 'num' : '', c.label); th.dataset.col = c.key;
      th.title = 'Sort by ' + c.label;
      th.addEventListener('click', function () {
        if (st.key === c.key) st.desc = !st.desc; else { st.key = c.key; st.desc = !!(c.num || c.bar); }
        st.limit = top; sortRows(); render();
      });
      st.ths.push(th); tr.appendChild(th);
    });
    thead.appendChild(tr); tbl.appendChild(thead); tbl.appendChild(tb); sec.appendChild(tbl);
    more.addEventListener('click', function () { st.limit *= 4; render(); });
    sec.appendChild(more);
    parent.appendChild(sec);
    function matches(r, q) { return spec.match ? spec.match(r, q) : (r.text || '').indexOf(q) >= 0; }
    function filterRows() { var q = st.query; st.shown = q ? spec.rows.filter(function (r) { return matches(r, q); }) : spec.rows.slice(); }
    function sortRows() {
      var k = st.key, d = st.desc ? -1 : 1;
      st.shown.sort(function (a, b) {
        var x = a[k], y = b[k];
        if (x == null && y == null) return a.seq - b.seq; if (x == null) return 1; if (y == null) return -1;
        return (x < y ? -1 : x > y ? 1 : 0) * d || (a.seq - b.seq);
      });
    }
    function render() {
      tb.textContent = '';
      st.ths.forEach(function (th) { var on = th.dataset.col === st.key; th.classList.toggle('sorted', on); th.classList.toggle('asc', on && !st.desc); });
      var n = Math.min(st.limit, st.shown.length);
      var frag = document.createDocumentFragment();
      for (var r = 0; r < n; r++) {
        var row = st.shown[r], tr = el('tr', spec.rowClass ? spec.rowClass(row) : '');
        spec.cols.forEach(function (c) {
          var v = row[c.key], td;
          if (c.bar) {
            td = el('td', 'bar-cell');
            var b = el('div', v >= 0 ? 'bar up' : 'bar down');
            b.style.width = Math.max(1, Math.abs(v || 0) / barMax[c.key] * 120).toFixed(0) + 'px';
            td.appendChild(b);
          } else if (c.render) {
            // the column draws its cell itself (links, lists): text nodes only
            td = el('td', c.cls || '');
            c.render(td, v, row);
          } else {
            td = el('td', c.num ? 'num' : (c.mono ? 'cmd' : ''), c.fmt ? c.fmt(v, row) : (v == null ? '\u2014' : String(v)));
            if (c.mono && v != null) td.title = String(v);
          }
          if (v != null && (c.num || c.bar)) td.dataset.v = String(v);
          tr.appendChild(td);
        });
        if (row.proc != null) { tr.dataset.proc = String(row.proc); if (row.image != null) tr.dataset.image = String(row.image); }
        if (spec.onRow) tr.addEventListener('click', onClick(row));
        frag.appendChild(tr);
      }
      tb.appendChild(frag);
      if (!st.shown.length) { var e = el('tr'); var td = el('td', 'empty', st.query ? 'Nothing matches the filter.' : 'None.'); td.colSpan = spec.cols.length; e.appendChild(td); tb.appendChild(e); }
      count.textContent = st.shown.length > n ? '(first ' + fmtInt(n) + ' of ' + fmtInt(st.shown.length) + ')' : '(' + fmtInt(st.shown.length) + ')';
      more.className = st.shown.length > n ? 'more' : 'more hidden-btn';
      more.hidden = !(st.shown.length > n);
    }
    function onClick(row) { return function () { spec.onRow(row); }; }
    // rows matching `q` (already lower-cased; '' for all), from the first again
    st.filter = function (q) { st.query = q; filterRows(); st.limit = top; sortRows(); render(); };
    st.table = tbl;
    filterRows(); sortRows(); render();
    return st;
  }
  return { make: make };
})();
