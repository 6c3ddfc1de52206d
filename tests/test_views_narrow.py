"""Every view at terminal widths from 60 to 200 (issue 53): random result tables with long
names, two to four encoders and negative intervals, each rendered as a person's terminal
shows it. No number is ever split across lines (or parted from its sign), no name folds
inside a piece, and at 80 columns each view keeps what it is read for: `results` its n,
`check` its detail, `audit show` the verdict and the decision-flip share.

The oracle of "no number split": the same table rendered at an unbounded width (nothing
folded, hidden or stacked); every number token of each column the narrow table shows must
come back, whole, in the narrow rendering (as a multiset), and no other."""

from __future__ import annotations

import contextlib
import io
import re
from collections import Counter
from types import SimpleNamespace

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from stimkit.views import audit as views_audit
from stimkit.views import check as views_check
from stimkit.views import emit as output
from stimkit.views import results as views_results
from stimkit.views import table4

# a number as a person reads it: sign, digits, decimals, sizes (40/40/40/40), exponents
# (not the digits inside a name: "glove-6b-50d", "weat6", "may2019")
NUMBER = re.compile(r"(?<![\w.])[-+−]?\d+(?:[./,:]\d+)*(?:e[-+]?\d+)?(?![\w])")
HIDDEN = re.compile(r"not shown to fit \d+ characters \(.*?\): (.*)$", re.M)

WORDS = ["angry", "black", "woman", "stereotype", "european", "american", "names", "career", "family", "instruments",
         "weapons", "pleasant", "unpleasant", "competent", "likable", "neighbour~case-lower", "heilman", "double"]
ENCODERS = ["glove-6b-50d", "minilm,pooling=mean", "minilm,pooling=cls", "use-m3",
            "hf:sentence-transformers/paraphrase-multilingual-mpnet-base-v2"]

test_names = st.builds(lambda prefix, words, n: prefix + "_".join(words) + (str(n) if n else ""),
                       st.sampled_from(["", "sent-", "weat-"]), st.lists(st.sampled_from(WORDS), min_size=1, max_size=5),
                       st.integers(0, 12))
finite = dict(allow_nan=False, allow_infinity=False)


@st.composite
def results_frames(draw):
    """A family's corrected results: 1-5 tests x 2-4 encoders, d in [-2, 2] with an interval
    that may lie below zero, p down to 1e-6, n in words or sentences, some fragile, some with
    a matched baseline, some tests in two contexts (two rows of Table 4)."""
    tests = draw(st.lists(test_names, min_size=1, max_size=5, unique=True))
    encoders = draw(st.lists(st.sampled_from(ENCODERS), min_size=2, max_size=4, unique=True))
    rows = []
    for t in tests:
        contexts = draw(st.sampled_from([["word"], ["sentence"], ["word", "sentence"]]))
        for context in contexts:
            for e in encoders:
                d = draw(st.floats(-2, 2, **finite))
                lo, hi = sorted([d - draw(st.floats(0, 1.5, **finite)), d + draw(st.floats(0, 1.5, **finite))])
                p = draw(st.floats(1e-6, 1, **finite))
                sentences = context == "sentence"
                n = draw(st.integers(3, 150))
                fragile = draw(st.booleans())
                baseline = draw(st.booleans())
                rows.append({
                    "test": t, "encoder": e, "context": context, "language": "en", "alternative": "greater",
                    "units": draw(st.sampled_from(["words", "sentences"])) if sentences else "words",
                    "effect_size": d, "ci_low": lo, "ci_high": hi, "p_value": p,
                    "p_adjusted": min(1.0, p * draw(st.integers(1, 20))), "rejected": p < 0.005, "min_p": 1e-6,
                    "can_reject": draw(st.booleans()), "sentences_only": sentences and draw(st.booleans()),
                    "p_words": min(1.0, p * 3), "p_method": draw(st.sampled_from(["exact", "sampled"])),
                    "n_x": n, "n_y": n + 1, "n_a": 4 * n, "n_b": 4 * n + 3,
                    "words_x": n // 4 if sentences else None, "words_y": n // 4 if sentences else None,
                    "flip_word": draw(st.sampled_from(WORDS)) if fragile else None,
                    "flip_d": draw(st.floats(-2, 2, **finite)) if fragile else None,
                    "flip_p": draw(st.floats(1e-6, 1, **finite)) if fragile else None,
                    "baseline_percentile": draw(st.floats(0, 100, **finite)) if baseline else None,
                    "baseline_fpr": draw(st.floats(0, 1, **finite)) if baseline else None,
                })
    return pl.DataFrame(rows, infer_schema_length=None)


def family_of(df: pl.DataFrame, alpha: float = 0.01) -> SimpleNamespace:
    return SimpleNamespace(correction="holm", alpha=alpha, tested="alternative greater (one-sided)", settings="as given",
                           m=df.height, run=None, where=None, definition="the latest result per hypothesis",
                           units=(("sentence", "sentences", 1),), stale_note=None, mixed_note=None,
                           as_dict=lambda: {"m": df.height})


@st.composite
def check_frames(draw):
    rows = []
    for _ in range(draw(st.integers(1, 6))):
        d1, d2 = draw(st.floats(-2, 2, **finite)), draw(st.floats(-2, 2, **finite))
        lo = d1 - draw(st.floats(0, 1, **finite))
        verdict = draw(st.sampled_from(["violation", "note", "consistent", "not comparable"]))
        rows.append({
            "check_name": draw(st.sampled_from(["C7 vs C8", "word vs sentence", "across encoders", "one word"])),
            "heuristic": draw(st.booleans()), "encoder": draw(st.sampled_from(ENCODERS)),
            "tests": f"{draw(test_names)} / {draw(test_names)}", "verdict": verdict,
            "reason": None if verdict == "consistent" else f"no result for {draw(test_names)} with encoder glove-6b-50d",
            "test_used": "jackknife-t (delete-one-word, shared words paired)",
            "diff_p": draw(st.floats(0, 1, **finite)),
            "detail": (f"d {d1:+.2f} [{lo:.2f}, {d1 + 0.4:.2f}] / {d2:+.2f} [{d2 - 0.5:.2f}, {d2 + 0.5:.2f}], "
                       f"p {draw(st.floats(1e-5, 1, **finite)):.2g} / <= 0.0005"),
            "result_ids": ["r1", "r2"]})
    return pl.DataFrame(rows)


@st.composite
def wording_frames(draw):
    rows, variants = [], []
    for t in draw(st.lists(test_names, min_size=1, max_size=3, unique=True)):
        for e in draw(st.lists(st.sampled_from(ENCODERS), min_size=2, max_size=4, unique=True)):
            lo = draw(st.floats(-1, 0, **finite))
            n = draw(st.integers(1, 40))
            quiet = draw(st.lists(st.sampled_from(["may2019~case-lower", "may2019~punct-none", "may2019~punct-exclaim"]),
                                  max_size=min(n, 3), unique=True))
            rows.append({"test": t, "encoder": e, "template_set": "may2019", "n_variants": n,
                         "n_no_op": len(quiet), "no_op_variants": quiet, "n_dropped": draw(st.integers(0, 5)), "original_d": draw(st.floats(-2, 2, **finite)),
                         "original_p": draw(st.floats(1e-6, 1, **finite)), "rel_change_min": lo,
                         "rel_change_max": draw(st.floats(0, 1, **finite)),
                         "sign_flip_share": draw(st.floats(0, 1, **finite)),
                         "decision_flip_share": draw(st.floats(0, 1, **finite)),
                         "template_share": draw(st.floats(0, 1, **finite)), "alpha": 0.01,
                         "verdict": draw(st.sampled_from(["robust", "fragile"]))})
            for rule in draw(st.lists(st.sampled_from(["neighbour~case-lower", "tense-past", "contraction",
                                                         "article-swap~the"]), min_size=1, max_size=3, unique=True)):
                variants.append({"test": t, "encoder": e, "variant": f"may2019@{rule}", "rule": rule.split("~")[0],
                                 "d": draw(st.floats(-2, 2, **finite)), "p": draw(st.floats(1e-6, 1, **finite)),
                                 "no_op": draw(st.booleans())})
    return pl.DataFrame(rows), pl.DataFrame(variants)


def rendered(show, width: int) -> tuple[str, str]:
    """What `show()` prints at a terminal `width`: its tables (stdout) and its notes (stderr)."""
    data, notes = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(data), contextlib.redirect_stderr(notes):
        mp.setattr(output, "out", output.make_console(file=data, width=width))
        mp.setattr(output, "err", output.make_console(file=notes, stderr=True))
        for module in (views_results, views_check, table4):
            if hasattr(module, "err"):
                mp.setattr(module, "err", output.make_console(file=notes, stderr=True))
        show()
    return data.getvalue(), notes.getvalue()


def tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """Each ASCII table of `text`: its columns' headers (folded lines joined) and each body
    line's cells."""
    found, lines = [], text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("+-") or lines[i].startswith("+="):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("+"):
                j += 1
            block = lines[i + 1:j]
            sep = next(k for k, line in enumerate(block) if line.startswith("|-"))
            split = [[c.strip() for c in line.split("|")[1:-1]] for line in block]
            heads = ["".join(parts) for parts in zip(*split[:sep])]
            found.append((heads, split[sep + 1:]))
            i = j + 1
        else:
            i += 1
    return found


def column_numbers(body: list[list[str]], columns: list[int]) -> Counter:
    return Counter(tok for row in body for i in columns for tok in NUMBER.findall(row[i]))


def hidden_names(notes: str) -> list[list[str]]:
    return [m.split(", ") for m in HIDDEN.findall(notes)]


def assert_numbers_whole(show, width: int) -> tuple[list, str]:
    """The table(s) at `width` hold each number of each shown column whole, as at an unbounded
    width; returns the narrow tables and notes."""
    wide, _ = rendered(show, output.UNBOUNDED)
    narrow, notes = rendered(show, width)
    assert all(len(line) <= width for line in narrow.splitlines()), narrow
    wide_tables, narrow_tables = tables(wide), tables(narrow)
    assert len(wide_tables) == len(narrow_tables)
    assert len(narrow_tables) == 1  # one table a view: the columns it hides are those its notes name
    gone = {name for names in hidden_names(notes) for name in names}
    for (wide_heads, wide_body), (heads, body) in zip(wide_tables, narrow_tables):
        shown = [i for i, h in enumerate(wide_heads) if h not in gone]
        expected = column_numbers(wide_body, shown)
        got = column_numbers(body, range(len(heads)))
        assert got == expected, (width, expected - got, got - expected, narrow)
    return narrow_tables, notes


WIDTHS = st.integers(60, 200)
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def kept_at_80(show, width: int, columns: tuple[str, ...]) -> list[str]:
    """`show` holds every number whole at `width` and at 80, where each of `columns` is shown (as
    a column of its own or under another) and none is named as left out; the headers at 80."""
    assert_numbers_whole(show, width)
    narrow, notes = assert_numbers_whole(show, 80)
    (heads, _), = narrow
    hidden = {c for names in hidden_names(notes) for c in names}
    for column in columns:
        assert any(column in h for h in heads) and column not in hidden, (column, heads, notes)
    return heads


@SETTINGS
@given(results_frames(), WIDTHS)
def test_results_never_split_a_number_and_keep_n_at_80(df, width):
    # identity, d with its interval, p, the decision, and n
    kept_at_80(lambda: views_results.show(df, family_of(df), "table"), width,
               ("test", "encoder", "d", "ci", "p_value", "rejected", "n"))


@SETTINGS
@given(results_frames(), WIDTHS)
def test_table4_never_splits_a_number(df, width):
    family = family_of(df)
    view = table4.table4(df, family.alpha, encoders=list(dict.fromkeys(df["encoder"])))
    assert_numbers_whole(lambda: table4.show(view, df, family, "table", "Effect size d"), width)


@SETTINGS
@given(check_frames(), WIDTHS)
def test_check_never_splits_a_number_and_keeps_detail_at_80(df, width):
    heads = kept_at_80(lambda: views_check.show(df, family_of(df), "table"), width, ("check_name", "verdict", "detail"))
    assert "detail" in heads  # a column of its own


def variant_pieces(values: list[str]) -> set[str]:
    """Every run of whole pieces of each name (what a fold may put on one line)."""
    runs = set()
    for v in values:
        pieces = output._pieces(v)
        for a in range(len(pieces)):
            for b in range(a + 1, len(pieces) + 1):
                runs.add("".join(pieces[a:b]).strip())
    return runs


@SETTINGS
@given(wording_frames(), WIDTHS)
def test_audit_show_never_splits_a_number_nor_a_variant_and_keeps_verdict_and_flips_at_80(frames, width):
    wording, variants = frames
    # as `audit show` and `audit perturb` print it
    kept_at_80(lambda: output.emit(wording, "table", **views_audit.WORDING), width,
               ("test", "encoder", "original_d", "verdict", "decision_flip_share"))
    # a variant's name folds between whole pieces ("may2019" / "@neighbour~" / "case-lower"), never inside one
    show = lambda: output.emit(variants, "table", **views_audit.VARIANTS)  # noqa: E731
    (heads, body), = assert_numbers_whole(show, width)[0]
    if "variant" in heads:
        runs = variant_pieces(variants["variant"].to_list())
        column = heads.index("variant")
        assert all(row[column] in runs for row in body if row[column]), body


def test_the_reported_cuts_never_happen():
    """The two cells of the issue at the widths that broke them: the sign stays with its number."""
    for cell, width in (("+0.73* [-0.11, 1.23]", 9), ("+0.51**^ [-0.22, 0.96]", 10), ("+0.33* [-0.4, 1.1]", 9)):
        lines = output._fold(cell, width).splitlines()
        assert not any(line.rstrip().endswith(("[-", "-")) for line in lines), lines
        assert "[-" + cell.split("[-")[1].split(",")[0] + "," in "\n".join(lines)
    lines = output._fold("may2019@neighbour~case-lower", 12).splitlines()
    assert lines == ["may2019", "@neighbour~", "case-lower"]
