#!/usr/bin/env python3
"""Tools/bench peer: Snapcast (Debian snapserver + snapclient 0.26) streaming Opus over loopback.

Runs inside Tools/netns (the caller wraps it). snapserver reads a named pipe that this script feeds in real
time from IN.wav (48 kHz stereo s16, looped); snapclient connects to 127.0.0.1 (no mDNS browsing) and plays
through its "file" player into a raw PCM file, which is then checked for non-silent audio. CPU time
(utime+stime) is sampled at both ends of an S-second window that starts --warmup seconds after the client
has its codec header; peak RSS is VmHWM. Prints one JSON line.

  snapcast.py --input IN.wav --seconds S [--bitrate-kbps 128] [--workdir DIR] [--warmup 1.0] [--port 1704]
"""
import argparse
import array
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import wave

from benchlib import cpu_seconds, peak_rss_kib, private_dirty_kib

PEER = "snapcast 0.26.0 (Debian)"
RATE, CHANNELS, WIDTH = 48000, 2, 2
FRAME_BYTES = CHANNELS * WIDTH
CHUNK_MS = 20


def read_pcm(path):
    with wave.open(path, "rb") as w:
        if (w.getframerate(), w.getnchannels(), w.getsampwidth()) != (RATE, CHANNELS, WIDTH):
            sys.exit(f"snapcast: {path} must be {RATE} Hz, {CHANNELS} channels, 16-bit")
        return w.readframes(w.getnframes())


def feed(fifo, pcm, stop, lead=0.1):
    """Writes pcm (looped) into the pipe in CHUNK_MS pieces at the real-time rate, `lead` seconds ahead."""
    step = RATE * CHUNK_MS // 1000 * FRAME_BYTES
    try:
        with open(fifo, "wb", buffering=0) as out:  # blocks until snapserver opens the pipe
            start, sent, pos = time.monotonic(), 0, 0
            while not stop.is_set():
                if pos >= len(pcm):
                    pos = 0
                piece = pcm[pos:pos + step]
                out.write(piece)
                pos += len(piece)
                sent += len(piece)
                ahead = start + sent / (RATE * FRAME_BYTES) - lead - time.monotonic()
                if ahead > 0:
                    stop.wait(ahead)
    except (BrokenPipeError, OSError):
        pass


def wait_for_line(path, needle, proc, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with open(path, errors="replace") as f:
                if needle in f.read():
                    return True
        except FileNotFoundError:
            pass
        time.sleep(0.02)
    return False


def stop_process(proc):
    if proc is not None and proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def audio_ok(path, seconds, skip):
    """True if the played PCM covers most of the window and ≥90% of its 20 ms blocks are clearly non-silent."""
    try:
        with open(path, "rb") as f:
            f.seek(int(skip * RATE) * FRAME_BYTES)
            data = f.read()
    except OSError:
        return False
    samples = array.array("h")
    samples.frombytes(data[:len(data) // 2 * 2])
    if sys.byteorder != "little":
        samples.byteswap()
    block = RATE * CHANNELS * CHUNK_MS // 1000
    blocks = [samples[i:i + block] for i in range(0, len(samples) - block + 1, block)]
    if len(blocks) < 0.8 * seconds * 1000 / CHUNK_MS:
        return False
    loud = sum(1 for b in blocks if math.sqrt(sum(s * s for s in b) / len(b)) > 100)
    return loud >= 0.9 * len(blocks)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--input", required=True)
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--bitrate-kbps", type=int, default=128)
    ap.add_argument("--workdir")
    ap.add_argument("--warmup", type=float, default=1.0, help="seconds between connect and the window")
    ap.add_argument("--port", type=int, default=1704)
    args = ap.parse_args()
    if os.environ.get("LYRE_NETNS") != "1":
        sys.exit("snapcast: run inside Tools/netns (it makes the isolated loopback network)")

    pcm = read_pcm(args.input)
    own_dir = args.workdir is None
    work = tempfile.mkdtemp(prefix="bench-snapcast-") if own_dir else os.path.abspath(args.workdir)
    os.makedirs(work, exist_ok=True)
    fifo, out_pcm = os.path.join(work, "snapfifo"), os.path.join(work, "client-out.pcm")
    server_log, client_log = os.path.join(work, "server.log"), os.path.join(work, "client.log")
    for p in (fifo, out_pcm, os.path.join(work, "server.json")):
        if os.path.lexists(p):
            os.remove(p)
    os.mkfifo(fifo)
    conf = os.path.join(work, "snapserver.conf")
    with open(conf, "w") as f:
        f.write(f"""[server]
datadir = {work}
[http]
enabled = true
bind_to_address = 127.0.0.1
port = {args.port + 76}
[tcp]
enabled = true
bind_to_address = 127.0.0.1
port = {args.port + 1}
[stream]
bind_to_address = 127.0.0.1
port = {args.port}
source = pipe://{fifo}?name=bench&mode=read
codec = opus:BITRATE:{args.bitrate_kbps * 1000},COMPLEXITY:10
sampleformat = {RATE}:16:{CHANNELS}
chunk_ms = {CHUNK_MS}
buffer = 1000
[logging]
sink = stderr
filter = *:info
""")

    # snapserver 0.26 always publishes _snapcast._tcp through avahi (no option to turn it off); pointing its
    # D-Bus client at a socket that does not exist makes that fail harmlessly, so nothing is announced.
    server_env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS="unix:path=/nonexistent/lyre-bench-no-dbus")
    stop = threading.Event()
    server = client = None
    result = {"peer": PEER, "seconds": args.seconds}
    try:
        with open(server_log, "w") as log:
            server = subprocess.Popen(["snapserver", "-c", conf], stdin=subprocess.DEVNULL,
                                      stdout=log, stderr=log, env=server_env)
        writer = threading.Thread(target=feed, args=(fifo, pcm, stop), daemon=True)
        writer.start()
        if not wait_for_line(server_log, "Creating stream acceptor", server, 10):
            sys.exit(f"snapcast: snapserver did not start; see {server_log}")
        with open(client_log, "w") as log:
            client = subprocess.Popen(
                ["snapclient", "-h", "127.0.0.1", "-p", str(args.port), "--hostID", "lyre-bench",
                 "--player", f"file:filename={out_pcm}", "--mixer", "software",
                 "--logsink", "stderr", "--logfilter", "*:info"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        if not wait_for_line(client_log, "Codec: opus", client, 10):
            sys.exit(f"snapcast: snapclient got no opus stream; see {client_log} and {server_log}")
        time.sleep(args.warmup)
        t0 = time.monotonic()
        s0, c0 = cpu_seconds(server.pid), cpu_seconds(client.pid)
        time.sleep(args.seconds)
        s1, c1 = cpu_seconds(server.pid), cpu_seconds(client.pid)
        wall = time.monotonic() - t0
        dirty = private_dirty_kib(server.pid), private_dirty_kib(client.pid)
        result.update(server_cpu_percent=round((s1 - s0) / wall * 100, 2),
                      client_cpu_percent=round((c1 - c0) / wall * 100, 2),
                      server_rss_kib=peak_rss_kib(server.pid), client_rss_kib=peak_rss_kib(client.pid),
                      server_dirty_kib=dirty[0], client_dirty_kib=dirty[1])
        alive = server.poll() is None and client.poll() is None
    finally:
        stop.set()
        stop_process(client)
        stop_process(server)
    # The file player starts writing (silence) when the codec header arrives, then plays 1000 ms ("buffer")
    # behind the server; skip 1.5 s of it and expect the rest of warm-up + window to be the tone.
    result["audio_ok"] = alive and audio_ok(out_pcm, args.warmup + args.seconds - 1.5, 1.5)
    if own_dir:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
