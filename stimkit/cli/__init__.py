"""The stimkit command line: a thin layer over the library (parse, call, print).

One module per command group; importing them registers their commands on `app`."""

from __future__ import annotations

from . import audit, encode, report, stimuli, tests  # noqa: F401  (registers the commands)
from .common import app


def main():
    app()
