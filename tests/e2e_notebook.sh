#!/usr/bin/env bash
# The walk-through as a notebook: docs/python_walkthrough.ipynb holds the
# cells of docs/python_walkthrough.py (scripts/walkthrough_notebook), and
# Debian's jupyter nbconvert (python3-nbconvert, python3-ipykernel) executes
# it with the package of a temporary install, giving the outputs committed
# in it: the same text (but for the [plot] lines, which depend on whether
# matplotlib is here) and the attention view shown inline as HTML.
set -euo pipefail
source "$STORYLM_SOURCE_DIR/tests/common.sh"
BUILD=$(dirname "$STORYLM")
[[ -x $PY ]] || skip "no $PY (Debian's python3)"
"$PY" -c 'import numpy' 2>/dev/null || skip "numpy is missing for $PY (apt-get install python3-numpy)"
"$PY" -c 'import nbconvert, ipykernel' 2>/dev/null ||
  skip "jupyter nbconvert is missing for $PY (apt-get install python3-nbconvert python3-ipykernel)"
[[ -f $BUILD/cmake_install.cmake ]] || skip "$BUILD is not a CMake build folder to install from"
grep -q '^STORYLM_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null &&
  skip "a sanitized library loads into python3 only with preloads (e2e_python runs those)"

P=$PWD/prefix
cmake --install "$BUILD" --prefix "$P" > install.log || fail "cmake --install: $(tail -5 install.log)"
NB=$STORYLM_SOURCE_DIR/docs/python_walkthrough.ipynb

# The notebook's cells are the walk-through's.
"$PY" "$STORYLM_SOURCE_DIR/scripts/walkthrough_notebook" > fresh.ipynb
"$PY" - "$NB" fresh.ipynb <<'PYEOF' || fail "docs/python_walkthrough.ipynb's cells are not docs/python_walkthrough.py's: run scripts/walkthrough_notebook"
import json, sys
committed, fresh = (json.load(open(p, encoding="utf-8"))["cells"] for p in sys.argv[1:])
assert [(c["cell_type"], "".join(c["source"])) for c in committed] == \
       [(c["cell_type"], "".join(c["source"])) for c in fresh]
PYEOF

cp "$NB" run.ipynb
STORYLM_PROGRAM=$P/bin/storylm PYTHONPATH=$P/lib/python3/dist-packages PYDEVD_DISABLE_FILE_VALIDATION=1 \
  "$PY" -m nbconvert --to notebook --execute run.ipynb --output executed.ipynb > nbconvert.log 2>&1 ||
  { tail -30 nbconvert.log; fail "jupyter nbconvert --execute docs/python_walkthrough.ipynb"; }

"$PY" - "$NB" executed.ipynb "$STORYLM_SOURCE_DIR/tests" <<'PYEOF' || fail "the notebook gave other outputs than those committed in docs/python_walkthrough.ipynb"
import json, sys

sys.path.insert(0, sys.argv[3])
from same_numbers import differing  # the losses' last digits depend on the CPU's vector width


def outputs(path):
    """Each code cell's text (streams and text/plain, [plot] lines left out) and whether it showed HTML."""
    out = []
    for cell in json.load(open(path, encoding="utf-8"))["cells"]:
        if cell["cell_type"] != "code":
            continue
        text, html = [], False
        for o in cell["outputs"]:
            if o["output_type"] == "error":
                sys.exit("%s: a cell raised %s: %s" % (path, o["ename"], o["evalue"]))
            text += o.get("text", []) if o["output_type"] == "stream" else o.get("data", {}).get("text/plain", []) + ["\n"]
            html = html or "slm-attention" in "".join(o.get("data", {}).get("text/html", []))
        text = [l for l in "".join(text).splitlines() if not l.startswith("[plot]")]
        out.append((text, html))
    return out


committed, executed = outputs(sys.argv[1]), outputs(sys.argv[2])
for i, (a, b) in enumerate(zip(committed, executed)):
    if a[1] != b[1] or differing(a[0], b[0]):
        sys.exit("code cell %d:\ncommitted %s\nexecuted  %s" % (i, a, b))
assert len(committed) == len(executed)
assert any(html for _, html in executed), "no attention view shown inline"
PYEOF
echo "notebook: its cells are the walk-through's, and nbconvert --execute gives its committed outputs"
