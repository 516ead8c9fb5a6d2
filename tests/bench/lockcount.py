#!/usr/bin/env python3
"""lockcount.py CALLGRIND_OUT LIBKYLIX CALLS: locked instructions of libkylix.so executed per
call, from a callgrind profile taken with --dump-instr=yes (run_lockcount.sh makes one), and the
functions they are in. A locked instruction is a LOCK-prefixed one or an XCHG with a memory
operand (`xchg %ax,%ax` is a no-op the Go assembler pads with)."""
import collections
import re
import subprocess
import sys


def executed(path):
    """Executions per instruction address of libkylix.so, and the lowest address seen per
    function (to place the library: callgrind records run-time addresses)."""
    counts, first = collections.Counter(), {}
    names, objs = {}, {}
    addr, obj, fn, after_call = 0, None, None, False
    for line in open(path):
        line = line.rstrip("\n")
        m = re.match(r"(c?)(ob|fn)=\((\d+)\)(?: (.*))?$", line)
        if m:
            table = objs if m.group(2) == "ob" else names
            if m.group(4):
                table[m.group(3)] = m.group(4)
            if not m.group(1):
                if m.group(2) == "ob":
                    obj = objs.get(m.group(3))
                else:
                    fn = names.get(m.group(3))
            continue
        if line.startswith("calls="):
            after_call = True  # the next line is the call's inclusive cost, not an execution
            continue
        if not line or line[0] not in "0123456789+-*":
            continue
        parts = line.split()
        a = parts[0]
        if a.startswith("0x"):
            addr = int(a, 16)
        elif a[0] in "+-":
            d = int(a[1:], 16) if a[1:].startswith("0x") else int(a[1:])
            addr = addr + d if a[0] == "+" else addr - d
        if after_call:
            after_call = False
            continue
        if obj and obj.endswith("libkylix.so") and len(parts) > 2:
            counts[addr] += int(parts[2])  # positions: instr line; events: Ir
            if fn and (fn not in first or addr < first[fn]):
                first[fn] = addr
    return counts, first


def main():
    cg, lib, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
    counts, first = executed(cg)
    # Place the library by an exported function the run called (any one will do).
    sym = subprocess.run(["nm", "-D", lib], capture_output=True, text=True, check=True).stdout
    exported = {l.split()[2]: int(l.split()[0], 16) for l in sym.splitlines()
                if len(l.split()) == 3 and l.split()[1] == "T"}
    name = next(f.split(":")[-1] for f in first if f.split(":")[-1] in exported)
    base = min(a for f, a in first.items() if f.split(":")[-1] == name) - exported[name]
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", lib], capture_output=True,
                         text=True, check=True).stdout
    locked, fn = {}, "?"
    for l in dis.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.*)>:$", l)
        if m:
            fn = m.group(1)
        elif re.search(r"\tlock |\txchg.*\(", l):
            locked[int(l.split(":")[0], 16)] = fn
    per = collections.Counter()
    for a, c in counts.items():
        if a - base in locked:
            per[locked[a - base]] += c
    print(f"locked instructions a call: {sum(per.values()) / calls:.1f}")
    for f, c in per.most_common():
        if c / calls >= 0.2:
            print(f"{c / calls:6.2f}  {f}")


if __name__ == "__main__":
    main()
