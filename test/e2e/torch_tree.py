"""Reads the PyTorch op trees (TORCH_NODE / TORCH_STATS records) of profrun's trace files,
for the PyTorch tests: per process and thread, what the operator table counts."""
import collections
import struct

from conftest import trace_files

REC_META, REC_STRING, REC_THREAD, REC_TORCH_NODE, REC_TORCH_STATS = 1, 2, 4, 29, 30
NODE = struct.Struct("<IIIIB3x")  # after the 4-byte record header
STATS = struct.Struct("<IQQQQqqqq")


def read_tree(path):
    """(meta, nodes): nodes by id, each a dict with tid, name, shapes, parent, scope and the
    latest stats (calls, raw_calls, total, self, cpu_mem, self_cpu_mem, dev_mem,
    self_dev_mem)."""
    with open(path, "rb") as f:
        data = f.read()
    off = struct.unpack_from("<H", data, 10)[0]
    strings, meta, nodes, tid = {}, {}, {}, 0
    while off + 4 <= len(data):
        typ, size = struct.unpack_from("<HH", data, off)
        if size < 4 or off + size > len(data):
            break
        if typ == REC_STRING:
            sid = struct.unpack_from("<I", data, off + 4)[0]
            strings[sid] = data[off + 8:off + size].split(b"\0")[0].decode()
        elif typ == REC_META:
            key, value = data[off + 4:off + size].split(b"\0")[:2]
            meta.setdefault(key.decode(), value.decode())
        elif typ == REC_THREAD:
            tid = struct.unpack_from("<I", data, off + 4)[0]
        elif typ == REC_TORCH_NODE:
            nid, parent, name, shapes, scope = NODE.unpack_from(data, off + 4)
            nodes[nid] = dict(tid=tid, name=name, shapes=shapes, parent=parent, scope=scope,
                              calls=0, raw_calls=0, total=0, self=0, cpu_mem=0, self_cpu_mem=0,
                              dev_mem=0, self_dev_mem=0)
        elif typ == REC_TORCH_STATS:
            v = STATS.unpack_from(data, off + 4)
            if v[0] in nodes:
                nodes[v[0]].update(zip(("calls", "raw_calls", "total", "self", "cpu_mem",
                                        "self_cpu_mem", "dev_mem", "self_dev_mem"), v[1:]))
        off += size
    for n in nodes.values():
        n["name"] = strings.get(n["name"], "?")
        n["shapes"] = strings.get(n["shapes"], "") if n["shapes"] else ""
    return meta, nodes


def read_run_trees(outdir):
    """{pid: (meta, nodes)} for every process of a run."""
    run = {}
    for path in trace_files(outdir):
        meta, nodes = read_tree(path)
        run[int(meta["pid"])] = (meta, nodes)
    return run


def main_process_tree(run):
    """The process whose parent is not in the run: the script itself."""
    roots = [pid for pid, (meta, _) in run.items() if int(meta["ppid"]) not in run]
    assert len(roots) == 1, roots
    return run[roots[0]]


def by_name(nodes, key="calls", tids=None):
    """name -> sum of key over the nodes (of the threads in tids, when given)."""
    out = collections.Counter()
    for n in nodes.values():
        if tids is None or n["tid"] in tids:
            out[n["name"]] += n[key]
    return out
