"""The paper's experiment (`recipes/experiment.py`, `seal_hub.experiment`): the arms and their shared budget, the
manifest, per-arm resume of training and evaluation, the paper's tables beside ours, and (slow) the tiny
configuration end to end on CPU."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers.extras import require_bfcl

from seal_hub.envs.builtin import SUITES
from seal_hub.experiment import (
    ARMS,
    ARMS_BY_NAME,
    ArmFailed,
    ArmResult,
    ExperimentConfig,
    ExperimentError,
    SuiteUnavailable,
    eval_arms,
    experiment_tables,
    launch_arm,
    open_manifest,
    train_arms,
)
from seal_hub.experiment.config import SWITCHES
from seal_hub.experiment.intervals import mean_interval
from seal_hub.experiment.run import BASE, WARMUP_LABEL, Subject, subjects
from seal_hub.report.naming import variant
from seal_hub.report.paper import paper_numbers

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "recipes" / "configs"
EXPERIMENTS = sorted(CONFIGS.glob("experiment_*.yaml"))


def recipe():
    if "experiment_recipe" not in sys.modules:  # recipes/ is not a package: load the script as a module, once
        spec = importlib.util.spec_from_file_location("experiment_recipe", ROOT / "recipes" / "experiment.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["experiment_recipe"] = module
        spec.loader.exec_module(module)
    return sys.modules["experiment_recipe"]


def tiny_config(tmp_path: Path, **changes) -> Path:
    data = yaml.safe_load((CONFIGS / "experiment_tiny.yaml").read_text())
    data |= {
        "base_config": str(CONFIGS / data["base_config"]),
        "accelerate_config": str(CONFIGS / data["accelerate_config"]),
        "output_dir": str(tmp_path / "exp"),
    } | changes
    path = tmp_path / "experiment.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_the_arms_are_the_papers_five_named_as_the_report_names_them():
    assert len(ARMS) == 5 and len({a.name for a in ARMS}) == 5
    off = sorted(sum(not v for v in arm.switches.values()) for arm in ARMS)
    assert off == [0, 1, 1, 1, 3]  # SEAL, one switch off each, vanilla GRPO
    for arm in ARMS:
        assert set(arm.switches) == set(SWITCHES)
        assert arm.label == variant(arm.switches)
    paper = {r.setting for r in paper_numbers().results if r.table == "ablation"}
    assert {a.label for a in ARMS} == paper


@pytest.mark.parametrize("path", EXPERIMENTS, ids=lambda p: p.stem)
def test_every_arm_has_the_same_budget_and_parses_into_the_recipe(path, tmp_path):
    config = ExperimentConfig.from_yaml(path)
    main = config.suites[0]
    assert Path(config.base_config).exists() and (main in SUITES or main == config.common_settings()["environment"])
    settings = {arm.name: config.arm_settings(arm) for arm in ARMS}
    rest = [{k: v for k, v in s.items() if k not in (*SWITCHES, "output_dir")} for s in settings.values()]
    assert all(s["seed"] == config.seeds[0] and s["held_out_comparison"] is False for s in settings.values())
    assert all(r == rest[0] for r in rest)
    assert len({s["output_dir"] for s in settings.values()}) == len(ARMS)
    for arm in ARMS:
        assert {k: settings[arm.name][k] for k in SWITCHES} == arm.switches
    module = recipe()
    cpu = {"bf16": False, "use_cpu": True, "load_in_4bit": False, "use_vllm": False, "output_dir": str(tmp_path)}
    for arm in ARMS:  # every key is one the recipe knows, with valid values (GPU-only settings off on this CPU)
        script, training, model, *_ = module.seal.make_parser().parse_dict({**settings[arm.name], **cpu})
        assert (training.env_adaptation, training.reweighting, training.closed_loop) == tuple(
            arm.switches[s] for s in SWITCHES
        )


def test_bad_configs_are_refused_with_the_field(tmp_path):
    with pytest.raises(ExperimentError, match="arms"):
        ExperimentConfig.from_yaml(tiny_config(tmp_path, arms=["seal", "no_such_arm"]))
    with pytest.raises(ExperimentError, match="reweighting"):
        ExperimentConfig.from_yaml(tiny_config(tmp_path, base={"reweighting": False}))
    with pytest.raises(ExperimentError, match="eval_suite"):
        ExperimentConfig.from_yaml(tiny_config(tmp_path, eval_suite=["bfcl"]))
    with pytest.raises(ExperimentError, match="eval_suites"):
        ExperimentConfig.from_yaml(tiny_config(tmp_path, eval_suites=["bfcl", "bfcl"]))
    with pytest.raises(ExperimentError, match="seeds"):
        ExperimentConfig.from_yaml(tiny_config(tmp_path, seeds=[1, 1]))
    with pytest.raises(ExperimentError, match="integer seeds"):
        ExperimentConfig.from_yaml(tiny_config(tmp_path, seeds=["a", 2]))
    with pytest.raises(ExperimentError, match=r"\['seed'\].*seeds"):
        ExperimentConfig.from_yaml(tiny_config(tmp_path, base={"seed": 3}))


def test_command_line_overrides_set_fields_and_join_base(tmp_path):
    flags = ["--output_dir", str(tmp_path / "elsewhere"), "--seeds", "0,1,2", "--max_steps=6", "--lora_r", "8"]
    config = ExperimentConfig.from_yaml(tiny_config(tmp_path), recipe().overrides(flags))
    assert config.output_dir == str(tmp_path / "elsewhere") and config.seeds == (0, 1, 2)
    assert config.base["max_steps"] == 6 and config.base["lora_r"] == 8 and "num_train_tasks" in config.base
    assert {config.arm_settings(ARMS[1], seed)["output_dir"] for seed in config.seeds} == {
        str(tmp_path / "elsewhere" / "seal" / f"seed-{seed}") for seed in (0, 1, 2)
    }
    for bad in (["max_steps", "6"], ["--max_steps"]):
        with pytest.raises(ExperimentError, match="max_steps"):
            recipe().overrides(bad)
    with pytest.raises(ExperimentError, match="reweighting"):
        ExperimentConfig.from_yaml(tiny_config(tmp_path), recipe().overrides(["--reweighting", "false"]))


def test_every_arm_of_a_seed_shares_that_seeds_warm_up(tmp_path):
    config = ExperimentConfig.from_yaml(tiny_config(tmp_path, seeds=[0, 1]))
    assert config.has_warmup
    for seed in config.seeds:
        dirs = {config.arm_settings(arm, seed)["sft_warmup_dir"] for arm in ARMS}
        assert dirs == {str(Path(config.output_dir) / "warmup" / f"seed-{seed}")}
    labels = [(s.label, s.seed) for s in subjects(config)]
    assert labels[:2] == [("base", None), ("SFT warm-up", 0)] and ("SFT warm-up", 1) in labels
    assert len(labels) == 1 + 2 * (1 + len(ARMS))
    plain = ExperimentConfig.from_yaml(tiny_config(tmp_path, base={**config.base, "sft_warmup_steps": 0}))
    assert "sft_warmup_dir" not in plain.arm_settings(ARMS[0]) and not plain.plan()["shared_warmup"]


def test_the_manifest_records_the_plan_and_refuses_another(tmp_path):
    config = ExperimentConfig.from_yaml(tiny_config(tmp_path))
    manifest = open_manifest(config)
    assert [a["name"] for a in manifest["arms"]] == list(config.arms)
    assert manifest["budget"]["max_steps"] == config.base["max_steps"]
    assert manifest["seeds"]["seeds"] == list(config.seeds) == [config.arm_settings(ARMS[0])["seed"]]
    assert manifest["budget"]["sft_warmup_steps"] == 1 and manifest["shared_warmup"] is True
    assert open_manifest(config) == manifest  # the same plan reopens
    longer = ExperimentConfig.from_yaml(tiny_config(tmp_path, base={**config.base, "max_steps": 3}))
    with pytest.raises(ExperimentError, match="budget"):
        open_manifest(longer)
    assert json.loads((Path(config.output_dir) / "manifest.json").read_text()) == manifest  # not overwritten


def test_trained_arms_are_skipped_and_an_interrupted_one_trains_again(tmp_path):
    config = ExperimentConfig.from_yaml(tiny_config(tmp_path))
    calls = []

    def train(arm, seed, settings):
        assert Path(settings["output_dir"]) == config.run_dir(arm, seed) and settings["seed"] == seed
        calls.append(arm.name)
        if len(calls) == 3:
            raise KeyboardInterrupt  # killed during the third arm

    with pytest.raises(KeyboardInterrupt):
        train_arms(config, train, log=lambda _: None)
    assert calls == list(config.arms[:3])
    assert not (config.run_dir(ARMS_BY_NAME[config.arms[2]], 0) / "arm.json").exists()  # not marked trained
    calls.clear()
    trained = train_arms(config, lambda arm, seed, settings: calls.append(arm.name), log=print)
    assert calls == list(config.arms[2:]) and [a.name for a, _ in trained] == calls
    calls.clear()
    assert train_arms(config, lambda *run: calls.append(run), log=lambda _: None) == [] and calls == []


def test_an_arm_whose_training_fails_is_not_marked_trained(tmp_path):
    config = ExperimentConfig.from_yaml(tiny_config(tmp_path, arms=["seal"]))

    def fail(arm, seed, settings):
        raise ArmFailed("seal-seed-0: training exited with status 1")

    with pytest.raises(ArmFailed):
        train_arms(config, fail, log=lambda _: None)
    assert not (Path(config.output_dir) / "seal" / "seed-0" / "arm.json").exists()


def test_arms_train_seed_by_seed(tmp_path):
    config = ExperimentConfig.from_yaml(tiny_config(tmp_path, arms=["vanilla", "seal"], seeds=[3, 5]))
    runs = []
    train_arms(config, lambda arm, seed, settings: runs.append((arm.name, settings["seed"])), log=str)
    assert runs == [("vanilla", 3), ("seal", 3), ("vanilla", 5), ("seal", 5)]
    assert json.loads((Path(config.output_dir) / "seal" / "seed-5" / "arm.json").read_text())["seed"] == 5


def test_each_arm_is_its_own_accelerate_launch_of_the_packaged_recipe(tmp_path, monkeypatch):
    """The command, the settings file it reads, and the environment: what a launcher set for the experiment's
    own process (its rank, world size, rendezvous port) is not passed on to the arm's launch."""
    launches = []
    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.setenv("MASTER_PORT", "29500")
    monkeypatch.setenv("ACCELERATE_MIXED_PRECISION", "bf16")
    monkeypatch.setenv("ACCELERATE_LOG_LEVEL", "info")
    monkeypatch.setenv("SEAL_HUB_CACHE", str(tmp_path / "cache"))
    accelerate_config = CONFIGS.parent / "accelerate" / "cpu.yaml"
    settings = {"output_dir": str(tmp_path / "exp" / "seal" / "seed-0"), "seed": 0, "max_steps": 1}
    launch_arm(
        "seal-seed-0",
        settings,
        tmp_path / "exp",
        str(accelerate_config),
        log=str,
        run=lambda command, env: launches.append((command, env)) or 0,
    )
    [(command, env)] = launches
    assert command[1:4] == ["-m", "accelerate.commands.launch", "--config_file"] and command[4] == str(
        accelerate_config
    )
    assert command[5:] == [
        "-m",
        "seal_hub.scripts.seal",
        "--config",
        str(tmp_path / "exp" / "launch" / "seal-seed-0.yaml"),
    ]
    assert yaml.safe_load(Path(command[-1]).read_text()) == settings
    assert "WORLD_SIZE" not in env and "MASTER_PORT" not in env and "ACCELERATE_MIXED_PRECISION" not in env
    assert env["ACCELERATE_LOG_LEVEL"] == "info" and env["SEAL_HUB_CACHE"] == str(tmp_path / "cache")
    with pytest.raises(ArmFailed, match=r"seal-seed-0: training exited with status 3 .*relaunch resumes"):
        launch_arm("seal-seed-0", settings, tmp_path / "exp", None, log=str, run=lambda command, env: 3)
    with pytest.raises(ArmFailed, match="accelerate_config .*nothing.yaml: no such file"):
        launch_arm("seal-seed-0", settings, tmp_path / "exp", str(tmp_path / "nothing.yaml"), log=str)


def test_accelerate_config_is_beside_the_yaml_or_from_the_working_directory(tmp_path, monkeypatch):
    path = tiny_config(tmp_path, accelerate_config="../accelerate/cpu.yaml")
    assert ExperimentConfig.from_yaml(path).accelerate_config == str(tmp_path / "../accelerate/cpu.yaml")
    given = ExperimentConfig.from_yaml(path, {"accelerate_config": "recipes/accelerate/zero3.yaml"})
    assert given.accelerate_config == "recipes/accelerate/zero3.yaml"
    for shipped in EXPERIMENTS:  # every shipped experiment names a launch config that exists
        assert Path(ExperimentConfig.from_yaml(shipped).accelerate_config).is_file(), shipped.name
    # how the arms run is not what they compute: the plan (and so the manifest) does not record it
    assert "accelerate_config" not in json.dumps(given.plan())


def test_an_experiment_launched_as_several_processes_is_refused_with_the_command(tmp_path, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(ExperimentError, match=r"one process .* 2 processes.*python recipes/experiment.py"):
        recipe().main(str(tiny_config(tmp_path)))
    assert not (tmp_path / "exp" / "manifest.json").exists()


def test_finished_evaluations_are_kept_and_a_missing_suite_is_noted(tmp_path):
    config = ExperimentConfig.from_yaml(tiny_config(tmp_path, eval_suites=["bfcl", "tau2-telecom"]))
    calls, logged = [], []

    def evaluate(subject, suite, out):
        calls.append((subject.folder, suite))
        if suite == "tau2-telecom":
            raise SuiteUnavailable("install the extra")
        out.mkdir(parents=True)
        (out / "results.json").write_text("{}")

    results = eval_arms(config, evaluate, log=logged.append)
    count = len(config.arms) + 2  # the base model, the warm-up, the arms
    assert len(calls) == 2 * count and calls[2][0] == "warmup/seed-0"
    assert all(set(r.evals) == {"bfcl"} for r in results) and results[0].label == "base"
    assert sum("tau2-telecom skipped (install the extra)" in line for line in logged) == count
    calls.clear()
    eval_arms(config, evaluate, log=lambda _: None)
    assert {suite for _, suite in calls} == {"tau2-telecom"}  # bfcl is finished everywhere: not rerun


def _results(out: Path, average: float, num_tasks: int, per_category: dict | None = None) -> Path:
    out.mkdir(parents=True)
    per = {"base": {"passed": 1, "total": num_tasks, "success_rate": average}}
    per = (
        {c: {"passed": 1, "total": num_tasks, "success_rate": v} for c, v in per_category.items()}
        if per_category
        else per
    )
    (out / "results.json").write_text(
        json.dumps({"num_tasks": num_tasks, "scores": {"average": average, "per_category": per}})
    )
    return out


def test_the_tables_put_the_papers_numbers_beside_ours(tmp_path):
    config = ExperimentConfig.from_yaml(tiny_config(tmp_path, base={"model_name_or_path": "Qwen/Qwen2.5-7B-Instruct"}))
    paper = paper_numbers()
    ours = {arm.name: 10.0 + i for i, arm in enumerate(ARMS)}
    results = [ArmResult(BASE, {"bfcl": _results(tmp_path / "base", 1.5, paper.num_tasks)})]
    for arm in ARMS:
        subject = Subject(arm.label, f"{arm.name}/seed-0", arm, 0)
        results.append(ArmResult(subject, {"bfcl": _results(tmp_path / arm.name, ours[arm.name], paper.num_tasks)}))
    text = experiment_tables(config, results)
    ablation = text[text.index("## Ablation") :]
    rows = {line.split("|")[1].strip(): line for line in ablation.splitlines()[::-1] if line.startswith("| ")}
    for result in paper.results:
        if result.table == "ablation":
            arm = next(a for a in ARMS if a.label == result.setting)
            assert f"| {result.average:.2f} | {ours[arm.name]:.2f} ({paper.num_tasks} tasks)" in rows[result.setting]
    main = {r.setting: r.average for r in paper.for_model("Qwen/Qwen2.5-7B-Instruct")}
    assert f"| base | {main['base']:.2f} | 1.50 ({paper.num_tasks} tasks)" in text
    assert f"| SEAL | {main['SEAL']:.2f} | {ours['seal']:.2f} ({paper.num_tasks} tasks)" in text
    assert "not comparable" not in text.lower()
    few = [ArmResult(Subject("SEAL", "seal/seed-0", ARMS[1], 0), {"bfcl": _results(tmp_path / "few", 3.0, 2)})]
    assert "Not comparable with the paper" in experiment_tables(config, few)


def test_the_table_gives_each_setting_its_mean_and_interval_over_seeds(tmp_path):
    config = ExperimentConfig.from_yaml(tiny_config(tmp_path, seeds=[0, 1, 2], eval_suites=["bfcl-single"]))
    scores = {"vanilla": [20.0, 30.0, 40.0], "seal": [30.0, 32.0, 46.0]}
    results = [ArmResult(BASE, {"bfcl-single": _results(tmp_path / "base", 10.0, 200, {"simple": 10.0})})]
    for seed, value in enumerate([25.0, 30.0, 40.0]):  # each seed's warm-up, the arms' common start
        out = _results(tmp_path / "warmup" / str(seed), value, 200, {"simple": value})
        results.append(ArmResult(Subject(WARMUP_LABEL, f"warmup/seed-{seed}", None, seed), {"bfcl-single": out}))
    for name, values in scores.items():
        arm = ARMS_BY_NAME[name]
        for seed, value in enumerate(values):
            out = _results(tmp_path / name / str(seed), value, 200, {"simple": value, "parallel": value / 2})
            results.append(ArmResult(Subject(arm.label, f"{name}/seed-{seed}", arm, seed), {"bfcl-single": out}))
    text = experiment_tables(config, results)
    rows = {line.split("|")[1].strip(): line for line in text.splitlines() if line.startswith("| ")}
    assert "| base | - | 10.0 |" in rows["base"]  # one greedy run: no interval
    # vanilla: mean 30, sd 10, t(0.975, 2) = 4.303: half-width 4.303 * 10 / sqrt(3) = 24.84
    assert "| vanilla RL | 0, 1, 2 | 30.0 ± 24.8 | 15.0 | 30.0 |" in rows["vanilla RL"]
    # paired differences 10, 2, 6: mean 6, sd 4, half-width 4.303 * 4 / sqrt(3) = 9.94
    assert "SEAL minus vanilla: +6.0 points (95% interval -3.9 to 15.9, 3 seeds)" in text.splitlines()
    # over the warm-up: 5, 2, 6: mean 4.33, sd 2.08, half-width 4.303 * 2.08 / sqrt(3) = 5.17
    assert "RL over warm-up (seal): +4.3 points (95% interval -0.8 to 9.5, 3 seeds)" in text.splitlines()
    assert "Table 1" not in text  # the paper's tables are BFCL multi-turn's
    assert mean_interval([5.0]).half_width is None and mean_interval([1.0, 3.0]).text(2) == "2.00 ± 12.71"


def test_two_arms_train_evaluate_and_report_through_the_recipe(tmp_path, monkeypatch, capfd):
    """The default suite's end-to-end check: each arm's own `accelerate launch` of the recipe, the trainer, the
    evaluation and the report, small (the arms' output comes from their processes: `capfd`)."""
    require_bfcl()  # its suite is BFCL's
    monkeypatch.setenv("SEAL_HUB_CACHE", str(tmp_path / "cache"))
    path = tiny_config(tmp_path, arms=["vanilla", "seal"], evaluate_base=False, eval_suites=["bfcl"], eval_limit=1)
    table = recipe().main(str(path))
    out = capfd.readouterr().out
    assert out.strip().splitlines()[-1] == f"experiment: 2 arms trained and evaluated; table in {table}"
    assert out.count("accelerate.commands.launch --config_file") == 2  # one launch per arm
    manifest = json.loads((tmp_path / "exp" / "manifest.json").read_text())
    assert [a["name"] for a in manifest["arms"]] == ["vanilla", "seal"] and manifest["budget"]["max_steps"] == 1
    for name in ("vanilla", "seal"):
        run_config = json.loads((tmp_path / "exp" / name / "seed-0" / "run_config.json").read_text())
        assert run_config["reweighting"] == (name == "seal")
        assert not (tmp_path / "exp" / name / "seed-0" / "eval" / "base").exists()  # no comparison of its own
        results = json.loads((tmp_path / "exp" / name / "seed-0" / "eval" / "bfcl" / "results.json").read_text())
        assert results["num_tasks"] == 1
    # the second arm started from the warm-up the first one trained
    assert (
        "SFT warm-up: loaded the shared one in" in out
        and (tmp_path / "exp" / "warmup" / "seed-0" / "warmup.json").exists()
    )
    assert (tmp_path / "exp" / "warmup" / "seed-0" / "eval" / "bfcl" / "results.json").exists()
    text = table.read_text()
    assert "| vanilla RL |" in text and "| SEAL |" in text and "w/o reweighting" not in text


@pytest.mark.slow
def test_the_tiny_experiment_runs_end_to_end_and_resumes(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("SEAL_HUB_CACHE", str(tmp_path / "cache"))
    path = tiny_config(tmp_path)
    table = recipe().main(str(path))
    out = capfd.readouterr().out.strip().splitlines()
    config = ExperimentConfig.from_yaml(path)
    assert out[-1] == f"experiment: {len(ARMS)} arms trained and evaluated; table in {table}"
    root = Path(config.output_dir)
    for arm in ARMS:
        assert (root / arm.name / "seed-0" / "adapter_model.safetensors").exists()
        for suite in config.eval_suites:
            results = json.loads((root / arm.name / "seed-0" / "eval" / suite / "results.json").read_text())
            assert results["num_tasks"] == config.eval_limit and results["adapter"]["ref"] == f"{arm.name}-seed-0"
    text = table.read_text()
    assert all(f"| {arm.label} |" in text for arm in ARMS)
    assert (table.parent / "report.md").exists() and list(table.parent.glob("*.png"))
    recipe().main(str(path))  # the relaunch trains and evaluates nothing
    again = capfd.readouterr().out
    assert again.count("already trained: skipped") == len(ARMS) and "experiment: evaluating" not in again


def test_a_missing_base_config_is_one_line_naming_it(tmp_path):
    path = tiny_config(tmp_path, base_config="no_such.yaml")
    with pytest.raises(ExperimentError, match="base_config .*no_such.yaml"):
        recipe().main(str(path))
    assert not (tmp_path / "exp" / "manifest.json").exists()


@pytest.mark.slow
def test_an_arm_trains_in_two_processes_under_its_accelerate_config_and_the_experiment_evaluates(tmp_path):
    """Each arm's own `accelerate launch` with two CPU processes (gloo), the experiment itself one process.

    accelerate 1.15 starts several local processes only through its torchrun launcher (`MULTI_GPU`; its
    `MULTI_CPU` launch runs one process unless mpirun is given a host file), and the recipe's `use_cpu: true`
    makes those processes gloo ranks on the CPU."""
    launch = tmp_path / "two_processes.yaml"
    launch.write_text(
        yaml.safe_dump(
            {
                "compute_environment": "LOCAL_MACHINE",
                "distributed_type": "MULTI_GPU",
                "num_machines": 1,
                "num_processes": 2,
                "mixed_precision": "no",
                "main_process_port": 29617,
            }
        )
    )
    base = yaml.safe_load((CONFIGS / "experiment_tiny.yaml").read_text())["base"]
    path = tiny_config(
        tmp_path,
        arms=["vanilla", "seal"],
        evaluate_base=False,
        eval_suites=["bfcl"],
        eval_limit=1,
        accelerate_config=str(launch),
        base=base | {"num_train_tasks": 4},  # two ranks draw 2 x 2 distinct prompts per generation batch
    )
    env = os.environ | {"OMP_NUM_THREADS": "1", "SEAL_HUB_CACHE": str(tmp_path / "cache")}
    script = ROOT / "recipes" / "experiment.py"
    result = subprocess.run(
        [sys.executable, str(script), "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=1500,
        env=env,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [line for line in result.stdout.splitlines() if line.startswith("experiment: ")]
    assert sum(line.startswith("experiment: training arm") for line in lines) == 2
    assert sum("accelerate.commands.launch --config_file" in line for line in lines) == 2
    assert sum(line.startswith("experiment: evaluating") for line in lines) == 3  # warm-up, 2 arms
    assert lines[-1].startswith("experiment: 2 arms trained and evaluated; table in ")
    for name in ("vanilla", "seal"):
        assert json.loads((tmp_path / "exp" / name / "seed-0" / "arm.json").read_text())["trained"] is True
        assert (tmp_path / "exp" / name / "seed-0" / "eval" / "bfcl" / "results.json").exists()
        settings = yaml.safe_load((tmp_path / "exp" / "launch" / f"{name}-seed-0.yaml").read_text())
        metrics = json.loads(
            (tmp_path / "exp" / name / "seed-0" / "iterations" / "step_000001" / "metrics.json").read_text()
        )
        # the step's record holds both processes' rollouts: two per-device batches
        assert metrics["label_profile"]["rollouts"] == 2 * settings["per_device_train_batch_size"]
