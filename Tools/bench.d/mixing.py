#!/usr/bin/env python3
"""Tools/bench mixing: what a second session mixed into what plays costs the receiver, and how soon an
announcement is heard and the music under it ducked (issue 29, streaming.md §7).

Runs inside Tools/netns. One lyred (WAV sink, presentation log) per case, each sender with --host (no
browsing), at the default latency (250 ms):

- one: `lyre play` of --seconds of music-like input alone;
- two: the same, and 1 s later a second `lyre play --mix` of a full-band sweep that lasts to the music's end:
  two sessions, each with its own clock, jitter buffer and decoder, summed in every block.
  Receiver CPU (utime + stime) is read over the same steady window in both: from 3 s after the music starts
  (2 s after the second session's) to 1.5 s before it ends. Printed: each median, and two / one.
- announce: music plays; 3 s in, `lyre play CHIME --duck` (a 2 s full-band sweep). The output is separated
  (`audio.py separate`: the music's and the chime's known signals fitted window by window), which places the
  chime's first sample in the output and finds where the music first sits within 1 dB of its ducked level
  (the ramp down ends at the chime's first sample, so this is a little before it); the presentation log says
  when each output sample left. Printed: from `lyre play --duck` started to the chime's first sample out
  (heard), and to the music ducked (heard + that offset); beside them, from
  `lyre play` started to the music's first sample out in the "one" case (a session on an idle receiver).

No peer is run beside it: Snapcast plays one stream per group and mixes none, and shairport-sync plays one
session at a time. Medians over --runs.

Usage: Tools/bench mixing [--runs N] [--seconds S]
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import cpu_seconds, peak_rss_kib, wait_for

BIN = os.environ.get("LYRE_BIN", ".build/release")
HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.dirname(HERE)
AUDIO = os.path.join(TOOLS, "peers", "audio.py")
RATE = 48000
PORT = "7790"

if os.environ.get("LYRE_NETNS") != "1":
    sys.exit("bench: run through Tools/bench, which makes the isolated test network")


def signal_file(work, name, seconds, kind):
    path = os.path.join(work, name)
    subprocess.run([sys.executable, AUDIO, "sweep", path, "--seconds", str(seconds), "--signal", kind], check=True)
    return path


def play(path, *options):
    return subprocess.Popen([os.path.join(BIN, "lyre"), "play", path, "--host", f"127.0.0.1:{PORT}", *options],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def finish(proc, what):
    proc.wait(60)
    if proc.returncode != 0:
        sys.exit(f"bench: {what} failed ({proc.returncode}): {proc.stderr.read().decode().strip()}")


class Receiver:
    """One lyred writing a WAV file and its presentation log, for one case."""

    def __init__(self, work, tag):
        self.wav = os.path.join(work, f"out-{tag}.wav")
        self.pres = os.path.join(work, f"pres-{tag}.csv")
        self.log = os.path.join(work, f"lyred-{tag}.log")
        self.proc = subprocess.Popen(
            [os.path.join(BIN, "lyred"), "--access", "open", "--name", "Bench", "--port", PORT,
             "--state-dir", os.path.join(work, f"state-{tag}"), "--output", "wav:" + self.wav, "--presentation-log", self.pres],
            stdout=subprocess.DEVNULL, stderr=open(self.log, "w"))
        if not wait_for(self.log, "advertised as"):
            sys.exit(f"bench: lyred did not start; see {self.log}")

    def stop(self):
        rss = peak_rss_kib(self.proc.pid)
        self.proc.terminate()
        self.proc.wait(10)
        return rss

    def blocks(self):
        """(first output frame, presented_ns, frames) of every block written, in order."""
        at, out = 0, []
        for r in csv.DictReader(open(self.pres)):
            out.append((at, int(r["presented_ns"]), int(r["frames"]), int(r["audio_frames"])))
            at += int(r["frames"])
        return out

    def presented_ns(self, frame):
        """When output frame `frame` (its index in the WAV file) left."""
        for start, presented, frames, _ in self.blocks():
            if start <= frame < start + frames:
                return presented + (frame - start) * 1_000_000_000 // RATE
        sys.exit(f"bench: output frame {frame} is not in {self.pres}")

    def first_audio_ns(self):
        for start, presented, frames, audio in self.blocks():
            if audio > 0:
                return presented + (frames - audio) * 1_000_000_000 // RATE  # audio fills the block's end
        sys.exit(f"bench: no audio in {self.pres}")


def cpu_case(work, tag, music, sweep, seconds):
    """Receiver CPU % over the steady window, with the sweep mixed in from 1 s when `sweep` is given."""
    rx = Receiver(work, tag)
    try:
        started = time.monotonic_ns()
        a = play(music)
        b = None
        time.sleep(1.0)
        if sweep:
            b = play(sweep, "--mix")
        time.sleep(2.0)
        c0, t0 = cpu_seconds(rx.proc.pid), time.monotonic()
        time.sleep(seconds - 3.0 - 1.5)
        c1, t1 = cpu_seconds(rx.proc.pid), time.monotonic()
        finish(a, "lyre play (music)")
        if b:
            finish(b, "lyre play --mix")
        first_ms = (rx.first_audio_ns() - started) / 1e6
    finally:
        rss = rx.stop()
    if sweep and "plays over" not in open(rx.log).read():
        sys.exit(f"bench: lyred's log does not say the second session played over the first; see {rx.log}")
    return {"cpu_pct": 100 * (c1 - c0) / (t1 - t0), "rss_kib": rss, "first_ms": first_ms}


def announce_case(work, tag, music, chime):
    rx = Receiver(work, tag)
    try:
        a = play(music)
        time.sleep(3.0)
        started = time.monotonic_ns()
        b = play(chime, "--duck")
        finish(b, "lyre play --duck")
        finish(a, "lyre play (music)")
    finally:
        rx.stop()
    out = subprocess.run([sys.executable, AUDIO, "separate", music, chime, rx.wav], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"bench: audio.py separate failed: {out.stderr.strip()}")
    sep = json.loads(out.stdout.strip().splitlines()[-1])
    if sep["ramp_down_ms"] is None or sep["main_db_during"] is None:
        sys.exit(f"bench: the music was not found ducked under the chime: {sep}")
    heard_ms = (rx.presented_ns(sep["announce_lag_samples"]) - started) / 1e6
    return {"heard_ms": heard_ms, "ducked_ms": heard_ms + sep["ramp_down_ms"], "ramp_ms": sep["ramp_down_ms"],
            "duck_db": sep["main_db_during"], "chime_snr_db": sep["announce_snr_db"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=20, help="the music's length in the CPU cases (>= 8)")
    a = ap.parse_args()
    if a.seconds < 8:
        sys.exit("bench: --seconds must be at least 8")
    work = tempfile.mkdtemp(prefix="lyre-bench-mixing-")
    music = signal_file(work, "music.wav", a.seconds, "music")
    sweep = signal_file(work, "sweep.wav", a.seconds - 1.0, "full")
    music8 = signal_file(work, "music8.wav", 8, "music")
    chime = signal_file(work, "chime.wav", 2, "full")
    one, two, ann = [], [], []
    for i in range(a.runs):
        print(f"run {i + 1}/{a.runs}", file=sys.stderr)
        one.append(cpu_case(work, f"one{i}", music, None, a.seconds))
        two.append(cpu_case(work, f"two{i}", music, sweep, a.seconds))
        ann.append(announce_case(work, f"announce{i}", music8, chime))

    def med(runs, key):
        return statistics.median(r[key] for r in runs)

    steady = a.seconds - 4.5
    print(f"\nlyred mixing, default latency (250 ms), median of {a.runs} runs; CPU over the same {steady:g} s steady window")
    print(f"  receiver CPU %, one session            {med(one, 'cpu_pct'):8.2f}")
    print(f"  receiver CPU %, two sessions mixed     {med(two, 'cpu_pct'):8.2f}   ratio two/one {med(two, 'cpu_pct') / med(one, 'cpu_pct'):.2f}")
    print(f"  receiver peak RSS KiB, one / two       {med(one, 'rss_kib'):8.0f} / {med(two, 'rss_kib'):.0f}")
    print(f"  lyre play -> first sample out (idle)   {med(one, 'first_ms'):8.1f} ms")
    print(f"  lyre play --duck -> chime heard        {med(ann, 'heard_ms'):8.1f} ms   (runs: {', '.join('%.1f' % r['heard_ms'] for r in ann)})")
    print(f"  lyre play --duck -> music ducked       {med(ann, 'ducked_ms'):8.1f} ms   (ramp down {med(ann, 'ramp_ms'):.1f} ms, "
          f"to {med(ann, 'duck_db'):.2f} dB; it ends at the chime's first sample)")
    print(f"  chime against its input                {med(ann, 'chime_snr_db'):8.2f} dB  (Opus; the separation's floor)")
    print(f"\n  work files: {work}")


if __name__ == "__main__":
    main()
