"""Decoding profreport's Perfetto export for the tests: the compressed_packets batches expanded
(zlib), then `protoc --decode=perfetto.protos.Trace` against the protos kept in the tree, its
text parsed into dicts, then the sequences replayed
as a Perfetto reader does (interned names, TracePacketDefaults, the incremental clock), with
every rule a reader relies on asserted on the way."""
import codecs
import os
import subprocess
import zlib
from collections import defaultdict

from conftest import ROOT

PROTO_DIR = os.path.join(ROOT, "report", "views", "perfetto")
CLOCK_BOOTTIME = 6
CLOCK_INCREMENTAL = 64


def _value(text):
    if text.startswith('"'):
        raw = codecs.decode(text[1:-1], "unicode_escape")
        return raw.encode("latin-1").decode("utf-8", "replace")
    try:
        return int(text)
    except ValueError:
        return text  # enum names, true/false


def parse_text(text):
    """protoc's text format -> nested dicts whose values are lists."""
    root = {}
    stack = [root]
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line.endswith("{"):
            child = {}
            stack[-1].setdefault(line[:-1].strip(), []).append(child)
            stack.append(child)
        elif line == "}":
            stack.pop()
        else:
            key, val = line.split(":", 1)
            stack[-1].setdefault(key.strip(), []).append(_value(val.strip()))
    assert len(stack) == 1, "unbalanced protoc output"
    return root


def one(msg, key, default=None):
    vals = msg.get(key)
    return vals[0] if vals else default


def _varint(data, i):
    v = shift = 0
    while True:
        b = data[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return v, i


def _fields(data):
    """(field number, wire type, value) of one message's top-level fields."""
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _varint(data, i)
        elif wire == 1:
            v, i = data[i:i + 8], i + 8
        elif wire == 2:
            n, i = _varint(data, i)
            v, i = data[i:i + n], i + n
        else:
            raise AssertionError("wire type %d" % wire)
        yield field, wire, v


def expand(data):
    """A Trace whose compressed_packets (TracePacket field 50, deflate) are replaced by the
    packets inside them, as Perfetto's readers expand them; counts the batches."""
    out, batches = bytearray(), 0
    for field, wire, packet in _fields(data):
        assert field == 1 and wire == 2, "a Trace holds only packets"
        inner = [v for f, w, v in _fields(packet) if f == 50]
        if inner:
            assert len(inner) == 1 and len(packet) < 512 * 1024, "batch over 512 KiB"
            plain = zlib.decompress(inner[0])
            assert all(f == 1 for f, _, _ in _fields(plain))
            out += plain
            batches += 1
        else:
            out += bytes([0x0A]) + _encode_varint(len(packet)) + packet
    return bytes(out), batches


def _encode_varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def decode(path):
    with open(path, "rb") as f:
        plain, _ = expand(f.read())
    proc = subprocess.run(["protoc", "--decode=perfetto.protos.Trace", "-I", PROTO_DIR,
                           "perfetto_trace.proto"], input=plain, capture_output=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    return parse_text(proc.stdout.decode())


class Timeline:
    """Tracks and their events, resolved as a reader would."""

    def __init__(self, path):
        self.packets = decode(path).get("packet", [])
        self.tracks = {}  # uuid -> TrackDescriptor dict
        self.events = defaultdict(list)  # uuid -> [(ts, type, name, packet-index, track_event)]
        seqs = {}
        for i, pkt in enumerate(self.packets):
            seq_id = one(pkt, "trusted_packet_sequence_id")
            assert seq_id, "packet %d has no sequence id" % i
            flags = one(pkt, "sequence_flags", 0)
            if flags & 1:
                seqs[seq_id] = {"clock": None, "names": {}, "anns": {}, "strings": {},
                                "cats": {}, "defaults": None, "last_inc": None}
            seq = seqs.setdefault(seq_id, {"clock": None, "names": {}, "anns": {},
                                           "strings": {}, "cats": {}, "defaults": None,
                                           "last_inc": None})
            if "trace_packet_defaults" in pkt:
                seq["defaults"] = one(pkt, "trace_packet_defaults")
            snap = one(pkt, "clock_snapshot")
            if snap:
                clocks = {one(c, "clock_id"): c for c in snap["clocks"]}
                inc, boot = clocks[CLOCK_INCREMENTAL], clocks[CLOCK_BOOTTIME]
                assert one(inc, "is_incremental") == "true"
                assert one(inc, "timestamp") == one(boot, "timestamp")
                seq["clock"] = one(inc, "timestamp")
            ts = self._time(pkt, seq, i)
            interned = one(pkt, "interned_data")
            if interned:
                for field, table in (("event_names", "names"), ("debug_annotation_names", "anns"),
                                     ("debug_annotation_string_values", "strings"),
                                     ("event_categories", "cats")):
                    for entry in interned.get(field, []):
                        iid = one(entry, "iid")
                        text = one(entry, "name", one(entry, "str"))
                        assert iid not in seq[table] or seq[table][iid] == text, \
                            "iid %d redefined on sequence %d" % (iid, seq_id)
                        seq[table][iid] = text
            desc = one(pkt, "track_descriptor")
            if desc:
                self.tracks[one(desc, "uuid")] = desc
            te = one(pkt, "track_event")
            if te:
                assert flags & 2, "a track event without SEQ_NEEDS_INCREMENTAL_STATE"
                default_track = one(one(seq["defaults"] or {}, "track_event_defaults", {}),
                                    "track_uuid")
                track = one(te, "track_uuid", default_track)
                name = None
                if "name_iid" in te:
                    iid = one(te, "name_iid")
                    assert iid in seq["names"], "name iid %d unresolved" % iid
                    name = seq["names"][iid]
                cats = []
                for iid in te.get("category_iids", []):
                    assert iid in seq["cats"], "category iid %d unresolved" % iid
                    cats.append(seq["cats"][iid])
                anns = {}
                for a in te.get("debug_annotations", []):
                    key = seq["anns"][one(a, "name_iid")]
                    if "string_value_iid" in a:
                        anns[key] = seq["strings"][one(a, "string_value_iid")]
                    else:
                        anns[key] = one(a, "uint_value", one(a, "int_value"))
                self.events[track].append({"ts": ts, "type": one(te, "type"), "name": name,
                                           "flows": te.get("flow_ids", []),
                                           "ends": te.get("terminating_flow_ids", []),
                                           "args": anns, "value": one(te, "counter_value"),
                                           "categories": cats})

    @staticmethod
    def _time(pkt, seq, index):
        ts = one(pkt, "timestamp")
        if ts is None:
            return None
        clock = one(pkt, "timestamp_clock_id")
        if clock is None and seq["defaults"]:
            clock = one(seq["defaults"], "timestamp_clock_id")
        if clock == CLOCK_INCREMENTAL:
            assert seq["clock"] is not None, "packet %d: delta before a clock snapshot" % index
            seq["clock"] += ts
            return seq["clock"]
        assert clock in (None, CLOCK_BOOTTIME), "packet %d: clock %s" % (index, clock)
        return ts

    def slices(self, uuid):
        """(name, begin, end, begin event) of the track's slices. The writer puts a slice's
        END right after its BEGIN on the track's sequence; the slices must nest (each one
        inside or apart from every other), as a reader that sorts by time needs."""
        evs = self.events[uuid]
        out = []
        for i in range(0, len(evs), 1):
            e = evs[i]
            if e["type"] == "TYPE_SLICE_BEGIN":
                end = evs[i + 1]
                assert end["type"] == "TYPE_SLICE_END", "a begin not followed by its end"
                assert end["ts"] >= e["ts"], "a slice ends before it begins"
                out.append((e["name"], e["ts"], end["ts"], e))
        assert 2 * len(out) == len([e for e in evs if e["type"] != "TYPE_COUNTER"])
        stack = []
        for s in sorted(out, key=lambda s: (s[1], -s[2])):
            while stack and stack[-1][2] <= s[1]:
                stack.pop()
            assert not stack or s[2] <= stack[-1][2], \
                "slice %r [%d, %d] overlaps %r [%d, %d] on track %d" % (
                    s[0], s[1], s[2], stack[-1][0], stack[-1][1], stack[-1][2], uuid)
            stack.append(s)
        return out

    def kind(self, uuid):
        d = self.tracks[uuid]
        if "process" in d:
            return "process"
        if "thread" in d:
            return "thread"
        if "counter" in d:
            return "counter"
        return "named"

    def parent(self, uuid):
        return one(self.tracks[uuid], "parent_uuid")

    def named(self, prefix):
        return [u for u in self.tracks if self.kind(u) == "named"
                and one(self.tracks[u], "name", "").startswith(prefix)]
