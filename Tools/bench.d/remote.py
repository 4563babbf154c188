#!/usr/bin/env python3
"""Tools/bench remote: remote-command round trips and metadata-to-MPRIS latency, beside Snapcast's control.

Runs inside Tools/netns, which gives it a D-Bus session bus. lyred (release build, --mpris session) plays
what `lyre play` sends: three 10-minute tagged tones.

- Command round trip: a command is written to lyred's control socket. lyred relays it over the session's
  RTSP connection, the sender's handler runs, and the answer comes back the same way. Two kinds are timed:
  - `play` while playing: the handler returns at once;
  - `volume up` / `volume down`: the handler also sends SET_PARAMETER volume back before it answers.
  Beside them, `now-playing` is timed as a floor; lyred answers it alone.
- Peer: Snapcast 0.26 (Debian snapserver), a JSON-RPC control request on its TCP control port
  (Server.GetRPCVersion), answered by snapserver itself.
- Metadata -> PropertiesChanged: `next` / `previous` alternate. Each makes `lyre play` change the track
  and send new now-playing info. The time is measured from the command being sent to dbus-monitor
  printing the PropertiesChanged signal that carries the new title. This includes the command's own round
  trip, so it bounds the metadata path from above.
- The web API (Protocol/control-api.md), over its WebSocket on port 7780, the page's own path:
  - `play` round trip: the command frame sent to its reply frame;
  - next/previous -> the `now-playing` event with the new title on the WebSocket (sent through the control
    socket, as above, so it also bounds the path from a button click on the page to the page updated);
  - lyred's CPU, RSS and wake-ups a second (context switches of all its threads) while idle, without a page open and with the page open in headless Chromium
    (Tools/peers/browser.py), --idle-seconds each, once per run.
Percentiles are over all samples of all runs; the per-run medians are shown too.
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import websocket

from benchlib import threads, threads_since

BIN = os.environ.get("LYRE_BIN", ".build/release")
if os.environ.get("LYRE_NETNS") != "1":
    sys.exit("bench: run through Tools/bench, which makes the isolated test network")


def pct(values, p):
    values = sorted(values)
    if not values:
        return float("nan")
    k = (len(values) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


class LineSocket:
    def __init__(self, sock):
        self.sock, self.buf = sock, b""

    def ask(self, line):
        start = time.perf_counter_ns()
        self.sock.sendall(line.encode() + b"\n")
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        answer, self.buf = self.buf.split(b"\n", 1)
        return (time.perf_counter_ns() - start) / 1e6, answer.decode().strip()


def wait_for(predicate, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def make_tracks(work, seconds):
    files = []
    for i, title in enumerate(["Alpha", "Bravo", "Charlie"]):
        path = os.path.join(work, f"t{i}.flac")
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", f"sine=frequency={330 + 110 * i}:duration={seconds}:sample_rate=48000",
                        "-ac", "2", "-metadata", f"title={title}", "-metadata", "artist=Bench", path], check=True)
        files.append(path)
    return files


class TitleEvents:
    """(monotonic ns, title) events as a reader thread records them, and a wait for one."""

    def __init__(self):
        self.events = []
        self.cond = threading.Condition()

    def wait_title(self, title, since, timeout=5):
        deadline = time.time() + timeout
        with self.cond:
            while time.time() < deadline:
                for t, name in self.events:
                    if t >= since and name == title:
                        return t
                self.cond.wait(0.05)
        return None


class SignalWatch(TitleEvents):
    """dbus-monitor on the session bus; records (monotonic ns, title) for PropertiesChanged with a title."""

    def __init__(self):
        self.proc = subprocess.Popen(
            ["dbus-monitor", "--session", "type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',path='/org/mpris/MediaPlayer2'"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
        super().__init__()
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        expect_title = False
        for line in self.proc.stdout:
            now = time.perf_counter_ns()
            if 'string "xesam:title"' in line:
                expect_title = True
                continue
            if expect_title and "string " in line:
                title = line.split('string "', 1)[1].rsplit('"', 1)[0]
                with self.cond:
                    self.events.append((now, title))
                    self.cond.notify_all()
                expect_title = False

    def close(self):
        self.proc.terminate()


def snapcast_rpc(work, samples, idle_seconds):
    """Snapserver's JSON-RPC round trips, then an idle snapclient's cost (process_cost) beside lyred's: connected
    to that server, whose stream has no audio (a snapclient is never without a server)."""
    fifo = os.path.join(work, "snapfifo")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    conf = os.path.join(work, "snapserver.conf")
    with open(conf, "w") as f:
        f.write(f"[server]\ndatadir = {work}\n[http]\nenabled = false\n[tcp]\nenabled = true\nbind_to_address = 127.0.0.1\nport = 17805\n"
                f"[stream]\nbind_to_address = 127.0.0.1\nport = 17804\nsource = pipe://{fifo}?name=bench&mode=read\n[logging]\nsink = stderr\nfilter = *:warning\n")
    env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS="unix:path=/nonexistent/lyre-bench-no-dbus")
    server = subprocess.Popen(["snapserver", "-c", conf], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=open(os.path.join(work, "snapserver.log"), "w"), env=env)
    try:
        sock = None
        deadline = time.time() + 10
        while time.time() < deadline and sock is None:
            try:
                sock = socket.create_connection(("127.0.0.1", 17805), timeout=5)
            except OSError:
                time.sleep(0.05)
        if sock is None:
            return None, None
        line = LineSocket(sock)
        times = []
        for i in range(samples):
            ms, answer = line.ask(json.dumps({"id": i, "jsonrpc": "2.0", "method": "Server.GetRPCVersion"}))
            if '"result"' not in answer:
                raise RuntimeError(f"snapserver: {answer}")
            times.append(ms)
        sock.close()
        client = subprocess.Popen(["snapclient", "-h", "127.0.0.1", "-p", "17804", "--hostID", "lyre-bench-idle",
                                   "--player", f"file:filename={os.path.join(work, 'snapclient-idle.pcm')}", "--logsink", "stderr"],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "snapclient.log"), "w"))
        try:
            time.sleep(3)
            if client.poll() is not None:
                sys.exit(f"bench remote: snapclient ended; see {os.path.join(work, 'snapclient.log')}")
            return times, process_cost(client.pid, idle_seconds)
        finally:
            client.terminate()
            client.wait(5)
    finally:
        server.terminate()
        server.wait(5)


class WebWatch(TitleEvents):
    """lyred's API WebSocket: records (monotonic ns, title) of each now-playing event, and times commands."""

    def __init__(self):
        self.ws = websocket.create_connection("ws://127.0.0.1:7780/api/ws", timeout=10)
        json.loads(self.ws.recv())  # the snapshot
        super().__init__()
        self.replies = {}
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        try:
            while True:
                message = json.loads(self.ws.recv())
                now = time.perf_counter_ns()
                with self.cond:
                    if message.get("type") == "now-playing":
                        self.events.append((now, message["nowPlaying"].get("title")))
                    elif message.get("type") == "reply":
                        self.replies[message["id"]] = (now, message)
                    self.cond.notify_all()
        except Exception:
            pass

    def ask(self, command, ident):
        start = time.perf_counter_ns()
        self.ws.send(json.dumps({"id": ident, "command": command}))
        with self.cond:
            while ident not in self.replies:
                if not self.cond.wait(5):
                    raise TimeoutError(command)
            at, message = self.replies.pop(ident)
        assert message.get("ok"), message
        return (at - start) / 1e6

    def close(self):
        self.ws.close()


def process_cost(pid, seconds):
    """CPU share (% of one core), RSS (MiB, at the end) and wake-ups per second (context switches of all its
    threads) of process pid over seconds."""
    before = threads(pid)
    time.sleep(seconds)
    woken, cpu = threads_since(pid, before)
    rss = next(int(l.split()[1]) for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS:"))
    return 100.0 * cpu / seconds, rss / 1024, woken / seconds


def idle_cost(work, run, seconds):
    """lyred idle, without and then with the page open in headless Chromium."""
    log = os.path.join(work, f"lyred-idle-{run}.log")
    lyred = subprocess.Popen([os.path.join(BIN, "lyred"), "--access", "open", "--name", "Idle", "--port", "7792", "--state-dir", os.path.join(work, "state"),
                              "--output", f"wav:{os.path.join(work, 'idle.wav')}", "--control-socket", os.path.join(work, f"idle-{run}.sock"), "--mpris", "off"],
                             stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    browser = None
    try:
        if not wait_for(lambda: "web page on port 7780" in open(log).read()):
            sys.exit(f"bench remote: lyred did not start its page; see {log}")
        time.sleep(1)
        without = process_cost(lyred.pid, seconds)
        browser = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "peers", "browser.py")],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(os.path.join(work, "browser.log"), "w"), text=True, bufsize=1)
        browser.stdin.write("open http://127.0.0.1:7780/\n")
        answer = json.loads(browser.stdout.readline())
        if not answer.get("ok"):
            sys.exit(f"bench remote: the browser did not open the page: {answer}")
        time.sleep(1)
        with_page = process_cost(lyred.pid, seconds)
        return without, with_page
    finally:
        if browser:
            browser.stdin.write("quit\n")
            browser.stdin.flush()
            browser.wait(20)
        lyred.terminate()
        lyred.wait(10)


def one_run(work, run, samples, files):
    log = os.path.join(work, f"lyred-{run}.log")
    control = os.path.join(work, f"control-{run}.sock")
    lyred = subprocess.Popen([os.path.join(BIN, "lyred"), "--access", "open", "--name", "Bench", "--port", "7791", "--state-dir", os.path.join(work, "state"),
                              "--output", f"wav:{os.path.join(work, 'out.wav')}", "--control-socket", control, "--mpris", "session"],
                             stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    watch = SignalWatch()
    play = None
    try:
        if not wait_for(lambda: "MPRIS on the session bus" in open(log).read() and os.path.exists(control)):
            sys.exit(f"bench remote: lyred did not start; see {log}")
        play = subprocess.Popen([os.path.join(BIN, "lyre"), "play", *files, "--to", "Bench", "--latency", "100"],
                                stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, f"play-{run}.log"), "w"))
        sock = socket.socket(socket.AF_UNIX)
        sock.connect(control)
        c = LineSocket(sock)
        if not wait_for(lambda: '"state":"playing"' in c.ask("now-playing")[1], timeout=15):
            sys.exit("bench remote: nothing played")
        time.sleep(0.5)
        web = WebWatch()
        result = {"play": [], "volume": [], "floor": [], "metadata": [], "webPlay": [], "webMetadata": []}
        for i in range(samples):
            result["webPlay"].append(web.ask("play", i))
        for i in range(samples):
            ms, answer = c.ask("play")
            assert answer == "ok", answer
            result["play"].append(ms)
            ms, answer = c.ask("volume down" if i % 2 == 0 else "volume up")
            assert answer == "ok", answer
            result["volume"].append(ms)
            ms, _ = c.ask("now-playing")
            result["floor"].append(ms)
        for i in range(max(10, samples // 10)):
            command, title = ("next", "Bravo") if i % 2 == 0 else ("previous", "Alpha")
            since = time.perf_counter_ns()
            _, answer = c.ask(command)
            assert answer == "ok", answer
            seen = watch.wait_title(title, since)
            if seen is None:
                sys.exit(f"bench remote: no PropertiesChanged with title {title}")
            result["metadata"].append((seen - since) / 1e6)
            shown = web.wait_title(title, since)
            if shown is None:
                sys.exit(f"bench remote: no now-playing event with title {title} on the WebSocket")
            result["webMetadata"].append((shown - since) / 1e6)
            time.sleep(0.2)
        c.ask("stop")
        sock.close()
        web.close()
        return result
    finally:
        watch.close()
        if play:
            play.terminate()
            play.wait(10)
        lyred.terminate()
        lyred.wait(10)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--samples", type=int, default=300)
    ap.add_argument("--idle-seconds", type=float, default=10)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="lyre-bench-remote-")
    os.makedirs(os.path.join(work, "state"), exist_ok=True)
    files = make_tracks(work, 600)
    runs = [one_run(work, r, a.samples, files) for r in range(a.runs)]
    peer, peer_idle = snapcast_rpc(work, a.samples * a.runs, a.idle_seconds)
    idle = [idle_cost(work, r, a.idle_seconds) for r in range(a.runs)]

    def row(name, key, values, target=None):
        medians = [round(statistics.median(r[key]), 3) for r in runs] if key else []
        return {"what": name, "p50_ms": round(pct(values, 50), 3), "p99_ms": round(pct(values, 99), 3),
                "max_ms": round(max(values), 3), "samples": len(values), "run_medians_ms": medians, "target": target}

    rows = []
    for key, name, target in [("play", "command round trip: play (handler returns at once)", "p99 <= 5 ms"),
                              ("volume", "command round trip: volume up/down (handler sends SET_PARAMETER volume)", "p99 <= 5 ms"),
                              ("floor", "control socket floor: now-playing (lyred alone)", None),
                              ("metadata", "next/previous -> PropertiesChanged with the new title (upper bound for metadata)", "p99 <= 50 ms"),
                              ("webPlay", "web API round trip: play over the WebSocket (as a page button)", None),
                              ("webMetadata", "next/previous -> now-playing event with the new title on the WebSocket", None)]:
        rows.append(row(name, key, [v for r in runs for v in r[key]], target))
    if peer:
        rows.append(row("peer: Snapcast 0.26 JSON-RPC Server.GetRPCVersion (snapserver alone)", None, peer))
    print(f"{'what':<88} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}  target / run medians")
    for r in rows:
        extra = (r["target"] or "") + (f"  runs {r['run_medians_ms']}" if r["run_medians_ms"] else "")
        print(f"{r['what']:<88} {r['p50_ms']:>8} {r['p99_ms']:>8} {r['max_ms']:>8}  {extra}")
    if peer:
        print(f"ratio of p99, lyre relayed play command / Snapcast local RPC: {rows[0]['p99_ms'] / rows[-1]['p99_ms']:.2f}")
        web = next(r for r in rows if r["what"].startswith("web API round trip"))
        print(f"ratio of p99, lyre web API play command / Snapcast local RPC: {web['p99_ms'] / rows[-1]['p99_ms']:.2f}")
    cpu = [[round(x[i][0], 3) for x in idle] for i in (0, 1)]
    rss = [[round(x[i][1], 1) for x in idle] for i in (0, 1)]
    woken = [[round(x[i][2], 1) for x in idle] for i in (0, 1)]
    print(f"lyred idle over {a.idle_seconds:g} s, per run: without the page CPU {cpu[0]} % RSS {rss[0]} MiB wake-ups {woken[0]} /s; "
          f"with the page open in Chromium CPU {cpu[1]} % RSS {rss[1]} MiB wake-ups {woken[1]} /s; "
          f"medians {statistics.median(cpu[0]):.3f} % / {statistics.median(cpu[1]):.3f} %, "
          f"{statistics.median(rss[0]):.1f} / {statistics.median(rss[1]):.1f} MiB, "
          f"{statistics.median(woken[0]):.1f} / {statistics.median(woken[1]):.1f} wake-ups/s "
          f"(issue 30's target: a few a second and under 0.1 % without the page)")
    if peer_idle:
        print(f"peer: snapclient 0.26 idle over {a.idle_seconds:g} s (connected, its server's stream without audio): "
              f"CPU {peer_idle[0]:.3f} % RSS {peer_idle[1]:.1f} MiB wake-ups {peer_idle[2]:.1f} /s")
    print(json.dumps({"runs": a.runs, "rows": rows, "idle": {"cpu_percent": {"without": cpu[0], "with_page": cpu[1]},
                                                            "wakeups_per_second": {"without": woken[0], "with_page": woken[1]},
                                                            "rss_mib": {"without": rss[0], "with_page": rss[1]},
                                                            "peer_snapclient": peer_idle}}))


if __name__ == "__main__":
    sys.exit(main())
