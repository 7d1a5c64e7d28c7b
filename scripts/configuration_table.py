"""Writes the settings table of docs/configuration.md from the backend's declarations.

    python scripts/configuration_table.py           # rewrite the table in place
    python scripts/configuration_table.py --check   # exit 1 if the committed table is stale

Every DOMINO_* variable is declared once, in backend/config/SettingDeclarations.cpp; the table
is generated from those declarations (torch_domino._C.setting_declarations()), so it never lists
a variable the backend does not read, or says "rank 0's" of one that is not agreed at init.
"""
from __future__ import annotations

import argparse
import pathlib
import sys

CONFIGURATION = pathlib.Path(__file__).resolve().parents[1] / "docs" / "configuration.md"
BEGIN = "<!-- settings table: written by scripts/configuration_table.py from the declarations -->"
END = "<!-- end of settings table -->"


def table() -> str:
    from torch_domino import _C
    lines = ["| Variable | Accepted values | Default | Across ranks | Effect |",
             "|---|---|---|---|---|"]
    for d in _C.setting_declarations():
        across = "rank 0's" if d["agreed"] else "each rank's"
        lines.append(f"| `{d['name']}` | {d['accepted']} | {d['default']} | {across} | "
                     f"{d['effect']} |")
    return "\n".join(lines)


def with_table(text: str) -> str:
    begin, end = text.find(BEGIN), text.find(END)
    if begin < 0 or end < begin:
        raise SystemExit(f"{CONFIGURATION}: the markers {BEGIN!r} and {END!r} are missing")
    return text[:begin + len(BEGIN)] + "\n" + table() + "\n" + text[end:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="only compare, and exit 1 if the table differs")
    args = parser.parse_args()
    text = CONFIGURATION.read_text(encoding="utf-8")
    wanted = with_table(text)
    if args.check:
        if wanted != text:
            print(f"{CONFIGURATION} is stale: run python scripts/configuration_table.py",
                  file=sys.stderr)
            return 1
        return 0
    CONFIGURATION.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
