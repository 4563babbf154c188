#!/usr/bin/env python3
"""Play the session handshake of Protocol/streaming.md §3 against a Lyre receiver, as a plain RTSP sender
would, and print what it answered as one JSON object: the statuses and headers the spec states, for a test
to assert. Usage: rtsp-conformance.py HOST PORT

Reuses rtsp-abuse.py's connection and message reading (the same wire code, not a second one)."""
import importlib.util
import json
import os
import random
import sys

spec = importlib.util.spec_from_file_location("rtsp_abuse", os.path.join(os.path.dirname(__file__), "rtsp-abuse.py"))
abuse = importlib.util.module_from_spec(spec)
spec.loader.exec_module(abuse)


def session(target):
    s = abuse.MediaSession(target, "udp", random.Random(7))
    s.conn = abuse.Conn(target.connect(), target.timeout)
    return s


def announce(s, headers=()):
    return s.req("ANNOUNCE", s.target.url, [("Content-Type", "application/sdp")] + list(headers), abuse.VALID_SDP, expect=None)


def main():
    target = abuse.Target(sys.argv[1], int(sys.argv[2]), 5)
    out = {}
    # §3 ANNOUNCE: Lyre-Latency 20…2000, out of range 400 (each on a connection of its own).
    for latency in (19, 20, 2000, 2001):
        s = session(target)
        out[f"announce_latency_{latency}"] = announce(s, [("Lyre-Latency", str(latency))]).status
        s.close()
    # §3 states: RECORD before SETUP is out of order.
    s = session(target)
    announce(s)
    out["record_before_setup"] = s.req("RECORD", target.url, [("RTP-Info", "seq=1;rtptime=1")], expect=None).status
    s.close()
    # The handshake, as the spec's figure has it.
    s = session(target)
    announce(s, [("Lyre-Latency", "2000")])
    s._bind_udp(s.conn.sock.getsockname()[0])
    port = s.rtp_sock.getsockname()[1]
    reply = s.req("SETUP", target.url + "streamid=0",
                  [("Transport", f"RTP/AVP/UDP;unicast;client_port={port}-{port + 1};mode=record;ssrc=1234ABCD")], expect=None)
    out["setup_status"] = reply.status
    out["setup_session"] = reply.headers.get("session", "")
    out["setup_transport"] = reply.headers.get("transport", "")
    s.session = out["setup_session"].split(";")[0].strip() or None
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
    out["get_unknown"] = s.req("GET_PARAMETER", target.url, params, b"loudness\r\n", expect=None).status
    for name in ("output-latency", "output-delay", "volume"):
        reply = s.req("GET_PARAMETER", target.url, params, f"{name}\r\n".encode(), expect=None)
        out[f"get_{name}"] = [reply.status, reply.body.decode("utf-8", "replace").strip()]
    out["keep_alive"] = s.req("GET_PARAMETER", target.url, expect=None).status
    out["teardown"] = s.req("TEARDOWN", target.url, expect=None).status
    s.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
