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
import collections
import json
import sys

WIDTH = 110


def key(frame, urls):
    """A function: its name and where it starts, whatever tier ran it."""
    name = frame.get("name") or "(anonymous)"
    category = frame.get("category", "")
    if category in ("RegExp", "Host") or frame.get("line", 0) >= 2**32 - 1:
        where = category
    else:
        url = urls.get(frame.get("sourceID"), "")
        where = f"{url.rsplit('/', 1)[-1] or 'source ' + str(frame.get('sourceID'))}:{frame.get('line')}:{frame.get('column')}"
    text = f"{name}  ({where})"
    return text if len(text) <= WIDTH else text[: WIDTH - 1] + "…"


def main():
    data = json.load(open(sys.argv[1]))
    urls = {s.get("sourceID"): s.get("url", "") for s in data.get("sources", [])}
    interval_ms = data.get("interval", 0.001) * 1000
    own = collections.Counter()
    anywhere = collections.Counter()
    n = 0
    for trace in data.get("traces", []):
        frames = [key(f, urls) for f in trace.get("frames", [])]
        if not frames:
            continue
        n += 1
        own[frames[0]] += 1
        for f in set(frames):
            anywhere[f] += 1
    print(f"{n} samples, one every {interval_ms:g} ms: ~{n * interval_ms:.0f} ms of JavaScript")
    for title, counts in (("self", own), ("total (anywhere on the stack)", anywhere)):
        print(f"== {title}")
        for k, v in counts.most_common(30):
            print(f"{v:6d} {100 * v / max(n, 1):5.1f}%  {k}")


if __name__ == "__main__":
    main()
