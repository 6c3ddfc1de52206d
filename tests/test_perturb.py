"""Perturbation families (stimuli.perturb): every built-in rule's variants keep the slot, render
grammatically and carry their provenance; user rules and paraphrases; the bound; the drops."""

import re

import pytest

from stimkit.errors import InputError, StimkitError, UsageError
from stimkit.stimuli import grammar, perturb, templates, wordlists
from stimkit.stimuli.templates import Template

RULES = [r.name for r in perturb.builtin_rules()]

# One rendered sentence per rule, by hand: (rule, parent template id, word list, word, sentence).
EXPECTED = {
    "det-the-this": ("may2019/count_noun:7", "career", "executive", "This executive is here."),
    "det-the-these": ("may2019/count_noun:14", "career", "executive", "These executives are here."),
    "det-a-the": ("may2019/count_noun:3", "career", "executive", "This is the executive."),
    "demonstrative-here": ("may2019/name:2", "male_names", "John", "Here is John."),
    "tense-past": ("may2019/count_noun:13", "career", "executive", "They were executives."),
    "tense-future": ("may2019/name:6", "male_names", "John", "John will be here."),
    "contraction": ("may2019/name:3", "male_names", "John", "That's John."),
    "degree-very": ("may2019/adjective:1", "pleasant", "lucky", "This is very lucky."),
    "degree-really": ("may2019/count_noun:5", "career", "executive", "There is really an executive."),
    "punct-exclaim": ("may2019/name:6", "male_names", "John", "John is here!"),
    "punct-none": ("may2019/name:6", "male_names", "John", "John is here"),
    "case-lower": ("may2019/count_noun:9", "career", "executive", "an executive is a thing."),
    "hedge-think": ("may2019/name:6", "male_names", "John", "I think John is here."),
    "hedge-perhaps": ("may2019/count_noun:3", "career", "executive", "Perhaps this is an executive."),
    "polite-say": ("may2019/name:9", "male_names", "John", "If I may say so, the person's name is John."),
    "clause-inversion": ("may2019/count_noun:15", "career", "executive", "There are the executives."),
    "syn-present": ("may2019/name:6", "male_names", "John", "John is present."),
    "syn-over-there": ("may2019/name:7", "male_names", "John", "John is over there."),
    "syn-called": ("may2019/name:9", "male_names", "John", "The person is called John."),
}


@pytest.fixture(scope="module")
def may2019():
    return templates.load_set("may2019")


@pytest.fixture(scope="module")
def lists():
    return wordlists.load_all()


@pytest.fixture(scope="module")
def words(may2019, lists):
    names = ["male_names", "female_names", "career", "family", "pleasant", "unpleasant_c3", "math", "arts",
             "male_terms", "female_terms", "science", "european_american_names", "african_american_names"]
    return [may2019.inflected(w) for n in names for w in lists[n].words]


@pytest.fixture(scope="module")
def family(may2019, words, tmp_path_factory):
    fam = perturb.plan(may2019)
    candidates = perturb.materialize(fam, may2019, tmp_path_factory.mktemp("cand"))
    checked = perturb.check(fam, may2019, candidates, words)
    return checked, perturb.materialize(checked, may2019, tmp_path_factory.mktemp("final"))


def test_every_rule_has_a_worked_example():
    assert sorted(EXPECTED) == sorted(RULES)
    assert {r.family for r in perturb.builtin_rules()} >= {"determiners", "tense", "contraction", "degree",
                                                          "punctuation", "casing", "hedging", "politeness",
                                                          "clause order", "synonymous frame"}


@pytest.mark.parametrize("rule", RULES)
def test_rule_keeps_the_slot_renders_grammatically_and_carries_provenance(rule, family, may2019, lists, words):
    fam, vsets = family
    (v,) = [v for v in fam.variants if v.rule == rule]
    vset = vsets[v.name]
    assert v.name == f"may2019~{rule}" and v.parent == "may2019" and v.changes
    article = grammar.filters(may2019.grammar)["article"]
    by_text = {w.text: w for w in words}
    for c in v.changes:
        # the slot: the same slot expressions as the parent line
        slot = re.compile(r"\{\{[^}]*\b(word|singular|plural)\b")
        assert sorted(slot.findall(c.text)) == sorted(slot.findall(c.parent_text)), c
        # the variant's line in its template set is the rewritten one, its number kept
        (t,) = [t for t in vset.templates(c.file) if t.line == c.line]
        assert t.text == c.text and t.id == f"{v.name}/{c.file}:{c.line}"
        # renders, with the word's span, and no grammar error its parent line did not have
        for w in [w for w in words if may2019.file_for(w) == c.file][:12]:
            out = t.render(w)
            if out is None:
                continue
            text, start, end = out
            assert start is not None and text[start:end].lower() in (w.text.lower(), w.singular.lower(), w.plural.lower())
            (p,) = [p for p in may2019.templates(c.file) if p.line == c.line]
            before = perturb.grammar_errors(*_with_span(p.render(w)), w.singular, w.plural, article) if p.render(w) else set()
            assert perturb.grammar_errors(text, (start, end), w.singular, w.plural, article) <= before
    # provenance: every rewritten line names its rule and parent template
    rows = perturb.provenance(v, vset)
    assert [(r["rule"], r["parent_template_id"], r["template_id"]) for r in rows] == \
        [(rule, c.parent_id, f"{v.name}/{c.file}:{c.line}") for c in v.changes]
    assert all(len(r["variant_digest"]) == 16 for r in rows)
    # the worked example, rendered, by hand
    parent_id, wl, word, sentence = EXPECTED[rule]
    (c,) = [c for c in v.changes if c.parent_id == parent_id]
    (t,) = [t for t in vset.templates(c.file) if t.line == c.line]
    (w,) = [may2019.inflected(x) for x in lists[wl].words if x.text == word]
    assert t.render(w)[0] == sentence


def _with_span(out):
    text, start, end = out
    return text, (start, end)


def test_grammar_drops_lines_that_break_agreement_with_count_and_reason(family):
    fam, _ = family
    dropped = {(d.variant, d.template): d.reason for d in fam.dropped}
    # "The {{ plural }} are here." -> "This executives are here.": a singular determiner before a plural
    assert "'this' with the plural 'executives'" in dropped[("may2019~det-the-this", "may2019/count_noun:14")]
    assert "'these' with the singular 'executive'" in dropped[("may2019~det-the-these", "may2019/count_noun:7")]
    assert len(fam.dropped) == 4
    kept = {c.parent_id for v in fam.variants if v.rule == "det-the-this" for c in v.changes}
    assert kept == {"may2019/count_noun:7", "may2019/count_noun:8"}   # the singular lines survive


def test_grammar_errors_by_hand():
    art = grammar.inflect_article
    assert perturb.grammar_errors("This is a executive.", (10, 19), "executive", "executives", art) == \
        {"'a executive' (the article is 'an')"}
    assert perturb.grammar_errors("This is an executive.", (11, 20), "executive", "executives", art) == set()
    assert perturb.grammar_errors("These executive is here.", (6, 15), "executive", "executives", art)
    assert perturb.grammar_errors("They is here.", (None, None), None, None, art) == \
        {"a plural subject with a singular verb: 'They is'"}
    assert perturb.grammar_errors("This is is John.", (11, 15), "John", "Johns", art) == {"a doubled word: 'is is'"}


def test_family_size_is_known_before_anything_renders_and_bounded(may2019, monkeypatch):
    def boom(*a, **k):
        raise AssertionError("rendered")

    monkeypatch.setattr(Template, "render", boom)
    fam = perturb.plan(may2019)
    assert fam.size == len(RULES) == 19 and fam.limit == perturb.DEFAULT_MAX_VARIANTS
    with pytest.raises(UsageError, match=r"19 variants, over the bound of 5 \(raise it with --max-variants"):
        perturb.plan(may2019, limit=5)
    assert perturb.plan(may2019, limit=19).size == 19
    assert [v.rule for v in perturb.plan(may2019, only=["tense-past", "contraction"]).variants] == \
        ["tense-past", "contraction"]
    with pytest.raises(UsageError, match="unknown perturbation rule 'nope'"):
        perturb.plan(may2019, only=["nope"])


def _user_set(root, perturb_toml: str):
    folder = root / "mine"
    folder.mkdir(parents=True)
    (folder / "name.j2").write_text("This is {{ word }}.\n{{ word|capfirst }} is here.\n")
    (folder / "_set.toml").write_text('description = "mine"\n' + perturb_toml)
    return templates.load_set("mine", root)


def test_user_rules_and_paraphrases_from_set_toml(tmp_path, lists):
    tset = _user_set(tmp_path, """
[perturb]
max_variants = 30
[[perturb.rules]]
name = "right-here"
subs = [['is here\\.', 'is right here.']]
[[perturb.paraphrases]]
template = "name:1"
text = "Meet {{ word }}."
name = "meet"
""")
    fam = perturb.plan(tset, rules=[])
    assert [(v.name, v.family, [c.text for c in v.changes]) for v in fam.variants] == [
        ("mine~right-here", "user", ["{{ word|capfirst }} is right here."]),
        ("mine~meet", "paraphrase", ["Meet {{ word }}."])]
    assert fam.variants[0].source.endswith("_set.toml") and fam.limit == 30
    vsets = perturb.materialize(fam, tset, tmp_path / "v")
    john = next(w for w in lists["male_names"].words if w.text == "John")
    assert [t.render(john)[0] for t in vsets["mine~meet"].templates("name")] == ["Meet John.", "John is here."]
    assert vsets["mine~meet"].templates("name")[1].id == "mine~meet/name:2"
    # with the built-in rules too, the set's own come after them
    assert perturb.plan(tset).variants[-2].name == "mine~right-here"


def test_a_rule_that_removes_the_slot_is_refused(tmp_path):
    tset = _user_set(tmp_path, """
[[perturb.rules]]
name = "drop-word"
subs = [['\\{\\{ word \\}\\}', 'someone']]
""")
    with pytest.raises(InputError, match=r"perturbation rule 'drop-word' \(.*_set.toml\) removes the slot from mine/name:1"):
        perturb.plan(tset, rules=[])


@pytest.mark.parametrize("bad, message", [
    ('[[perturb.rules]]\nname = "x"\n', "give exactly one of subs, frame, case"),
    ('[[perturb.rules]]\nname = "x"\nsubs = [["(", "y"]]\n', "bad regex"),
    ('[[perturb.rules]]\nname = "x"\nframe = "no slot"\n', "frame must be a string with one {}"),
    ('[[perturb.paraphrases]]\ntemplate = "name:9"\ntext = "Meet {{ word }}."\n', "name.j2 has no template on line 9"),
    ('[[perturb.paraphrases]]\ntemplate = "name:1"\ntext = "Meet them."\n', "does not keep the slot"),
    ('[perturb]\nmax_variants = 0\n', "max_variants must be a whole number >= 1"),
])
def test_bad_declarations_name_the_file(tmp_path, bad, message):
    tset = _user_set(tmp_path, bad)
    with pytest.raises(StimkitError, match=re.escape(message)):
        perturb.plan(tset, rules=[])
