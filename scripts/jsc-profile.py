#!/usr/bin/env python3
"""Sums a JavaScriptCore sampling-profiler dump by function.

Usage: scripts/jsc-profile.py <dump>

The dump is the JSON that `__dumpAndClearSamplingProfilerSamples(prefix)`
writes to the web process's TMPDIR when it runs with
`JSC_exposeProfilersOnGlobalObject=true` (the DOM-latency bench does this
with `ARENA_BENCH_JSC_PROFILE=<dir>`: `<dir>/arena-page-*`). One sample
per millisecond the page's JavaScript ran.
Prints the functions by samples taken in them (self), by samples with them
anywhere on the stack (total), and the commonest stack tops.
"""
import json, sys, collections
data = json.load(open(sys.argv[1]))
traces = data.get('traces', data if isinstance(data, list) else [])
selfc = collections.Counter(); total = collections.Counter(); n = 0
stacks = collections.Counter()
def name(f):
    nm = f.get('name') or '(anonymous)'
    loc = f.get('location') or ''
    loc = loc.split('/')[-1] if loc else ''
    cat = f.get('category', '')
    return f"{nm} [{cat}] {loc}".strip()
for t in traces:
    frames = t.get('frames', [])
    if not frames:
        continue
    n += 1
    names = [name(f) for f in frames]
    selfc[names[0]] += 1
    for x in set(names):
        total[x] += 1
    stacks[' < '.join(names[:6])] += 1
print(f"{n} samples; keys: {list(data.keys()) if isinstance(data, dict) else 'list'}")
print("== self")
for k, v in selfc.most_common(40):
    print(f"{v:6d} {100*v/n:5.1f}%  {k}")
print("== total")
for k, v in total.most_common(40):
    print(f"{v:6d} {100*v/n:5.1f}%  {k}")
print("== stacks")
for k, v in stacks.most_common(30):
    print(f"{v:6d} {100*v/n:5.1f}%  {k}")
