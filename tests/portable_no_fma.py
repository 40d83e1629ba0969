#!/usr/bin/env python3
"""The portable kernels reach no fused multiply-add.

    portable_no_fma.py BINARY OBJECT...

--kernels portable promises one rounding per operation, so that its bits do
not depend on the CPU (docs/kernels.md). The portable files are compiled with
-ffp-contract=off, but the portable generators are the default generators
compiled a second time with renaming macros: a kernel added to the default
file without its renaming line would be called, FMAs and all, from the
portable path. So this walks the binary's call graph (objdump's direct calls
and jumps) from every function the portable OBJECTs define and fails on any
function reached that holds an FMA instruction, with the path to it.
Calls through a pointer are not followed (the architectures' tables).
"""
import re
import subprocess
import sys

FMA = re.compile(r"\tv?fn?m(add|sub)")
HEAD = re.compile(r"^[0-9a-f]+ <([^>]+)>:$")
CALL = re.compile(r"\t(?:call|jmp|j[a-z]+)\s+[0-9a-f]+ <([^>+]+)>")


def functions(binary):
    """{name: (has_fma, {callees})} of the binary's text."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", binary], check=True, capture_output=True,
                         text=True).stdout
    funcs, name = {}, None
    for line in out.splitlines():
        m = HEAD.match(line)
        if m:
            name = m.group(1)
            funcs[name] = [False, set()]
        elif name:
            if FMA.search(line):
                funcs[name][0] = True
            c = CALL.search(line)
            if c and c.group(1) != name:
                funcs[name][1].add(c.group(1))
    return funcs


def roots(objects):
    """The names of the functions the objects define (static ones too)."""
    names = set()
    for o in objects:
        out = subprocess.run(["nm", "--defined-only", o], check=True, capture_output=True, text=True).stdout
        names |= {f[2] for f in (line.split() for line in out.splitlines()) if len(f) == 3 and f[1] in "tT"}
    return names


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: portable_no_fma.py BINARY OBJECT...")
    funcs = functions(sys.argv[1])
    if not any(f[0] for f in funcs.values()):
        print("portable_no_fma: the binary has no FMA at all (built without them?): nothing to tell apart")
        return 77
    base = lambda n: n.split(".")[0]  # foo.constprop.0, foo.part.1: the compiler's copies of foo
    want = roots([o for arg in sys.argv[2:] for o in arg.split(";") if o])  # a CMake list is one argument
    start = [n for n in funcs if base(n) in want]
    if len(start) < len(want) // 2:
        sys.exit(f"portable_no_fma: only {len(start)} of the objects' {len(want)} functions are in the binary")
    path = {n: [n] for n in start}
    todo, bad = list(start), []
    while todo:
        n = todo.pop()
        has_fma, callees = funcs.get(n, (False, ()))
        if has_fma:
            bad.append(" -> ".join(path[n]))
        for c in sorted(callees):
            if c not in path and c in funcs:
                path[c] = path[n] + [c]
                todo.append(c)
    print(f"portable_no_fma: {len(start)} portable functions, {len(path)} reached")
    for b in bad:
        print(f"FMA reached: {b}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
