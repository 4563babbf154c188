#!/usr/bin/env python3
"""Tools/bench discovery: how fast receivers are found and lost, lyre beside avahi-browse.

Runs inside Tools/netns (its own loopback network, D-Bus and avahi-daemon). Each measurement is repeated
--runs times; the table shows medians, and the ratio lyre / avahi-browse for the same work.
"""
import argparse
import json
import os
import select
import signal
import statistics
import subprocess
import sys
import time

BIN = os.environ.get("LYRE_BIN", ".build/release")
LYRED = os.path.join(BIN, "lyred")
LYRE = os.path.join(BIN, "lyre")
state_counter = 0

if os.environ.get("LYRE_NETNS") != "1":
    sys.exit("bench: run through Tools/bench, which makes the isolated test network")


def start_lyred(name, mode="avahi"):
    global state_counter
    state_counter += 1
    return subprocess.Popen(
        [LYRED, "--access", "open", "--name", name, "--port", "0", "--mdns", mode, "--state-dir", f"/run/bench-state/{state_counter}",
         "--log-level", "warning"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop(process, sig=signal.SIGTERM):
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class LineWatcher:
    """A long-running browser whose stdout lines are timestamped as they arrive."""

    def __init__(self, argv):
        self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0)
        self.buffer = b""

    def wait_for(self, predicate, timeout=15.0):
        """Returns the monotonic time of the first line satisfying predicate, or None."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                if predicate(line.decode(errors="replace")):
                    return time.monotonic()
            ready, _, _ = select.select([self.process.stdout], [], [], max(0.0, deadline - time.monotonic()))
            if ready:
                chunk = os.read(self.process.stdout.fileno(), 65536)
                if not chunk:
                    return None
                self.buffer += chunk
        return None

    def close(self):
        stop(self.process, signal.SIGKILL)


def lyre_watch(mode):
    return LineWatcher([LYRE, "devices", "--watch", "--json", "--mdns", mode])


def lyre_has(name, reason):
    def match(line):
        try:
            obj = json.loads(line)
        except ValueError:
            return False
        return obj.get("name") == name and obj.get("reason") == reason
    return match


def avahi_watch():
    return LineWatcher(["avahi-browse", "--parsable", "--resolve", "--no-db-lookup", "_lyre._tcp"])


def avahi_has(name, kind):
    escaped = name.replace(" ", "\\032")
    return lambda line: line.startswith(kind + ";") and f";{escaped};_lyre._tcp;" in line


def appear_and_vanish(watch_factory, appeared, vanished, mode, runs):
    """start → seen, and SIGTERM → gone, measured with one watcher running throughout."""
    start_to_seen, term_to_gone = [], []
    watcher = watch_factory()
    time.sleep(1.5)  # let the watcher's own browse settle
    try:
        for run in range(runs):
            name = f"Bench {mode} {run} {time.monotonic_ns() % 100000}"
            t0 = time.monotonic()
            receiver = start_lyred(name, mode)
            seen = watcher.wait_for(appeared(name))
            if seen is None:
                stop(receiver)
                raise RuntimeError(f"{name} was never seen")
            start_to_seen.append(seen - t0)
            time.sleep(0.3)
            t1 = time.monotonic()
            receiver.send_signal(signal.SIGTERM)
            gone = watcher.wait_for(vanished(name))
            stop(receiver)
            if gone is None:
                raise RuntimeError(f"{name} never went away")
            term_to_gone.append(gone - t1)
            time.sleep(0.3)
    finally:
        watcher.close()
    return start_to_seen, term_to_gone


def one_shot(argv, expect, runs):
    times = []
    for _ in range(runs):
        t0 = time.monotonic()
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout
        times.append(time.monotonic() - t0)
        got = expect(out)
        if got is not True:
            raise RuntimeError(f"{' '.join(argv)}: {got}")
    return times


def with_receivers(count, prefix, body):
    """Runs body with `count` receivers named `prefix NN` up and visible to the daemon. Each stage uses its
    own prefix: reusing a name a stage just withdrew makes the new receiver rename itself (correctly)."""
    receivers = [start_lyred(f"{prefix} {i:02d}") for i in range(count)]
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            out = subprocess.run(["avahi-browse", "-tp", "_lyre._tcp"], capture_output=True, text=True).stdout
            if sum(1 for line in out.splitlines() if line.startswith("+;")) >= count:
                break
            time.sleep(0.2)
        return body()
    finally:
        for r in receivers:
            r.send_signal(signal.SIGTERM)
        for r in receivers:
            stop(r)


def ms(values):
    return f"{statistics.median(values) * 1000:8.1f} ms"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    runs = args.runs
    rows = []

    def row(label, target, ours, peer_label, peer):
        ratio = statistics.median(ours) / statistics.median(peer) if peer else None
        rows.append((label, target, ms(ours), peer_label, ms(peer) if peer else "", f"{ratio:5.2f}" if ratio else ""))

    print(f"Lyre discovery bench: {runs} runs each, medians; peer = avahi-browse (avahi-utils) on the same daemon",
          file=sys.stderr)

    seen, gone = appear_and_vanish(lambda: lyre_watch("avahi"), lambda n: lyre_has(n, "deviceAvailable"),
                                   lambda n: lyre_has(n, "deviceUnavailable"), "avahi", runs)
    peer_seen, peer_gone = appear_and_vanish(avahi_watch, lambda n: avahi_has(n, "="), lambda n: avahi_has(n, "-"),
                                             "avahi", runs)
    row("lyred start -> seen by watch (avahi-daemon)", "<= 1500 ms", seen, "avahi-browse -r", peer_seen)
    row("SIGTERM -> deviceUnavailable (avahi-daemon)", "<= 500 ms", gone, "avahi-browse -r", peer_gone)

    seen_e, gone_e = appear_and_vanish(lambda: lyre_watch("embedded"), lambda n: lyre_has(n, "deviceAvailable"),
                                       lambda n: lyre_has(n, "deviceUnavailable"), "embedded", runs)
    row("lyred start -> seen by watch (embedded)", "<= 1500 ms", seen_e, "avahi-browse -r", peer_seen)
    row("SIGTERM -> deviceUnavailable (embedded)", "<= 500 ms", gone_e, "avahi-browse -r", peer_gone)

    def ten():
        def expect(n):
            def check(out):
                try:
                    count = len(json.loads(out))
                except ValueError:
                    return f"not JSON: {out[:200]}"
                return True if count == n else f"listed {count} of {n}"
            return check

        ours = one_shot([LYRE, "devices", "--json"], expect(10), runs)

        def peer_expect(out):
            count = sum(1 for line in out.splitlines() if line.startswith("="))
            return True if count >= 10 else f"avahi-browse resolved {count} of 10"

        peer = one_shot(["avahi-browse", "-rtp", "--no-db-lookup", "_lyre._tcp"], peer_expect, runs)
        return ours, peer

    ours10, peer10 = with_receivers(10, "Ten", ten)
    row("one-shot `lyre devices`, 10 receivers", "<= 1200 ms", ours10, "avahi-browse -rt", peer10)

    def fifty():
        out = subprocess.run([LYRE, "devices", "--json", "--timeout", "10"], capture_output=True, text=True).stdout
        listed = {d["name"] for d in json.loads(out)}
        return listed

    listed = with_receivers(50, "Fifty", fifty)
    wanted = {f"Fifty {i:02d}" for i in range(50)}
    missing = sorted(wanted - listed)

    print()
    header = ("measurement", "target", "lyre", "peer", "peer median", "lyre/peer")
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    for r in [header] + rows:
        print("  ".join(str(c).ljust(widths[i]) for i, c in enumerate(r)))
    print()
    print(f"50 receivers in one namespace: {len(listed & wanted)} of 50 listed"
          + (f", missing: {', '.join(missing)}" if missing else ", none lost"))
    print(f"reproduce: Tools/bench discovery --runs {runs}")


if __name__ == "__main__":
    main()
