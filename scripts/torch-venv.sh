#!/usr/bin/env bash
# Makes the venv the torch 2.x backend is built and tested in:
# build/torch-venv (or $XCCL_TORCH_VENV) with torch 2.13.0, CPU build, for
# the python3 first on PATH, and what torch's own distributed test suite
# imports (expecttest, hypothesis) plus numpy and pytest. cmake/torch.cmake
# looks for build/torch-venv/bin/python.
#
# torch is pinned: this machine image keeps the 2.13.0 CPU wheel on disk,
# where pip takes it from without a download, while an open range would
# fetch a newer CUDA build of several GB. Debian's own python3-torch (1.13 on
# Debian 12, 2.6 on 13) stays testable through /usr/bin/python3.
# A second run with everything in place costs a second.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${XCCL_TORCH_VENV:-build/torch-venv}
want=2.13.0
py=$(command -v python3)
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "
import sys, torch, expecttest, hypothesis, numpy, pytest
sys.exit(0 if torch.__version__.split('+')[0] == '$want' else 1)" 2>/dev/null; then
  exit 0
fi
echo "torch-venv: making $venv with torch $want for $py ($("$py" --version 2>&1))"
"$py" -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check "torch==$want" numpy pytest expecttest hypothesis
"$venv/bin/python" -c "import torch; print('torch-venv: torch', torch.__version__, 'in $venv')"
