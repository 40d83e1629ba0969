#!/usr/bin/env bash
# docs/results.md's table "Loss per character: every shipped model" holds what
# eval says today: every models/*.safetensors has a row, and each row's
# nats/token, nats/character and bits/character are `storylm eval --json`'s
# loss, loss_per_char and bits_per_char to the table's 4 digits, on the 100
# stories the shipped models held out (models/tinystories-test.txt, the same
# stories, characters and positions as the training file's held-out 100). So
# a model replaced without scripts/results run again fails here.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

src=$STORYLM_SOURCE_DIR
[[ -f "$src/models/tinystories-test.txt" ]] || skip "no models/tinystories-test.txt"
"$PY" - "$STORYLM" "$src" <<'PY' || fail "docs/results.md's loss per character is not eval's"
import glob, json, os, re, subprocess, sys
storylm, src = sys.argv[1], sys.argv[2]
page = open(os.path.join(src, "docs", "results.md")).read()
section = page.split("## Loss per character: every shipped model", 1)[1].split("\n## ", 1)[0]
rows = {m: tuple(v) for m, *v in re.findall(
    r"^\| (models/\S+\.safetensors) \| ([0-9.]+) \| ([0-9.]+) \| ([0-9.]+) \|$", section, re.M)}
shipped = sorted(os.path.relpath(p, src) for p in glob.glob(os.path.join(src, "models", "*.safetensors")))
assert "models/tinystories.safetensors" in rows, "no row for the default model"
missing = [m for m in shipped if m not in rows]
assert not missing, "shipped models without a row: %s" % missing
bad = []
for model, want in sorted(rows.items()):
    out = subprocess.run([storylm, "eval", os.path.join(src, "models", "tinystories-test.txt"), "--all", "-m",
                          os.path.join(src, model), "--threads", "1", "--json"], capture_output=True, text=True, check=True)
    j = json.loads(out.stdout)
    assert j["stories_evaluated"] == 100, (model, j["stories_evaluated"])
    got = tuple("%.4f" % j[k] for k in ("loss", "loss_per_char", "bits_per_char"))
    print("%-55s table %s, eval %s" % (model, want, got))
    if got != want:
        bad.append(model)
assert not bad, "rows that are not eval's numbers: %s (run scripts/results again)" % bad
PY
echo "e2e_results_per_char: every shipped model's row is eval's"
