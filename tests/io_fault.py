#!/usr/bin/env python3
"""Crash-safety test of spmd::io::save (fault injection).

For every phase of a save (before_write, mid_dataset, before_rename) and for rank 0 and rank 1
of 2: write checkpoint step 1, then start a save of step 2 with SPMD_IO_FAULT=<phase>:<rank>, which
makes that rank SIGKILL itself there. Checks: the killed job fails; ckpt.h5 and its sidecar
ckpt.xmf are byte-identical to the step-1 files; a temporary is left beside it once writing had
started (mid_dataset, before_rename), and rank 0 killed at before_rename leaves the sidecar's
temporary too (it is written before the rename); `io_fault verify` loads step 1 bit-identically
on another grid and a new save removes the stale temporaries.

usage: io_fault.py MPIEXEC IO_FAULT_EXE WORKDIR
"""
import os
import shutil
import subprocess
import sys

mpiexec, exe, work = sys.argv[1:4]
env = dict(os.environ, OMP_NUM_THREADS="1", OMP_PROC_BIND="false")
env.pop("SPMD_IO_FAULT", None)


def run(args, fault=None, expect_ok=True):
    e = dict(env)
    if fault:
        e["SPMD_IO_FAULT"] = fault
    p = subprocess.run([mpiexec, "-n", "2", exe] + args, env=e, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=120)
    if (p.returncode == 0) != expect_ok:
        print(p.stdout)
        sys.exit(f"FAIL: {args} with SPMD_IO_FAULT={fault}: exit code {p.returncode}")
    return p.stdout


failures = 0
for phase in ("before_write", "mid_dataset", "before_rename"):
    for rank in (0, 1):
        d = os.path.join(work, f"{phase}-{rank}")
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        run(["write", d, "1"])
        with open(os.path.join(d, "ckpt.h5"), "rb") as f:
            before = f.read()
        with open(os.path.join(d, "ckpt.xmf"), "rb") as f:
            xmf_before = f.read()  # its <Time> is the step's: a new one would differ
        out = run(["write", d, "2"], fault=f"{phase}:{rank}", expect_ok=False)
        if f"kills itself at {phase}" not in out:
            print(out)
            sys.exit(f"FAIL: the fault {phase}:{rank} did not fire")
        with open(os.path.join(d, "ckpt.h5"), "rb") as f:
            if f.read() != before:
                sys.exit(f"FAIL: {phase}:{rank}: ckpt.h5 changed although the save died")
        with open(os.path.join(d, "ckpt.xmf"), "rb") as f:
            if f.read() != xmf_before:
                sys.exit(f"FAIL: {phase}:{rank}: ckpt.xmf changed although the save died")
        temps = [n for n in os.listdir(d) if n.startswith(".ckpt.h5.tmp-")]
        if phase != "before_write" and not temps:
            sys.exit(f"FAIL: {phase}:{rank}: expected a stale temporary, found {os.listdir(d)}")
        # rank 0 writes (and fsyncs) the sidecar's temporary before the checkpoint's rename (when
        # rank 1 dies there, rank 0 may be killed before it has written it)
        if (phase, rank) == ("before_rename", 0) and not [n for n in os.listdir(d)
                                                          if n.startswith(".ckpt.xmf.tmp-")]:
            sys.exit(f"FAIL: {phase}:{rank}: expected the sidecar's temporary, found {os.listdir(d)}")
        print(run(["verify", d, "1"]).strip().splitlines()[-1], f"after a kill at {phase}:{rank}",
              f"({len(temps)} stale temporary ignored and removed)")
print("io_fault: all crash cases leave the previous checkpoint intact")
