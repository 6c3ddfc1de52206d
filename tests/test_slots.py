"""Templates with several slots (stimuli.slots): the product with every slot's span, declared
constraints, selection by a slot with the other slots balanced, c-word on a named slot, units,
and HolisticBias as published (tests/fixtures/holistic-bias), counted straight from its JSON."""

import json
from collections import Counter
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from stimkit import StimkitError, store
from stimkit.catalog import holisticbias
from stimkit.stimuli import factors, generate, slots, templates, wordlists
from stimkit.stimuli.balance import balance
from stimkit.stimuli.sets import SetSpec

HB = Path(__file__).parent / "fixtures" / "holistic-bias"

LISTS = """
[young]
words = [{ word = "young", kind = "adjective" }, { word = "teenage", kind = "adjective" },
         { word = "girlish", kind = "adjective", gender = "female", tags = { axis = "age" } }]
[old]
words = [{ word = "old", kind = "adjective" }, { word = "elderly", kind = "adjective" },
         { word = "aged", kind = "adjective" }, { word = "senior", kind = "adjective" }]
[nouns]
kind = "count_noun"
person = true
words = [{ word = "woman", gender = "female" }, { word = "man", gender = "male" }, "person"]
"""
SET_TOML = """
[slots.descriptor]
lists = ["young", "old"]
[slots.noun]
lists = ["nouns"]
[[constraints]]
why = "a gendered descriptor fits only that gender's nouns"
require = "not descriptor.gender or noun.gender == descriptor.gender"
[[constraints]]
files = ["plural"]
require = "noun.text != 'person'"
"""
LINES = {"default.j2": "I'm {{ descriptor|a }} {{ noun }}.\nThis {{ noun }} is {{ descriptor }}.\n",
         "plural.j2": "I like {{ descriptor }} {{ noun.plural }}.\n"}


def people(tmp_path: Path, set_toml: str = SET_TOML, lines: dict = LINES) -> tuple[Path, Path]:
    """A word-list folder and a template folder holding the two-slot set `people`."""
    (tmp_path / "wl").mkdir(parents=True)
    (tmp_path / "wl" / "people.toml").write_text(LISTS)
    folder = tmp_path / "tpl" / "people"
    folder.mkdir(parents=True)
    (folder / "_set.toml").write_text(set_toml)
    for name, text in lines.items():
        (folder / name).write_text(text)
    return tmp_path / "wl", tmp_path / "tpl"


def lists_and_sets(wl: Path, tpl: Path, name: str = "people"):
    lists = wordlists.merge(wordlists.load_all(), wordlists.load_all(wl))
    return lists, {name: templates.load_set(name, tpl)}


def test_two_slots_render_the_product_with_both_spans(tmp_path):
    wl, tpl = people(tmp_path)
    lists, tsets = lists_and_sets(wl, tpl)
    rendered = generate.render(SetSpec("young", "people", slot="descriptor"), lists, tsets)
    rows, slot_rows = rendered.materialize()
    # by hand: young x nouns, 2 default lines each, the plural line but for "person";
    # "girlish" (female) only with "woman": (2 descriptors x 3 nouns + 1) x 2 + (2 x 2 + 1) x 1
    assert len(rows["stimulus"]) == 14 + 5
    assert rows["stimulus"][:3] == ["I'm a young woman.", "This woman is young.", "I like young women."]
    assert set(rows["word"]) == {"young", "teenage", "girlish"}
    by_ordinal = {}
    for i, o in enumerate(slot_rows["ordinal"]):
        by_ordinal.setdefault(o, {})[slot_rows["slot"][i]] = (slot_rows["word"][i], slot_rows["span_start"][i],
                                                              slot_rows["span_end"][i], slot_rows["context_id"][i])
    assert len(slot_rows["ordinal"]) == 2 * len(rows["ordinal"])       # both slots of every sentence
    for o, text, word, start, end, context in zip(rows["ordinal"], rows["stimulus"], rows["word"], rows["span_start"],
                                                  rows["span_end"], rows["context_id"]):
        d_word, d_start, d_end, d_context = by_ordinal[o]["descriptor"]
        n_word, n_start, n_end, n_context = by_ordinal[o]["noun"]
        assert text[start:end] == word == d_word == text[d_start:d_end]          # the set's slot is the descriptor
        assert text[n_start:n_end] in (n_word, {"woman": "women", "man": "men"}.get(n_word))
        assert context == d_context and context.endswith(f" | noun={n_word}")
        assert n_context.endswith(f" | descriptor={d_word}")
    assert rows["stimulus"][rows["word"].index("girlish")] == "I'm a girlish woman."


def test_the_constraints_filter_the_product(tmp_path):
    wl, tpl = people(tmp_path)
    lists, tsets = lists_and_sets(wl, tpl)
    full = generate.render(SetSpec("*", "people", slot="descriptor"), lists, tsets)
    rows, slot_rows = full.materialize()
    pairs = Counter((rows["word"][o], w) for o, s, w in zip(slot_rows["ordinal"], slot_rows["slot"], slot_rows["word"])
                    if s == "noun")
    # the gendered descriptor: only with the female noun; every other pair with all three
    assert {n for d, n in pairs if d == "girlish"} == {"woman"}
    assert all(len({n for d2, n in pairs if d2 == d}) == 3 for d, _ in pairs if d != "girlish")
    # the plural file's constraint: no "persons"
    assert not any("person" in t for t, tid in zip(rows["stimulus"], rows["template_id"]) if tid.startswith("people/plural"))
    n_combos = 6 * 3 + 1                             # 7 descriptors, 6 ungendered
    assert full.n_stimuli == len(rows["stimulus"]) == generate.count_slots(full.spec, lists, tsets) \
        == n_combos * 2 + (6 * 2 + 1)
    # a constraint that fails names its file and the words; the store is not touched
    bad = SET_TOML.replace("noun.gender == descriptor.gender", "noun.gender.upper() == 1 / 0")
    wl2, tpl2 = people(tmp_path / "bad", bad)
    con = store.connect(tmp_path / "s.duckdb")
    lists2, tsets2 = lists_and_sets(wl2, tpl2)
    with pytest.raises(StimkitError, match=r"_set.toml: constraint 1: .* fails for slots descriptor='girlish', "
                                           r"noun='woman': ZeroDivisionError"):
        generate.generate(con, [SetSpec("young", "people", slot="descriptor")], lists2, tsets2)
    assert store.one(con, "SELECT count(*) FROM stimuli")[0] == 0


def test_set_names_and_refusals(tmp_path):
    wl, tpl = people(tmp_path)
    lists, tsets = lists_and_sets(wl, tpl)
    spec = SetSpec.parse("descriptor=young@people/plural")
    assert (spec.slot, spec.wordlist, spec.template_set, spec.template_file) == ("descriptor", "young", "people", "plural")
    assert spec.name == "descriptor=young@people/plural" and SetSpec.parse("flowers@word").slot is None
    with pytest.raises(StimkitError, match=r"has slots descriptor, noun: name the slot the list fills, "
                                           r"e.g. descriptor=young@people"):
        generate.render(SetSpec("young", "people"), lists, tsets)
    with pytest.raises(StimkitError, match="has no slot 'adjective'"):
        generate.render(SetSpec("young", "people", slot="adjective"), lists, tsets)
    with pytest.raises(StimkitError, match="has one slot, the word: name the set flowers@word"):
        generate.render(SetSpec("flowers", "word", slot="descriptor"), lists, {})
    missing = {"default.j2": "I'm {{ descriptor|a }} person.\n"}   # the noun is never said
    wl3, tpl3 = people(tmp_path / "m", SET_TOML[:SET_TOML.rindex("[[constraints]]")], lines=missing)
    rendered = generate.render(SetSpec("young", "people", slot="descriptor"), *lists_and_sets(wl3, tpl3))
    with pytest.raises(StimkitError, match=r"people/default:1: the sentence \"I'm a young person.\" does not "
                                           r"contain slot 'noun'"):
        rendered.materialize()


@pytest.fixture
def people_store(tmp_path):
    import stimkit

    wl, tpl = people(tmp_path)
    with stimkit.open(tmp_path / "s.duckdb", wordlist_dir=wl, template_dir=tpl) as s:
        yield s


def test_selection_by_a_slot_keeps_the_other_slots_balanced(people_store):
    from stimkit.catalog.definitions import adhoc, fetch_sets
    from stimkit.run.association import cut

    test = adhoc("ages", ("descriptor=young@people", "descriptor=old@people", "pleasant@word", "unpleasant@word"),
                 "sentence", "cut")
    people_store._generate_missing(test.set_specs())
    sets = fetch_sets(people_store.con, test)
    x, y = sets["x"], sets["y"]
    assert set(x["word"]) == {"young", "teenage", "girlish"} and set(y["word"]) == {"old", "elderly", "aged", "senior"}
    assert x.height == 19 and y.height == 4 * 3 * 2 + 4 * 2       # old: no gendered descriptor
    for policy in ("cut", "drop-words"):
        for seed in range(3):
            b = balance(x, y, policy, seed, "ages")
            cx, cy = Counter(b.x["context_id"]), Counter(b.y["context_id"])
            assert cx == cy and b.x.height == b.y.height                 # the same nouns and templates, as often
            assert sum(b.dropped.values()) == x.height + y.height - 2 * b.x.height
            if policy == "drop-words":      # whole words dropped from Y first (one of four), then matched by context
                assert b.y["word"].n_unique() == 3
    # "girlish woman" contexts exist in X only for "woman"; Y has more of every context: X stays whole under cut
    b = balance(x, y, "cut", 0, "ages")
    assert sorted(b.x["stimulus"].to_list()) == sorted(x["stimulus"].to_list())
    # the same cut, again, from the run's path (vectors follow their rows)
    vx, vy = np.arange(x.height)[:, None] * 1.0, np.arange(y.height)[:, None] * 1.0
    fx, fy, mx, my = cut({"x": (x, vx), "y": (y, vy)}, "cut", 0, "ages")
    assert fy["stimulus"].to_list() == [y["stimulus"][int(i)] for i in my[:, 0]]
    # one-slot sets keep their published cut: no context, no stratification
    plain = balance(x.drop("context_id"), y.drop("context_id"), "cut", 0, "ages")
    assert plain.x.height == plain.y.height == 19 and set(plain.dropped) == {"y"}


def test_sql_selects_by_any_slot_of_the_whole_product(people_store):
    people_store.generate(None, ["people"], people_store.wordlist_dir, people_store.template_dir)
    women = people_store.query("SELECT * FROM current_slot_stimuli WHERE set_name = 'descriptor=*@people' "
                               "AND slot = 'noun' AND word = 'woman' ORDER BY ordinal")
    assert women.height == 7 * 3 and set(women["word"]) == {"woman"}          # every descriptor, all three lines
    assert all(s[a:b] in ("woman", "women") for s, a, b in zip(women["stimulus"], women["span_start"], women["span_end"]))
    assert women["context_id"][0].endswith("| descriptor=young") and women["kind"].null_count() == women.height
    young = people_store.query("SELECT * FROM current_slot_stimuli WHERE set_name = 'descriptor=*@people' "
                               "AND slot = 'descriptor' AND wordlist = 'young'")
    people_store._generate_missing([SetSpec.parse("descriptor=young@people")])
    same = people_store.query("SELECT * FROM current_stimuli WHERE set_name = 'descriptor=young@people'")
    assert sorted(young["stimulus"].to_list()) == sorted(same["stimulus"].to_list())
    tags = people_store.query("SELECT tags->>'axis' AS axis FROM slot_words s JOIN current_sets c ON c.version = s.set_version "
                              "WHERE c.name = 'descriptor=*@people' AND word = 'girlish'")
    assert tags["axis"].to_list() == ["age"]


def test_units_are_the_selecting_slots_words(people_store):
    from stimkit.catalog.definitions import adhoc
    from stimkit.encoders import resolve
    from stimkit.run import association, plan as run_plan
    from stimkit.run.options import Options

    test = adhoc("ages", ("descriptor=young@people", "descriptor=old@people", "pleasant@may2019", "unpleasant@may2019"),
                 "sentence", "drop-words")
    opts = Options(budget=2000, units="words")
    plan = run_plan.make(people_store.con, [test], ["glove-6b-50d"], opts, generate_missing=people_store._generate_missing)
    people_store._encode_plan(plan)
    planned, enc = plan.pairs[0]
    prep = association.prepare(people_store.con, planned, enc, planned.options)
    groups, n_x = association.word_groups(prep.kept)
    words = prep.kept["x"]["word"].to_list() + prep.kept["y"]["word"].to_list()
    # one permutation unit per descriptor, every sentence of a descriptor in its unit
    assert n_x == 3 and groups.max() + 1 == 3 + prep.kept["y"]["word"].n_unique()
    assert all(len({w for w, g in zip(words, groups) if g == k}) == 1 for k in set(groups.tolist()))
    # the crossed model's factors: the descriptor is the word, the template and noun its context
    words_x, contexts_x = factors.word_and_context(prep.kept["x"])
    words_y, contexts_y = factors.word_and_context(prep.kept["y"])
    assert words_x == prep.kept["x"]["word"].to_list()
    assert set(contexts_x) == set(contexts_y)                    # balanced: crossed with both groups' words
    assert contexts_x[0] == "people/default:1 | noun=woman"
    plain = factors.contexts(prep.kept["a"])                     # a one-slot set: the template's frame
    assert plain == [factors.frame(t) for t in prep.kept["a"]["template_text"].to_list()]
    report = people_store._execute(plan, "test ages")
    res = report.results[0]
    assert res.p_method == "exact-clustered"
    assert res.n_templates == len(set(contexts_x)) and res.crossed_d is not None and np.isfinite(res.crossed_d)


def test_cword_on_a_named_slot(people_store):
    from stimkit.encoders import resolve

    from stimkit.catalog.definitions import adhoc, store_adhoc

    store_adhoc(people_store.con, adhoc("ages", ("descriptor=young@people", "descriptor=old@people", "pleasant@word",
                                                 "unpleasant@word"), None, "cut"))
    again = people_store.test(["ages"], encoders=["minilm"], context="c-word:noun", budget=1000)
    res = again.results[0]
    assert res.context == "c-word:noun" and res.encoder == "minilm,pooling=mean"
    # X's vectors are the noun's first sub-token in each sentence
    x = people_store.query(f"SELECT s.stimulus, sl.span_start, sl.span_end FROM current_stimuli s JOIN stimulus_slots sl "
                           f"USING (set_version, ordinal) WHERE s.set_name = 'descriptor=young@people' AND sl.slot = 'noun' "
                           f"ORDER BY s.ordinal LIMIT 3")
    token = resolve("minilm,pooling=token")
    stored = people_store.query(f"SELECT text, span_start, span_end, vector FROM embeddings_384 WHERE fingerprint = "
                                f"'{token.fingerprint}'")
    keyed = {(t, a, b): v for t, a, b, v in stored.iter_rows()}
    for text, a, b in x.iter_rows():
        expected = token.encode([text], [(a, b)]).vectors[0]
        assert np.allclose(keyed[(text, a, b)], expected, atol=1e-5)
    # the attribute sets (one slot) keep their word; the plain c-word takes the set's slot
    words = people_store.test(["ages"], encoders=["minilm"], context="c-word", budget=1000).results[0]
    assert words.context == "c-word" and words.effect_size != res.effect_size
    refused = people_store.test(["ages"], encoders=["minilm"], context="c-word:colour", budget=1000)
    assert not refused.results and "no stimulus of X or Y has a slot 'colour'" in refused.failures[0].cause
    with pytest.raises(StimkitError, match=r"unknown context 'c-word:' \(known: word, sentence, c-word, c-word:<slot>\)"):
        people_store.test(["ages"], encoders=["minilm"], context="c-word:", budget=1000)


# --------------------------------------------------------------------------- HolisticBias

def hb_json():
    return {n: json.loads((HB / n).read_text()) for n in holisticbias.FILES}


def independent_rows(data, descriptor_entries=None):
    """HolisticBias's sentences, built from the JSON as its generator builds them (its README and
    sentences.py's rules, written out here, not through stimkit): (text, descriptor, noun) rows.
    descriptor_entries: only these (axis, bucket or None, entry) descriptor entries, without the
    noun-alone rows; None: the whole product."""
    nouns = [(g, n, p) for g, pairs in data["nouns.json"].items() for n, p in pairs]
    templates_ = data["sentence_templates.json"]

    def art(w):
        return "an" if w[0].lower() in "aeiou" else "a"

    def sentences(np_, pnp, has_noun, d, n):
        for t, flags in templates_.items():
            if flags.get("must_be_noun") and not has_noun:
                continue
            text = t.replace("{noun_phrase}", np_) if "{noun_phrase}" in t else t.replace("{plural_noun_phrase}", pnp)
            yield text, d, n

    out = []
    if descriptor_entries is None:
        for _, n, p in nouns:
            out += sentences(f"{art(n)} {n}", p, True, None, n)
        descriptor_entries = [(a, b, e) for a, bs in data["descriptors.json"].items() for b, es in bs.items() for e in es]
        seen = set()
        for a, es in data["standalone_noun_phrases.json"].items():
            for e in es:
                e = {"noun_phrase": e} if isinstance(e, str) else e
                if (a, e["noun_phrase"]) not in seen:   # a list holds a phrase once (the conversion keeps the first)
                    seen.add((a, e["noun_phrase"]))
                    descriptor_entries.append((a, None, e))
    for axis, bucket, e in descriptor_entries:
        if bucket is None:                              # a standalone noun phrase
            ph, pl_ = e["noun_phrase"], e.get("plural_noun_phrase", e["noun_phrase"])
            if "{noun}" in ph:
                d = ph.format(article="", noun="").lstrip()
                for _, n, p in nouns:
                    out += sentences(ph.format(article=art(n), noun=n), pl_.format(article="", noun=p).lstrip(), True, d, n)
            else:
                out += sentences(ph, pl_, False, ph, None)
            continue
        e = {"descriptor": e} if isinstance(e, str) else e
        d, a_, g = e["descriptor"], e.get("article", art(e["descriptor"])), e.get("gender")
        out += sentences(d, d, False, d, None)
        for group, n, p in nouns:
            if g is None or g == group:
                out += sentences(f"{a_} {d} {n}", f"{d} {p}", True, d, n)
    return out


@pytest.fixture(scope="module")
def hb_inputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hb")
    converted = holisticbias.convert(HB)
    holisticbias.write(folder, converted)
    lists = wordlists.merge(wordlists.load_all(), wordlists.load_all(folder / "wordlists"))
    return converted, lists, {"holisticbias": templates.load_set("holisticbias", folder / "templates")}, folder


def test_holisticbias_conversion_gives_the_published_counts(hb_inputs):
    converted, lists, tsets, folder = hb_inputs
    data = hb_json()
    n_descriptors = sum(len(es) for bs in data["descriptors.json"].values() for es in bs.values())
    assert (n_descriptors, len(data["nouns.json"]["female"]) + len(data["nouns.json"]["male"])
            + len(data["nouns.json"]["neutral"]), len(data["sentence_templates.json"])) == (583, 32, 26)
    assert converted.counts["descriptors"] == 583 and converted.counts["nouns"] == 32
    assert converted.counts["templates"] == 26
    hb_lists = {n: wl for n, wl in lists.items() if n.startswith("hb_")}
    assert sum(len(wl.words) for n, wl in hb_lists.items() if not n.endswith("_phrases") and n != "hb_nouns") == 583
    assert len(hb_lists["hb_nouns"].words) == 32
    assert len(tsets["holisticbias"].templates("default")) + len(tsets["holisticbias"].templates("must_be_noun")) == 26
    assert len(converted.notes) == 1 and "'a Rasta' is listed twice" in converted.notes[0]
    deaf = next(w for w in hb_lists["hb_ability_auditory"].words if w.text == "Deaf")
    assert dict(deaf.tags) == {"axis": "ability", "bucket": "auditory", "form": "descriptor", "article": "a",
                               "preference": "reviewed"}


def test_holisticbias_sentence_count_equals_the_json_count(hb_inputs):
    _, lists, tsets, _ = hb_inputs
    data = hb_json()
    independent = independent_rows(data)
    # the whole product, counted through the generator's combinations and constraints
    full = SetSpec("*", "holisticbias", slot="descriptor")
    assert generate.count_slots(full, lists, tsets) == len(independent) == 566_608
    # HolisticBias's own generator makes 17 more: the second "a Rasta" entry, every non-noun template
    assert len(independent) + sum(1 for f in data["sentence_templates.json"].values() if not f.get("must_be_noun")) \
        == 566_625


@pytest.mark.parametrize("listed", ["hb_age_young", "hb_gender_and_sex_binary", "hb_religion_phrases"])
def test_holisticbias_sets_render_its_sentences(hb_inputs, listed):
    _, lists, tsets, _ = hb_inputs
    data = hb_json()
    axis = next(a for a in data["descriptors.json"] if listed.startswith(f"hb_{a}_"))
    bucket = listed[len(f"hb_{axis}_"):]
    entries = ([(axis, None, e) for e in data["standalone_noun_phrases.json"][axis]] if bucket == "phrases"
               else [(axis, bucket, e) for e in data["descriptors.json"][axis][bucket]])
    if bucket == "phrases":   # the list holds a phrase once: the first
        firsts: dict = {}
        for a, b, e in entries:
            firsts.setdefault(e if isinstance(e, str) else e["noun_phrase"], (a, b, e))
        entries = list(firsts.values())
    expected = independent_rows(data, entries)
    rows, slot_rows = generate.render(SetSpec(listed, "holisticbias", slot="descriptor"), lists, tsets).materialize()
    assert Counter(rows["stimulus"]) == Counter(t for t, _, _ in expected)
    # every slot's span holds its word, or its plural ("Deaf grandmothers", "women who use wheelchairs")
    texts = dict(zip(rows["ordinal"], rows["stimulus"]))
    forms = {(wl.name, w.text): {w.text, w.singular, w.plural} for wl in lists.values() for w in wl.words}
    for o, w, listed_in, a, b in zip(*(slot_rows[c] for c in ("ordinal", "word", "wordlist", "span_start", "span_end"))):
        assert texts[o][a:b] in forms[listed_in, w], (texts[o], w)
    if listed == "hb_age_young":
        assert "I'm a twenty-five-year-old grandmother." in rows["stimulus"]
        assert len(rows["stimulus"]) == 14 * (32 * 26 + 17)


def test_holisticbias_import_is_idempotent(tmp_path):
    import stimkit

    with stimkit.open(tmp_path / "s.duckdb") as s:
        first = s.import_holisticbias(HB, tmp_path / "hb", generate=False)
        again = s.import_holisticbias(HB, tmp_path / "hb", generate=False)   # the same files: allowed, unchanged
    assert [p.name for p in first["files"]] == [p.name for p in again["files"]]
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(StimkitError, match="holds other files"):
        holisticbias.write(tmp_path / "other", holisticbias.convert(HB))


def test_holisticbias_import_through_the_cli(tmp_path):
    """`stimkit import holisticbias DIR -o OUT --no-generate` writes the files and opens no
    store; a folder holding other files is a usage error naming it, and nothing is written."""
    from typer.testing import CliRunner

    from stimkit.cli import app

    db = tmp_path / "s.duckdb"
    done = CliRunner().invoke(app, ["--db", str(db), "import", "holisticbias", str(HB), "-o", str(tmp_path / "hb"),
                                    "--no-generate"])
    assert done.exit_code == 0, done.output
    assert "read 583 descriptors" in done.output and "26 templates" in done.output
    assert (tmp_path / "hb" / "templates" / "holisticbias" / "_set.toml").is_file() and not db.exists()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    refused = CliRunner().invoke(app, ["--db", str(db), "import", "holisticbias", str(HB), "-o", str(tmp_path / "other"),
                                       "--no-generate"])
    assert refused.exit_code == 2 and "holds other files" in refused.output
    assert len(refused.output.strip().splitlines()) == 1
    assert sorted(p.name for p in (tmp_path / "other").iterdir()) == ["notes.txt"]


def test_a_set_differing_only_in_its_slots_renders_differently(tmp_path):
    """Whether a user set replaces a built-in one compares what renders: `_set.toml`'s slots,
    constraints and phrases count (as its grammar does), its description and source do not."""
    def folder(name: str, set_toml: str) -> Path:
        f = tmp_path / name
        f.mkdir()
        (f / "default.j2").write_text(LINES["default.j2"])
        (f / "_set.toml").write_text(set_toml)
        return f

    plain = templates._contents(folder("a", SET_TOML))
    assert templates._contents(folder("b", 'description = "mine"\nsource = "me"\n' + SET_TOML)) == plain
    assert templates._contents(folder("c", SET_TOML.replace('"nouns"', '"other_nouns"'))) != plain
    assert templates._contents(folder("d", SET_TOML + '[phrases]\nnp = "{{ descriptor }} {{ noun }}"\n')) != plain


def test_a_plain_phrase_is_joined_without_jinja_and_renders_as_jinja_would(tmp_path):
    """[phrases] of text and variables take the same no-Jinja path as plain lines; a phrase
    with a call keeps Jinja. The sentences are the same either way."""
    set_toml = SET_TOML + '[phrases]\nnp = "{{ descriptor }} {{ noun }}"\nfancy = "{{ descriptor|upper }}"\n'
    wl, tpl = people(tmp_path, set_toml, {"default.j2": "I'm {{ np }}.\n", "plural.j2": "{{ fancy }} {{ noun }}.\n"})
    lists, tsets = lists_and_sets(wl, tpl)
    from stimkit.stimuli.product import SlotPlan

    plan = SlotPlan(SetSpec("young", "people", slot="descriptor"), lists, tsets["people"])
    assert [(t.id, t.plain is not None) for t in plan.phrases] == [("np", True), ("fancy", False)]
    rows, slot_rows = generate.render(SetSpec("young", "people", slot="descriptor"), lists, tsets).materialize()
    assert rows["stimulus"][:2] == ["I'm young woman.", "YOUNG woman."]
    assert all(t[a:b].lower() == w for t, a, b, w in zip(rows["stimulus"], rows["span_start"], rows["span_end"], rows["word"]))


def test_a_result_and_its_baseline_record_one_context():
    """A result and its matched baseline name their context through one function: c-word on a
    slot is `c-word:<slot>` in both (the baseline wrote plain `c-word`)."""
    from types import SimpleNamespace

    from stimkit.catalog.definitions import adhoc
    from stimkit.run import association, cword

    test = cword.in_context(adhoc("ages", ("descriptor=young@people", "descriptor=old@people", "pleasant@may2019",
                                           "unpleasant@may2019"), "sentence", "cut"), "c-word:noun")
    assert association.context_of(test, SimpleNamespace(uses_span=True)) == "c-word:noun"
    sentence = adhoc("ages", test.sets, "sentence", "cut")
    assert association.context_of(sentence, SimpleNamespace(uses_span=True)) == "token"
    assert association.context_of(sentence, SimpleNamespace(uses_span=False)) == "sentence"
