"""README stays true to the code: every DOMINO_* variable the backend reads is documented."""

import re
from pathlib import Path

from torch_domino import _C

README = Path(__file__).resolve().parents[2] / "README.md"


def test_configuration_table_lists_exactly_the_known_variables():
    documented = set(re.findall(r"^\| `(DOMINO_[A-Z_]+)` \|", README.read_text(), re.MULTILINE))
    assert documented == set(_C.known_variables())


def test_configuration_table_says_which_settings_come_from_rank_0():
    rows = re.findall(r"^\| `(DOMINO_[A-Z_]+)` \|[^|]*\|[^|]*\| ([^|]+) \|", README.read_text(), re.MULTILINE)
    from_rank_0 = {name for name, who in rows if who.strip() == "rank 0's"}
    assert from_rank_0 == set(_C.wire_variables())
    assert len(rows) == len(_C.known_variables())


def test_readme_names_the_two_commands_that_ci_runs():
    text = README.read_text()
    assert "bash scripts/setup.sh && /opt/torch-domino-venv/bin/torchrun --nproc-per-node 2 examples/train_gpt.py" in text
    assert "bash scripts/test.sh" in text
    ci = (README.parent / ".ci" / "run").read_text()
    assert "scripts/test.sh" in ci
