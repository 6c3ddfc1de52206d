"""The manual's examples run as written, the CLI reference lists every command and option, and
the site builds with warnings as errors.

Shell examples are ```console blocks in docs/**/*.md and README.md. A line starting with `$ `
is a command (a line ending in `\\` continues on the next); the lines after it, up to the next
`$ `, are its expected output, where given: stdout and stderr as a terminal shows them together
(here piped, so tables come as CSV), compared after stripping trailing spaces. A line `...`
matches any lines (none included), and `...` inside a line matches any text within it (a run
id, a time). A last line `[N]` says the command exits N (an example of an error); otherwise it
must exit 0. A command with no expected lines is checked for its exit status only.

Each page's blocks run in order, one shell command after another (a `cd` carries over), in a
fresh temporary folder holding a small study and its store: the study `stimkit init` scaffolds,
run once and copied (its store also holds every catalog set, generated and encoded with GloVe, so the
examples on built-in tests only compute).
"""

from __future__ import annotations

import doctest
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md")) + [REPO / "README.md"]
COMMAND_TIMEOUT = 300


def rel(page: Path) -> str:
    return str(page.relative_to(REPO))


@dataclass
class Example:
    command: str
    expected: list[str] | None          # None: none given (exit status only)
    status: int = 0
    line: int = 0                        # where the command starts in its page


@dataclass
class Block:
    line: int
    examples: list[Example] = field(default_factory=list)
    skip: str | None = None              # why this block cannot run here (its commands are still checked)
    file: str | None = None              # a block with title="PATH" is a file the examples after it use
    text: str = ""


SKIP = re.compile(r"<!--\s*docs-test:\s*skip:?\s*(.*?)\s*-->")


FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)(.*)$")
TITLE = re.compile(r'title="([^"]+)"')


def fenced(text: str, language: str, before: bool = False) -> list[tuple]:
    """(first line number, lines) of every fenced block of `language`, indentation removed; with
    `before`, also the last non-blank line above the fence."""
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang, attrs = m.groups()
        body, j = [], i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j].lstrip())
            j += 1
        title = TITLE.search(attrs)
        if lang == language or language == "file" and title:
            above = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
            extra = title.group(1) if language == "file" else above
            blocks.append((i + 2, body, extra) if before else (i + 2, body))
        i = j + 1
    return blocks


def console_blocks(text: str) -> list[Block]:
    """The page's console blocks and its titled file blocks (```toml title="wl/people.toml"),
    in page order: a file block is written, relative to the page's folder, where it stands."""
    out = [Block(start, file=path, text="\n".join(body) + "\n") for start, body, path in fenced(text, "file", before=True)]
    for start, body, above in fenced(text, "console", before=True):
        skip = SKIP.search(above)
        block, k = Block(start, skip=skip.group(1) or "no reason given" if skip else None), 0
        while k < len(body):
            if not body[k].startswith("$ "):
                if body[k].strip():
                    raise ValueError(f"line {start + k}: output before any `$ ` command")
                k += 1
                continue
            line, command = start + k, body[k][2:]
            while command.endswith("\\") and k + 1 < len(body):
                k += 1
                command += "\n" + body[k]       # the shell reads the continuation
            k += 1
            expected = []
            while k < len(body) and not body[k].startswith("$ "):
                expected.append(body[k].rstrip())
                k += 1
            while expected and not expected[-1]:
                expected.pop()
            status = 0
            if expected and re.fullmatch(r"\[\d+\]", expected[-1]):
                status = int(expected.pop()[1:-1])
            block.examples.append(Example(command, expected or None, status, line))
        out.append(block)
    return sorted(out, key=lambda b: b.line)


def line_matches(pattern: str, line: str) -> bool:
    if "..." not in pattern:
        return pattern == line
    return re.fullmatch(".*".join(re.escape(p) for p in pattern.split("...")), line, re.S) is not None


def output_matches(expected: list[str], got: list[str]) -> bool:
    """Whole-output match: a `...` line takes any run of lines (none included)."""
    memo: dict = {}

    def match(i: int, j: int) -> bool:
        if (i, j) not in memo:
            if i == len(expected):
                memo[i, j] = j == len(got)
            elif expected[i].strip() == "...":
                memo[i, j] = any(match(i + 1, k) for k in range(j, len(got) + 1))
            else:
                memo[i, j] = j < len(got) and line_matches(expected[i], got[j]) and match(i + 1, j + 1)
        return memo[i, j]

    return match(0, 0)


# --- the small study every page's examples run in -------------------------------------------

def stimkit_env(bin_dir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STIMKIT_")}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", PYTHONPATH=str(REPO), COLUMNS="100",
               NO_COLOR="1", TERM="dumb", OMP_WAIT_POLICY="PASSIVE", HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1")
    return env


def shell(command: str, cwd: Path, env: dict, timeout: int = COMMAND_TIMEOUT) -> tuple[int, str, Path]:
    """Run one shell command; its exit status, its merged output and the folder it ended in."""
    where = Path(env["DOCS_TEST_STATE"]) / "cwd"
    script = f"{command}\n__status=$?\npwd > {str(where)!r}\nexit $__status\n"
    proc = subprocess.run(["bash", "-c", script], cwd=cwd, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=timeout)
    ended = Path(where.read_text().strip()) if where.exists() else cwd
    return proc.returncode, proc.stdout, ended


def cpu_seconds(env: dict) -> float:
    """CPU seconds the examples' stimkit commands have used so far (the server's log)."""
    log = Path(env["DOCS_TEST_STATE"]) / "cpu"
    return sum(map(float, log.read_text().split())) if log.exists() else 0.0


@pytest.fixture(scope="session")
def docs_study(tmp_path_factory):
    """A study folder with its store (the study run, every catalog set generated and encoded
    with GloVe), and the environment the examples run in. Built once; each page gets a copy.
    `stimkit` is a shim to a fork server (tests/docs_runner.py): a process per command, without
    Python's and stimkit's imports each time."""
    root = tmp_path_factory.mktemp("docs")
    bin_dir, state = root / "bin", root / "state"
    bin_dir.mkdir()
    state.mkdir()
    runner, sock = REPO / "tests" / "docs_runner.py", root / "stimkit.sock"
    env = stimkit_env(bin_dir) | {"DOCS_TEST_STATE": str(state)}
    server = subprocess.Popen([sys.executable, str(runner), "serve", str(sock)], env=env, cwd=root)
    shim = bin_dir / "stimkit"
    shim.write_text(f"#!/bin/sh\nexec {sys.executable} -S {runner} client {sock} \"$@\"\n")
    shim.chmod(0o755)
    try:
        for _ in range(600):
            if sock.exists() or server.poll() is not None:
                break
            time.sleep(0.05)
        assert sock.exists(), "the docs test's stimkit server did not start"
        study = root / "docs-study"         # the study `stimkit init` scaffolds, as the pages say
        status, out, _ = shell(f"stimkit init {study}", root, env)
        assert status == 0, out
        # The study's run in its folder; every catalog set from outside it (in a study's folder
        # `generate` makes the study's sets alone), into the same store.
        for command, where in (("stimkit run study.toml", study),
                               (f"stimkit --db {study / 'stimkit.duckdb'} generate", root),
                               (f"stimkit --db {study / 'stimkit.duckdb'} encode -e glove-6b-50d --all", root)):
            status, out, _ = shell(command, where, env)
            assert status == 0, f"preparing the docs study: {command}\n{out}"
        yield study, env
    finally:
        server.terminate()
        server.wait(timeout=30)


def check_command_line(command: str, where: str) -> None:
    """A command that cannot run here still names commands and options the app has."""
    import shlex

    from stimkit.cli.reference import root

    for line in re.split(r"&&|\|\||;|\|", command.replace("\\\n", " ")):
        words = shlex.split(line, comments=True)
        while words and re.fullmatch(r"[A-Z_]+=.*", words[0]):
            words = words[1:]
        if not words or words[0] != "stimkit":
            continue
        command_, known = root(), set()
        known |= {o for p in command_.params for o in p.opts + p.secondary_opts}
        for word in words[1:]:
            sub = getattr(command_, "commands", {}).get(word)
            if sub is not None:
                command_ = sub
                known |= {o for p in command_.params for o in p.opts + p.secondary_opts}
            elif word.startswith("-") and word != "-":
                name = word.split("=", 1)[0]
                assert name in known, f"{where}: {' '.join(words[:3])}...: no option {name}"


def page_ids():
    return [rel(p) for p in PAGES if re.search(r"^\s*```console", p.read_text(), re.M)]


@pytest.mark.parametrize("page", page_ids())
def test_console_examples(page, docs_study, tmp_path):
    study, env = docs_study
    text = (REPO / page).read_text()
    blocks = console_blocks(text)
    folder = tmp_path / "docs-study"
    shutil.copytree(study, folder)
    cwd, ran = folder, 0
    for block in blocks:
        if block.file:
            target = folder / block.file
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.text)
            continue
        if block.skip:             # checked by test_skipped_blocks_say_why_and_name_real_options
            continue
        for ex in block.examples:
            started, cpu = time.perf_counter(), cpu_seconds(env)
            status, out, cwd = shell(ex.command, cwd, env)
            print(f"{time.perf_counter() - started:6.1f}s {cpu_seconds(env) - cpu:6.1f}s cpu"
                  f"  {page}:{ex.line}: {ex.command.splitlines()[0]}")
            got = [line.rstrip() for line in out.rstrip("\n").splitlines()]
            where = f"{page}:{ex.line}: $ {ex.command}"
            assert status == ex.status, f"{where}\nexit {status}, expected {ex.status}\n{out}"
            if ex.expected is not None:
                assert output_matches(ex.expected, got), (
                    f"{where}\n--- expected\n" + "\n".join(ex.expected) + "\n--- got\n" + "\n".join(got))
            ran += 1
    assert ran > 0 or all(b.skip or b.file for b in blocks)


def test_skipped_blocks_say_why_and_name_real_options():
    """A block that cannot run offline says why, and its commands and options are the app's."""
    skipped = [(rel(p), b) for p in PAGES for b in console_blocks(p.read_text()) if b.skip]
    for page, block in skipped:
        assert len(block.skip.split()) >= 3, f"{page}:{block.line}: say why this block cannot run"
        for ex in block.examples:
            check_command_line(ex.command, f"{page}:{ex.line}")
    print("\n".join(f"skipped {page}:{b.line}: {b.skip}" for page, b in skipped))
    with pytest.raises(AssertionError, match="no option --no-such"):
        check_command_line("stimkit test weat1 --no-such", "here")


def test_console_parser():
    """The block format as the module docstring says: continuation, ellipsis, exit status."""
    text = textwrap.dedent("""\
        ```console
        $ echo a \\
          b
        a b
        $ true
        $ false
        [1]
        ```
        """)
    (block,) = console_blocks(text)
    assert [(e.command, e.expected, e.status) for e in block.examples] == [
        ("echo a \\\n  b", ["a b"], 0), ("true", None, 0), ("false", None, 1)]
    assert output_matches(["x", "...", "z"], ["x", "y1", "y2", "z"])
    assert output_matches(["x", "...", "z"], ["x", "z"])
    assert not output_matches(["x", "z"], ["x", "y", "z"])
    assert output_matches(["run ... in ...s"], ["run 2026-abc in 5.0s"])
    assert not output_matches(["run ... in ...s"], ["ran 2026 in 5.0s"])


# --- Python examples ------------------------------------------------------------------------

def pycon_pages():
    return [rel(p) for p in PAGES if re.search(r"^\s*```pycon", p.read_text(), re.M)]


@pytest.mark.parametrize("page", pycon_pages())
def test_pycon_examples(page, tmp_path, monkeypatch):
    """Every ```pycon block of a page, in order, as one doctest (a page's blocks share names)."""
    monkeypatch.chdir(tmp_path)
    text = (REPO / page).read_text()
    source = "\n".join("\n".join(body) + "\n" for _, body in fenced(text, "pycon"))
    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    test = parser.get_doctest(source, {}, page, page, 0)
    assert test.examples, f"{page}: no >>> example in its pycon blocks"
    result = runner.run(test)
    assert result.failed == 0, f"{page}: {result.failed} of {result.attempted} examples failed (see the output above)"


def test_every_python_example_is_pycon():
    """A `>>>` example outside a pycon block would go untested."""
    for page in PAGES:
        for lang in ("python", "py", ""):
            for start, body in fenced(page.read_text(), lang):
                assert not any(line.startswith(">>> ") for line in body), \
                    f"{rel(page)}:{start}: a >>> example outside a ```pycon block is not run"


# --- the CLI reference ----------------------------------------------------------------------

def test_cli_reference_lists_every_command_and_option():
    from stimkit.cli.reference import commands, reference

    page = reference()
    walked = list(commands())
    assert len(walked) >= 20
    for path, command in walked:
        heading = f"## `stimkit {' '.join(path)}`"
        assert heading in page, f"the CLI reference has no heading for stimkit {' '.join(path)}"
        section = page.split(heading, 1)[1].split("\n## ", 1)[0]
        for param in command.params:
            for opt in param.opts + getattr(param, "secondary_opts", []):
                name = opt if opt.startswith("-") else opt.upper()
                assert f"`{name}`" in section, f"stimkit {' '.join(path)}: {name} is missing from the CLI reference"
    docs_page = (DOCS / "cli.md").read_text()
    assert "<!-- cli-reference -->" in docs_page, "docs/cli.md must hold the marker the reference is built into"


def test_cli_reference_fails_on_a_missing_option(monkeypatch):
    """The check above can fail: a reference that leaves out one option is caught."""
    from stimkit.cli import reference as ref

    page = ref.reference()
    assert "`--bootstrap`" in page
    shortened = page.replace("`--bootstrap`", "`--b00tstrap`")
    monkeypatch.setattr(ref, "reference", lambda: shortened)
    with pytest.raises(AssertionError, match="--bootstrap is missing"):
        test_cli_reference_lists_every_command_and_option()


# --- the site -------------------------------------------------------------------------------

def test_nav_lists_every_page():
    """mkdocs --strict warns of a page left out of the nav only as info: check it here."""
    import yaml

    nav = yaml.safe_load((REPO / "mkdocs.yml").read_text().replace("!!python/name:", ""))["nav"]

    def files(entry):
        if isinstance(entry, str):
            yield entry
        elif isinstance(entry, dict):
            for v in entry.values():
                yield from files(v)
        elif isinstance(entry, list):
            for v in entry:
                yield from files(v)

    listed = set(files(nav))
    for page in DOCS.rglob("*.md"):
        assert str(page.relative_to(DOCS)) in listed, f"{rel(page)} is not in mkdocs.yml's nav"
    for name in listed:
        assert (DOCS / name).exists(), f"mkdocs.yml's nav names {name}, which docs/ does not have"


def test_readme_is_short_and_its_quickstart_is_the_makefiles():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 150
    quickstart = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    (block,) = [body for _, body in fenced(quickstart, "sh")]
    commands = [line.split("#")[0].strip() for line in block if line.strip()]
    assert commands == ["make run", "make test"]
    targets = re.findall(r"^([\w-]+):", (REPO / "Makefile").read_text(), re.M)
    assert {"run", "test", "docs", "setup"} <= set(targets)


def test_site_builds_strict(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
                          cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "site" / "cli" / "index.html").exists()
    html = (tmp_path / "site" / "cli" / "index.html").read_text()
    assert "stimkit results" in html and "--bootstrap" in html
