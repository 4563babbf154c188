#!/usr/bin/env python3
"""Writes the `_lyre._tcp` TXT record test vectors in Protocol/vectors/txt/.

Each vector is NAME.bin (the raw TXT RDATA) and NAME.json (what a reader must make of it); the JSON
schema is described in Protocol/discovery.md, section "Test vectors". The expected results are computed by
a small reference reader/writer below, written from Protocol/discovery.md, and every vector also states
by hand the facts it exists to test; the script refuses to write anything if the two disagree.

    Tools/gen-txt-vectors.py            # (re)write the vectors; stale NAME.* files are removed
    Tools/gen-txt-vectors.py --check    # exit 1 if the files on disk differ from what would be written

Standard library only. Output is deterministic.
"""

import argparse
import json
import math
import re
import sys
from pathlib import Path

OUT_DIR = Path(__file__).resolve().parent.parent / "Protocol" / "vectors" / "txt"

MAX_RDATA = 8900  # one mDNS packet (RFC 6762 §17), less room for headers and names
PROTOCOL_VERSION = 1
MAX_MODEL_BYTES = 64
MAX_SENDER_BYTES = 64
MUTED = -144.0
STATUSES = ("idle", "playing", "unavailable", "leaving")
OUTPUT_KINDS = ("speaker", "headphones", "line", "hdmi", "usb")

ID_A = "0123456789abcdef0123456789abcdef"
ID_B = "fedcba9876543210fedcba9876543210"


class Rejected(Exception):
    def __init__(self, error):
        super().__init__(error)
        self.error = error


# ---------------------------------------------------------------------------------------------------------
# TXT RDATA (RFC 6763 §6)


def parse_rdata(data):
    """The strings of TXT RDATA, without their length bytes. Raises Rejected('recordTooLarge'|'truncated')."""
    if len(data) > MAX_RDATA:
        raise Rejected("recordTooLarge")
    strings, i = [], 0
    while i < len(data):
        n = data[i]
        i += 1
        if i + n > len(data):
            raise Rejected("truncated")
        strings.append(bytes(data[i : i + n]))
        i += n
    return strings


def serialise(strings):
    out = bytearray()
    for s in strings:
        assert len(s) <= 255
        out.append(len(s))
        out += s
    return bytes(out)


def ascii_lower(b):
    return b + 32 if 0x41 <= b <= 0x5A else b


def value_for_key(strings, key):
    """(found, value): value is None for a boolean attribute. First occurrence wins; keys compare ASCII
    case-insensitively. Empty strings and strings starting with '=' have an empty key and match nothing."""
    wanted = key.lower().encode("ascii")
    for s in strings:
        eq = s.find(b"=")
        k, v = (s, None) if eq < 0 else (s[:eq], s[eq + 1 :])
        if len(k) == len(wanted) and all(ascii_lower(a) == b for a, b in zip(k, wanted)):
            return True, v
    return False, None


def text_for_key(strings, key):
    """The value as text; None when absent, boolean, or not valid UTF-8."""
    found, v = value_for_key(strings, key)
    if not found or v is None:
        return None
    try:
        return v.decode("utf-8", errors="strict")
    except UnicodeDecodeError:
        return None


# ---------------------------------------------------------------------------------------------------------
# Receiver attributes (Protocol/discovery.md)

INT_RE = re.compile(r"[+-]?[0-9]+\Z")  # what Swift's Int(String) accepts
DECIMAL_RE = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?\Z")


def parse_int(text):
    if not INT_RE.match(text):
        return None
    n = int(text)
    return n if -(2**63) <= n < 2**63 else None


def parse_number(text):
    if DECIMAL_RE.match(text):
        return float(text)
    # Swift's Double(String) also takes hex floats, inf and nan, where Python differs: keep them out.
    assert not re.search(r"(?i)inf|nan|0x|_|\s", text), f"vol={text!r}: not portable between readers"
    return None


def valid_volume(v):
    return v if v == MUTED or -30.0 <= v <= 0.0 else None


def device_id(text):
    lowered = text.lower()
    if len(lowered.encode("utf-8")) == 32 and all(c in "0123456789abcdef" for c in lowered):
        return lowered
    return None


def token_list(text):
    return [t for t in (text or "").split(",") if t]


def read_receiver(strings):
    """The receiver described by the record, or Rejected(error)."""
    v = text_for_key(strings, "v")
    if v is None:
        raise Rejected("missingVersion")
    version = parse_int(v)
    if version is None or version < 1:
        raise Rejected("invalidVersion")
    if version != PROTOCOL_VERSION:
        raise Rejected("unsupportedVersion")
    id_text = text_for_key(strings, "id")
    if id_text is None:
        raise Rejected("missingDeviceID")
    did = device_id(id_text)
    if did is None:
        raise Rejected("invalidDeviceID")
    st = text_for_key(strings, "st")
    status = st if st in STATUSES else None
    sender = (text_for_key(strings, "sn") or "") if status == "playing" else None
    ok = text_for_key(strings, "ok")
    vol = text_for_key(strings, "vol")
    volume = None
    if vol is not None:
        number = parse_number(vol)
        volume = valid_volume(number) if number is not None else None
    return {
        "version": version,
        "deviceID": did,
        "model": text_for_key(strings, "md") or "",
        "codecs": token_list(text_for_key(strings, "cn")),
        "features": token_list(text_for_key(strings, "ft")),
        "status": status,
        "sender": sender,
        "outputKind": ok if ok in OUTPUT_KINDS else None,
        "volume": volume,
        "keyFingerprint": fingerprint(text_for_key(strings, "pk")),
    }


def fingerprint(text):
    """pk: 16 lower-case hex digits, else absent."""
    if text is not None and len(text) == 16 and all(c in "0123456789abcdef" for c in text):
        return text
    return None


def cut(text, limit):
    """Cuts to at most `limit` UTF-8 bytes at a character boundary. (Code points here; the Swift writer
    cuts at grapheme boundaries. No vector relies on the difference.)"""
    out = ""
    for ch in text:
        if len((out + ch).encode("utf-8")) > limit:
            break
        out += ch
    return out


def format_volume(v):
    """At most one decimal, no trailing '.0'; tenths rounded half away from zero."""
    tenths = int(math.copysign(math.floor(abs(v * 10) + 0.5), v))
    whole, fraction = abs(tenths) // 10, abs(tenths) % 10
    sign = "-" if tenths < 0 else ""
    return f"{sign}{whole}" if fraction == 0 else f"{sign}{whole}.{fraction}"


def write_receiver(r):
    """Canonical order: v id md cn ft st [sn] ok vol pk; md, cn, ft always written, the rest only when set."""
    pairs = [("v", str(r["version"])), ("id", r["deviceID"]), ("md", cut(r["model"], MAX_MODEL_BYTES))]
    pairs += [("cn", ",".join(r["codecs"])), ("ft", ",".join(r["features"]))]
    if r["status"] is not None:
        pairs.append(("st", r["status"]))
        if r["status"] == "playing":
            pairs.append(("sn", cut(r["sender"] or "", MAX_SENDER_BYTES)))
    if r["outputKind"] is not None:
        pairs.append(("ok", r["outputKind"]))
    if r["volume"] is not None and valid_volume(r["volume"]) is not None:
        pairs.append(("vol", format_volume(r["volume"])))
    if r.get("keyFingerprint") is not None:
        pairs.append(("pk", r["keyFingerprint"]))
    return serialise([f"{k}={v}".encode("utf-8") for k, v in pairs])


def evaluate(data):
    """Everything NAME.json says about `data`, in schema order."""
    result = {"wellFormed": False, "roundTrip": False, "valid": False, "error": None, "canonical": False}
    try:
        strings = parse_rdata(data)
    except Rejected as e:
        result["error"] = e.error
        return result
    result["wellFormed"] = True
    result["roundTrip"] = serialise(strings) == data
    try:
        receiver = read_receiver(strings)
    except Rejected as e:
        result["error"] = e.error
        return result
    result["valid"] = True
    result["canonical"] = write_receiver(receiver) == data
    result["receiver"] = receiver
    return result


# ---------------------------------------------------------------------------------------------------------
# The vectors


def txt(*items):
    """RDATA from strings (str is UTF-8 encoded, bytes taken as they are), each given its length byte."""
    return serialise([i.encode("utf-8") if isinstance(i, str) else i for i in items])


def pad(n, key):
    """One string of exactly n bytes: `key=xxx…`."""
    s = (key + "=").encode("ascii")
    return s + b"x" * (n - len(s))


VECTORS = []


def vector(name, description, data, **expect):
    """`expect` holds the facts this vector is about: top-level keys (valid, error, canonical, …) or
    receiver keys (status, volume, …); they are checked against the reference reader."""
    VECTORS.append((name, description, data, expect))


CANONICAL_IDLE = txt(
    "v=1", "id=" + ID_A, "md=Lyre Receiver", "cn=opus,l16", "ft=", "st=idle", "ok=speaker", "vol=0")

vector(
    "canonical-with-key",
    "An idle receiver that advertises its key's fingerprint (pk, last in canonical order).",
    txt("v=1", "id=" + ID_A, "md=Lyre Receiver", "cn=opus,l16", "ft=", "st=idle", "ok=speaker", "vol=0",
        "pk=5f3a9c0e12b47d68"),
    valid=True, canonical=True, status="idle", keyFingerprint="5f3a9c0e12b47d68")

vector(
    "malformed-key-fingerprint",
    "A pk that is not 16 lower-case hex digits is ignored; the receiver is still valid, and its canonical form has no pk.",
    txt("v=1", "id=" + ID_A, "md=Lyre Receiver", "cn=opus,l16", "ft=", "st=idle", "ok=speaker", "vol=0",
        "pk=5F3A9C0E12B47D68"),
    valid=True, canonical=False, keyFingerprint=None)

vector(
    "canonical-idle",
    "An idle receiver with both codecs, as a receiver writes it (canonical order v id md cn ft st ok vol).",
    CANONICAL_IDLE,
    valid=True, canonical=True, deviceID=ID_A, model="Lyre Receiver", codecs=["opus", "l16"], features=[],
    status="idle", sender=None, outputKind="speaker", volume=0.0)

vector(
    "canonical-playing",
    "A playing receiver: sn follows st and carries the sender's name in UTF-8 (a curly apostrophe, "
    "U+2019); volume with one decimal.",
    txt("v=1", "id=" + ID_B, "md=Lyre Receiver", "cn=opus,l16", "ft=clock,meta", "st=playing",
        "sn=Alice\u2019s phone", "ok=hdmi", "vol=-12.5"),
    valid=True, canonical=True, deviceID=ID_B, features=["clock", "meta"], status="playing",
    sender="Alice\u2019s phone", outputKind="hdmi", volume=-12.5)

vector(
    "canonical-unavailable-muted",
    "An unavailable, muted receiver (vol=-144) with no codecs or features: cn and ft are written empty.",
    txt("v=1", "id=" + ID_A, "md=Lyre Receiver", "cn=", "ft=", "st=unavailable", "ok=usb", "vol=-144"),
    valid=True, canonical=True, codecs=[], features=[], status="unavailable", sender=None, outputKind="usb",
    volume=-144.0)

vector(
    "canonical-leaving",
    "A receiver about to withdraw announces st=leaving first; readers drop it at once.",
    txt("v=1", "id=" + ID_A, "md=Lyre Receiver", "cn=", "ft=", "st=leaving", "ok=speaker", "vol=0"),
    valid=True, canonical=True, codecs=[], features=[], status="leaving", outputKind="speaker", volume=0.0)

vector(
    "canonical-empty-capabilities",
    "Exactly what the current lyred writes: it cannot play yet, so cn and ft are empty.",
    txt("v=1", "id=" + ID_A, "md=Lyre Receiver", "cn=", "ft=", "st=idle", "ok=speaker", "vol=0"),
    valid=True, canonical=True, codecs=[], features=[], status="idle", outputKind="speaker", volume=0.0)

vector(
    "canonical-quiet-headphones",
    "A volume between -1 and 0 keeps its sign (vol=-0.5); one codec; empty model.",
    txt("v=1", "id=" + ID_B, "md=", "cn=opus", "ft=", "st=idle", "ok=headphones", "vol=-0.5"),
    valid=True, canonical=True, model="", codecs=["opus"], outputKind="headphones", volume=-0.5)

vector(
    "uppercase-keys-and-id",
    "Keys compare case-insensitively and the id may be upper case: V=1, ID=<upper-case hex>. The id reads "
    "lower-cased, so re-encoding does not reproduce the record.",
    txt("V=1", "ID=" + ID_A.upper(), "MD=Lyre Receiver", "Cn=opus,l16", "fT=", "St=idle", "OK=line",
        "Vol=0"),
    valid=True, canonical=False, deviceID=ID_A, model="Lyre Receiver", codecs=["opus", "l16"],
    status="idle", outputKind="line", volume=0.0)

vector(
    "duplicate-key-first-wins",
    "st appears twice (idle, then playing): the first occurrence wins, so the status is idle and sn is "
    "not read.",
    txt("v=1", "id=" + ID_A, "md=Lyre Receiver", "cn=opus,l16", "ft=", "st=idle", "st=playing",
        "sn=Bob", "ok=speaker", "vol=0"),
    valid=True, canonical=False, status="idle", sender=None)

vector(
    "boolean-and-unknown-keys",
    "A boolean attribute (x-future, no '=') and an unknown key (zz=1) are ignored; the record is valid.",
    txt("v=1", "id=" + ID_A, "md=Lyre Receiver", "cn=opus,l16", "ft=", "st=idle", "x-future", "zz=1",
        "ok=speaker", "vol=0"),
    valid=True, canonical=False, status="idle", outputKind="speaker", volume=0.0)

vector(
    "minimal",
    "Only the required keys v and id: every optional attribute reads as absent.",
    txt("v=1", "id=" + ID_A),
    valid=True, canonical=False, model="", codecs=[], features=[], status=None, sender=None,
    outputKind=None, volume=None)

vector(
    "unknown-status-and-kind",
    "Values this version does not understand read as absent: st=sleeping, ok=laser, vol=7 (out of "
    "range). The device is still listed.",
    txt("v=1", "id=" + ID_A, "md=Lyre Receiver", "cn=opus", "ft=", "st=sleeping", "ok=laser", "vol=7"),
    valid=True, canonical=False, status=None, outputKind=None, volume=None)

vector(
    "values-are-case-sensitive",
    "Keys are case-insensitive but st and ok values are not: st=IDLE and ok=HDMI are not understood and "
    "read as absent.",
    txt("v=1", "id=" + ID_A, "md=Lyre Receiver", "cn=opus", "ft=", "st=IDLE", "ok=HDMI", "vol=0"),
    valid=True, canonical=False, status=None, outputKind=None, volume=0.0)

vector(
    "volume-not-a-number",
    "vol=loud is not a number and reads as absent; everything else is understood.",
    txt("v=1", "id=" + ID_A, "md=Lyre Receiver", "cn=opus", "ft=", "st=idle", "ok=speaker", "vol=loud"),
    valid=True, canonical=False, status="idle", outputKind="speaker", volume=None)

vector(
    "volume-out-of-range",
    "vol=-31 is below -30 and is not the mute value -144: it reads as absent.",
    txt("v=1", "id=" + ID_A, "md=Lyre Receiver", "cn=opus", "ft=", "st=idle", "ok=speaker", "vol=-31"),
    valid=True, canonical=False, volume=None)

vector(
    "volume-non-canonical-form",
    "vol=-12.50 reads as -12.5; a receiver would write vol=-12.5, so the record is not canonical.",
    txt("v=1", "id=" + ID_A, "md=Lyre Receiver", "cn=opus", "ft=", "st=idle", "ok=speaker", "vol=-12.50"),
    valid=True, canonical=False, volume=-12.5)

vector(
    "invalid-utf8-sender",
    "sn holds bytes ff fe, which are not UTF-8: the sender name reads as absent (empty) while the status "
    "stays playing.",
    txt("v=1", "id=" + ID_A, "md=Lyre Receiver", "cn=opus", "ft=", "st=playing", b"sn=\xff\xfe",
        "ok=speaker", "vol=0"),
    valid=True, canonical=False, status="playing", sender="")

vector(
    "playing-without-sender",
    "st=playing with no sn: the sender name is empty. A receiver always writes sn (possibly empty) with "
    "st=playing, so this is not canonical.",
    txt("v=1", "id=" + ID_A, "md=Lyre Receiver", "cn=opus", "ft=", "st=playing", "ok=speaker", "vol=0"),
    valid=True, canonical=False, status="playing", sender="")

vector(
    "sender-while-idle",
    "sn is only meaningful with st=playing: with st=idle it is ignored.",
    txt("v=1", "id=" + ID_A, "md=Lyre Receiver", "cn=opus", "ft=", "st=idle", "sn=Alice", "ok=speaker",
        "vol=0"),
    valid=True, canonical=False, status="idle", sender=None)

vector(
    "lists-with-empty-tokens",
    "Empty tokens in cn and ft are skipped (cn=opus,,l16, and ft=,clock); unknown tokens are kept in "
    "the lists.",
    txt("v=1", "id=" + ID_A, "md=Lyre Receiver", "cn=opus,,l16,", "ft=,clock,x-new", "st=idle",
        "ok=speaker", "vol=0"),
    valid=True, canonical=False, codecs=["opus", "l16"], features=["clock", "x-new"])

vector(
    "model-over-64-bytes",
    "md longer than 64 bytes: readers take it whole (writers cut it, so re-encoding differs).",
    txt("v=1", "id=" + ID_A, "md=" + "Lyre Receiver, a model string made long enough to go past the 64-byte limit",
        "cn=", "ft=", "st=idle", "ok=speaker", "vol=0"),
    valid=True, canonical=False, model="Lyre Receiver, a model string made long enough to go past the 64-byte limit")

vector(
    "empty-string-in-middle",
    "A zero-length string between attributes is ignored; parsing and serialising keep it.",
    txt("v=1", "id=" + ID_A, "md=Lyre Receiver", "", "cn=opus,l16", "ft=", "st=idle", "ok=speaker",
        "vol=0"),
    wellFormed=True, roundTrip=True, valid=True, canonical=False, status="idle")

vector(
    "missing-version",
    "A complete record without v: rejected.",
    txt("id=" + ID_A, "md=Lyre Receiver", "cn=opus,l16", "ft=", "st=idle", "ok=speaker", "vol=0"),
    wellFormed=True, valid=False, error="missingVersion")

vector(
    "version-boolean",
    "v given as a boolean attribute (no '=') has no value, and being the first v it hides the later "
    "v=1: rejected as missing.",
    txt("v", "v=1", "id=" + ID_A),
    wellFormed=True, valid=False, error="missingVersion")

vector(
    "version-not-number",
    "v=one is not an integer: rejected.",
    txt("v=one", "id=" + ID_A),
    valid=False, error="invalidVersion")

vector(
    "version-zero",
    "v=0 is not a version (versions start at 1): rejected.",
    txt("v=0", "id=" + ID_A),
    valid=False, error="invalidVersion")

vector(
    "version-2",
    "v=2 is a future, incompatible version: rejected by version 1 readers.",
    txt("v=2", "id=" + ID_A, "md=Lyre Receiver", "cn=opus", "ft=", "st=idle", "ok=speaker", "vol=0"),
    valid=False, error="unsupportedVersion")

vector(
    "missing-id",
    "No id: rejected.",
    txt("v=1", "md=Lyre Receiver", "cn=opus", "ft=", "st=idle", "ok=speaker", "vol=0"),
    valid=False, error="missingDeviceID")

vector(
    "id-boolean",
    "id given as a boolean attribute (no '=') has no value: rejected as missing, not as invalid.",
    txt("v=1", "id"),
    valid=False, error="missingDeviceID")

vector(
    "short-id",
    "id=abc is not 32 hex digits: rejected.",
    txt("v=1", "id=abc"),
    valid=False, error="invalidDeviceID")

vector(
    "non-hex-id",
    "32 characters but one is 'g': rejected.",
    txt("v=1", "id=0123456789abcdef0123456789abcdeg"),
    valid=False, error="invalidDeviceID")

vector(
    "empty-rdata",
    "Zero bytes of RDATA: well formed (no attributes) but not a receiver.",
    b"",
    wellFormed=True, roundTrip=True, valid=False, error="missingVersion")

vector(
    "single-zero-byte",
    "A single empty string (00), how RFC 6763 §6.1 writes an empty TXT record: well formed, no "
    "attributes, not a receiver.",
    b"\x00",
    wellFormed=True, roundTrip=True, valid=False, error="missingVersion")

vector(
    "truncated",
    "The last length byte (10) points past the end of the RDATA (5 bytes follow): malformed.",
    txt("v=1", "id=" + ID_A) + b"\x0amd=Ly",
    wellFormed=False, roundTrip=False, valid=False, error="truncated", canonical=False)

# 4 + 36 = 40 bytes for v and id; 34 strings of 255 bytes (256 with the length byte) and one of 155.
AT_LIMIT = txt("v=1", "id=" + ID_A) + serialise([pad(255, f"p{i:02}") for i in range(34)] + [pad(155, "p34")])
assert len(AT_LIMIT) == MAX_RDATA

vector(
    "at-size-limit",
    "Exactly 8900 bytes (v, id and padding attributes p00..p34): the largest record accepted.",
    AT_LIMIT,
    wellFormed=True, roundTrip=True, valid=True, canonical=False)

vector(
    "over-size-limit",
    "8901 bytes (the at-size-limit record with one more padding byte): rejected as too large.",
    txt("v=1", "id=" + ID_A) + serialise([pad(255, f"p{i:02}") for i in range(34)] + [pad(156, "p34")]),
    wellFormed=False, roundTrip=False, valid=False, error="recordTooLarge")

vector(
    "too-large",
    "36 strings of 255 bytes (9216 bytes): more than one mDNS packet can carry, rejected as too large.",
    serialise([pad(255, f"p{i:02}") for i in range(36)]),
    wellFormed=False, roundTrip=False, valid=False, error="recordTooLarge")


vector(
    "value-contains-equals",
    "A value is everything after the first '=', so it may hold '=' signs: the model reads whole.",
    txt("v=1", "id=" + ID_A, "md=Room = 2=x", "cn=opus,l16", "ft=", "st=idle", "ok=speaker", "vol=0"),
    valid=True, canonical=True, model="Room = 2=x")

vector(
    "empty-key-strings-ignored",
    "Strings with an empty key ('=v=2' before the real v, and '=x') match no key and are ignored.",
    txt("=v=2", "v=1", "=x", "id=" + ID_A, "md=Lyre Receiver", "cn=opus,l16", "ft=", "st=idle", "ok=speaker",
        "vol=0"),
    valid=True, canonical=False, version=1, model="Lyre Receiver", status="idle")

vector(
    "keys-in-any-order",
    "The canonical-idle attributes in reverse order: readers do not depend on order.",
    txt("vol=0", "ok=speaker", "st=idle", "ft=", "cn=opus,l16", "md=Lyre Receiver", "id=" + ID_A, "v=1"),
    valid=True, canonical=False, deviceID=ID_A, model="Lyre Receiver", codecs=["opus", "l16"], features=[],
    status="idle", outputKind="speaker", volume=0.0)

vector(
    "version-signed",
    "v is a decimal integer that may be signed: '+1' is version 1.",
    txt("v=+1", "id=" + ID_A, "md=Lyre Receiver", "cn=opus,l16", "ft=", "st=idle", "ok=speaker", "vol=0"),
    valid=True, canonical=False, version=1)

vector(
    "version-negative",
    "v=-1 is an integer below 1: invalidVersion.",
    txt("v=-1", "id=" + ID_A),
    valid=False, error="invalidVersion")

vector(
    "version-not-utf8",
    "A v whose value is not valid UTF-8 reads as absent: missingVersion, not invalidVersion.",
    txt(b"v=\xff1", "id=" + ID_A),
    valid=False, error="missingVersion")

vector(
    "id-not-utf8",
    "An id whose value is not valid UTF-8 reads as absent: missingDeviceID, not invalidDeviceID.",
    txt("v=1", b"id=\xc3" + ID_A[1:].encode("ascii")),
    valid=False, error="missingDeviceID")

vector(
    "optional-keys-as-booleans",
    "md, st, ok and vol as boolean attributes (no '=') read as absent; the receiver is still valid.",
    txt("v=1", "id=" + ID_A, "md", "cn=opus", "ft=", "st", "ok", "vol"),
    valid=True, canonical=False, model="", codecs=["opus"], status=None, sender=None, outputKind=None,
    volume=None)


# ---------------------------------------------------------------------------------------------------------
# Writing


def json_number(v):
    return int(v) if v is not None and float(v).is_integer() else v


def render(name, description, data, expect):
    result = evaluate(data)
    for key, wanted in expect.items():
        got = result[key] if key in result else result.get("receiver", {}).get(key, "<no receiver>")
        if got != wanted or type(got) is not type(wanted):
            sys.exit(f"gen-txt-vectors: {name}: {key} is {got!r}, the vector says {wanted!r}")
    doc = {"description": description}
    doc.update({k: result[k] for k in ("wellFormed", "roundTrip", "valid", "error", "canonical")})
    if result["wellFormed"] and not result["roundTrip"]:
        sys.exit(f"gen-txt-vectors: {name}: well formed but does not round-trip")
    if "receiver" in result:
        receiver = dict(result["receiver"])
        receiver["volume"] = json_number(receiver["volume"])
        doc["receiver"] = receiver
    text = json.dumps(doc, ensure_ascii=False, indent=2) + "\n"
    return {f"{name}.bin": bytes(data), f"{name}.json": text.encode("utf-8")}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the files on disk, write nothing")
    args = parser.parse_args()

    names = [v[0] for v in VECTORS]
    if len(names) != len(set(names)):
        sys.exit("gen-txt-vectors: duplicate vector names")
    files = {}
    for name, description, data, expect in VECTORS:
        files.update(render(name, description, data, expect))

    existing = {p.name for p in OUT_DIR.glob("*.bin")} | {p.name for p in OUT_DIR.glob("*.json")}
    stale = sorted(existing - files.keys())
    changed = sorted(f for f, b in files.items() if not (OUT_DIR / f).is_file() or (OUT_DIR / f).read_bytes() != b)

    if args.check:
        for f in changed:
            print(f"differs: {f}")
        for f in stale:
            print(f"stale: {f}")
        sys.exit(1 if changed or stale else 0)

    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for f in changed:
        (OUT_DIR / f).write_bytes(files[f])
    for f in stale:
        (OUT_DIR / f).unlink()
    print(f"{len(VECTORS)} vectors in {OUT_DIR}: {len(changed)} written, {len(stale)} removed")


if __name__ == "__main__":
    main()
