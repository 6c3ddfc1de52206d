"""report.html in a real browser: headless Debian chromium driven over its DevTools protocol.

The page must load from disk with no console error and no network request, every figure
written to figures/ must be on the page with a non-zero size, and a screenshot is saved."""

import base64
import json
import os
import re
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from test_report import built, report_db  # noqa: F401  (the same store and report)

websocket = pytest.importorskip("websocket", reason="needs websocket-client (pip install 'stimkit[dev]')")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed and apt-get could not install it "
                                                         "(.ci/run runs `apt-get install -y chromium`)")


class DevTools:
    """A minimal Chrome DevTools Protocol client: numbered calls, events kept as they arrive."""

    def __init__(self, url: str):
        self.ws = websocket.create_connection(url, timeout=60, suppress_origin=True)
        self.events: list[dict] = []
        self.next_id = 0

    def call(self, method: str, **params) -> dict:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def wait_for(self, method: str, timeout: float = 60) -> dict:
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == method for e in self.events):
            if time.monotonic() > deadline:
                raise TimeoutError(method)
            self.events.append(json.loads(self.ws.recv()))
        return next(e for e in self.events if e.get("method") == method)

    def settle(self, seconds: float = 0.5) -> None:
        """Collect whatever events arrive in the next moment (late console errors, requests)."""
        self.ws.settimeout(seconds)
        try:
            while True:
                self.events.append(json.loads(self.ws.recv()))
        except websocket.WebSocketTimeoutException:
            pass
        finally:
            self.ws.settimeout(60)


@pytest.fixture
def browser(tmp_path):
    profile = tmp_path / "profile"
    proc = subprocess.Popen([CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                             "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
                             "--disable-component-update", "--disable-sync", "--remote-debugging-port=0",
                             f"--user-data-dir={profile}", "--window-size=1280,900", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        port_file = profile / "DevToolsActivePort"  # chromium writes its chosen port here
        deadline = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().strip()):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"chromium did not start (exit {proc.poll()})")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30))
        page = next(t for t in targets if t["type"] == "page")
        dt = DevTools(page["webSocketDebuggerUrl"])
        yield dt
        dt.ws.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


FIGURE_SIZES = """Array.from(document.querySelectorAll("figure svg")).map(s => {
  const r = s.getBoundingClientRect(); return {id: s.id, width: r.width, height: r.height, paths: s.querySelectorAll("path, use").length};
})"""


def test_report_in_chromium(built, browser, tmp_path):  # noqa: F811
    out, _, _ = built
    url = (out / "report.html").resolve().as_uri()
    for domain in ("Page", "Runtime", "Log", "Network"):
        browser.call(f"{domain}.enable")
    browser.call("Page.navigate", url=url)
    browser.wait_for("Page.loadEventFired")
    browser.settle()

    errors = [e for e in browser.events if e.get("method") == "Runtime.exceptionThrown"
              or (e.get("method") == "Runtime.consoleAPICalled" and e["params"]["type"] in ("error", "assert"))
              or (e.get("method") == "Log.entryAdded" and e["params"]["entry"]["level"] == "error")]
    assert errors == []
    requests = [e["params"]["request"]["url"] for e in browser.events if e.get("method") == "Network.requestWillBeSent"]
    assert requests == [url]  # the page itself, nothing else

    shown = {f["id"]: f for f in browser.call("Runtime.evaluate", expression=FIGURE_SIZES, returnByValue=True)["result"]["value"]}
    written = {p.stem for p in (out / "figures").glob("*.svg")}
    assert {f"fig-{name}" for name in written} <= set(shown), "a figure in figures/ is missing from the page"
    for f in shown.values():
        assert f["width"] > 100 and f["height"] > 50 and f["paths"] > 0, f

    # the pointer over a matrix cell finds that cell's tooltip: d, its interval and p
    hovered = browser.call("Runtime.evaluate", returnByValue=True, expression="""(() =>
        Array.from(document.querySelectorAll("#fig-significance-matrix g[id^='cell-']")).map(g => {
          g.scrollIntoView({block: "center"});
          const r = g.getBoundingClientRect(), x = r.left + r.width * 0.8, y = r.top + r.height * 0.5;
          const hit = document.elementFromPoint(x, y), cell = hit && hit.closest("g[id^='cell-']");
          return {id: g.id, hit: cell ? cell.id : null, title: cell ? cell.querySelector("title").textContent : null};
        }))()""")["result"]["value"]
    assert hovered and all(h["hit"] == h["id"] and "95% CI [" in h["title"] and ", p = " in h["title"] for h in hovered), hovered

    # an empty cell reads as a dash, never as "None" (issue 53)
    cells = browser.call("Runtime.evaluate", returnByValue=True, expression="""
        Array.from(document.querySelectorAll("td, th")).map(c => c.textContent.trim())""")["result"]["value"]
    assert cells and "None" not in cells and "–" in cells
    text = browser.call("Runtime.evaluate", returnByValue=True, expression="document.body.innerText")["result"]["value"]
    assert not re.search(r"\bNone\b", text)

    # sorting Table 4 by a column reorders it without an error
    order = browser.call("Runtime.evaluate", returnByValue=True, expression="""(() => {
        const t = document.getElementById("results-table"), col = Array.from(t.tHead.rows[0].cells).findIndex(c => c.textContent === "p_value");
        t.tHead.rows[0].cells[col].click();
        return Array.from(t.tBodies[0].rows).map(r => parseFloat(r.cells[col].textContent)); })()""")["result"]["value"]
    assert order == sorted(order)
    browser.settle(0.2)
    assert not [e for e in browser.events if e.get("method") == "Runtime.exceptionThrown"]

    shot = base64.b64decode(browser.call("Page.captureScreenshot", format="png")["data"])
    assert shot[:8] == b"\x89PNG\r\n\x1a\n" and len(shot) > 10_000
    target = Path(os.environ.get("STIMKIT_SCREENSHOT_DIR", tmp_path)) / "report-first-screen.png"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(shot)
    print(f"screenshot: {target}")


LONG_ENCODER = "hf:sentence-transformers/paraphrase-multilingual-mpnet-base-v2-x"[:60]
LONG_TEST = "angry-black-woman-stereotype-sentences-b"  # 40 characters
LABEL_BOXES = """Array.from(document.querySelectorAll("figure svg")).flatMap(s => {
  const f = s.getBoundingClientRect();
  return Array.from(s.querySelectorAll("g[id^='text_']")).map(g => { const r = g.getBoundingClientRect();
    return {figure: s.id, label: g.id, inside: r.width === 0 || (r.left >= f.left - 1 && r.right <= f.right + 1
            && r.top >= f.top - 1 && r.bottom <= f.bottom + 1), box: [r.left, r.top, r.right, r.bottom], fig: [f.left, f.top, f.right, f.bottom]}; });
})"""


@pytest.fixture(scope="module")
def long_names_report(report_db, tmp_path_factory):  # noqa: F811
    """The report store again, every result (and its items) copied under a 60-character hf: encoder,
    and weat6's under a 40-character test name too."""
    from stimkit import store
    from test_report import invoke

    src, _ = report_db
    path = tmp_path_factory.mktemp("long") / "store.duckdb"
    shutil.copy(src, path)
    con = store.connect(path)
    con.execute(f"""INSERT INTO result_items SELECT * REPLACE (result_id || '/long' AS result_id) FROM result_items
                    WHERE result_id IN (SELECT result_id FROM latest_results)""")
    con.execute(f"""INSERT INTO results BY NAME SELECT * EXCLUDE (hypothesis, stale, retired) REPLACE (result_id || '/long' AS result_id, '{LONG_ENCODER}' AS encoder,
                    'fp-long' AS fingerprint, effect_size / 2 AS effect_size) FROM latest_results""")
    con.execute(f"""INSERT INTO result_items SELECT * REPLACE (result_id || '/t40' AS result_id) FROM result_items
                    WHERE result_id IN (SELECT result_id FROM latest_results WHERE test = 'weat6')""")
    con.execute(f"""INSERT INTO results BY NAME SELECT * EXCLUDE (hypothesis, stale, retired) REPLACE (result_id || '/t40' AS result_id, '{LONG_TEST}' AS test)
                    FROM latest_results WHERE test = 'weat6'""")
    con.close()
    out = tmp_path_factory.mktemp("long-out") / "report"
    r = invoke("--db", path, "report", "-o", out, "--test", "sent-weat6", "--test", LONG_TEST)
    assert r.exit_code == 0, r.output
    assert "Warning" not in r.output
    return out


def test_every_label_lies_inside_its_figure(long_names_report, browser, tmp_path):
    url = (long_names_report / "report.html").resolve().as_uri()
    browser.call("Page.enable")
    browser.call("Page.navigate", url=url)
    browser.wait_for("Page.loadEventFired")
    browser.settle()
    boxes = browser.call("Runtime.evaluate", expression=LABEL_BOXES, returnByValue=True)["result"]["value"]
    figures_seen = {b["figure"] for b in boxes}
    assert {"fig-significance-matrix", "fig-strip-" + LONG_TEST.replace("-", "_")} <= figures_seen
    assert len(boxes) > 30 and [b for b in boxes if not b["inside"]] == []
    # the first screen (the significance matrix) for a person to look at
    shot = base64.b64decode(browser.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"])
    target = Path(os.environ.get("STIMKIT_SCREENSHOT_DIR", tmp_path)) / "report-long-names.png"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(shot)
    print(f"screenshot: {target}")
