#!/usr/bin/env bash
# An architecture is one module that the rest of the code never looks behind
# (docs/architecture.md): its own headers live in its folder under src/arch,
# not among the library's public ones, and only its family of modules and the
# unit tests (whose include path has src/arch) include them; only the registry
# names an architecture.
set -euo pipefail
source "$STORYLM_SOURCE_DIR/tests/common.sh"
cd "$STORYLM_SOURCE_DIR"

# No public header declares an architecture's internals (its views, activations, kernels).
if grep -lE "TfViews|TfBlockViews|TfLayerActs|slm_transformer_|slm_tf_|slm_layernorm_|slm_act_(forward|backward)" \
  include/storylm/*.h; then
  fail "the public headers above declare an architecture's internals: keep them in its src/arch folder"
fi
# Outside src/arch and tests, nothing includes a header of an architecture's folder.
for d in src/arch/*/; do
  for h in "$d"*.h; do
    [[ -e "$h" ]] || continue
    name=$(basename "$h")
    hits=$(grep -rlE "#include \"([a-z_./]*/)?$name\"" src include python fuzz --include=*.[ch] | grep -v '^src/arch/' || true)
    [[ -z "$hits" ]] || fail "$h is private to src/arch, but included by: $hits"
  done
done
# Only the registry tells architectures apart by a discriminant.
hits=$(grep -rlE "ARCH_[A-Z]|arch *== *ARCH" src include | grep -vx 'src/arch/registry.c' || true)
[[ -z "$hits" ]] || fail "names an architecture outside the registry: $hits"
echo "ok: the architectures' headers are their modules' own"
