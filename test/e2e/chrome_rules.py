"""The rules that the readers of a Chrome/Kineto trace apply to its events, written from
their public sources (no code of theirs is copied), so that the tests can check our exports
against them without the readers, which CI cannot fetch.

- Holistic Trace Analysis (hta/common/trace_parser.py, round_down_time_stamps): when ts is
  a float column it ceils every start and floors every end; trace_call_stack.py then
  raises "Unexpected case" for an event whose duration came out negative.
- speedscope (src/import/trace-event.ts): X events of one pid/tid become a stack; an event
  that starts inside another and ends after it (a half overlap) mis-nests the rest of the
  thread; a frame is keyed by name and JSON of args, so an args value that changes per
  call makes each call its own frame. speedscope_mismatches replays its importer's queues,
  and its arithmetic: per pid/tid it subtracts the first ts from every ts, then adds dur
  to that, in doubles (convertToEventQueues), so that a span's end can land past the start
  of the span that abuts it.
- TensorBoard's profiler plugin (torch_tb_profiler/profiler/event_parser.py, StepParser):
  with no ProfilerStep#N span its one step runs from the first to the last CPU event of
  categories cpu_op / python / ProfilerStep; with none of these it is (maxsize, -maxsize-1).
  Its loader lists files matching *.pt.trace.json (profiler/data.py).
"""
import json
import math
from collections import Counter, defaultdict

PLUGIN_CPU_CATS = {"cpu_op", "operator", "python"}


def hta_rounding_violations(events):
    """Complete events whose start, ceiled, passes their end, floored (HTA's rounding)."""
    bad = []
    for e in events:
        if e.get("ph") != "X":
            continue
        ts, dur = e["ts"], e["dur"]
        if dur < 0 or math.ceil(ts) > math.floor(ts + dur):
            bad.append(e)
    return bad


def half_overlaps(events):
    """Pairs of complete events of one pid/tid that overlap without one holding the other."""
    by_thread = defaultdict(list)
    for e in events:
        if e.get("ph") == "X":
            by_thread[(e["pid"], e["tid"])].append(e)
    bad = []
    for evs in by_thread.values():
        # longer first at equal starts: an enclosing event opens before what it holds
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in evs:
            end = e["ts"] + e["dur"]
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"]:
                stack.pop()
            if stack and end > stack[-1]["ts"] + stack[-1]["dur"]:
                bad.append((stack[-1], e))
                continue
            stack.append(e)
    return bad


def flow_id_problems(events, cat=None):
    """Flow ids (ph s/f, of category cat if given) with more than one start or end, an end
    that no start opens, or a start that no end closes (an arrow to nowhere). Returns
    (problems, number of complete arrows)."""
    starts, ends = Counter(), Counter()
    for e in events:
        if e.get("ph") in ("s", "f") and (cat is None or e.get("cat") == cat):
            (starts if e["ph"] == "s" else ends)[e["id"]] += 1
    problems = [i for i, n in starts.items() if n > 1] + [i for i, n in ends.items() if n > 1]
    problems += [i for i in ends if i not in starts]
    problems += [i for i in starts if i not in ends]
    return problems, sum(1 for i in ends if i in starts)


def plugin_cpu_range(events):
    """The plugin's one step when there is no ProfilerStep: (min ts, max end) of its CPU
    events; None where it would compute (maxsize, -maxsize-1)."""
    lo = hi = None
    for e in events:
        if e.get("ph") != "X":
            continue
        cat = e.get("cat", "").lower()
        if cat in PLUGIN_CPU_CATS or (cat in ("cpu_op", "user_annotation")
                                      and e["name"].startswith("ProfilerStep#")):
            lo = e["ts"] if lo is None else min(lo, e["ts"])
            end = e["ts"] + e["dur"]
            hi = end if hi is None else max(hi, end)
    return None if lo is None else (lo, hi)


def _speedscope_key(e):
    return e["name"] + (" " + json.dumps(e["args"]) if "args" in e else "")


def speedscope_mismatches(events):
    """How often speedscope's trace-event importer, replayed, ends a frame that is not the
    one on top of its stack ("Tried to end ... Doing nothing" and the like). Its rules: per
    pid/tid, X events sorted by ts then longer first (else file order) give a B queue, their
    ends sorted by time (else that order) an E queue; at equal times B goes first only when
    both fronts have the same key (a zero-length event); an E first looks among the ends of
    its time for the top frame's key, then its name. Times as it computes them: ts minus the
    thread's first ts, plus dur, in doubles (Python's floats are the same IEEE doubles)."""
    by_thread = defaultdict(list)
    for e in events:
        if e.get("ph") == "X":
            by_thread[(e["pid"], e["tid"])].append(e)
    bad = 0
    for evs in by_thread.values():
        first = min(e["ts"] for e in evs)
        rel = {id(e): e["ts"] - first for e in evs}
        xs = sorted(evs, key=lambda e: (rel[id(e)], -e["dur"]))
        begins = [(rel[id(e)], e) for e in xs]
        ends = [(rel[id(e)] + e["dur"], e) for e in xs]
        ends.sort(key=lambda t: t[0])
        b = i = 0
        stack = []
        while b < len(begins) or i < len(ends):
            if b < len(begins) and (i >= len(ends) or begins[b][0] < ends[i][0] or (
                    begins[b][0] == ends[i][0]
                    and _speedscope_key(begins[b][1]) == _speedscope_key(ends[i][1]))):
                stack.append(begins[b][1])
                b += 1
                continue
            if stack:
                top = stack[-1]
                for match in (lambda x: _speedscope_key(x) == _speedscope_key(top),
                              lambda x: x["name"] == top["name"]):
                    if match(ends[i][1]):
                        break
                    j = i + 1
                    while j < len(ends) and ends[j][0] <= ends[i][0] and not match(ends[j][1]):
                        j += 1
                    if j < len(ends) and ends[j][0] <= ends[i][0]:
                        ends[i], ends[j] = ends[j], ends[i]
                        break
            e = ends[i][1]
            i += 1
            if not stack or e["name"] != stack[-1]["name"]:
                bad += 1
                continue
            if _speedscope_key(e) != _speedscope_key(stack[-1]):
                bad += 1
            stack.pop()
    return bad
