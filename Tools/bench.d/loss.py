#!/usr/bin/env python3
"""Tools/bench loss: what packet loss costs, with Lyre's recovery (resend and FEC) and without it.

Runs inside Tools/netns. lyred listens on 127.0.0.2 with a WAV sink; nftables in the namespace drops RTP and
FEC packets (first sends and resends alike) on their way to it: random loss of 0, 1, 2, 5, 10 and 20 % and
bursts (5 consecutive packets of every 50: 100 ms a second at 20 ms frames, 50 ms at 10 ms frames), at 20 ms, 250 ms and 1 s of
latency. Each case plays the same full-band sweep twice: `lyre play` as it is (resend, FEC under 100 ms),
and `lyre play --no-resend --fec off` (what version 1 did: conceal every loss). For each:

- concealed: frames of concealment (in 48 kHz samples / the frame length) per minute, and per 1000 packets;
- recovered: packets resent in time plus packets rebuilt from FEC;
- lost: the packets the network took on their first sending, % of the stream's (a random draw of a few
  hundred packets: 10 % asked for is 8 to 12 % had); dropped counts resends dropped too;
- overhead: UDP bytes sent to the receiver beyond the loss-free run without recovery, % (resends, FEC,
  reports); resends are lost at the same rate, so its floor is lost / (1 - loss);
- SNR: the output against the loss-free output at the same latency (dB; 200 is the meter's ceiling: the
  same sample for sample).

Goals (streaming.md §4): from 250 ms up, nothing concealed up to 10 % loss with overhead <= loss + 2 % (the
loss the run had); at 20 ms, <= 1 concealed frame per 1000 at 1 % loss. Beside it, roc-toolkit's published
FEC configuration, Reed-Solomon with 18 source and 10 repair packets per block at 200 ms (55.6 % overhead; any 10 losses of a
28-packet block repaired), as a reference point, not a run: roc is not in Debian here.

Usage: Tools/bench loss [--seconds S] [--latencies 20,250,1000] [--losses 0,1,2,5,10,20,bursts]
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile

from benchlib import wait_for

BIN = os.environ.get("LYRE_BIN", ".build/release")
HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.dirname(HERE)
AUDIO = os.path.join(TOOLS, "peers", "audio.py")
RECEIVER = "127.0.0.2"

if os.environ.get("LYRE_NETNS") != "1":
    sys.exit("bench: run through Tools/bench, which makes the isolated test network")


def nft(*commands):
    for command in commands:
        done = subprocess.run(["nft"] + command, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"bench: nft {' '.join(command)}: {done.stderr.strip()}")


def impair(loss):
    """A fresh table: count every UDP byte to the receiver, then drop RTP/FEC packets (second byte 0x60: PT 96,
    0x61: PT 97) as `loss` says."""
    subprocess.run(["nft", "delete", "table", "inet", "lyrebench"], capture_output=True)
    nft(["add", "table", "inet", "lyrebench"],
        ["add", "chain", "inet", "lyrebench", "input", "{ type filter hook input priority 0 ; }"],
        ["add", "rule", "inet", "lyrebench", "input", "ip", "daddr", RECEIVER, "meta", "l4proto", "udp", "counter"])
    select = None
    if loss == "bursts":
        select = ["numgen", "inc", "mod", "50", "lt", "5"]
    elif float(loss) > 0:
        select = ["numgen", "random", "mod", "1000", "lt", str(int(float(loss) * 10))]
    if select:
        nft(["add", "rule", "inet", "lyrebench", "input", "ip", "daddr", RECEIVER, "udp", "dport", "1024-65535",
             "@th,72,8", "{", "0x60,", "0x61", "}"] + select + ["counter", "drop"])


def counters():
    listing = subprocess.run(["nft", "list", "table", "inet", "lyrebench"], capture_output=True, text=True).stdout
    found = [(int(p), int(b)) for p, b in re.findall(r"counter packets (\d+) bytes (\d+)", listing)]
    total = found[0][1] if found else 0
    dropped = found[1][0] if len(found) > 1 else 0
    return total, dropped


def run(work, sweep, latency, loss, recovery, tag):
    impair(loss)
    log = os.path.join(work, f"lyred-{tag}.log")
    wav = os.path.join(work, f"{tag}.wav")
    lyred = subprocess.Popen(
        [os.path.join(BIN, "lyred"), "--access", "open", "--name", "Bench", "--port", "7790", "--listen", RECEIVER, "--log-level", "info",
         "--state-dir", os.path.join(work, "state"), "--output", "wav:" + wav],
        stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    try:
        if not wait_for(log, "advertised as"):
            sys.exit(f"bench: lyred did not start; see {log}")
        extra = [] if recovery else ["--no-resend", "--fec", "off"]
        play = subprocess.run([os.path.join(BIN, "lyre"), "play", sweep, "--host", f"{RECEIVER}:7790", "--latency", str(latency),
                               "--group-socket", "off"] + extra, capture_output=True, text=True)
        if play.returncode != 0:
            sys.exit(f"bench: lyre play failed: {play.stderr.strip()}")
    finally:
        lyred.send_signal(signal.SIGTERM)
        lyred.wait(10)
    total, dropped = counters()
    text = open(log, errors="replace").read()
    line = [l for l in text.splitlines() if "stats: received=" in l]
    if not line:
        sys.exit(f"bench: no session stats in {log}")
    stats = {k: int(v) for k, v in re.findall(r"(\w[\w-]*)=(-?\d+)(?=\s|$)", line[-1].split("stats: ", 1)[1])}
    return {"bytes": total, "dropped": dropped, "stats": stats, "wav": wav}


def compare(reference, output):
    done = subprocess.run([sys.executable, AUDIO, "compare", reference, output], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"bench: audio.py compare: {done.stderr.strip()}")
    return json.loads(done.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--latencies", default="20,250,1000")
    ap.add_argument("--losses", default="0,1,2,5,10,20,bursts")
    a = ap.parse_args()
    latencies = [int(x) for x in a.latencies.split(",")]
    losses = a.losses.split(",")
    work = tempfile.mkdtemp(prefix="lyre-bench-loss-")
    sweep = os.path.join(work, "sweep.wav")
    subprocess.run([sys.executable, AUDIO, "sweep", sweep, "--seconds", str(a.seconds)], check=True)
    print(f"lyre play -> lyred over loopback, {a.seconds:g} s full-band sweep, lyre play's default frames; loss made by nftables")
    print(f"{'latency':>7} {'loss':>6} {'sender':>12} {'dropped':>7} {'lost':>6} {'concealed/min':>13} {'per 1000':>8} "
          f"{'recovered':>9} {'overhead':>8} {'SNR dB':>7} {'worst':>6}")
    for latency in latencies:
        baseline = run(work, sweep, latency, "0", False, f"base-{latency}")
        # The frame lyre play chose, from what the receiver got without loss: one packet a frame.
        frame_ms = 1000 * a.seconds / max(1, baseline["stats"].get("received", 0))
        print(f"at {latency} ms: {frame_ms:.1f} ms frames ({baseline['stats'].get('received', 0)} packets in {a.seconds:g} s)")
        for loss in losses:
            for recovery in (True, False):
                if loss == "0" and not recovery:
                    result = baseline
                else:
                    result = run(work, sweep, latency, loss, recovery, f"{latency}-{loss}-{int(recovery)}")
                s = result["stats"]
                frames = s.get("concealed", 0) / (48 * frame_ms)
                packets = max(1, s.get("received", 0) + s.get("lost", 0))
                # First sendings the network took: each came back resent or rebuilt, or was lost for good.
                first = 100 * (s.get("recovered", 0) + s.get("fec", 0) + s.get("lost", 0)) / max(1, baseline["stats"].get("received", 0))
                overhead = 100 * (result["bytes"] / baseline["bytes"] - 1) if baseline["bytes"] else float("nan")
                c = compare(baseline["wav"], result["wav"])
                label = "lyre" if recovery else "no recovery"
                print(f"{latency:>5}ms {loss + ('%' if loss != 'bursts' else ''):>6} {label:>12} {result['dropped']:>7} {first:>5.1f}% "
                      f"{frames * 60 / a.seconds:>13.1f} {1000 * frames / packets:>8.2f} "
                      f"{s.get('recovered', 0) + s.get('fec', 0):>9} {overhead:>7.1f}% {c['snr_db']:>7.1f} {c['worst_window_snr_db']:>6.1f}",
                      flush=True)
    print("\nroc-toolkit (published configuration, not run here): Reed-Solomon 18+10 at 200 ms, 55.6 % overhead, "
          "any 10 of 28 packets per block lost are repaired")


if __name__ == "__main__":
    main()
