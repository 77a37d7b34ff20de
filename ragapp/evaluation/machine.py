"""What a timing ran on: the CPU, its cores, and the widest vector instructions llama.cpp can use.

The local model's speed depends on the machine far more than on most levers: on 2026-12-05 a
2-core AMD EPYC with AVX2 only read prompts at 20 tokens a second, where the 2-core machine with
AVX-512 of 2026-12-03 read 89 (docs/performance.md, "A machine without AVX-512"). A timing without
its machine cannot be compared with another, so each evaluation report records it (`eval_rag`
prints it with the figures) and the benchmarks that time the local model print it first. No
Django here: the benchmarks call it before they set Django up.
"""

from __future__ import annotations

import os
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")


def _field(cpuinfo: str, name: str) -> str:
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == name:
            return value.strip()
    return ""


def vector_set(flags: set[str]) -> str:
    """The CPU's widest vector instruction set, as llama.cpp's CPU kernels choose theirs.

    AMX is named when the CPU has it, although the product's build switches it off
    (docs/performance.md, "The local server's build").
    """
    if "avx512f" in flags:
        extras = [
            name for flag, name in (("avx512_vnni", "VNNI"), ("amx_tile", "AMX")) if flag in flags
        ]
        return "AVX-512" + (f" ({', '.join(extras)})" if extras else "")
    if "avx2" in flags:
        return "AVX2, no AVX-512"
    return "no AVX2"


def _usable_cores() -> int:
    # The cores this process may run on (a container's limit), where the OS says; macOS and
    # Windows have no sched_getaffinity.
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def describe_machine(cpuinfo: str | None = None, cores: int | None = None) -> dict:
    """The machine as a dict: `cpu` (the model name), `cores`, `vector` (see `vector_set`)."""
    if cpuinfo is None:
        cpuinfo = CPUINFO.read_text() if CPUINFO.exists() else ""
    return {
        "cpu": _field(cpuinfo, "model name") or "unknown CPU",
        "cores": cores if cores is not None else _usable_cores(),
        "vector": vector_set(set(_field(cpuinfo, "flags").split())),
    }


def machine_line(machine: dict) -> str:
    """`describe_machine`'s dict as one line, as `eval_rag` and the benchmarks print it."""
    cores = f"{machine['cores']} core{'' if machine['cores'] == 1 else 's'}"
    return f"machine: {machine['cpu']}, {cores}, {machine['vector']}"
