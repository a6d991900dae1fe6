"""What several test files share, in one place: test files import from here, never from each other.

- `paths`: the checkout's root, the paper's split file, the recipe configs and the tests' own loop config;
- `recipes`: recipes/seal.py loaded as a module, and its TrlParser run on a config with flags;
- `scripted`: a generation backend that plays scripted texts (`ScriptedBackend`), and `half_right`, the trainer's
  backend factory whose groups always hold one right and one wrong rollout;
- `oracle_script`: a script that answers every task with its reference answer;
- `tiny_run`: the two-step tiny-model training runs' settings, policy and trainer;
- `turns`: a trajectory replayed through an episode into trajectory records, and their turn labels;
- `perturb`: deterministic perturbations of ground-truth trajectories;
- `profiles`: the failure profile the interface and hub tests evolve from;
- `hub_artifacts`: small real artifacts (trajectories, diagnoses, snapshots, LoRA adapters) for the hub tests;
- `hub_double`: a loopback Hugging Face Hub, and `online`, which points the clients at it;
- `vllm_double`: a loopback vLLM server (the plain `SequentialBackend` behind it);
- `replay_data`, `space_app`: a scripted run in a local registry for the replay tests, and the Space app loaded
  and read through `gradio_client`;
- `report_fixtures`: run and evaluation folders for the report tests;
- `run_checks`: what a finished run's folder and registry must look like, and their fingerprint;
- `template_models`: tiny models with other chat templates (Llama 3.1's, pythonic calls);
- `zero3_probe`: the training script with a per-rank probe, launched by tests/test_deepspeed.py.

`tests/` is on the import path when pytest runs (it has no ``__init__.py``), so these import as ``helpers.X``;
scripts under tests/scripts/ put tests/ on their path first. Fixtures themselves are in tests/conftest.py.
"""
