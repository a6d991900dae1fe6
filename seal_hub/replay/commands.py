"""`seal-hub space`: serve the replay Space locally, or deploy it to the Hub.

- ``seal-hub space [--run NS/RUN] [--revision REV] [--port N]`` serves the Space repository's app.py on this
  machine (top-level spaces/replay/, which the wheel ships, so it serves from a wheel install too; default
  registry: the local one; a run may also be ``hf://NS/RUN`` or a directory; without ``--run`` the page lists the
  local registry's runs and opens the newest), free to open any run, directory or policy; with ``--public`` it
  serves in deployed mode, as a Hub Space does (the run's namespace, or the ``--allow_run`` list, and the policies
  the run published; `seal_hub.replay.access`);
- ``seal-hub space deploy hf://NS/NAME --run NS/RUN [--allow_run NS ...]`` creates or updates a Space pinned to
  the run's latest version on the Hub (`seal_hub.replay.deploy`), deployed mode fixed in its ``replay.json``.

Not covered: the page itself (`seal_hub.replay.space_app`) and the views it shows (`seal_hub.replay.page`).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys


def _serve(args: argparse.Namespace) -> int:
    from seal_hub.replay.deploy import space_template

    if args.port is not None and not 0 < args.port < 65536:
        raise ValueError(f"--port must be in 1..65535, got {args.port}")
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    if args.run:
        os.environ["SEAL_REPLAY_RUN"] = args.run
    if args.revision:
        os.environ["SEAL_REPLAY_REVISION"] = args.revision
    if args.public and not args.run:
        raise ValueError("--public needs --run NS/RUN: a deployed Space shows one run (and its namespace)")
    if args.run:
        from seal_hub.replay.replay_source import open_replay_source

        open_replay_source(args.run, args.revision)  # a wrong run fails here, in one line, not in the page
    if args.public:
        from seal_hub.replay.access import space_policies

        os.environ["SEAL_REPLAY_PUBLIC"] = "1"
        os.environ["SEAL_REPLAY_POLICIES"] = ",".join(space_policies(args.run, args.revision or ""))
        if args.allow_run:
            os.environ["SEAL_REPLAY_RUNS"] = ",".join(args.allow_run)
    spec = importlib.util.spec_from_file_location("seal_replay_app", space_template() / "app.py")
    app = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = app  # the app's dataclasses look their module up
    spec.loader.exec_module(app)
    print(f"serving the replay Space for {args.run or 'the newest run of the local registry (no --run given)'}")
    app.demo.launch(server_port=args.port, css=app.CSS, theme=app.THEME, ssr_mode=False, share=False)
    return 0


def _deploy(args: argparse.Namespace) -> int:
    from seal_hub.replay.deploy import deploy_space

    url, pins = deploy_space(args.target, args.run, tuple(args.allow_run or ()))
    versions = ", ".join(pins.environment_versions) or "none"
    print(f"deployed {url}: {pins.run} at {pins.revision} ({pins.commit[:12]}), environment versions {versions}")
    print(f"visitors may open runs of {', '.join(pins.runs)} and run live: {', '.join(pins.policies)}")
    return 0


def add_space_commands(commands: argparse._SubParsersAction) -> None:
    space = commands.add_parser("space", help="the replay Space: serve it locally, or deploy it to the Hub")
    space.add_argument("--run", default=None, help="NS/RUN (local registry), hf://NS/RUN, or a directory")
    space.add_argument("--revision", default=None, help="the run's revision (default: main)")
    space.add_argument("--port", type=int, default=None, help="port to serve on (default: Gradio's, 7860)")
    space.add_argument("--public", action="store_true", help="deployed mode, as on a Hub Space (see docs/space.md)")
    space.add_argument("--allow_run", action="append", metavar="NS[/RUN]", help="--public: runs visitors may open")
    space.set_defaults(handler=_serve)
    actions = space.add_subparsers(dest="space_command")
    deploy = actions.add_parser("deploy", help="create or update a Hub Space pinned to a run's revisions")
    deploy.add_argument("target", metavar="hf://NS/NAME", help="the Space repository")
    deploy.add_argument("--run", required=True, help="the run on the Hub: NS/RUN (optionally @iter-k)")
    deploy.add_argument(
        "--allow_run", action="append", metavar="NS[/RUN]", help="runs visitors may open (default: the run's NS)"
    )
    deploy.set_defaults(handler=_deploy)
