"""The private TRL members SEAL touches (`seal_hub.training.trl_private`) still exist on the installed
`trl.GRPOTrainer`, with the parameters SEAL passes on; and the table lists every one the training code touches, so
a TRL upgrade that removes or reshapes one fails here, by name, not in the middle of a run."""

from __future__ import annotations

import importlib.metadata
import inspect
import re
from pathlib import Path

import pytest
from trl import GRPOTrainer

from seal_hub.training.trl_private import CHECKED, PRIVATE_MEMBERS

TRAINING = Path(__file__).resolve().parents[1] / "seal_hub" / "training"


def library_classes() -> list[type]:
    """GRPOTrainer and the TRL and transformers classes it inherits from."""
    return [c for c in GRPOTrainer.__mro__ if c.__module__.split(".")[0] in ("trl", "transformers")]


def set_on_instance(name: str) -> bool:
    """Whether a library class's source assigns ``self.<name>``."""
    pattern = re.compile(rf"self\.{re.escape(name)}\s*(:[^=\n]+)?=[^=]")
    return any(pattern.search(inspect.getsource(c)) for c in library_classes())


@pytest.mark.parametrize("member", PRIVATE_MEMBERS, ids=lambda m: m.name)
def test_each_listed_member_still_exists_on_grpo_trainer(member):
    if member.kind == "attribute":
        assert set_on_instance(member.name), f"GRPOTrainer no longer sets self.{member.name} ({member.why})"
        return
    found = getattr(GRPOTrainer, member.name, None)
    assert found is not None, f"GRPOTrainer.{member.name} is gone ({member.why})"
    if member.kind in ("override", "method"):
        parameters = list(inspect.signature(found).parameters)
        assert parameters[: len(member.params)] == list(member.params), (
            f"GRPOTrainer.{member.name}'s parameters are now {parameters}; SEAL passes {list(member.params)}"
        )


def test_every_private_library_member_the_training_code_touches_is_listed():
    listed = {m.name for m in PRIVATE_MEMBERS}
    sources = {p.name: p.read_text(encoding="utf-8") for p in TRAINING.glob("*.py")}
    touched = {
        (name, file)
        for file, text in sources.items()
        for name in re.findall(r"(?:self|super\(\)|trainer)\.(_[a-z]\w*)", text)
        if hasattr(GRPOTrainer, name) or set_on_instance(name)
    }
    unlisted = sorted(f"{name} ({file})" for name, file in touched if name not in listed)
    assert not unlisted, f"private TRL/transformers members touched but not in trl_private.PRIVATE_MEMBERS: {unlisted}"


def test_the_table_names_the_installed_versions():
    installed = {package: importlib.metadata.version(package) for package in CHECKED}
    assert installed == CHECKED, "re-check seal_hub/training/trl_private.py against the new releases; update CHECKED"
