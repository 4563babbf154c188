#!/usr/bin/env python3
"""Tools/bench security: what pairing and encryption cost (Protocol/pairing.md).

Runs inside Tools/netns. For each run it does four things:
- It pairs a fresh sender with lyred: `lyre pair --host`, the PIN typed as soon as `lyre remote pairing`
  shows it. The pairing time is the whole of `lyre pair`, that wait included.
- It plays the same music-like input, at the default latency, from the paired sender. That session runs over
  TLS 1.3 with SRTP and authenticated timing.
- It plays the same input from an unpaired sender, in plain RTSP and RTP. lyred runs --access open so that both
  can play.
- It measures, for both sessions, the CPU of lyred and of `lyre play` over the session, and the time from
  starting `lyre play` to the first sample out of lyred's WAV sink.

It prints medians over --runs, and the ratios paired/plain.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

from streaming import TOOLS, run_lyre, run_paired


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--bitrate", type=int, default=192, help="Opus kbit/s")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="lyre-bench-security-")
    music = os.path.join(work, "music.wav")
    subprocess.run([sys.executable, os.path.join(TOOLS, "peers", "audio.py"), "sweep", music, "--signal", "music", "--seconds", str(a.seconds)],
                   check=True)
    out = "wav:" + os.path.join(work, "out.wav")
    pairings, paired, plain = [], [], []
    for i in range(a.runs):
        print(f"run {i + 1}/{a.runs}", file=sys.stderr)
        took, run = run_paired(work, music, f"paired{i}", a.seconds, a.bitrate)
        pairings.append(took)
        paired.append(run)
        plain.append(run_lyre(work, music, 250, out, f"plain{i}", a.seconds, a.bitrate,
                              sender_state=tempfile.mkdtemp(prefix=f"plain{i}-", dir=work)))

    def med(runs, key):
        return statistics.median(r[key] for r in runs)

    print(f"\npairing and encryption, {a.seconds:g} s of music-like input at 250 ms, median of {a.runs} runs")
    print(f"  lyre pair, PIN typed when shown       {statistics.median(pairings) * 1000:8.1f} ms")
    print(f"  {'':34} {'paired':>9} {'plain':>9} {'ratio':>7}")
    for label, key, target in [("receiver CPU %", "lyred_cpu_pct", "<= 1.10"), ("sender CPU %", "sender_cpu_pct", "<= 1.10"),
                               ("first sample out, ms", "first_sample_ms", "+<= 20 ms"),
                               ("receiver peak RSS KiB", "lyred_rss_kib", ""), ("sender peak RSS KiB", "sender_rss_kib", "")]:
        p, q = med(paired, key), med(plain, key)
        print(f"  {label:34} {p:9.2f} {q:9.2f} {p / q if q else float('nan'):7.2f}   {target}")
    print(f"  first sample: paired - plain = {med(paired, 'first_sample_ms') - med(plain, 'first_sample_ms'):+.1f} ms (target <= +20)")
    print(f"\nreproduce: Tools/bench security --runs {a.runs} --seconds {a.seconds:g} --bitrate {a.bitrate}")


if __name__ == "__main__":
    main()
