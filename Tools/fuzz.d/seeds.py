#!/usr/bin/env python3
"""Writes the fuzzing corpora's seeds (Tools/fuzz.d/corpus/TARGET/) from the wire formats in Protocol/:
what a Lyre sender and receiver say to each other, and Protocol/vectors/txt. Re-run after a format changes;
the files are kept in the repository."""
import glob, json, os, struct

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
corpus = os.path.join(here, "corpus")

def put(target, name, data):
    d = os.path.join(corpus, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())

sdp = "v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=Lyre\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 0 RTP/AVP 96\r\n" \
      "a=rtpmap:96 opus/48000/2\r\na=fmtp:96 sprop-stereo=1\r\na=control:streamid=0\r\n"
put("sdp", "opus", sdp)
put("sdp", "l16", sdp.replace("opus/48000/2", "L16/48000/2"))
put("sdp", "opus-srtp", sdp + "a=crypto:1 AEAD_AES_128_GCM inline:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGw==\r\n")

url = "rtsp://127.0.0.1:7700/lyre"
requests = {
    "options": f"OPTIONS {url} RTSP/1.0\r\nCSeq: 1\r\nLyre-Sender-Name: alice@laptop\r\n\r\n",
    "announce": f"ANNOUNCE {url} RTSP/1.0\r\nCSeq: 2\r\nContent-Type: application/sdp\r\nContent-Length: {len(sdp)}\r\n\r\n{sdp}",
    "setup": f"SETUP {url}/streamid=0 RTSP/1.0\r\nCSeq: 3\r\nTransport: RTP/AVP/UDP;unicast;client_port=6000-6001;mode=record\r\n\r\n",
    "record": f"RECORD {url} RTSP/1.0\r\nCSeq: 4\r\nSession: 12345678\r\nRTP-Info: seq=1;rtptime=0\r\n\r\n",
    "set-parameter": f"SET_PARAMETER {url} RTSP/1.0\r\nCSeq: 5\r\nSession: 12345678\r\nContent-Type: text/parameters\r\n"
                     "Content-Length: 15\r\n\r\nvolume: -30.0\r\n",
    "response": "RTSP/1.0 200 OK\r\nCSeq: 3\r\nSession: 12345678;timeout=60\r\nTransport: RTP/AVP/UDP;unicast;server_port=7000-7001\r\n\r\n",
}
for name, text in requests.items():
    put("rtsp", name, b"\x30" + text.encode())
put("rtsp", "interleaved", b"\x02" + b"$\x00\x00\x0c" + bytes(range(12)) + requests["options"].encode())

rtp = struct.pack("!BBHII", 0x80, 96, 1000, 48000, 0x1234ABCD) + bytes(range(40))
put("rtp", "opus", rtp)
put("rtp", "marker-csrc", struct.pack("!BBHII", 0x81, 0xE0, 65535, 0, 1) + struct.pack("!I", 7) + b"x" * 10)
put("fec", "parity", struct.pack("!BBHII", 0x80, 97, 5, 960, 0x5A5A5A5A) + bytes([0x40, 0, 0, 4]) + bytes(range(24)))

def rtcp(pt, count, body):
    return struct.pack("!BBH", 0x80 | count, pt, len(body) // 4) + body
sr = rtcp(200, 0, struct.pack("!IQIII", 1, 0xE000000000000000, 48000, 10, 1000))
rr = rtcp(201, 1, struct.pack("!I", 2) + struct.pack("!IIIIII", 1, 0x05000010, 1000, 3, 0, 0))
nack = rtcp(205, 1, struct.pack("!IIHH", 2, 1, 1000, 0x0005))
app_sent = rtcp(204, 1, struct.pack("!I", 1) + b"LYRE" + struct.pack("!HH", 1000, 0))
app_reception = rtcp(204, 0, struct.pack("!I", 2) + b"LYRE" + struct.pack("!IIIIII", 1, 3, 2, 1, 0, 0))
put("rtcp", "sr-sent", sr + app_sent)
put("rtcp", "rr-nack", rr + nack)
put("rtcp", "rr-reception", rr + app_reception)

put("timing", "request", b"LYRT" + bytes([1, 1, 0, 0]) + struct.pack("!II", 7, 0) + struct.pack("!QQQ", 1, 0, 0))
put("timing", "response", b"LYRT" + bytes([1, 2, 0, 0]) + struct.pack("!II", 7, 0) + struct.pack("!QQQ", 1, 2, 3))

for path in glob.glob(os.path.join(root, "Protocol", "vectors", "txt", "*.bin")):
    with open(path, "rb") as f:
        put("txt", os.path.basename(path), f.read())

put("now-playing", "track", json.dumps({"title": "One", "artist": "Ann", "album": "Tests", "duration": 14.0,
                                        "position": 1.5, "rate": 1.0, "queueIndex": 0, "queueCount": 2}))
put("now-playing", "png", b"\x89PNG\r\n\x1a\n" + bytes(24))
put("parameters", "volume", "volume: -30.0\r\n")
put("parameters", "command", "remote-command: seek\r\nposition: 90.5\r\n")
put("parameters", "session-end", "session-end: taken-over\r\n")
put("parameters", "transport", "RTP/AVP/UDP;unicast;client_port=6000-6001;mode=record")
put("parameters", "rtp-info", "seq=1;rtptime=0")
put("control", "volume", "volume 50")
put("control", "seek", "seek 90")
put("control", "now-playing", "now-playing --json")
put("headers", "fec", "pt=97;row=5")
put("headers", "channels", "left")
put("headers", "feedback", "nack, report")
put("sender-parameters", "commands", "remote-commands: play,pause,nextTrack,skipForward\r\nskip-interval: 15\r\n")
put("sender-parameters", "rooms", "room: Kitchen\r\nroom: Living Room\r\nroom: Caf\u00e9 \"A=B\"\r\n")

# Pairing (Protocol/pairing.md §3): prefix-free fields, each after its LEB128 length.
def pfc(*fields):
    out = b""
    for f in fields:
        n = len(f)
        while True:
            out += bytes([(n & 0x7f) | (0x80 if n > 0x7f else 0)])
            n >>= 7
            if n == 0:
                break
        out += f
    return out
party = pfc(bytes(range(32)), b"0123456789abcdef0123456789abcdef", "Küche".encode())
put("pairing", "start", pfc(b"alice@laptop"))
put("pairing", "started", pfc(bytes(16), party))
put("pairing", "exchange", pfc(bytes(range(16)), pfc(bytes(range(32, 64)), party)))
put("pairing", "exchanged", pfc(pfc(bytes(range(32, 64)), party), bytes(64)))
put("pairing", "confirm", pfc(bytes(range(64))))
