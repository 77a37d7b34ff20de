"""ragapp/evaluation/machine.py: the machine every timing of the local model carries."""

import os
from pathlib import Path

from ragapp.evaluation.machine import describe_machine, machine_line, vector_set

EPYC_AVX2 = """processor\t: 0
model name\t: AMD EPYC
flags\t\t: fpu sse sse2 avx f16c fma avx2 bmi2
"""
XEON_AVX512 = """processor\t: 0
model name\t: Intel(R) Xeon(R) Platinum 8480+
flags\t\t: fpu avx avx2 avx512f avx512bw avx512_vnni amx_tile
"""


def test_a_cpu_without_avx512_is_named_as_such():
    described = describe_machine(EPYC_AVX2, cores=2)
    assert described == {"cpu": "AMD EPYC", "cores": 2, "vector": "AVX2, no AVX-512"}
    assert machine_line(described) == "machine: AMD EPYC, 2 cores, AVX2, no AVX-512"


def test_avx512_names_its_extensions():
    assert describe_machine(XEON_AVX512, cores=2)["vector"] == "AVX-512 (VNNI, AMX)"
    assert vector_set({"avx512f"}) == "AVX-512"
    assert vector_set({"sse2"}) == "no AVX2"


def test_a_machine_without_cpuinfo_still_gets_a_line():
    assert machine_line(describe_machine("", cores=1)) == "machine: unknown CPU, 1 core, no AVX2"


def test_this_machine_is_read_from_proc():
    cpuinfo = Path("/proc/cpuinfo").read_text()
    described = describe_machine()
    assert described == describe_machine(cpuinfo, cores=len(os.sched_getaffinity(0)))
    assert described["cpu"] != "unknown CPU"  # this Linux machine names its CPU


def test_cores_without_sched_getaffinity_come_from_the_cpu_count(monkeypatch):
    # macOS and Windows have no sched_getaffinity; eval_rag must still write its report there.
    monkeypatch.delattr(os, "sched_getaffinity")
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert describe_machine(EPYC_AVX2)["cores"] == 8
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert describe_machine(EPYC_AVX2)["cores"] == 1
