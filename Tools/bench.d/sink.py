#!/usr/bin/env python3
"""Tools/bench sink: the delay `lyre sink` adds between an app's audio and the receiver, beyond the session's
latency (issue 12's target: at most 50 ms).

Runs inside Tools/netns with a real PulseAudio (Tools/peers/pulse-null.sh), lyred writing a WAV and its
presentation log (every block, with the CLOCK_MONOTONIC time it left), and `lyre sink`. paplay plays a click
a second into the receiver's Lyre output. pacat records that output's monitor, stamping each block with
CLOCK_MONOTONIC as it arrives: that is when the sound server rendered the click, when a local sound card
would have played it. The receiver's presentation log says when the same click left its output. Added delay
= presented - rendered - session latency, per click; medians per run, and the median of the runs.

Usage: Tools/bench sink [--runs N] [--latencies 250,50] [--clicks N]
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import wave

import numpy as np

BIN = os.environ.get("LYRE_BIN", ".build/release")
TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, PULSE_SERVER="unix:/run/lyre-pulse/native", PULSE_CLIENTCONFIG="/run/lyre-pulse/client.conf")
RATE = 48000

if os.environ.get("LYRE_NETNS") != "1":
    sys.exit("bench: run through Tools/bench, which makes the isolated test network")


def wait_until(condition, timeout=15, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    sys.exit(f"bench sink: timed out waiting for {what}")


def clicks_file(path, count):
    """A 3 ms burst (a 2 kHz tone) at the start of every second, silence between."""
    samples = np.zeros(RATE * (count + 1), dtype=np.float64)
    burst = 0.8 * np.sin(2 * np.pi * 2000 * np.arange(int(0.003 * RATE)) / RATE)
    for k in range(count):
        at = RATE // 2 + k * RATE
        samples[at:at + len(burst)] = burst
    pcm = (np.repeat(samples[:, None], 2, axis=1) * 32767).astype("<i2")
    with wave.open(path, "wb") as w:
        w.setnchannels(2)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(pcm.tobytes())


def onsets(samples, rate=RATE):
    """Sample indices where a click starts: above a quarter of the loudest after at least 0.5 s of quiet."""
    level = np.abs(samples)
    threshold = 0.25 * level.max() if level.max() > 0 else 1
    found, last = [], -rate
    for i in np.flatnonzero(level > threshold):
        if i - last > rate // 2:
            found.append(int(i))
        last = i
    return found


def record_monitor(monitor, stamps, result, stop):
    """pacat on the monitor; each block's end stamped with CLOCK_MONOTONIC as it arrives. The samples (left
    channel) go to result["samples"]."""
    proc = subprocess.Popen(["pacat", "--record", f"--device={monitor}", "--latency-msec=5", "--raw", "--format=s16le",
                             f"--rate={RATE}", "--channels=2"], stdout=subprocess.PIPE, env=ENV)
    frames = 0
    chunks = []
    while not stop.is_set():
        data = proc.stdout.read1(4096)
        if not data:
            break
        now = time.monotonic_ns()
        block = np.frombuffer(data[: len(data) // 4 * 4], dtype="<i2").reshape(-1, 2)[:, 0] / 32768.0
        chunks.append(block)
        frames += len(block)
        stamps.append((frames, now))
    proc.kill()
    result["samples"] = np.concatenate(chunks) if chunks else np.zeros(0)


def rendered_times(samples, stamps, indices):
    """CLOCK_MONOTONIC when monitor sample i was rendered: the stamp of the block it arrived in, less the
    frames after it in that block."""
    out = []
    for i in indices:
        for end, stamp in stamps:
            if end > i:
                out.append(stamp - (end - 1 - i) * 1e9 / RATE)
                break
    return out


def presented_times(wav_path, log_path, indices):
    """CLOCK_MONOTONIC when WAV sample i left the receiver: the WAV holds every block of the presentation log
    in order, silence included."""
    with open(log_path, newline="") as f:
        rows = [(int(r["presented_ns"]), int(r["frames"])) for r in csv.DictReader(f)]
    starts = np.cumsum([0] + [frames for _, frames in rows])
    out = []
    for i in indices:
        row = int(np.searchsorted(starts, i, side="right")) - 1
        if 0 <= row < len(rows):
            out.append(rows[row][0] + (i - starts[row]) * 1e9 / RATE)
    return out


def run_once(latency, clicks, scratch):
    procs = []
    try:
        procs.append(subprocess.Popen([os.path.join(TOOLS, "peers", "pulse-null.sh"), "local"], stderr=subprocess.DEVNULL))
        wait_until(lambda: os.path.exists("/run/lyre-pulse/native"), what="pulseaudio")
        wav = os.path.join(scratch, f"out-{latency}.wav")
        log = os.path.join(scratch, f"out-{latency}.csv")
        lyred_err = open(os.path.join(scratch, "lyred.log"), "w")
        procs.append(subprocess.Popen([os.path.join(BIN, "lyred"), "--access", "open", "--name", "Speaker", "--port", "7720", "--state-dir",
                                       "/run/lyred-bench", "--output", f"wav:{wav}", "--presentation-log", log,
                                       "--control-socket", "off", "--mpris", "off", "--log-level", "info"], stderr=lyred_err))
        wait_until(lambda: "advertised as" in open(lyred_err.name).read(), what="lyred")
        procs.append(subprocess.Popen([os.path.join(BIN, "lyre"), "sink", "--latency", str(latency)], env=ENV,
                                      stderr=subprocess.DEVNULL))
        listed = []

        def found():
            # The browse can end before avahi has the new record: ask again until it does.
            listed[:] = json.loads(subprocess.run([os.path.join(BIN, "lyre"), "devices", "--json"], capture_output=True, text=True).stdout or "[]")
            return bool(listed)
        wait_until(found, what="the receiver in lyre devices")
        node = "lyre_" + listed[0]["id"]
        wait_until(lambda: node in subprocess.run(["pactl", "list", "short", "sinks"], capture_output=True, text=True, env=ENV).stdout,
                   what=f"the output {node}")
        stamps, result, stop = [], {}, threading.Event()
        recorder = threading.Thread(target=record_monitor, args=(node + ".monitor", stamps, result, stop))
        recorder.start()
        time.sleep(0.5)
        subprocess.run(["paplay", f"--device={node}", os.path.join(scratch, "clicks.wav")], env=ENV, check=True)
        time.sleep(latency / 1000 + 1)
        stop.set()
        recorder.join(timeout=5)
        monitor = result.get("samples", np.zeros(0))
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in reversed(procs):
            p.wait(timeout=10)
    with wave.open(wav) as w:
        out = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").reshape(-1, w.getnchannels())[:, 0] / 32768.0
    rendered = rendered_times(monitor, stamps, onsets(monitor))
    presented = presented_times(wav, log, onsets(out))
    if len(rendered) != clicks or len(presented) != clicks:
        sys.exit(f"bench sink: found {len(rendered)} clicks at the monitor and {len(presented)} at the receiver, not {clicks}")
    return [(p - r) / 1e6 - latency for r, p in zip(rendered, presented)]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--latencies", default="250,50")
    parser.add_argument("--clicks", type=int, default=8)
    args = parser.parse_args()
    scratch = tempfile.mkdtemp(prefix="lyre-bench-sink-")
    clicks_file(os.path.join(scratch, "clicks.wav"), args.clicks)
    print(f"lyre sink: delay added beyond the session latency, app -> receiver ({args.clicks} clicks per run)")
    print(f"{'latency':>8} {'run medians (ms)':>30} {'median':>8} {'max':>7}   target <= 50 ms")
    for latency in [int(x) for x in args.latencies.split(",")]:
        medians, worst = [], -1e9
        for _ in range(args.runs):
            added = run_once(latency, args.clicks, scratch)
            medians.append(statistics.median(added))
            worst = max(worst, max(added))
        text = " ".join(f"{m:.1f}" for m in medians)
        print(f"{latency:>6}ms {text:>30} {statistics.median(medians):>8.1f} {worst:>7.1f}")


if __name__ == "__main__":
    main()
