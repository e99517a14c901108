"""What the observe tests (test_stats.py, test_trace.py) share: running a
job and failing with a sentence and the output's tail."""
import os
import subprocess
import sys


def run(cmd, env, timeout=60):
    """(exit status, stdout and stderr) of cmd with env over ours; a None value unsets the variable."""
    full = dict(os.environ, **env)
    for k in [k for k, v in env.items() if v is None]:
        full.pop(k, None)
    p = subprocess.run(cmd, env=full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    return p.returncode, p.stdout


def check(cond, msg, out=""):
    if not cond:
        print("FAIL:", msg)
        if out:
            print(out[-4000:])
        sys.exit(1)
