"""A study is plain data: its tests, encoders, options, correction, alpha and table layout.
The published papers ship as study files (queries/studies/*.toml); a researcher's own is a
TOML file of the same form."""
