"""The `evaluate` module shipped in the package agrees with the harness's own scores."""

from __future__ import annotations

import json

import evaluate
import pyarrow.parquet as pq
import pytest

from seal_hub.evaluation import (
    METRIC_PATH,
    EvalProtocol,
    EvalSpec,
    OracleRunner,
    Scores,
    interface_record,
    run_evaluation,
)
from seal_hub.interface import InterfaceSnapshot


class _SometimesWrong(OracleRunner):
    """The oracle, except that it skips the calls of every third task (which then fails)."""

    def __init__(self, suite, config):
        super().__init__(suite, config)
        self.skip = set()

    def run(self, tasks, on_trajectory):
        self.skip = {task.id for task in tasks[::3]}
        super().run(tasks, on_trajectory)

    def trajectory(self, task):
        if task.id in self.skip:
            original, self.suite.oracle_steps = self.suite.oracle_steps, lambda t: [[] for _ in t.ground_truth]
            try:
                return super().trajectory(task)
            finally:
                self.suite.oracle_steps = original
        return super().trajectory(task)


@pytest.fixture(scope="module")
def metric():
    return evaluate.load(str(METRIC_PATH))


def test_the_metric_matches_the_harness_on_mixed_verdicts(tmp_path, suite, metric):
    test = suite.split_ids("test")
    ids = [i for c in suite.categories for i in [x for x in test if suite.task(x).category == c][: 2 + len(c) % 3]]
    protocol = EvalProtocol()
    null = interface_record(InterfaceSnapshot.null("bfcl"))
    spec = EvalSpec("bfcl", "test", "paper", {"id": "oracle", "revision": None}, None, null, protocol.as_dict())
    result = run_evaluation(
        suite, suite.select(ids), _SometimesWrong(suite, protocol.episode_config()), spec, tmp_path, progress=False
    )
    assert 0 < result.scores.average < 100  # some tasks failed, some passed: the averages are not trivial
    rows = pq.read_table(tmp_path / "trajectories.parquet", columns=["passed", "category"]).to_pylist()
    computed = metric.compute(
        passed=[r["passed"] for r in rows], category=[r["category"] for r in rows], categories=list(suite.categories)
    )
    recorded = json.loads((tmp_path / "results.json").read_text())["scores"]
    assert computed["per_category"] == recorded["per_category"]
    assert computed["average"] == pytest.approx(recorded["average"])
    assert computed["num_tasks"] == len(ids)


def test_the_average_is_the_unweighted_mean_of_categories(metric):
    passed = [True, True, True, False] + [False]  # base 3/4 = 75 %, miss_func 0/1 = 0 %
    category = ["base"] * 4 + ["miss_func"]
    out = metric.compute(passed=passed, category=category)
    ours = Scores.of(zip(category, passed, strict=True))
    assert out["average"] == pytest.approx(37.5) == pytest.approx(ours.average)
    assert out["average"] != pytest.approx(100 * 3 / 5)  # not the pooled rate
    assert list(out["per_category"]) == ["base", "miss_func"]


def test_the_card_says_how_to_load_it_offline_and_that_hub_names_need_the_network():
    card = (METRIC_PATH / "README.md").read_text()
    assert card.startswith("---\n") and "evaluate.load(str(METRIC_PATH))" in card and "needs the" in card
