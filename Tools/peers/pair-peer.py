#!/usr/bin/env python3
"""A pairing sender written from Protocol/pairing.md alone, to hold a Lyre receiver to what the spec says.

It pairs as the spec's tables and formulas say, computing CPace itself (libsodium's ristretto255 through ctypes,
SHA-512 and HMAC from Python's hashlib), so that the receiver's key-confirmation tag agreeing with the one computed
here shows that PRS, CI, sid, ADa/ADb, ISK and the tags are what §2 states, not only what both Lyre ends share.
Then, as the paired sender, it tries §6.1 and §6.3 over TLS with certificates it makes (Python's `cryptography`).

Runs, in order, each on a connection of its own (a failed run frees the one pairing slot when it closes):
  invalid_share     an exchange whose share is the identity element            (§3: 400)
  noncanonical      an exchange whose share is a non-canonical encoding        (§3: 400)
  wrong_pin         a full run with a PIN one off: the receiver's tag does not match the one computed here, and
                    the confirm that follows is refused                      (§2, §3: 403)
  pair              a full run with the PIN: tagB must equal the tag computed here; confirm answers 200
  tls_paired        TLS 1.3 with a self-signed Ed25519 certificate over the paired key: OPTIONS 200, the
                    receiver's certificate holds the key it paired with, ANNOUNCE with an AEAD_AES_128_GCM key 200
  other_suite       the same, ANNOUNCE with `a=crypto:1 AES_CM_128_HMAC_SHA1_80`            (§6.3: 415)
  expired           the paired key in a certificate expired in 2000, with other names and issuer: ANNOUNCE 200
  unpaired          another Ed25519 key: TLS and OPTIONS work, ANNOUNCE is refused (403 under `paired`)
  tls12             the paired certificate, but TLS 1.2 at most: the handshake fails
  ecdsa             an ECDSA P-256 certificate: the handshake fails, or nothing is answered over it

The PIN is read with --pin-command (e.g. `lyre remote --socket S pairing --json`), as a user reads the screen.
Prints one JSON object with each run's statuses and findings. Usage:
  pair-peer.py HOST PORT --pin-command CMD [--name NAME]
"""
import argparse
import base64
import ctypes
import ctypes.util
import datetime
import hashlib
import hmac
import importlib.util
import json
import os
import re
import secrets
import socket
import ssl
import subprocess
import sys
import tempfile
import time

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.x509.oid import NameOID

spec = importlib.util.spec_from_file_location("rtsp_abuse", os.path.join(os.path.dirname(__file__), "rtsp-abuse.py"))
abuse = importlib.util.module_from_spec(spec)
spec.loader.exec_module(abuse)

sodium = ctypes.CDLL(ctypes.util.find_library("sodium") or "libsodium.so.23")
if sodium.sodium_init() < 0:
    sys.exit("pair-peer: libsodium did not start")

DSI = b"CPaceRistretto255"
S_IN_BYTES = 128  # SHA-512's input block


def leb128(n):
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def pfc(*fields):
    """prefix_free_cat: each field after its length in LEB128."""
    return b"".join(leb128(len(f)) + f for f in fields)


def split(data, count):
    """The `count` fields of a prefix_free_cat, or ValueError."""
    fields, i = [], 0
    for _ in range(count):
        n, shift = 0, 0
        while True:
            byte = data[i]
            i += 1
            n |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        fields.append(data[i:i + n])
        i += n
    if i != len(data):
        raise ValueError(f"{len(data) - i} bytes left over")
    return fields


def generator(prs, ci, sid):
    """The draft's calculate_generator: the one-way map of SHA-512(DSI, PRS, zero padding, CI, sid)."""
    zpad = max(0, S_IN_BYTES - 1 - len(leb128(len(prs))) - len(prs) - len(leb128(len(DSI))) - len(DSI))
    string = pfc(DSI, prs, bytes(zpad), ci, sid)
    point = ctypes.create_string_buffer(32)
    sodium.crypto_core_ristretto255_from_hash(point, hashlib.sha512(string).digest())
    return point.raw


def scalar_mult(scalar, element):
    out = ctypes.create_string_buffer(32)
    if sodium.crypto_scalarmult_ristretto255(out, scalar, element) != 0:
        raise ValueError("an invalid element")
    return out.raw


def random_scalar():
    out = ctypes.create_string_buffer(32)
    sodium.crypto_core_ristretto255_scalar_random(out)
    return out.raw


class Sender:
    """The sender's long-term Ed25519 key, id and name, and the certificates made over keys."""

    def __init__(self, name):
        self.key = ed25519.Ed25519PrivateKey.generate()
        self.public = self.key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        self.id = secrets.token_hex(16)
        self.name = name.encode()
        self.party = pfc(self.public, self.id.encode(), self.name)
        self.scratch = tempfile.mkdtemp(prefix="pair-peer-")

    def certificate(self, key, tag, not_before=None, not_after=None, common_name="lyre sender"):
        """A self-signed certificate over `key`, written as PEM files; returns (cert path, key path)."""
        now = datetime.datetime.now(datetime.timezone.utc)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        issuer = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "an issuer nobody trusts")])
        builder = (x509.CertificateBuilder().subject_name(name).issuer_name(issuer).public_key(key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(not_before or now - datetime.timedelta(days=1))
                   .not_valid_after(not_after or now + datetime.timedelta(days=3650)))
        algorithm = None if isinstance(key, ed25519.Ed25519PrivateKey) else hashes.SHA256()
        certificate = builder.sign(key, algorithm)
        cert_path, key_path = os.path.join(self.scratch, f"{tag}.crt"), os.path.join(self.scratch, f"{tag}.key")
        with open(cert_path, "wb") as f:
            f.write(certificate.public_bytes(serialization.Encoding.PEM))
        with open(key_path, "wb") as f:
            f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        return cert_path, key_path


class Target:
    def __init__(self, host, port):
        self.host, self.port, self.timeout = host, port, 10
        self.url = f"rtsp://{host}:{port}/"
        self.cseq = 0

    def connect(self):
        return socket.create_connection((self.host, self.port), timeout=self.timeout)

    def ask(self, conn, method, uri, headers=(), body=b""):
        self.cseq += 1
        conn.sock.sendall(abuse.request(method, uri, self.cseq, list(headers), body))
        return conn.read_message()


def pair_step(target, conn, step, body):
    return target.ask(conn, "PAIR", target.url, [("Lyre-Pair", step), ("Content-Type", "application/octet-stream")], body)


def read_pin(command):
    """The PIN the receiver shows now, through `command`; waits up to 5 s for one."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        out = subprocess.run(command, shell=True, capture_output=True, text=True).stdout
        found = re.search(r'"pin"\s*:\s*"(\d{6})"', out) or re.search(r"\b(\d{6})\b", out)
        if found:
            return found.group(1)
        time.sleep(0.1)
    raise RuntimeError(f"no PIN from {command!r}")


def run(target, sender, pin_command, share=None, pin_offset=0):
    """One pairing run on a connection of its own. Returns what happened, as a dict."""
    result = {}
    conn = abuse.Conn(target.connect(), target.timeout)
    try:
        start = pair_step(target, conn, "start", pfc(sender.name))
        result["start"] = start.status
        if start.status != 200:
            result["error"] = start.headers.get("lyre-error")
            return result
        sid_b, party_b = split(start.body, 2)
        public_b, id_b, name_b = split(party_b, 3)
        result["receiver"] = {"public_key": public_b.hex(), "id": id_b.decode(), "name": name_b.decode()}
        result["sid_b_bytes"] = len(sid_b)
        pin = read_pin(pin_command)
        if pin_offset:
            pin = f"{(int(pin) + pin_offset) % 1_000_000:06d}"
        sid_a = secrets.token_bytes(16)
        sid = sid_a + sid_b
        ci = pfc(b"lyre-pair-1", public_b, sender.public)
        scalar = random_scalar()
        y_a = share if share is not None else scalar_mult(scalar, generator(pin.encode(), ci, sid))
        msg_a = pfc(y_a, sender.party)
        exchange = pair_step(target, conn, "exchange", pfc(sid_a, msg_a))
        result["exchange"] = exchange.status
        if exchange.status != 200:
            result["error"] = exchange.headers.get("lyre-error")
            return result
        msg_b, tag_b = split(exchange.body, 2)
        y_b, party_b_again = split(msg_b, 2)
        result["party_repeated"] = party_b_again == party_b
        k = scalar_mult(scalar, y_b)
        isk = hashlib.sha512(pfc(DSI + b"_ISK", sid, k) + msg_a + msg_b).digest()
        expected_b = hmac.new(isk, b"lyre-pair-1 confirm receiver", hashlib.sha512).digest()
        result["tag_b_matches"] = hmac.compare_digest(tag_b, expected_b)
        tag_a = hmac.new(isk, b"lyre-pair-1 confirm sender", hashlib.sha512).digest()
        confirm = pair_step(target, conn, "confirm", pfc(tag_a))
        result["confirm"] = confirm.status
        if confirm.status != 200:
            result["error"] = confirm.headers.get("lyre-error")
        return result
    finally:
        conn.sock.close()


def tls_connect(target, cert, key, maximum=ssl.TLSVersion.TLSv1_3):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # §6.1: no CA; the key is compared with the paired one below
    context.maximum_version = maximum
    context.load_cert_chain(cert, key)
    return context.wrap_socket(target.connect(), server_hostname=target.host)


def announce_body(suite=None):
    lines = list(abuse.SDP_LINES)
    if suite:
        lines.append(f"a=crypto:1 {suite} inline:{base64.b64encode(secrets.token_bytes(28)).decode()}")
    return abuse.sdp(lines)


def over_tls(target, cert, key, suite="AEAD_AES_128_GCM", maximum=ssl.TLSVersion.TLSv1_3):
    """OPTIONS then ANNOUNCE over TLS with this certificate; what was answered, or why the handshake failed."""
    result = {}
    try:
        sock = tls_connect(target, cert, key, maximum)
    except (ssl.SSLError, OSError) as error:
        return {"handshake": "failed", "why": str(error)[:200]}
    try:
        result["version"] = sock.version()
        server = x509.load_der_x509_certificate(sock.getpeercert(binary_form=True)).public_key()
        result["server_key"] = server.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw).hex() \
            if isinstance(server, ed25519.Ed25519PublicKey) else type(server).__name__
        conn = abuse.Conn(sock, target.timeout)
        result["options"] = target.ask(conn, "OPTIONS", "*").status
        answer = target.ask(conn, "ANNOUNCE", target.url, [("Content-Type", "application/sdp")], announce_body(suite))
        result["announce"] = answer.status
        result["announce_error"] = answer.headers.get("lyre-error")
    except (ssl.SSLError, OSError, abuse.Closed) as error:
        result.setdefault("handshake", "failed" if "options" not in result else "done")
        result["closed"] = str(error)[:200] or type(error).__name__
    finally:
        sock.close()
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("host")
    ap.add_argument("port", type=int)
    ap.add_argument("--pin-command", required=True)
    ap.add_argument("--name", default="pair-peer.py")
    a = ap.parse_args()
    target = Target(a.host, a.port)
    sender = Sender(a.name)
    report = {"sender": {"id": sender.id, "public_key": sender.public.hex()}}
    identity = bytes(32)
    non_canonical = bytes.fromhex("2b3c6b8c4f3800e7aef6864025b4ed79bd599117e427c41bd47d93d654b4a51c")
    report["invalid_share"] = run(target, sender, a.pin_command, share=identity)
    report["noncanonical"] = run(target, sender, a.pin_command, share=non_canonical)
    report["wrong_pin"] = run(target, sender, a.pin_command, pin_offset=1)
    report["pair"] = run(target, sender, a.pin_command)

    paired = sender.certificate(sender.key, "paired")
    report["tls_paired"] = over_tls(target, *paired)
    report["tls_paired"]["server_key_is_paired"] = report["tls_paired"].get("server_key") == report["pair"].get("receiver", {}).get("public_key")
    report["other_suite"] = over_tls(target, *paired, suite="AES_CM_128_HMAC_SHA1_80")
    old = datetime.datetime(1999, 1, 1, tzinfo=datetime.timezone.utc)
    expired = sender.certificate(sender.key, "expired", not_before=old, not_after=old + datetime.timedelta(days=365),
                                 common_name="not the sender's name")
    report["expired"] = over_tls(target, *expired)
    report["unpaired"] = over_tls(target, *sender.certificate(ed25519.Ed25519PrivateKey.generate(), "unpaired"))
    report["tls12"] = over_tls(target, *paired, maximum=ssl.TLSVersion.TLSv1_2)
    report["ecdsa"] = over_tls(target, *sender.certificate(ec.generate_private_key(ec.SECP256R1()), "ecdsa"))
    print(json.dumps(report))


if __name__ == "__main__":
    main()
