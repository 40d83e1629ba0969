#!/usr/bin/env bash
# cmake --install into a temporary prefix: the installed binary finds the
# shipped model from another folder (generate and info), a copy of it with no
# data folder beside says where it looked, a build outside the source tree
# finds the source tree's models, and a C program builds with
# pkg-config against the installed library and headers and reads the model.
set -euo pipefail
source "$STORYLM_SOURCE_DIR/tests/common.sh"
BUILD=$(dirname "$STORYLM")
[[ -f $BUILD/cmake_install.cmake ]] || { echo "SKIP: $BUILD is not a CMake build folder to install from"; exit 77; }
for tool in cmake pkg-config cc; do
  command -v "$tool" >/dev/null || { echo "SKIP: no $tool on PATH"; exit 77; }
done
P=$PWD/prefix
SRC_MODEL=$STORYLM_SOURCE_DIR/models/tinystories.safetensors

cmake --install "$BUILD" --prefix "$P" > install.log || fail "cmake --install: $(tail -5 install.log)"
for f in bin/storylm lib/libstorylm.a lib/pkgconfig/storylm.pc share/storylm/models/tinystories.safetensors \
         share/storylm/models/vocab.txt share/storylm/models/README.md share/storylm/data/stories.txt; do
  [[ -f $P/$f ]] || fail "not installed: $f"
done
for h in "$STORYLM_SOURCE_DIR"/include/storylm/*.h; do
  cmp -s "$h" "$P/include/storylm/$(basename "$h")" || fail "header not installed: $(basename "$h")"
done
cmp -s "$SRC_MODEL" "$P/share/storylm/models/tinystories.safetensors" || fail "installed model differs from models/"
for f in "$STORYLM_SOURCE_DIR"/models/*.safetensors "$STORYLM_SOURCE_DIR"/models/snapshots/*.safetensors \
  "$STORYLM_SOURCE_DIR"/models/*.sae/*; do # the models, their snapshots and their SAEs
  cmp -s "$f" "$P/share/storylm/models/${f#"$STORYLM_SOURCE_DIR"/models/}" || fail "shipped model not installed: $f"
done

# From another folder, with no model.safetensors there: the installed model.
mkdir elsewhere && cd elsewhere
"$P/bin/storylm" generate "Lily found a" -t 0 -n 12 > gen.txt 2> gen.err || fail "installed generate: $(cat gen.err)"
installed=$(realpath "$P/share/storylm/models/tinystories.safetensors")
grep -qF "using the shipped model $installed" gen.err || fail "generate did not say it used $installed: $(cat gen.err)"
"$STORYLM" generate "Lily found a" -t 0 -n 12 --model "$SRC_MODEL" > want.txt 2>/dev/null
cmp -s gen.txt want.txt || fail "installed generate wrote '$(cat gen.txt)', the build's '$(cat want.txt)'"
grep -q '^Lily found a' gen.txt || fail "no continuation of the prompt: $(cat gen.txt)"
"$P/bin/storylm" info --json > info.json 2> info.err || fail "installed info: $(cat info.err)"
"$PY" - info.json "$installed" <<'EOF' || fail "installed info"
import json, sys
info = json.load(open(sys.argv[1]))
assert info["model"]["file"] == sys.argv[2], f"info read {info['model']['file']}, not the installed model"
assert info["model"]["parameters"] > 0 and info["vocab_size"] > 0, info
EOF

# The guide's commands from here: --vocab shipped and --vocab models/vocab.txt are the installed vocabulary.
first_stories 40 > mine.txt
for v in shipped models/vocab.txt; do
  "$P/bin/storylm" train mine.txt --vocab "$v" --steps 1 --threads 1 --eval-every 0 -o v.safetensors --force \
    > train.out 2> train.err || fail "installed train --vocab $v: $(cat train.err)"
  grep -qF "the shipped vocabulary $(realpath "$P/share/storylm/models/vocab.txt")" train.err ||
    fail "installed train --vocab $v did not use the installed vocabulary: $(cat train.err)"
done
rm -f mine.txt v.*safetensors train.out train.err

# The installed playground, run from here, lists every shipped model and snapshot.
port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$P/bin/storylm" serve --port "$port" --train-dir trained > serve.log 2>&1 &
server=$!
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/api/models" > models.json && break; sleep 0.1; done
# the default model's test stories: the held-out ones installed beside it
curl -sf "http://127.0.0.1:$port/api/stories" > stories.json || true
kill "$server"; wait "$server" 2>/dev/null || true
"$PY" - stories.json <<'EOF' || fail "the installed serve does not read the installed held-out stories: $(head -c 300 stories.json; cat serve.log)"
import json, sys
got = json.load(open(sys.argv[1]))
assert got["file"].endswith("share/storylm/models/tinystories-test.txt") and len(got["stories"]) == 100, got["file"]
EOF
"$PY" - models.json "$STORYLM_SOURCE_DIR/models" <<'EOF' || fail "the installed serve does not list every shipped model: $(cat models.json serve.log)"
import glob, json, os, sys
listed = sorted(os.path.basename(m["path"]) for m in json.load(open(sys.argv[1]))["models"])
shipped = sorted(os.path.basename(f) for f in glob.glob(sys.argv[2] + "/*.safetensors") + glob.glob(sys.argv[2] + "/snapshots/*.safetensors"))
assert listed == shipped, (listed, shipped)
EOF

# A C program against the installed library, found by pkg-config alone.
cat > hello.c <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include "storylm/checkpoint.h"

int main(int argc, char **argv) {
    Model m;
    char *vocab;
    Error e = {0};
    if (argc < 2 || slm_checkpoint_load_model(argv[1], &m, &vocab, NULL, &e)) return fprintf(stderr, "%s\n", e.message), 1;
    printf("%d %zu\n", m.cfg.vocab_size, (size_t)m.n_params);
    free(vocab);
    slm_model_free(&m);
    return 0;
}
EOF
export PKG_CONFIG_PATH=$P/lib/pkgconfig
pkg-config --exists storylm || fail "pkg-config does not find storylm in $PKG_CONFIG_PATH"
# shellcheck disable=SC2046 # the flags are words
cc -std=c11 -Wall -Wextra -Werror hello.c $(pkg-config --cflags --libs storylm) -o hello 2> cc.err \
  || fail "building against the installed library: $(cat cc.err)"
./hello "$installed" > hello.txt || fail "the C program could not load the installed model"
want=$("$PY" -c 'import json,sys; i = json.load(open(sys.argv[1])); print(i["vocab_size"], i["model"]["parameters"])' info.json)
[[ $(cat hello.txt) == "$want" ]] || fail "the C program read '$(cat hello.txt)', info says '$want'"

# A build folder outside the source tree: the executable with the
# storylm-source.txt CMake writes beside it finds the source tree's model;
# the install never copies that file.
[[ -f $BUILD/storylm-source.txt ]] || fail "no storylm-source.txt in the build folder $BUILD"
[[ ! -e $P/bin/storylm-source.txt ]] || fail "storylm-source.txt was installed"
mkdir -p ../outside && cp "$STORYLM" "$BUILD/storylm-source.txt" ../outside/
(cd ../outside && ./storylm info >outside.txt 2>&1) || fail "a build outside the source tree: $(cat ../outside/outside.txt)"
grep -qF "$(realpath "$SRC_MODEL")" ../outside/outside.txt || fail "not the source tree's model: $(cat ../outside/outside.txt)"

# A copy of the binary with no data folder beside it: the error names every
# place it looked, the compiled-in data folder among them.
configured=$(grep '^CMAKE_INSTALL_PREFIX:' "$BUILD/CMakeCache.txt" | cut -d= -f2-)/share/storylm/models/tinystories.safetensors
if [[ -f $configured ]]; then
  echo "SKIP: storylm is installed in the configured prefix ($configured), so a lone binary finds it"; exit 77
fi
mkdir -p ../lone/bin && cp "$P/bin/storylm" ../lone/bin/
! ../lone/bin/storylm generate "Lily found a" -n 3 > /dev/null 2> lone.err || fail "a binary with no model anywhere generated"
lone=$(realpath ../lone/bin)
for place in "$lone/../models/tinystories.safetensors" "$lone/../share/storylm/models/tinystories.safetensors" \
             "$configured"; do
  grep -qF "$place" lone.err || fail "the error does not name $place: $(cat lone.err)"
done
grep -q "HINT" lone.err || fail "no hint: $(cat lone.err)"
echo "install: $(find "$P" -type f | wc -l) files; generate, info and a pkg-config program work from $PWD"
