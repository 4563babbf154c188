#!/usr/bin/env python3
"""Feed a Lyre receiver (lyred) bad RTSP, SDP and RTP input and check it stays healthy.

Written against Protocol/streaming.md (§2 limits and errors, §3 session flow, §4 RTP). Sends COUNT bad
inputs, round-robin over seven kinds:

  1 garbage         random bytes (binary, text-ish, `$` frames with a bad length) on a fresh connection;
                    no answer is required, the connection must just end (counted as `sent`)
  2 unknown_method  `FOO * RTSP/1.0` and friends                       expect 501 (with CSeq and Public)
  3 content_length  Content-Length 99999999999, 3 MiB, 2 MiB + 1, ...  expect 413 or close
  4 oversize_head   start line > 1024 bytes, headers > 16 KiB, > 64 header lines  expect 400/431 or close
  5 bad_cseq        missing or non-numeric CSeq                        expect 400
  6 bad_sdp         ANNOUNCE with malformed or unsupported SDP         expect 400 or 415
                    (bad Lyre-Latency: expect 400)
  7 media           bad RTP inside a valid session: UDP (truncated, oversized, wrong version, wrong payload
                    type, foreign SSRC, other source port, 127.0.0.2, broken CSRC/extension/padding, ...)
                    and TCP-interleaved (`$` frames of wrong length, > 8192 bytes, channel 7, ...).
                    One session carries many inputs; each bad packet is one input, counted as `sent`.
                    A keep-alive GET_PARAMETER every few packets checks the session is still alive (and,
                    over TCP, that the framing is still in sync); a failed check turns the last input
                    into `unexpected`.

Kinds 1-6 use one fresh TCP connection per input. Every socket has a short timeout (--timeout, 1 s), so
the run never hangs. Every 500 inputs and at the end a fresh connection's `OPTIONS *` must get 200.
With --pid, the receiver's open fd count and VmRSS are read after a 200-input warm-up and at the end
(both times with no session or abuse connection open).

Prints one JSON line:
  {"inputs", "by_kind", "ok", "unexpected", "sent", "unexpected_examples", "slowest", "healthy",
   "fds_start", "fds_end", "rss_kib_start", "rss_kib_end", ...details}
An exchange that timed out waits up to 10 s more (30 s in all for a run), and its example says whether the
answer came late (the receiver stalled) or never, and when it was sent; `slowest` lists the 5 slowest exchanges with when they were.
Exit status: 0 when it ran (judge the JSON), 2 when the receiver could not be reached at the start.

Usage: rtsp-abuse.py HOST PORT [--count 10000] [--seed 1] [--pid PID] [--timeout 1.0] [--status-only]
Python 3 standard library only.
"""
import argparse
import collections
import json
import os
import random
import re
import select
import socket
import struct
import sys
import time

KINDS = ["garbage", "unknown_method", "content_length", "oversize_head", "bad_cseq", "bad_sdp", "media"]
HEALTH_EVERY = 500
WARMUP = 200
MAX_EXAMPLES = 10
SLOWEST = 5                 # the slowest exchanges reported
LATE_WAIT = 10.0            # after a timeout, how long to wait for a late answer (to tell a stall from a loss)
LATE_BUDGET = 30.0          # all such waits of a run together, so that a receiver that never answers ends the run
MEDIA_PER_SESSION = 200     # bad packets per media session before it is ended and a new one started
MEDIA_CHECK_EVERY = 25      # bad packets between keep-alive checks of the media session
GARBAGE_POOL = 64           # garbage connections waiting for the receiver to close them
KNOWN_METHODS = {"OPTIONS", "ANNOUNCE", "SETUP", "RECORD", "PLAY", "PAUSE", "TEARDOWN", "FLUSH",
                 "GET_PARAMETER", "SET_PARAMETER", "DESCRIBE", "REDIRECT"}
HEAD_END = re.compile(rb"\r?\n\r?\n")
OPUS_SILENCE = b"\xfc\xff\xfe"  # TOC: CELT FB 20 ms stereo, one frame

SDP_LINES = ["v=0", "o=- 0 0 IN IP4 127.0.0.1", "s=Lyre", "c=IN IP4 127.0.0.1", "t=0 0",
             "m=audio 0 RTP/AVP 96", "a=rtpmap:96 opus/48000/2", "a=fmtp:96 sprop-stereo=1",
             "a=control:streamid=0"]


def sdp(lines):
    return ("\r\n".join(lines) + "\r\n").encode()


VALID_SDP = sdp(SDP_LINES)


def show(data, limit=160):
    """A short printable rendering of bytes for the examples."""
    out = data[:limit].decode("latin-1").encode("unicode_escape").decode("ascii")
    return out if len(data) <= limit else f"{out}... ({len(data)} bytes)"


class Closed(Exception):
    pass


class Message:
    def __init__(self, head, body=b""):
        lines = head.split(b"\n")
        self.start = lines[0].rstrip(b"\r").decode("latin-1")
        self.headers = {}
        for line in lines[1:]:
            line = line.rstrip(b"\r").decode("latin-1")
            name, sep, value = line.partition(":")
            if sep:
                self.headers.setdefault(name.strip().lower(), value.strip())
        self.body = body
        self.status = None
        if self.start.startswith("RTSP/"):
            parts = self.start.split(" ", 2)
            if len(parts) >= 2 and parts[1].isdigit():
                self.status = int(parts[1])

    @property
    def is_response(self):
        return self.start.startswith("RTSP/")


class Conn:
    """An RTSP connection: reads messages, skipping interleaved `$` frames between them."""

    def __init__(self, sock, timeout):
        self.sock = sock
        self.timeout = timeout
        self.buf = b""
        self.tail = b""  # the last bytes received, to spot a takeover notice even when it is cut short

    def _more(self, deadline):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise socket.timeout("timed out")
        self.sock.settimeout(remaining)
        data = self.sock.recv(65536)
        if not data:
            raise Closed("closed")
        self.buf += data
        self.tail = (self.tail + data)[-4096:]

    def read_message(self, with_body=True):
        deadline = time.monotonic() + self.timeout
        while True:
            self.buf = self.buf.lstrip(b"\r\n")
            if self.buf[:1] == b"$":
                if len(self.buf) >= 4:
                    n = struct.unpack_from(">H", self.buf, 2)[0]
                    if len(self.buf) >= 4 + n:
                        self.buf = self.buf[4 + n:]
                        continue
                self._more(deadline)
                continue
            m = HEAD_END.search(self.buf)
            if not m:
                self._more(deadline)
                continue
            head, self.buf = self.buf[:m.start()], self.buf[m.end():]
            msg = Message(head)
            if with_body:
                try:
                    length = int(msg.headers.get("content-length", "0"))
                except ValueError:
                    length = 0
                while len(self.buf) < length:
                    self._more(deadline)
                msg.body, self.buf = self.buf[:length], self.buf[length:]
            return msg


def request(method, uri, cseq=None, headers=(), body=b""):
    lines = [f"{method} {uri} RTSP/1.0"]
    if cseq is not None:
        lines.append(f"CSeq: {cseq}")
    lines += [f"{k}: {v}" for k, v in headers]
    if body:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8") + body


def rtp(pt, seq, ts, ssrc, payload=b"", version=2, marker=0, cc=0, ext=0, pad=0):
    b0 = (version & 3) << 6 | (pad & 1) << 5 | (ext & 1) << 4 | (cc & 15)
    b1 = (marker & 1) << 7 | (pt & 0x7F)
    return struct.pack(">BBHII", b0, b1, seq & 0xFFFF, ts & 0xFFFFFFFF, ssrc & 0xFFFFFFFF) + payload


class Target:
    def __init__(self, host, port, timeout):
        self.candidates = [(ai[0], ai[4]) for ai in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)]
        self.family, self.addr = self.candidates[0]
        self.ip = self.addr[0]
        self.timeout = timeout
        authority = f"[{host}]" if ":" in host else host
        self.url = f"rtsp://{authority}:{port}/"

    def pick(self):
        """Use the first of HOST's addresses that accepts a connection; raise the last error if none does."""
        error = None
        for family, addr in self.candidates:
            self.family, self.addr, self.ip = family, addr, addr[0]
            try:
                self.connect().close()
                return
            except OSError as e:
                error = e
        raise error

    def connect(self):
        s = socket.socket(self.family, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        try:
            s.connect(self.addr)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            s.close()
            raise
        return s


def health(target):
    """A fresh connection's `OPTIONS *` gets `RTSP/1.0 200`. Returns (healthy, what was seen)."""
    try:
        s = target.connect()
    except OSError as e:
        return False, f"connect: {e}"
    try:
        s.sendall(b"OPTIONS * RTSP/1.0\r\nCSeq: 1\r\n\r\n")
        msg = Conn(s, target.timeout).read_message()
        return msg.start.startswith("RTSP/1.0 200"), msg.start
    except (OSError, Closed) as e:
        return False, describe_error(e)
    finally:
        s.close()


def describe_error(e):
    if isinstance(e, socket.timeout):
        return "timeout (no answer)"
    if isinstance(e, Closed):
        return "closed without answer"
    if isinstance(e, (ConnectionResetError, BrokenPipeError)):
        return "reset without answer"
    return f"{type(e).__name__}: {e}"


def proc_fds(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


def proc_rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


class GarbagePool:
    """Garbage connections, half-closed by us, waiting (up to the timeout) for the receiver to close them."""

    def __init__(self, timeout):
        self.timeout = timeout
        self.items = {}  # socket -> [deadline, first bytes received]
        self.replies = collections.Counter()
        self.closed = 0
        self.left_open = 0

    def add(self, sock):
        sock.setblocking(False)
        self.items[sock] = [time.monotonic() + self.timeout, b""]
        while len(self.items) >= GARBAGE_POOL:
            oldest = min(v[0] for v in self.items.values())
            self.poll(max(0.0, oldest - time.monotonic()))

    def _finish(self, sock, closed):
        _, got = self.items.pop(sock)
        sock.close()
        if closed:
            self.closed += 1
        else:
            self.left_open += 1
        m = re.match(rb"RTSP/1\.0 (\d{3})", got)
        self.replies[m.group(1).decode() if m else ("none" if not got else "other")] += 1

    def poll(self, wait=0.0):
        if not self.items:
            return
        readable, _, _ = select.select(list(self.items), [], [], wait)
        for sock in readable:
            try:
                data = sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                data = b""
            if data:
                if len(self.items[sock][1]) < 64:
                    self.items[sock][1] += data[:64]
            else:
                self._finish(sock, True)
        now = time.monotonic()
        for sock in [s for s, v in self.items.items() if v[0] <= now]:
            self._finish(sock, False)

    def drain(self):
        while self.items:
            oldest = min(v[0] for v in self.items.values())
            self.poll(max(0.0, oldest - time.monotonic()) + 0.01)


class SetupError(Exception):
    pass


class MediaSession:
    """One valid session (OPTIONS, ANNOUNCE, SETUP, RECORD) used to carry many bad RTP packets.

    transport is "udp", "tcp" (interleaved) or "bare" (no session could be set up: `$` frames on a plain
    connection, checked with OPTIONS)."""

    def __init__(self, target, transport, rng):
        self.target, self.transport, self.rng = target, transport, rng
        self.cseq = 0
        self.session = None
        self.conn = None
        self.udp = []
        self.alive = False
        self.taken_over = False
        self.sent = 0
        self.since_check = []
        self.variant_index = 0
        self.pt = 96
        self.ssrc = rng.getrandbits(32) | 1
        self.seq = rng.getrandbits(16)
        self.ts = rng.getrandbits(32)
        self.rtp_ch, self.rtcp_ch = 0, 1
        self.server_rtp = self.server_rtcp = None
        self.rtp_sock = self.other_port_sock = self.other_ip_sock = self.rtcp_sock = None
        self.variants = [(f, None) for f in self._common_variants()] + [(None, n) for n in (
            ["oversized", "empty_datagram", "other_port", "other_ip", "rtcp_junk"] if transport == "udp" else
            ["oversized_frame", "zero_frame", "channel_7", "rtcp_junk", "two_in_one_frame", "short_frame"])]

    # --- control connection

    def req(self, method, uri, headers=(), body=b"", expect=200):
        self.cseq += 1
        hdrs = list(headers) + [("User-Agent", "rtsp-abuse.py")]
        if self.session and method not in ("OPTIONS", "ANNOUNCE"):
            hdrs.append(("Session", self.session))
        self.conn.sock.sendall(request(method, uri, self.cseq, hdrs, body))
        while True:
            msg = self.conn.read_message()
            if msg.is_response:
                break
            self._answer_server_request(msg)
        if expect is not None and msg.status != expect:
            raise SetupError(f"{method}: got {msg.start!r}, wanted {expect}")
        return msg

    def _answer_server_request(self, msg):
        """The receiver may send us requests (§7 takeover notice): answer 200 like a sender would."""
        if "session-end" in msg.body.decode("latin-1"):
            self.taken_over = True
        cseq = msg.headers.get("cseq", "0")
        try:
            self.conn.sock.sendall(f"RTSP/1.0 200 OK\r\nCSeq: {cseq}\r\n\r\n".encode())
        except OSError:
            pass

    def open(self):
        try:
            sock = self.target.connect()
        except OSError as e:
            raise SetupError(f"connect: {e}")
        self.conn = Conn(sock, self.target.timeout)
        self.alive = True
        if self.transport == "bare":
            return
        url = self.target.url
        local_ip = sock.getsockname()[0]
        try:
            self.req("OPTIONS", "*")
            self.req("ANNOUNCE", url, [("Content-Type", "application/sdp")], VALID_SDP)
            if self.transport == "udp":
                self._bind_udp(local_ip)
                port = self.rtp_sock.getsockname()[1]
                transport = f"RTP/AVP/UDP;unicast;client_port={port}-{port + 1};mode=record"
            else:
                transport = "RTP/AVP/TCP;unicast;interleaved=0-1;mode=record"
            reply = self.req("SETUP", url + "streamid=0", [("Transport", transport)])
            self.session = reply.headers.get("session", "").split(";")[0].strip() or None
            if not self.session:
                raise SetupError(f"SETUP: no Session header in {reply.start!r}")
            t = reply.headers.get("transport", "")
            if self.transport == "udp":
                m = re.search(r"server_port=(\d+)(?:-(\d+))?", t)
                if not m:
                    raise SetupError(f"SETUP: no server_port in Transport {t!r}")
                self.server_rtp = (self.target.ip, int(m.group(1)))
                self.server_rtcp = (self.target.ip, int(m.group(2) or int(m.group(1)) + 1))
            else:
                m = re.search(r"interleaved=(\d+)(?:-(\d+))?", t)
                if m:
                    self.rtp_ch = int(m.group(1))
                    self.rtcp_ch = int(m.group(2) or self.rtp_ch + 1)
            self.req("RECORD", url, [("RTP-Info", f"seq={self.seq};rtptime={self.ts}")])
            self.send_valid()
        except (OSError, Closed) as e:
            self.close()
            raise SetupError(f"session setup: {describe_error(e)}")
        except SetupError:
            self.close()
            raise

    def _bind_udp(self, local_ip):
        family = socket.AF_INET6 if ":" in local_ip else socket.AF_INET
        for _ in range(100):
            a = socket.socket(family, socket.SOCK_DGRAM)
            a.bind((local_ip, 0))
            port = a.getsockname()[1]
            if port % 2 == 0 and port < 65535:
                b = socket.socket(family, socket.SOCK_DGRAM)
                try:
                    b.bind((local_ip, port + 1))
                except OSError:
                    b.close()
                    a.close()
                    continue
                self.rtp_sock, self.rtcp_sock = a, b
                break
            a.close()
        else:
            raise SetupError("could not bind an even/odd UDP port pair")
        self.other_port_sock = socket.socket(family, socket.SOCK_DGRAM)
        self.other_port_sock.bind((local_ip, 0))
        if local_ip.startswith("127.") and local_ip != "127.0.0.2":
            try:
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                s.bind(("127.0.0.2", 0))
                self.other_ip_sock = s
            except OSError:
                s.close()
        self.udp = [s for s in (self.rtp_sock, self.rtcp_sock, self.other_port_sock, self.other_ip_sock) if s]
        for s in self.udp:
            s.setblocking(False)

    def close(self):
        self.alive = False
        if self.conn:
            self.conn.sock.close()
        for s in self.udp:
            s.close()
        self.udp = []

    def check(self, want_stats=False):
        """Keep-alive: GET_PARAMETER (OPTIONS without a session) must get 200. Returns (ok, why, stats).

        With want_stats it asks for `stats` and any answer will do (the parameter is informative)."""
        try:
            if self.transport == "bare":
                msg = self.req("OPTIONS", "*", expect=None)
            else:
                body = b"stats\r\n" if want_stats else b""
                hdrs = [("Content-Type", "text/parameters")] if body else []
                msg = self.req("GET_PARAMETER", self.target.url, hdrs, body, expect=None)
        except (OSError, Closed) as e:
            self.alive = False
            return False, describe_error(e), None
        if want_stats:
            return True, "", (msg.status, msg.body.decode("latin-1").strip())
        if msg.status != 200:
            self.alive = False
            return False, f"keep-alive got {msg.start!r}", None
        return True, "", None

    def teardown(self):
        try:
            msg = self.req("TEARDOWN", self.target.url, expect=None)
        except (OSError, Closed) as e:
            self.alive = False
            return False, describe_error(e)
        self.close()
        if msg.status != 200:
            return False, f"TEARDOWN got {msg.start!r}"
        return True, ""

    def read_notice(self):
        """After a failure: read what the receiver still sent, to tell a §7 takeover from a crash."""
        if self.conn is None or self.taken_over:
            return
        self.conn.timeout = 0.2
        try:
            while True:
                msg = self.conn.read_message()
                if not msg.is_response:
                    self._answer_server_request(msg)
        except (OSError, Closed):
            pass
        if b"session-end" in self.conn.tail:
            self.taken_over = True

    # --- media

    def next_valid(self, payload=OPUS_SILENCE):
        self.seq = (self.seq + 1) & 0xFFFF
        self.ts = (self.ts + 960) & 0xFFFFFFFF
        return rtp(self.pt, self.seq, self.ts, self.ssrc, payload)

    def _out(self, packet, sock=None, to=None, channel=None, frame=None):
        """Send one packet: over UDP from `sock` to `to`, or as a `$` frame (`frame` = raw bytes)."""
        if self.transport == "udp":
            try:
                (sock or self.rtp_sock).sendto(packet, to or self.server_rtp)
            except (BlockingIOError, InterruptedError):
                pass  # socket buffer full: the datagram is lost, as on a busy network
            except OSError:
                pass
            return
        if frame is None:
            ch = self.rtp_ch if channel is None else channel
            frame = b"$" + bytes([ch & 0xFF]) + struct.pack(">H", len(packet) & 0xFFFF) + packet
        try:
            self.conn.sock.settimeout(self.target.timeout)
            self.conn.sock.sendall(frame)
        except OSError:
            self.alive = False  # the caller reads what is left and closes

    def send_valid(self):
        self._out(self.next_valid())

    def _common_variants(self):
        rng, pt, ssrc = self.rng, self.pt, self.ssrc
        junk = rng.randbytes

        def truncated():
            return "truncated", self.next_valid(junk(40))[:rng.randint(1, 11)]

        def version():
            v = rng.choice((0, 1, 3))
            return f"version_{v}", rtp(pt, self.seq + 1, self.ts, ssrc, OPUS_SILENCE, version=v)

        def wrong_pt():
            p = rng.choice([x for x in (0, 8, 10, 11, 72, 73, 95, 97, 111, 127) if x != pt])
            return "wrong_pt", rtp(p, self.seq + 1, self.ts, ssrc, OPUS_SILENCE, marker=rng.getrandbits(1))

        def foreign_ssrc():
            other = ssrc ^ (rng.getrandbits(32) | 1)
            return "foreign_ssrc", rtp(pt, self.seq + 1, self.ts + 960, other, OPUS_SILENCE)

        def csrc_overflow():
            return "csrc_overflow", rtp(pt, self.seq + 1, self.ts, ssrc, junk(rng.randint(0, 59)), cc=15)

        def bad_extension():
            n = rng.randint(0, 3)
            if n == 0:
                tail = b""                                          # X set, no extension header at all
            elif n == 1:
                tail = b"\xbe"                                      # half an extension header
            else:
                tail = b"\xbe\xde\xff\xff" + junk(rng.randint(0, 64))  # claims 262140 bytes
            return "bad_extension", rtp(pt, self.seq + 1, self.ts, ssrc, tail, ext=1)

        def bad_padding():
            body = junk(rng.randint(0, 20))
            last = rng.choice((0, 255, len(body) + 13))
            return "bad_padding", rtp(pt, self.seq + 1, self.ts, ssrc, body + bytes([last & 0xFF]), pad=1)

        def absurd_seq():
            return "absurd_seq", rtp(pt, self.seq + rng.randint(1000, 40000), rng.getrandbits(32), ssrc,
                                     OPUS_SILENCE)

        def header_only():
            return "header_only", rtp(pt, self.seq + 1, self.ts, ssrc)

        def junk_opus():
            return "junk_opus", self.next_valid(junk(rng.randint(1, 1200)))

        return [truncated, version, wrong_pt, foreign_ssrc, csrc_overflow, bad_extension, bad_padding,
                absurd_seq, header_only, junk_opus]

    def send_bad(self):
        """Send one bad packet (the next variant in turn); returns its name."""
        rng = self.rng
        fn, name = self.variants[self.variant_index % len(self.variants)]
        self.variant_index += 1
        if fn:
            name, packet = fn()
            self._out(packet)
        elif name == "oversized":
            size = rng.choice((8193, 9000, rng.randint(8193, 65507), 65507))
            self._out(rtp(self.pt, self.seq + 1, self.ts, self.ssrc, rng.randbytes(size - 12)))
        elif name == "empty_datagram":
            self._out(b"")
        elif name == "other_port":
            self._out(self.next_valid(), sock=self.other_port_sock)
        elif name == "other_ip":
            if self.other_ip_sock:
                self._out(self.next_valid(), sock=self.other_ip_sock)
            else:
                name = "other_port"
                self._out(self.next_valid(), sock=self.other_port_sock)
        elif name == "rtcp_junk":
            packet = rng.randbytes(rng.randint(0, 1500))
            if self.transport == "udp":
                self._out(packet, sock=self.rtcp_sock, to=self.server_rtcp)
            else:
                self._out(packet, channel=self.rtcp_ch)
        elif name == "oversized_frame":
            size = rng.choice((8193, 9000, rng.randint(8193, 65535), 65535))
            self._out(rtp(self.pt, self.seq + 1, self.ts, self.ssrc, rng.randbytes(size - 12)))
        elif name == "zero_frame":
            self._out(b"")
        elif name == "channel_7":
            ch = 7 if 7 not in (self.rtp_ch, self.rtcp_ch) else 5
            self._out(self.next_valid(), channel=ch)
        elif name == "two_in_one_frame":
            self._out(self.next_valid() + self.next_valid())
        elif name == "short_frame":
            # The length covers only part of a real packet: the frame holds a cut RTP packet.
            packet = self.next_valid(rng.randbytes(100))
            n = rng.randint(0, 30)
            self._out(None, frame=b"$" + bytes([self.rtp_ch]) + struct.pack(">H", n) + packet[:n])
        if self.sent % 4 == 3 and self.alive:
            self.send_valid()  # keep a real stream going between the bad packets
        self.sent += 1
        self.since_check.append(name)
        return name

    def cut_frame_and_close(self):
        """End a TCP session the rude way: a `$` frame promising more bytes than ever come, then close."""
        frame = b"$" + bytes([self.rtp_ch]) + b"\x10\x00" + self.next_valid()[:20]
        self._out(None, frame=frame)
        self.close()
        return "cut_frame_then_close"


class Abuser:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.target = Target(args.host, args.port, args.timeout)
        self.counts = collections.Counter()
        self.by_kind = collections.Counter()
        self.detail = {k: collections.Counter() for k in KINDS}
        self.examples = []
        self.started = time.monotonic()  # an example says when it came, to match it with the receiver's log
        self.garbage = GarbagePool(args.timeout)
        self.kind_turn = collections.Counter()
        self.timeouts = collections.Counter()
        self.health_checks = 0
        self.health_failures = []
        self.media = None
        self.media_transport_turn = 0
        self.media_info = collections.Counter()
        self.media_setup_errors = []
        self.media_stats = []
        self.media_in_session = 0
        self.media_blocked_until = 0  # media input count before which no new session is tried
        self.media_inputs = 0
        self.tcp_sessions_ended = 0
        self.last_input = None  # the input recorded last, named in the next unexpected answer's example
        self.slowest = []  # the slowest answered-or-not exchanges on a fresh connection
        self.late_budget = LATE_BUDGET

    # --- bookkeeping

    def record(self, kind, variant, ok, payload=b"", got="", why="", sent=None):
        self.by_kind[kind] += 1
        before, self.last_input = self.last_input, f"{kind} {variant}"
        result = "ok" if ok else "unexpected"
        self.counts[result] += 1
        self.detail[kind][result] += 1
        if not ok:
            self.example(kind, variant, payload, got, why, after=before, sent=sent)

    def example(self, kind, variant, payload, got, why, after=None, sent=None):
        """`sent` is (monotonic, wall) when the input was sent; else now."""
        if len(self.examples) < MAX_EXAMPLES:
            at, wall = sent or (time.monotonic(), time.strftime("%H:%M:%S"))
            ex = {"kind": kind, "variant": variant, "got": got, "at_s": round(at - self.started, 3), "wall": wall}
            if payload:
                ex["sent"] = show(payload)
            if why:
                ex["why"] = why
            if after:
                ex["after"] = after  # the input the receiver handled just before
            self.examples.append(ex)

    def sent(self, kind):
        self.by_kind[kind] += 1
        self.counts["sent"] += 1
        self.detail[kind]["sent"] += 1

    def turn(self, kind, n):
        i = self.kind_turn[kind]
        self.kind_turn[kind] += 1
        return i % n

    # --- one exchange on a fresh connection

    def probe(self, kind, variant, payload, statuses, close_ok, check_headers=None, cseq=None):
        try:
            sock = self.target.connect()
        except OSError as e:
            self.record(kind, variant, False, payload, f"connect: {e}")
            return
        # A variant the receiver has already left unanswered 3 times is known bad: wait less for it, so
        # that one bug does not stretch the run to minutes.
        slow = self.timeouts[(kind, variant)] >= 3
        conn = Conn(sock, self.target.timeout / 20 if slow else self.target.timeout)
        msg, got, late = None, "", None
        sent_at = time.monotonic()
        sent = (sent_at, time.strftime("%H:%M:%S"))
        try:
            try:
                sock.sendall(payload)
            except socket.timeout:
                pass  # the receiver stopped reading: its answer may already be there
            except (BrokenPipeError, ConnectionResetError):
                pass  # it closed early: an answer may still be buffered
            try:
                msg = conn.read_message(with_body=False)
                got = msg.start
            except (OSError, Closed) as e:
                got = describe_error(e)
                if isinstance(e, socket.timeout):
                    self.timeouts[(kind, variant)] += 1
                    if not slow:
                        late = self.late_answer(conn, sent_at)
        finally:
            sock.close()
        self.answer_time(kind, variant, time.monotonic() - sent_at)
        if late:
            got += f"; {late}"
        if msg is None:
            closed = got.startswith(("closed", "reset"))
            self.record(kind, variant, closed and close_ok, payload, got,
                        "" if closed and close_ok else f"wanted {sorted(statuses)}", sent=sent)
            return
        if msg.status not in statuses:
            self.record(kind, variant, False, payload, got, f"wanted {sorted(statuses)}", sent=sent)
            return
        if check_headers and not self.args.status_only:
            if cseq is not None and msg.headers.get("cseq") != str(cseq):
                self.record(kind, variant, False, payload, got,
                            f"CSeq not echoed (got {msg.headers.get('cseq')!r}, sent {cseq})", sent=sent)
                return
            for h in check_headers:
                if h not in msg.headers:
                    self.record(kind, variant, False, payload, got, f"no {h} header", sent=sent)
                    return
        self.record(kind, variant, True)

    def late_answer(self, conn, sent_at):
        """After a timeout, whether the answer came late (the receiver stalled) or not at all (it was lost).
        Within the run's budget for such waits only; None past it."""
        if self.late_budget <= 0:
            return None
        waited = time.monotonic()
        conn.timeout = min(LATE_WAIT, self.late_budget)
        try:
            msg = conn.read_message(with_body=False)
            return f"answered {time.monotonic() - sent_at:.2f} s after the request: {msg.start}"
        except (OSError, Closed) as e:
            return f"then {describe_error(e)} after {time.monotonic() - sent_at:.2f} s"
        finally:
            self.late_budget -= time.monotonic() - waited

    def answer_time(self, kind, variant, seconds):
        """Keeps the slowest exchanges, with when they were, to match with the receiver's log."""
        self.slowest.append({"s": round(seconds, 3), "kind": kind, "variant": variant,
                             "at_s": round(time.monotonic() - self.started, 3), "wall": time.strftime("%H:%M:%S")})
        self.slowest.sort(key=lambda e: -e["s"])
        del self.slowest[SLOWEST:]

    # --- kinds

    def k_garbage(self):
        rng = self.rng
        variants = ["binary", "texty", "dollar_bad_length", "lone_dollar", "nul", "request_then_binary",
                    "only_newlines", "binary_no_newline"]
        v = variants[self.turn("garbage", len(variants))]
        n = rng.randint(1, 4000)
        if v == "binary":
            data = rng.randbytes(n)
        elif v == "texty":
            alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 :;/*$\r\n\t=-"
            data = bytes(rng.choice(alphabet) for _ in range(n))
        elif v == "dollar_bad_length":
            # `$`, a channel, a length that does not match what follows (bigger, or cut short).
            claimed = rng.choice((0xFFFF, 8193, rng.randint(13, 0xFFFF)))
            data = b"$" + bytes([rng.randint(0, 255)]) + struct.pack(">H", claimed)
            data += rng.randbytes(rng.randint(0, min(claimed - 1, 3996)))
        elif v == "lone_dollar":
            data = rng.choice((b"$", b"$\x00", b"$\x00\xff"))
        elif v == "nul":
            data = b"\x00" * n
        elif v == "request_then_binary":
            data = b"OPTIONS * RTSP/1.0\r\n" + rng.randbytes(n)
        elif v == "only_newlines":
            data = b"\r\n" * (n // 2 + 1)
        else:
            data = bytes(b for b in rng.randbytes(n) if b not in (10, 13)) or b"\x01"
        try:
            sock = self.target.connect()
        except OSError as e:
            self.by_kind["garbage"] += 1
            self.counts["unexpected"] += 1
            self.detail["garbage"]["unexpected"] += 1
            self.example("garbage", v, data, f"connect: {e}", "")
            return
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        self.garbage.add(sock)
        self.sent("garbage")

    def k_unknown_method(self):
        rng = self.rng
        names = ["FOO", "BREW", "XYZZY", "M-SEARCH", "OPTIONSX", "PURGE"]
        i = self.turn("unknown_method", len(names) + 1)
        if i < len(names):
            method = names[i]
        else:
            method = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ_") for _ in range(rng.randint(3, 16)))
            if method in KNOWN_METHODS:
                method = "FOO"
        uri = rng.choice(("*", self.target.url, self.target.url + "streamid=0"))
        cseq = rng.randint(0, 2**31 - 1)
        payload = request(method, uri, cseq)
        self.probe("unknown_method", method, payload, {501}, False, check_headers=("public",), cseq=cseq)

    def k_content_length(self):
        rng = self.rng
        variants = [("huge", "99999999999", {413}), ("3MiB", str(3 * 1024 * 1024), {413}),
                    ("limit_plus_1", "2097153", {413}),
                    ("overflow", "184467440737095516160000", {413, 400}),
                    ("negative", "-1", {400, 413})]
        v, length, statuses = variants[self.turn("content_length", len(variants))]
        method, ctype = rng.choice((("SET_PARAMETER", "text/parameters"), ("GET_PARAMETER", "text/parameters"),
                                    ("ANNOUNCE", "application/sdp"), ("OPTIONS", "text/plain")))
        payload = request(method, self.target.url if method != "OPTIONS" else "*", rng.randint(1, 9999),
                          [("Content-Type", ctype), ("Content-Length", length)])
        if v in ("3MiB", "limit_plus_1"):
            payload += b"volume: -3\r\n" * rng.randint(0, 20000)  # some of the body, up to ~240 KiB
        self.probe("content_length", v, payload, statuses, True)

    def k_oversize_head(self):
        rng = self.rng
        variants = ["long_start_line", "long_start_line_unterminated", "big_header_section",
                    "giant_header_line_unterminated", "many_header_lines", "many_header_lines_lf"]
        v = variants[self.turn("oversize_head", len(variants))]
        if v.startswith("long_start_line"):
            uri = self.target.url + "a" * rng.randint(1100, 6000)
            payload = f"OPTIONS {uri} RTSP/1.0".encode()
            if v == "long_start_line":
                payload += b"\r\nCSeq: 1\r\n\r\n"
        elif v == "big_header_section":
            lines = rng.randint(5, 40)
            each = (rng.randint(17 * 1024, 40 * 1024) // lines) + 1
            hdrs = [(f"X-Filler-{k}", "f" * each) for k in range(lines)]
            payload = request("OPTIONS", "*", 1, hdrs)
        elif v == "giant_header_line_unterminated":
            payload = b"OPTIONS * RTSP/1.0\r\nCSeq: 1\r\nX-Giant: " + b"g" * rng.randint(17 * 1024, 64 * 1024)
        else:
            hdrs = [(f"X-H{k}", str(k)) for k in range(rng.randint(66, 400))]
            payload = request("OPTIONS", "*", 1, hdrs)
            if v == "many_header_lines_lf":
                payload = payload.replace(b"\r\n", b"\n")
        self.probe("oversize_head", v, payload, {400, 431}, True)

    def k_bad_cseq(self):
        rng = self.rng
        variants = [("missing", "OPTIONS", None), ("missing", "GET_PARAMETER", None),
                    ("missing", "ANNOUNCE", None), ("abc", "OPTIONS", "abc"), ("empty", "OPTIONS", ""),
                    ("1a", "OPTIONS", "1a"), ("hex", "OPTIONS", "0x10"), ("decimal_point", "OPTIONS", "1.5"),
                    ("two_numbers", "GET_PARAMETER", "1 2"), ("arabic_digits", "OPTIONS", "\u0661\u0662"),
                    ("control_chars", "OPTIONS", "\x01\x02")]
        v, method, value = variants[self.turn("bad_cseq", len(variants))]
        uri = "*" if method == "OPTIONS" else self.target.url
        hdrs = [("User-Agent", "rtsp-abuse.py")]
        body = b""
        if method == "ANNOUNCE":
            hdrs.append(("Content-Type", "application/sdp"))
            body = VALID_SDP
        if value is not None:
            hdrs.insert(0, ("CSeq", value))
        payload = request(method, uri, None, hdrs, body)
        self.probe("bad_cseq", f"{v}:{method}", payload, {400}, False)

    def k_bad_sdp(self):
        rng = self.rng
        base = list(SDP_LINES)

        def replace(prefix, new):
            return [new if line.startswith(prefix) else line for line in base]

        media_at = base.index("m=audio 0 RTP/AVP 96")
        variants = [
            ("no_v", sdp(base[1:]), {400, 415}, []),
            ("v_not_first", sdp(base[1:3] + ["v=0"] + base[3:]), {400, 415}, []),
            ("v_1", sdp(["v=1"] + base[1:]), {400, 415}, []),
            ("no_m_audio", sdp(base[:media_at] + ["m=video 0 RTP/AVP 96", "a=rtpmap:96 H264/90000"]),
             {400, 415}, []),
            ("no_m_at_all", sdp(base[:media_at]), {400, 415}, []),
            ("empty_body", b"", {400, 415}, []),
            ("rtpmap_no_encoding", sdp(replace("a=rtpmap", "a=rtpmap:96")), {400, 415}, []),
            ("rtpmap_no_rate", sdp(replace("a=rtpmap", "a=rtpmap:96 opus")), {400, 415}, []),
            ("rtpmap_bad_pt", sdp(replace("a=rtpmap", "a=rtpmap:xx opus/48000/2")), {400, 415}, []),
            ("rtpmap_bad_rate", sdp(replace("a=rtpmap", "a=rtpmap:96 opus/abc/2")), {400, 415}, []),
            ("rtpmap_empty_name", sdp(replace("a=rtpmap", "a=rtpmap:96 /48000/2")), {400, 415}, []),
            ("binary_junk", None, {400, 415}, []),
            ("v0_then_binary", None, {400, 415}, []),
            ("nul_in_lines", sdp(base[:media_at] + ["m=audio\x00 0 RTP/AVP 96", "a=rtpmap:96 opus\x00/48000/2"]),
             {400, 415}, []),
            ("pcmu", sdp(replace("a=rtpmap", "a=rtpmap:96 PCMU/8000")), {400, 415}, []),
            ("static_pcmu", sdp(base[:media_at] + ["m=audio 0 RTP/AVP 0"]), {400, 415}, []),
            ("static_l16_44k", sdp(base[:media_at] + [f"m=audio 0 RTP/AVP {rng.choice((10, 11))}"]),
             {400, 415}, []),
            ("l16_44100", sdp(replace("a=rtpmap", "a=rtpmap:96 L16/44100/2")), {400, 415}, []),
            ("l16_3ch", sdp(replace("a=rtpmap", "a=rtpmap:96 L16/48000/3")), {400, 415}, []),
            ("opus_mono", sdp(replace("a=rtpmap", "a=rtpmap:96 opus/48000/1")), {400, 415}, []),
            ("aac", sdp(replace("a=rtpmap", "a=rtpmap:96 mpeg4-generic/44100/2")), {400, 415}, []),
            ("pt_without_rtpmap", sdp(replace("m=audio", "m=audio 0 RTP/AVP 97")), {400, 415}, []),
            ("latency_low", VALID_SDP, {400}, [("Lyre-Latency", "5")]),
            ("latency_high", VALID_SDP, {400}, [("Lyre-Latency", "99999")]),
            ("latency_junk", VALID_SDP, {400}, [("Lyre-Latency", "abc")]),
        ]
        v, body, statuses, extra = variants[self.turn("bad_sdp", len(variants))]
        if v == "binary_junk":
            body = rng.randbytes(rng.randint(1, 4000))
        elif v == "v0_then_binary":
            body = b"v=0\r\n" + bytes(b for b in rng.randbytes(rng.randint(1, 2000)) if b != ord("m"))
        cseq = rng.randint(1, 99999)
        hdrs = [("Content-Type", "application/sdp"), ("User-Agent", "rtsp-abuse.py")] + extra
        hdrs.append(("Content-Length", str(len(body))))  # also when 0
        payload = request("ANNOUNCE", self.target.url, cseq, hdrs) + body
        self.probe("bad_sdp", v, payload, statuses, False, check_headers=(), cseq=cseq)

    # --- media

    def _end_media(self, rude=False):
        m, self.media = self.media, None
        if m is None or not m.alive:
            return
        ok, why, stats = m.check(want_stats=m.transport != "bare")
        if stats is not None:
            self.media_stats = (self.media_stats + [{"transport": m.transport, "status": stats[0],
                                                     "stats": stats[1][:300]}])[-2:]
        if ok and rude:
            return m.cut_frame_and_close()
        if ok and m.transport == "bare":
            m.close()
        elif ok:
            ok, why = m.teardown()
        if not ok:
            self._media_failure(m, why)
        return None

    def _media_failure(self, m, why):
        m.read_notice()
        m.close()
        if m.taken_over:
            self.media_info["taken_over"] += 1
            return
        self.media_info["checks_failed"] += 1
        # Turn the last bad input of this session into `unexpected`: the receiver did not survive it.
        self.counts["sent"] -= 1
        self.detail["media"]["sent"] -= 1
        self.counts["unexpected"] += 1
        self.detail["media"]["unexpected"] += 1
        self.example("media", f"{m.transport}:" + ",".join(m.since_check[-6:]), b"", why,
                     "media session died or lost sync after these packets")

    def k_media(self):
        self.media_inputs += 1
        if self.media is not None and self.media.alive and self.media_in_session >= MEDIA_PER_SESSION:
            rude = self.media.transport == "tcp" and self.tcp_sessions_ended % 2 == 1
            if self.media.transport == "tcp":
                self.tcp_sessions_ended += 1
            name = self._end_media(rude=rude)
            if name:  # the rude end is itself a bad input
                self.sent("media")
                self.media_info[name] += 1
                return
        if self.media is None or not self.media.alive:
            if self.media is not None:
                self.media_info["sessions_lost"] += 1
                self.media = None
            transport = ("udp", "tcp")[self.media_transport_turn % 2]
            self.media_transport_turn += 1
            if self.media_inputs < self.media_blocked_until:
                transport = "bare"
            m = MediaSession(self.target, transport, self.rng)
            try:
                m.open()
            except SetupError as e:
                self.media_info["setup_failures"] += 1
                if len(self.media_setup_errors) < 3:
                    self.media_setup_errors.append(f"{transport}: {e}")
                self.media_blocked_until = self.media_inputs + MEDIA_PER_SESSION
                m = MediaSession(self.target, "bare", self.rng)
                try:
                    m.open()
                except SetupError as e2:
                    self.record("media", "connect", False, b"", str(e2))
                    return
            self.media = m
            self.media_in_session = 0
            self.media_info[f"sessions_{m.transport}"] += 1
        m = self.media
        m.send_bad()
        self.sent("media")
        self.media_in_session += 1
        if not m.alive or m.sent % MEDIA_CHECK_EVERY == 0:
            if m.alive:
                ok, why, _ = m.check()
            else:
                ok, why = False, "connection closed while sending"
            if ok:
                self.media_info["checks_ok"] += 1
                m.since_check = []
            else:
                self._media_failure(m, why)

    # --- the run

    def quiesce(self):
        """No session, no abuse connection: a state in which the receiver's fds can be compared."""
        self._end_media()
        self.garbage.drain()

    def check_health(self):
        self.health_checks += 1
        ok, seen = health(self.target)
        if not ok:
            time.sleep(0.3)
            ok2, seen2 = health(self.target)
            if len(self.health_failures) < 5:
                self.health_failures.append({"after_inputs": sum(self.by_kind.values()), "got": seen,
                                             "retry": seen2})
            ok = ok2
        return ok

    def measure(self, target_fds=None):
        pid = self.args.pid
        if pid is None:
            return None, None
        # Let the receiver notice the connections we closed: wait (briefly) for its fd count to settle.
        last, stable, deadline = None, 0, time.monotonic() + 2.0
        while time.monotonic() < deadline:
            n = proc_fds(pid)
            if n is None or (target_fds is not None and n <= target_fds):
                last = n
                break
            stable = stable + 1 if n == last else 0
            last = n
            if target_fds is None and stable >= 3:
                break
            time.sleep(0.1)
        return last, proc_rss_kib(pid)

    def run(self):
        started = time.monotonic()
        runners = [self.k_garbage, self.k_unknown_method, self.k_content_length, self.k_oversize_head,
                   self.k_bad_cseq, self.k_bad_sdp, self.k_media]
        fds_start = rss_start = None
        healthy = True
        stopped_early = False
        warmup = min(WARMUP, self.args.count)
        for i in range(self.args.count):
            runners[i % len(runners)]()
            self.garbage.poll(0)
            done = i + 1
            if done == warmup and self.args.pid is not None:
                self.quiesce()
                fds_start, rss_start = self.measure()
            if done % HEALTH_EVERY == 0 and done != self.args.count:
                if not self.check_health():
                    healthy = False
                    if not self.check_health():  # still down: stop, nothing more to learn
                        stopped_early = True
                        break
        self.quiesce()
        if not self.check_health():
            healthy = False
        fds_end, rss_end = self.measure(target_fds=fds_start)
        if self.args.pid is None:
            fds_end = rss_end = None
        inputs = sum(self.by_kind.values())
        return {
            "inputs": inputs,
            "by_kind": {k: self.by_kind[k] for k in KINDS},
            "ok": self.counts["ok"],
            "unexpected": self.counts["unexpected"],
            "sent": self.counts["sent"],
            "unexpected_examples": self.examples,
            "slowest": self.slowest,
            "healthy": healthy,
            "fds_start": fds_start,
            "fds_end": fds_end,
            "rss_kib_start": rss_start,
            "rss_kib_end": rss_end,
            "results_by_kind": {k: dict(self.detail[k]) for k in KINDS},
            "garbage": {"closed_by_receiver": self.garbage.closed, "left_open": self.garbage.left_open,
                        "replies": dict(self.garbage.replies)},
            "media": dict(self.media_info, setup_errors=self.media_setup_errors, last_stats=self.media_stats),
            "health_checks": self.health_checks,
            "health_failures": self.health_failures,
            "stopped_early": stopped_early,
            "seed": self.args.seed,
            "elapsed_s": round(time.monotonic() - started, 2),
        }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="Prints one JSON line. Exit 0 when it ran, 2 when HOST:PORT "
                                        "could not be reached at the start.")
    ap.add_argument("host")
    ap.add_argument("port", type=int)
    ap.add_argument("--count", type=int, default=10000, help="bad inputs to send (default 10000)")
    ap.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    ap.add_argument("--pid", type=int, help="receiver pid: report its open fds and VmRSS")
    ap.add_argument("--timeout", type=float, default=1.0, help="socket timeout in seconds (default 1)")
    ap.add_argument("--status-only", action="store_true",
                    help="judge answers by status code only (skip the CSeq echo and 501 Public checks)")
    args = ap.parse_args()
    try:
        abuser = Abuser(args)
    except OSError as e:
        print(f"rtsp-abuse: cannot resolve {args.host}: {e}", file=sys.stderr)
        return 2
    for attempt in range(3):
        try:
            abuser.target.pick()
            break
        except OSError as e:
            if attempt == 2:
                print(f"rtsp-abuse: cannot connect to {args.host}:{args.port}: {e}", file=sys.stderr)
                return 2
            time.sleep(0.3)
    print(json.dumps(abuser.run()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
