"""Interface evolution (guideline thresholds at their boundaries, ranking, no-change, determinism, versions)
and the closed-loop rho update on hand-computed numbers, with clamping and the per-epoch window."""

from __future__ import annotations

import pytest

from seal_hub.diagnosis import DEFAULT_RHO, FailureProfile, Label, LabelStats, RolloutDiagnosis
from seal_hub.envs.protocol import ErrorKind
from seal_hub.interface import InterfaceSnapshot, diff
from seal_hub.interface.evolve import GUIDELINES, RECOVERY_HINTS, EvolveConfig, evolve, next_version, select_guidelines
from seal_hub.interface.rho import RhoSettings, RhoWindow, update_rho
from seal_hub.interface.snapshot import CauseProfile

L = Label


def profile(turns: int = 100, rollouts: int = 40, **labels: tuple[int, float, float]) -> FailureProfile:
    """labels: name=(count, prevalence, mean_reward)."""
    return FailureProfile({L(name): LabelStats(*stats) for name, stats in labels.items()}, rollouts, turns)


def guideline_labels(snapshot: InterfaceSnapshot) -> list[Label]:
    return [line.label for line in snapshot.capability_guidelines.lines]


@pytest.mark.parametrize(
    ("count", "prevalence", "mean_reward", "selected"),
    [
        (8, 0.10, 0.59, True),  # every threshold met exactly at its boundary
        (7, 0.10, 0.59, False),  # count one short
        (8, 0.099, 0.59, False),  # prevalence just under 0.10
        (8, 0.10, 0.60, False),  # mean reward must be strictly below 0.6
        (9, 0.11, 0.0, True),
    ],
)
def test_guideline_thresholds_at_their_boundaries(count, prevalence, mean_reward, selected):
    p = profile(missing_tool_call=(count, prevalence, mean_reward))
    assert select_guidelines(p, EvolveConfig()) == ([L.MISSING_TOOL_CALL] if selected else [])
    child = evolve(InterfaceSnapshot.null(), p)
    assert guideline_labels(child) == ([L.MISSING_TOOL_CALL] if selected else [])
    assert child.capability_guidelines.enabled is selected


def test_at_most_three_guidelines_ranked_by_prevalence_times_failure():
    p = profile(
        spurious_tool_call=(20, 0.20, 0.0),  # score 0.20 * 1.0 = 0.200
        missing_tool_call=(30, 0.30, 0.5),  # 0.30 * 0.5 = 0.150
        invalid_tool_call=(25, 0.25, 0.4),  # 0.25 * 0.6 = 0.150, ties with missing: label order decides
        state_mismatch=(11, 0.11, 0.2),  # 0.11 * 0.8 = 0.088
        argument_mismatch=(12, 0.12, 0.5),  # 0.12 * 0.5 = 0.060
        correct_abstention=(40, 0.40, 0.0),  # not a failure: never a guideline
        **{"pass": (50, 0.50, 0.1)},
    )
    ranked = [L.SPURIOUS_TOOL_CALL, L.MISSING_TOOL_CALL, L.INVALID_TOOL_CALL, L.STATE_MISMATCH, L.ARGUMENT_MISMATCH]
    assert select_guidelines(p, EvolveConfig()) == ranked
    child = evolve(InterfaceSnapshot.null(), p)
    assert guideline_labels(child) == ranked[:3]
    assert [line.text for line in child.capability_guidelines.lines] == [GUIDELINES[z] for z in ranked[:3]]
    rules = child.cause.rules
    assert rules[2] == (
        "guideline[spurious_tool_call]: prevalence 0.200 >= 0.10, count 20 >= 8, mean reward 0.000 < 0.60; "
        "score 0.200, rank 1, kept"
    )
    assert rules[5].startswith("guideline[state_mismatch]:") and rules[5].endswith("rank 4, not kept (at most 3)")
    assert guideline_labels(evolve(InterfaceSnapshot.null(), p, EvolveConfig(max_guidelines=1))) == ranked[:1]


def test_a_guideline_text_for_every_failure_label_and_a_hint_for_every_error_kind():
    assert set(GUIDELINES) == set(Label) - {L.PASS, L.CORRECT_ABSTENTION}
    assert set(RECOVERY_HINTS) == set(ErrorKind)
    assert GUIDELINES[L.MISSING_TOOL_CALL] == (
        "When the user asks for an action that a tool can do, call the tool; do not just describe it."
    )


def test_evolve_turns_components_on_and_records_its_cause():
    p = profile(missing_tool_call=(25, 0.25, 0.3))
    child = evolve(InterfaceSnapshot.null(), p)
    assert (child.version, child.parent) == ("v1", "v0")
    assert child.schema_cues.enabled and child.schema_cues.mark_required and child.schema_cues.enum_values
    assert not child.schema_cues.type_hints
    assert child.recovery_feedback.enabled and child.recovery_feedback.hints == RECOVERY_HINTS
    assert child.rho == DEFAULT_RHO and child.train_only
    assert child.cause.profile == CauseProfile.model_validate(p.to_dict())
    assert child.cause.rules[:2] == (
        "schema_cues: on (required marks, enum values)",
        "recovery_feedback: hints for 13 error kind(s)",
    )


def test_no_change_returns_the_parent_itself():
    p = profile(missing_tool_call=(25, 0.25, 0.3))
    null = InterfaceSnapshot.null()
    child = evolve(null, p)
    assert evolve(child, p) is child
    assert evolve(child, FailureProfile()) is child  # no labelled turns: no evidence, guidelines kept
    assert evolve(child, p, rho=dict(child.rho)) is child  # the same rho recorded again
    off = EvolveConfig(schema_cues=False, recovery_feedback=False, capability_guidelines=False)
    assert evolve(null, p, off) is null


def test_same_inputs_give_the_same_hash_and_switches_keep_the_parents_component():
    p = profile(missing_tool_call=(25, 0.25, 0.3), spurious_tool_call=(12, 0.12, 0.1))
    first, second = evolve(InterfaceSnapshot.null(), p), evolve(InterfaceSnapshot.null(), p)
    assert first is not second and first.content_hash == second.content_hash
    only_guides = evolve(InterfaceSnapshot.null(), p, EvolveConfig(schema_cues=False, recovery_feedback=False))
    assert not only_guides.schema_cues.enabled and not only_guides.recovery_feedback.enabled
    assert guideline_labels(only_guides) == [L.MISSING_TOOL_CALL, L.SPURIOUS_TOOL_CALL]
    assert only_guides.content_hash != first.content_hash
    typed = evolve(first, p, EvolveConfig(type_hints=True))
    assert diff(first, typed) == [
        "~ schema_cues.type_hints: off -> on",
        "~ cause: 40 rollouts, 100 turns, 4 rules -> 40 rollouts, 100 turns, 4 rules",
    ]


def test_guidelines_go_when_the_failure_fades():
    v1 = evolve(InterfaceSnapshot.null(), profile(missing_tool_call=(25, 0.25, 0.3)))
    v2 = evolve(v1, profile(missing_tool_call=(5, 0.05, 0.3), **{"pass": (95, 0.95, 0.8)}))
    assert v2.version == "v2" and v2.parent == "v1" and guideline_labels(v2) == []
    assert diff(v1, v2)[:2] == ["~ capability_guidelines.enabled: on -> off", "- guideline [missing_tool_call]"]


def test_version_ids():
    assert next_version("v3") == "v4" and next_version("v0") == "v1" and next_version("v99") == "v100"
    v3 = InterfaceSnapshot(version="v3", parent="v2")
    child = evolve(v3, profile(missing_tool_call=(25, 0.25, 0.3)))
    assert (child.version, child.parent) == ("v4", "v3")
    named = InterfaceSnapshot(version="baseline")
    with pytest.raises(ValueError, match="pass version= to evolve explicitly"):
        evolve(named, FailureProfile())
    assert evolve(named, FailureProfile(), version="baseline-1").parent == "baseline"


def test_recorded_rho_makes_a_new_version():
    v1 = evolve(InterfaceSnapshot.null(), profile(missing_tool_call=(25, 0.25, 0.3)))
    rho = {**v1.rho, L.MISSING_TOOL_CALL: 1.5375}
    v2 = evolve(v1, profile(missing_tool_call=(25, 0.25, 0.3)), rho=rho)
    assert v2.rho[L.MISSING_TOOL_CALL] == 1.5375 and v2.cause.rules[-1] == (
        "rho: recorded the closed-loop table (1 weight(s) moved)"
    )
    assert "~ rho[missing_tool_call]: 1.500 -> 1.538" in diff(v1, v2)


@pytest.mark.parametrize(
    ("record", "changes", "field"),
    [
        (RhoSettings, {"rho_min": 2.5}, "rho_min"),
        (EvolveConfig, {"max_guidelines": 4}, "max_guidelines"),
        (EvolveConfig, {"hint_kinds": ["bad_path", "typo"]}, "hint_kinds"),
        (RhoSettings, {"rho_beta": 0.0}, "rho_beta"),
        (EvolveConfig, {"guideline_min_prevalence": 1.5}, "guideline_min_prevalence"),
        (RhoSettings, {"rho_count_scale": 0}, "rho_count_scale"),
    ],
)
def test_config_errors_name_the_field(record, changes, field):
    with pytest.raises(ValueError, match=rf"^{field}"):
        record(**changes)


def test_config_defaults_are_the_papers_numbers():
    c = EvolveConfig()
    assert (c.guideline_min_prevalence, c.guideline_min_count, c.guideline_max_mean_reward, c.max_guidelines) == (
        0.10,
        8,
        0.6,
        3,
    )
    r = RhoSettings()
    assert (r.rho_beta, r.rho_count_scale, r.rho_min, r.rho_max, c.type_hints) == (0.25, 32, 0.5, 2.0, False)
    assert r.closed_loop and r.reweighting


def test_the_records_are_frozen_and_a_config_list_becomes_a_tuple():
    import dataclasses

    config = EvolveConfig(hint_kinds=["bad_path"])
    assert config.hint_kinds == ("bad_path",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.max_guidelines = 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        RhoSettings().rho_beta = 0.5


def test_the_rho_target_is_the_formula_on_hand_computed_numbers():
    stats = LabelStats(count=16, prevalence=0.25, mean_reward=0.2)
    # evidence min(1, 16/32) = 0.5; 1.5 * (1 + 0.25 * 0.8 * 0.5) = 1.65; under count scale 8: evidence 1 -> 1.8
    assert RhoSettings().target(1.5, stats) == pytest.approx(1.65, abs=1e-12)
    assert RhoSettings(rho_count_scale=8).target(1.5, stats) == pytest.approx(1.8, abs=1e-12)
    assert RhoSettings(rho_max=1.6).target(1.5, stats) == 1.6  # clamped


def test_update_rho_on_hand_computed_numbers():
    p = profile(
        missing_tool_call=(16, 0.25, 0.2),
        invalid_tool_call=(40, 0.50, 0.0),
        instance_mismatch=(64, 0.10, 0.5),
    )
    rho = dict(DEFAULT_RHO) | {L.STATE_MISMATCH: 1.4}
    before = dict(rho)
    new = update_rho(rho, DEFAULT_RHO, p, RhoSettings())
    assert rho == before and new is not rho  # pure
    # missing_tool_call: evidence min(1, 16/32) = 0.5; target = 1.5 * (1 + 0.25 * (1 - 0.2) * 0.5) = 1.5 * 1.1 = 1.65
    #                    rho = 1.5 + 0.25 * (1.65 - 1.5) = 1.5375
    assert new[L.MISSING_TOOL_CALL] == pytest.approx(1.5375, abs=1e-12)
    # invalid_tool_call: evidence min(1, 40/32) = 1; target = 1.0 * (1 + 0.5 * 1.0 * 1) = 1.5
    #                    rho = 1 + 0.25 * (1.5 - 1.0) = 1.125
    assert new[L.INVALID_TOOL_CALL] == 1.125
    # instance_mismatch: evidence 1; target = 0.6 * (1 + 0.1 * 0.5) = 0.63; rho = 0.6 + 0.25 * 0.03 = 0.6075
    assert new[L.INSTANCE_MISMATCH] == pytest.approx(0.6075, abs=1e-12)
    # state_mismatch absent: prevalence 0, target = base 1.0; rho = 1.4 + 0.25 * (1.0 - 1.4) = 1.3
    assert new[L.STATE_MISMATCH] == pytest.approx(1.3, abs=1e-12)
    # every other label is absent and already at its base: unchanged
    for label in set(Label) - {L.MISSING_TOOL_CALL, L.INVALID_TOOL_CALL, L.INSTANCE_MISMATCH, L.STATE_MISMATCH}:
        assert new[label] == DEFAULT_RHO[label]
    assert list(new) == list(rho)


def test_update_rho_clamps_the_target_at_both_ends():
    config = RhoSettings()
    # top: spurious target = 2.0 * (1 + 0.5 * 1.0 * 1) = 3.0 -> clamped to 2.0
    #      from 1.0: 1.0 + 0.25 * (2.0 - 1.0) = 1.25
    p = profile(spurious_tool_call=(32, 0.5, 0.0))
    assert update_rho({L.SPURIOUS_TOOL_CALL: 1.0}, DEFAULT_RHO, p, config) == {L.SPURIOUS_TOOL_CALL: 1.25}
    assert update_rho({L.SPURIOUS_TOOL_CALL: 2.0}, DEFAULT_RHO, p, config) == {L.SPURIOUS_TOOL_CALL: 2.0}
    # bottom: base 0.25, absent label: target 0.25 -> clamped to 0.5; from 0.75: 0.75 + 0.25 * (0.5 - 0.75) = 0.6875
    low = {L.INSTANCE_MISMATCH: 0.25}
    assert update_rho({L.INSTANCE_MISMATCH: 0.75}, low, FailureProfile(), config) == {L.INSTANCE_MISMATCH: 0.6875}
    # a custom clamp and beta = 1 jumps straight to the clamped target
    tight = RhoSettings(rho_min=0.9, rho_max=1.2, rho_beta=1.0)
    assert update_rho({L.SPURIOUS_TOOL_CALL: 1.0}, DEFAULT_RHO, p, tight) == {L.SPURIOUS_TOOL_CALL: 1.2}
    with pytest.raises(ValueError, match="base has no weight for pass"):
        update_rho({L.PASS: 1.0}, {}, p, config)


def test_repeated_updates_converge_to_the_target():
    p = profile(missing_tool_call=(16, 0.25, 0.2))
    rho = dict(DEFAULT_RHO)
    for _ in range(80):
        rho = update_rho(rho, DEFAULT_RHO, p, RhoSettings())
    assert rho[L.MISSING_TOOL_CALL] == pytest.approx(1.65, abs=1e-9)  # (0.75)^80 * 0.15 < 1e-10


def test_rho_window_steps_every_step_and_resets_every_epoch():
    failed = RolloutDiagnosis("t0", 0.0, (L.MISSING_TOOL_CALL, L.MISSING_TOOL_CALL, L.PASS, L.PASS))
    passed = RolloutDiagnosis("t1", 1.0, (L.PASS, L.PASS, L.PASS, L.PASS, None))
    window = RhoWindow()
    rho = window.step([failed, passed])
    # window: 8 labelled turns; missing: count 2, prevalence 0.25, mean reward 0.0.
    # missing: target = 1.5 * (1 + 0.25 * 1.0 * 2/32) = 1.5234375; rho = 1.5 + 0.25 * 0.0234375 = 1.505859375
    # pass: held at its base 1.0 (it would otherwise move toward 1 + 0.75 * (1 - 4/6) * 6/32 = 1.046875)
    assert (rho[L.MISSING_TOOL_CALL], rho[L.PASS]) == (1.505859375, 1.0)
    assert window.profile().turns == 8 and len(window.diagnoses) == 2
    rho = window.step([])  # same window, one more EMA step toward the same target
    assert rho[L.MISSING_TOOL_CALL] == 1.505859375 + 0.25 * (1.5234375 - 1.505859375) == 1.51025390625
    window.reset()
    assert window.diagnoses == [] and window.profile().turns == 0
    assert window.rho[L.MISSING_TOOL_CALL] == 1.51025390625  # rho survives the epoch boundary
    rho = window.step([])  # empty window: every target is its base
    assert rho[L.MISSING_TOOL_CALL] == 1.51025390625 + 0.25 * (1.5 - 1.51025390625)
    assert rho is not window.rho  # callers get a copy
    frozen = RhoWindow(RhoSettings(closed_loop=False))
    assert frozen.step([failed, passed]) == DEFAULT_RHO and frozen.profile().turns == 8
    # the weights under the live rho (failed: 2/4 missing at 1.5 + 2/4 pass at 1.0 = 1.25); all 1 without reweighting
    assert frozen.weights([failed, passed]) == [1.25, 1.0]
    assert RhoWindow(RhoSettings(reweighting=False)).weights([failed, passed]) == [1.0, 1.0]


def test_rho_over_three_batches_matches_hand_arithmetic():
    """The released update: pass held at base, statistics over turn occurrences, the window kept across steps
    and reset at an epoch boundary. Every expected number is worked out by hand in the comments."""
    M, A, G, P = L.MISSING_TOOL_CALL, L.CORRECT_ABSTENTION, L.ARGUMENT_MISMATCH, L.PASS
    window = RhoWindow()
    batch1 = [
        RolloutDiagnosis("a", 0.0, (M,) * 16 + (P,) * 8),
        RolloutDiagnosis("b", 1.0, (P,) * 12 + (A,) * 12),
        RolloutDiagnosis("c", 0.0, (A,) * 4 + (G,) * 8 + (P,) * 4),
    ]
    rho1 = window.step(batch1)
    # window = batch 1: 64 labelled turns; missing 16, pass 24, abstention 16, argument 8.
    # missing:    prevalence 16/64 = 1/4, mean reward 0, evidence 16/32 = 1/2
    #             target = 1.5 * (1 + 1/4 * 1 * 1/2) = 1.6875; rho = 1.5 + 0.25 * (1.6875 - 1.5) = 1.546875
    # abstention: prevalence 1/4, mean reward over occurrences (12 * 1 + 4 * 0) / 16 = 3/4, evidence 1/2
    #             target = 1.8 * (1 + 1/4 * 1/4 * 1/2) = 1.8 * 1.03125 = 1.85625
    #             rho = 1.8 + 0.25 * 0.05625 = 1.8140625
    #             (per rollout the mean would be (1 + 0) / 2 = 1/2: target 1.9125, rho 1.828125)
    # argument:   prevalence 8/64 = 1/8, mean reward 0, evidence 8/32 = 1/4
    #             target = 1.0 * (1 + 1/8 * 1/4) = 1.03125; rho = 1 + 0.25 * 0.03125 = 1.0078125
    # pass:       held at 1.0 (moving it would give target 1 + 3/8 * 1/2 * 3/4 = 1.140625, rho 1.03515625)
    assert rho1[M] == pytest.approx(1.546875, abs=1e-12)
    assert rho1[A] == pytest.approx(1.8140625, abs=1e-12)
    assert rho1[G] == pytest.approx(1.0078125, abs=1e-12)
    assert rho1[P] == 1.0
    for label in set(Label) - {M, A, G}:
        assert rho1[label] == DEFAULT_RHO[label]
    # the batch is weighted with rho1 (observed first): a = 2/3 missing + 1/3 pass
    #   w = 2/3 * 1.546875 + 1/3 * 1.0 = (3.09375 + 1) / 3 = 1.364583...
    assert batch1[0].weight(rho1) == pytest.approx(4.09375 / 3, abs=1e-12)

    batch2 = [RolloutDiagnosis("d", 0.0, (M,) * 16), RolloutDiagnosis("e", 1.0, (A,) * 16)]
    rho2 = window.step(batch2)
    # window = batches 1 + 2: 96 turns; missing 32, abstention 32, argument 8, pass 24.
    # missing:    prevalence 1/3, mean 0, evidence 1: target = 1.5 * (1 + 1/3) = 2.0 (at the clamp)
    #             rho = 1.546875 + 0.25 * (2.0 - 1.546875) = 1.66015625
    # abstention: prevalence 1/3, mean (12 + 16) / 32 = 7/8, evidence 1: target = 1.8 * (1 + 1/3 * 1/8) = 1.875
    #             rho = 1.8140625 + 0.25 * (1.875 - 1.8140625) = 1.829296875
    # argument:   prevalence 8/96 = 1/12, mean 0, evidence 1/4: target = 1 + 1/12 * 1/4 = 1 + 1/48 = 1.0208333...
    #             rho = 1.0078125 + 0.25 * (1.0208333... - 1.0078125) = 1.0110677083...
    assert rho2[M] == pytest.approx(1.66015625, abs=1e-12)
    assert rho2[A] == pytest.approx(1.829296875, abs=1e-12)
    assert rho2[G] == pytest.approx(1.0078125 + 0.25 * (1 + 1 / 48 - 1.0078125), abs=1e-12)
    assert rho2[P] == 1.0

    window.reset()  # epoch boundary: the window empties, rho stays
    rho3 = window.step([RolloutDiagnosis("f", 0.0, (G,) * 32), RolloutDiagnosis("g", 1.0, (P,) * 32)])
    # window = batch 3: 64 turns; argument 32 (prevalence 1/2, mean 0, evidence 1), pass 32.
    # argument:   target = 1 * (1 + 1/2) = 1.5; rho = 1.0110677083 + 0.25 * (1.5 - 1.0110677083) = 1.1333007812...
    # missing:    absent, target = base 1.5; rho = 1.66015625 + 0.25 * (1.5 - 1.66015625) = 1.6201171875
    # abstention: absent, target = base 1.8; rho = 1.829296875 + 0.25 * (1.8 - 1.829296875) = 1.82197265625
    assert rho3[G] == pytest.approx(1.1333007812, abs=1e-10)
    assert rho3[M] == pytest.approx(1.6201171875, abs=1e-12)
    assert rho3[A] == pytest.approx(1.82197265625, abs=1e-12)
    assert rho3[P] == 1.0


def test_the_released_mode_starts_with_schema_cues_and_evolves_nothing_else():
    from seal_hub.interface.evolve import evolve_config_for, starting_interface

    v0 = starting_interface("bfcl", "released")
    assert v0.version == "v0" and v0.parent is None and v0.schema_cues.enabled and v0.schema_cues.note
    assert not v0.recovery_feedback.enabled and not v0.capability_guidelines.enabled
    assert v0 == InterfaceSnapshot.model_validate(v0.model_dump())  # a valid, hashed snapshot
    assert starting_interface("bfcl", "released", env_adaptation=False).is_null
    assert starting_interface("bfcl", "full").is_null
    failing = profile(missing_tool_call=(40, 0.5, 0.0), invalid_tool_call=(40, 0.3, 0.0))
    released = evolve(v0, failing, evolve_config_for("released"))
    assert released is v0  # cues already on; no hints, no guidelines
    full = evolve(v0, failing, evolve_config_for("full"))
    assert full.recovery_feedback.enabled and full.capability_guidelines.enabled
    with pytest.raises(ValueError, match="interface_mode"):
        evolve_config_for("everything")
