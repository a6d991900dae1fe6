"""Training scripts shipped inside the package (as TRL keeps its own in `trl/scripts/`), so an installed wheel
can train without a checkout. Each exposes `make_parser`, `main(*make_parser().parse_args_and_config())` and
`run(argv)`; `seal-hub train` dispatches to `seal`, and `recipes/seal.py` is its `accelerate launch` entry.
"""
