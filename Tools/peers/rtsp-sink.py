#!/usr/bin/env python3
"""A minimal RTSP receiver that hands a sender's RTP to ffmpeg, to check that what a Lyre sender sends is
standard: ffmpeg decodes it from the SDP the sender announced, and nothing else.

It answers OPTIONS, ANNOUNCE (keeping the SDP), SETUP (server_port = the port ffmpeg listens on), RECORD,
FLUSH, GET/SET_PARAMETER and TEARDOWN; anything else (PAIR) is 501. On SETUP it writes the announced SDP with that port on its m= line and
starts `ffmpeg -i SDP OUT.wav`. After TEARDOWN (or the connection closing) it stops ffmpeg with 'q'.
No timing exchange is done, so the sender is played as a plain publisher would be.

With --commands, once the sender has said which remote commands it accepts (now-playing.md §4.1), sends it
the commands of COMMANDS below over the session's connection, as a receiver relays them (§4.2), one at a time,
and records each answer's status and `Lyre-Command-Status`. Every RECORD and FLUSH is recorded too, with its
`RTP-Info`, `Lyre-Anchor` and `Lyre-Start-At`, and the TEARDOWN; every SET_PARAMETER's Content-Type and size, in order.

With --decode, it takes the RTP itself instead of ffmpeg and decodes it with libopus (ctypes), to see where a
resume's audio begins (streaming.md §3, FLUSH): --pause sends `pause`, then `play` a second later; FLUSH is
answered with `Lyre-Stopped-At` --stopped-back MS before the sample due when it arrived (by the RECORD's
`Lyre-Anchor` and --latency), or, without --stopped-back, not at all, as a version 1 receiver does. "resume"
in the JSON line gives, in samples from the FLUSH's `RTP-Info` rtptime: `stopped_at` (what it answered),
`due` (the sample due when the FLUSH arrived), and `resumed_from`: the place in the audio before the pause that
the resumed audio from `Lyre-Start-At` on matches (100 ms of it, by cross-correlation; `match` is the
normalised peak), and `primed_db`, the level of what it decoded before `Lyre-Start-At` (it never echoes that
header, so the sender primes with silence).

Usage: rtsp-sink.py PORT OUT.wav [--media-port 5004] [--commands] [--decode [--pause] [--stopped-back MS] [--latency MS]]
Prints one JSON line at the end: the SDP it used, ffmpeg's exit status, the commands' answers, and the RECORDs and
FLUSHes ("flow": [method, RTP-Info, Lyre-Anchor, Lyre-Start-At]), and the SET_PARAMETERs ("parameters": [Content-Type,
bytes]). A RECORD that carries `Lyre-Start-At` (a resume, or a room joining a resumed playback) prints "resumed" as
it arrives.
"""
import argparse
import ctypes
import ctypes.util
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

SESSION = "1234ABCD"
# (what it checks, Session header, body): now-playing.md §4.2's answers, for a queue of one short file.
COMMANDS = [
    ("past_the_end", SESSION, "remote-command: skipForward\r\ninterval: 3600\r\n"),  # nothing after the last item: 404
    ("position_past_the_end", SESSION, "remote-command: changePlaybackPosition\r\nposition: 99999\r\n"),  # 500
    ("withdrawn", SESSION, "remote-command: nextTrack\r\n"),  # withdrawn on the last item: disabled, 403
    ("other_session", "FEEDFACE", "remote-command: pause\r\n"),  # not this session: 454
    ("no_session", None, "remote-command: pause\r\n"),  # 454
    ("malformed", SESSION, "remote-command: skipForward\r\ninterval: -1\r\n"),  # 451
    ("unknown", SESSION, "remote-command: dance\r\n"),  # 451
    ("pause", SESSION, "remote-command: pause\r\n"),  # 200
    ("play", SESSION, "remote-command: play\r\n"),  # 200
    ("wait", None, ""),  # a second of play after the resume
    ("seek_back", SESSION, "remote-command: changePlaybackPosition\r\nposition: 0.5\r\n"),  # 200: a FLUSH, a RECORD
]
# --pause: two seconds in, a pause, and a second later the resume.
PAUSE = [("wait", None, ""), ("pause", SESSION, "remote-command: pause\r\n"), ("wait", None, ""),
         ("play", SESSION, "remote-command: play\r\n")]


def signed(x):
    """An RTP time difference, modulo 2^32, as a signed number."""
    return (x + 2**31) % 2**32 - 2**31


def receive_rtp(sock, packets):
    """Appends (payload type, RTP timestamp, payload) for each RTP datagram until `sock` is closed."""
    while True:
        try:
            data = sock.recv(65536)
        except OSError:
            return
        if not data:  # shut down
            return
        if len(data) < 12 or data[0] >> 6 != 2:
            continue
        at = 12 + 4 * (data[0] & 0x0F)
        if data[0] & 0x10 and len(data) >= at + 4:
            at += 4 + 4 * struct.unpack("!H", data[at + 2:at + 4])[0]
        packets.append((data[1] & 0x7F, struct.unpack("!I", data[4:8])[0], data[at:]))


def decode(run):
    """The mono mix of a run of (RTP timestamp, Opus payload) from a fresh libopus decoder, as a numpy array that
    begins at the run's first timestamp (each packet's samples placed at its own)."""
    import numpy as np
    lib = ctypes.CDLL(ctypes.util.find_library("opus") or "libopus.so.0")
    lib.opus_decoder_create.restype = ctypes.c_void_p
    error = ctypes.c_int()
    decoder = ctypes.c_void_p(lib.opus_decoder_create(48000, 2, ctypes.byref(error)))
    pcm, base = (ctypes.c_float * (5760 * 2))(), run[0][0]
    out = np.zeros(signed(run[-1][0] - base) + 5760, dtype=np.float64)
    for ts, payload in run:
        n = lib.opus_decode_float(decoder, payload, len(payload), pcm, 5760, 0)
        if n > 0:
            samples = np.frombuffer(pcm, dtype=np.float32, count=2 * n).reshape(n, 2).mean(axis=1)
            out[signed(ts - base):signed(ts - base) + n] = samples
    lib.opus_decoder_destroy(decoder)
    return out


def resumed_from(packets, pt, flush_rtp, start_at):
    """Where, in samples from `flush_rtp`, the audio before the FLUSH holds what the resumed stream puts out from
    `start_at` on (100 ms of it, from 10 ms after `start_at`), the normalised correlation there, and the level
    (dBFS) of the resumed stream before `start_at` (its priming)."""
    import numpy as np
    before = sorted({ts: p for t, ts, p in packets if t == pt and signed(ts - flush_rtp) < 0}.items(), key=lambda kv: signed(kv[0] - flush_rtp))
    after = sorted({ts: p for t, ts, p in packets if t == pt and signed(ts - flush_rtp) >= 0}.items(), key=lambda kv: signed(kv[0] - flush_rtp))
    if not before or not after:
        return None, 0.0, None
    old, new = decode(before), decode(after)
    skip, length = 480, 4800
    at = signed(start_at - after[0][0]) + skip
    window = new[at:at + length]
    size = 1 << (len(old) + length).bit_length()
    corr = np.fft.irfft(np.fft.rfft(old, size) * np.conj(np.fft.rfft(window, size)), size)[:len(old) - length + 1]
    energy = np.concatenate(([0.0], np.cumsum(old ** 2)))
    local = np.sqrt(np.maximum(energy[length:] - energy[:-length], 1e-12))
    score = corr / (local * max(np.linalg.norm(window), 1e-12))
    k = int(np.argmax(score))
    primed = new[:at - skip]
    level = 10 * np.log10(max(float(np.mean(primed ** 2)) if len(primed) else 0.0, 1e-12))
    return signed(before[0][0] + k - skip - flush_rtp), float(score[k]), level


def start_ffmpeg(sdp_path, out):
    """ffmpeg decoding the RTP `sdp_path` describes into `out`, and an event set once it has bound its RTP and RTCP
    ports, or has ended first (then `bound` holds fewer than two). At debug level libavformat/udp.c logs "end
    receive buffer size reported is" right after bind(2), for the RTP port and then the RTCP port (rtpproto.c opens
    them in that order; strace shows bind(5004), that line, bind(5005), that line). Its log comes through a pipe,
    each line with its level, and only what `-v error` would show goes to `out`.log."""
    read, write = os.pipe()  # not stderr=PIPE: communicate() would read it too
    ffmpeg = subprocess.Popen(["ffmpeg", "-loglevel", "level+debug", "-nostats", "-y", "-protocol_whitelist", "file,udp,rtp", "-c:a", "libopus",
                               "-i", sdp_path, out], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=write)
    os.close(write)
    ready, bound = threading.Event(), []

    def copy():
        with open(read, errors="replace") as pipe, open(out + ".log", "w") as log:
            for line in pipe:  # universal newlines: a '\r'-ended line is a line too
                if "end receive buffer size reported is" in line:
                    bound.append(line)
                    if len(bound) == 2:
                        ready.set()
                # "[sdp @ 0x…] [error] text" is "[sdp @ 0x…] text" at -v error
                kept = re.match(r"((?:\[[^]]* @ [^]]*\] )*)\[(?:panic|fatal|error)\] (.*)", line, re.S)
                if kept:
                    log.write(kept.group(1) + kept.group(2))
                    log.flush()
        ready.set()

    copier = threading.Thread(target=copy)
    copier.start()
    return ffmpeg, copier, ready, bound


def read_request(conn, buf):
    while b"\r\n\r\n" not in buf:
        chunk = conn.recv(65536)
        if not chunk:
            return None, buf
        buf += chunk
    head, buf = buf.split(b"\r\n\r\n", 1)
    lines = head.decode(errors="replace").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:] if ":" in l)}
    length = int(headers.get("content-length", "0"))
    while len(buf) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return None, buf
        buf += chunk
    body, buf = buf[:length], buf[length:]
    headers[":start"] = lines[0]  # a request's line, or an answer's status line
    return (lines[0].split(" ")[0], headers, body), buf


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("out")
    ap.add_argument("--media-port", type=int, default=5004)
    ap.add_argument("--commands", action="store_true")
    ap.add_argument("--decode", action="store_true")
    ap.add_argument("--pause", action="store_true")
    ap.add_argument("--stopped-back", type=float)
    ap.add_argument("--latency", type=float, default=250)
    a = ap.parse_args()
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", a.port))
    server.listen(1)
    print("listening", flush=True)
    conn, _ = server.accept()
    buf, sdp, ffmpeg, copier, used = b"", "", None, None, ""
    writing = threading.Lock()
    answers, answered = {}, threading.Condition()
    results, flow, parameters = [], [], []
    packets, media, receiver = [], None, None
    anchor, flushed, resume = None, None, {}

    def send_commands():
        time.sleep(1)  # the queue's first item has begun, so it has a position to act on
        for i, (name, session, body) in enumerate(PAUSE if a.pause else COMMANDS):
            if name == "wait":
                time.sleep(1)
                continue
            cseq = 1000 + i
            lines = [f"SET_PARAMETER rtsp://127.0.0.1:{a.port}/ RTSP/1.0", f"CSeq: {cseq}", "Content-Type: text/parameters",
                     f"Content-Length: {len(body)}"] + ([f"Session: {session}"] if session else [])
            with writing:
                conn.sendall(("\r\n".join(lines) + "\r\n\r\n" + body).encode())
            with answered:
                answered.wait_for(lambda: cseq in answers, timeout=5)
                status, command_status = answers.get(cseq, (None, None))
            results.append([name, status, command_status])

    commander = None
    while True:
        request, buf = read_request(conn, buf)
        if request is None:
            break
        method, headers, body = request
        if method == "RTSP/1.0":  # the sender's answer to a command
            with answered:
                answers[int(headers.get("cseq", "0"))] = (int(headers[":start"].split(" ")[1]), headers.get("lyre-command-status"))
                answered.notify_all()
            continue
        if method == "SET_PARAMETER":
            parameters.append([headers.get("content-type"), len(body)])
        if method in ("RECORD", "FLUSH", "TEARDOWN"):
            flow.append([method, headers.get("rtp-info"), headers.get("lyre-anchor"), headers.get("lyre-start-at")])
            if method == "RECORD" and headers.get("lyre-start-at"):
                print("resumed", flush=True)
        if (a.commands or a.pause) and commander is None and b"remote-commands:" in body:
            commander = threading.Thread(target=send_commands)
            commander.start()
        extra = []
        if method == "ANNOUNCE":
            sdp = body.decode()
        elif method == "SETUP" and a.decode:
            used = sdp
            media = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            media.bind(("127.0.0.1", a.media_port))
            receiver = threading.Thread(target=receive_rtp, args=(media, packets))
            receiver.start()
            client = re.search(r"client_port=(\d+)", headers.get("transport", ""))
            cp = client.group(1) if client else "0"
            extra = [("Transport", f"RTP/AVP/UDP;unicast;client_port={cp}-{int(cp) + 1};server_port={a.media_port}-{a.media_port + 1}"),
                     ("Session", SESSION)]
        elif method == "RECORD":
            found = re.search(r"rtptime=(\d+);clock=(\d+)", headers.get("lyre-anchor", ""))
            anchor = (int(found.group(1)), int(found.group(2))) if found else anchor
            if flushed is not None and "start_at" not in resume:
                resume["start_at"] = int(headers.get("lyre-start-at", (anchor[0] + 960 + 312) % 2**32))
        elif method == "FLUSH" and a.decode and anchor and flushed is None:
            flushed = int(re.search(r"rtptime=(\d+)", headers.get("rtp-info", "")).group(1))
            due = anchor[0] + (time.clock_gettime_ns(time.CLOCK_MONOTONIC) - anchor[1] - a.latency * 1e6) * 48000 / 1e9
            resume["due"] = due - flushed
            if a.stopped_back is not None:
                stopped = int(due - a.stopped_back * 48) % 2**32
                resume["stopped_at"] = signed(stopped - flushed)
                extra = [("Lyre-Stopped-At", str(stopped))]
        elif method == "SETUP":
            used = re.sub(r"(?m)^m=audio \d+", f"m=audio {a.media_port}", sdp)
            used = re.sub(r"(?m)^c=IN IP4 .*$", "c=IN IP4 127.0.0.1", used)
            path = a.out + ".sdp"
            with open(path, "w") as f:
                f.write(used)
            # SETUP is answered once ffmpeg listens, so the sender's first packets are not sent to a closed port.
            ffmpeg, copier, ready, bound = start_ffmpeg(path, a.out)
            if not ready.wait(10) or len(bound) < 2:
                print(f"rtsp-sink: ffmpeg bound {len(bound)} of its 2 UDP ports (it ended, or took over 10 s); answering SETUP anyway",
                      file=sys.stderr, flush=True)
            client = re.search(r"client_port=(\d+)", headers.get("transport", ""))
            cp = client.group(1) if client else "0"
            extra = [("Transport", f"RTP/AVP/UDP;unicast;client_port={cp}-{int(cp) + 1};server_port={a.media_port}-{a.media_port + 1}"),
                     ("Session", SESSION)]
        elif method == "OPTIONS":
            extra = [("Public", "OPTIONS, ANNOUNCE, SETUP, RECORD, SET_PARAMETER, GET_PARAMETER, TEARDOWN")]
        # Methods it does not know (PAIR, say) are 501, as RFC 2326 §11.3.1 has it.
        known = ("OPTIONS", "ANNOUNCE", "SETUP", "RECORD", "FLUSH", "GET_PARAMETER", "SET_PARAMETER", "TEARDOWN")
        status = "200 OK" if method in known else "501 Not Implemented"
        lines = [f"RTSP/1.0 {status}", f"CSeq: {headers.get('cseq', '0')}"] + [f"{k}: {v}" for k, v in extra]
        with writing:
            conn.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        if method == "TEARDOWN":
            break
    conn.close()
    status, stopped_by, errors = None, None, None
    if ffmpeg:
        time.sleep(0.3)
        # 'q' ends ffmpeg at once, with its output written and status 0. Once in a fresh-clone run it did not
        # answer within 10 s (status None, its WAV whole): then SIGINT, which ffmpeg also ends cleanly on, with
        # status 255, and the kill only as a last resort. What ended it is reported, with its error log.
        stopped_by = "q"
        try:
            ffmpeg.communicate(b"q", timeout=10)
        except subprocess.TimeoutExpired:
            stopped_by = "SIGINT"
            ffmpeg.send_signal(signal.SIGINT)
            try:
                ffmpeg.wait(timeout=10)
            except subprocess.TimeoutExpired:
                stopped_by = "SIGKILL"
                ffmpeg.kill()
                ffmpeg.wait()
        status = ffmpeg.returncode
        copier.join()  # its log is whole
        try:
            with open(a.out + ".log") as f:
                errors = f.read()[-2000:]
        except OSError:
            pass
    if commander:
        commander.join()
    if media:
        try:
            media.shutdown(socket.SHUT_RDWR)  # wakes the receiving thread (Linux does, with ENOTCONN for UDP)
        except OSError:
            pass
        receiver.join()
        media.close()
        if flushed is not None and "start_at" in resume:
            pt = int(re.search(r"a=rtpmap:(\d+) opus", sdp).group(1))
            resume["resumed_from"], resume["match"], resume["primed_db"] = resumed_from(packets, pt, flushed, resume["start_at"])
            resume["start_at"] = signed(resume["start_at"] - flushed)
    print(json.dumps({"sdp": used, "ffmpeg_status": status, "ffmpeg_stopped_by": stopped_by, "ffmpeg_errors": errors, "commands": results, "flow": flow, "parameters": parameters,
                      "resume": resume}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
