#!/usr/bin/env python3
"""Two printed outputs the same but for their decimals' last digits.

    same_numbers.py EXPECTED ACTUAL     (exit 0 when the same; else the lines that differ)

The walk-through's committed outputs print losses to 6 or 7 digits, which
the default kernels compute in the order of the CPU's vector width (AVX-512,
AVX2, ...; only --kernels portable is the same bits everywhere): their last
digits differ between machines. So a decimal number matches one within a
relative 1e-5 (two of those digits); whole numbers (counts, ids) and every
other word must be equal. Lines starting with [plot] are left out (whether
matplotlib drew depends on the machine).
"""
import re
import sys

DECIMAL = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?|-?\d+e[-+]?\d+")
WORD = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?|-?\d+e[-+]?\d+|\s+|[^\s\d.-]+|.")


def same_word(a, b):
    if a == b:
        return True
    if DECIMAL.fullmatch(a) and DECIMAL.fullmatch(b):
        x, y = float(a), float(b)
        return abs(x - y) <= 1e-5 * max(1.0, abs(x), abs(y))
    return False


def same_line(a, b):
    wa, wb = WORD.findall(a), WORD.findall(b)
    return len(wa) == len(wb) and all(same_word(x, y) for x, y in zip(wa, wb))


def differing(expected, actual):
    """The (line number, expected, actual) that differ; [plot] lines left out."""
    keep = lambda lines: [l for l in lines if not l.startswith("[plot]")]
    e, a = keep(expected), keep(actual)
    out = [(i + 1, x, y) for i, (x, y) in enumerate(zip(e, a)) if not same_line(x, y)]
    if len(e) != len(a):
        out.append((min(len(e), len(a)) + 1, f"({len(e)} lines)", f"({len(a)} lines)"))
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: same_numbers.py EXPECTED ACTUAL")
    lines = [open(p, encoding="utf-8").read().splitlines() for p in sys.argv[1:]]
    bad = differing(*lines)
    for n, x, y in bad:
        print(f"line {n}:\n- {x}\n+ {y}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
