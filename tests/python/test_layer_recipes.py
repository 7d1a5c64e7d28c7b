"""docs/extending.md's two layer recipes, checked as they are written.

A new layer type is a C++ module registered by name (overlap/LayerTypes.h):
tests/cpp/AddedLayerTest.cpp adds one in its own file and checks it against a reference over
forked domino ranks at TP 1, 2 and 4. Here: every registered type is a class of
torch_domino.overlap, built through the registry, with no binding written, and docs/layers.md
names it.

A new layer config field is a member and a visit line in overlap/TransformerConfig.h, its check
in validate(), the layer that reads it, its row in layers.md's table and, where Megatron-Core has
the same setting, its mapping in torch_domino/megatron/config.py. softmax_scale is the worked
example: parsed, refused with a message when wrong, reaching the layers over domino ranks, and
Megatron-Core's softmax_scale computing through the Domino spec what its local spec computes."""

from __future__ import annotations

import importlib.util
import math
import re
from pathlib import Path

import pytest
import torch

from ranks import assert_all_ok, run_ranks
from torch_domino import _C
from torch_domino import overlap as ov

LAYERS_MD = Path(__file__).resolve().parents[2] / "docs" / "layers.md"


def _section(title: str) -> str:
    text = LAYERS_MD.read_text(encoding="utf-8")
    found = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## )", text, re.DOTALL | re.MULTILINE)
    assert found, f"docs/layers.md has no section '## {title}'"
    return found.group(1)


# --- a new layer type ---------------------------------------------------------------------------

def test_every_registered_layer_type_is_a_class_built_by_name():
    types = _C.overlap.layer_types()
    assert {"ShardedAttention", "ParallelMLP"} <= {name for name, _ in types}
    config = ov.TransformerConfig(hidden_size=32, num_attention_heads=4)
    for name, doc in types:
        cls = getattr(ov, name)
        assert name in ov.__all__ and issubclass(cls, torch.nn.Module)
        assert cls.__name__ == name and cls.__doc__ == doc and doc
        layer = cls(config)
        assert isinstance(layer._impl, _C.overlap.ConfiguredLayer)
        assert layer(torch.randn(5, 2, 32)).shape == (5, 2, 32)
        # The parameters are the C++ module's own tensors, under its names.
        assert [(n, p.data_ptr()) for n, p in layer.named_parameters()] == \
            [(n, p.data_ptr()) for n, p in layer._impl.named_parameters()]
    with pytest.raises(ValueError, match="no layer type 'ParallelMlp'; the registered ones are "):
        _C.overlap.build_layer("ParallelMlp", config, None)


def test_layers_md_names_every_registered_layer_type():
    named = set(re.findall(r"^- `(\w+)`", _section("The classes"), re.MULTILINE))
    missing = [name for name, _ in _C.overlap.layer_types() if name not in named]
    assert missing == [], f"docs/layers.md's 'The classes' does not name {missing}"


# --- a new layer config field -------------------------------------------------------------------

def test_layers_md_table_lists_every_config_field_in_order():
    rows = re.findall(r"^\| (`\w+`(?:, `\w+`)*) \|", _section("TransformerConfig"), re.MULTILINE)
    documented = [name for row in rows for name in re.findall(r"`(\w+)`", row) if name != "field"]
    assert documented == [name for name, _, _ in ov.TransformerConfig.fields()], (
        "docs/layers.md's TransformerConfig table differs from TransformerConfig.fields()")


def _config(**fields):
    return ov.TransformerConfig(hidden_size=64, num_attention_heads=4, **fields)


def test_softmax_scale_is_parsed_and_read_back():
    assert _config().softmax_scale is None
    config = _config(softmax_scale=0.125)
    assert config.softmax_scale == 0.125
    assert config.to_dict()["softmax_scale"] == 0.125 and "softmax_scale=0.125" in repr(config)
    assert config.replace(softmax_scale=None) == _config()
    assert config.validate(4) == 256
    with pytest.raises(TypeError, match=r"TransformerConfig.softmax_scale got 'large' of type str"):
        _config(softmax_scale="large")


@pytest.mark.parametrize("bad,text", [(0.0, "0"), (-0.5, "-0.5"), (math.inf, "inf"),
                                      (math.nan, "nan")])
def test_a_softmax_scale_that_is_not_a_positive_number_is_refused_with_a_message(bad, text):
    said = (f"TransformerConfig: softmax_scale={text} must be a positive number; leave it None "
            "for 1/sqrt(head dimension)")
    with pytest.raises(ValueError, match=re.escape(said)):
        _config(softmax_scale=bad).validate(1)
    with pytest.raises(ValueError, match=re.escape(said)):
        ov.ShardedAttention(_config(softmax_scale=bad))


def test_softmax_scale_reaches_the_layers_at_tensor_parallel_2():
    scales = [None, 0.05, 0.7]
    for said in assert_all_ok(run_ranks(2, "layer_recipe_workers.softmax_scale_reaches_the_layers",
                                        scales)):
        assert len(said["reports"]) == 3 * len(scales)
        for report in said["reports"]:
            if report["against"] == "scale":
                assert report["ok"], report
            elif report["scale"] is not None:  # the control: the default computes another thing
                assert not report["ok"], report
        # Training with attention dropout computes the scores itself.
        assert said["dropout"] == {key: True for key in said["dropout"]}, said["dropout"]


def test_megatron_softmax_scale_is_mapped_not_refused():
    # Megatron-Core is imported by the rank only (it takes seconds).
    if importlib.util.find_spec("megatron") is None:
        pytest.skip("Megatron-Core is not installed")
    if torch.cuda.is_available():
        pytest.skip("Megatron-Core on the CPU (torch_domino.megatron.cpu) refuses a CUDA machine")
    report = assert_all_ok(run_ranks(1, "layer_recipe_workers.megatron_softmax_scale", 0.3,
                                     timeout=300))[0]
    assert not report["must_equal"], report
    assert report["held"] == [0.3], report
    assert report["load"] == "<All keys matched successfully>", report
    assert abs(report["loss"] - report["want_loss"]) <= 1e-5 * abs(report["want_loss"]), report
    assert report["grad"] <= 1e-5, report
