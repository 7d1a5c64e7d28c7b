"""The README and docs/ stay true to the code.

- docs/configuration.md's table lists exactly the DOMINO_* variables the backend reads, and its
  "rank 0's" rows are exactly the settings agreed at init;
- the README names the two commands CI runs;
- every relative link resolves (to a file, and for #anchors to a heading);
- every path under examples/, bench/, scripts/ or tests/ that the docs name in code exists;
- every --flag of a documented `python <script>` / `python -m torch_domino.<module>` /
  `torchrun <script>` command line is one that the script's argparse defines.

Each check is a pure function of the text, so the last tests feed it broken input and expect it
to complain: a check that cannot fail checks nothing. Nothing here runs the scripts.
"""

from __future__ import annotations

import glob
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
CONFIGURATION = DOCS / "configuration.md"

TWO_COMMANDS = (
    "bash scripts/setup.sh && /opt/torch-domino-venv/bin/torchrun --nproc-per-node 2 examples/train_gpt.py",
    "bash scripts/test.sh",
)
PAGES = ("README.md", "backend.md", "configuration.md", "routing.md", "cuda.md", "layers.md",
         "extending.md", "inference.md", "launching.md", "security.md",
         "checkpoints.md", "megatron.md", "fault-tolerance.md", "benchmarks.md",
         "how-it-works.md", "testing.md")
# Scripts that hand the flags they do not know to another parser (parse_known_args).
PASSES_FLAGS_TO = {"bench/builds/compare_builds.py": "python/torch_domino/bench.py"}


def doc_files() -> list[Path]:
    return [README] + sorted(DOCS.glob("*.md"))


# --- reading markdown ------------------------------------------------------------------------

FENCE = re.compile(r"^\s*(```|~~~)\s*([\w+-]*)")


def split_markdown(text: str) -> tuple[list[str], list[tuple[str, str]]]:
    """(prose lines, [(language, code)] of the fenced blocks)."""
    prose, blocks, language, code, fence = [], [], None, [], None
    for line in text.splitlines():
        match = FENCE.match(line)
        if fence is None and match:
            fence, language, code = match.group(1), match.group(2).lower(), []
        elif fence is not None and line.strip().startswith(fence):
            blocks.append((language, "\n".join(code)))
            fence = None
        elif fence is not None:
            code.append(line)
        else:
            prose.append(line)
    return prose, blocks


INLINE_CODE = re.compile(r"(`+)(.+?)\1")


def inline_code(prose: list[str]) -> list[str]:
    return [m.group(2) for line in prose for m in INLINE_CODE.finditer(line)]


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: markup dropped, lower case, punctuation other than
    '-' and '_' removed, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links: their text
    text = text.replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    prose, _ = split_markdown(text)
    seen: dict[str, int] = {}
    out = set()
    for line in prose:
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        slug = github_slug(match.group(1))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        out.add(slug if count == 0 else f"{slug}-{count}")
    return out


LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def links(text: str) -> list[str]:
    prose, _ = split_markdown(text)
    return [m.group(1) for line in prose for m in LINK.finditer(INLINE_CODE.sub("", line))]


# --- the checks: each returns what is wrong ---------------------------------------------------

def broken_links(text: str, where: Path, root: Path = ROOT) -> list[str]:
    problems, root = [], root.resolve()
    for target in links(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path_part, _, anchor = target.partition("#")
        if not path_part:  # an anchor in this page
            if anchor not in anchors(text):
                problems.append(f"{where.name}: link to {target}: no such heading here")
            continue
        path = (where.parent / path_part).resolve()
        if not path.exists():
            problems.append(f"{where.name}: link to {target}: no such file")
            continue
        if root not in path.parents and path != root:
            problems.append(f"{where.name}: link to {target}: outside the repository")
            continue
        if anchor:
            if path.suffix != ".md" or path.is_dir():
                problems.append(f"{where.name}: link to {target}: an anchor into a non-markdown file")
            elif anchor not in anchors(path.read_text()):
                problems.append(f"{where.name}: link to {target}: no heading #{anchor} there")
    return problems


REPO_PATH = re.compile(r"(?<![\w./$-])((?:examples|bench|scripts|tests)/[\w.{},*?/-]*)")


def expand_braces(path: str) -> list[str]:
    match = re.search(r"\{([^{}]*)\}", path)
    if not match:
        return [path]
    return [expanded for option in match.group(1).split(",")
            for expanded in expand_braces(path[:match.start()] + option + path[match.end():])]


def paths_in_code(text: str) -> set[str]:
    prose, blocks = split_markdown(text)
    pieces = inline_code(prose) + [code for _, code in blocks]
    found = set()
    for piece in pieces:
        for match in REPO_PATH.finditer(piece):
            found.add(match.group(1).rstrip(".,:;"))
    return found


def missing_paths(text: str, where: Path, root: Path = ROOT) -> list[str]:
    problems = []
    for named in sorted(paths_in_code(text)):
        for path in expand_braces(named):
            if any(c in path for c in "*?"):
                # A pattern names files a run makes: its folder must exist.
                folder = path[:min(path.index(c) for c in "*?" if c in path)].rpartition("/")[0]
                if not (root / folder).is_dir():
                    problems.append(f"{where.name}: {named}: no folder {folder}")
            elif not (root / path).exists():
                problems.append(f"{where.name}: {named}: no such file or folder")
    return problems


def argparse_flags(script: Path) -> set[str]:
    source = script.read_text()
    flags = set()
    for call in re.finditer(r"add_argument\(((?:\s*[\"'][^\"']*[\"']\s*,?)+)", source):
        flags.update(re.findall(r"[\"'](--[\w-]+)[\"']", call.group(1)))
    return flags


def module_scripts(module: str, root: Path = ROOT) -> list[Path]:
    """The files that make `python -m torch_domino.X`'s parser: X.py and the _X.py it runs."""
    package, _, name = module.rpartition(".")
    folder = root / "python" / Path(*package.split("."))
    return [p for p in (folder / f"{name}.py", folder / f"_{name}.py") if p.exists()]


def shell_commands(code: str) -> list[list[str]]:
    """A bash block's commands as token lists: continuation lines joined, comments dropped, split
    at ;, &&, || and |, quotes removed (so `bash -c '... python x.py --f'` is seen too)."""
    commands = []
    for line in code.replace("\\\n", " ").splitlines():
        line = re.sub(r"(^|\s)#.*$", "", line)
        for segment in re.split(r"&&|\|\||;|\|", line):
            tokens = segment.replace("'", " ").replace('"', " ").split()
            if tokens:
                commands.append(tokens)
    return commands


def invocations(code: str, root: Path = ROOT):
    """(what, parser files, flags given) for each Python script or module a bash block runs."""
    for tokens in shell_commands(code):
        launcher = False
        for i, token in enumerate(tokens):
            base = token.rpartition("/")[2]
            if re.fullmatch(r"python[\d.]*|torchrun", base):
                launcher = True
                continue
            if not launcher:
                continue
            if token == "-m" and i + 1 < len(tokens) and tokens[i + 1].startswith("torch_domino."):
                scripts, what, rest = module_scripts(tokens[i + 1], root), tokens[i + 1], tokens[i + 2:]
            elif token.endswith(".py") and not token.startswith("-"):
                script = root / token
                extra = PASSES_FLAGS_TO.get(token)
                scripts = [script] + ([root / extra] if extra else [])
                what, rest = token, tokens[i + 1:]
            else:
                continue
            flags = {t.split("=", 1)[0] for t in rest if t.startswith("--")}
            yield what, scripts, flags
            break


def unknown_flags(text: str, where: Path, root: Path = ROOT) -> list[str]:
    _, blocks = split_markdown(text)
    problems = []
    for language, code in blocks:
        if language not in ("bash", "sh", "shell", "console"):
            continue
        for what, scripts, flags in invocations(code, root):
            present = [s for s in scripts if s.exists()]
            if not present:
                problems.append(f"{where.name}: {what}: no such script")
                continue
            known = set().union(*(argparse_flags(s) for s in present))
            for flag in sorted(flags - known):
                problems.append(f"{where.name}: {what} has no {flag} (its parser: "
                                f"{', '.join(sorted(known)) or 'none'})")
    return problems


# --- the docs as they are -----------------------------------------------------------------------

def configuration_rows() -> list[tuple[str, str]]:
    return re.findall(r"^\| `(DOMINO_[A-Z_]+)` \|[^|]*\|[^|]*\| ([^|]+) \|",
                      CONFIGURATION.read_text(), re.MULTILINE)


def test_configuration_table_lists_exactly_the_known_variables():
    from torch_domino import _C
    documented = set(re.findall(r"^\| `(DOMINO_[A-Z_]+)` \|", CONFIGURATION.read_text(),
                                re.MULTILINE))
    assert documented == set(_C.known_variables())


def test_configuration_table_is_the_one_the_declarations_generate():
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "configuration_table", ROOT / "scripts" / "configuration_table.py")
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    text = CONFIGURATION.read_text(encoding="utf-8")
    assert generator.with_table(text) == text, (
        "docs/configuration.md's table is stale: run python scripts/configuration_table.py")


def test_configuration_table_says_which_settings_come_from_rank_0():
    from torch_domino import _C
    rows = configuration_rows()
    from_rank_0 = {name for name, who in rows if who.strip() == "rank 0's"}
    assert from_rank_0 == set(_C.wire_variables())
    assert len(rows) == len(_C.known_variables())


def test_megatron_md_names_exactly_the_fields_the_layer_refuses_unless_equal():
    from torch_domino.megatron.config import _MUST_EQUAL
    text = (DOCS / "megatron.md").read_text()
    listed = re.search(r"<!-- must-equal fields -->(.*?)<!-- end of must-equal fields -->", text,
                       re.DOTALL)
    assert listed, "docs/megatron.md lost its must-equal markers"
    documented = re.findall(r"`(\w+)`", listed.group(1))
    assert sorted(documented) == sorted(_MUST_EQUAL), (
        "docs/megatron.md's list of fields that must equal the layer's value differs from "
        "torch_domino/megatron/config.py's _MUST_EQUAL")


def test_readme_names_the_two_commands_that_ci_runs():
    text = README.read_text()
    for command in TWO_COMMANDS:
        assert command in text
    ci = (ROOT / ".ci" / "run").read_text()
    assert "scripts/test.sh" in ci


def test_every_page_exists_and_the_index_links_it():
    index = (DOCS / "README.md").read_text()
    for page in PAGES:
        assert (DOCS / page).is_file(), page
        if page != "README.md":
            assert f"]({page})" in index, f"docs/README.md does not link {page}"


def test_relative_links_resolve():
    problems = [p for doc in doc_files() for p in broken_links(doc.read_text(), doc)]
    assert not problems, "\n".join(problems)


def test_paths_named_in_code_exist():
    problems = [p for doc in doc_files() for p in missing_paths(doc.read_text(), doc)]
    assert not problems, "\n".join(problems)


def test_command_line_flags_are_the_scripts_own():
    problems = [p for doc in doc_files() for p in unknown_flags(doc.read_text(), doc)]
    assert not problems, "\n".join(problems)


def test_the_docs_run_scripts_whose_flags_are_checked():
    seen = {what for doc in doc_files() for language, code in split_markdown(doc.read_text())[1]
            if language == "bash" for what, _, _ in invocations(code)}
    assert {"torch_domino.bench", "bench/overlap/overlap_bench.py",
            "examples/train_gpt.py"} <= seen, seen


# --- each check fails on what it looks for ---------------------------------------------------

def test_the_checks_catch_broken_docs(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("# A page\n\n## Some `code`, here\n")
    (tmp_path / "tool.py").write_text('p.add_argument("--steps", type=int)\n'
                                      'p.add_argument("-o", "--out")\n')
    (tmp_path / "examples").mkdir()
    where = tmp_path / "README.md"

    good = "[p](docs/page.md) [a](docs/page.md#some-code-here) [w](https://x.org/none)\n"
    assert broken_links(good, where, tmp_path) == []
    assert len(broken_links("[p](docs/none.md)\n", where, tmp_path)) == 1
    assert len(broken_links("[p](docs/page.md#no-such-heading)\n", where, tmp_path)) == 1
    assert len(broken_links("[p](#nowhere)\n# Here\n", where, tmp_path)) == 1
    assert broken_links("[p](#here)\n# Here\n", where, tmp_path) == []
    (tmp_path / "outside.md").write_text("# Outside\n")
    outside = broken_links("[p](../outside.md)\n", tmp_path / "docs" / "page.md", tmp_path / "docs")
    assert len(outside) == 1 and "outside the repository" in outside[0]
    assert broken_links("`[p](docs/none.md)`\n```\n[p](none.md)\n```\n", where, tmp_path) == []

    assert missing_paths("`examples/`\n", where, tmp_path) == []
    assert len(missing_paths("run `examples/none.py`\n", where, tmp_path)) == 1
    assert len(missing_paths("```\npython bench/none.py\n```\n", where, tmp_path)) == 1
    assert len(missing_paths("`examples/{a,b}.py`\n", where, tmp_path)) == 2
    assert missing_paths("`examples/*_cuda.md`\n", where, tmp_path) == []
    assert len(missing_paths("`tests/*.md`\n", where, tmp_path)) == 1

    ok = "```bash\npython tool.py --steps 3 --out=x  # --comment\n```\n"
    assert unknown_flags(ok, where, tmp_path) == []
    wrong = "```bash\nsudo /venv/bin/python tool.py --steps 3 \\\n  --stpes 4\n```\n"
    assert [p for p in unknown_flags(wrong, where, tmp_path) if "--stpes" in p]
    torchrun = "```bash\ntorchrun --nproc-per-node 2 tool.py --nope\n```\n"
    assert len(unknown_flags(torchrun, where, tmp_path)) == 1
    assert len(unknown_flags("```bash\npython none.py --x\n```\n", where, tmp_path)) == 1
    assert unknown_flags("```python\npython tool.py --nope\n```\n", where, tmp_path) == []


def test_the_slugs_are_githubs():
    assert github_slug("PyTorch's own test suite") == "pytorchs-own-test-suite"
    assert github_slug("From C++") == "from-c"
    assert github_slug("Example: train_gpt") == "example-train_gpt"
    assert github_slug("Two builds, one host") == "two-builds-one-host"
    assert anchors("# A\n## A\n```\n# not a heading\n```\n") == {"a", "a-1"}
