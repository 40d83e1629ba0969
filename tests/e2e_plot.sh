#!/usr/bin/env bash
# End to end, storylm plot: a table's columns become one polyline each, with
# the points the table has (gaps left out), in well-formed SVG with a legend
# naming the columns; bad input (no -o, no rows, a missing file) exits non-zero.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
S="$STORYLM"

printf 'step\ttrain & loss\ttest\n0\t5\t6\n10\t4\t-\n20\t3\t4.5\n30\t2.5\t4\n' > t.tsv
"$S" plot t.tsv -o t.svg --title "Loss <curves>" --y-label loss || fail "plot"
/usr/bin/python3 - t.svg <<'PY' || fail "the SVG"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
ns = "{http://www.w3.org/2000/svg}"
lines = [e for e in root.iter() if e.tag in (ns + "polyline", "polyline")]
assert len(lines) == 2, len(lines)
counts = sorted(len(l.get("points").split()) for l in lines)
assert counts == [3, 4], counts  # the test column has a gap at step 10
texts = " ".join(e.text or "" for e in root.iter() if e.tag in (ns + "text", "text"))
assert "train & loss" in texts and "test" in texts and "Loss <curves>" in texts, texts
PY
if "$S" plot t.tsv 2> err.txt; then fail "plot without -o succeeded"; fi
grep -q -- "-o FILE" err.txt || fail "no -o message: $(cat err.txt)"
printf 'step\tloss\n' > empty.tsv
if "$S" plot empty.tsv -o e.svg 2> err.txt; then fail "a table without rows was drawn"; fi
grep -q "no rows" err.txt || fail "no-rows message: $(cat err.txt)"
if "$S" plot missing.tsv -o m.svg 2> err.txt; then fail "a missing table was drawn"; fi
echo "plot: OK"
