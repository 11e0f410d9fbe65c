#!/usr/bin/env python3
"""The random generator's arrays, bit for bit, on every rank count, process grid and build.

    random_identity.py MPIEXEC RANDOM_DIGEST WORKDIR MAX_RANKS [--preflags=P] [--record F] [--against F]

Runs RANDOM_DIGEST (tests/random_digest.cpp) at 1 rank and on several grids at 2..MAX_RANKS ranks
(P: ;-separated mpiexec flags, e.g. --preflags=--bind-to;none), and fails unless every run wrote the same
bytes for every array and the same reproducible sums as the 1-rank run. --record F writes the
SHA-256 of each array and the sums as JSON; --against F (a record from another build, e.g. a GPU
run) fails unless this build's are the same.
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys


def digest(directory):
    out = {}
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if name.endswith(".bin"):
            with open(path, "rb") as f:
                data = f.read()
            out[name[:-4]] = "%s (%d bytes)" % (hashlib.sha256(data).hexdigest(), len(data))
    with open(os.path.join(directory, "sums.txt")) as f:
        for line in f:
            name, bits = line.split()
            out["sum " + name] = bits
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mpiexec")
    ap.add_argument("exe")
    ap.add_argument("workdir")
    ap.add_argument("max_ranks", type=int)
    ap.add_argument("--preflags", default="")
    ap.add_argument("--record")
    ap.add_argument("--against")
    a = ap.parse_args()
    runs = [(1, "auto"), (2, "rows"), (2, "columns"), (3, "auto"), (4, "columns")]
    runs = [r for r in runs if r[0] <= a.max_ranks]
    pre = [f for f in a.preflags.split(";") if f]
    shutil.rmtree(a.workdir, ignore_errors=True)
    results = {}
    for np_, grid in runs:
        d = os.path.join(a.workdir, "np%d_%s" % (np_, grid))
        os.makedirs(d)
        cmd = [a.mpiexec, "-n", str(np_)] + pre + [a.exe, d, grid]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)
        sys.stdout.write(p.stdout)
        if p.returncode != 0:
            print("random_identity: FAILED: %s exited with %d" % (" ".join(cmd), p.returncode))
            return 1
        results[(np_, grid)] = digest(d)
    base = results[runs[0]]
    bad = 0
    for key, got in results.items():
        for name in sorted(set(base) | set(got)):
            if got.get(name) != base.get(name):
                bad += 1
                print("random_identity: MISMATCH %s at %d ranks, grid %s: %s, at 1 rank: %s"
                      % (name, key[0], key[1], got.get(name), base.get(name)))
    for name in sorted(base):
        print("  %-16s %s" % (name, base[name]))
    print("random_identity: %d arrays and sums, %d runs (%s): %s"
          % (len(base), len(runs), ", ".join("%d ranks %s" % r for r in runs),
             "all the same bits" if bad == 0 else "%d differences" % bad))
    if a.record:
        with open(a.record, "w") as f:
            json.dump(base, f, indent=1, sort_keys=True)
    if a.against:
        with open(a.against) as f:
            other = json.load(f)
        diff = [n for n in sorted(set(base) | set(other)) if base.get(n) != other.get(n)]
        for n in diff:
            print("random_identity: MISMATCH against %s: %s here %s, there %s"
                  % (a.against, n, base.get(n), other.get(n)))
        print("random_identity: against %s: %s" % (a.against, "the same bits" if not diff else
                                                    "%d differences" % len(diff)))
        bad += len(diff)
    shutil.rmtree(a.workdir, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
