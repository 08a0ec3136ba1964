#!/usr/bin/env python3
# Builds a sample HTML report from src/report/html/{page.html,report.css,report.js} and a data
# object following docs/html-report.md (version 1), for developing the page without the Rust
# side, and for timing it on large made-up runs:
#   python3 tests/html/make-sample.py tests/fixtures/builds/make-fails.jsonl /tmp/make-fails.html
#   python3 tests/html/make-sample.py --synthetic 10000 /tmp/10k.html
# The conversion from a capture is rough (a fork image when the first exec comes more than 1 ms
# after the fork; causes = the deepest failures; the critical path walked as the summary does,
# without the parallel stretches). The real pages come from `proctrace ... --html FILE`.
import base64, hashlib, json, os, re, sys

HERE = os.path.dirname(os.path.abspath(__file__))
ASSETS = os.path.join(HERE, '..', '..', 'src', 'report', 'html')


class Strings:
    def __init__(self):
        self.list, self.index = [], {}

    def __call__(self, s):
        if s not in self.index:
            self.index[s] = len(self.list)
            self.list.append(s)
        return self.index[s]


def shell_word(w):
    return w if w and re.fullmatch(r'[A-Za-z0-9_./=:,+@%-]+', w) else "'" + w.replace("'", "'\\''") + "'"


def from_events(events):
    header, root, summary = None, None, None
    procs = {}  # tgid -> dict
    order = []
    for e in events:
        k = e['e']
        if k == 'header':
            header = e['header']
        elif k == 'root':
            root = e['tgid']
        elif k == 'fork':
            if e['child_pid'] != e['child_tgid']:
                continue  # a thread
            p = {'pid': e['child_tgid'], 'ppid': e['parent_tgid'], 'start': e['ts'], 'end': None,
                 'status': None, 'execs': [], 'usage': None, 'kids': [], 'comm': None}
            procs[p['pid']] = p
            order.append(p)
            if e['parent_tgid'] in procs:
                procs[e['parent_tgid']]['kids'].append(p)
        elif k == 'exec':
            if e['tgid'] in procs:
                procs[e['tgid']]['execs'].append({'ts': e['ts'], 'argv': None, 'cwd': None})
        elif k == 'exec_details':
            p = procs.get(e['tgid'])
            if p and p['execs']:
                p['execs'][-1]['argv'] = e['details'].get('argv')
                p['execs'][-1]['cwd'] = e['details'].get('cwd')
        elif k == 'comm':
            if e['tgid'] in procs:
                procs[e['tgid']]['comm'] = e['comm']
        elif k == 'exit':
            p = procs.get(e['tgid'])
            if p and e['pid'] == e['tgid']:
                p['end'] = e['ts']
                p['status'] = e['status']
        elif k == 'usage':
            if e['tgid'] in procs:
                procs[e['tgid']]['usage'] = e['usage']
        elif k == 'summary':
            summary = e['summary']
    r = procs[root]
    origin = r['start']
    us = lambda ts: None if ts is None else (ts - origin) // 1000
    S = Strings()
    tree = []
    stack = [(r, -1, 0)]
    while stack:
        p, parent, depth = stack.pop()
        p['index'] = len(tree)
        p['parent'] = parent
        p['depth'] = depth
        tree.append(p)
        for c in reversed(p['kids']):
            stack.append((c, p['index'], depth + 1))

    def code(p):
        s = p['status']
        if s is None:
            return None
        return -(s & 0x7f) if s & 0x7f else s >> 8

    # failures: non-zero exits whose chain to the root failed all along
    failed = set()
    for p in tree:
        c = code(p)
        if c not in (None, 0) and (p['parent'] < 0 or tree[p['parent']]['index'] in failed):
            failed.add(p['index'])
    causes = [i for i in failed if not any(k['index'] in failed for k in tree[i]['kids'])]
    images = []
    rows = []
    for p in tree:
        c = code(p)
        outcome = 4 if p['end'] is None else 1 if p['index'] in failed else 0 if c == 0 else 3 if c < 0 else 2
        ims = []
        if not p['execs'] or p['execs'][0]['ts'] - p['start'] > 1_000_000:
            parent_comm = tree[p['parent']]['comm'] if p['parent'] >= 0 else None
            name = '[fork of %s]' % (p['comm'] or parent_comm or 'sh') if p['execs'] else None
            ims.append([us(p['start']), us(p['execs'][0]['ts']) if p['execs'] else us(p['end']), name, None, 1])
        for j, x in enumerate(p['execs']):
            argv = x['argv'] or [p['comm'] or '?']
            nxt = p['execs'][j + 1]['ts'] if j + 1 < len(p['execs']) else p['end']
            ims.append([us(x['ts']) if ims or j else us(p['start']), us(nxt), ' '.join(map(shell_word, argv)), argv, 0])
        if ims[0][2] is None:
            ims[0][2] = '[fork of %s]' % (p['comm'] or 'sh')
        p['ims'] = ims
        last = ims[-1]
        label = S(last[2])
        argv = [S(w) for w in last[3]] if last[3] else None
        cwd = S(p['execs'][-1]['cwd']) if p['execs'] and p['execs'][-1]['cwd'] else -1
        u = p['usage'] or {}
        cpu = None if 'cpu_user_ns' not in u else (u['cpu_user_ns'] + u['cpu_sys_ns']) // 1000
        first = -1
        if len(ims) > 1:
            first = len(images)
            for im in ims:
                images.append([im[0], im[1], S(im[2]), [S(w) for w in im[3]] if im[3] else None, im[4]])
        rows.append([p['pid'], p['parent'], us(p['start']), us(p['end']), c, outcome, label, argv, cwd,
                     cpu, u.get('max_rss_kib'), u.get('read_chars'), u.get('write_chars'), first, len(ims)])
    # critical path as the summary walks it
    path = []

    def walk(p):
        chosen, t = [], p['end']
        kids = [k for k in p['kids'] if k['end'] is not None]
        while True:
            best = None
            for k in kids:
                if k['start'] >= p['start'] and k['end'] <= t and (best is None or k['end'] > best['end']):
                    best = k
            if best is None:
                break
            chosen.append(best)
            t = best['start']
        chosen.reverse()
        own = (p['end'] - p['start'] - sum(k['end'] - k['start'] for k in chosen)) // 1000
        for k, im in enumerate(p['ims']):
            path.append([p['index'], k, p['depth'], own if k == len(p['ims']) - 1 else im[1] - im[0]])
        for k in chosen:
            walk(k)

    if r['end'] is not None:
        walk(r)
    st = (summary or {}).get('status') or {}
    status = 'exit %d' % st['code'] if 'code' in st else ('killed by %s' % st.get('signal') if st else None)
    argv = header['mode'].get('run', {}).get('argv')
    cpu = [x[9] for x in rows if x[9] is not None]
    stats = (summary or {}).get('stats', {})
    run = {
        'mode': next(iter(header['mode'])), 'command': S(' '.join(map(shell_word, argv))) if argv else None,
        'status': status, 'ok': st.get('code') == 0 if st else None, 'start': '2026-12-01T19:29:01+00:00',
        'host': header['tool'].get('host', 'vm'), 'backend': header.get('backend', 'connector'),
        'tool': 'proctrace ' + header['tool'].get('version', '?'),
        'wall_us': us(r['end']) if r['end'] else None, 'cpu_us': sum(cpu) if cpu else None,
        'processes': len(rows), 'execs': sum(len(p['execs']) for p in tree), 'failures': len(failed),
        'handled': sum(1 for x in rows if x[5] == 2), 'lost': stats.get('lost', 0), 'untraced': 0,
        'background': 0,
    }
    # the summary's tables, roughly: every image of a process with a known start and end but the
    # root's, longest first; programs by argv[0]'s base name
    slow, progs = [], {}
    for i, x in enumerate(rows):
        if x[2] is None or x[3] is None:
            continue
        ims = [[x[2], x[3], x[6], x[7], 0]] if x[13] < 0 else images[x[13]:x[13] + x[14]]
        for k, im in enumerate(ims):
            d = (im[1] if im[1] is not None else x[3]) - (im[0] if im[0] is not None else x[2])
            name = S.list[im[3][0]].rsplit('/', 1)[-1] if im[3] else S.list[im[2]].split(' ')[0]
            g = progs.setdefault(name, [S(name), 0, 0, 0, None, None])
            g[1] += 1; g[2] += d; g[3] = max(g[3], d)
            if x[1] >= 0:
                slow.append((-d, x[2], x[0], k, i, S(name)))
    flat = []
    for d, _, _, k, i, name in sorted(slow):
        flat += [i, k, -d, name]
    programs = sorted(progs.values(), key=lambda g: (-g[2], S.list[g[0]]))
    return {'format': 'proctrace-html', 'version': 1, 'run': run, 'strings': S.list, 'procs': rows,
            'images': images, 'path': path, 'parallel': [], 'causes': sorted(causes), 'regions': [],
            'slow': flat, 'programs': programs, 'cost_labels': []}


def synthetic(n):
    # make -j4 with cc jobs, each forking cc1 then as (four processes a job), as bench/summary-capture.py
    ev = [{'e': 'header', 'header': {'mode': {'run': {'argv': ['make', '-j4']}}, 'tool': {'version': '0', 'host': 'synthetic'}, 'backend': 'connector'}},
          {'e': 'root', 'tgid': 1000}, {'e': 'fork', 'ts': 0, 'parent_tgid': 1, 'child_pid': 1000, 'child_tgid': 1000},
          {'e': 'exec', 'ts': 1000, 'tgid': 1000},
          {'e': 'exec_details', 'tgid': 1000, 'details': {'argv': ['make', '-j4'], 'cwd': '/src'}}]
    body = []
    slot = [10_000_000] * 4
    pid = 1001
    jobs = max(1, (n - 1) // 4)

    def proc(t, pp, p, argv, d, status=0):
        body.extend([(t, {'e': 'fork', 'ts': t, 'parent_tgid': pp, 'child_pid': p, 'child_tgid': p}),
                     (t + 100_000, {'e': 'exec', 'ts': t + 100_000, 'tgid': p}),
                     (t + 100_000, {'e': 'exec_details', 'tgid': p, 'details': {'argv': argv, 'cwd': '/src/dir%d' % (p % 7)}}),
                     (t + 100_000, {'e': 'usage', 'tgid': p, 'usage': {'cpu_user_ns': d * 6 // 10, 'cpu_sys_ns': d // 10, 'max_rss_kib': 20000 + p % 50000, 'read_chars': p * 13 % 100000, 'write_chars': p * 7 % 50000}}),
                     (t + d, {'e': 'exit', 'ts': t + d, 'pid': p, 'tgid': p, 'status': status})])
    for j in range(jobs):
        s = min(range(4), key=lambda i: slot[i])
        t = slot[s]
        d = 1_000_000_000 + (j * 7919 % 1000) * 10_000_000
        cc = pid
        pid += 4
        proc(t, 1000, cc, ['cc', '-O1', '-c', '-o', 'f%d.o' % j, 'f%d.c' % j], d)
        proc(t + 200_000, cc, cc + 1, ['/usr/lib/gcc/x86_64-linux-gnu/12/cc1', '-quiet', 'f%d.c' % j, '-o', '/tmp/cc%d.s' % j], d - 300_000_000)
        proc(t + d - 290_000_000, cc, cc + 2, ['as', '--64', '-o', 'f%d.o' % j, '/tmp/cc%d.s' % j], 200_000_000)
        body.extend([(t + d - 50_000_000, {'e': 'fork', 'ts': t + d - 50_000_000, 'parent_tgid': cc, 'child_pid': cc + 3, 'child_tgid': cc + 3}),
                     (t + d - 40_000_000, {'e': 'exit', 'ts': t + d - 40_000_000, 'pid': cc + 3, 'tgid': cc + 3, 'status': 0})])
        slot[s] = t + d + 1_000_000
    body.sort(key=lambda x: x[0])
    ev += [e for _, e in body]
    ev.append({'e': 'exit', 'ts': max(slot) + 5_000_000, 'pid': 1000, 'tgid': 1000, 'status': 0})
    ev.append({'e': 'summary', 'summary': {'status': {'code': 0}, 'stats': {'lost': 0}}})
    return from_events(ev)


def page(data, title):
    read = lambda f: open(os.path.join(ASSETS, f), encoding='utf-8').read()
    css, js, tpl = read('report.css') + read('diff.css'), read('table.js') + read('report.js') + read('diff.js'), read('page.html')
    h = lambda s: "'sha256-%s'" % base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()
    csp = "default-src 'none'; script-src %s; style-src %s; img-src data:; base-uri 'none'; form-action 'none'" % (h(js), h(css))
    esc = lambda s: s.replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;').replace('"', '&quot;').replace("'", '&#39;')
    text = json.dumps(data, ensure_ascii=False, separators=(',', ':')).replace('<', '\\u003c').replace('>', '\\u003e')
    fill = {'TITLE': esc(title), 'CSP': esc(csp), 'STYLE': css, 'SCRIPT': js, 'DATA': text}
    return re.sub(r'\{\{(TITLE|CSP|STYLE|SCRIPT|DATA)\}\}', lambda m: fill[m.group(1)], tpl)


def main():
    args = sys.argv[1:]
    if len(args) == 3 and args[0] == '--synthetic':
        data, out = synthetic(int(args[1])), args[2]
    elif len(args) == 2:
        data, out = from_events(json.loads(l) for l in open(args[0], encoding='utf-8')), args[1]
    else:
        sys.exit('usage: make-sample.py CAPTURE.jsonl OUT.html | --synthetic N OUT.html')
    title = data['strings'][data['run']['command']] if data['run']['command'] is not None else 'watch'
    with open(out, 'w', encoding='utf-8') as f:
        f.write(page(data, title + ' — proctrace'))


main()
