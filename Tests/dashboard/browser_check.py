#!/usr/bin/env python3
"""Drives a running linkcond's dashboard in headless chromium over the DevTools protocol, the way a person would.

It loads the page with the token in the URL fragment, checks that the charts start with the instance's history from
before the page opened and draw the profile's rate, waits for the throughput chart to move while the caller's
transfer runs and the connection list to show its bytes and rate, switches the profile with the picker (the
capacity line follows), goes offline and back online with the buttons, and checks every step twice: in the page's
DOM and through the control API. Screenshots go to the artefact directory.
Exits 0 when every check passed, 1 with the failed check on stderr otherwise. Needs websocket-client (PyPI).
"""
import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import websocket


class Failure(Exception):
    pass


class Page:
    """One page target of chromium, spoken to in CDP commands over its WebSocket."""

    def __init__(self, socket_url):
        self.socket = websocket.create_connection(socket_url, timeout=30, suppress_origin=True)
        self.next_id = 0

    def send(self, method, **params):
        self.next_id += 1
        self.socket.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise Failure(f"{method}: {message['error']}")
                return message.get("result", {})

    def evaluate(self, expression):
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise Failure(f"script error in {expression!r}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def click(self, element_id):
        """A real mouse click in the middle of the element, as a person would make it."""
        box = self.evaluate(f"(() => {{ const e = document.getElementById({element_id!r}); e.scrollIntoView({{block: 'center'}}); "
                            "const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)

    def screenshot(self, path):
        data = self.send("Page.captureScreenshot", format="png")["data"]
        with open(path, "wb") as file:
            file.write(base64.b64decode(data))


def wait_until(description, condition, timeout=30):
    """Polls `condition` (bounded in time) until it returns a true value, which it returns."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = condition()
        if last:
            return last
        time.sleep(0.1)
    raise Failure(f"timed out after {timeout} s waiting for {description} (last: {last!r})")


def api_status(base, token):
    request = urllib.request.Request(base + "status", headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="the dashboard, http://127.0.0.1:PORT/")
    parser.add_argument("--token", required=True)
    parser.add_argument("--profile", required=True, help="a built-in profile to switch to with the picker")
    parser.add_argument("--artefacts", required=True, help="directory for screenshots")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    arguments = parser.parse_args()
    os.makedirs(arguments.artefacts, exist_ok=True)
    profile_dir = tempfile.mkdtemp(prefix="lc-dashboard-chromium-")
    browser = subprocess.Popen(
        [arguments.chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
         f"--user-data-dir={profile_dir}", "--remote-debugging-port=0", "--window-size=1280,1100", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    steps = []
    try:
        port_file = os.path.join(profile_dir, "DevToolsActivePort")
        wait_until("chromium's DevTools port", lambda: os.path.exists(port_file) and open(port_file).read().strip())
        port = open(port_file).read().split()[0]
        targets = wait_until("a page target", lambda: [t for t in json.load(urllib.request.urlopen(
            f"http://127.0.0.1:{port}/json/list", timeout=10)) if t["type"] == "page"])
        page = Page(targets[0]["webSocketDebuggerUrl"])
        page.send("Page.enable")
        page.send("Runtime.enable")
        opened = time.time()
        page.send("Page.navigate", url=arguments.url + "#token=" + arguments.token)

        text = lambda element_id: page.evaluate(f"(document.getElementById({element_id!r}) || {{}}).textContent")
        before = api_status(arguments.url, arguments.token)
        wait_until("the page to show the running profile", lambda: text("profile-name") == before["profile"])
        if arguments.token in page.evaluate("location.href"):
            raise Failure("the token stayed in the address bar after the page read it")
        steps.append("loaded: profile " + before["profile"])

        def chart(name):
            return page.evaluate(f"(() => {{ const d = document.getElementById({name!r}).dataset; "
                                 "return {points: Number(d.points || 0), peak: Number(d.peak || 0), oldest: Number(d.oldest || 0), "
                                 "history: Number(d.historyPoints || 0), capacityUp: d.capacityUp, capacityDown: d.capacityDown}; })()")

        def shown_capacity(status):
            """The page's capacity line matches the API's profile rate, per direction."""
            listener = status["listeners"][0]
            current = chart("throughput-chart")
            return all(current[key] not in (None, "") and abs(float(current[key]) - listener[direction]["bandwidthBitsPerSecond"]) < 1
                       for key, direction in (("capacityUp", "uplink"), ("capacityDown", "downlink")))

        history = wait_until("the charts to start with the history from before the page opened",
                             lambda: (lambda c: c if c["history"] >= 1 and 0 < c["oldest"] < opened else None)(chart("throughput-chart")))
        steps.append(f"history drawn: {history['history']} points, the oldest {opened - history['oldest']:.1f} s before the page opened")
        wait_until("the capacity line to show the profile's rate", lambda: shown_capacity(before))
        steps.append("capacity line: " + text("capacity-up") + " / " + text("capacity-down"))
        first = wait_until("the throughput chart to show traffic", lambda: (lambda c: c if c["peak"] > 0 and c["points"] >= 3 else None)(chart("throughput-chart")))
        later = wait_until("the charts to keep moving", lambda: (lambda c: c if c["points"] >= first["points"] + 4 else None)(chart("throughput-chart")), timeout=20)
        steps.append(f"charts moving: {first['points']} -> {later['points']} points, peak {later['peak']:.0f} bit/s, "
                     f"downlink {text('rate-down')}, queue delay {text('delay-down')}")
        wait_until("the connection list to show the transfer", lambda: page.evaluate(
            "document.querySelectorAll('#connections tbody tr').length") >= 1)
        cells = lambda: page.evaluate("[...document.querySelectorAll('#connections tbody tr')].map((row) => [...row.cells].map((cell) => cell.textContent))")
        row = wait_until("a connection's downlink bytes and rate", lambda: next(
            (row for row in cells() if row[6] and row[8] and row[8] != "0 bit/s"), None))
        steps.append("connections listed: " + text("connection-count") + f", downlink {row[6]} at {row[8]}")
        page.screenshot(os.path.join(arguments.artefacts, "dashboard-transfer.png"))

        page.evaluate(f"(() => {{ const p = document.getElementById('profile-picker'); p.value = {arguments.profile!r}; "
                      "p.dispatchEvent(new Event('change')); })()")
        page.click("apply-profile")
        wait_until("the API to report the picked profile", lambda: api_status(arguments.url, arguments.token)["profile"] == arguments.profile)
        wait_until("the page to show the picked profile", lambda: text("profile-name") == arguments.profile)
        picked = api_status(arguments.url, arguments.token)
        wait_until("the capacity line to follow the profile", lambda: shown_capacity(picked))
        steps.append("picked profile " + arguments.profile)

        page.click("go-offline")
        wait_until("the API to report offline", lambda: api_status(arguments.url, arguments.token).get("offline") == "refuse")
        wait_until("the page to show offline", lambda: text("link-state") == "offline (refuse)")
        wait_until("the downlink rate to fall to nothing while offline", lambda: text("rate-down") == "0 bit/s")
        steps.append("offline: " + text("link-state") + ", downlink queue delay " + text("delay-down"))
        page.screenshot(os.path.join(arguments.artefacts, "dashboard-offline.png"))

        page.click("go-online")
        wait_until("the API to report online", lambda: api_status(arguments.url, arguments.token).get("offline") is None)
        wait_until("the page to show online", lambda: text("link-state") == "online")
        wait_until("traffic to flow again", lambda: text("rate-down") != "0 bit/s")
        steps.append("online again: downlink " + text("rate-down"))
        page.screenshot(os.path.join(arguments.artefacts, "dashboard-online.png"))
        errors = page.evaluate("document.getElementById('message').className === '' ? document.getElementById('message').textContent : ''")
        if errors:
            raise Failure("the page shows an error: " + errors)
        print(json.dumps({"steps": steps}))
        return 0
    except Failure as failure:
        print(json.dumps({"steps": steps}))
        print(f"dashboard check failed: {failure}", file=sys.stderr)
        return 1
    finally:
        browser.terminate()
        try:
            browser.wait(timeout=10)
        except subprocess.TimeoutExpired:
            browser.kill()
        shutil.rmtree(profile_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
