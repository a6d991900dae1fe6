#!/usr/bin/env bash
# The whole GPU check on a lent GPU machine, as one command, in a 9-minute budget:
#   1. benchmarks/gpu_bundle_install.py checks the bundle's parts (gpu-bundle/part-N, carried with the call) and
#      installs them, offline, into a fresh venv that sees the machine's own torch, transformers, peft, ...;
#   2. benchmarks/gpu_check.py --require runs in that venv, its --time-budget what is left of the 9 minutes after
#      the install, less a minute for the part still running when it runs out.
# Run from the checkout's root: `bash benchmarks/gpu_run.sh`; docs/benchmarks.md, "The GPU check on a lent GPU
# machine", gives the exact calls. Its last line is the check's `gpu check: K of M parts passed`; exit status 0
# only when every part passed, 3 when the bundle is incomplete, damaged or built from other seal_hub sources than this
# checkout (one line says what to do).
# Settings: GPU_PYTHON (the machine's python3), GPU_VENV (/tmp/seal-gpu-check), GPU_BUNDLE (gpu-bundle),
# GPU_SECONDS (540: the whole run's budget). Arguments are passed on to gpu_check.py (for example --models Qwen2.5-3B).
set -uo pipefail
cd "$(dirname "$0")/.."
python=${GPU_PYTHON:-python3}
venv=${GPU_VENV:-/tmp/seal-gpu-check}
bundle=${GPU_BUNDLE:-gpu-bundle}
budget=${GPU_SECONDS:-540}
in_flight=60 # seconds kept for the part that is running when the check's budget is spent
start=$SECONDS

"$python" benchmarks/gpu_bundle_install.py "$bundle" --venv "$venv" --checkout "$PWD" || exit 3
left=$((budget - (SECONDS - start) - in_flight))
if ((left < 60)); then
    echo "gpu_run: the install left ${left} s of the ${budget} s budget; give a larger GPU_SECONDS" >&2
    exit 3
fi
echo "gpu_run: installed in $((SECONDS - start)) s; the check gets --time-budget ${left}"
PYTHONUNBUFFERED=1 "$venv/bin/python" benchmarks/gpu_check.py --require --time-budget "$left" "$@"
