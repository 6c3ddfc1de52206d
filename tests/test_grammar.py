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
