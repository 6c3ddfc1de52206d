"""Hostile input, second round (issue 39): the newest features (slots, phrases, imports,
baselines, languages, concurrent writers) probed as a hostile but realistic user would. Each
finding of the issue is a test here: one clear line, the exit code of its error class, nothing
half-written and nothing written outside what the command owns; plus a bounded
property-based fuzz of `_set.toml` (the slots, constraints and phrases of a template set)."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from stimkit import StimkitError
from stimkit.cli import app
from stimkit.stimuli import generate, templates
from stimkit.stimuli.sets import SetSpec

from conftest import snapshot
from test_slots import LINES, SET_TOML, lists_and_sets, people

REPO = Path(__file__).resolve().parents[1]
runner = CliRunner()
FUZZ = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))


def cli(*args, env=None):
    return runner.invoke(app, [str(a) for a in args], env=env)


def one_line(r, code: int, *messages: str) -> str:
    """The result ended in one line on stderr (never an internal error), with exit `code`."""
    lines = r.output.strip().splitlines()
    assert r.exit_code == code, r.output
    assert len(lines) == 1 and lines[0].startswith("error: "), r.output
    assert "internal error" not in r.output, r.output
    for m in messages:
        assert m in r.output, r.output
    return lines[0]


def digest(path: Path):
    if not path.exists():
        return None
    con = duckdb.connect(str(path), read_only=True)
    try:
        return snapshot(con)
    finally:
        con.close()


# ------------------------------------------------------------------------ 1: huge slot products
def three_slots(tmp: Path, n: int, require: str) -> tuple[Path, Path]:
    """Three slots a, b, c of n words each, with one constraint."""
    import itertools
    import string

    def names(prefix):
        return [prefix + "".join(t) for t in itertools.islice(itertools.product(string.ascii_lowercase, repeat=3), n)]

    (tmp / "wl").mkdir(parents=True)
    (tmp / "wl" / "big.toml").write_text("".join(f"[l{s}]\nwords = {json.dumps(names(s))}\n" for s in "abc"))
    folder = tmp / "tp" / "big"
    folder.mkdir(parents=True)
    (folder / "_set.toml").write_text('[slots.a]\nlists = ["la"]\n[slots.b]\nlists = ["lb"]\n[slots.c]\nlists = ["lc"]\n'
                                      f'[[constraints]]\nrequire = {json.dumps(require)}\n')
    (folder / "default.j2").write_text("{{ a }} {{ b }} {{ c }}.\n")
    return tmp / "wl", tmp / "tp"


def test_a_slot_product_of_1e11_is_refused_before_any_work(tmp_path):
    """Finding 1: three slots of 5,000 words with a constraint that keeps almost nothing ran
    for days (23,000 combinations a second); the product's size is now checked first."""
    wl, tp = three_slots(tmp_path, 5000, "a.text == 'nothing'")
    db = tmp_path / "s.duckdb"
    started = time.process_time()  # CPU seconds (bench/bench_hostile.py: wall time, imports included)
    r = cli("--db", db, "generate", "--wordlist-dir", wl, "--template-dir", tp, "-t", "big", "-w", "a=la")
    assert time.process_time() - started < 5
    one_line(r, 1, "125,000,000,000 combinations", "a 5,000 x b 5,000 x c 5,000", "--max-combinations",
             "STIMKIT_MAX_COMBINATIONS")
    assert not db.exists()


def test_the_combination_limit_is_the_users_to_raise(tmp_path):
    wl, tp = three_slots(tmp_path, 30, "true")  # 27,000 combinations
    r = cli("--db", tmp_path / "s.duckdb", "generate", "--wordlist-dir", wl, "--template-dir", tp, "-t", "big", "-w",
            "a=la", "--max-combinations", "1000")
    one_line(r, 1, "27,000 combinations", "over 1,000")
    r = cli("--db", tmp_path / "s.duckdb", "generate", "--wordlist-dir", wl, "--template-dir", tp, "-t", "big", "-w",
            "a=la", "--max-combinations", "27000", "-q")
    assert r.exit_code == 0, r.output
    assert duckdb.connect(str(tmp_path / "s.duckdb")).execute("SELECT n_stimuli FROM stimulus_sets").fetchall() \
        == [(27_000,)]
    r = cli("--db", tmp_path / "s.duckdb", "generate", "--wordlist-dir", wl, "--template-dir", tp, "-t", "big", "-w",
            "a=la", "--max-combinations", "-1")
    one_line(r, 2, "--max-combinations must be > 0")


def test_a_constraint_is_checked_once_its_slots_are_filled(tmp_path):
    """Constraint filtering is bounded: a constraint over one slot is checked once per word of
    that slot, so a raised limit over 1.25e11 combinations still ends in seconds, with the
    empty set refused by name."""
    wl, tp = three_slots(tmp_path, 5000, "a.text == 'nothing'")
    started = time.process_time()  # CPU seconds: what it costs, however loaded the machine is
    r = cli("--db", tmp_path / "s.duckdb", "generate", "--wordlist-dir", wl, "--template-dir", tp, "-t", "big", "-w",
            "a=la", env={"STIMKIT_MAX_COMBINATIONS": str(10 ** 12)})
    assert time.process_time() - started < 10
    one_line(r, 1, "keep no combination", "constraint 1", "a.text == 'nothing'")
    assert not (tmp_path / "s.duckdb").exists()


def test_pruned_product_is_the_full_product_filtered(tmp_path):
    """Checking a constraint early keeps exactly what checking it on every combination keeps, in
    the same order (brute force over the people set's product)."""
    import itertools

    wl, tpl = people(tmp_path)
    lists, tsets = lists_and_sets(wl, tpl)
    spec = SetSpec.parse("descriptor=*@people")
    plan = generate.SlotPlan(spec, lists, tsets["people"])
    got = [(tuple(w), tuple(files)) for _, _, w, _, files in plan.combinations(plan.limits, False)]
    expected = []
    for d, n in itertools.product(*(plan.fill.fillers[s] for s in plan.names)):
        dg, ng = d.word.gender, n.word.gender
        if dg and ng != dg:
            continue
        files = [f for f in plan.files if f != "plural" or n.word.text != "person"]
        expected.append(((d.word.text, n.word.text), tuple(files)))
    assert got == expected and len(got) == 19


# ------------------------------------------------------------------------ 2: an empty set
def test_a_constraint_that_keeps_nothing_is_an_error_naming_it(tmp_path):
    """Finding 2: a typo (noun.kind for noun.gender) kept no combination, stored two sets of 0
    stimuli and exited 0."""
    typo = SET_TOML.replace("noun.gender == descriptor.gender", "noun.kind == 'female'").replace(
        "not descriptor.gender or ", "")
    wl, tpl = people(tmp_path, typo)
    db = tmp_path / "s.duckdb"
    r = cli("--db", db, "generate", "--wordlist-dir", wl, "--template-dir", tpl, "-t", "people", "-w",
            "descriptor=young", "-w", "descriptor=old")
    one_line(r, 1, "set 'descriptor=young@people'", "keep no combination", "constraint 1", "noun.kind == 'female'")
    assert digest(db) is None or not duckdb.connect(str(db)).execute("SELECT count(*) FROM stimulus_sets").fetchone()[0]


# ------------------------------------------------------------------------ 3: forged markers
FORGE = {
    "phrase-toml-escape": ({"_set.toml": SET_TOML.replace("[[constraints]]", '[phrases]\nnp = "\\ue002fake\\ue003"\n'
                                                                               "[[constraints]]", 1)},
                           "U+E002"),
    "phrase-raw-char": ({"_set.toml": SET_TOML + '[phrases]\nnp = "{{ descriptor }} \ue002fake\ue003"\n'}, "U+E002"),
    "phrase-jinja-escape": ({"_set.toml": SET_TOML + "[phrases]\nnp = \"{{ '\\\\ue002fake\\\\ue003' }}\"\n"},
                            "string literal"),
    "template-raw-char": ({"default.j2": "I'm {{ descriptor }} \ue002fake\ue003 {{ noun }}.\n"}, "default.j2:1: holds U+E002"),
    "template-jinja-escape": ({"default.j2": "I'm {{ descriptor }} {{ '\\ue002fake\\ue003' }} {{ noun }}.\n"},
                              "string literal"),
    "constraint-escape": ({"_set.toml": SET_TOML + '[[constraints]]\nrequire = "noun != \'\\\\ue002\'"\n'}, "U+E002"),
    "computed-for-absent-slot": ({"_set.toml": SET_TOML.replace('lists = ["nouns"]', 'lists = ["nouns"]\noptional = true'),
                                  "default.j2": "I'm {{ descriptor }} {% if not noun %}{{ '%c'|format(57346) }}fake"
                                                "{{ '%c'|format(57347) }}{% else %}{{ noun }}{% endif %}.\n"},
                                 "the marker of an absent slot"),
}


@pytest.mark.parametrize("case", FORGE, ids=list(FORGE))
def test_input_cannot_forge_the_span_markers(tmp_path, case):
    """Finding 3: a [phrases] entry holding U+E002 ... U+E003 exited 0, and stimulus_slots
    recorded the noun's span on the text "fake", with no noun in the sentence."""
    files, message = FORGE[case]
    set_toml = files.get("_set.toml", SET_TOML)
    lines = {**LINES, **{k: v for k, v in files.items() if k.endswith(".j2")}}
    if "[phrases]" in set_toml:
        lines = {**lines, "default.j2": "I'm {{ np }} {{ descriptor }} {{ noun }}.\n"}
    wl, tpl = people(tmp_path, set_toml, lines)
    db = tmp_path / "s.duckdb"
    r = cli("--db", db, "generate", "--wordlist-dir", wl, "--template-dir", tpl, "-t", "people", "-w", "descriptor=young")
    one_line(r, 1, message)
    assert not db.exists() or not duckdb.connect(str(db)).execute("SELECT count(*) FROM stimuli").fetchone()[0]


def test_a_set_named_by_its_second_slot_spans_that_slot(tmp_path):
    """Found on the way: a set named by a slot not declared first (noun=nouns@people) took the
    span of the first declared slot (the descriptor) for its word."""
    wl, tpl = people(tmp_path)
    lists, tsets = lists_and_sets(wl, tpl)
    rows, slotted = generate.render(SetSpec.parse("noun=nouns@people"), lists, tsets).materialize()
    for text, start, end, word in zip(rows["stimulus"], rows["span_start"], rows["span_end"], rows["word"]):
        assert text[start:end] in (word, {"woman": "women", "man": "men", "person": "people"}[word]), text
    first = generate.render(SetSpec.parse("descriptor=young@people"), lists, tsets).version
    second = generate.render(SetSpec.parse("noun=nouns@people"), lists, tsets).version
    assert first != second


# ------------------------------------------------------------------------ 4: the sandbox's memory
GROWTH = {
    "ljust": "{{ 'x'.ljust(1200000000) }}",
    "rjust": "{{ 'x'.rjust(1200000000) }}",
    "center-method": "{{ 'x'.center(1200000000) }}",
    "zfill": "{{ 'x'.zfill(1200000000) }}",
    "expandtabs": "{{ ('\t' * 100).expandtabs(100000000) }}",
    "center-filter": "{{ 'x'|center(1200000000) }}",
    "indent-filter": "{{ 'x'|indent(1200000000, true) }}",
    "printf-width": "{{ '%1200000000s' % 'x' }}",
    "printf-star": "{{ '%*s' % (1200000000, 'x') }}",
    "format-width": "{{ '{:>1200000000}'.format('x') }}",
    "format-nested-width": "{{ '{:>{w}}'.format('x', w=1200000000) }}",
    "format-filter": "{{ '%1200000000s'|format('x') }}",
    "join-filter": "{% set s = 'x' * 10000 %}{{ ([s] * 10000)|join }}",
    "join-method": "{% set s = 'x' * 10000 %}{{ ''.join([s] * 10000) }}",
    "replace-method": "{% set s = 'x' * 10000 %}{{ s.replace('x', s) }}",
    "replace-filter": "{{ ('x' * 10000)|replace('x', 'y' * 10000) }}",
    "translate": "{% set s = 'x' * 10000 %}{{ s.translate({120: s}) }}",
    "list-output": "{% set s = 'x' * 10000 %}{{ [[s] * 10000] * 10000 }}",
    "doubling-tilde": "{% set ns = namespace(x='x' * 10000) %}{% for i in range(40) %}{% set ns.x = ns.x ~ ns.x %}"
                      "{% endfor %}",
    "doubling-plus": "{% set ns = namespace(x='x' * 10000) %}{% for i in range(40) %}{% set ns.x = ns.x + ns.x %}"
                     "{% endfor %}",
    "doubling-block": "{% set ns = namespace(x='x' * 10000) %}{% for i in range(40) %}{% set ns.x %}{{ ns.x }}"
                      "{{ ns.x }}{% endset %}{% endfor %}",
    "many-copies": "{% set s = 'x' * 10000 %}{% set ns = namespace(l=[]) %}{% for i in range(100000) %}"
                   "{% set ns.l = ns.l + [s.upper()] %}{% endfor %}",
    "macro-output": "{% macro m() %}{% for i in range(10000) %}{{ 'x' * 10000 }}{% endfor %}{% endmacro %}{{ m() }}",
    "batch-fill": "{{ ([1]|batch(1000000000, 'x')|list)[0]|length }}",
    "lipsum": "{{ lipsum(1000000000) }}",
    "list-append": "{% set l = [1] %}{% for i in range(30) %}{{ l.extend(l) }}{% endfor %}",
    "number-doubling": "{% set ns = namespace(x=2) %}{% for i in range(40) %}{% set ns.x = ns.x * ns.x %}{% endfor %}",
    "number-power": "{{ (10 ** 64) ** 64 ** 64 }}",
}


@pytest.mark.parametrize("case", GROWTH, ids=list(GROWTH))
def test_every_string_growing_operation_is_bounded(tmp_path, case):
    """Finding 4: `{{ 'x'.ljust(1200000000) }}` ended in a clean error only after 32 s at
    4.9 GB: the sandbox bounded `*` and `**` only. Each case is refused at once, one line
    naming the template line, having allocated under 100 MB (tracemalloc's peak)."""
    folder = tmp_path / "own"
    folder.mkdir()
    (folder / "default.j2").write_text("{{ word }} " + GROWTH[case] + "\n")
    tset = templates.TemplateSet("own", tmp_path)
    from stimkit.stimuli import wordlists

    import tracemalloc

    word = wordlists._resolve_word("apple", {}, {}, "x")
    line = tset.templates("default")[0]
    tracemalloc.start()
    try:
        started = time.perf_counter()
        with pytest.raises(StimkitError) as e:
            line.render(word)
        seconds, (_, peak) = time.perf_counter() - started, tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert str(e.value).startswith("own/default:1: ") and "\n" not in str(e.value)
    assert "MemoryError" not in str(e.value)  # a bound, not the allocator giving up
    assert peak < 100 * 2 ** 20 and seconds < 5, (peak, seconds)  # before: up to 4.9 GB


def test_bounded_templates_still_render():
    """The bounds leave a template all it needs: widths, joins and formats of sentence size."""
    from stimkit.stimuli import sandbox

    env = templates.make_environment([REPO / "templates"])
    sandbox.begin()
    out = "".join(env.from_string("{{ 'a'.ljust(5, '.') }}|{{ ['x', 'y']|join('-') }}|{{ '%3d' % 7 }}|"
                                  "{{ '{:>4}'.format('b') }}|{{ 'ab' ~ 'cd' }}|{{ 'q'|center(5) }}|"
                                  "{{ ('x' * 10)|replace('x', 'yy') }}|{{ 2 ** 10 }}").generate({}))
    assert out == "a....|x-y|  7|   b|abcd|  q  |yyyyyyyyyyyyyyyyyyyy|1024"
    # the budget of characters built is one render's, whoever renders: 3,000 renders of 10,000
    # characters (30 million in all, over one render's 20 million) all go through
    line, expression = env.from_string("{{ 'x' * 10000 }}"), env.compile_expression("('y' * 10000) ~ 'z'")
    assert all(len("".join(line.generate({}))) == 10_000 and len(expression()) == 10_001 for _ in range(3000))


def test_the_ljust_line_is_refused_fast_at_small_peak_memory(tmp_path):
    """The issue's own line through `generate`, in a process of its own: refused at once, its
    peak memory (max RSS, imports included) well under 1 GB (it was 4.9 GB)."""
    (tmp_path / "wl").mkdir()
    (tmp_path / "wl" / "a.toml").write_text('[mine]\nwords = ["apple"]\n')
    (tmp_path / "tp" / "evil").mkdir(parents=True)
    (tmp_path / "tp" / "evil" / "default.j2").write_text("{{ word }} {{ 'x'.ljust(1200000000) }}\n")
    (tmp_path / "tp" / "evil" / "_set.toml").write_text('grammar = "may2019"\n')  # no inflect to import: 1 s of 5
    peak, seconds, r = measure([sys.executable, "-m", "stimkit", "--db", str(tmp_path / "s.duckdb"), "generate",
                                "--wordlist-dir", str(tmp_path / "wl"), "--template-dir", str(tmp_path / "tp"), "-t",
                                "evil"])
    assert r.returncode == 1 and "str.ljust would be 1,200,000,000 characters" in r.stderr, r.stderr
    assert peak < 1024 ** 3 / 2, (seconds, peak)
    assert seconds < 15, seconds  # bench/bench_hostile.py shows it under 5 s on a machine not shared six ways


# A small Python forks the command and reports what os.wait4 says of that child alone. Not
# forked from pytest itself: a forked child starts with its parent's high-water RSS (dup_mm copies
# it, and execve keeps it as the process's maxrss), so a worker at 800 MB would report 800 MB.
_FORK_AND_MEASURE = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
sys.stderr.write(f"\\n{usage.ru_maxrss}\\n")
sys.exit(os.waitstatus_to_exitcode(status))
"""


def measure(cmd: list[str]):
    """(peak RSS in bytes, seconds, the completed process) of a command run on its own: the
    resource usage os.wait4 reports for that child alone, forked from a small process."""
    started = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", _FORK_AND_MEASURE, *cmd], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(REPO), "OMP_WAIT_POLICY": "PASSIVE"})
    seconds = time.perf_counter() - started
    stderr, _, peak = r.stderr.rstrip("\n").rpartition("\n")
    return int(peak) * 1024, seconds, subprocess.CompletedProcess(cmd, r.returncode, r.stdout, stderr)


# ------------------------------------------------------------------------ 6: HolisticBias shapes
HB = REPO / "tests" / "fixtures" / "holistic-bias"


def bucket(value):
    def edit(d):
        d["ability"]["auditory"] = value
        return d
    return edit


def entry(value):
    def edit(d):
        d["ability"]["auditory"][1] = value
        return d
    return edit


def noun(value):
    def edit(d):
        d["female"][0] = value
        return d
    return edit


def first_flags(value):
    def edit(d):
        d[next(iter(d))] = value
        return d
    return edit


HB_SHAPES = {
    "templates-a-list": ("sentence_templates.json", list, "sentence_templates.json: the file: input should be a valid "
                                                          "dictionary (found a list)"),
    "bucket-a-number": ("descriptors.json", bucket(5), 'descriptors.json: item ["ability"]["auditory"]: input should '
                                                       "be a valid list (found 5)"),
    "bucket-a-string": ("descriptors.json", bucket("Deaf"), 'item ["ability"]["auditory"]: input should be a valid '
                                                            'list (found "Deaf")'),
    "axis-a-list": ("descriptors.json", lambda d: {**d, "ability": ["Deaf"]}, 'item ["ability"]: input should be a '
                                                                              "valid dictionary"),
    "descriptor-a-number": ("descriptors.json", entry(7), 'item ["ability"]["auditory"][1]: input should be a valid '
                                                          "string (found 7)"),
    "descriptor-unknown-key": ("descriptors.json", entry({"descriptor": "x", "gendre": "female"}),
                               'item ["ability"]["auditory"][1]["gendre"]: extra inputs are not permitted'),
    "descriptor-gender-a-number": ("descriptors.json", entry({"descriptor": "x", "gender": 1}),
                                   'item ["ability"]["auditory"][1]["gender"]: input should be a valid string'),
    "noun-not-a-pair": ("nouns.json", noun(["woman"]), 'nouns.json: item ["female"][0][1]: field required'),
    "noun-a-string": ("nouns.json", noun("woman"), 'nouns.json: item ["female"][0]: input should be a valid'),
    "flag-a-string": ("sentence_templates.json", first_flags({"must_be_noun": "yes"}), '["must_be_noun"]: input should '
                                                                                      "be a valid boolean"),
    "flags-a-list": ("sentence_templates.json", first_flags([]), "input should be a valid dictionary"),
    "phrases-a-list": ("standalone_noun_phrases.json", lambda d: [1, 2], "standalone_noun_phrases.json: the file"),
    "phrase-a-number": ("standalone_noun_phrases.json", lambda d: {**d, "ability": [3]},
                        'item ["ability"][0]: input should be a valid string (found 3)'),
}


@pytest.mark.parametrize("case", HB_SHAPES, ids=list(HB_SHAPES))
def test_holisticbias_files_of_the_wrong_shape_name_file_and_item(tmp_path, case):
    """Finding 6: a JSON list for sentence_templates.json, or a bucket that is a number, was
    `internal error: AttributeError/TypeError` with no file named; a bucket that is a string
    ("Deaf") became the descriptors "D", "e", "a", "f" and the import exited 0."""
    import shutil

    name, edit, message = HB_SHAPES[case]
    src = tmp_path / "hb"
    shutil.copytree(HB, src)
    (src / name).write_text(json.dumps(edit(json.loads((src / name).read_text()))))
    r = cli("--db", tmp_path / "s.duckdb", "import", "holisticbias", src, "-o", tmp_path / "out")
    one_line(r, 1, str(src / name), message)
    assert not (tmp_path / "out").exists() and not (tmp_path / "s.duckdb").exists()


# ------------------------------------------------------------------------ 7: writes that escape
def test_an_import_does_not_write_through_a_link_out_of_its_folder(tmp_path):
    """Finding 7: `import holisticbias -o OUT`, OUT/wordlists a link to another folder,
    overwrote holisticbias.toml in that folder without --force."""
    (tmp_path / "elsewhere").mkdir()
    mine = tmp_path / "elsewhere" / "holisticbias.toml"
    mine.write_text("# mine\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "wordlists").symlink_to(tmp_path / "elsewhere")
    r = cli("import", "holisticbias", HB, "-o", out, "--no-generate")
    one_line(r, 2, f"{out / 'wordlists' / 'holisticbias.toml'}: leads outside {out}", "--force")
    assert mine.read_text() == "# mine\n" and sorted(p.name for p in out.iterdir()) == ["wordlists"]
    # --force: the user says so
    r = cli("import", "holisticbias", HB, "-o", out, "--no-generate", "--force")
    assert r.exit_code == 0, r.output
    assert mine.read_text().startswith("# HolisticBias v1.1")


# ------------------------------------------------------------------------ 11: the minor ones
def test_import_max_per_set_must_be_positive(tmp_path):
    for bad in ("-1", "0"):
        r = cli("--db", tmp_path / "s.duckdb", "import", "holisticbias", HB, "-o", tmp_path / "out", "--max-per-set", bad)
        one_line(r, 2, f"--max-per-set must be > 0, not {bad}")
    assert not (tmp_path / "out").exists() and not (tmp_path / "s.duckdb").exists()


def test_an_overlong_weathub_example_is_refused_like_a_generated_sentence(tmp_path):
    """Finding 11: a 200,000-character WEATHub example imported silently, though `generate`
    caps a sentence at 2,000 characters."""
    import shutil

    src = tmp_path / "data"
    shutil.copytree(REPO / "tests" / "fixtures" / "weathub" / "data" / "ku_gt", src / "ku_gt")
    path = src / "ku_gt" / "weat1.json"
    data = json.loads(path.read_text())
    data["targ1"]["examples"][2] = "x" * 200_000
    path.write_text(json.dumps(data))
    db = tmp_path / "s.duckdb"
    r = cli("--db", db, "import", "weathub", src)
    one_line(r, 1, f"{path}: 'targ1' example 3 is 200,000 characters, over 2,000", "STIMKIT_MAX_SENTENCE_CHARS")
    assert not db.exists()
    r = cli("--db", db, "import", "weathub", src, "-q", env={"STIMKIT_MAX_SENTENCE_CHARS": "300000"})
    assert r.exit_code == 0, r.output


def test_db_on_a_dangling_link_makes_the_store_where_it_leads(tmp_path):
    """Finding 11: --db on a dangling symlink printed the sets as new, then said "another
    command created this store", exited 3 and left NAME.PID.duckdb behind."""
    (tmp_path / "real").mkdir()
    link = tmp_path / "link.duckdb"
    link.symlink_to(tmp_path / "real" / "store.duckdb")
    r = cli("--db", link, "generate", "-w", "flowers", "-t", "word")
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.duckdb", "real"]
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == ["store.duckdb"]
    assert duckdb.connect(str(link), read_only=True).execute("SELECT name FROM current_sets").fetchall() \
        == [("flowers@word",)]
    # a link into a folder that is not there: one line, nothing left anywhere
    bad = tmp_path / "bad.duckdb"
    bad.symlink_to(tmp_path / "nowhere" / "x.duckdb")
    r = cli("--db", bad, "generate", "-w", "flowers", "-t", "word")
    assert r.exit_code == 3 and "no folder" in r.output, r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.duckdb", "link.duckdb", "real"]


# ------------------------------------------------------------------------ 5: baselines of every kind
@pytest.fixture
def ages(tmp_path):
    """The README's `ages` test: descriptor=young@people vs descriptor=old@people (stored)."""
    wl, tpl = people(tmp_path)
    db = tmp_path / "s.duckdb"
    r = cli("--db", db, "test", "--name", "ages", "--x", "descriptor=young@people", "--y", "descriptor=old@people",
            "--a", "pleasant@may2019", "--b", "unpleasant@may2019", "--balance", "drop-words", "-e", "glove-6b-50d",
            "--wordlist-dir", wl, "--template-dir", tpl, "--budget", "200")
    assert r.exit_code == 0, r.output
    return db, wl, tpl


def drawn(db: Path, wl: Path, tpl: Path, context: str | None = None, k: int = 3, encoder: str = "glove-6b-50d"):
    """The planned baseline of `ages` (its draws rendered), through the library."""
    import stimkit
    from stimkit.catalog import definitions as catalog
    from stimkit.run import plan as run_plan
    from stimkit.run.baseline import BaselineOptions, plan as plan_baselines
    from stimkit.run.options import Options

    with stimkit.open(db, wordlist_dir=wl, template_dir=tpl) as s:
        chosen = catalog.select(s.con, ["ages"])
        if context:
            from dataclasses import replace
            chosen = [replace(t, context="c-word", cword_slot=context.partition(":")[2] or None) for t in chosen]
        p = run_plan.make(s.con, chosen, [encoder], Options(budget=200), generate_missing=s._generate_missing)
        assert not p.refused, p.refused
        (pb,), failed = plan_baselines(s.con, p, BaselineOptions(sets=k), s._baseline_inputs())
        assert not failed, failed
        slots = dict(((v, o, sl), w) for v, o, sl, w in s.con.execute(
            "SELECT set_version, ordinal, slot, word FROM stimulus_slots").fetchall())
        return pb, slots


def test_a_multi_slot_test_gets_its_baseline(ages):
    """Finding 5: `baseline` on the README's `ages` failed with `people/default:1: 'descriptor'
    is undefined`: the drawn words went through the one-slot renderer."""
    db, wl, tpl = ages
    r = cli("--db", db, "baseline", "ages", "-e", "glove-6b-50d", "--sets", "5", "--wordlist-dir", wl,
            "--template-dir", tpl, "--format", "csv")
    assert r.exit_code == 0, r.output
    assert "ages,glove-6b-50d," in r.output and ",5,new," in r.output
    # each drawn word stands in the descriptor's place of its target's own sentence, the noun kept
    pb, slots = drawn(db, wl, tpl)
    x = pb.planned.sets["x"]
    stimuli = pb.draws.stimuli
    for row in range(x.height):
        noun = slots[(x["set_version"][row], x["ordinal"][row], "noun")]
        for d in range(3):
            at = int(pb.draws.index["x"][row, d])
            text, start, end = stimuli["stimulus"][at], stimuli["span_start"][at], stimuli["span_end"][at]
            word = pb.draws.words["x"][d][list(dict.fromkeys(x["word"].to_list())).index(x["word"][row])]
            assert text[start:end] == word, (text, word)
            assert noun in text or {"woman": "women", "man": "men", "person": "people"}[noun] in text, (text, noun)


def test_a_c_word_slot_baseline_reads_that_slots_span(ages):
    """c-word:noun reads the noun's span of each drawn sentence, and is a baseline of its own
    (not the descriptor's c-word, stored under the same id before)."""
    db, wl, tpl = ages
    pb, slots = drawn(db, wl, tpl, "c-word:noun", encoder="minilm")
    x, stimuli = pb.planned.sets["x"], pb.draws.stimuli
    for row in range(x.height):
        noun = slots[(x["set_version"][row], x["ordinal"][row], "noun")]
        at = int(pb.draws.index["x"][row, 0])
        span = stimuli["stimulus"][at][stimuli["span_start"][at]:stimuli["span_end"][at]]
        assert span in (noun, {"woman": "women", "man": "men", "person": "people"}[noun])
    own, _ = drawn(db, wl, tpl, "c-word", encoder="minilm")
    assert own.baseline_id != pb.baseline_id


WEATHUB = REPO / "tests" / "fixtures" / "weathub"


@pytest.fixture(scope="module")
def german(tmp_path_factory):
    """A store with WEATHub's de_human tests (German words, imported: no templates)."""
    db = tmp_path_factory.mktemp("de") / "s.duckdb"
    r = cli("--db", db, "import", "weathub", WEATHUB, "--only", "de_human", "-q")
    assert r.exit_code == 0, r.output
    return db


def test_an_imported_word_test_in_german_gets_a_german_baseline(german):
    """Findings 5 and 9: a baseline of an imported (template-less) test was refused, and the
    CLI passed --language en over the test's own: a German test's baseline drew English words.
    Each drawn word now matches its German target on German Zipf (wordfreq, independently)."""
    from wordfreq import zipf_frequency

    r = cli("--db", german, "baseline", "weathub:de_human:weat7", "-e", "use-m3", "--sets", "3", "--format", "csv")
    assert r.exit_code == 0, r.output
    con = duckdb.connect(str(german), read_only=True)
    (language, vocabulary), = con.execute("SELECT language, vocabulary FROM baselines").fetchall()
    assert language == "de" and vocabulary.endswith(" de")
    targets = [w for (w,) in con.execute("SELECT word FROM current_stimuli WHERE set_name = "
                                         "'weathub:de_human:weat7/targ1' ORDER BY ordinal").fetchall()]
    for (words,) in con.execute("SELECT x_words FROM baseline_draws").fetchall():
        assert len(words) == len(targets)
        for target, w in zip(targets, words):
            assert abs(zipf_frequency(w, "de") - zipf_frequency(target, "de")) <= 0.25 + 1e-9, (target, w)
    assert sum(zipf_frequency(w, "de") > zipf_frequency(w, "en") for (ws,) in
               con.execute("SELECT x_words FROM baseline_draws").fetchall() for w in ws) > 0.6 * 3 * len(targets)


def test_sets_diagnose_reads_each_sets_own_language(german):
    """Finding 9: `sets --diagnose` passed --language en: a German set showed Zipf 0.80, not 2.51."""
    from wordfreq import zipf_frequency

    import polars as pl

    r = cli("--db", german, "sets", "de_human:weat7/targ1", "--diagnose", "--format", "csv")
    assert r.exit_code == 0, r.output
    got = pl.read_csv(r.stdout.split("\n\n")[0].encode() if "\n\n" in r.stdout else r.stdout.encode())
    words = [w for (w,) in duckdb.connect(str(german), read_only=True).execute(
        "SELECT word FROM current_stimuli WHERE set_name = 'weathub:de_human:weat7/targ1'").fetchall()]
    german_zipf = sum(zipf_frequency(w, "de") for w in words) / len(words)
    english_zipf = sum(zipf_frequency(w, "en") for w in words) / len(words)
    assert got["zipf_mean"][0] == pytest.approx(german_zipf, abs=1e-9) and abs(german_zipf - english_zipf) > 0.3
    r = cli("--db", german, "sets", "de_human:weat7/targ1", "--diagnose", "--language", "en", "--format", "csv")
    got = pl.read_csv(r.stdout.split("\n\n")[0].encode() if "\n\n" in r.stdout else r.stdout.encode())
    assert got["zipf_mean"][0] == pytest.approx(english_zipf, abs=1e-9)  # the user said so


def test_a_cross_lingual_test_gets_its_baseline(german):
    r = cli("--db", german, "test", "--name", "xl", "--x", "weathub:de_human:weat7/targ1", "--y",
            "weathub:de_human:weat7/targ2", "--a", "pleasant@word", "--b", "unpleasant@word", "--cross-lingual",
            "-e", "use-m3", "--baseline", "2", "--budget", "200")
    assert r.exit_code == 0, r.output
    assert duckdb.connect(str(german), read_only=True).execute(
        "SELECT language, k FROM baselines WHERE test = 'xl'").fetchall() == [("de", 2)]


# ------------------------------------------------------------------------ 8: concurrent writers
def run_twice_at_once(db: Path) -> list[subprocess.CompletedProcess]:
    cmd = [sys.executable, "-m", "stimkit", "--db", str(db), "test", "weat6", "-e", "glove-6b-50d", "--budget", "500"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_WAIT_POLICY": "PASSIVE"}
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for _ in "ab"]
    return [subprocess.CompletedProcess(cmd, p.wait(), *p.communicate()) for p in procs]


@pytest.mark.parametrize("fresh", [False, True], ids=["existing-store", "new-store"])
def test_two_identical_runs_at_once_both_complete(tmp_path, fresh):
    """Finding 8: two `stimkit test weat6 -e glove-6b-50d` at once: the second waited, then
    failed on DuckDB's duplicate key (both had encoded the same words with the file free).
    Now both exit 0 and each run holds its one result per hypothesis; on a new path the
    second waits for the first to create the store, then uses it."""
    db = tmp_path / "s.duckdb"
    if not fresh:
        r = cli("--db", db, "generate", "-q", "-w", "flowers", "-t", "word")  # a store, without weat6's vectors
        assert r.exit_code == 0, r.output
    done = run_twice_at_once(db)
    assert [p.returncode for p in done] == [0, 0], [p.stderr for p in done]
    con = duckdb.connect(str(db), read_only=True)
    per_run = con.execute("SELECT run_id, test, metric, encoder, count(*) FROM results GROUP BY ALL ORDER BY 1").fetchall()
    assert len(per_run) == 2 and all(row[1:] == ("weat6", "weat", "glove-6b-50d", 1) for row in per_run)
    d = {round(x, 12) for (x,) in con.execute("SELECT effect_size FROM results").fetchall()}
    assert len(d) == 1  # the same inputs, the same number
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.duckdb"]


# ------------------------------------------------------------------------ fuzz: _set.toml
def mostly(good, bad):
    """`good` nine times in ten, else `bad`: a fuzz that mostly renders, and so checks spans."""
    return st.sampled_from([True] * 9 + [False]).flatmap(lambda ok: good if ok else bad)


GOOD = "{good}"   # the people set's own slots, as they are
SLOT_NAMES = mostly(st.just(GOOD), st.sampled_from(["x", "loop", "1bad"]))
SLOT_LISTS = st.sampled_from([["young", "old"], ["young"], ["nouns"], [], ["nope"], "young", 5])
REQUIRE = mostly(st.sampled_from(["not descriptor.gender or noun.gender == descriptor.gender", "noun.text != 'person'",
                                  "descriptor", "noun", "true", "noun|length > 3", "descriptor.text != 'old'"]),
                 st.sampled_from(["noun.kind == 'female'", "1/0", "x.text", "'\\ue002' != noun", "'x'.ljust(10**9)",
                                  "loop", "descriptor and", "(noun"]))
PHRASE = mostly(st.sampled_from(["{{ descriptor|a }} {{ noun }}", "{{ descriptor }} {{ noun.plural }}", "{{ noun }}",
                                 "{% if noun %}{{ noun }}{% endif %} {{ descriptor }}", "{{ descriptor ~ noun }}",
                                 "{% for i in range(2) %}{{ noun }}{% endfor %}", "{{ descriptor|upper }} {{ noun }}"]),
                st.sampled_from(["\ue002fake\ue003 {{ noun }}", "{{ '\\ue003' }} {{ noun }}", "{{ 'x'.ljust(10**9) }}",
                                 "{{ '%c'|format(57346) }}{{ noun }}", "{{ noun", "{{ np }}",
                                 "{% include 'people/default.j2' %}", "{% for i in range(99) %}{{ noun }}{% endfor %}"]))
FUZZ_LINES = ["I'm {{ np }}.", "I'm {{ descriptor|a }} {{ noun }}.", "{{ noun }} {{ descriptor }}",
         "{{ np }} and {{ descriptor }} {{ noun }}", "word-less {# word-less #}", "{{ x }}", "I'm {{ np }}."]
LINE, NO_NP = st.sampled_from(FUZZ_LINES), st.sampled_from([t for t in FUZZ_LINES if "np" not in t])
PLURAL = {"woman": "women", "man": "men", "person": "people"}


def toml_value(v) -> str:
    return json.dumps(v, ensure_ascii=False)


@st.composite
def set_files(draw):
    """A `_set.toml` (slots, constraints, phrases: names, types and expressions good and bad,
    the good ones more often) and a template line."""
    out = []
    for name in draw(st.lists(SLOT_NAMES, min_size=2, max_size=3)):
        if name == GOOD:
            name = draw(st.sampled_from(["descriptor", "noun"]))
            lists = ["young", "old"] if name == "descriptor" else ["nouns"]
        else:
            lists = draw(SLOT_LISTS)
        if f"[slots.{name}]" in "".join(out):
            continue
        out.append(f"[slots.{name}]\nlists = {toml_value(lists)}\n")
        optional = draw(mostly(st.sampled_from([None, True, False]), st.just("yes")))
        if optional is not None:
            out.append(f"optional = {toml_value(optional)}\n")
    for require in draw(st.lists(REQUIRE, max_size=2)):
        out.append(f"[[constraints]]\nrequire = {toml_value(require)}\n")
        files = draw(mostly(st.sampled_from([None, ["default"]]), st.sampled_from([["nope"], "default"])))
        if files is not None:
            out.append(f"files = {toml_value(files)}\n")
    phrases = draw(st.dictionaries(mostly(st.just("np"), st.sampled_from(["descriptor", "bad name"])), PHRASE,
                                   max_size=1))
    if phrases:
        out.append("[phrases]\n" + "".join(f"{toml_value(k)} = {toml_value(v)}\n" for k, v in phrases.items()))
    return "".join(out), draw(LINE if phrases.get("np") else NO_NP)


@FUZZ
@given(set_files())
@example((SET_TOML[:SET_TOML.rindex("[[constraints]]")] + '[phrases]\nnp = "\\ue002fake\\ue003 {{ noun }}"\n',
          "I'm {{ descriptor }} {{ np }}."))  # the finding 3
def test_fuzz_set_toml(tmp_path_factory, files):
    """Any `_set.toml`: a set whose every span is its slot's word, within the limits, no marker
    left in a sentence; or one StimkitError of one line. Never anything else (a forged marker
    pair, "\\ue002fake\\ue003", made a span that is no word)."""
    set_toml, line = files
    folder = tmp_path_factory.mktemp("fs")
    wl, tpl = people(folder, set_toml, {"default.j2": line + "\n"})
    limits = templates.Limits(sentence_chars=500, render_seconds=0.5, combinations=10_000)
    try:
        lists, tsets = lists_and_sets(wl, tpl)
        decl = tsets["people"].declaration
        slot = decl.names[0] if decl else None
        rendered = generate.render(SetSpec("*" if slot else "young", "people", slot=slot), lists, tsets, limits=limits)
        rows, slotted = rendered.materialize()
    except StimkitError as e:
        assert "\n" not in str(e) and str(e)
        event("refused")
        return
    from stimkit.stimuli import grammar

    event("rendered")
    assert rows["stimulus"], "a set is never empty"
    for text in rows["stimulus"]:
        assert len(text) <= 500 and grammar.unmark(text) == text
    for ordinal, name, word, start, end in zip(*(slotted[c] for c in ("ordinal", "slot", "word", "span_start",
                                                                        "span_end")) if slotted else []):
        text = rows["stimulus"][ordinal]
        if start is not None:  # the span is the slot's word (or its plural), whatever the phrases did
            assert 0 <= start < end <= len(text) and text[start:end].lower() in (word.lower(), PLURAL.get(word)), \
                (text, name, word)
