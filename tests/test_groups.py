"""Informative groups (dynamic sampling): which groups a step trains, how many draws it makes, what it masks."""

from __future__ import annotations

import pytest

from seal_hub.training.groups import Group, extra_draw_size, groups_of, plan_step


def group(task_id: str, rewards, start: int = 0) -> Group:
    return Group(task_id, tuple(range(start, start + len(rewards))), tuple(rewards))


def test_groups_are_consecutive_runs_of_one_task():
    groups = groups_of(["a", "a", "b", "b"], [1.0, 0.0, 1.0, 1.0], 2, offset=10)
    assert [(g.task_id, g.positions, g.informative) for g in groups] == [
        ("a", (10, 11), True),
        ("b", (12, 13), False),
    ]
    with pytest.raises(ValueError, match="whole groups"):
        groups_of(["a", "a", "b"], [1.0, 0.0, 1.0], 2)
    with pytest.raises(ValueError, match="not one task's group"):
        groups_of(["a", "b"], [1.0, 0.0], 2)


def test_none_trains_what_was_drawn_and_never_draws_again():
    first = [group("a", [1, 1]), group("b", [0, 1], 2)]
    plan = plan_step(first, "none", 5, lambda count, draw: pytest.fail("no extra draw under 'none'"))
    assert plan.slots == first and plan.metrics() == {
        "drawn": 2,
        "kept": 1,
        "draws": 1,
        "trained": 2,
        "copies": 0,
        "masked": 0,
    }


def test_filter_draws_until_every_slot_holds_an_informative_group():
    first = [group("a", [1, 1]), group("b", [0, 1], 2), group("c", [0, 0], 4)]
    asked = []

    def draw_more(count, draw):
        asked.append((count, draw))
        if draw == 1:  # one informative, one dead
            return [group("d", [1, 0], 6), group("e", [1, 1], 8)][:count]
        return [group("f", [0, 1], 10), group("g", [1, 0], 12)][:count]

    plan = plan_step(first, "filter", 3, draw_more)
    assert [g.task_id for g in plan.slots] == ["b", "d", "f"]
    assert all(g.informative for g in plan.slots)
    # each draw asks for the missing groups over the keep rate so far, at most the step's 3 slots: draw 1, 2
    # missing at 1 of 3 kept -> 3; draw 2, 1 missing at 2 of 5 kept -> ceil(2.5) = 3
    assert asked == [(3, 1), (3, 2)]
    assert plan.metrics() == {"drawn": 7, "kept": 4, "draws": 3, "trained": 3, "copies": 0, "masked": 0}


def test_filter_masks_what_the_draw_limit_left_empty_and_replace_copies_kept_groups():
    first = [group("a", [1, 1]), group("b", [0, 1], 2), group("c", [0, 0], 4)]

    def dead(count, draw):
        return [group(f"x{draw}{i}", [0, 0], 100 + 2 * i) for i in range(count)]

    filtered = plan_step(first, "filter", 1, dead)
    assert [g and g.task_id for g in filtered.slots] == ["b", None, None]
    assert filtered.metrics()["masked"] == 2 and filtered.draws == 2
    replaced = plan_step(first, "replace", 0, lambda count, draw: pytest.fail("max_extra_draws 0: no draw"))
    assert [g.task_id for g in replaced.slots] == ["b", "b", "b"] and replaced.copies == 2
    nothing = plan_step([group("a", [1, 1])], "replace", 0, dead)
    assert nothing.slots == [None]  # no kept group to copy: masked


def test_an_extra_draw_gives_every_rank_whole_groups():
    assert extra_draw_size(missing=1, kept=3, drawn=4, slots=4, world=2) == 2
    assert extra_draw_size(missing=3, kept=1, drawn=4, slots=4, world=1) == 4  # keep rate 1/4: capped at 4 slots
    assert extra_draw_size(missing=1, kept=0, drawn=2, slots=8, world=3) == 6  # 1 / 0.25 = 4 -> 6 for 3 ranks
    with pytest.raises(ValueError, match="dynamic_sampling"):
        plan_step([], "sometimes", 1, lambda count, draw: [])
