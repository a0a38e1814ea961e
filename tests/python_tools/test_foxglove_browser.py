"""`nerve foxglove` against a real browser: headless Chromium opens the
WebSocket from a sandboxed iframe, which sends `Origin: null` (as a local
file does). The server refuses it unless `--allow-origin null` is given: one page
holds two such frames, one for a server of each kind.

The page is served from a local http.server on 127.0.0.1. Each iframe
reports what its WebSocket saw (open, the first message's op, error, close)
to the top document by postMessage; the top document writes it into its
DOM and POSTs it back to the same http.server, where the test waits for it
(bounded) instead of guessing when Chromium's virtual time has run out."""

from __future__ import annotations

import html
import json
import queue
import shutil
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Dict

import pytest
from test_foxglove import stop

from conftest import start

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no chromium on PATH (Debian: apt-get install chromium; make test installs it)")

# The sandboxed frame's script: one report per WebSocket event, and one
# "done" once the outcome is known (after the first message or the close).
FRAME = """<script>
const say = (what) => parent.postMessage("TAG " + what, "*");
let ended = false;
const end = () => { if (!ended) { ended = true; say("done"); } };
say("frame-origin " + self.origin);
const ws = new WebSocket("ws://127.0.0.1:PORT", ["foxglove.websocket.v1"]);
ws.onopen = () => say("open " + ws.protocol);
ws.onmessage = (m) => { say("message " + JSON.parse(m.data).op); end(); ws.close(); };
ws.onerror = () => say("error");
ws.onclose = (e) => { say("close " + e.code); end(); };
</script>"""

PAGE = """<!doctype html><html><body><pre id="log"></pre>
<script>
const seen = [];
addEventListener("message", (e) => {
  seen.push(e.data);
  document.getElementById("log").textContent = seen.join("\\n");
  if (e.data.endsWith(" done") && seen.filter((s) => s.endsWith(" done")).length === FRAMES)
    fetch("/report", {method: "POST", body: JSON.stringify(seen)});
});
</script>
IFRAMES</body></html>"""


def browse(ports: Dict[str, int], tmp: Path) -> Dict[str, list]:
    """What each sandboxed frame's WebSocket to its server saw, in order,
    by the frame's tag (one browser start for all of them)."""
    frames = "".join(
        '<iframe sandbox="allow-scripts" srcdoc="%s"></iframe>'
        % html.escape(FRAME.replace("PORT", str(port)).replace("TAG", tag), quote=True)
        for tag, port in ports.items())
    page = PAGE.replace("IFRAMES", frames).replace("FRAMES", str(len(ports)))
    reports: "queue.Queue[list]" = queue.Queue()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = page.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            reports.put(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    web = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{web.server_address[1]}/"
    # --no-sandbox: Chromium's own process sandbox refuses to run as root
    # (CI); it is not the iframe's sandbox attribute, which still holds.
    # Its chatter goes to a file: a pipe nobody reads could fill and stall it.
    log = tmp / "chromium.log"
    with open(log, "w") as out:
        browser = subprocess.Popen(
            [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             f"--user-data-dir={tmp / 'chromium'}", url], stdout=out, stderr=out)
    try:
        try:
            seen = reports.get(timeout=90)
            return {tag: [s.split(" ", 1)[1] for s in seen if s.split(" ", 1)[0] == tag]
                    for tag in ports}
        except queue.Empty:
            raise AssertionError(f"no report from the page; chromium said: {log.read_text()}") from None
    finally:
        browser.kill()
        browser.wait(timeout=60)
        web.shutdown()
        web.server_close()


def serve(name, *extra: str):
    proc, line = start("foxglove", f"{name('none').rsplit('-', 2)[0]}-*", "--port", "0", *extra,
                       ready="serving")
    return proc, int(line.split("ws://127.0.0.1:")[1].split(";")[0])


def test_foxglove_sandboxed_iframe_null_origin(name, tmp_path) -> None:
    """The browser sends `Origin: null` from a sandboxed iframe; without
    --allow-origin null the handshake fails (and the server says why),
    with it the same frame connects and gets the server's first message."""
    refusing, refusing_port = serve(name)
    try:
        allowing, allowing_port = serve(name, "--allow-origin", "null")
        try:
            seen = browse({"refused": refusing_port, "allowed": allowing_port}, tmp_path)
        finally:
            allowed_err = stop(allowing)
    finally:
        refused_err = stop(refusing)
    # The premise: each frame's origin is opaque, which a browser sends as
    # `null` (the refusing server's log below shows the header itself).
    assert seen["refused"][0] == seen["allowed"][0] == "frame-origin null", seen
    assert seen["allowed"][1:4] == ["open foxglove.websocket.v1", "message serverInfo", "done"], seen
    assert "refused a connection" not in allowed_err, allowed_err
    assert "open foxglove.websocket.v1" not in seen["refused"], seen
    assert "error" in seen["refused"] and seen["refused"][-1] == "done", seen
    assert "refused a connection from Origin 'null'" in refused_err, refused_err
