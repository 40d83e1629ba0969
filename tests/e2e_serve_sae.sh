#!/usr/bin/env bash
# /api/sae/features through real HTTP: for a model with an SAE beside it
# (MODEL.sae/), /api/models says so and the route answers what `storylm sae
# features --json` prints for the same stories and options (but the folder's
# name, "sae"), its fields read with the CLI's table; a model without an SAE
# is a 404, a field out of range, of the wrong type or unknown, a list of
# latents that is not one and a latent the SAE lacks are 400s naming the field.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
"$STORYLM" serve --help >/dev/null 2>&1 || skip "this storylm has no serve verb"
source "$STORYLM_SOURCE_DIR/tests/sae_serve.sh"
url="http://127.0.0.1:$port"

curl -sf "$url/api/models" > models.json
"$PY" - models.json <<'PY' || fail "/api/models does not say which model has an SAE"
import json, sys
by = {m["name"]: m for m in json.load(open(sys.argv[1]))["models"]}
assert by["tiny.safetensors"]["sae"] is True and by["plain.safetensors"]["sae"] is False, by
PY
tiny=$("$PY" -c 'import json,sys; print([m["path"] for m in json.load(open(sys.argv[1]))["models"] if m["name"] == "tiny.safetensors"][0])' models.json)
plain=${tiny%tiny.safetensors}plain.safetensors

# post BODY -> the status, the answer in answer.json
post() { curl -s -o answer.json -w '%{http_code}' -H 'Content-Type: application/json' -d "$1" "$url/api/sae/features"; }

for opts in '' '"latents": 3, "contexts": 2, "promoted": 4, "width": 5' '"latent": "7,3"'; do
  status=$(post "{\"model\": \"$tiny\"${opts:+, $opts}}")
  [[ $status == 200 ]] || { cat answer.json; fail "/api/sae/features {$opts}: status $status"; }
  args=$("$PY" -c 'import json,sys; o = json.loads("{" + sys.argv[1] + "}"); print(" ".join("--%s %s" % (k, v) for k, v in o.items()))' "$opts")
  # shellcheck disable=SC2086
  "$STORYLM" "${sae_cli[@]}" $args > cli.json 2>/dev/null || fail "sae features $args"
  "$PY" - answer.json cli.json "$opts" <<'PY' || fail "/api/sae/features {$opts} differs from sae features --json"
import json, sys
served, cli = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert served.pop("sae").endswith("tiny.sae") and cli.pop("sae") == "models/tiny.sae"
assert served == cli, "the answers differ"
assert served["features"] and all(c["tokens"] for f in served["features"] for c in f["contexts"])
print("/api/sae/features {%s}: %d latents, the CLI's answer" % (sys.argv[3], len(served["features"])))
PY
done

# refusals: the status and a message naming the field
refuse() { # BODY STATUS PATTERN
  status=$(post "$1")
  [[ $status == "$2" ]] || { cat answer.json; fail "/api/sae/features $1: status $status, not $2"; }
  grep -q -- "$3" answer.json || { cat answer.json; fail "/api/sae/features $1: no message matching '$3'"; }
}
refuse "{\"model\": \"$plain\"}" 404 "has no SAE beside it"
refuse '{"model": "models/nowhere.safetensors"}' 404 "nowhere"
refuse "{\"model\": \"$tiny\", \"latents\": 0}" 400 '\\"latents\\": 0 is out of range'
refuse "{\"model\": \"$tiny\", \"latents\": \"x\"}" 400 '\\"latents\\"'
refuse "{\"model\": \"$tiny\", \"latnts\": 3}" 400 'did you mean \\"latents\\"'
refuse "{\"model\": \"$tiny\", \"latent\": \"5,x\"}" 400 'is not a list of latents'
refuse "{\"model\": \"$tiny\", \"latent\": \"9999\"}" 400 'no latent 9999'
refuse "{\"model\": \"$tiny\", \"width\": 65}" 400 '\\"width\\": 65 is out of range'
status=$(curl -s -o answer.json -w '%{http_code}' "$url/api/sae/features")
[[ $status == 405 ]] || { cat answer.json; fail "GET /api/sae/features: status $status, not 405"; }
kill -0 "$server" || fail "the server died"
echo "serve: /api/sae/features answers sae features --json and refuses bad fields"
