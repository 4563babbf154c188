#!/usr/bin/env python3
"""Relays UDP, or RTSP and the media ports it sets up, with delay, jitter, reordering, duplication and loss.

Between a sender and a receiver, for test networks without netem.

Usage: udp-relay.py --listen HOST:PORT --forward HOST:PORT [--pair] [IMPAIRMENTS] [--stats FILE] [--ready FILE]
       udp-relay.py --rtsp HOST:PORT --forward HOST:PORT [IMPAIRMENTS] [--stats FILE] [--ready FILE]
IMPAIRMENTS: [--delay MS] [--jitter MS] [--reorder PCT] [--duplicate PCT] [--drop PCT] [--burst N/PERIOD]
             [--seed N]

UDP mode (--listen), for each relayed port: the listen socket is bound to --listen and takes datagrams from
clients (the sender); each one is sent on to --forward from an upstream socket, bound to an ephemeral port
on the --listen host. Replies (e.g. RTCP from the receiver) are whatever the upstream socket receives, from
any source (only the forward peer knows its port), and whatever the listen socket receives from the
--forward address itself; they go back at once and unimpaired, through the listen socket, to the last
client address seen on that port (counted as "unroutable" and dropped while no client has been seen).
--pair relays listen port P+1 to forward port Q+1 as well (RTCP), unimpaired both ways.

RTSP mode (--rtsp), for a sender that learns the receiver's ports from SETUP: it accepts RTSP (TCP)
connections on HOST:PORT and proxies each to --forward (the receiver's RTSP port), from a socket bound on
the --rtsp host, byte for byte both ways, except that in each response from the receiver (a message whose
start line begins "RTSP/") a Transport header's server_port=X-Y (or server_port=X, meaning X-(X+1)) makes
it open a relay pair as --pair does, listen ports P,P+1 on the --rtsp host forwarding to X and Y (X+1) on
the --forward host, RTP on P impaired, RTCP on P+1 not, and rewrites it to server_port=P-(P+1) (P alone
for the one-port form). Only the port numbers change, in the header block, so the body and its
Content-Length pass unchanged. Requests from the sender, requests from the receiver and interleaved
"$" frames pass unchanged; a message may span reads or share one. A response header block over 64 KiB
is passed through unparsed (not rewritten), resuming at the next message; an unreadable Content-Length
makes the rest of that connection pass unparsed. When either side closes (or fails), what was read from
it still goes to the other side (which is read meanwhile only to see it close), then both sockets and
the connection's relay pairs close; datagrams still queued on those relays count as dropped. Reading a
side pauses while 1 MiB waits to go to the other. The receiver's own RTCP to the
sender's client ports does not pass through the relay. The nth RTP relay opened (n = 0, 1, ...) draws its
impairments from its own generator, seeded --seed + n when --seed is given.

Impairments, client to forward on the first (RTP) port only: a datagram is due at arrival + --delay +
uniform(0, --jitter) ms; with --reorder % it is held (delay + jitter + 5) ms more, so it lands after its
successors; with --duplicate % a copy follows 1 ms after it; with --drop % it is dropped; --burst
N/PERIOD drops the last N of every PERIOD datagrams (e.g. 5/50). Four random numbers are drawn per
datagram whatever the settings, so a given --seed gives the same decisions. At most 10000 datagrams are
queued (over all relays); more are dropped as "overflowed".

--ready FILE gets the bound listen port(s), space-separated on one line, once bound (written atomically):
in RTSP mode, the RTSP port. On SIGTERM or SIGINT it exits 0, printing the counters as one JSON line and
writing them to --stats FILE: received, forwarded, dropped, duplicated, reordered, replies, overflowed,
unroutable, errors, pending (still queued at exit), summed over ports (in RTSP mode over every relay
opened, closed ones included), and per listen port under "ports"; in RTSP mode also "connections"
(accepted) and "rewritten" (responses whose server_port was rewritten). Copies count as forwarded, so
received + duplicated = forwarded + dropped + overflowed + pending + failed sends (counted in errors)."""
import argparse
import errno
import heapq
import json
import os
import random
import re
import selectors
import signal
import socket
import sys
import time

MAX_DATAGRAM = 65535
MAX_QUEUED = 10000
READS_PER_WAKE = 64  # then the queue gets a turn, so a flood cannot starve due datagrams
COUNTERS = ("received", "forwarded", "dropped", "duplicated", "reordered", "replies", "overflowed",
            "unroutable", "errors")
MAX_HEADER = 64 * 1024  # a longer RTSP header block passes through unparsed
MAX_BUFFERED = 1 << 20  # per direction of a proxied connection; reading the other side pauses beyond it
TCP_READ = 65536
MAX_LINE = 1024  # while skipping an oversized header block, longer lines are not looked at
HEADER_END = re.compile(rb"\r?\n\r?\n")
SERVER_PORT = re.compile(r"((?:^|(?<=[;\s]))server_port\s*=\s*)(\d+)(?:(\s*-\s*)(\d+))?", re.IGNORECASE)
DIGITS = re.compile(r"[0-9]+")


def host_port(text):
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


def percent(text):
    value = float(text)
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"expected a percentage 0-100, got {text!r}")
    return value / 100


def millis(text):
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected milliseconds >= 0, got {text!r}")
    return value / 1000


def burst(text):
    n, sep, period = text.partition("/")
    if not sep or not n.isdigit() or not period.isdigit() or int(period) == 0 or int(n) > int(period):
        raise argparse.ArgumentTypeError(f"expected N/PERIOD with 0 <= N <= PERIOD > 0, got {text!r}")
    return int(n), int(period)


def resolve(host, port, family=0, kind=socket.SOCK_DGRAM):
    info = socket.getaddrinfo(host, port, family, kind)
    return info[0][0], info[0][4]


def with_port(address, port):
    return (address[0], port) + tuple(address[2:])


class Impairment:
    def __init__(self, args, seed_offset=0):
        self.delay, self.jitter = args.delay, args.jitter
        self.reorder, self.duplicate, self.drop = args.reorder, args.duplicate, args.drop
        self.burst = args.burst
        self.rng = random.Random(None if args.seed is None else args.seed + seed_offset)


class Relay:
    def __init__(self, family, listen, forward, impairment):
        self.forward = forward[:2]
        self.forward_addr = forward
        self.impairment = impairment
        self.client = None
        self.index = 0  # client datagrams seen, for --burst
        self.closed = False
        self.counters = dict.fromkeys(COUNTERS, 0)
        self.listen = socket.socket(family, socket.SOCK_DGRAM)
        self.upstream = socket.socket(family, socket.SOCK_DGRAM)
        try:
            self.listen.bind(listen)
            self.upstream.bind(with_port(listen, 0))  # the receiver takes media only from the RTSP peer's IP
        except OSError:
            self.close()
            raise
        for sock in (self.listen, self.upstream):
            sock.setblocking(False)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)  # best effort: capped by rmem_max
        self.port = self.listen.getsockname()[1]

    def close(self):
        self.closed = True
        self.listen.close()
        self.upstream.close()


def open_pair(family, listen, forward, rtcp_forward, impairment):
    """An impaired relay on P and an unimpaired one on P+1; with listen port 0, the first free pair."""
    for _ in range(100):
        rtp = Relay(family, listen, forward, impairment)
        try:
            return [rtp, Relay(family, with_port(listen, rtp.port + 1), rtcp_forward, None)]
        except OSError:
            rtp.close()
            if listen[1] != 0:
                raise
    raise OSError("no free listen port pair")


class Relayer:
    def __init__(self, relays, wakeup=None):
        self.relays = []
        self.retired = []  # closed relays, still counted in the stats
        self.stopping = False  # set by the signal handler; `wakeup` (set_wakeup_fd's socket) ends the select
        self.queue = []  # (due, seq, relay, data); seq keeps equal due times in arrival order
        self.seq = 0
        self.selector = selectors.DefaultSelector()
        for relay in relays:
            self.add_relay(relay)
        if wakeup is not None:
            self.selector.register(wakeup, selectors.EVENT_READ, None)

    def add_relay(self, relay):
        self.relays.append(relay)
        self.selector.register(relay.listen, selectors.EVENT_READ, (relay, True))
        self.selector.register(relay.upstream, selectors.EVENT_READ, (relay, False))

    def remove_relay(self, relay):
        """Closes it; its queued datagrams count as dropped."""
        self.selector.unregister(relay.listen)
        self.selector.unregister(relay.upstream)
        relay.close()
        self.relays.remove(relay)
        self.retired.append(relay)
        kept = [entry for entry in self.queue if entry[2] is not relay]
        relay.counters["dropped"] += len(self.queue) - len(kept)
        if len(kept) != len(self.queue):
            heapq.heapify(kept)
            self.queue = kept

    def watch(self, sock, events, data):
        """Registers, modifies or (events 0) unregisters sock."""
        try:
            key = self.selector.get_key(sock)
        except KeyError:
            key = None
        if not events:
            if key is not None:
                self.selector.unregister(sock)
        elif key is None:
            self.selector.register(sock, events, data)
        elif key.events != events:
            self.selector.modify(sock, events, data)

    def send(self, sock, data, address, relay, counter):
        try:
            sock.sendto(data, address)
            relay.counters[counter] += 1
        except OSError:
            relay.counters["errors"] += 1

    def schedule(self, relay, due, data):
        if len(self.queue) >= MAX_QUEUED:
            relay.counters["overflowed"] += 1
            return
        heapq.heappush(self.queue, (due, self.seq, relay, data))
        self.seq += 1

    def from_client(self, relay, data, now):
        counters = relay.counters
        counters["received"] += 1
        index = relay.index
        relay.index += 1
        imp = relay.impairment
        if imp is None:
            self.send(relay.upstream, data, relay.forward_addr, relay, "forwarded")
            return
        r_drop, r_reorder, r_duplicate, r_jitter = (imp.rng.random() for _ in range(4))
        n, period = imp.burst
        if (n and index % period >= period - n) or r_drop < imp.drop:
            counters["dropped"] += 1
            return
        due = now + imp.delay + r_jitter * imp.jitter
        if r_reorder < imp.reorder:
            due += imp.delay + imp.jitter + 0.005
            counters["reordered"] += 1
        self.schedule(relay, due, data)
        if r_duplicate < imp.duplicate:
            counters["duplicated"] += 1
            self.schedule(relay, due + 0.001, data)

    def reply(self, relay, data):
        if relay.client is None:
            relay.counters["unroutable"] += 1
        else:
            self.send(relay.listen, data, relay.client, relay, "replies")

    def read(self, sock, relay, is_listen):
        for _ in range(READS_PER_WAKE):
            if relay.closed:  # by an earlier event of the same select
                return
            try:
                data, source = sock.recvfrom(MAX_DATAGRAM)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # e.g. ICMP unreachable reported on a later read
                relay.counters["errors"] += 1
                continue
            if is_listen and source[:2] != relay.forward:
                relay.client = source
                self.from_client(relay, data, time.monotonic())
            else:
                self.reply(relay, data)

    def flush(self, now):
        while self.queue and self.queue[0][0] <= now:
            _, _, relay, data = heapq.heappop(self.queue)
            self.send(relay.upstream, data, relay.forward_addr, relay, "forwarded")

    def run(self):
        while not self.stopping:
            now = time.monotonic()
            self.flush(now)
            timeout = max(0.0, self.queue[0][0] - now) if self.queue else None
            for key, mask in self.selector.select(timeout):
                if key.data is None:
                    drain(key.fileobj)
                elif isinstance(key.data, tuple):
                    relay, is_listen = key.data
                    self.read(key.fileobj, relay, is_listen)
                else:
                    key.data(mask)  # an RTSP listener or connection

    def stats(self):
        pending = {}
        for _, _, relay, _ in self.queue:
            pending[relay.port] = pending.get(relay.port, 0) + 1
        ports = {}
        for relay in self.retired + self.relays:  # a port reused after a close is summed
            port = ports.setdefault(str(relay.port), dict.fromkeys(COUNTERS + ("pending",), 0))
            for name, value in relay.counters.items():
                port[name] += value
        for port, count in pending.items():
            ports[str(port)]["pending"] += count
        total = {name: sum(p[name] for p in ports.values()) for name in COUNTERS + ("pending",)}
        total["ports"] = ports
        return total


class ResponseRewriter:
    """The receiver-to-sender byte stream of one RTSP connection: passes it on, rewriting server_port in
    responses' Transport headers through open_pair(rtp_port, rtcp_port) -> relay port P or None."""

    def __init__(self, open_pair):
        self.open_pair = open_pair
        self.buffer = bytearray()
        self.scanned = 0  # of buffer, for the end of the header block
        self.remaining = 0  # of a body or a "$" frame, passed through as it comes
        self.raw = False  # the rest of the stream passes unparsed
        self.skipping = False  # through an oversized header block, looking only for its end and length
        self.line = bytearray()
        self.line_long = False
        self.skip_length = None  # the skipped block's Content-Length, if any
        self.skip_bad = False  # an unreadable or conflicting one
        self.rewritten = 0

    def feed(self, data):
        out = bytearray()
        self.buffer += data
        buf = self.buffer
        while buf:
            if self.raw:
                out += buf
                buf.clear()
            elif self.remaining:
                take = min(self.remaining, len(buf))
                out += buf[:take]
                del buf[:take]
                self.remaining -= take
            elif self.skipping:
                self.skip(buf, out)
            elif buf[0] in b"\r\n":  # stray line ends between messages
                out.append(buf[0])
                del buf[:1]
            elif buf[0] == 0x24:  # "$", channel, 16-bit length, data
                if len(buf) < 4:
                    break
                self.remaining = int.from_bytes(buf[2:4], "big")
                out += buf[:4]
                del buf[:4]
            else:
                match = HEADER_END.search(buf, max(0, self.scanned - 3))
                end = match.end() if match else None
                if end is None and len(buf) <= MAX_HEADER:
                    self.scanned = len(buf)
                    break
                self.scanned = 0
                if end is None or end > MAX_HEADER:
                    self.skipping, self.skip_length, self.skip_bad = True, None, False
                    self.line.clear()
                    self.line_long = False
                    continue
                head = bytes(buf[:end])
                del buf[:end]
                head, length = self.process(head)
                out += head
                if length is None:
                    self.raw = True
                else:
                    self.remaining = length
        return bytes(out)

    def finish(self):
        """What is still held, unchanged, when the stream ends."""
        rest = bytes(self.buffer)
        self.buffer.clear()
        return rest

    def skip(self, buf, out):
        """Passes an oversized header block through, line by line, keeping only its Content-Length."""
        newline = buf.find(b"\n")
        part = buf if newline < 0 else buf[:newline + 1]
        if len(self.line) + len(part) <= MAX_LINE:
            self.line += part
        else:
            self.line_long = True
        out += part
        del buf[:len(part)]
        if newline < 0:
            return
        line = self.line.rstrip(b"\r\n")
        long_line = self.line_long
        self.line.clear()
        self.line_long = False
        if long_line:
            return
        if not line:
            self.skipping = False
            if self.skip_bad:
                self.raw = True
            else:
                self.remaining = self.skip_length or 0
            return
        name, sep, value = line.decode("latin-1").partition(":")
        if sep and name.strip().lower() == "content-length":
            length = self.content_length(value, self.skip_length)
            if length is None:
                self.skip_bad = True
            else:
                self.skip_length = length

    @staticmethod
    def content_length(value, seen):
        value = value.strip()
        if not DIGITS.fullmatch(value) or (seen is not None and seen != int(value)):
            return None
        return int(value)

    def process(self, head):
        """(header block, rewritten where due; body length, None if unreadable)."""
        lines = head.decode("latin-1").split("\n")
        response = lines[0].startswith("RTSP/")
        length, seen, changed = 0, None, False
        for i in range(1, len(lines)):
            name, sep, value = lines[i].partition(":")
            if not sep:
                continue
            key = name.strip().lower()
            if key == "content-length":
                seen = self.content_length(value, seen)
                if seen is None:
                    return head, None
                length = seen
            elif key == "transport" and response:
                new = SERVER_PORT.sub(self.rewrite, value)
                if new != value:
                    lines[i] = name + sep + new
                    changed = True
        if not changed:
            return head, length
        self.rewritten += 1
        return "\n".join(lines).encode("latin-1"), length

    def rewrite(self, match):
        rtp = int(match.group(2))
        rtcp = int(match.group(4)) if match.group(4) is not None else rtp + 1
        if not 0 < rtp <= 65535 or not 0 < rtcp <= 65535:
            return match.group(0)
        port = self.open_pair(rtp, rtcp)
        if port is None:
            return match.group(0)
        if match.group(4) is None:
            return f"{match.group(1)}{port}"
        return f"{match.group(1)}{port}{match.group(3)}{port + 1}"


class Connection:
    """One proxied RTSP connection: client (the sender) <-> server (the receiver)."""

    def __init__(self, proxy, client):
        self.proxy = proxy
        self.relayer = proxy.relayer
        self.client = client
        self.server = None
        self.connected = False
        self.closed = False
        self.draining = None  # the socket still being sent what waits for it, once the other side ended
        self.to_client = bytearray()
        self.to_server = bytearray()
        self.relays = []
        self.rewriter = ResponseRewriter(self.open_pair)
        client.setblocking(False)
        self.server = socket.socket(proxy.family, socket.SOCK_STREAM)
        try:
            self.server.setblocking(False)
            self.server.bind(with_port(proxy.listen, 0))  # the receiver's RTSP peer: the relays' address
            error = self.server.connect_ex(proxy.forward)
            if error not in (0, errno.EINPROGRESS, errno.EAGAIN, errno.EWOULDBLOCK):
                raise OSError(error, os.strerror(error))
        except OSError:
            self.server.close()
            raise
        self.update()

    def open_pair(self, rtp, rtcp):
        proxy = self.proxy
        try:
            pair = open_pair(proxy.family, with_port(proxy.listen, 0), with_port(proxy.udp_forward, rtp),
                             with_port(proxy.udp_forward, rtcp), Impairment(proxy.args, proxy.opened))
        except OSError as error:
            print(f"udp-relay.py: cannot open a relay pair for {rtp}-{rtcp}: {error}", file=sys.stderr,
                  flush=True)
            return None
        proxy.opened += 1
        for relay in pair:
            self.relays.append(relay)
            self.relayer.add_relay(relay)
        return pair[0].port

    def update(self):
        if self.closed:
            return
        read, write = selectors.EVENT_READ, selectors.EVENT_WRITE
        if self.draining is not None:  # the other side has ended
            other = self.server if self.draining is self.client else self.client
            self.relayer.watch(other, 0, None)
            events = read | write  # read only to see it end; what it sends now is discarded
            self.relayer.watch(self.draining, events, self.on_client if other is self.server else self.on_server)
            return
        client_events = (read if len(self.to_server) < MAX_BUFFERED else 0) | (write if self.to_client else 0)
        if not self.connected:
            server_events = write
        else:
            server_events = (read if len(self.to_client) < MAX_BUFFERED else 0) | (write if self.to_server else 0)
        self.relayer.watch(self.client, client_events, self.on_client)
        self.relayer.watch(self.server, server_events, self.on_server)

    @staticmethod
    def write(sock, buffer):
        """False if the socket failed."""
        try:
            while buffer:
                sent = sock.send(buffer)
                del buffer[:sent]
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            return False
        return True

    def on_client(self, mask):
        if not self.closed:
            self.on_event(self.client, self.server, self.to_client, self.to_server, mask)

    def on_server(self, mask):
        if self.closed:
            return
        if not self.connected:
            error = self.server.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if error:
                print(f"udp-relay.py: cannot connect to {self.proxy.forward[0]}:{self.proxy.forward[1]}: "
                      f"{os.strerror(error)}", file=sys.stderr, flush=True)
                return self.close()
            self.connected = True
            mask = selectors.EVENT_WRITE
        self.on_event(self.server, self.client, self.to_server, self.to_client, mask)

    def on_event(self, sock, other, out, other_out, mask):
        """sock is ready; out is what waits to go to it, other_out what waits to go to the other side."""
        if mask & selectors.EVENT_WRITE and not self.write(sock, out):
            return self.close()
        if self.draining is sock and not out:
            return self.close()
        if mask & selectors.EVENT_READ:
            try:
                data = sock.recv(TCP_READ)
            except (BlockingIOError, InterruptedError):
                data = None
            except OSError:  # e.g. reset: ended as well
                data = b""
            if data == b"":
                return self.end(sock, out, other, other_out)
            if data and self.draining is None:
                other_out += self.rewriter.feed(data) if sock is self.server else data
                if (other is self.client or self.connected) and not self.write(other, other_out):
                    return self.close()
        self.update()

    def end(self, sock, out, other, other_out):
        """sock has ended (or failed): what is read goes on to the other side, then all closes."""
        if self.draining is not None:
            return self.close()
        if sock is self.server:
            other_out += self.rewriter.finish()
        self.write(sock, out)  # as far as it takes it now
        if (other is self.server and not self.connected) or not self.write(other, other_out) or not other_out:
            return self.close()
        self.draining = other
        self.update()

    def close(self):
        """Closes both sockets, after a last try at sending what waits, and the connection's relays."""
        if self.closed:
            return
        self.closed = True
        self.to_client += self.rewriter.finish()
        self.write(self.client, self.to_client)
        if self.connected:
            self.write(self.server, self.to_server)
        for sock in (self.client, self.server):
            self.relayer.watch(sock, 0, None)
            sock.close()
        for relay in self.relays:
            self.relayer.remove_relay(relay)
        self.proxy.rewritten += self.rewriter.rewritten
        self.rewriter.rewritten = 0
        self.proxy.connections.discard(self)


class RTSPProxy:
    def __init__(self, args, relayer):
        self.args = args
        self.relayer = relayer
        self.family, self.listen = resolve(*args.rtsp, kind=socket.SOCK_STREAM)
        _, self.forward = resolve(*args.forward, self.family, socket.SOCK_STREAM)
        _, self.udp_forward = resolve(args.forward[0], 0, self.family)
        self.opened = 0  # relay pairs, for the seeds
        self.accepted = 0
        self.rewritten = 0  # by closed connections
        self.connections = set()
        self.sock = socket.socket(self.family, socket.SOCK_STREAM)
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.sock.bind(self.listen)
            self.sock.listen(64)
        except OSError:
            self.sock.close()
            raise
        self.sock.setblocking(False)
        self.port = self.sock.getsockname()[1]
        relayer.selector.register(self.sock, selectors.EVENT_READ, self.on_accept)

    def on_accept(self, mask):
        for _ in range(READS_PER_WAKE):
            try:
                client, _ = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as error:  # e.g. out of descriptors; the listener stays
                print(f"udp-relay.py: accept: {error}", file=sys.stderr, flush=True)
                return
            self.accepted += 1
            try:
                self.connections.add(Connection(self, client))
            except OSError as error:
                print(f"udp-relay.py: cannot connect to {self.forward[0]}:{self.forward[1]}: {error}",
                      file=sys.stderr, flush=True)
                client.close()

    def stats(self, stats):
        stats["connections"] = self.accepted
        stats["rewritten"] = self.rewritten + sum(c.rewriter.rewritten for c in self.connections)
        return stats


def drain(sock):
    try:
        while sock.recv(4096):
            pass
    except (BlockingIOError, InterruptedError):
        pass


def write_atomically(path, text):
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def bind_relays(args, impairment):
    family, listen = resolve(*args.listen)
    _, forward = resolve(*args.forward, family)
    if not args.pair:
        return [Relay(family, listen, forward, impairment)]
    return open_pair(family, listen, forward, with_port(forward, forward[1] + 1), impairment)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--listen", type=host_port, metavar="HOST:PORT", help="relay UDP from this address")
    mode.add_argument("--rtsp", type=host_port, metavar="HOST:PORT",
                      help="proxy RTSP from this address, relaying the UDP each SETUP answer names")
    parser.add_argument("--forward", type=host_port, required=True, metavar="HOST:PORT")
    parser.add_argument("--delay", type=millis, default=0.0, metavar="MS")
    parser.add_argument("--jitter", type=millis, default=0.0, metavar="MS")
    parser.add_argument("--reorder", type=percent, default=0.0, metavar="PCT")
    parser.add_argument("--duplicate", type=percent, default=0.0, metavar="PCT")
    parser.add_argument("--drop", type=percent, default=0.0, metavar="PCT")
    parser.add_argument("--burst", type=burst, default=(0, 1), metavar="N/PERIOD")
    parser.add_argument("--seed", type=int, default=None, metavar="N")
    parser.add_argument("--pair", action="store_true", help="also relay port P+1 to Q+1 (RTCP), unimpaired")
    parser.add_argument("--stats", metavar="FILE")
    parser.add_argument("--ready", metavar="FILE")
    args = parser.parse_args()
    if args.rtsp and args.pair:
        parser.error("--pair is for --listen (--rtsp always relays pairs)")
    if args.forward[1] == 0 or (args.pair and args.forward[1] == 65535):
        parser.error("--forward needs a real port (and room for P+1 with --pair)")

    # The handler only sets a flag (so no counter is left half-updated); the byte Python then writes to
    # the wakeup socket ends the select, and the loop stops.
    stopping = []
    wake_read, wake_write = socket.socketpair()
    for sock in (wake_read, wake_write):
        sock.setblocking(False)
    signal.set_wakeup_fd(wake_write.fileno(), warn_on_full_buffer=False)

    def stop(signum, frame):
        stopping.append(signum)
        relayer.stopping = True

    relayer = Relayer([])
    proxy = None
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    # A parent may start us with these blocked (a test runner's thread mask is inherited): take them.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    listen = args.rtsp or args.listen
    try:
        if args.rtsp:
            relayer = Relayer([], wake_read)
            proxy = RTSPProxy(args, relayer)
            ports = [proxy.port]
        else:
            relayer = Relayer(bind_relays(args, Impairment(args)), wake_read)
            ports = [r.port for r in relayer.relays]
    except OSError as error:
        sys.exit(f"udp-relay.py: cannot bind {listen[0]}:{listen[1]}: {error}")
    relayer.stopping = bool(stopping)
    try:
        if args.ready:
            write_atomically(args.ready, " ".join(str(port) for port in ports) + "\n")
        relayer.run()
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        stats = relayer.stats()
        if proxy is not None:
            stats = proxy.stats(stats)
        stats = json.dumps(stats)
        if args.stats:
            write_atomically(args.stats, stats + "\n")
        print(stats, flush=True)


if __name__ == "__main__":
    sys.exit(main())
