#!/usr/bin/env python3
"""Headless Chromium (Debian's chromium), driven over the DevTools protocol with websocket-client, for the
tests of lyred's web page. Reads one command per line on stdin and answers each with one JSON line:

  open URL            navigate, and wait for the load           -> {"ok": true}
  eval EXPRESSION     evaluate in the page (promises awaited)   -> {"value": ...} or {"error": "..."}
  size WIDTH HEIGHT   the viewport (a phone's, a desktop's)     -> {"ok": true}
  shot PATH           a PNG screenshot of the viewport          -> {"ok": true}
  quit
"""
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


def say(obj):
    print(json.dumps(obj), flush=True)


class Page:
    def __init__(self):
        chromium = shutil.which("chromium")
        if not chromium:
            say({"error": "chromium is missing: run Tools/test, which installs it"})
            sys.exit(69)
        self.profile = tempfile.mkdtemp(prefix="lyre-chromium-")
        self.process = subprocess.Popen(
            [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage",
             "--disable-crash-reporter", "--disable-background-networking", "--remote-debugging-port=0",
             "--remote-allow-origins=*", "--user-data-dir=" + self.profile, "--window-size=1280,900", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.profile, "stderr.log"), "wb"))
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.monotonic() + 30
        while not os.path.exists(port_file) or os.path.getsize(port_file) == 0:
            if time.monotonic() > deadline or self.process.poll() is not None:
                log = open(os.path.join(self.profile, "stderr.log"), errors="replace").read()[-2000:]
                say({"error": "chromium did not start: " + log})
                sys.exit(1)
            time.sleep(0.05)
        port = open(port_file).read().split()[0]
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list"))
        page = next(t for t in targets if t.get("type") == "page")
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=30, suppress_origin=True)
        self.next_id = 0
        self.call("Page.enable")
        self.call("Runtime.enable")

    def call(self, method, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(message["error"].get("message", str(message["error"])))
                return message.get("result", {})

    def wait_for_event(self, method, timeout=20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.ws.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                message = json.loads(self.ws.recv())
            except websocket.WebSocketTimeoutException:
                break
            if message.get("method") == method:
                self.ws.settimeout(30)
                return True
        self.ws.settimeout(30)
        return False

    def close(self):
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        shutil.rmtree(self.profile, ignore_errors=True)


def main():
    page = Page()
    try:
        for line in sys.stdin:
            verb, _, rest = line.strip().partition(" ")
            try:
                if verb == "open":
                    page.call("Page.navigate", url=rest)
                    say({"ok": page.wait_for_event("Page.loadEventFired")})
                elif verb == "eval":
                    result = page.call("Runtime.evaluate", expression=rest, awaitPromise=True, returnByValue=True)
                    if "exceptionDetails" in result:
                        say({"error": result["exceptionDetails"].get("exception", {}).get("description", "exception")})
                    else:
                        say({"value": result.get("result", {}).get("value")})
                elif verb == "size":
                    width, height = (int(x) for x in rest.split())
                    page.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                              mobile=width < 600)
                    say({"ok": True})
                elif verb == "shot":
                    data = page.call("Page.captureScreenshot", format="png")["data"]
                    with open(rest, "wb") as f:
                        f.write(base64.b64decode(data))
                    say({"ok": True})
                elif verb == "quit":
                    say({"ok": True})
                    break
                else:
                    say({"error": "unknown command " + verb})
            except Exception as error:  # one line per command, whatever happened
                say({"error": str(error)})
    finally:
        page.close()


if __name__ == "__main__":
    main()
