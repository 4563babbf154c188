#!/usr/bin/env python3
"""Tools/bench streaming: lyre play -> lyred, beside Snapcast (Debian snapserver + snapclient, Opus).

Runs inside Tools/netns. Each run plays the same 48 kHz stereo input (music-like: chords, kick and hi-hat;
--signal sweep for a full-band sweep) with --latency 20 into lyred's WAV sink (and once more into ALSA's null
plugin), reads lyred's presentation log, and measures CPU and peak RSS of lyred and of `lyre play`; once more
at the default latency (250 ms), where lyred renders 50 ms blocks as snapclient's file player does; once more
from a sender paired with lyred (PIN pairing: TLS and SRTP, the default configuration); then Snapcast streams
the same file for the same time. Both encode Opus at --bitrate kbit/s. Medians over --runs.

Memory: peak RSS (VmHWM) and private dirty (smaps_rollup, read while playing), for lyred and snapclient,
`lyre play` and snapserver. lyre and lyred are the programs as shipped (Tools/lib/shipped.sh).

CPU is measured as the peer's is: over a steady window (from 2 s after `lyre play` starts to 1 s before its
input ends), the same window length for Snapcast. The whole run of `lyre play` (process start, decoder and
connection set-up, the last second's drain) is printed beside it.

- first sample: `lyre play` started -> the first stream sample leaves the receiver's output; with --host, and
  with --to NAME for a receiver never seen (found by browsing mDNS) and for a known one (its address
  remembered from the run before: no browsing).
- end-to-end latency: a sample's presentation minus the sender-clock time it was due at the sender
  (its anchor time, before the target latency); target is --latency.
- presentation error: |presented - scheduled| per output block (one host, one clock), p50 / p99.
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

from benchlib import cpu_seconds, peak_rss_kib, private_dirty_kib, wait_for

BIN = os.environ.get("LYRE_BIN", ".build/release")
HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.dirname(HERE)

if os.environ.get("LYRE_NETNS") != "1":
    sys.exit("bench: run through Tools/bench, which makes the isolated test network")


WARMUP = 2.0


def window(seconds):
    """The steady CPU window's length: from WARMUP after start to a second before the input ends."""
    return max(1.0, seconds - WARMUP - 1.0)


def run_lyre(work, sweep, latency, output, tag, seconds, bitrate, env=None, target=("--host", "127.0.0.1:7790"), sender_state=None):
    log = os.path.join(work, f"lyred-{tag}.log")
    pres = os.path.join(work, f"pres-{tag}.csv")
    lyred = subprocess.Popen(
        [os.path.join(BIN, "lyred"), "--access", "open", "--name", "Bench", "--port", "7790", "--state-dir", os.path.join(work, "state"),
         "--output", output, "--presentation-log", pres],
        stdout=subprocess.DEVNULL, stderr=open(log, "w"), env=env)
    try:
        if not wait_for(log, "advertised as"):
            sys.exit(f"bench: lyred did not start; see {log}")
        cpu0 = cpu_seconds(lyred.pid)
        wall0 = time.monotonic()
        started_ns = time.monotonic_ns()
        play_env = dict(os.environ, XDG_STATE_HOME=sender_state, XDG_CONFIG_HOME=sender_state) if sender_state else None
        play = subprocess.Popen([os.path.join(BIN, "lyre"), "play", sweep, *target, "--bitrate", str(bitrate),
                                 "--latency", str(latency)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=play_env)
        steady, dirty = None, (float("nan"), float("nan"))
        time.sleep(WARMUP)
        try:
            p0, l0, t0 = cpu_seconds(play.pid), cpu_seconds(lyred.pid), time.monotonic()
            time.sleep(window(seconds))
            p1, l1, t1 = cpu_seconds(play.pid), cpu_seconds(lyred.pid), time.monotonic()
            steady = (100 * (p1 - p0) / (t1 - t0), 100 * (l1 - l0) / (t1 - t0))
            dirty = (private_dirty_kib(play.pid), private_dirty_kib(lyred.pid))  # while it plays
        except (FileNotFoundError, ProcessLookupError):
            pass  # `lyre play` ended early: its status says why, below
        _, status, usage = os.wait4(play.pid, 0)
        play.returncode = status
        wall = time.monotonic() - wall0
        lyred_cpu = cpu_seconds(lyred.pid) - cpu0
        lyred_rss = peak_rss_kib(lyred.pid)
        if status != 0:
            sys.exit(f"bench: lyre play failed: {play.stderr.read().decode()}")
    finally:
        lyred.terminate()
        lyred.wait(10)
    rows = list(csv.DictReader(open(pres)))
    audio = [r for r in rows if int(r["audio_frames"]) > 0]
    first = audio[0]
    first_ns = int(first["presented_ns"]) + (int(first["frames"]) - int(first["audio_frames"])) * 1_000_000_000 // 48000
    errors = sorted(abs(int(r["presented_ns"]) - int(r["scheduled_ns"])) / 1000 for r in audio[10:])
    e2e = [(int(r["presented_ns"]) - int(r["scheduled_ns"])) / 1e6 + latency for r in audio[10:]]
    return {
        "first_sample_ms": (first_ns - started_ns) / 1e6,
        "e2e_ms": statistics.median(e2e),
        "p50_us": errors[len(errors) // 2],
        "p99_us": errors[int(len(errors) * 0.99)],
        "lyred_cpu_pct": 100 * lyred_cpu / wall,
        "lyred_rss_kib": lyred_rss,
        "sender_cpu_pct": 100 * (usage.ru_utime + usage.ru_stime) / wall,
        "sender_cpu_steady": steady[0] if steady else float("nan"),
        "lyred_cpu_steady": steady[1] if steady else float("nan"),
        "sender_rss_kib": usage.ru_maxrss,
        "sender_dirty_kib": dirty[0],
        "lyred_dirty_kib": dirty[1],
    }


def pair(work, sender_state):
    """Pairs a sender (its state in `sender_state`) with lyred (state in work/state), as a user does: `lyre pair
    --host`, the PIN typed as soon as `lyre remote pairing` shows it. Returns the seconds `lyre pair` took."""
    log = os.path.join(work, "lyred-pair.log")
    socket_path = os.path.join(work, "pair.sock")
    lyred = subprocess.Popen([os.path.join(BIN, "lyred"), "--access", "open", "--name", "Bench", "--port", "7790",
                              "--state-dir", os.path.join(work, "state"), "--output", "null", "--mpris", "off",
                              "--control-socket", socket_path], stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    try:
        if not wait_for(log, "advertised as"):
            sys.exit(f"bench: lyred did not start; see {log}")
        env = dict(os.environ, XDG_STATE_HOME=sender_state, XDG_CONFIG_HOME=sender_state)
        started = time.monotonic()
        pairing = subprocess.Popen([os.path.join(BIN, "lyre"), "pair", "--host", "127.0.0.1:7790", "--name", "Bench sender"],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
        pin = None
        while pin is None and time.monotonic() - started < 10:
            shown = subprocess.run([os.path.join(BIN, "lyre"), "remote", "--socket", socket_path, "pairing", "--json"],
                                   capture_output=True, text=True)
            if shown.returncode == 0:
                pin = json.loads(shown.stdout)["pin"]
            else:
                time.sleep(0.005)
        if pin is None:
            sys.exit("bench: lyred showed no PIN")
        out, err = pairing.communicate(pin + "\n", timeout=20)
        took = time.monotonic() - started
        if pairing.returncode != 0:
            sys.exit(f"bench: lyre pair failed: {err.strip()}")
        return took
    finally:
        lyred.terminate()
        lyred.wait(10)


def run_paired(work, music, tag, seconds, bitrate):
    """Pairs a fresh sender, then plays from it at the default latency (250 ms): a session over TLS and SRTP,
    which this checks in lyred's log. Returns (pairing seconds, run_lyre's figures)."""
    sender_state = tempfile.mkdtemp(prefix=f"{tag}-", dir=work)
    took = pair(work, sender_state)
    run = run_lyre(work, music, 250, "wav:" + os.path.join(work, "out.wav"), tag, seconds, bitrate, sender_state=sender_state)
    if "TLS and SRTP" not in open(os.path.join(work, f"lyred-{tag}.log")).read():
        sys.exit("bench: the paired session was not encrypted")
    return took, run


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--bitrate", type=int, default=192, help="Opus kbit/s, both")
    ap.add_argument("--signal", choices=["music", "full"], default="music", help="music-like, or a full-band sweep")
    ap.add_argument("--latency", type=int, default=20)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="lyre-bench-")
    sweep = os.path.join(work, "sweep.wav")
    subprocess.run([sys.executable, os.path.join(TOOLS, "peers", "audio.py"), "sweep", sweep, "--seconds", str(a.seconds),
                    "--signal", a.signal],
                   check=True)
    alsa_conf = "/run/lyre-netns/asound-null.conf"  # written by Tools/netns: default PCM is ALSA's null plugin
    lyre_runs, alsa_runs, default_runs, paired_runs, snap_runs, unseen_runs, known_runs = [], [], [], [], [], [], []
    for i in range(a.runs):
        print(f"run {i + 1}/{a.runs}", file=sys.stderr)
        lyre_runs.append(run_lyre(work, sweep, a.latency, "wav:" + os.path.join(work, "out.wav"), f"wav{i}", a.seconds, a.bitrate))
        alsa_runs.append(run_lyre(work, sweep, a.latency, "default", f"alsa{i}", a.seconds, a.bitrate, env=dict(os.environ, ALSA_CONFIG_PATH=alsa_conf)))
        default_runs.append(run_lyre(work, sweep, 250, "wav:" + os.path.join(work, "out.wav"), f"default{i}", a.seconds, a.bitrate))
        paired_runs.append(run_paired(work, sweep, f"paired{i}", a.seconds, a.bitrate)[1])
        # By name: first with nothing remembered (browsing), then again with the address that run remembered.
        sender_state = tempfile.mkdtemp(prefix=f"sender{i}-", dir=work)
        unseen_runs.append(run_lyre(work, sweep, a.latency, "wav:" + os.path.join(work, "out.wav"), f"unseen{i}", a.seconds, a.bitrate,
                                    target=("--to", "Bench"), sender_state=sender_state))
        known_runs.append(run_lyre(work, sweep, a.latency, "wav:" + os.path.join(work, "out.wav"), f"known{i}", a.seconds, a.bitrate,
                                   target=("--to", "Bench"), sender_state=sender_state))
        out = subprocess.run([sys.executable, os.path.join(HERE, "snapcast.py"), "--input", sweep, "--seconds", str(window(a.seconds)),
                              "--bitrate-kbps", str(a.bitrate), "--warmup", str(WARMUP)],
                             capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"bench: snapcast.py failed: {out.stderr.strip()}")
        snap_runs.append(json.loads(out.stdout.strip().splitlines()[-1]))

    def med(runs, key):
        return statistics.median(r[key] for r in runs)

    print(f"\nlyre play -> lyred, --latency {a.latency}, {a.seconds:g} s {a.signal} input at {a.bitrate} kbit/s, median of {a.runs} runs")
    print(f"  first sample out (WAV sink)         {med(lyre_runs, 'first_sample_ms'):8.1f} ms   (--host HOST:PORT)")
    print(f"    --to a known receiver             {med(known_runs, 'first_sample_ms'):8.1f} ms   (target <= 150; address remembered)")
    print(f"    --to a receiver never seen        {med(unseen_runs, 'first_sample_ms'):8.1f} ms   (target <= 1200; browses mDNS)")
    print(f"  end-to-end latency (WAV sink)       {med(lyre_runs, 'e2e_ms'):8.3f} ms   (target <= 30, within 1 ms of {a.latency})")
    print(f"  presentation error WAV  p50 / p99   {med(lyre_runs, 'p50_us'):8.1f} / {med(lyre_runs, 'p99_us'):.1f} us   (p99 target <= 100)")
    print(f"  presentation error ALSA p50 / p99   {med(alsa_runs, 'p50_us'):8.1f} / {med(alsa_runs, 'p99_us'):.1f} us   (null plugin, self-paced)")
    peer = snap_runs[0]["peer"]
    rows = [
        ("receiver CPU % (250 ms)", med(default_runs, "lyred_cpu_steady"), "snapclient", med(snap_runs, "client_cpu_percent")),
        ("sender CPU % (250 ms)", med(default_runs, "sender_cpu_steady"), "snapserver", med(snap_runs, "server_cpu_percent")),
        ("  whole run", med(default_runs, "sender_cpu_pct"), "snapserver", med(snap_runs, "server_cpu_percent")),
        (f"receiver CPU % ({a.latency} ms)", med(lyre_runs, "lyred_cpu_steady"), "snapclient", med(snap_runs, "client_cpu_percent")),
        (f"sender CPU % ({a.latency} ms)", med(lyre_runs, "sender_cpu_steady"), "snapserver", med(snap_runs, "server_cpu_percent")),
        ("receiver CPU %, paired", med(paired_runs, "lyred_cpu_steady"), "snapclient", med(snap_runs, "client_cpu_percent")),
        ("sender CPU %, paired", med(paired_runs, "sender_cpu_steady"), "snapserver", med(snap_runs, "server_cpu_percent")),
        ("receiver peak RSS KiB", med(lyre_runs, "lyred_rss_kib"), "snapclient", med(snap_runs, "client_rss_kib")),
        ("  paired", med(paired_runs, "lyred_rss_kib"), "snapclient", med(snap_runs, "client_rss_kib")),
        ("receiver private dirty KiB", med(lyre_runs, "lyred_dirty_kib"), "snapclient", med(snap_runs, "client_dirty_kib")),
        ("  paired", med(paired_runs, "lyred_dirty_kib"), "snapclient", med(snap_runs, "client_dirty_kib")),
        ("sender peak RSS KiB (WAV)", med(lyre_runs, "sender_rss_kib"), "snapserver", med(snap_runs, "server_rss_kib")),
        ("sender private dirty KiB", med(lyre_runs, "sender_dirty_kib"), "snapserver", med(snap_runs, "server_dirty_kib")),
    ]
    print(f"\nside by side with {peer}, same file, Opus at {a.bitrate} kbit/s both (Snapcast: 1000 ms buffer, file player "
          f"writing 50 ms blocks); CPU over the same {window(a.seconds):g} s steady window; \"paired\": a paired sender "
          f"at 250 ms, TLS and SRTP (Snapcast has no encryption); private dirty sampled at the window's end, while playing; "
          f"lyre and lyred as shipped (Tools/lib/shipped.sh: static Swift runtime, stripped)")
    print(f"  {'':24} {'lyre':>10} {'peer':>10}  ratio lyre/peer")
    for name, ours, who, theirs in rows:
        ratio = ours / theirs if theirs else float("nan")
        print(f"  {name:24} {ours:10.2f} {theirs:10.2f}  {ratio:6.2f}  ({who})")


if __name__ == "__main__":
    main()
