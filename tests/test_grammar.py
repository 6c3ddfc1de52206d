import pytest

from stimkit.stimuli import grammar
from stimkit.stimuli.wordlists import load_lexicon


@pytest.mark.parametrize("word, expected", [
    ("abuse", "an"), ("caress", "a"), ("honor", "an"), ("European American", "a"),
    ("Ukrainian American", "a"), ("African American", "an"), ("executive", "an"), ("union", "an"),
])
def test_article(word, expected):
    assert grammar.article(word) == expected


@pytest.mark.parametrize("word, expected", [
    ("caress", "caresses"), ("family", "families"), ("day", "days"), ("church", "churches"),
    ("brush", "brushes"), ("woman", "women"), ("fair-skinned woman", "fair-skinned women"),
    ("woman of color", "women of color"), ("man", "men"), ("African American", "African Americans"),
    ("German", "Germans"),
])
def test_plural(word, expected):
    assert grammar.plural(word) == expected


def test_singular_and_marked_text():
    assert grammar.singular("children") == "child"
    assert grammar.singular("relatives") == "relative"
    marked = "The " + grammar.mark("caress")
    assert grammar.plural(marked) == "The " + grammar.mark("caresses")
    assert grammar.find_span(grammar.capfirst(grammar.with_article(grammar.mark("abuse")))) == ("An abuse", 3, 8)


def test_capfirst_keeps_the_rest():
    assert grammar.capfirst("european American") == "European American"
    assert grammar.capfirst(grammar.mark("he") + " is here.") == grammar.mark("He") + " is here."


@pytest.mark.parametrize("word, kind", [
    ("Einstein", "name"), ("NASA", "mass_noun"), ("African American", "count_noun"), ("loyal", "adjective"),
    ("kill", "verb"), ("freedom", "mass_noun"), ("he", "pronoun_subject"), ("her", "pronoun_object"),
    ("hers", "pronoun_possessive"), ("friend", "count_noun"),
])
def test_default_kind_inference(word, kind):
    assert grammar.infer_kind(word, load_lexicon()) == kind


def test_person_regex_is_the_generators():
    assert grammar.is_person("brother") and grammar.is_person("Irish American")
    assert not grammar.is_person("friend")  # the published sets say "A friend is a thing."
    assert not grammar.is_person("manager")  # whole words only


# Irregular plurals: inflect (every set but the paper's) gets them right; the paper's rules do not.
IRREGULAR = {"child": "children", "person": "people", "woman": "women", "man": "men", "mouse": "mice",
             "goose": "geese", "tooth": "teeth", "foot": "feet", "ox": "oxen", "sheep": "sheep", "fish": "fish",
             "wife": "wives", "knife": "knives", "leaf": "leaves", "criterion": "criteria", "phenomenon": "phenomena",
             "analysis": "analyses", "salesperson": "salespeople", "policeman": "policemen", "mother-in-law": "mothers-in-law",
             "cactus": "cactuses", "potato": "potatoes", "hero": "heroes", "datum": "data", "louse": "lice"}


@pytest.mark.parametrize("singular, plural", IRREGULAR.items())
def test_inflect_plural_of_irregular_nouns(singular, plural):
    assert grammar.inflect_plural(singular) == plural
    assert grammar.inflect_plural("The " + grammar.mark(singular)) == "The " + grammar.mark(plural)


@pytest.mark.parametrize("word, expected", [("hour", "an"), ("university", "a"), ("honest", "an"), ("abuse", "an"),
                                            ("European American", "a"), ("one", "a"), ("union", "a")])
def test_inflect_article_by_sound(word, expected):
    assert grammar.inflect_article(grammar.mark(word)) == expected


def test_child_renders_children_outside_the_papers_sets(tmp_path):
    """A user's template set renders inflect's forms; may2019 keeps the published generator's
    ("childs", spec/STIMULI.md), so the published sets never move; a list's own forms win in both."""
    from stimkit.stimuli import generate, templates, wordlists

    (tmp_path / "lists").mkdir()
    (tmp_path / "lists" / "kin.toml").write_text(
        '[kin]\nwords = ["child", "person", "mouse", { word = "octopus", plural = "octopodes" }]\n', encoding="utf-8")
    (tmp_path / "sets" / "mine").mkdir(parents=True)
    (tmp_path / "sets" / "mine" / "count_noun.j2").write_text("These are {{ plural }}.\nThis is {{ singular|a }}.\n",
                                                             encoding="utf-8")
    lists = wordlists.load_all(tmp_path / "lists")
    rendered = {}
    for tset in ("mine", "may2019"):
        r = generate.render(generate.SetSpec("kin", tset), lists, {tset: templates.load_set(tset, tmp_path / "sets")})
        rendered[tset] = r.rows["stimulus"]
    assert rendered["mine"] == ["These are children.", "This is a child.", "These are people.", "This is a person.",
                                "These are mice.", "This is a mouse.", "These are octopodes.", "This is an octopus."]
    assert "These are childs." in rendered["may2019"] and "These are persons." in rendered["may2019"]
    assert "These are octopodes." in rendered["may2019"]
    assert templates.load_set("may2019").grammar == "may2019"
    assert templates.load_set("may2019_fixed").grammar == "inflect"  # its inherited may2019 lines included


def test_case_folded_duplicates_are_refused_naming_both(tmp_path):
    from stimkit import StimkitError
    from stimkit.stimuli import wordlists

    path = tmp_path / "ages.toml"
    path.write_text('[ages]\nwords = [\n  "Senior",\n  "junior",\n  "senior",\n]\n', encoding="utf-8")
    with pytest.raises(StimkitError) as e:
        wordlists.parse_file(path)
    assert str(e.value) == (f"{path}:5: list 'ages': duplicate word 'senior': the same as 'Senior' (line 3) after "
                            "case folding and Unicode normalisation")
    path.write_text('[lig]\nwords = ["\ufb01le", "file"]\n', encoding="utf-8")  # the "fi" ligature folds to "fi"
    with pytest.raises(StimkitError, match="duplicate word 'file': the same as '\ufb01le'"):
        wordlists.parse_file(path)


def test_every_built_in_word_list_loads():
    from stimkit.stimuli import wordlists

    assert len(wordlists.load_all()) > 40
