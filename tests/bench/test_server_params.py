"""bench/server_params.py: each setting changes one llama.cpp parameter; ratios are to the
defaults measured in the same run."""

import sys

import pytest

READERS = {
    "repacking": lambda p: p.no_extra_bufts,
    "micro-batch": lambda p: p.n_ubatch,
    "flash attention": lambda p: p.flash_attn_type,
    "busy-polling": lambda p: (p.cpuparams.poll, p.cpuparams_batch.poll),
}
# Against the product's reader (unrepacked weights), each setting changes only its own parameter.
CHANGES = {
    "reader": set(),
    "writer": {"repacking"},
    "micro-batch 128": {"micro-batch"},
    "micro-batch 1024": {"micro-batch"},
    "flash attention on": {"flash attention"},
    "flash attention off": {"flash attention"},
    "no busy-polling": {"busy-polling"},
}


def test_each_setting_changes_only_what_it_names(load_bench):
    import xllamacpp

    bench = load_bench("server_params")
    untouched = xllamacpp.CommonParams()
    untouched.no_extra_bufts = True  # as the product's reader server is started
    assert set(bench.SETTINGS) == set(CHANGES)
    for name, expected in CHANGES.items():
        params = xllamacpp.CommonParams()
        bench.SETTINGS[name](params)
        changed = {key for key, read in READERS.items() if read(params) != read(untouched)}
        assert changed == expected, name


def test_ratios_are_to_the_reader_of_the_same_round(load_bench, monkeypatch):
    bench = load_bench("server_params")
    speeds = dict(zip(bench.SETTINGS, [20, 10, 20, 20, 40, 20, 30], strict=True))
    # Round 2 reads a page that every setting reads twice as fast: the ratios stay.
    rows = [
        {"setting": name, "round": r, "prompt_per_s": speed * r, "answer_per_s": 10.0}
        for r in (1, 2)
        for name, speed in speeds.items()
    ]
    summary = bench.summarise(rows)
    assert summary["reader"]["prompt_per_s"] == 30.0
    assert summary["reader"]["prompt_per_s_ratio"] == 1.0
    assert summary["writer"]["prompt_per_s_ratio"] == 0.5
    assert summary["flash attention on"]["prompt_per_s_ratio"] == 2.0
    assert summary["no busy-polling"]["prompt_per_s_ratio"] == 1.5
    assert summary["no busy-polling"]["answer_per_s_ratio"] == 1.0
    assert summary["micro-batch 128"]["rounds"] == 2
    monkeypatch.setattr(sys, "argv", ["server_params.py", "--rounds", "0"])
    with pytest.raises(SystemExit):
        bench.main()
