#!/usr/bin/env python3
"""Play the session handshake of Protocol/streaming.md §3 against a Lyre receiver, as a plain RTSP sender
would, and print what it answered as one JSON object: the statuses and headers the spec states, for a test
to assert. Usage: rtsp-conformance.py HOST PORT [--silent | --deaf | --clock | --arrival | --pipelined |
--shutdown PID [--held main|overlay]] (the receiver's
page on port 7780)

With --silent: sets a session up to RECORD and then says and sends nothing (§7: a recording session silent for
10 s ends, `timeout`); prints how long until the receiver closed the connection and what it said first.

With --deaf: sets a session up to RECORD, enables `pause` (now-playing.md §4.1), prints "ready", and answers
nothing for 8 s, keeping the session alive with GET_PARAMETER; prints the remote commands the receiver sent.

With --clock: a session with no timing exchange (so the receiver has no samples of this sender's clock) sends
one now-playing snapshot, 10 s into a 100 s item at rate 1 anchored at this machine's CLOCK_MONOTONIC now,
prints "ready", and keeps the session for 4 s (now-playing.md §2: the clocks are then taken as equal).

With --arrival: a session with no timing exchange sends 1 s of packets in real time and prints the
CLOCK_MONOTONIC time (ns) it sent the first (streaming.md §6.2: played at arrival plus the target latency).

With --pipelined: on a connection of its own, writes an ANNOUNCE that asks to mix (`Lyre-Mix: mix`), its SETUP
and a TEARDOWN at once, without waiting for an answer (RFC 2326 lets a client pipeline), so the session ends while
the receiver still binds the SETUP's ports; prints each answer's status by method, in the order they came.

With --shutdown PID: sets a session up to RECORD and a second that ducks it (`Lyre-Mix: duck`), and stops the
receiver (SIGTERM to PID). The session --held names (main by default) never closes; the other reads its notice and
closes at once, as lyre play does. Reads the held one until the receiver shuts its side; then sends a keep-alive
every 0.25 s until one fails. Prints whether each was told (the session-end notice), and how long after the signal
the receiver shut the held one's side and closed its connection (the keep-alive refused).

Reuses rtsp-abuse.py's connection and message reading (the same wire code, not a second one)."""
import base64
import ctypes
import ctypes.util
import importlib.util
import json
import math
import os
import random
import socket
import sys
import time
import urllib.error
import urllib.request

spec = importlib.util.spec_from_file_location("rtsp_abuse", os.path.join(os.path.dirname(__file__), "rtsp-abuse.py"))
abuse = importlib.util.module_from_spec(spec)
spec.loader.exec_module(abuse)


def session(target):
    s = abuse.MediaSession(target, "udp", random.Random(7))
    s.conn = abuse.Conn(target.connect(), target.timeout)
    return s


def announce(s, headers=()):
    return s.req("ANNOUNCE", s.target.url, [("Content-Type", "application/sdp")] + list(headers), abuse.VALID_SDP, expect=None)


def setup(s, transport="", headers=()):
    """SETUP over UDP from a pair of ports bound here (`transport` adds to the Transport header); the session id
    it gives is used from then on."""
    s._bind_udp(s.conn.sock.getsockname()[0])
    port = s.rtp_sock.getsockname()[1]
    reply = s.req("SETUP", s.target.url + "streamid=0",
                  [("Transport", f"RTP/AVP/UDP;unicast;client_port={port}-{port + 1};mode=record{transport}")] + list(headers),
                  expect=None)
    s.session = reply.headers.get("session", "").split(";")[0].strip() or None
    return reply


def recording(target, transport="", headers=(), rtptime=1, announce_headers=()):
    """A session set up to RECORD, as the handshake below does it (`transport` and `headers` add to its SETUP,
    whose answer is kept as `s.setup_reply`, `announce_headers` to its ANNOUNCE); `s.server` is the receiver's
    RTP address."""
    s = session(target)
    announce(s, announce_headers)
    reply = setup(s, transport, headers)
    if reply.status != 200:
        raise abuse.SetupError("SETUP refused")
    s.setup_reply = reply
    s.server = (target.ip, int(reply.headers.get("transport", "").split("server_port=")[1].split("-")[0]))
    s.req("RECORD", target.url, [("RTP-Info", f"seq=1;rtptime={rtptime}")])
    return s


def read_to_end(s, timeout):
    """What the receiver says on the session's connection until it shuts its side."""
    said = b""
    s.conn.sock.settimeout(timeout)
    while True:
        data = s.conn.sock.recv(65536)
        if not data:
            return said
        said += data


def keep_alive(s, cseq):
    s.conn.sock.sendall(f"GET_PARAMETER {s.target.url} RTSP/1.0\r\nCSeq: {cseq}\r\nSession: {s.session}\r\n\r\n".encode())


def silent(target):
    s = recording(target)
    start = time.monotonic()
    said = read_to_end(s, 20)
    print(json.dumps({"closed_after_s": round(time.monotonic() - start, 2), "said": said.decode("utf-8", "replace")}))


def rtcp_nacks(data):
    """(sender SSRC, media SSRC, first PID, every number asked for) of each generic NACK (RFC 4585: PT 205, FMT 1)
    in an RTCP datagram."""
    found = []
    while len(data) >= 12:
        length = (int.from_bytes(data[2:4], "big") + 1) * 4
        if data[1] == 205 and data[0] & 0x1F == 1 and length >= 16:
            asked = []
            for at in range(12, length, 4):
                pid, blp = int.from_bytes(data[at:at + 2], "big"), int.from_bytes(data[at + 2:at + 4], "big")
                asked += [pid] + [(pid + 1 + bit) & 0xFFFF for bit in range(16) if blp >> bit & 1]
            found.append((data[4:8].hex(), data[8:12].hex(), asked[0], asked))
        data = data[length:]
    return found


def parity(packets, sequence, csrc):
    """The FEC packet of §4.3 (RFC 8627 flexible mask, one stream) protecting `packets`, (seq, timestamp,
    payload) of payload type 96 with no marker, consecutive: built here from the text, not from Lyre's code."""
    length, stamp, longest = 0, 0, max(len(p) for _, _, p in packets)
    payload = bytearray(longest)
    for _, ts, body in packets:
        length ^= len(body)
        stamp ^= ts
        for i, byte in enumerate(body):
            payload[i] ^= byte
    mask = sum(1 << (14 - i) for i in range(len(packets)))
    marker_and_type = 96 if len(packets) % 2 else 0
    header = bytes([0x81, 97]) + sequence.to_bytes(2, "big") + (0).to_bytes(4, "big") + (0xFECFEC).to_bytes(4, "big")
    header += csrc.to_bytes(4, "big") + bytes([0, marker_and_type]) + length.to_bytes(2, "big") + stamp.to_bytes(4, "big")
    return header + packets[0][0].to_bytes(2, "big") + (0x8000 | mask).to_bytes(2, "big") + bytes(payload)


def fec_session(target):
    """§4.3 with `nack` too, rows of 2 (1–2, 3–4, …): parity for 1–2 from another address and for 3–4 naming
    another SSRC (both `foreign`; 3 is lost, so it is asked for); 5 and 6 lost with their parity (two in a
    row: not repaired, so asked for); 8 lost and its row's parity here (rebuilt, `fec`, and not asked for, as
    its gap shows only at 9, after the parity)."""
    s = recording(target, ";ssrc=1234ABCD", [("Lyre-Feedback", "nack"), ("Lyre-FEC", "pt=97;row=2")], rtptime=0)
    reply, server = s.setup_reply, s.server
    media = {seq: (seq, (seq - 1) * 960, abuse.OPUS_SILENCE + bytes([seq]) * (seq % 3)) for seq in range(1, 11)}
    other = socket.socket(target.family, socket.SOCK_DGRAM)
    other.bind(("127.0.0.2", 0))

    def send(seq):
        s.rtp_sock.sendto(abuse.rtp(96, seq, media[seq][1], 0x1234ABCD, media[seq][2]), server)
    for seq in (1, 2):
        send(seq)
    other.sendto(parity([media[1], media[2]], 1, 0x1234ABCD), server)
    send(4)
    s.rtp_sock.sendto(parity([media[3], media[4]], 2, 0xDEADBEEF), server)
    s.rtp_sock.sendto(parity([media[5], media[6]], 3, 0x1234ABCD), server)
    send(7)
    s.rtp_sock.sendto(parity([media[7], media[8]], 4, 0x1234ABCD), server)
    for seq in (9, 10):
        send(seq)
    other.close()
    asked = set()
    s.rtcp_sock.settimeout(0.2)
    end = time.monotonic() + 1
    while time.monotonic() < end:
        try:
            for nack in rtcp_nacks(s.rtcp_sock.recv(2048)):
                asked.update(nack[3])
        except socket.timeout:
            pass
    s.req("TEARDOWN", target.url, expect=None)
    s.close()
    return {"fec": reply.headers.get("lyre-fec"), "asked": sorted(asked)}


def nack_over_udp(target):
    """§4.1: a UDP session that said `nack`; packets 1, 2, 4, 5 sent, 3 missing. Returns the receiver's
    `Lyre-Feedback` answer and the NACKs that came to the second client port within a second."""
    s = recording(target, ";ssrc=1234ABCD", [("Lyre-Feedback", "nack")], rtptime=0)
    reply = s.setup_reply
    for seq in (1, 2, 4, 5):
        s.rtp_sock.sendto(abuse.rtp(96, seq, (seq - 1) * 960, 0x1234ABCD, abuse.OPUS_SILENCE), s.server)
    nacks = []
    s.rtcp_sock.settimeout(0.2)
    end = time.monotonic() + 1
    while time.monotonic() < end:
        try:
            nacks += rtcp_nacks(s.rtcp_sock.recv(2048))
        except socket.timeout:
            pass
    s.req("TEARDOWN", target.url, expect=None)
    s.close()
    return {"feedback": reply.headers.get("lyre-feedback"), "nacks": nacks}


def nack_over_tcp(target):
    """§4.1: the same on an interleaved session, `nack` asked for too: no NACK comes on its RTCP channel."""
    s = session(target)
    announce(s)
    reply = s.req("SETUP", target.url + "streamid=0", [("Transport", "RTP/AVP/TCP;unicast;interleaved=0-1;mode=record"),
                                                       ("Lyre-Feedback", "nack")], expect=None)
    s.session = reply.headers.get("session", "").split(";")[0].strip() or None
    s.req("RECORD", target.url, [("RTP-Info", "seq=1;rtptime=0")])
    for seq in (1, 2, 4, 5):
        packet = abuse.rtp(96, seq, (seq - 1) * 960, 0x1234ABCD, abuse.OPUS_SILENCE)
        s.conn.sock.sendall(b"$\x00" + len(packet).to_bytes(2, "big") + packet)
    heard = b""
    s.conn.sock.settimeout(0.2)
    end = time.monotonic() + 1
    while time.monotonic() < end:
        try:
            heard += s.conn.sock.recv(65536)
        except socket.timeout:
            pass
    nacks = []
    while heard.startswith(b"$") and len(heard) >= 4:
        length = int.from_bytes(heard[2:4], "big")
        if heard[1] == 1:
            nacks += rtcp_nacks(heard[4:4 + length])
        heard = heard[4 + length:]
    s.req("TEARDOWN", target.url, expect=None)
    s.close()
    return {"status": reply.status, "feedback": reply.headers.get("lyre-feedback"), "nacks": nacks, "unparsed": len(heard)}


def report_session(target):
    """§4.2: a UDP session that said `report`, fed 3.5 s of packets in real time: the compound RTCP datagrams
    that came to the second client port, each as [seconds since RECORD, the packet types in it, the receiver
    report's block SSRC, the APP packet's name and subtype]."""
    s = recording(target, ";ssrc=1234ABCD", [("Lyre-Feedback", "report")], rtptime=0)
    reply, server = s.setup_reply, s.server
    start = time.monotonic()
    s.rtcp_sock.setblocking(False)
    reports, seq = [], 1
    while time.monotonic() - start < 3.5:
        while seq <= (time.monotonic() - start) / 0.02 + 1:
            s.rtp_sock.sendto(abuse.rtp(96, seq, (seq - 1) * 960, 0x1234ABCD, abuse.OPUS_SILENCE), server)
            seq += 1
        try:
            data = s.rtcp_sock.recv(2048)
        except BlockingIOError:
            time.sleep(0.005)
            continue
        kinds, block, app = [], None, None
        while len(data) >= 8:
            length = (int.from_bytes(data[2:4], "big") + 1) * 4
            kinds.append(data[1])
            if data[1] == 201 and data[0] & 0x1F >= 1 and len(data) >= 12:
                block = data[8:12].hex()
            if data[1] == 204 and len(data) >= 12:
                app = [data[8:12].decode("ascii", "replace"), data[0] & 0x1F]
            data = data[length:]
        reports.append([round(time.monotonic() - start, 3), kinds, block, app])
    s.req("TEARDOWN", target.url, expect=None)
    s.close()
    return {"feedback": reply.headers.get("lyre-feedback"), "reports": reports}


def clock(target):
    s = recording(target)
    snapshot = {"title": "Equal clocks", "duration": 100, "elapsed": 10, "rate": 1, "anchor": time.monotonic_ns()}
    s.req("SET_PARAMETER", target.url, [("Content-Type", "application/json")], json.dumps(snapshot).encode())
    print("ready", flush=True)
    for _ in range(4):
        time.sleep(1)
        s.req("GET_PARAMETER", target.url, expect=None)
    s.req("TEARDOWN", target.url, expect=None)
    s.close()


def arrival(target):
    s = recording(target)
    first = None
    for seq in range(1, 51):
        due = (first or 0) + (seq - 1) * 20_000_000
        while first is not None and time.monotonic_ns() < due:
            time.sleep(0.001)
        s.rtp_sock.sendto(abuse.rtp(96, seq, 1 + (seq - 1) * 960, 0x1234ABCD, abuse.OPUS_SILENCE), s.server)
        first = first or time.monotonic_ns()
    s.req("TEARDOWN", target.url, expect=None)
    s.close()
    print(json.dumps({"first_sent_ns": first}))


def speech_packets(count):
    """`count` 20 ms Opus packets of a voice-like tone from libopus (ctypes), as a VoIP app encodes: 24 kbit/s,
    in-band FEC on at 20 % expected loss, so SILK carries each frame's LBRR copy in the next packet."""
    lib = ctypes.CDLL(ctypes.util.find_library("opus") or "libopus.so.0")
    lib.opus_encoder_create.restype = ctypes.c_void_p
    error = ctypes.c_int()
    encoder = ctypes.c_void_p(lib.opus_encoder_create(48000, 2, 2048, ctypes.byref(error)))  # OPUS_APPLICATION_VOIP
    for request, value in ((4002, 24000), (4012, 1), (4014, 20)):  # bitrate, in-band FEC, packet loss %
        lib.opus_encoder_ctl(encoder, request, ctypes.c_int(value))
    pcm, out, packets = (ctypes.c_float * 1920)(), (ctypes.c_ubyte * 1275)(), []
    for frame in range(count):
        for i in range(960):
            t = (frame * 960 + i) / 48000
            pcm[2 * i] = pcm[2 * i + 1] = 0.3 * math.sin(2 * math.pi * (220 * t + 3 * math.sin(2 * math.pi * 5 * t)))
        n = lib.opus_encode_float(encoder, pcm, 960, out, 1275)
        packets.append(bytes(out[:n]))
    lib.opus_encoder_destroy(encoder)
    return packets


def inband_session(target):
    """§4.3's last word: a plain publisher's speech with in-band FEC, 60 packets in real time, 20, 35 and 50
    lost (one at a time): the receiver decodes each from the next packet's FEC and counts it in `fec`."""
    s = recording(target)
    packets = speech_packets(60)
    start = time.monotonic()
    for seq in range(1, 61):
        while time.monotonic() < start + (seq - 1) * 0.02:
            time.sleep(0.002)
        if seq not in (20, 35, 50):
            s.rtp_sock.sendto(abuse.rtp(96, seq, 1 + (seq - 1) * 960, 0x1234ABCD, packets[seq - 1]), s.server)
    time.sleep(0.5)
    s.req("TEARDOWN", target.url, expect=None)
    s.close()


def deaf(target):
    s = recording(target)
    s.req("SET_PARAMETER", target.url, [("Content-Type", "text/parameters")], b"remote-commands: pause\r\n")
    print("ready", flush=True)
    heard = b""
    s.conn.sock.settimeout(0.5)
    end = time.monotonic() + 8
    cseq = 100
    while time.monotonic() < end:
        try:
            data = s.conn.sock.recv(65536)
            if not data:
                break
            heard += data
        except socket.timeout:
            # A keep-alive, whose answer is read as part of `heard` (the session must not end as silent, §7).
            cseq += 1
            keep_alive(s, cseq)
    commands = [line.split(":", 1)[1].strip() for line in heard.decode("utf-8", "replace").split("\r\n") if line.startswith("remote-command:")]
    print(json.dumps({"commands": commands}))


def pipelined(target):
    s = session(target)
    s._bind_udp(s.conn.sock.getsockname()[0])
    port = s.rtp_sock.getsockname()[1]
    requests = [("ANNOUNCE", s.target.url, [("Content-Type", "application/sdp"), ("Lyre-Mix", "mix")], abuse.VALID_SDP),
                ("SETUP", s.target.url + "streamid=0", [("Transport", f"RTP/AVP/UDP;unicast;client_port={port}-{port + 1};mode=record")], b""),
                ("TEARDOWN", s.target.url, [], b"")]
    s.conn.sock.sendall(b"".join(abuse.request(method, uri, cseq, list(headers) + [("User-Agent", "rtsp-conformance.py")], body)
                                 for cseq, (method, uri, headers, body) in enumerate(requests, 1)))
    answers = []
    while len(answers) < len(requests):
        msg = s.conn.read_message()
        if msg.is_response:
            method = requests[int(msg.headers.get("cseq", "0")) - 1][0]
            answers.append({"method": method, "status": msg.status, "error": msg.headers.get("lyre-error")})
    s.close()
    print(json.dumps({"answers": answers}))


def shutdown(target, pid, held):
    s = recording(target)
    overlay = recording(target, announce_headers=[("Lyre-Mix", "duck")])
    # One sender reads its notice and closes at once, as lyre play does; the other (`held`: the main session's or
    # the overlay's) never closes, and is measured: a receiver that waited for the first close alone would be
    # gone, and this connection closed, as soon as that came.
    kept, other = (s, overlay) if held == "main" else (overlay, s)
    os.kill(pid, 15)
    start = time.monotonic()
    other_said = read_to_end(other, 10)
    other.close()
    said = read_to_end(kept, 10)
    shut_after = time.monotonic() - start
    # The receiver has shut its side. Keep-alives every 0.25 s until one is refused: the connection was closed
    # (a write after the peer's close is answered with a reset, and the next one fails).
    reset_after = None
    cseq = 90
    while time.monotonic() - start < 8:
        time.sleep(0.25)
        cseq += 1
        try:
            keep_alive(kept, cseq)
        except (ConnectionResetError, BrokenPipeError):
            reset_after = round(time.monotonic() - start, 2)
            break
    main_text, overlay_text = (said, other_said) if held == "main" else (other_said, said)
    main_text, overlay_text = main_text.decode("utf-8", "replace"), overlay_text.decode("utf-8", "replace")
    print(json.dumps({"held": held, "notice": "session-end: shutdown" in main_text, "shut_after_s": round(shut_after, 2),
                      "closed_after_s": reset_after, "said": main_text, "overlay_notice": "session-end: shutdown" in overlay_text,
                      "overlay_said": overlay_text}))


# The smallest bodies each format's magic bytes make (the receiver checks those, not the picture).
JPEG = bytes([0xFF, 0xD8, 0xFF, 0xE0]) + b"a cover"
PNG = bytes([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) + b"another cover"
WEB_PORT = 7780


def cover(target, port):
    """What the receiver's page serves as the cover now: "jpeg", "png" (the bytes sent here) or its status."""
    try:
        with urllib.request.urlopen(f"http://{target.ip}:{port}/artwork", timeout=5) as answer:
            body = answer.read()
    except urllib.error.HTTPError as error:
        return error.code
    return "jpeg" if body == JPEG else "png" if body == PNG else f"other ({len(body)} bytes)"


def main():
    target = abuse.Target(sys.argv[1], int(sys.argv[2]), 5)
    if "--silent" in sys.argv:
        return silent(target)
    if "--shutdown" in sys.argv:
        held = sys.argv[sys.argv.index("--held") + 1] if "--held" in sys.argv else "main"
        if held not in ("main", "overlay"):
            sys.exit(f"rtsp-conformance.py: --held is main or overlay, not {held!r}")
        return shutdown(target, int(sys.argv[sys.argv.index("--shutdown") + 1]), held)
    if "--deaf" in sys.argv:
        return deaf(target)
    if "--clock" in sys.argv:
        return clock(target)
    if "--arrival" in sys.argv:
        return arrival(target)
    if "--pipelined" in sys.argv:
        return pipelined(target)
    out = {}
    # §7 Lyre-Mix: mix or duck, anything else 400. First, while the receiver is idle: a mix request then plays.
    for mix in ("ducking", "mix"):
        s = session(target)
        out[f"announce_mix_{mix}"] = announce(s, [("Lyre-Mix", mix)]).status
        s.close()
    # §7 Lyre-Duck-DB: a number from -40 to -3, with Lyre-Mix: duck only. Lyre-Mode: one of an app's modes.
    # Lyre-Interrupt: spokenAudio, with Lyre-Mix only. Else 400 with a reason. Each on a connection of its own.
    for name, headers in (("duck_db_ok", [("Lyre-Mix", "duck"), ("Lyre-Duck-DB", "-24")]),
                          ("duck_db_deep", [("Lyre-Mix", "duck"), ("Lyre-Duck-DB", "-41")]),
                          ("duck_db_word", [("Lyre-Mix", "duck"), ("Lyre-Duck-DB", "quiet")]),
                          ("duck_db_mix", [("Lyre-Mix", "mix"), ("Lyre-Duck-DB", "-24")]),
                          ("mode_podcast", [("Lyre-Mode", "podcast")]), ("mode_spokenAudio", [("Lyre-Mode", "spokenAudio")]),
                          ("mode_default", [("Lyre-Mode", "default")]), ("mode_voiceChat", [("Lyre-Mode", "voiceChat")]),
                          ("interrupt_alone", [("Lyre-Interrupt", "spokenAudio")]),
                          ("interrupt_mix", [("Lyre-Mix", "mix"), ("Lyre-Interrupt", "spokenAudio")])):
        s = session(target)
        reply = announce(s, headers)
        out[f"announce_{name}"] = reply.status
        if reply.status != 200:
            out[f"announce_{name}_error"] = reply.headers.get("lyre-error", "")
        s.close()
    # §7 Lyre-Mix over a session: four play over it at once (each answered 200), the fifth is refused with 453
    # and a Lyre-Error that says why.
    main_session = session(target)
    announce(main_session)
    overlays = []
    for n in range(1, 6):
        o = session(target)
        reply = announce(o, [("Lyre-Mix", "duck")])
        out[f"announce_overlay_{n}"] = reply.status
        if reply.status != 200:
            out[f"announce_overlay_{n}_error"] = reply.headers.get("lyre-error", "")
        overlays.append(o)
    for o in overlays + [main_session]:
        o.close()
    # §7 Lyre-Interrupt over spoken audio whose sender accepts no commands (it sent none): the receiver cannot
    # pause it, plays over it and logs why. A session that then takes over was never paused: when the
    # interrupting overlay ends, the new one is not told to play (the test reads lyred's log).
    podcast = session(target)
    out["interrupt_podcast"] = announce(podcast, [("Lyre-Mode", "spokenAudio")]).status
    bell = session(target)
    out["interrupt_bell"] = announce(bell, [("Lyre-Mix", "mix"), ("Lyre-Interrupt", "spokenAudio")]).status
    taker = session(target)
    out["interrupt_takeover"] = announce(taker).status
    bell.close()
    time.sleep(0.5)  # the receiver sees the overlay's connection close before this script ends
    for s in (taker, podcast):
        s.close()
    # §3 ANNOUNCE: Lyre-Latency 10…2000, out of range 400 (each on a connection of its own).
    for latency in (9, 10, 2000, 2001):
        s = session(target)
        out[f"announce_latency_{latency}"] = announce(s, [("Lyre-Latency", str(latency))]).status
        s.close()
    # §3 states: RECORD before SETUP is out of order.
    s = session(target)
    announce(s)
    out["record_before_setup"] = s.req("RECORD", target.url, [("RTP-Info", "seq=1;rtptime=1")], expect=None).status
    # §2 methods: OPTIONS lists them in Public; a player's method is 405 with Allow, an unknown one 501 with
    # Public. Asked on a connection with a session (none of them changes one, so no Session header is needed):
    # it is the method that is refused, not the session's state.
    for method in ("OPTIONS", "DESCRIBE", "PLAY", "FETCH"):
        reply = s.req(method, target.url, expect=None)
        out[f"method_{method}"] = [reply.status, reply.headers.get("public"), reply.headers.get("allow")]
    s.close()
    # The handshake, as the spec's figure has it.
    s = session(target)
    announce(s, [("Lyre-Latency", "2000")])
    reply = setup(s, ";ssrc=1234ABCD")
    out["setup_status"] = reply.status
    out["setup_session"] = reply.headers.get("session", "")
    out["setup_transport"] = reply.headers.get("transport", "")
    reply = s.req("RECORD", target.url, [("RTP-Info", "seq=1;rtptime=1")], expect=None)
    out["record_status"] = reply.status
    out["record_output_latency"] = reply.headers.get("lyre-output-latency")
    out["record_output_delay"] = reply.headers.get("lyre-output-delay")
    out["record_start_at"] = reply.headers.get("lyre-start-at")
    # §3 FLUSH then a resuming RECORD: `Lyre-Start-At` is echoed (a version 2 receiver honours it), and a RECORD
    # without it gets none back.
    out["flush_status"] = s.req("FLUSH", target.url, [("RTP-Info", "seq=60;rtptime=56000")], expect=None).status
    reply = s.req("RECORD", target.url, [("RTP-Info", "seq=60;rtptime=56000"), ("Lyre-Start-At", "57272")], expect=None)
    out["resume_status"] = reply.status
    out["resume_start_at"] = reply.headers.get("lyre-start-at")
    # §3 SET_PARAMETER volume: −30…0 or −144; out of range 451. Unknown names 451.
    params = [("Content-Type", "text/parameters")]
    for value in ("-30.0", "0.0", "-144", "-12.5", "-30.1", "0.1", "-143", "loud"):
        out[f"volume_{value}"] = s.req("SET_PARAMETER", target.url, params, f"volume: {value}\r\n".encode(), expect=None).status
    out["set_unknown"] = s.req("SET_PARAMETER", target.url, params, b"loudness: 3\r\n", expect=None).status
    # RFC 2326 §10.9: a request with one parameter refused changes none; the volume stays the last taken (-12.5).
    out["set_partly_unknown"] = s.req("SET_PARAMETER", target.url, params, b"volume: -20.0\r\nloudness: 3\r\n", expect=None).status
    out["get_unknown"] = s.req("GET_PARAMETER", target.url, params, b"loudness\r\n", expect=None).status
    for name in ("output-latency", "output-delay", "volume"):
        reply = s.req("GET_PARAMETER", target.url, params, f"{name}\r\n".encode(), expect=None)
        out[f"get_{name}"] = [reply.status, reply.body.decode("utf-8", "replace").strip()]
    # §3 SETUP: the Transport's ssrc is locked; media from another SSRC or another address is dropped and
    # counted as `foreign`; §4: another payload type is dropped and counted (as `malformed`). Sent to the
    # receiver's server_port, none of it valid: lyred's stats at the session's end count 4 foreign, 2 malformed.
    server = int(out["setup_transport"].split("server_port=")[1].split("-")[0])
    other = socket.socket(target.family, socket.SOCK_DGRAM)
    other.bind(("127.0.0.2", 0))
    for seq in range(3):
        s.rtp_sock.sendto(abuse.rtp(96, 100 + seq, 96000, 0xDEADBEEF, bytes(40)), (target.ip, server))
    other.sendto(abuse.rtp(96, 103, 96000, 0x1234ABCD, bytes(40)), (target.ip, server))
    for seq in range(2):
        s.rtp_sock.sendto(abuse.rtp(50, 104 + seq, 96000, 0x1234ABCD, bytes(40)), (target.ip, server))
    # §2: an RTP packet over 8192 bytes is dropped and counted (as malformed: 3 in all).
    s.rtp_sock.sendto(abuse.rtp(96, 106, 96000, 0x1234ABCD, bytes(9000 - 12)), (target.ip, server))
    other.close()
    time.sleep(0.3)  # loopback delivers at once; the receiver counts them before the TEARDOWN below
    # §7: a refused ANNOUNCE from another connection changes nothing: this session is not taken over.
    refused = session(target)
    out["refused_announce"] = announce(refused, [("Lyre-Latency", "9")]).status
    refused.close()
    out["keep_alive"] = s.req("GET_PARAMETER", target.url, expect=None).status
    out["taken_over_by_refused"] = s.taken_over
    # now-playing.md §3: artwork belongs to the session until replaced (a now-playing update leaves it); an empty
    # body clears it; the session's end takes it. Seen from the receiver's page (`GET /artwork`, 404 for none).
    artwork = []
    update = b'{"title": "After the cover", "elapsed": 0, "rate": 1, "anchor": 0}'
    for kind, body in [("image/jpeg", JPEG), ("application/json", update), ("image/png", PNG), ("image/png", b"")]:
        status = s.req("SET_PARAMETER", target.url, [("Content-Type", kind)], body, expect=None).status
        artwork.append([kind, len(body), status, cover(target, WEB_PORT)])
    status = s.req("SET_PARAMETER", target.url, [("Content-Type", "image/jpeg")], JPEG, expect=None).status
    artwork.append(["image/jpeg", len(JPEG), status, cover(target, WEB_PORT)])
    out["teardown"] = s.req("TEARDOWN", target.url, expect=None).status
    artwork.append(["teardown", 0, out["teardown"], cover(target, WEB_PORT)])
    out["artwork"] = artwork
    s.close()
    # §2: over TCP, an interleaved frame over 8192 bytes is dropped and counted, and the framing is kept (the
    # session's second stats line: malformed=1; the keep-alive after it is answered).
    s = abuse.MediaSession(target, "tcp", random.Random(9))
    s.open()
    s.conn.sock.sendall(b"$" + bytes([s.rtp_ch]) + (9000).to_bytes(2, "big") + abuse.rtp(96, s.seq + 1, s.ts, s.ssrc, bytes(9000 - 12)))
    out["interleaved_keep_alive"] = s.req("GET_PARAMETER", target.url, expect=None).status
    s.req("TEARDOWN", target.url, expect=None)
    s.close()
    # pairing.md §6.3, §6.4: an SRTP key (ANNOUNCE's a=crypto) or a timing key (SETUP's Lyre-Timing-Key) on a
    # plain connection is refused with 400; they come only over TLS.
    s = session(target)
    crypto = abuse.sdp(abuse.SDP_LINES + ["a=crypto:1 AEAD_AES_128_GCM inline:" + base64.b64encode(bytes(28)).decode()])
    out["announce_crypto_plain"] = s.req("ANNOUNCE", target.url, [("Content-Type", "application/sdp")], crypto, expect=None).status
    s.close()
    s = session(target)
    announce(s)
    out["setup_timing_key_plain"] = setup(s, headers=[("Lyre-Timing-Key", base64.b64encode(bytes(32)).decode())]).status
    s.close()
    # pairing.md §3: a PAIR body is at most 1024 bytes (over it, 413, as every body over its limit); 1024 bytes
    # that are not the step's fields are malformed, 400.
    s = session(target)
    pair = [("Lyre-Pair", "start"), ("Content-Type", "application/octet-stream")]
    out["pair_body_1025"] = s.req("PAIR", target.url, pair, bytes(1025), expect=None).status
    out["pair_body_1024"] = s.req("PAIR", target.url, pair, bytes(1024), expect=None).status
    s.close()
    # streaming.md §4.1: a gap is asked for at once, by an RTCP NACK whose sender SSRC is random per session;
    # none on an interleaved session.
    out["nack_udp"] = [nack_over_udp(target), nack_over_udp(target)]
    out["nack_tcp"] = nack_over_tcp(target)
    # §4.3: FEC's parity repairs one loss in a row; parity from elsewhere is foreign; what it did not repair is
    # asked for. (Its counts: the sixth session's stats line.)
    out["fec_session"] = fec_session(target)
    # §4.2: a receiver that said `report` reports once a second (the seventh session).
    out["report_session"] = report_session(target)
    # §4.3: in-band FEC of a plain publisher's speech, used and counted (the eighth session's stats).
    inband_session(target)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
