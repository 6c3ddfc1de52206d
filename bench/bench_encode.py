"""Encoding speed, as whole processes on the same texts (the catalog's stimuli):

  (a) raw:     a plain script: load the model, tokenise once, length-sorted batches of 64,
               mean pooling, no store;
  (b) stimkit: `stimkit encode -e <spec> --all` into a fresh copy of a generated store;

texts/s of each from process start to exit, and (b)/(a) (goal >= 95% for MiniLM on CPU,
>= 80% of the bf16 forward on a GPU). Then the warm no-op (`encode --all` with everything
stored) per embedded encoder, as a whole process and inside it (goal < 1 s), and the peak
memory of encoding many texts (goal: flat, < 2 GB for MiniLM on CPU).

    python bench/bench_encode.py                       MiniLM on CPU, the three embedded encoders
    python bench/bench_encode.py --model PATH --device cuda --dtype bfloat16   any model on a GPU
    python bench/bench_encode.py --memory 20000        also encode N synthetic texts for memory
    python bench/bench_encode.py --config bert-base --device cuda --dtype bfloat16 --raw-batch 256
    python bench/bench_encode.py --config decoder-1b --device cuda --dtype bfloat16 --raw-batch 256 --ray
                                                       random weights from a real architecture's config
                                                       (BERT-base 110M; a 1.1B Llama, TinyLlama's shape)
    python bench/bench_encode.py --sweep 1000          layer=all against one single-layer encode

--config writes the model (random weights, MiniLM's tokenizer: no download) to a temporary
folder; a 1.1B model on CPU takes minutes per pass: it is meant for a GPU. --ray adds
`stimkit encode --engine ray` on the same texts (goal: <= 10% over the local engine).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_WAIT_POLICY": "PASSIVE", "HF_HUB_OFFLINE": "1"}
# run a module and print its peak RSS (MiB) to stderr at exit, whatever exit it takes
RSS = ("import resource, runpy, sys\nsys.argv = sys.argv[1:]\ntry:\n    runpy.run_module(sys.argv[0], run_name='__main__')\n"
       "finally:\n    print(f'peak_rss_mib {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}', file=sys.stderr)\n")

RAW = """
import sys, torch
from transformers import AutoModel, AutoTokenizer
model_path, texts_file, device, dtype = sys.argv[1:5]
texts = open(texts_file, encoding="utf-8").read().split("\\n")
tok = AutoTokenizer.from_pretrained(model_path)
model = AutoModel.from_pretrained(model_path, dtype=getattr(torch, dtype)).to(device).eval()
enc = tok(texts, truncation=True)
order = sorted(range(len(texts)), key=lambda i: -len(enc["input_ids"][i]))
batch = int(sys.argv[5])
with torch.inference_mode():
    for s in range(0, len(order), batch):
        rows = order[s:s + batch]
        inputs = tok.pad({k: [enc[k][i] for i in rows] for k in enc}, return_tensors="pt").to(device)
        hidden = model(**inputs).last_hidden_state.float()
        mask = inputs["attention_mask"].unsqueeze(-1).float()
        ((hidden * mask).sum(1) / mask.sum(1)).cpu().numpy()
"""


LIBRARY = """
import sys
from stimkit import store
from stimkit.catalog.definitions import fetch
from stimkit.encoders import embeddings, resolve
con = store.connect(sys.argv[1])
stimuli = fetch(con, "SELECT * FROM current_stimuli", "all stimuli")
embeddings.encode_missing(con, resolve(sys.argv[2]), stimuli)
"""

CONFIGS = {  # (class, keyword arguments): the real architectures' shapes, vocabulary = MiniLM's tokenizer
    "bert-base": ("BertConfig", dict(vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                                     intermediate_size=3072)),
    "decoder-1b": ("LlamaConfig", dict(vocab_size=30522, hidden_size=2048, num_hidden_layers=22, num_attention_heads=32,
                                       num_key_value_heads=4, intermediate_size=5632, max_position_embeddings=2048)),
}


def model_from_config(name: str, folder: Path) -> Path:
    """A model folder with random weights in a real architecture's shape, and MiniLM's tokenizer."""
    import json

    import torch
    import transformers
    from stimkit.encoders.transformer import minilm_path

    target = folder / name
    target.mkdir()
    for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        shutil.copy(Path(minilm_path()) / f, target / f)
    settings = json.loads((target / "tokenizer_config.json").read_text())
    settings["model_input_names"] = ["input_ids", "attention_mask"]  # a decoder takes no token types
    (target / "tokenizer_config.json").write_text(json.dumps(settings))
    cls, kwargs = CONFIGS[name]
    torch.manual_seed(0)
    model = transformers.AutoModel.from_config(getattr(transformers, cls)(**kwargs))
    print(f"{name}: {sum(p.numel() for p in model.parameters()) / 1e6:.0f}M parameters (random weights)")
    model.save_pretrained(target)
    return target


def timed(args: list[str], env=None) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(args, env=env or ENV, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"failed: {' '.join(args)}\n{done.stderr[-2000:]}")
    return seconds, done.stdout + done.stderr


def peak(output: str) -> float:
    return float(next(line.split()[1] for line in output.splitlines() if line.startswith("peak_rss_mib")))


def stimkit(db: Path, *args: str) -> list[str]:
    return [sys.executable, "-c", RSS, "stimkit", "--db", str(db), *args]


def catalog_store(folder: Path) -> tuple[Path, Path]:
    """A generated store, and the texts `encode --all` reads, one per line."""
    db = folder / "generated.duckdb"
    timed(stimkit(db, "generate"))
    import duckdb
    con = duckdb.connect(str(db), read_only=True)
    texts = [r[0] for r in con.execute("SELECT DISTINCT stimulus FROM current_stimuli").fetchall()]
    con.close()
    path = folder / "texts.txt"
    path.write_text("\n".join(texts), encoding="utf-8")
    return db, path


def speed(folder: Path, db: Path, texts_file: Path, model: str, spec: str, device: str, dtype: str, repeats: int,
          raw_batch: int, ray: bool = False):
    n = len(texts_file.read_text(encoding="utf-8").split("\n"))
    raw_s, ours_s, lib_s, ours_peak = [], [], [], 0.0
    for r in range(repeats):  # alternated, best of each: the machine is shared
        raw_s.append(timed([sys.executable, "-c", RAW, model, str(texts_file), device, dtype, str(raw_batch)])[0])
        fresh = folder / f"fresh{r}.duckdb"
        shutil.copy(db, fresh)
        seconds, output = timed(stimkit(fresh, "encode", "-e", spec, "--all"))
        ours_s.append(seconds)
        ours_peak = max(ours_peak, peak(output))
        shutil.copy(db, fresh)
        lib_s.append(timed([sys.executable, "-c", LIBRARY, str(fresh), spec])[0])
    raw, ours = n / min(raw_s), n / min(ours_s)
    print(f"{n} texts, {spec} on {device} ({dtype}), whole processes, best of {repeats} (raw: batches of {raw_batch}):")
    print(f"  (a) raw forward     {raw:8.0f} texts/s  ({min(raw_s):.1f} s; all: {', '.join(f'{s:.1f}' for s in raw_s)})")
    print(f"  (b) stimkit encode  {ours:8.0f} texts/s  ({min(ours_s):.1f} s; all: {', '.join(f'{s:.1f}' for s in ours_s)}; "
          f"peak RSS {ours_peak:.0f} MiB)")
    if ray:
        ray_s = []
        for r in range(repeats):
            fresh = folder / f"ray{r}.duckdb"
            shutil.copy(db, fresh)
            ray_s.append(timed(stimkit(fresh, "encode", "-e", spec, "--all", "--engine", "ray"))[0])
        print(f"  (d) stimkit encode --engine ray  {n / min(ray_s):8.0f} texts/s ({min(ray_s):.1f} s); "
              f"overhead over (b): {min(ray_s) / min(ours_s) - 1:+.1%}  (goal <= +10%)")
    lib = n / min(lib_s)
    print(f"  (c) the same encode through the library, without the CLI's imports: {lib:.0f} texts/s "
          f"({min(lib_s):.1f} s; all: {', '.join(f'{s:.1f}' for s in lib_s)})")
    print(f"  (b)/(a) = {ours / raw:.1%}   (c)/(a) = {lib / raw:.1%}")
    return folder / "fresh0.duckdb"


NOOP = """
import sys, time
from stimkit import store
from stimkit.catalog.definitions import select_stimuli
from stimkit.encoders import embeddings, resolve
con = store.connect(sys.argv[1])
t = time.perf_counter()
report = embeddings.encode_missing(con, resolve(sys.argv[2]), select_stimuli(con, None, None, True))
print(report["encoded"], time.perf_counter() - t, "torch" in sys.modules)
"""


def warm_noop(folder: Path, db: Path, specs: list[str]):
    print("warm no-op `stimkit encode -e SPEC --all` (everything stored):")
    startup = min(timed([sys.executable, "-m", "stimkit", "--help"])[0] for _ in range(3))
    for spec in specs:
        timed(stimkit(db, "encode", "-e", spec, "--all"))  # cold, to fill the store
        whole = min(timed(stimkit(db, "encode", "-e", spec, "--all"))[0] for _ in range(3))
        inside = [timed([sys.executable, "-c", NOOP, str(db), spec])[1].split() for _ in range(3)]
        assert all(i[0] == "0" for i in inside)
        print(f"  {spec:<14} whole process {whole:5.2f} s   inside (resolve + fingerprint + lookup) "
              f"{min(float(i[1]) for i in inside):5.3f} s   torch imported: {inside[0][2]}   "
              f"goal < 1 s: {'met' if whole < 1 else 'MISSED (process start ' + f'{startup:.2f} s)'}")
    print(f"  (`stimkit --help` alone, the CLI's start-up: {startup:.2f} s)")


MEMORY = """
import sys, polars as pl
from stimkit import store
from stimkit.encoders import embeddings, resolve
n = int(sys.argv[2])
words = ["engineer", "nurse", "gladiola", "spider", "happy", "competent", "kind", "garden", "tulip", "war"]
texts = [f"Text {i}: the {words[i % 10]} and the {words[(i // 10) % 10]} {'really ' * (i % 13)}met." for i in range(n)]
con = store.connect(sys.argv[1])
embeddings.encode_missing(con, resolve("minilm"), pl.DataFrame({"stimulus": texts}))
"""


def memory(folder: Path, counts: list[int]):
    print("peak RSS encoding N synthetic texts with minilm on CPU (streamed: should not grow with N):")
    for n in counts:
        seconds, output = timed([sys.executable, "-c", RSS.replace("runpy.run_module(sys.argv[0], run_name='__main__')",
                                                                   "exec(sys.argv[0])"), MEMORY, str(folder / f"m{n}.duckdb"), str(n)])
        size = (folder / f"m{n}.duckdb").stat().st_size / 2**20
        print(f"  {n:>7} texts  {seconds:6.1f} s  {n / seconds:5.0f} texts/s  peak RSS {peak(output):5.0f} MiB  store {size:.0f} MiB")


SWEEP = """
import sys, time, polars as pl
from stimkit import store
from stimkit.encoders import embeddings, layers, resolve
texts = open(sys.argv[3], encoding="utf-8").read().split("\\n")[:int(sys.argv[4])]
con = store.connect(sys.argv[1])
enc = resolve(sys.argv[2])
t = time.perf_counter()
report = embeddings.encode_missing(con, enc, pl.DataFrame({"stimulus": texts}))
print(len(layers(enc)), report["encoded"], time.perf_counter() - t)
"""


def sweep(folder: Path, texts_file: Path, spec: str, n: int):
    """layer=all (every hidden layer stored) against one single-layer encode of the same n texts."""
    single = min(float(timed([sys.executable, "-c", SWEEP, str(folder / f"one{r}.duckdb"), spec, str(texts_file),
                              str(n)])[1].split()[2]) for r in range(2))
    runs = [timed([sys.executable, "-c", SWEEP, str(folder / f"all{r}.duckdb"), f"{spec},layer=all", str(texts_file),
                   str(n)])[1].split() for r in range(2)]
    every = min(float(r[2]) for r in runs)
    print(f"layer sweep, {runs[0][1]} texts: one layer {single:.1f} s, layer=all ({runs[0][0]} layers stored) {every:.1f} s "
          f"= {every / single:.2f} x one encode (L separate encodes: {int(runs[0][0])} x)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="a model folder (default: MiniLM)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--raw-batch", type=int, default=64, help="texts per batch of the raw forward (256 on a GPU)")
    parser.add_argument("--memory", type=int, nargs="*", default=[], help="text counts for the memory run")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--config", choices=sorted(CONFIGS), help="a random-weights model of this architecture")
    parser.add_argument("--ray", action="store_true", help="also stimkit encode --engine ray")
    parser.add_argument("--sweep", type=int, nargs="?", const=1000, default=0, metavar="N",
                        help="time layer=all against one layer on N texts (default 1000)")
    parser.add_argument("--skip-noop", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from stimkit.encoders.transformer import minilm_path

    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        model = str(model_from_config(args.config, folder)) if args.config else args.model or minilm_path()
        spec = "minilm" if model == minilm_path() else f"hf:{model}"
        spec += f",device={args.device},dtype={args.dtype}" if (args.device, args.dtype) != ("cpu", "float32") else ""
        db, texts = catalog_store(folder)
        if not args.skip_speed:
            speed(folder, db, texts, model, spec, args.device, args.dtype, args.repeats, args.raw_batch, args.ray)
        if args.sweep:
            sweep(folder, texts, spec, args.sweep)
        if not args.skip_noop:
            warm_noop(folder, db, ["glove-6b-50d", "minilm", "use-m3"])
        if args.memory:
            memory(folder, args.memory)


if __name__ == "__main__":
    main()
