"""Derive the WEFAT property tables in properties/ from the reference TSVs (run once).

    python scripts/derive_properties.py tests/fixtures/wefat

The outputs are committed; the TSVs are not shipped. Rules (tests/fixtures/wefat/SOURCE.md):
- bls2015_percent_women: for each occupation word, the BLS 2015 rows whose labels
  (label1..label5) contain the word, their percent women weighted by total employed.
- census1990_percent_female: the census file's gender score g = (m - f) / (m + f), where
  f and m are the name's shares of the female and male populations, so the percent of
  bearers who are female (equal-sized populations) is 100 f / (f + m) = 50 (1 - g).
"""

from __future__ import annotations

import csv
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BLS_SOURCE = ("U.S. Bureau of Labor Statistics 2015 (CPS annual averages, employed persons by detailed occupation), "
              "as compiled in the R package cbn (Will Lowe), inst/extdata/professionsBLS2015.tsv @ 50a2a2e")
CENSUS_SOURCE = ("1990 U.S. census first names, as compiled in the R package cbn (Will Lowe), "
                 "inst/extdata/censusNames1990.tsv @ 3a578d5")


def read_tsv(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def bls_percent_women(rows: list[dict], word: str) -> float | None:
    """Employed-weighted mean of percent women over the rows labelled with `word`."""
    hits = [r for r in rows if word in {r[f"label{i}"] for i in range(1, 6)}]
    if not hits:
        return None
    employed = sum(float(r["TotalEmployed"]) for r in hits)
    return sum(float(r["TotalEmployed"]) * float(r["Women"]) for r in hits) / employed


def census_percent_female(rows: list[dict]) -> dict[str, float]:
    return {r["Name"].title(): 50.0 * (1.0 - float(r["Female-1Male1Unisex0"])) for r in rows}


def write_table(path: Path, header: list[str], rows: list[tuple[str, float]], unit: str, source: str) -> None:
    with open(path, "w", newline="") as f:
        f.writelines(f"# {line}\n" for line in header)
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["word", "value", "unit", "source"])
        for word, value in rows:
            w.writerow([word, f"{value:.4f}", unit, source])


def main(reference: Path) -> None:
    lists = tomllib.loads((REPO / "wordlists" / "caliskan2017_wefat.toml").read_text())
    bls = read_tsv(reference / "professionsBLS2015.tsv")
    occupations = []
    for word in lists["occupations"]["words"]:
        value = bls_percent_women(bls, word)
        if value is None:
            print(f"no BLS row labelled {word!r}", file=sys.stderr)
            continue
        occupations.append((word, value))
    write_table(REPO / "properties" / "bls2015_percent_women.csv",
                ["bls2015_percent_women: percent women among employed persons, per occupation word",
                 "derived by scripts/derive_properties.py: employed-weighted mean over the BLS rows whose labels contain the word",
                 f"source: {BLS_SOURCE}"], occupations, "percent", "BLS 2015")
    census = census_percent_female(read_tsv(reference / "censusNames1990.tsv"))
    write_table(REPO / "properties" / "census1990_percent_female.csv",
                ["census1990_percent_female: percent of the name's bearers who are female",
                 "derived by scripts/derive_properties.py: 50 * (1 - gender score), score = (m - f) / (m + f)",
                 f"source: {CENSUS_SOURCE}"], sorted(census.items()), "percent", "US census 1990")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "tests" / "fixtures" / "wefat")
