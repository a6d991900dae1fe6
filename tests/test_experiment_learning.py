"""The learning experiment's parts that need no model: the paired comparison of two evaluations task by task, the
committed records and the page drawn from them (the contract line, the curves), dev splits in split files and user
datasets, and the split held-out evaluations score."""

from __future__ import annotations

import json
import re

import pytest

from seal_hub.envs.splits import SplitError, load_split
from seal_hub.experiment.learning_report import CURVES_PNG, Records, contract_line, write_learning_report
from seal_hub.experiment.paired import Verdict, mcnemar_p, paired_comparison, verdicts_of
from seal_hub.experiment.records import dev_point, load_record, update_record

CONTRACT = re.compile(
    r"^smart_home held-out \((\d+) tasks\): warm-up ([\d.]+)% \| plain GRPO ([\d.]+)% after (\d+) steps \| "
    r"SEAL ([\d.]+)% after (\d+) steps \| SEAL - plain ([+-][\d.]+) points \(95% interval ([+-][\d.]+) to "
    r"([+-][\d.]+)\)$"
)


def verdicts(passes: dict[str, int], total: int = 40) -> dict[str, Verdict]:
    """`total` tasks per category, the first `passes[category]` of them passed."""
    return {
        f"{c}_{i:03d}": Verdict(c, i < passed) for c, passed in passes.items() for i in range(total)
    }  # fmt: skip


def test_a_policy_against_itself_differs_by_nothing():
    a = verdicts({"light": 20, "both": 5})
    rows = paired_comparison(a, a)
    assert [r.name for r in rows] == ["light", "both", "avg"]
    assert all(r.difference == 0 and r.low == 0 and r.high == 0 and r.p_value == 1.0 for r in rows)


def test_a_clear_gain_has_an_interval_above_zero_and_a_small_p():
    better, worse = verdicts({"light": 30, "both": 20}), verdicts({"light": 20, "both": 5})
    avg = paired_comparison(better, worse)[-1]
    assert avg.difference == pytest.approx((30 + 20 - 20 - 5) / 2 / 40 * 100)
    assert 0 < avg.low < avg.difference < avg.high and avg.p_value < 1e-5
    assert (avg.a_only, avg.b_only) == (25, 0)
    assert paired_comparison(worse, better)[-1].high < 0  # and the other way round, below


def test_mcnemar_is_the_exact_binomial_tail():
    assert mcnemar_p(10, 0) == pytest.approx(2 / 2**10)
    assert mcnemar_p(3, 3) == 1.0 and mcnemar_p(0, 0) == 1.0
    assert mcnemar_p(7, 2) == pytest.approx(2 * (1 + 9 + 36) / 2**9)


def test_evaluations_of_different_tasks_do_not_pair():
    with pytest.raises(ValueError, match="different tasks"):
        paired_comparison(verdicts({"light": 1}), verdicts({"light": 1}, total=39))
    with pytest.raises(ValueError, match="no per-task verdicts"):
        verdicts_of({"scores": {}})


def _summary(passes: dict[str, int], total: int = 40) -> dict:
    v = verdicts(passes, total)
    per = {c: {"passed": p, "total": total, "success_rate": 100 * p / total} for c, p in passes.items()}
    return {
        "split": "test",
        "num_tasks": len(v),
        "scores": {"per_category": per, "average": sum(100 * p / total for p in passes.values()) / len(passes)},
        "verdicts": {task: {"category": x.category, "passed": x.passed} for task, x in v.items()},
    }


def _steps(count: int, dev: dict[int, float]) -> list[dict]:
    lines = []
    for step in range(1, count + 1):
        line = {
            "step": step,
            "success_rate": step / (2 * count),
            "rollouts": 16,
            "groups": {"drawn": 4, "kept": 3},
            "labels": {"pass": step},
            "interface_version": f"v{step}",
            "per_category": {"both": [step % 2, 8], "light": [4, 8]},
        }
        if step in dev:
            line["dev"] = {"average": dev[step], "per_category": {"both": [1, 40], "light": [2, 40]}, "num_tasks": 80}
        lines.append(line)
    return lines


def test_the_page_gives_the_contract_line_the_curves_and_the_tables(tmp_path):
    records = tmp_path / "records"
    update_record(records, "warmup-seed-0", seed=0, sha256="ab" * 32, machine={"cpu": "a CPU", "cores": 2})
    update_record(
        records, "warmup-seed-0", dev=_summary({"light": 10, "both": 0}), test=_summary({"light": 12, "both": 1})
    )
    for arm, label, dev, test in (
        ("vanilla", "vanilla RL", {10: 30.0, 20: 31.0}, {"light": 20, "both": 2}),
        ("seal", "SEAL", {10: 35.0, 20: 40.0}, {"light": 30, "both": 10}),
    ):
        update_record(records, f"{arm}-seed-0", arm=arm, label=label, seed=0, steps=_steps(20, dev))
        update_record(
            records, f"{arm}-seed-0", test=_summary(test), train_wall_seconds=3600.0, machine={"cpu": "a CPU"}
        )
    update_record(
        records, "interface-effect-seed-0", seed=0, versions={"v3": {"step": 10, **_summary({"light": 11, "both": 0})}}
    )
    trained = {"v20": {"step": 20, **_summary({"light": 3, "both": 1})}}
    update_record(records, "interface-effect-seed-0", trained=trained)

    page = write_learning_report("smart_home", records)
    text = page.read_text()
    match = CONTRACT.match(text.splitlines()[2])
    assert match, text.splitlines()[2]
    tasks, warmup, plain, k1, seal, k2, diff, low, high = match.groups()
    assert (int(tasks), float(warmup), float(plain), float(seal)) == (80, 16.2, 27.5, 50.0)
    assert int(k1) == int(k2) == 20 and float(diff) == pytest.approx(22.5) and 0 < float(low) < 22.5 < float(high)
    assert (records / CURVES_PNG).stat().st_size > 10_000 and f"]({CURVES_PNG})" in text
    assert "| SFT warm-up | 12/40 | 1/40 | **16.2%** |" in text
    assert "| v3 | 10 | 11/40 | 0/40 | 13.8% |" in text  # the frozen warm-up under SEAL's version at step 10
    # SEAL's final policy: its step-20 dev point (original interface), then under the version it trained under last
    assert "| original (null) | 20 | 1/40 | 2/40 | 40.0% |" in text and "| v20 | 20 | 1/40 | 3/40 | 5.0% |" in text
    assert "| SEAL | 20 | 2 | 1 | 40.0% |" in text  # the dev points per category, light first as the suite orders them
    assert "| vanilla RL | 11-20 | 40/80 | 5/80 | 30/40 |" in text  # training rollouts per category by 10 steps
    assert "weights sha256 `abababababababab`" in text and "60 min of training on a CPU (? cores)" in text


def test_no_contract_line_until_both_arms_are_scored(tmp_path):
    update_record(tmp_path, "warmup-seed-0", seed=0, test=_summary({"light": 1}))
    update_record(tmp_path, "seal-seed-0", arm="seal", seed=0, steps=_steps(2, {}), test=_summary({"light": 2}))
    assert contract_line("smart_home", Records.read(tmp_path), 0) is None


def test_records_merge_and_a_broken_one_says_what_to_do(tmp_path):
    update_record(tmp_path, "x", a=1)
    assert load_record(tmp_path, "x") | {} == {"schema": "seal_hub.experiment.record/1", "name": "x", "a": 1}
    update_record(tmp_path, "x", b=2)
    assert load_record(tmp_path, "x")["a"] == 1 and load_record(tmp_path, "x")["b"] == 2
    assert load_record(tmp_path, "missing") == {}
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ValueError, match="restore it from git or delete it"):
        load_record(tmp_path, "bad")


def test_a_dev_point_averages_the_categories_rates():
    point = dev_point(
        {"per_category": {"a": {"passed": 3, "total": 4}, "b": {"passed": 0, "total": 2}}, "num_tasks": 6}
    )
    assert point["average"] == pytest.approx(37.5) and point["per_category"] == {"a": [3, 4], "b": [0, 2]}


def test_a_split_file_may_carry_a_dev_list_apart_from_the_others(tmp_path):
    path = tmp_path / "split.json"
    path.write_text(json.dumps({"train": ["a", "b"], "test": ["c"], "dev": ["d"]}))
    split = load_split(path)
    assert (split.ids("dev"), split.ids("all")) == (("d",), ("a", "b", "d", "c"))
    assert json.loads(split.to_json())["dev"] == ["d"]
    path.write_text(json.dumps({"train": ["a", "d"], "test": ["c"], "dev": ["d"]}))
    with pytest.raises(SplitError, match="in both train and dev"):
        load_split(path)
    path.write_text(json.dumps({"train": ["a"], "test": ["c"]}))
    with pytest.raises(ValueError, match="choose train, test or all"):
        load_split(path).ids("dev")


def test_a_dataset_with_a_dev_split_trains_on_train_holds_out_test_and_scores_dev(tmp_path, monkeypatch):
    from seal_hub.envs.builtin import resolve_suite
    from seal_hub.training.config import SealConfig
    from seal_hub.training.selection import TaskArguments, select_tasks

    rows = [{"id": f"t{i}", "prompt": f"say {i}", "split": ["train", "dev", "test"][i % 3]} for i in range(9)]
    data = tmp_path / "tasks.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "echo_env.py").write_text(
        "class Echo:\n"
        "    def reset(self, **row):\n        return None\n"
        "    def say(self, text: str) -> str:\n"
        "        '''Say it.\n\n        Args:\n            text: what.\n        '''\n"
        "        return text\n"
        "    def get_reward(self):\n        return 1.0\n"
    )
    suite = resolve_suite(environment="echo_env:Echo", dataset=str(data))
    assert suite.split_ids("train") == ("t0", "t3", "t6") and suite.split_ids("test") == ("t2", "t5", "t8")
    assert suite.split_ids("dev") == ("t1", "t4", "t7")
    config = SealConfig(
        output_dir=str(tmp_path / "run"), per_device_train_batch_size=2, num_generations=2, eval_tasks=3
    )
    chosen = select_tasks(
        TaskArguments(environment="echo_env:Echo", dataset=str(data), eval_split="dev"), config, held_out=True
    )
    assert [t.id for t in chosen.train] == ["t0", "t3", "t6"] and [t.id for t in chosen.held_out] == ["t1", "t4", "t7"]


def test_the_smart_home_experiment_records_curves_and_pairs_its_arms(tmp_path, monkeypatch, capfd):
    """`recipes/experiment.py` on the smart home config, in miniature (the tiny model, two steps an arm, dev scored
    every step): the records, the page with its contract line, the interface's own effect, and resuming: a relaunch
    trains nothing, and an arm whose run directory is gone (trained elsewhere) stands on its record."""
    import shutil

    import yaml
    from helpers.paths import ROOT
    from test_experiment import recipe

    monkeypatch.chdir(ROOT)  # the example's module and dataset are named from the repository's root
    monkeypatch.setenv("SEAL_HUB_CACHE", str(tmp_path / "cache"))
    config = yaml.safe_load((ROOT / "recipes" / "configs" / "experiment_smart_home.yaml").read_text())
    config["base_config"] = str(ROOT / "examples" / "smart_home" / "config.yaml")
    config["accelerate_config"] = str(ROOT / "recipes" / "accelerate" / "cpu.yaml")
    config["base"] |= {
        "model_name_or_path": "tiny",
        "max_steps": 2,
        "eval_every_steps": 1,
        "eval_tasks": 5,
        "sft_warmup_steps": 1,
        "sft_batch_size": 2,
        "per_device_train_batch_size": 2,
        "gradient_accumulation_steps": 1,
        "num_generations": 2,
        "max_new_tokens": 8,
        "eval_max_new_tokens": 8,
        "save_steps": 1,
    }
    records = tmp_path / "records"
    config |= {"output_dir": str(tmp_path / "exp"), "records_dir": str(records), "arms": ["vanilla", "seal"]}
    config |= {"eval_limit": 5, "eval_max_new_tokens": 8, "evaluate_base": False}
    path = tmp_path / "experiment.yaml"
    path.write_text(yaml.safe_dump(config))

    recipe().main(str(path))
    out = capfd.readouterr().out
    assert "experiment: warm-up weights sha256" in out and "training arm seal seed 0 (SEAL), 2 of 2; about" in out
    for arm in ("vanilla", "seal"):
        record = load_record(records, f"{arm}-seed-0")
        assert [line["step"] for line in record["steps"]] == [1, 2] and all("dev" in line for line in record["steps"])
        assert record["test"]["num_tasks"] == 5 and len(record["test"]["verdicts"]) == 5
    warmup = load_record(records, "warmup-seed-0")
    assert warmup["dev"]["split"] == "dev" and warmup["dev"]["num_tasks"] == 5 and len(warmup["sha256"]) == 64
    effect = load_record(records, "interface-effect-seed-0")
    assert effect["versions"] and all(
        point["split"] == "dev" and point["interface"]["version"] == v for v, point in effect["versions"].items()
    )
    [(last, trained)] = effect["trained"].items()  # SEAL's final policy under the last version it trained under
    assert trained["split"] == "dev" and last == list(effect["versions"])[-1]
    assert trained["step"] == effect["versions"][last]["step"] and trained["interface"]["version"] == last
    page = (records / "learning.md").read_text()
    assert CONTRACT.match(page.splitlines()[2]) and (records / CURVES_PNG).exists()

    recipe().main(str(path))  # the relaunch trains and scores nothing
    again = capfd.readouterr().out
    assert again.count("already trained: skipped") == 2 and "evaluating" not in again and "scoring" not in again
    shutil.rmtree(tmp_path / "exp" / "seal")  # as if SEAL had trained on another machine: its record stands
    recipe().main(str(path))
    assert "seal/seed-0 was trained and scored elsewhere" in capfd.readouterr().out
    assert CONTRACT.match((records / "learning.md").read_text().splitlines()[2])
