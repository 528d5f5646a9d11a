"""--flamegraph (report/views/flame.c) and --html (report/views/html.c).

The SVG: well-formed XML, our script in it, frame widths in proportion to time (a function's
frames span its cumtime share, as the --python table gives it). The HTML: opened in headless
Chromium (Debian's `chromium`; the tests skip without it): no script error, the tables and
the flame graph in the DOM, our table sorting and flame search/zoom working; a screenshot."""
import html
import json
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest

from conftest import build_path, profile, report, TRACES, make_traces

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SVG = "{http://www.w3.org/2000/svg}"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None,
                                    reason="no chromium (Debian package chromium) to open the page")


@pytest.fixture(scope="module", autouse=True)
def traces():
    make_traces()


def frames(svg_path):
    """[(name, width)] of the frames of a flame graph, and the root's width."""
    root = ET.parse(svg_path).getroot()
    out = []
    for g in root.iter(SVG + "g"):
        if g.get("class") == "f":
            out.append((g.get("data-n"), float(g.find(SVG + "rect").get("width"))))
    return out, out[0][1]


def outermost_width(svg_path, prefix):
    """The width of the frames named prefix...: every frame counts, a recursive call's
    frames (above one of the same name) are inside it and count once: the flame graph
    gives the outermost their summed width, so take the x-range union."""
    root = ET.parse(svg_path).getroot()
    spans = []
    for g in root.iter(SVG + "g"):
        if g.get("class") == "f" and g.get("data-n").startswith(prefix):
            r = g.find(SVG + "rect")
            x, w = float(r.get("x")), float(r.get("width"))
            spans.append((x, x + w))
    spans.sort()
    total, end = 0.0, -1.0
    for a, b in spans:
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def python_share(paths, name):
    d = json.loads(report(paths, "--python", "--format", "json").stdout)
    funcs = d["python"]
    total = sum(f["tottime_ns"] for f in funcs)
    (f,) = [f for f in funcs if f["qualname"] == name]
    return f["cumtime_ns"] / total


def test_flamegraph_is_xml_with_our_script_and_widths_by_time(tmp_path):
    svg = tmp_path / "py.svg"
    trace = os.path.join(TRACES, "py", "main.trace")
    r = report(trace, "--flamegraph", str(svg))
    assert r.stdout == ""  # the file alone asked: no report printed
    text = svg.read_text()
    assert text.startswith("<?xml")
    assert "function zoom(" in text and "function search(" in text and "keydown" in text
    fr, root = frames(svg)
    assert fr[0][0] == "all" and root == pytest.approx(1180.0)
    # fib is recursive: its outermost frames span its cumtime (cProfile counts it once)
    share = outermost_width(svg, "fib (/w/train.py:10)") / root
    assert share == pytest.approx(python_share(trace, "fib"), abs=0.002)
    # main's CUDA API time is its own frame beneath it
    assert any(n == "[CUDA API calls]" for n, _ in fr)


def test_flamegraph_of_a_real_workload_matches_the_python_table(tmp_path):
    out = tmp_path / "out"
    profile(["/usr/bin/python3", os.path.join(ROOT, "test", "workloads", "py_hot.py"), "25",
             "100000"], out)
    svg = tmp_path / "hot.svg"
    report(out, "--flamegraph", str(svg))
    fr, root = frames(svg)
    ET.parse(svg)
    for name in ("fib", "methods"):
        want = python_share(out, name)
        got = outermost_width(svg, name + " (") / root
        assert got == pytest.approx(want, abs=0.01), (name, got, want)
    assert python_share(out, "fib") > 0.3  # a workload with a clear top


def test_flamegraph_of_the_samples(tmp_path):
    burn = build_path("test", "fixtures", "stacks", "burn_threads")
    if not os.path.exists(burn):
        pytest.skip("build the stacks fixtures first (make stacks-fixtures)")
    out = tmp_path / "out"
    profile([burn, "1"], out, env={"PROF_SAMPLE_HZ": "199"})
    svg, folded = tmp_path / "samples.svg", tmp_path / "samples.folded"
    r = report(out, "--samples", "--flamegraph", str(svg), "--stacks-folded", str(folded))
    fr, root = frames(svg)
    # the same paths as the folded file: the root is their total, burn_heavy its share
    rows = [l.rsplit(" ", 1) for l in folded.read_text().splitlines()]
    total = sum(int(w) for _, w in rows)
    heavy = sum(int(w) for s, w in rows if any(f.startswith("burn_heavy") for f in s.split(";")))
    assert outermost_width(svg, "burn_heavy") / root == pytest.approx(heavy / total, abs=0.002)
    assert r.stdout == ""  # files asked: no text report, as --stacks-folded alone


def test_flamegraph_without_python_says_so(tmp_path):
    svg = tmp_path / "none.svg"
    r = report(os.path.join(TRACES, "run", "rank0.trace"), "--flamegraph", str(svg), check=False)
    assert r.returncode == 1
    assert "hold no Python calls" in r.stderr and not svg.exists()


def chromium(*args, timeout=60):
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                           "--enable-logging=stderr", "--v=0"] + list(args),
                          capture_output=True, text=True, timeout=timeout)


def console_errors(stderr):
    return [l for l in stderr.splitlines() if "Uncaught" in l or ":CONSOLE" in l]


def js_errors(dom):
    """What window.onerror recorded on the <html> element ("" when nothing)."""
    m = re.search(r'<html[^>]*data-js-errors="([^"]*)"', dom)
    return html.unescape(m.group(1)) if m else ""


def open_page(page):
    r = chromium("--dump-dom", "file://" + str(page))
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout, console_errors(r.stderr)


@needs_chromium
def test_a_page_with_an_error_is_caught(tmp_path):
    page = tmp_path / "broken.html"
    page.write_text("<!DOCTYPE html><html><body><script>window.onerror=function(m){document."
                    "documentElement.setAttribute('data-js-errors',m)};nosuch();</script>"
                    "</body></html>")
    dom, errors = open_page(page)
    assert js_errors(dom) == "nosuch is not defined" or "not defined" in js_errors(dom)
    assert any("nosuch" in e for e in errors), errors


# Clicks a header twice, searches and zooms the flame graph, records the outcome.
PROBE = """<script>(function(){var r={};var t=document.getElementById('t-api');
var th=t.tHead.rows[0].cells[2];var col=function(){return [].map.call(t.tBodies[0].rows,
function(x){return +x.cells[2].getAttribute('data-v')})};th.click();r.desc=col();th.click();
r.asc=col();var s=document.getElementById('flamegraph');s.flameSearch('sync_loss');
r.matched=document.getElementById('fg-matched').textContent;var g=[].filter.call(
s.querySelectorAll('g.f'),function(g){return g.getAttribute('data-n').indexOf('train (')===0})[0];
s.flameZoom(g);r.zoomed=+g.querySelector('rect').getAttribute('width');
document.body.setAttribute('data-probe',JSON.stringify(r));})();</script></body>"""


@needs_chromium
def test_html_report_opens_in_chromium(tmp_path):
    page = tmp_path / "report.html"
    r = report(os.path.join(TRACES, "findings", "bad"), "--html", str(page))
    assert r.stdout == ""
    text = page.read_text()
    assert "http://" not in text.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in text and "<script src" not in text and "<link" not in text
    dom, errors = open_page(page)
    assert errors == []
    assert js_errors(dom) == ""
    assert 'data-ready="1"' in dom  # both scripts ran to their end
    for table in ("t-api", "t-kernels", "t-actions", "t-ops", "t-python", "t-processes"):
        assert 'id="%s"' % table in dom
    assert '<svg id="flamegraph"' in dom
    assert len(re.findall(r'class="finding" data-kind="', dom)) == 11
    assert 'data-kind="sync"' in dom and "Model.sync_loss (/w/train.py:42)" in dom
    assert dom.count('class="memcurve"') == 2
    # each memory curve has its y axis: 0 B, half the peak and the peak, labelled
    for curve in re.findall(r'<svg class="memcurve".*?</svg>', dom, re.S):
        labels = re.findall(r'text-anchor="end">([^<]*)</text>', curve)
        assert len(labels) == 3 and labels[0] == "0 B", labels
    assert dom.count("y: live tensor bytes") == 2

    probe = tmp_path / "probe.html"
    probe.write_text(text.replace("</body>", PROBE))
    dom, errors = open_page(probe)
    assert errors == [] and js_errors(dom) == ""
    m = re.search(r'data-probe="([^"]*)"', dom)
    assert m, dom[-3000:]
    got = json.loads(html.unescape(m.group(1)))
    assert got["desc"] == [100, 2] and got["asc"] == [2, 100]
    # Model.sync_loss: 200 ms of the 990 ms the root holds
    assert got["matched"] == "Matched: 20.2%"
    assert got["zoomed"] == pytest.approx(1180.0)

    shot = tmp_path / "report.png"
    r = chromium("--window-size=1280,2400", "--screenshot=" + str(shot), "file://" + str(page))
    assert r.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if os.environ.get("PROF_KEEP_SCREENSHOT"):
        shutil.copy(shot, os.environ["PROF_KEEP_SCREENSHOT"])


def test_html_without_events_of_a_kind_leaves_their_sections_out(tmp_path):
    page = tmp_path / "py.html"
    report(os.path.join(TRACES, "py", "main.trace"), "--html", str(page))
    text = page.read_text()
    assert 'id="t-python"' in text and '<svg id="flamegraph"' in text
    assert 'id="t-kernels"' not in text and 'id="memory"' not in text
    assert "Nothing crossed a threshold" in text


def test_names_from_the_trace_are_escaped_in_the_page_and_the_svg(tmp_path):
    page, svg = tmp_path / "esc.html", tmp_path / "esc.svg"
    report(os.path.join(TRACES, "escape", "esc.trace"), "--html", str(page), "--flamegraph",
           str(svg))
    for f in (page, svg):
        data = f.read_bytes()
        assert not [c for c in set(data) if c < 32 and c not in (9, 10, 13)], f
        assert b"\\x1b" in data  # ESC written as text
    ET.parse(svg)


def test_html_with_samples_is_refused():
    r = report(os.path.join(TRACES, "py", "main.trace"), "--samples", "--html", "x.html",
               check=False)
    assert r.returncode == 2 and "--html reports the tables" in r.stderr


def step_axis_labels(html):
    """The step chart's axis labels, bottom to top."""
    chart = re.search(r'<svg class="steps".*?</svg>', html).group(0)
    return re.findall(r'<text [^>]*text-anchor="end">([^<]*)</text>', chart)


@pytest.mark.parametrize("name,labels", [("steps", ["0 ms", "50 ms", "100 ms"]),
                                         ("steps_long", ["0 s", "0.75 s", "1.5 s"])])
def test_step_chart_axis_is_readable(tmp_path, name, labels):
    """The axis of steps of 100 ms is in ms, of 1.5 s in s: never "1.5e+03 ms" (cut by the
    label's room on the left); no text of the page holds an exponent."""
    page = tmp_path / "steps.html"
    report(os.path.join(TRACES, name, "main.trace"), "--html", str(page))
    html = page.read_text()
    assert step_axis_labels(html) == labels
    text = re.sub(r"<script.*?</script>", "", html, flags=re.S)
    assert not re.findall(r">[^<]*\de[+-]\d[^<]*<", text)


def test_per_step_overview(tmp_path):
    # steps_trace (findings_traces.h): three steps ending where optimizer_step ends
    page = tmp_path / "steps.html"
    report(os.path.join(TRACES, "steps", "main.trace"), "--html", str(page))
    steps = [dict((k, int(v)) for k, v in re.findall(r'data-(\w+)="(\d+)"', g))
             for g in re.findall(r'<g class="step"([^>]*)>', page.read_text())]
    M = 1000000
    assert steps == [
        {"step": k, "ns": (95 if k == 0 else 100) * M, "data": (10 + 10 * k) * M,
         "forward": 20 * M, "backward": 20 * M, "optimizer": 10 * M, "gpu": 20 * M}
        for k in range(3)]
    assert 'data-steps="3"' in page.read_text()
