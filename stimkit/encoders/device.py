"""Where a model runs and in what precision, decided WITHOUT importing torch.

The choice goes into the encoder fingerprint (a bf16 vector is not an fp32 vector), and the
fingerprint must be cheap: a warm no-op `encode` may not pay torch's import. So `auto` is
resolved from the driver's files (/proc/driver/nvidia), torch's own build (does it ship
libtorch_cuda?) and nvidia-smi for the compute capability; loading the model checks it.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import platform
import subprocess
import sys
from pathlib import Path

from .. import StimkitError

DEVICES = ("auto", "cpu", "cuda", "mps")
DTYPES = ("auto", "float32", "bfloat16", "float16")


def check_device(device: str, where: str) -> str:
    base, _, index = str(device).partition(":")
    if base not in DEVICES or (index and (base != "cuda" or not index.isdigit())):
        raise StimkitError(f"{where}: device must be auto, cpu, cuda, cuda:N or mps, not {device!r}")
    return str(device)


def check_dtype(dtype: str, where: str) -> str:
    if dtype not in DTYPES:
        raise StimkitError(f"{where}: dtype must be {', '.join(DTYPES)}, not {dtype!r}")
    return dtype


@functools.lru_cache(maxsize=None)
def torch_has_cuda() -> bool:
    spec = importlib.util.find_spec("torch")  # finds the package, does not import it
    if spec is None or not spec.origin:
        return False
    return any((Path(spec.origin).parent / "lib").glob("libtorch_cuda*"))


@functools.lru_cache(maxsize=None)
def cuda_capabilities() -> tuple[float, ...]:
    """Compute capabilities of the visible NVIDIA GPUs; () when torch could not use one."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return ()
    gpus = Path("/proc/driver/nvidia/gpus")
    if not (gpus.is_dir() and any(gpus.iterdir()) and torch_has_cuda()):
        return ()
    try:
        shown = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
                               capture_output=True, text=True, timeout=10).stdout.split()
        return tuple(float(c) for c in shown) or (0.0,)
    except (OSError, ValueError, subprocess.SubprocessError):
        return (0.0,)  # a GPU, capability unknown: no bf16 by default


def resolve_device(device: str) -> str:
    if device != "auto":
        return device
    if cuda_capabilities():
        return "cuda"
    if sys.platform == "darwin" and platform.machine() == "arm64":
        return "mps"
    return "cpu"


def resolve_dtype(dtype: str, device: str) -> str:
    """auto: bf16 on a GPU that has it (compute capability 8.0, Ampere, and up), fp32 elsewhere."""
    if dtype != "auto":
        return dtype
    caps = cuda_capabilities()
    return "bfloat16" if device.startswith("cuda") and caps and min(caps) >= 8.0 else "float32"


def torch_device(device: str):
    """The torch device, checked against what torch can really use (imports torch)."""
    import torch

    if device.startswith("cuda") and not torch.cuda.is_available():
        raise StimkitError(f"device {device!r}: torch cannot use CUDA here (pass device=cpu)")
    if device == "mps" and not torch.backends.mps.is_available():
        raise StimkitError("device 'mps': torch cannot use MPS here (pass device=cpu)")
    return torch.device(device)
