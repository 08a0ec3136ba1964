// Loads proctrace HTML reports in headless Chromium (/usr/bin/chromium, through puppeteer-core,
// which downloads no browser) and prints ONE JSON object per page on stdout, one a line:
//   node tests/html/check.mjs [--search TEXT] [--select TEXT] [--screenshot DIR] [--timeout MS] [--load-only] PAGE.html...
// For each page: console and page errors, every request that was not for the page itself (an
// offline page makes none: requests are intercepted and refused), the record count in
// #proctrace-data and the rows the Gantt draws, the visible text, the rows left after typing
// TEXT into the search field, the slowest table's first durations after sorting it by another
// column and then by duration, and the load time (navigation until the page's "ready" marker).
// A page with files (`--files`) also gets, in `files`: the process whose label contains the
// --select TEXT hovered (its tooltip) and clicked (the selected-process panel's file lists: as
// shown, with its directory rows closed, then with each opened), a click on the first producer
// and consumer links of the produced-and-consumed table, on the largest directory of the
// by-directory table and on the first file of the most-read table (what each selected or
// filtered).
import { existsSync, mkdirSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import puppeteer from 'puppeteer-core';

const args = process.argv.slice(2);
const opts = { search: 'cc1', select: null, screenshot: null, timeout: 60000, loadOnly: false };
const pages = [];
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a === '--search') opts.search = args[++i];
  else if (a === '--screenshot') opts.screenshot = args[++i];
  else if (a === '--select') opts.select = args[++i];
  else if (a === '--timeout') opts.timeout = Number(args[++i]);
  // for bench/html-scale: load, report the times and the heap, nothing else
  else if (a === '--load-only') opts.loadOnly = true;
  else if (a.startsWith('--')) { console.error(`check.mjs: unknown option ${a}`); process.exit(2); }
  else pages.push(resolve(a));
}
if (!pages.length) { console.error('usage: check.mjs [--search TEXT] [--screenshot DIR] [--timeout MS] PAGE.html...'); process.exit(2); }
const chromium = process.env.CHROMIUM || '/usr/bin/chromium';
if (!existsSync(chromium)) { console.error(`check.mjs: no browser at ${chromium} (run tests/run to install chromium)`); process.exit(2); }
if (opts.screenshot) mkdirSync(opts.screenshot, { recursive: true });

const browser = await puppeteer.launch({
  executablePath: chromium,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--disable-extensions'],
});
let failed = false;
try {
  for (const file of pages) {
    const url = pathToFileURL(file).href;
    const out = { page: file, console_errors: [], page_errors: [], foreign_requests: [], csp_violations: [] };
    const page = await browser.newPage();
    try {
      await page.setViewport({ width: 1400, height: 900 });
      await page.setRequestInterception(true);
      page.on('request', (req) => {
        const u = req.url();
        if (u === url || u.split('#')[0] === url) req.continue();
        else { out.foreign_requests.push(u); req.abort(); }
      });
      page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') out.console_errors.push(`${m.type()}: ${m.text()}`); });
      page.on('pageerror', (e) => out.page_errors.push(String(e && e.message || e)));
      checks: {
      const t0 = Date.now();
      await page.goto(url, { waitUntil: 'load', timeout: opts.timeout });
      await page.waitForSelector('body[data-ready="1"]', { timeout: opts.timeout });
      out.load_ms = Date.now() - t0;
      Object.assign(out, await page.evaluate(() => {
        const el = document.getElementById('proctrace-data');
        let records = null, data_error = null;
        try { const d = JSON.parse(el.textContent); records = d.procs ? d.procs.length : null; } catch (e) { data_error = String(e); }
        return {
          records, data_error,
          page_records: Number(document.body.dataset.records),
          diff: document.body.dataset.diff === '1',
          rows: Number(document.body.dataset.rows),
          setup_ms: Math.round(window.proctrace && window.proctrace.setupMs),
          title: document.title,
          csp: (document.querySelector('meta[http-equiv="Content-Security-Policy"]') || {}).content || null,
          text: document.body.innerText,
        };
      }));
      if (opts.loadOnly) {
        out.heap_mb = await page.evaluate(() => performance.memory ? Math.round(performance.memory.usedJSHeapSize / 1048576) : null);
        delete out.text;
        break checks;
      }
      if (opts.screenshot) {
        out.screenshot = resolve(opts.screenshot, basename(file).replace(/\.html?$/, '') + '.png');
        await page.screenshot({ path: out.screenshot, fullPage: true });
        await page.screenshot({ path: out.screenshot.replace(/\.png$/, '-top.png') });
        // and each part on its own (a full page is too tall to look at in one)
        for (const id of ['path-section', 'conc-section', 'tables', 'detail-section', 'files-section']) {
          const part = await page.$('#' + id + ':not([hidden])');
          if (part) await part.screenshot({ path: out.screenshot.replace(/\.png$/, '-' + id + '.png') });
        }
      }
      // every table's columns and first 20 rows as shown at load (each cell's text, a number's
      // value in data-v, its title, the processes its links select), before any search or sort
      out.tables = await page.evaluate(() => Object.fromEntries([...document.querySelectorAll('section.table table')].map((t) => [t.id, {
        cols: [...t.querySelectorAll('thead th')].map((th) => th.dataset.col),
        count: t.closest('section').querySelector('h2 .count').textContent,
        rows: [...t.querySelectorAll('tbody tr')].filter((tr) => !tr.querySelector('td.empty')).slice(0, 20)
          .map((tr) => [...tr.cells].map((td) => {
            const c = { t: td.textContent };
            if (td.dataset.v !== undefined) c.v = Number(td.dataset.v);
            if (td.title) c.title = td.title;
            const links = [...td.querySelectorAll('a.plink')];
            if (links.length) c.procs = links.map((a) => Number(a.dataset.proc));
            return c;
          })),
      }])));
      // the page's own script elements: traced text never adds one
      out.scripts = await page.evaluate(() => document.querySelectorAll('script').length);
      if (out.diff) {
        // a diff's page (diff.js): its lists and paths, filtered by its search field
        out.diff_rows = await page.evaluate(() => Number(document.body.dataset.rows));
        // the largest table as it opens, then sorted by each of its columns in turn, the change
        // bar last (its first 20 rows' values: a number's data-v, else the text), then by the
        // change bar a second time (ascending)
        const values = (id) => page.evaluate((id) => [...document.querySelectorAll('#' + id + ' tbody tr')].filter((tr) => !tr.querySelector('td.empty')).slice(0, 20)
          .map((tr) => [...tr.cells].map((td) => (td.dataset.v !== undefined ? Number(td.dataset.v) : td.textContent))), id);
        const big = await page.evaluate(() => { let best = null, n = -1; for (const t of document.querySelectorAll('.diff-tables table')) { const k = t.querySelectorAll('tbody tr:not(:has(td.empty))').length; if (k > n) { n = k; best = t.id; } } return best; });
        out.diff_sort = { table: big, cols: await page.evaluate((id) => [...document.querySelectorAll('#' + id + ' thead th')].map((th) => th.dataset.col), big), by: {} };
        out.diff_sort.first = await values(big);
        for (const col of [...out.diff_sort.cols.filter((c) => c !== 'bar'), 'bar']) {
          await page.click(`#${big} th[data-col="${col}"]`);
          out.diff_sort.by[col] = await values(big);
        }
        await page.click(`#${big} th[data-col="bar"]`);
        out.diff_sort.bar_asc = await values(big);
        out.diff_paths = await page.evaluate(() => ['old', 'new'].map((k) => [...document.querySelectorAll('#path-' + k + ' li')].map((li) => ({ text: li.innerText, change: li.dataset.change === undefined ? null : Number(li.dataset.change), bars: li.querySelectorAll('.share-bar, .bar').length }))));
        await page.type('input.search', opts.search);
        await page.waitForFunction(() => document.body.dataset.shown !== undefined, { timeout: opts.timeout });
        out.search = { query: opts.search, rows: await page.evaluate(() => Number(document.body.dataset.shown)) };
      } else {
      // search: type into the field as a person would
      const ts = Date.now();
      await page.click('#search');
      await page.type('#search', opts.search);
      await page.keyboard.press('Enter');
      await page.waitForFunction((q) => document.body.dataset.query === q.toLowerCase(), { timeout: opts.timeout }, opts.search);
      out.search = await page.evaluate(() => ({
        rows: Number(document.body.dataset.rows),
        matches: Number(document.body.dataset.matches),
        slowest_rows: document.querySelectorAll('#slowest tbody tr[data-proc]').length,
        slowest_commands: [...document.querySelectorAll('#slowest tbody tr[data-proc] td.cmd')].slice(0, 5).map((td) => td.textContent),
        shown: document.getElementById('shown').textContent,
      }));
      out.search.query = opts.search;
      out.search.ms = Date.now() - ts;
      // clear the search, sort the slowest table by another column, then by its duration
      await page.click('#search', { clickCount: 3 });
      await page.keyboard.press('Backspace');
      await page.keyboard.press('Enter');
      await page.waitForFunction(() => document.body.dataset.query === '', { timeout: opts.timeout });
      out.rows_after_clear = await page.evaluate(() => Number(document.body.dataset.rows));
      await page.click('#expand-all');
      out.rows_expanded = await page.evaluate(() => Number(document.body.dataset.rows));
      await page.click('#slowest th[data-col="command"]');
      out.slowest_by_command = await page.evaluate(() => [...document.querySelectorAll('#slowest tbody tr')].slice(0, 5).map((tr) => tr.querySelector('td.cmd')?.textContent ?? null));
      const tsort = Date.now();
      await page.click('#slowest th[data-col="duration"]');
      out.sort_ms = Date.now() - tsort;
      out.slowest = await page.evaluate(() => [...document.querySelectorAll('#slowest tbody tr[data-proc]')].slice(0, 10).map((tr) => ({
        us: Number(tr.querySelector('td[data-v]')?.dataset.v),
        duration: tr.cells[0].textContent,
        command: tr.querySelector('td.cmd')?.textContent,
      })));
      out.slowest_sorted_desc = out.slowest.every((r, i, a) => i === 0 || a[i - 1].us >= r.us);
      // zoom with the button, pan by dragging the time axis, fit; fold the first row's subtree
      await page.evaluate(() => window.scrollTo(0, 0));
      const box = await page.$eval('#gantt', (c) => { const b = c.getBoundingClientRect(); return [b.left, b.top, b.width]; });
      const view = () => page.evaluate(() => window.proctrace.view());
      const v0 = await view();
      await page.click('#zoom-in');
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(r)));
      const v1 = await view();
      await page.mouse.move(box[0] + box[2] * 0.6, box[1] + 12);
      await page.mouse.down();
      await page.mouse.move(box[0] + box[2] * 0.7, box[1] + 12, { steps: 4 });
      await page.mouse.up();
      const v2 = await view();
      await page.click('#zoom-fit');
      out.zoom = { fit: v0, zoomed: v1, dragged: v2, refit: await view() };
      await page.evaluate(() => window.scrollTo(0, 0));
      const r0 = await page.evaluate(() => window.proctrace.row(0));
      const b2 = await page.$eval('#gantt', (c) => { const b = c.getBoundingClientRect(); return [b.left, b.top]; });
      const rowsBefore = await page.evaluate(() => Number(document.body.dataset.rows));
      await page.mouse.click(b2[0] + 30, b2[1] + r0[2]);
      const rowsFolded = await page.evaluate(() => Number(document.body.dataset.rows));
      await page.mouse.click(b2[0] + 30, b2[1] + r0[2]);
      out.fold = { label: r0[1], rows: rowsBefore, folded: rowsFolded, unfolded: await page.evaluate(() => Number(document.body.dataset.rows)) };
      // a click on a critical path's step finds it: the time in view becomes that step's
      const step = (await page.$$('#path li:not(.fold):not(.empty)'))[1];
      if (step) {
        await step.click();
        out.reveal = { step: await step.evaluate((li) => li.value - 1), view: await view(), fit: out.zoom.fit };
        await page.click('#zoom-fit');
      }
      out.heap_mb = await page.evaluate(() => performance.memory ? Math.round(performance.memory.usedJSHeapSize / 1048576) : null);
      // hover the second row's bar (the first's when alone): the tooltip is filled
      await page.evaluate(() => window.scrollTo(0, 0));
      const hr = await page.evaluate(() => window.proctrace.row(1) || window.proctrace.row(0));
      const tstart = await page.evaluate((i) => JSON.parse(document.getElementById('proctrace-data').textContent).procs[i][2] || 0, hr[0]);
      const hx = await page.evaluate((t) => { const v = window.proctrace.view(), c = document.getElementById('gantt'); return 320 + (t - v[0]) / (v[1] - v[0]) * (c.clientWidth - 328) + 2; }, tstart);
      const gb = await page.$eval('#gantt', (c) => { const b = c.getBoundingClientRect(); return [b.left, b.top]; });
      await page.mouse.move(gb[0] + hx, gb[1] + hr[2]);
      out.tooltip = await page.evaluate(() => document.getElementById('tip').innerText);
      if (opts.screenshot) await page.screenshot({ path: out.screenshot.replace(/\.png$/, '-hover.png') });
      // the concurrency graph hovered at 45% of its time axis (after Fit): the tooltip, and
      // the exact time it is for
      await page.click('#zoom-fit');
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(r)));
      await page.$eval('#conc', (c) => c.scrollIntoView({ block: 'center' }));
      const cb = await page.$eval('#conc', (c) => { const b = c.getBoundingClientRect(); return [b.left, b.top, b.width, b.height]; });
      await page.mouse.move(cb[0] + 320 + (cb[2] - 328) * 0.45, cb[1] + cb[3] / 2);
      out.conc_hover = await page.evaluate(() => ({ t: Number(document.getElementById('tip').dataset.t), text: document.getElementById('tip').innerText }));
      if (opts.screenshot) await page.screenshot({ path: out.screenshot.replace(/\.png$/, '-conc.png') });
      await page.evaluate(() => window.scrollTo(0, 0));
      // a Trace2 region (the widest of the most nested in its process), shown as a click in a
      // table shows a process, then hovered at its middle: the tooltip, and the canvas's colour there
      const reg = await page.evaluate(() => {
        const d = JSON.parse(document.getElementById('proctrace-data').textContent), rs = d.regions || [];
        if (!rs.length) return null;
        const deepest = new Map();
        for (const g of rs) deepest.set(g[0], Math.max(deepest.get(g[0]) ?? -1, g[5]));
        let best = null;
        for (const g of rs) if (g[5] === deepest.get(g[0]) && (!best || g[2] - g[1] > best[2] - best[1])) best = g;
        window.proctrace.reveal(best[0], best[1], best[2]);
        return { proc: best[0], start: best[1], end: best[2], nesting: best[5], name: d.strings[best[3]], count: rs.length };
      });
      if (reg) {
        await page.evaluate(() => new Promise((r) => requestAnimationFrame(r)));
        const at = await page.evaluate((g) => window.proctrace.at(g.proc, (g.start + g.end) / 2), reg);
        if (at) {
          const rb = await page.$eval('#gantt', (c) => { const b = c.getBoundingClientRect(); return [b.left, b.top]; });
          await page.mouse.move(rb[0] + at[0], rb[1] + at[1]);
          reg.tooltip = await page.evaluate(() => document.getElementById('tip').innerText);
          reg.pixel = await page.evaluate((xy) => { const c = document.getElementById('gantt'), k = window.devicePixelRatio || 1; return [...c.getContext('2d').getImageData(Math.round(xy[0] * k), Math.round(xy[1] * k), 1, 1).data]; }, at);
          if (opts.screenshot) await page.screenshot({ path: out.screenshot.replace(/\.png$/, '-region.png') });
        }
        out.region = reg;
      }
      if (await page.evaluate(() => !!JSON.parse(document.getElementById('proctrace-data').textContent).files)) {
        out.files = {};
        const settle = () => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
        const state = () => page.evaluate(() => ({ selected: window.proctrace.selected(), file: window.proctrace.fileFilter(), rows: Number(document.body.dataset.rows) }));
        // the detail panel's lists: per row its path (from the data), access, the process that
        // used it (the selected one's index for `itself`), and the processes its last cell links
        const detail = () => page.evaluate(() => {
          const d = JSON.parse(document.getElementById('proctrace-data').textContent);
          const lists = {};
          for (const k of ['read', 'written', 'other']) {
            const t = document.getElementById('detail-' + k);
            if (!t) continue;
            lists[k] = [...t.querySelectorAll('tbody tr:not(.dir-row)')].map((tr) => ({
              path: d.strings[Number(tr.dataset.path)], shown: tr.cells[0].textContent, access: tr.dataset.access, proc: Number(tr.dataset.proc),
              rel: [...tr.cells[3].querySelectorAll('a.plink')].map((a) => Number(a.dataset.proc)),
            }));
          }
          // the files graph's boxes: the processes it links, left (producers) then right (consumers)
          const graph = [...document.querySelectorAll('#detail svg.files-graph .gbox[data-proc]')].map((g) => Number(g.dataset.proc));
          // the directories summarised (docs/files.md): per row its path, files, access, whether
          // its uses are shown, and the uses under it (hidden ones too)
          const dirs = [...document.querySelectorAll('#detail tr.dir-row')].map((tr) => ({
            dir: tr.dataset.dir, files: Number(tr.dataset.files), access: tr.dataset.access, open: tr.classList.contains('open'),
            shown: tr.cells[0].textContent, rel: [...tr.cells[3].querySelectorAll('a.plink')].map((a) => Number(a.dataset.proc)),
          }));
          return { head: (document.querySelector('#detail .detail-files') || {}).textContent, text: document.getElementById('detail').innerText, lists, graph, dirs };
        });
        // opens every directory row of the panel (a click each), so its uses are listed
        const openDirs = () => page.evaluate(() => document.querySelectorAll('#detail tr.dir-row:not(.open)').forEach((tr) => tr.click()));
        if (opts.select) {
          // the process whose label contains the text, shown as a table's click shows it, hovered
          // at its bar's middle, then clicked
          const at = await page.evaluate((q) => {
            const d = JSON.parse(document.getElementById('proctrace-data').textContent);
            const i = d.procs.findIndex((p) => String(d.strings[p[6]]).includes(q));
            if (i < 0) return null;
            window.proctrace.reveal(i);
            return i;
          }, opts.select);
          if (at != null) {
            await settle();
            const xy = await page.evaluate((i) => { const p = JSON.parse(document.getElementById('proctrace-data').textContent).procs[i]; return window.proctrace.at(i, (p[2] + p[3]) / 2); }, at);
            const gb = await page.$eval('#gantt', (c) => { const b = c.getBoundingClientRect(); return [b.left, b.top]; });
            await page.mouse.move(gb[0] + xy[0], gb[1] + xy[1]);
            out.files.hover = { proc: at, tooltip: await page.evaluate(() => document.getElementById('tip').innerText) };
            if (opts.screenshot) await page.screenshot({ path: out.screenshot.replace(/\.png$/, '-files-hover.png') });
            await page.mouse.click(gb[0] + xy[0], gb[1] + xy[1]);
            // as it shows (directories closed), then with every directory opened
            out.files.closed = await detail();
            if (opts.screenshot) {
              const part = await page.$('#detail-section');
              if (part) await part.screenshot({ path: out.screenshot.replace(/\.png$/, '-detail.png') });
            }
            await openDirs();
            out.files.click = Object.assign({ proc: at }, await state(), await detail());
          }
        }
        // the produced-and-consumed table's first row: its producer's link, then its consumer's
        for (const col of ['producer', 'consumer']) {
          const link = await page.$(`#files-produced tbody tr:first-child td:nth-child(${col === 'producer' ? 2 : 4}) a.plink`);
          if (!link) continue;
          const want = await link.evaluate((a) => Number(a.dataset.proc));
          await link.click();
          await settle();
          out.files[col + '_link'] = Object.assign({ link: want }, await state(), { detail: (await detail()).text.split('\n')[0] });
        }
        // the by-directory table's largest directory's link: the chart shows the processes that
        // used files in it
        const dl = await page.$('#files-dirs tbody tr:first-child a.flink');
        if (dl) {
          const dir = await dl.evaluate((a) => a.dataset.dir || null);
          await dl.click();
          await settle();
          out.files.dir_link = Object.assign({ dir }, await state());
          await page.click('#file-filter-clear');
          await settle();
        }
        // the most-read table's first file: the chart shows the processes that used it
        const f = await page.$('#files-read tbody tr:first-child a.flink');
        if (f) {
          const path = await f.evaluate((a) => Number(a.dataset.path));
          await f.click();
          await settle();
          out.files.file_link = Object.assign({ path }, await state());
          if (opts.screenshot) await page.screenshot({ path: out.screenshot.replace(/\.png$/, '-file-filter.png') });
          await page.click('#file-filter-clear');
          out.files.file_cleared = await state();
        }
      }
      // the critical path's every step, as listed once its folded lines are opened:
      // [step, label, duration text]
      await page.evaluate(() => { const b = document.querySelector('#path + button.more'); if (b && !b.hidden) b.click(); });
      await page.evaluate(() => document.querySelectorAll('#path li.fold').forEach((li) => li.click()));
      out.path_steps = await page.evaluate(() => [...document.querySelectorAll('#path li[data-step]')].map((li) => [
        Number(li.dataset.step), li.querySelector('code').textContent.trim(), li.querySelector('.dur').textContent]));
      }
      }
    } catch (e) {
      out.error = String(e && e.stack || e);
      failed = true;
    } finally {
      await page.close();
    }
    process.stdout.write(JSON.stringify(out) + '\n');
  }
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
