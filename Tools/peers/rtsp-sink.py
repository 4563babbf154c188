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
`RTP-Info` and `Lyre-Anchor`, and the TEARDOWN; every SET_PARAMETER's Content-Type and size, in order.

Usage: rtsp-sink.py PORT OUT.wav [--media-port 5004] [--commands]
Prints one JSON line at the end: the SDP it used, ffmpeg's exit status, the commands' answers, and the RECORDs and
FLUSHes ("flow": [method, RTP-Info, Lyre-Anchor]), and the SET_PARAMETERs ("parameters": [Content-Type, bytes]).
"""
import argparse
import json
import re
import socket
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
    a = ap.parse_args()
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", a.port))
    server.listen(1)
    print("listening", flush=True)
    conn, _ = server.accept()
    buf, sdp, ffmpeg, used = b"", "", None, ""
    writing = threading.Lock()
    answers, answered = {}, threading.Condition()
    results, flow, parameters = [], [], []

    def send_commands():
        time.sleep(1)  # the queue's first item has begun, so it has a position to act on
        for i, (name, session, body) in enumerate(COMMANDS):
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
            flow.append([method, headers.get("rtp-info"), headers.get("lyre-anchor")])
        if a.commands and commander is None and b"remote-commands:" in body:
            commander = threading.Thread(target=send_commands)
            commander.start()
        extra = []
        if method == "ANNOUNCE":
            sdp = body.decode()
        elif method == "SETUP":
            used = re.sub(r"(?m)^m=audio \d+", f"m=audio {a.media_port}", sdp)
            used = re.sub(r"(?m)^c=IN IP4 .*$", "c=IN IP4 127.0.0.1", used)
            path = a.out + ".sdp"
            with open(path, "w") as f:
                f.write(used)
            ffmpeg = subprocess.Popen(["ffmpeg", "-v", "error", "-y", "-protocol_whitelist", "file,udp,rtp", "-c:a", "libopus", "-i", path, a.out],
                                      stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=open(a.out + ".log", "w"))
            time.sleep(1.5)  # ffmpeg reads the SDP and opens its UDP port
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
    status = None
    if ffmpeg:
        time.sleep(0.3)
        try:
            ffmpeg.communicate(b"q", timeout=10)
        except subprocess.TimeoutExpired:
            ffmpeg.kill()
        status = ffmpeg.returncode
    if commander:
        commander.join()
    print(json.dumps({"sdp": used, "ffmpeg_status": status, "commands": results, "flow": flow, "parameters": parameters}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
