#!/usr/bin/env bash
# The README is a short guide that works: at most 300 lines; its first two
# commands are the setup commands, the second the very command CI runs
# (.ci/run); every relative link of README.md, models/README.md and docs/*.md
# reaches a file (and a heading, where it names one); docs/cli.md is what the
# built binary's help says; the user docs name no issue numbers or load
# averages; the picture is a small PNG; and the README's quick-start commands run, from an empty folder.
set -euo pipefail
source "$STORYLM_SOURCE_DIR/tests/common.sh"
SRC="$STORYLM_SOURCE_DIR"
README="$SRC/README.md"

# At most 300 lines.
lines=$(wc -l < "$README")
(( lines <= 300 )) || fail "README.md has $lines lines; at most 300 (move the detail to a docs/ page)"

# The first two commands (indented code lines) are the setup commands, first in
# the file, and the second is the test command .ci/run runs, character for character.
mapfile -t cmds < <(grep -m2 '^    [^ ]' "$README" | sed 's/^    //')
first_code_line=$(grep -n -m1 '^    [^ ]' "$README" | cut -d: -f1)
(( first_code_line <= 6 )) || fail "README.md's first command is on line $first_code_line, not among its first lines"
[[ "${cmds[0]}" == "scripts/setup && "*" && build/storylm train data/stories.txt" ]] ||
  fail "README.md's first command is not the main job's setup command: '${cmds[0]}'"
ci_cmd=$(grep -A1 '^# README test command:' "$SRC/.ci/run" | tail -1)
[[ -n "$ci_cmd" ]] || fail ".ci/run has no line after '# README test command:'"
[[ "${cmds[1]}" == "$ci_cmd" ]] ||
  fail "README.md's test command and .ci/run's differ:
  README: ${cmds[1]}
  .ci/run: $ci_cmd"

# Every relative link reaches an existing file, and a heading of it where the
# link names one (GitHub's anchors: lower case, punctuation dropped, spaces as -).
"$PY" - "$SRC" <<'PY' || fail "broken links in the docs (above)"
import glob, os, re, sys
src = sys.argv[1]
os.chdir(src)
def anchors(path):
    text = re.sub(r"(?ms)^```.*?^```", "", open(path, encoding="utf-8").read())
    out = set()
    for h in re.findall(r"(?m)^#+ +(.+?) *$", text):
        out.add(re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-"))
    return out
bad = 0
files = ["README.md", "models/README.md"] + sorted(glob.glob("docs/*.md"))
for f in files:
    text = re.sub(r"(?ms)^```.*?^```", "", open(f, encoding="utf-8").read())
    for target in re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue                      # http:, https:, mailto:
        path, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
        if not os.path.exists(full):
            print(f"{f}: link to '{target}': no such file {full}"); bad += 1
        elif anchor and full.endswith(".md") and anchor not in anchors(full):
            print(f"{f}: link to '{target}': {full} has no heading '#{anchor}'"); bad += 1
print(f"{len(files)} pages checked, {bad} broken links")
sys.exit(1 if bad else 0)
PY

# The README's picture is a PNG small enough for a repository (under 200 KB).
png="$SRC/docs/playground.png"
[[ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')" == 89504e470d0a1a0a ]] || fail "docs/playground.png is not a PNG"
(( $(wc -c < "$png") < 200000 )) || fail "docs/playground.png is $(wc -c < "$png") bytes; keep it under 200 KB"

# docs/cli.md is the built binary's help (scripts/cli_reference writes it).
"$SRC/scripts/cli_reference" --check "$STORYLM" >cli.diff 2>&1 || { cat cli.diff; fail "docs/cli.md is out of date: run scripts/cli_reference"; }

# User docs name no issue numbers and no load averages of the machine that wrote them.
if grep -n -i -E '\bissue [0-9]+|load average' "$README" "$SRC"/docs/*.md "$SRC/models/README.md"; then
  fail "the user docs above mention an issue number or a load average"
fi

# The README's quick start runs from an empty folder: every 'build/storylm ...'
# command but serve's, with build/ and the source tree's data/ and models/ at
# hand, 'mine.txt' a copy of the project's stories, and training cut to 2 steps.
mkdir -p quick/build && cd quick
ln -s "$STORYLM" build/storylm
ln -s "$SRC/data" data && ln -s "$SRC/models" models
cp "$SRC/data/stories.txt" mine.txt
"$PY" - "$README" > quick.sh <<'PY'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read().replace("\\\n", " ")
for line in text.splitlines():
    m = re.match(r"^    (build/storylm .*)$", line)
    if not m or " serve" in line.split("#")[0]:
        continue
    cmd = re.sub(r" {2,}#.*$", "", m.group(1))        # a comment after the command
    if cmd.startswith("build/storylm train"):
        cmd = re.sub(r"--steps \d+", "", cmd) + " --steps 2 --eval-every 0"
    print(cmd)
PY
(( $(wc -l < quick.sh) >= 6 )) || { cat quick.sh; fail "found fewer than 6 quick-start commands in README.md"; }
n=0
while IFS= read -r cmd; do
  n=$((n + 1))
  bash -c "$cmd" >out.$n 2>err.$n || { cat err.$n; fail "README command failed: $cmd"; }
done < quick.sh
[[ -s first.safetensors && -s model.safetensors && -s distances.svg ]] || fail "the quick start did not write its files"

# The researcher examples quote the shipped model's numbers, and still print
# them after the writer's commands left a model.safetensors of their own here
# (they name the shipped model): ablate's name probability without head 3,
# patch's head 3 at either mention of the name.
n=0
while IFS= read -r cmd; do
  n=$((n + 1))
  case "$cmd" in
    *" ablate "*"data/stories.txt") ablate=out.$n ;;
    *" patch "*) patch=out.$n ;;
  esac
done < quick.sh
[[ -n ${ablate:-} && -n ${patch:-} ]] || fail "no ablate or patch example found in README.md"
said=$(awk '$1 == "none" {printf "%.2f", $8} $1 == "3" {printf " %.3f", $8}' "$ablate")
grep -q "falls from ${said% *} to ${said#* }" "$README" || { cat "$ablate"; fail "ablate prints name p '$said' beside model.safetensors; README.md quotes other numbers"; }
said=$(awk '$2 == "max" && $3 == "tom" {printf "%s%.2f", (n++ ? " and " : ""), $8}' "$patch")
grep -q "bring back $said of the clean run" "$README" || { cat "$patch"; fail "patch prints head 3 '$said' beside model.safetensors; README.md quotes other numbers"; }
echo "e2e_readme: README $lines lines, $n quick-start commands run"
