#!/usr/bin/env python3
"""One run of an app for ctest: `mpiexec -n NP APP ARGS... --json WORKDIR/report.json`; passes when
the app exits with status 0 and its report conforms to the schema (apptest.check_report).

usage: run_app.py MPIEXEC APP_EXE NP WORKDIR [ARGS...]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import apptest  # noqa: E402

mpiexec, exe, np_, work = sys.argv[1:5]
apptest.fresh(work)
r = apptest.run(mpiexec, exe, int(np_), sys.argv[5:], os.path.join(work, "report.json"))
print(f"{r['app']}: exit {r['exit']['status']} ({r['exit']['outcome']}), report conforms to {apptest.SCHEMA}")
