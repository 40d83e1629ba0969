#!/usr/bin/env bash
# End to end: sae features --svg FILE. The picture is well-formed XML, an
# <svg> that carries each latent asked for (its title line), one framed token
# for each of its contexts (the firing one), and each token's value as
# --json gives it (the tooltips), a latent that never fires saying so; --json
# and --svg together give both; an
# --svg onto an input file is refused before any work.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

sae_tiny_model
common=(-m tiny.safetensors --test-stories 20 --threads 2)
"$STORYLM" sae train slice.txt "${common[@]}" --tokens 20480 --batch-tokens 1024 --seed 3 --expansion 4 --k 8 \
  -o sae1 2>sae.log >/dev/null || { cat sae.log; fail "sae train"; }

"$STORYLM" sae features sae1 slice.txt "${common[@]}" --latents 3 --svg features.svg >table.txt 2>err.txt ||
  { cat err.txt; fail "sae features --svg"; }
[[ $(grep -c "^latent " table.txt) == 3 ]] || fail "--svg without --json no longer prints the table"
"$STORYLM" sae features sae1 slice.txt "${common[@]}" --latents 3 --json --svg both.svg >features.json 2>/dev/null ||
  fail "sae features --json --svg"
cmp features.svg both.svg || fail "--svg draws another picture beside --json"
"$PY" - features.svg features.json <<'PY' || fail "the SVG"
import json, re, sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()  # raises on XML that is not well formed
NS = "{http://www.w3.org/2000/svg}"
assert root.tag == NS + "svg", root.tag
texts = [t.text or "" for t in root.iter(NS + "text")]
j = json.load(open(sys.argv[2]))
rects = [r for r in root.iter(NS + "rect") if r.find(NS + "title") is not None]
tips = [r.find(NS + "title").text for r in rects]
framed = [r for r in rects if r.get("stroke") not in (None, "none")]
n_contexts = 0
for f in j["features"]:
    assert any(t.startswith("latent %d " % f["latent"]) for t in texts), (f["latent"], texts[:5])
    n_contexts += len(f["contexts"])
    for c in f["contexts"]:
        for t in c["tokens"]:
            want = "%s: %.4g" % (t["token"], t["value"])
            assert want in tips, (want, tips[:10])
    assert any(t.startswith("promotes:") and f["promotes"][0]["token"] in t for t in texts)
assert len(j["features"]) == 3 and len(framed) == n_contexts > 0, (len(framed), n_contexts)
print("svg: %d latents, %d contexts, %d shaded tokens" % (len(j["features"]), n_contexts, len(rects)))
PY
# a latent that never fires says so
"$STORYLM" sae features sae1 slice.txt "${common[@]}" --latent 5 --json --svg dead.svg >dead.json 2>/dev/null ||
  fail "sae features --latent 5 --svg"
if "$PY" -c 'import json,sys; sys.exit(len(json.load(open(sys.argv[1]))["features"][0]["contexts"]))' dead.json; then
  grep -q "fires on none" dead.svg || fail "the SVG of a latent that never fires does not say so"
fi
if "$STORYLM" sae features sae1 slice.txt "${common[@]}" --latent 5 --svg slice.txt >/dev/null 2>err.txt; then
  fail "--svg onto the stories file was accepted"
fi
grep -q "slice.txt" err.txt || { cat err.txt; fail "no message for --svg onto an input"; }
first_stories 200 | cmp - slice.txt || fail "--svg wrote over the stories"
echo "e2e_sae_svg: ok"
