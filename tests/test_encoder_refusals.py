"""Encoder refusals are one line (issue 49, findings 21 and 22): a spec with a line break
outside a quoted value, and a model folder whose pickled weights torch's safe unpickler
refuses, which must never be answered with torch's advice to load it unsafely."""

from __future__ import annotations

import pickle
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stimkit.cli import app
from stimkit.encoders import resolve
from stimkit.errors import StimkitError

invoke = CliRunner().invoke
BREAKS = ["\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\u2029"]


@pytest.mark.parametrize("brk", BREAKS)
@pytest.mark.parametrize("spec", ["glove-6b-50d{b}foo", "foo{b}bar=glove-6b-50d", "glove-6b-50d,lang=en{b}",
                                  "minilm,pooling=mean{b},layer=top", "{b}glove-6b-50d"])
def test_a_line_break_outside_quotes_is_refused_in_one_line(spec, brk):
    spec = spec.format(b=brk)
    with pytest.raises(StimkitError) as e:
        resolve(spec)
    assert str(e.value).splitlines() == [str(e.value)] and "line break" in str(e.value)
    assert repr(spec) in str(e.value)


def test_a_display_name_with_a_line_break_is_never_stored(tmp_path):
    """It ran and stored `foo\\nbar` as the encoder's display name, a name that breaks every table."""
    r = invoke(app, ["--db", str(tmp_path / "s.duckdb"), "test", "weat6", "-e", "foo\nbar=glove-6b-50d"])
    assert r.exit_code == 1, r.output
    assert len(r.stderr.strip().splitlines()) == 1 and "failed: test *, encoder foo\\nbar=glove-6b-50d" in r.stderr
    assert "line break" in r.stderr


@pytest.mark.filterwarnings("ignore::stimkit.encoders.base.EncoderWarning")  # minilm is an st model: said, not the point
def test_a_quoted_template_may_still_hold_a_line_break():
    from stimkit.encoders.transformer import minilm_path

    enc = resolve(f'hf:{minilm_path()},template="query:\n{{text}}"')
    assert enc.options["template"] == "query:\n{text}"
    assert resolve(enc.spec).fingerprint == enc.fingerprint  # its spec quotes the break as \n


# ----------------------------------------------------------------------- a malicious pickle

class Payload:
    """Unpickling this runs a command: what a planted pytorch_model.bin would do."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        import os

        return os.system, (f"touch {self.marker}",)


def test_a_malicious_pickle_in_a_model_folder_is_refused_as_unsafe_in_one_line(tmp_path):
    from stimkit.encoders.transformer import minilm_path

    model = Path(minilm_path())
    folder = tmp_path / "evil"
    folder.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        shutil.copy(model / name, folder / name)
    marker = tmp_path / "ran"
    (folder / "pytorch_model.bin").write_bytes(pickle.dumps({"embeddings.weight": Payload(marker)}))
    enc = resolve(f"hf:{folder}")
    with pytest.raises(StimkitError) as e:
        enc.encode(["a cake"], [None])
    message = str(e.value)
    assert message.splitlines() == [message]
    assert str(folder / "pytorch_model.bin") in message and "refused as unsafe" in message
    assert "weights_only" not in message and "internal error" not in message
    assert not marker.exists()
    r = invoke(app, ["--db", str(tmp_path / "s.duckdb"), "test", "weat6", "-e", f"hf:{folder}"])
    assert "refused as unsafe" in r.stderr and "weights_only" not in r.stderr and "pickle protocol" not in r.stderr
    assert not marker.exists()
