#!/usr/bin/python3
"""Read a safetensors file, such as a storylm model, with numpy alone.

    /usr/bin/python3 scripts/read_safetensors.py model.safetensors          # a summary
    /usr/bin/python3 scripts/read_safetensors.py model.safetensors --json   # for scripts

As a module (no safetensors or torch package needed):

    import sys; sys.path.insert(0, "scripts")
    from read_safetensors import load
    tensors, metadata = load("model.safetensors")
    tensors["embedding"].shape          # (2000, 32): row of token id t is embedding[t]
    tensors["query"][3]                 # (32, 8): q = row @ query[3] for head 3
    metadata["vocab"].splitlines()[t]   # the token with id t

The file is checked as storylm's own loader checks it: header length inside
the file, a JSON object, string metadata, known dtypes, offsets matching the
shapes, and the tensors covering the data area exactly.
"""
import json
import struct
import sys

try:
    import numpy as np
except ImportError:
    sys.exit("read_safetensors.py: numpy is missing: run this with a Python that has numpy "
             "(/usr/bin/python3 here) or install it (apt-get install python3-numpy)")

DTYPES = {"BOOL": "?", "U8": "u1", "I8": "i1", "I16": "<i2", "U16": "<u2", "F16": "<f2", "BF16": "<u2",
          "I32": "<i4", "U32": "<u4", "F32": "<f4", "I64": "<i8", "U64": "<u8", "F64": "<f8"}
MAX_HEADER = 100_000_000


class SafetensorsError(ValueError):
    pass


def _no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise SafetensorsError("a key occurs twice in the header")
    return dict(pairs)


def _whole(x):
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _header(data, path):
    if len(data) < 8:
        raise SafetensorsError(f"{path}: {len(data)} bytes, too few for the 8-byte header length")
    (n,) = struct.unpack("<Q", data[:8])
    if n == 0 or n > len(data) - 8 or n > MAX_HEADER:
        raise SafetensorsError(f"{path}: header length {n} does not fit the file ({len(data)} bytes)")
    try:
        header = json.loads(data[8:8 + n].decode("utf-8"), object_pairs_hook=_no_duplicates)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise SafetensorsError(f"{path}: the header is not valid JSON: {err}") from None
    if not isinstance(header, dict):
        raise SafetensorsError(f"{path}: the header is not a JSON object")
    return header, 8 + n


def _tensor(name, info, data, start, path):
    if not isinstance(info, dict) or info.get("dtype") not in DTYPES:
        raise SafetensorsError(f"{path}: tensor {name!r} has no known dtype")
    shape, offsets = info.get("shape"), info.get("data_offsets")
    if not isinstance(shape, list) or not all(_whole(d) for d in shape):
        raise SafetensorsError(f"{path}: tensor {name!r} has a bad shape {shape!r}")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(_whole(o) for o in offsets)):
        raise SafetensorsError(f"{path}: tensor {name!r} has bad data_offsets {offsets!r}")
    begin, end = offsets
    dtype = np.dtype(DTYPES[info["dtype"]])
    count = int(np.prod(shape, dtype=object)) if shape else 1
    if begin > end or start + end > len(data) or end - begin != count * dtype.itemsize:
        raise SafetensorsError(f"{path}: tensor {name!r}: data_offsets {offsets} do not fit "
                               f"{info['dtype']} {shape} inside the data ({len(data) - start} bytes)")
    array = np.frombuffer(data, dtype=dtype, count=count, offset=start + begin) if count else np.zeros(0, dtype)
    if info["dtype"] == "BF16":  # the upper half of an F32
        array = (array.astype("<u4") << 16).view("<f4")
    return array.reshape(shape), (begin, end, name)


def load(path):
    """Returns ({name: numpy array}, {metadata key: string}) in the file's order."""
    with open(path, "rb") as f:
        data = f.read()
    header, start = _header(data, path)
    metadata = header.pop("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise SafetensorsError(f"{path}: __metadata__ is not an object of strings")
    tensors, spans = {}, []
    for name, info in header.items():
        tensors[name], span = _tensor(name, info, data, start, path)
        spans.append(span)
    position = 0
    for begin, end, name in sorted(spans):
        if begin != position:
            raise SafetensorsError(f"{path}: tensor {name!r} at byte {begin} leaves a hole or overlaps (expected {position})")
        position = end
    if start + position != len(data):
        raise SafetensorsError(f"{path}: bytes {position}.. of the data belong to no tensor")
    return tensors, metadata


def fnv1a64(raw):
    """FNV-1a 64 of bytes: the checksum `storylm info --json` prints for each tensor."""
    h = 0xCBF29CE484222325
    for b in raw:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def summary(tensors, metadata):
    """Per tensor: shape, count, the sum in index order (as storylm sums) and the checksum."""
    out = []
    for name, t in tensors.items():
        flat = t.astype(np.float64).ravel()
        out.append({"name": name, "dtype": str(t.dtype), "shape": list(t.shape), "count": int(t.size),
                    "sum": float(np.add.accumulate(flat)[-1]) if t.size else 0.0,
                    "fnv1a64": fnv1a64(t.astype("<f4").tobytes()) if t.dtype == np.float32 else None})
    return {"tensors": out, "metadata": metadata}


def main(argv):
    if len(argv) not in (2, 3) or (len(argv) == 3 and argv[2] != "--json") or argv[1] in ("-h", "--help"):
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    try:
        tensors, metadata = load(argv[1])
    except (OSError, SafetensorsError) as err:
        print(f"read_safetensors.py: error: {err}", file=sys.stderr)
        return 1
    if len(argv) == 3:
        print(json.dumps(summary(tensors, metadata), indent=1))
        return 0
    for key, value in metadata.items():
        shown = f"{len(value.splitlines())} lines" if key == "vocab" else value.replace("\n", "\\n")
        print(f"{key:16} {shown}")
    for name, t in tensors.items():
        print(f"{name:16} {str(t.dtype):8} {str(list(t.shape)):16} mean {float(t.mean()) if t.size else 0:+.6f}")
    print(f"{'total':16} {sum(t.size for t in tensors.values()):,} numbers")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
