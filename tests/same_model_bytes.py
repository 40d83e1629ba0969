"""Two storylm model files, byte for byte but for what differs between any two runs:
every tensor's bytes, names, shapes and places and every
metadata key but the run's seconds and its random run id.

    python3 tests/same_model_bytes.py A.safetensors B.safetensors     (exit 1 on a difference)
"""
import json
import struct
import sys

SKIP = {"seconds", "run_id"}


def read(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    head = json.loads(b[8:8 + n])
    return head, head.pop("__metadata__", {}), b[8 + n:]


(ha, ma, da), (hb, mb, db) = read(sys.argv[1]), read(sys.argv[2])
diff = sorted(k for k in set(ma) | set(mb) if k not in SKIP and ma.get(k) != mb.get(k))
if diff:
    sys.exit("metadata differs: " + ", ".join(f"{k}: {ma.get(k)!r:.60} vs {mb.get(k)!r:.60}" for k in diff))
if ha != hb:
    sys.exit("the tensors' names, shapes or places differ")
if da != db:
    sys.exit(f"the tensors' bytes differ ({len(da)} and {len(db)} bytes)")
print(f"the same model: {len(ha)} tensors, {len(da)} bytes, {len(ma)} metadata keys (all but {sorted(SKIP)} equal)")
