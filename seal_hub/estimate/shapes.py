"""Model shapes for the memory estimate: the few numbers of a decoder-only transformer's config that size it.

`ModelShape` holds hidden size, layers, heads, key/value heads, head size, MLP width, vocabulary and whether
the output head shares the embedding matrix, and counts the parameters of a Llama/Qwen2-style decoder
(attention with grouped key/value heads, gated MLP, RMSNorm). `resolve_shape` finds the shape of a model name:

1. a local model directory: its ``config.json``;
2. the names of the paper's backbones (Qwen2.5-3B/7B-Instruct, Llama-3.1-8B-Instruct, SmolLM2-135M-Instruct):
   the shapes shipped in ``data/backbones.json``, copied from each model's ``config.json`` on the Hub (the
   file names its source), so the estimate works offline and needs no download;
3. any other Hub id: its ``config.json`` through `huggingface_hub` (fails with a one-line error offline).

`tiny` means seal_hub's tiny random test policy (`seal_hub.models.tiny`, built in the cache on first use).

Not covered: mixture-of-experts layers, multimodal towers, or sliding-window layers (their configs parse,
but the counts assume every layer is a dense full-attention decoder layer).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from seal_hub.models.config import parse_model_id
from seal_hub.models.demo import DEMO_MODEL_ID

BACKBONES_FILE = "backbones.json"
# Llama and Qwen2 carry biases on these projections (Qwen2: q/k/v only)
BIASED_QKV_TYPES = frozenset({"qwen2"})


@dataclass(frozen=True)
class ModelShape:
    """The sizes of a decoder-only transformer that its memory depends on."""

    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    tied_embeddings: bool
    qkv_bias: bool = False
    source: str = ""

    def __post_init__(self) -> None:
        for name in ("hidden_size", "intermediate_size", "num_layers", "num_heads", "num_kv_heads", "head_dim"):
            if getattr(self, name) < 1:
                raise ValueError(f"model shape: {name} must be >= 1, got {getattr(self, name)}")
        if self.vocab_size < 1:
            raise ValueError(f"model shape: vocab_size must be >= 1, got {self.vocab_size}")

    @property
    def q_dim(self) -> int:
        return self.num_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.num_kv_heads * self.head_dim

    def linear_shapes(self) -> dict[str, tuple[int, int]]:
        """(in, out) features of each projection of one decoder layer, by the module names PEFT targets."""
        h, i = self.hidden_size, self.intermediate_size
        return {
            "q_proj": (h, self.q_dim),
            "k_proj": (h, self.kv_dim),
            "v_proj": (h, self.kv_dim),
            "o_proj": (self.q_dim, h),
            "gate_proj": (h, i),
            "up_proj": (h, i),
            "down_proj": (i, h),
        }

    @property
    def layer_linear_params(self) -> int:
        """Weights of one layer's projections (what 4-bit quantisation stores in 4 bits)."""
        return sum(a * b for a, b in self.linear_shapes().values())

    @property
    def layer_other_params(self) -> int:
        """One layer's parameters outside its projections' weights: two RMSNorm vectors and q/k/v biases."""
        bias = self.q_dim + 2 * self.kv_dim if self.qkv_bias else 0
        return 2 * self.hidden_size + bias

    @property
    def embedding_params(self) -> int:
        return self.vocab_size * self.hidden_size

    @property
    def head_params(self) -> int:
        """The output head's own matrix (0 when it is the embedding matrix)."""
        return 0 if self.tied_embeddings else self.vocab_size * self.hidden_size

    @property
    def num_params(self) -> int:
        layers = self.num_layers * (self.layer_linear_params + self.layer_other_params)
        return self.embedding_params + self.head_params + layers + self.hidden_size  # + final norm

    @property
    def kv_values_per_token(self) -> int:
        """Keys and values one token keeps in a KV cache, over all layers (times the dtype's bytes)."""
        return 2 * self.num_layers * self.kv_dim


def shape_from_config(config: dict, source: str = "") -> ModelShape:
    """A `ModelShape` from a ``config.json`` mapping (its text config, for a multimodal wrapper)."""
    config = config.get("text_config") or config
    try:
        hidden = int(config["hidden_size"])
        heads = int(config["num_attention_heads"])
        return ModelShape(
            hidden_size=hidden,
            intermediate_size=int(config["intermediate_size"]),
            num_layers=int(config["num_hidden_layers"]),
            num_heads=heads,
            num_kv_heads=int(config.get("num_key_value_heads") or heads),
            head_dim=int(config.get("head_dim") or hidden // heads),
            vocab_size=int(config["vocab_size"]),
            tied_embeddings=bool(config.get("tie_word_embeddings", False)),
            qkv_bias=config.get("model_type") in BIASED_QKV_TYPES or bool(config.get("attention_bias", False)),
            source=source,
        )
    except KeyError as exc:
        missing = exc.args[0]
        raise ValueError(f"model config {source} has no {missing!r}: not a decoder-only transformer") from None


def shipped_backbones() -> dict[str, dict]:
    """The shipped shapes of the paper's backbones, by Hub id (each with its ``source``)."""
    text = resources.files("seal_hub.estimate").joinpath("data", BACKBONES_FILE).read_text()
    return {name: entry for name, entry in json.loads(text).items() if not name.startswith("_")}


def resolve_shape(name: str | None, revision: str | None = None) -> ModelShape:
    """The shape of the model `name` names: a local directory, a shipped backbone, or a Hub id (module doc)."""
    name = name or DEMO_MODEL_ID
    if name == "tiny":
        from seal_hub.models.tiny import named_policy_config

        name = str(named_policy_config("tiny").model_name_or_path)
    local = Path(name).expanduser()
    if local.is_dir():
        path = local / "config.json"
        if not path.is_file():
            raise ValueError(f"model directory {name} has no config.json")
        return shape_from_config(json.loads(path.read_text()), source=str(path))
    repo_id, named_revision = parse_model_id(name)
    backbones = shipped_backbones()
    if repo_id in backbones:
        entry = backbones[repo_id]
        return shape_from_config(entry, source=f"shipped shape of {repo_id} ({entry['source']})")
    return _hub_shape(repo_id, named_revision or revision)


def _hub_shape(repo_id: str, revision: str | None) -> ModelShape:
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import HFValidationError

    try:
        path = hf_hub_download(repo_id, "config.json", revision=revision)
    except (HFValidationError, ValueError) as exc:
        raise ValueError(f"model {repo_id!r}: not a local directory, shipped backbone or Hub id ({exc})") from None
    except Exception as exc:  # offline, gated, missing: one line, and what to do
        shipped = ", ".join(shipped_backbones())
        raise ValueError(
            f"cannot read config.json of {repo_id!r} from the Hub ({type(exc).__name__}); give a local model "
            f"directory, go online, or use a shipped backbone: {shipped}"
        ) from None
    return shape_from_config(json.loads(Path(path).read_text()), source=f"https://huggingface.co/{repo_id}")
