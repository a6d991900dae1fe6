"""Training-memory estimate per GPU for a recipe config (`seal-hub estimate`): shapes, plan, parts, report."""

from seal_hub.estimate.parts import Part, all_parts
from seal_hub.estimate.plan import LaunchPlan, TrainingPlan, load_plan
from seal_hub.estimate.report import Estimate, estimate_plan, render
from seal_hub.estimate.shapes import ModelShape, resolve_shape, shape_from_config

__all__ = [
    "Estimate",
    "LaunchPlan",
    "ModelShape",
    "Part",
    "TrainingPlan",
    "all_parts",
    "estimate_plan",
    "load_plan",
    "render",
    "resolve_shape",
    "shape_from_config",
]
