#!/usr/bin/env python3
"""Relays UDP (RTP) between a sender and a receiver, adding delay, jitter, reordering, duplication and loss,
for test networks without netem.

Usage: udp-relay.py --listen HOST:PORT --forward HOST:PORT [--delay MS] [--jitter MS] [--reorder PCT]
                    [--duplicate PCT] [--drop PCT] [--burst N/PERIOD] [--seed N] [--pair]
                    [--stats FILE] [--ready FILE]

Sockets, for each relayed port: the listen socket is bound to --listen and takes datagrams from clients
(the sender); each one is sent on to --forward from an upstream socket, bound to an ephemeral port on the
--listen host. Replies (e.g. RTCP from the receiver) are whatever the upstream socket receives, from any
source (only the forward peer knows its port), and whatever the listen socket receives from the --forward
address itself; they go back at once and unimpaired, through the listen socket, to the last client
address seen on that port (counted as "unroutable" and dropped while no client has been seen).
--pair relays listen port P+1 to forward port Q+1 as well (RTCP), unimpaired both ways.

Impairments, client to forward on the first port only: a datagram is due at arrival + --delay + uniform(0,
--jitter) ms; with --reorder % it is held (delay + jitter + 5) ms more, so it lands after its successors;
with --duplicate % a copy follows 1 ms after it; with --drop % it is dropped; --burst N/PERIOD drops the
last N of every PERIOD datagrams (e.g. 5/50). Four random numbers are drawn per datagram whatever the
settings, so a given --seed gives the same decisions. At most 10000 datagrams are queued; more are dropped
as "overflowed".

--ready FILE gets the bound listen port(s), space-separated on one line, once bound (written atomically).
On SIGTERM or SIGINT it exits 0, printing the counters as one JSON line and writing them to --stats FILE:
received, forwarded, dropped, duplicated, reordered, replies, overflowed, unroutable, errors, pending (still
queued at exit), summed over ports, and per listen port under "ports". Copies count as forwarded, so
received + duplicated = forwarded + dropped + overflowed + pending + failed sends (counted in errors)."""
import argparse
import heapq
import json
import os
import random
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


def resolve(host, port, family=0):
    info = socket.getaddrinfo(host, port, family, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
    return info[0][0], info[0][4]


class Impairment:
    def __init__(self, args):
        self.delay, self.jitter = args.delay, args.jitter
        self.reorder, self.duplicate, self.drop = args.reorder, args.duplicate, args.drop
        self.burst = args.burst
        self.rng = random.Random(args.seed)


class Relay:
    def __init__(self, family, listen, forward, impairment):
        self.forward = forward[:2]
        self.forward_addr = forward
        self.impairment = impairment
        self.client = None
        self.index = 0  # client datagrams seen, for --burst
        self.counters = dict.fromkeys(COUNTERS, 0)
        self.listen = socket.socket(family, socket.SOCK_DGRAM)
        self.upstream = socket.socket(family, socket.SOCK_DGRAM)
        self.listen.bind(listen)
        self.upstream.bind((listen[0], 0) + tuple(listen[2:]))
        for sock in (self.listen, self.upstream):
            sock.setblocking(False)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)  # best effort: capped by rmem_max
        self.port = self.listen.getsockname()[1]

    def close(self):
        self.listen.close()
        self.upstream.close()


class Relayer:
    def __init__(self, relays, wakeup=None):
        self.relays = relays
        self.stopping = False  # set by the signal handler; `wakeup` (set_wakeup_fd's socket) ends the select
        self.queue = []  # (due, seq, relay, data); seq keeps equal due times in arrival order
        self.seq = 0
        self.selector = selectors.DefaultSelector()
        for relay in relays:
            self.selector.register(relay.listen, selectors.EVENT_READ, (relay, True))
            self.selector.register(relay.upstream, selectors.EVENT_READ, (relay, False))
        if wakeup is not None:
            self.selector.register(wakeup, selectors.EVENT_READ, None)

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
            for key, _ in self.selector.select(timeout):
                if key.data is None:
                    drain(key.fileobj)
                else:
                    relay, is_listen = key.data
                    self.read(key.fileobj, relay, is_listen)

    def stats(self):
        pending = {}
        for _, _, relay, _ in self.queue:
            pending[relay.port] = pending.get(relay.port, 0) + 1
        ports = {str(r.port): dict(r.counters, pending=pending.get(r.port, 0)) for r in self.relays}
        total = {name: sum(p[name] for p in ports.values()) for name in COUNTERS + ("pending",)}
        total["ports"] = ports
        return total


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
    rtcp_forward = (forward[0], forward[1] + 1) + tuple(forward[2:])
    for _ in range(100):  # with port 0, look for a free pair P, P+1
        rtp = Relay(family, listen, forward, impairment)
        rtcp_listen = (listen[0], rtp.port + 1) + tuple(listen[2:])
        try:
            return [rtp, Relay(family, rtcp_listen, rtcp_forward, None)]
        except OSError:
            rtp.close()
            if listen[1] != 0:
                raise
    raise OSError("no free listen port pair")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--listen", type=host_port, required=True, metavar="HOST:PORT")
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
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        relays = bind_relays(args, Impairment(args))
    except OSError as error:
        sys.exit(f"udp-relay.py: cannot bind {args.listen[0]}:{args.listen[1]}: {error}")
    relayer = Relayer(relays, wake_read)
    relayer.stopping = bool(stopping)
    try:
        if args.ready:
            write_atomically(args.ready, " ".join(str(r.port) for r in relayer.relays) + "\n")
        relayer.run()
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        stats = json.dumps(relayer.stats())
        if args.stats:
            write_atomically(args.stats, stats + "\n")
        print(stats, flush=True)


if __name__ == "__main__":
    sys.exit(main())
