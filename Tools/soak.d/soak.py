#!/usr/bin/env python3
"""Tools/soak: hours of play (issue 27), inside the isolated test network (Tools/netns).

Three rooms, each a lyred on a host of its own (a network namespace on a veth pair and a bridge), found over
mDNS; one `lyre play` with a queue of real files (FLAC, MP3, Ogg Opus, M4A and WAV, each 3 s with its own
tags and cover.jpg, so the metadata and the artwork change every 3 s) long enough for the run. Meanwhile:
- 2 % of the media packets to Room2 are dropped (nftables in its namespace);
- every 30 s Room3 is removed from the playback (`lyre group remove`) and added again 5 s later;
- every 10 s a remote command reaches the sender through Room1 (pause, play, next, volume down, volume up);
- every --sample-seconds (60) every process's RSS, open descriptors and threads are read from /proc.
At the end each room's own counts (its `stats:` lines: concealed samples, packets lost and late) say what was
heard that was not the sender's audio: with every loss recovered in time, nothing.

Prints a table and one JSON line: per process the RSS slope (MB a day, least squares, from a tenth of the run
on: before that is start-up), RSS, descriptors and threads first and last; per room its counts;
and the crashes. Exit status 1 when a process crashed (exited before the end, or not 0 at it), a room
concealed anything, or a process's descriptors or threads grew by more than 4 after start-up; the
RSS slope is printed and judged by the reader (over a few minutes start-up growth dominates it; the issue's
goal is < 1 MB a day over hours).

Usage: Tools/soak [--minutes N] [--sample-seconds S] [--json FILE]
"""
import argparse
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench.d"))
from benchlib import host, wait_for  # noqa: E402

BIN = os.environ.get("LYRE_BIN", ".build/debug")
TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AUDIO = os.path.join(TOOLS, "peers", "audio.py")
ROOMS = ["Room1", "Room2", "Room3"]
FORMATS = [("flac", []), ("mp3", ["-b:a", "192k"]), ("opus", ["-c:a", "libopus", "-b:a", "128k"]), ("m4a", ["-c:a", "aac", "-b:a", "160k"]), ("wav", [])]
COMMANDS = [["pause"], ["play"], ["next"], ["volume", "down"], ["volume", "up"]]

if os.environ.get("LYRE_NETNS") != "1":
    sys.exit("soak: run through Tools/soak, which makes the isolated test network")


def run(arguments, timeout=60):
    return subprocess.run(arguments, capture_output=True, text=True, timeout=timeout)


def make_queue(work, seconds):
    """Five 3 s files of music-like material, each format once, with their own tags and cover.jpg."""
    source = os.path.join(work, "music.wav")
    made = run([sys.executable, AUDIO, "sweep", source, "--rate", "44100", "--seconds", "3", "--signal", "music"])
    if made.returncode != 0:
        sys.exit(f"soak: audio.py sweep: {made.stderr.strip()}")
    files = []
    for index, (extension, codec) in enumerate(FORMATS):
        folder = os.path.join(work, f"track{index}")
        os.makedirs(folder)
        colour = ["red", "green", "blue", "yellow", "purple"][index]
        steps = [["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", f"color=c={colour}:s=64x64", "-frames:v", "1", os.path.join(folder, "cover.jpg")],
                 ["ffmpeg", "-v", "error", "-y", "-i", source, *codec, "-metadata", f"title=Track {index + 1}",
                  "-metadata", f"artist=Soak {extension}", "-metadata", "album=Hours", os.path.join(folder, f"track.{extension}")]]
        for step in steps:
            done = run(step)
            if done.returncode != 0:
                sys.exit(f"soak: {' '.join(step[:3])}: {done.stderr.strip()}")
        files.append(os.path.join(folder, f"track.{extension}"))
    return files * (int(seconds / 15) + 4)


def sample(pid):
    """RSS (KiB), open descriptors and threads of `pid`, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            status = dict(line.split(":", 1) for line in f if ":" in line)
        return {"rss_kib": int(status["VmRSS"].split()[0]), "fds": len(os.listdir(f"/proc/{pid}/fd")), "threads": int(status["Threads"])}
    except (OSError, KeyError, ValueError):
        return None


def slope_mb_per_day(points):
    """Least-squares slope of (seconds, KiB) as MB a day; None with fewer than two points."""
    if len(points) < 2:
        return None
    n = len(points)
    mx = sum(t for t, _ in points) / n
    my = sum(v for _, v in points) / n
    sxx = sum((t - mx) ** 2 for t, _ in points)
    if sxx == 0:
        return None
    sxy = sum((t - mx) * (v - my) for t, v in points)
    return sxy / sxx * 86400 / 1024


def room_counts(log):
    """Each session's `stats:` line in a lyred log, summed: concealed, lost, late, asked again, recovered."""
    totals = {"sessions": 0, "concealed": 0, "lost": 0, "late": 0, "nack": 0, "recovered": 0}
    for line in open(log, errors="replace"):
        if " stats: received=" not in line:
            continue
        totals["sessions"] += 1
        fields = dict(pair.split("=", 1) for pair in line.split(" stats: ", 1)[1].split() if "=" in pair)
        for key in ("concealed", "lost", "late", "nack", "recovered"):
            totals[key] += int(fields.get(key, "0") or 0)
    return totals


def main():
    parser = argparse.ArgumentParser(prog="Tools/soak", description="Hours of play: leaks, descriptors, threads, gaps and crashes.")
    parser.add_argument("--minutes", type=float, default=120, help="how long to play (default: 120)")
    parser.add_argument("--sample-seconds", type=float, default=60, help="how often to sample each process (default: 60)")
    parser.add_argument("--json", help="also write the JSON result here")
    a = parser.parse_args()
    for tool in ("ffmpeg", "nft", "ip"):
        if shutil.which(tool) is None:
            sys.exit(f"soak: {tool} is missing; Tools/soak installs it")
    work = tempfile.mkdtemp(prefix="lyre-soak-")
    seconds = a.minutes * 60
    queue = make_queue(work, seconds)
    processes = {}
    logs = {}
    for index, room in enumerate(ROOMS):
        name, _ = host(20 + index)
        logs[room] = os.path.join(work, f"{room}.log")
        processes[room] = subprocess.Popen(
            ["ip", "netns", "exec", name, os.path.join(BIN, "lyred"), "--mdns", "embedded", "--interface", "eth0", "--access", "open",
             "--name", room, "--port", "7730", "--state-dir", os.path.join(work, room + ".state"), "--output", "null",
             "--control-socket", os.path.join(work, room + ".sock"), "--mpris", "off", "--log-level", "info"],
            stdout=subprocess.DEVNULL, stderr=open(logs[room], "w"))
    for room in ROOMS:
        if not wait_for(logs[room], "advertised as", timeout=20):
            sys.exit(f"soak: {room}'s lyred did not start: {open(logs[room]).read()[-2000:]}")
    # 2 % of the UDP media packets into Room2's host dropped (RTSP, on TCP, is left alone).
    loss = run(["ip", "netns", "exec", "h21", "sh", "-c",
                "nft add table inet soak && nft add chain inet soak input '{ type filter hook input priority 0 ; }' && "
                "nft add rule inet soak input udp dport 1024-65535 numgen random mod 100 lt 2 counter drop"])
    if loss.returncode != 0:
        sys.exit(f"soak: nft: {loss.stderr.strip()}")
    group = os.path.join(work, "group.sock")
    logs["lyre play"] = os.path.join(work, "play.log")
    play = subprocess.Popen(
        [os.path.join(BIN, "lyre"), "play", *queue, *sum((["--to", room] for room in ROOMS), []), "--mdns", "embedded",
         "--interface", "lan0", "--group-socket", group, "--log-level", "info"],
        stdout=subprocess.DEVNULL, stderr=open(logs["lyre play"], "w"))
    processes["lyre play"] = play
    if not all(wait_for(logs[room], "now playing:", timeout=30) for room in ROOMS):
        sys.exit(f"soak: the rooms did not start playing: {open(logs['lyre play']).read()[-2000:]}")

    samples = {name: [] for name in processes}
    crashes = []
    actions = {"commands": 0, "commands_failed": 0, "removed": 0, "added": 0, "group_failed": 0}
    start = time.monotonic()
    next_sample = start
    tick = 0
    print(f"soak: {a.minutes:g} min, three rooms on hosts of their own, a queue of {len(queue)} files; work in {work}", flush=True)
    while time.monotonic() - start < seconds:
        now = time.monotonic()
        for name, process in processes.items():
            if process.poll() is not None and name not in [c["process"] for c in crashes]:
                crashes.append({"process": name, "status": process.returncode, "at_s": round(now - start, 1)})
        if crashes:
            break
        if now >= next_sample:
            for name, process in processes.items():
                value = sample(process.pid)
                if value:
                    samples[name].append({"t": round(now - start, 1), **value})
            next_sample += a.sample_seconds
        if tick > 0 and tick % 10 == 0:
            command = COMMANDS[(tick // 10 - 1) % len(COMMANDS)]
            done = run([os.path.join(BIN, "lyre"), "remote", "--socket", os.path.join(work, "Room1.sock"), *command], timeout=20)
            actions["commands"] += 1
            actions["commands_failed"] += done.returncode != 0
        if tick > 0 and tick % 30 == 0:
            done = run([os.path.join(BIN, "lyre"), "group", "remove", "Room3", "--socket", group], timeout=20)
            actions["removed" if done.returncode == 0 else "group_failed"] += 1
        if tick > 5 and tick % 30 == 5:
            done = run([os.path.join(BIN, "lyre"), "group", "add", "Room3", "--socket", group], timeout=30)
            actions["added" if done.returncode == 0 else "group_failed"] += 1
        tick += 1
        time.sleep(max(0, start + tick - time.monotonic()))

    # The end: the sender stopped (Ctrl-C), then the rooms, each of which must exit 0.
    if play.poll() is None:
        play.send_signal(signal.SIGINT)
    for name, process in processes.items():
        if name != "lyre play" and process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for name, process in processes.items():
        try:
            status = process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            status = "hung"
        if status != 0 and name not in [c["process"] for c in crashes]:
            crashes.append({"process": name, "status": status, "at_s": "end"})
    dropped = run(["ip", "netns", "exec", "h21", "nft", "list", "table", "inet", "soak"]).stdout
    dropped = sum(int(m) for m in re.findall(r"counter packets (\d+)", dropped))

    result = {"minutes": a.minutes, "files_in_queue": len(queue), "dropped_to_room2": dropped, "actions": actions, "crashes": crashes,
              "processes": {}, "rooms": {room: room_counts(logs[room]) for room in ROOMS}}
    failures = [f"{c['process']} exited {c['status']} at {c['at_s']} s" for c in crashes]
    # Start-up (caches filling, the first sessions) is left out: the slope is from a tenth of the run on.
    warm = max(a.sample_seconds, seconds / 10)
    for name, points in samples.items():
        later = [p for p in points if p["t"] >= warm] if len([p for p in points if p["t"] >= warm]) >= 2 else points[1:]
        entry = {"samples": len(points), "rss_mb_per_day": None, "rss_kib_series": [[p["t"], p["rss_kib"]] for p in points]}
        if points:
            entry.update({key: [points[0][key], points[-1][key]] for key in ("rss_kib", "fds", "threads")})
            slope = slope_mb_per_day([(p["t"], p["rss_kib"]) for p in later])
            entry["rss_mb_per_day"] = None if slope is None else round(slope, 2)
            for key in ("fds", "threads"):
                if later and max(p[key] for p in later) - later[0][key] > 4:
                    failures.append(f"{name}'s {key} grew from {later[0][key]} to {max(p[key] for p in later)}")
        result["processes"][name] = entry
    for room, counts in result["rooms"].items():
        if counts["concealed"] > 0:
            failures.append(f"{room} concealed {counts['concealed']} samples ({counts['lost']} packets lost, {counts['late']} late)")
    if actions["commands_failed"] or actions["group_failed"]:
        failures.append(f"requests failed: {actions}")
    result["failures"] = failures

    print(f"\n{'process':<10} {'samples':>7} {'RSS MB first':>12} {'last':>7} {'MB/day':>8} {'fds':>9} {'threads':>9}")
    for name, entry in result["processes"].items():
        if "rss_kib" not in entry:
            print(f"{name:<10} {0:>7}")
            continue
        slope = "-" if entry["rss_mb_per_day"] is None else f"{entry['rss_mb_per_day']:.2f}"
        print(f"{name:<10} {entry['samples']:>7} {entry['rss_kib'][0] / 1024:>12.1f} {entry['rss_kib'][1] / 1024:>7.1f} {slope:>8} "
              f"{entry['fds'][0]:>4}→{entry['fds'][1]:<4} {entry['threads'][0]:>4}→{entry['threads'][1]:<4}")
    for room, counts in result["rooms"].items():
        print(f"{room}: {counts}")
    print(f"requests: {actions}; media packets dropped to Room2: {dropped}")
    print("crashes: none" if not crashes else f"crashes: {crashes}")
    print("failures: none" if not failures else "failures:\n  " + "\n  ".join(failures))
    line = json.dumps(result)
    print(line)
    if a.json:
        with open(a.json, "w") as f:
            f.write(line + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
