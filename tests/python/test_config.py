"""The layer config has one definition, the C++ field list (overlap/TransformerConfig.h). These
tests walk TransformerConfig.fields() and check that every field, whatever it is, reaches Python
whole: constructor by keyword and position, property with its doc, repr, to_dict, replace,
equality and pickling. A field added to the C++ list is covered here with no other edit."""

from __future__ import annotations

import copy
import pickle

import pytest

from torch_domino.overlap import TransformerConfig

# A value other than the default for each kind of field, so a change is visible.
CHANGED = {bool: lambda v: not v, int: lambda v: v + 3, float: lambda v: v + 0.25}
CHOICES = {"activation": "swiglu", "normalization": "rmsnorm", "params_dtype": "bfloat16",
           "split": "column", "overlap": "intra", "qkv_layout": "groups"}
OPTIONAL = {"qkv_bias": False, "micro_batches": 4, "overlap": "intra", "softmax_scale": 0.5}


def _other(name, default):
    if name in OPTIONAL and default is None:
        return OPTIONAL[name]
    if name in CHOICES:
        return CHOICES[name]
    if type(default) not in CHANGED:
        pytest.fail(f"field {name!r} (default {default!r}): give it another value in this file's "
                    "OPTIONAL (a None default) or CHOICES (a name or a string)")
    return CHANGED[type(default)](default)


def _base():
    return TransformerConfig(hidden_size=256, num_attention_heads=8)


@pytest.mark.parametrize("name,default,doc", TransformerConfig.fields())
def test_every_field_reaches_python_whole(name, default, doc):
    assert doc and getattr(TransformerConfig, name).__doc__ == doc
    base = _base()
    if name not in ("hidden_size", "num_attention_heads"):
        assert getattr(base, name) == default
    value = _other(name, getattr(base, name))
    changed = base.replace(**{name: value})
    assert getattr(changed, name) == value and changed != base
    assert getattr(base, name) != value  # replace copies
    assert {k: v for k, v in changed.to_dict().items() if k != name} == \
        {k: v for k, v in base.to_dict().items() if k != name}
    assert f"{name}={value!r}" in repr(changed)
    assert pickle.loads(pickle.dumps(changed)) == changed
    assert copy.deepcopy(changed) == changed
    by_keyword = TransformerConfig(**{**base.to_dict(), name: value})
    assert by_keyword == changed
    by_position = TransformerConfig(*changed.to_dict().values())
    assert by_position == changed
    setter = _base()
    setattr(setter, name, value)
    assert setter == changed


def test_fields_are_the_constructor_order_and_nothing_else():
    names = [name for name, _, _ in TransformerConfig.fields()]
    assert list(_base().to_dict()) == names
    assert len(set(names)) == len(names)
    with pytest.raises(TypeError, match="no field 'hiden_size'"):
        TransformerConfig(hidden_size=256, num_attention_heads=8, hiden_size=1)
    with pytest.raises(TypeError, match="at most"):
        TransformerConfig(*range(len(names) + 1))


def test_validation_names_the_field_and_value():
    with pytest.raises(ValueError, match="num_attention_heads"):
        TransformerConfig(hidden_size=256, num_attention_heads=6).validate(4)
