"""The views layer: every table a person or a paper reads is rendered here, from the library's
result objects (a family's corrected results, with the family). The CLI and the report import
it; the run layer never does (tests/test_architecture.py)."""
