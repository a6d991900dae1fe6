"""The rho update's settings as one frozen record built from `SealConfig`'s flat fields (`rho_settings()`), and
interface evolution's likewise (`evolve_config()`): the names users set are the config's, an invalid value is
refused when the config is made, and the trainer's window follows the record."""

from __future__ import annotations

import pytest
from trl import GRPOConfig

from seal_hub.diagnosis import DEFAULT_RHO, Label, RolloutDiagnosis
from seal_hub.interface.evolve import EvolveConfig
from seal_hub.interface.rho import RhoSettings, RhoWindow
from seal_hub.training import SealConfig


def config(tmp_path, **changes) -> SealConfig:
    return SealConfig(output_dir=str(tmp_path), use_cpu=True, report_to=[], **changes)


def test_seal_config_is_flat_with_one_parent_and_builds_both_records(tmp_path):
    assert SealConfig.__bases__ == (GRPOConfig,)
    made = config(tmp_path, closed_loop=False, reweighting=False, rho_beta=0.5, rho_max=1.5, hint_kinds=["bad_path"])
    assert made.rho_settings() == RhoSettings(closed_loop=False, reweighting=False, rho_beta=0.5, rho_max=1.5)
    rules = made.evolve_config(tool_errors=False, default_values=True)
    assert rules == EvolveConfig(recovery_feedback=False, default_values=True, hint_kinds=("bad_path",))
    released = config(tmp_path, interface_mode="released").evolve_config()
    assert (released.schema_cues, released.recovery_feedback, released.capability_guidelines) == (True, False, False)


@pytest.mark.parametrize(
    ("field", "value"),
    [("rho_beta", 1.5), ("rho_min", 3.0), ("rho_count_scale", 0.0), ("max_guidelines", 9), ("hint_kinds", ["x"])],
)
def test_an_invalid_setting_is_refused_when_the_config_is_made_with_its_name(tmp_path, field, value):
    with pytest.raises(ValueError, match=rf"^{field}"):
        config(tmp_path, **{field: value})


def test_the_window_follows_the_configs_switches(tmp_path):
    failed = RolloutDiagnosis("t0", 0.0, (Label.MISSING_TOOL_CALL, Label.PASS))
    fixed = RhoWindow(config(tmp_path, closed_loop=False).rho_settings())
    assert fixed.step([failed]) == DEFAULT_RHO and fixed.weights([failed]) == [1.25]  # (1.5 + 1.0) / 2
    moving = RhoWindow(config(tmp_path, rho_beta=1.0, rho_count_scale=1.0).rho_settings())
    # beta 1: straight to the target, 1.5 * (1 + 1/2 * 1 * 1) = 2.25, clamped to rho_max 2.0
    assert moving.step([failed])[Label.MISSING_TOOL_CALL] == 2.0 and moving.weights([failed]) == [1.5]
    assert RhoWindow(config(tmp_path, reweighting=False).rho_settings()).weights([failed]) == [1.0]
