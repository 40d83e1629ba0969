#!/usr/bin/env bash
# The Python package through an installed prefix: cmake --install into a
# temporary prefix, then Debian's python3 imports storylm from
# PREFIX/lib/python3/dist-packages alone and tests/python/test_storylm.py
# checks every call against the installed CLI's --json, on the shipped models
# and on a small model trained here; then the walk-through of docs/python.md
# runs and must print what docs/python_walkthrough.out holds.
set -euo pipefail
source "$STORYLM_SOURCE_DIR/tests/common.sh"
BUILD=$(dirname "$STORYLM")
[[ -x $PY ]] || skip "no $PY (Debian's python3)"
"$PY" -c 'import numpy' 2>/dev/null || skip "numpy is missing for $PY (apt-get install python3-numpy, or scripts/setup)"
[[ -f $BUILD/cmake_install.cmake ]] || skip "$BUILD is not a CMake build folder to install from"
# A sanitized libstorylm.so loads into python3 only with the sanitizers'
# runtimes preloaded (they must come first). Every read and write of the
# library's memory is then checked, so a call on a freed model (a model
# closed by a hook or another thread, a copy freed twice) is a report and a
# failure, not a crash that may or may not happen. Leaks are not checked
# (detect_leaks=0): python3 is not instrumented and leaves the objects it
# holds at exit to the OS, which LeakSanitizer would report as the
# interpreter's leaks by the thousand; the library's own leaks are checked
# by its C tests. Under the sanitizers every pass is slow: only the classes
# of the hooks, the cache, tokens, threads, handles and refusals run, and
# the rest of this test is left to the plain build.
sanitized=0
if grep -q '^STORYLM_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null; then
  cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
  asan=$("${cc:-cc}" -print-file-name=libasan.so) ubsan=$("${cc:-cc}" -print-file-name=libubsan.so)
  [[ $asan == /* && -f $asan && $ubsan == /* && -f $ubsan ]] ||
    skip "the sanitizers' runtimes of ${cc:-cc} (libasan.so, libubsan.so) are not found to preload into python3"
  sanitized=1
fi

P=$PWD/prefix
cmake --install "$BUILD" --prefix "$P" > install.log || fail "cmake --install: $(tail -5 install.log)"
SITE=$P/lib/python3/dist-packages
for f in storylm/__init__.py storylm/model.py storylm/_lib.py storylm/train.py storylm/libstorylm.so; do
  [[ -f $SITE/$f ]] || fail "not installed: lib/python3/dist-packages/$f"
done
! nm -D --defined-only "$SITE/storylm/libstorylm.so" | awk '{print $3}' | grep -v '^slm_' | grep . ||
  fail "libstorylm.so exports symbols without the slm_ prefix"

if ((sanitized)); then
  export LD_PRELOAD="$asan $ubsan" ASAN_OPTIONS=detect_leaks=0
  # Not a vacuous pass: a call on a freed model, made on purpose, must be reported.
  ! PYTHONPATH=$SITE "$PY" -c '
import ctypes, sys, storylm._lib as l
lib, err = l.lib(), l.Error()
model = lib.slm_py_load(sys.argv[1].encode(), ctypes.byref(err))
lib.slm_py_free(model)
lib.slm_py_eos(model)
' "$STORYLM_SOURCE_DIR/models/tinystories.safetensors" > canary.log 2>&1 < /dev/null ||
    fail "a use-after-free through ctypes ran without a report: the sanitizers are not in python3 ($(tail -3 canary.log))"
  grep -q 'heap-use-after-free' canary.log || { cat canary.log; fail "the use-after-free was not reported as one"; }
  STORYLM_PROGRAM=$P/bin/storylm PYTHONPATH=$SITE:$STORYLM_SOURCE_DIR/tests/python \
    "$PY" -m unittest test_storylm.Hooks test_storylm.Cache test_storylm.Tokens test_storylm.Threads \
    test_storylm.Handles test_storylm.Refusals test_weights test_batch test_cache test_tl_hooks test_generate.Hooks \
    > unittest.log 2>&1 < /dev/null ||
    { cat unittest.log; fail "tests/python under the sanitizers"; }
  ! grep -E 'ERROR: AddressSanitizer|runtime error:' unittest.log || fail "a sanitizer report in tests/python"
  tail -3 unittest.log
  # storylm.SAE's calls, on SAEs trained here on a small model (the other tests above leave it out: slow here)
  (unset LD_PRELOAD; first_stories 300 > small.txt) # awk is not instrumented: the preloaded runtime would report it
  "$P/bin/storylm" train small.txt --vocab "$STORYLM_SOURCE_DIR/models/vocab.txt" --steps 20 --layers 2 --eval-every 0 \
    --test-stories 20 --threads 2 -o small.safetensors 2> small.log || { cat small.log; fail "training the small model"; }
  STORYLM_PROGRAM=$P/bin/storylm STORYLM_SMALL_MODEL=$PWD/small.safetensors STORYLM_SMALL_STORIES=$PWD/small.txt \
    PYTHONPATH=$SITE:$STORYLM_SOURCE_DIR/tests/python "$PY" -m unittest test_sae.SAE > sae.log 2>&1 < /dev/null ||
    { cat sae.log; fail "tests/python/test_sae.py under the sanitizers"; }
  ! grep -E 'ERROR: AddressSanitizer|runtime error:' sae.log || fail "a sanitizer report in tests/python/test_sae.py"
  echo "python: a use-after-free is reported; the hooks (TransformerLens's points too), cache, tokens, threads, handles, refusals, weights, batches, generation with hooks and SAE tests passed under the sanitizers"
  exit 0
fi

# The installed package, found by PYTHONPATH alone, loads its own library and the installed model.
mkdir elsewhere && cd elsewhere
PYTHONPATH=$SITE "$PY" -c '
import os, sys, storylm, storylm._lib as l
assert l.lib()._name == os.path.join(sys.argv[1], "storylm", "libstorylm.so"), l.lib()._name
m = storylm.load()
assert m.path == os.path.join(sys.argv[2], "share/storylm/models/tinystories.safetensors"), m.path
' "$SITE" "$P" || fail "the installed package did not load its library and the installed model"
cd ..

# pip install ./python, offline, into a venv that sees Debian's numpy (where pip and venv are here).
if "$PY" -m pip --version >/dev/null 2>&1 && "$PY" -m venv --system-site-packages venv >/dev/null 2>&1; then
  STORYLM_LIBRARY=$SITE/storylm/libstorylm.so STORYLM_PROGRAM=$P/bin/storylm \
    venv/bin/pip install --no-index "$STORYLM_SOURCE_DIR/python" \
    > pip.log 2>&1 || { cat pip.log; fail "pip install ./python"; }
  # It carries the shipped models and stories, and the program train runs: load() and generate's names are
  # the CLI's, and train works, with no storylm on PATH.
  first_stories 60 > tiny.txt
  want=$("$P/bin/storylm" generate "Tom" -n 30 -s 3 --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["samples"][0]["text"])')
  (cd elsewhere && PATH=/usr/bin:/bin ../venv/bin/python -c '
import os, sys, storylm
assert storylm._lib.lib()._name.startswith(sys.prefix), storylm._lib.lib()._name
m = storylm.load()
assert m.path == os.path.join(os.path.dirname(storylm.__file__), "share", "models", "tinystories.safetensors"), m.path
assert m.generate("Tom", max_tokens=30, seed=3) == sys.argv[2], (m.generate("Tom", max_tokens=30, seed=3), sys.argv[2])
assert os.path.dirname(storylm.program()) == os.path.join(os.path.dirname(storylm.__file__), "bin"), storylm.program()
summary = storylm.train("../tiny.txt", "tiny.safetensors", steps=2, vocab=sys.argv[3], eval_every=0, test_stories=5,
                        threads=1, progress=lambda line: None)
assert storylm.load("tiny.safetensors").cfg.vocab_size == 2000, summary
print("pip: loss %.6f" % storylm.load(sys.argv[1]).loss("Lily found a ball."))
' "$STORYLM_SOURCE_DIR/models/tinystories.safetensors" "$want" "$STORYLM_SOURCE_DIR/models/vocab.txt") ||
    fail "the package pip installed"
else
  echo "pip or venv is not here for $PY: pip install ./python not tried"
fi

# A small model of two layers, trained by the installed CLI, for the tests.
first_stories 300 > small.txt
"$P/bin/storylm" train small.txt --vocab "$STORYLM_SOURCE_DIR/models/vocab.txt" --steps 20 --layers 2 --eval-every 0 \
  --test-stories 20 --threads 2 -o small.safetensors 2> small.log || { cat small.log; fail "training the small model"; }

STORYLM_PROGRAM=$P/bin/storylm STORYLM_SMALL_MODEL=$PWD/small.safetensors STORYLM_SMALL_STORIES=$PWD/small.txt \
  PYTHONPATH=$SITE "$PY" -m unittest discover -s "$STORYLM_SOURCE_DIR/tests/python" -t "$STORYLM_SOURCE_DIR/tests/python" \
  > unittest.log 2>&1 || { cat unittest.log; fail "tests/python"; }
tail -3 unittest.log

# The walk-through prints what its committed output holds (the plot's line
# says whether matplotlib drew it, which depends on the machine; the losses'
# last digits depend on the CPU's vector width: tests/same_numbers.py).
cd elsewhere
STORYLM_PROGRAM=$P/bin/storylm PYTHONPATH=$SITE "$PY" "$STORYLM_SOURCE_DIR/docs/python_walkthrough.py" \
  > walk.out 2> walk.err || { cat walk.err; fail "docs/python_walkthrough.py"; }
"$PY" "$STORYLM_SOURCE_DIR/tests/same_numbers.py" "$STORYLM_SOURCE_DIR/docs/python_walkthrough.out" walk.out ||
  fail "docs/python_walkthrough.py printed other numbers than docs/python_walkthrough.out"
grep -q '^\[plot\]' walk.out || fail "the walk-through said nothing about its plot"
echo "python: package, API and walk-through OK"
