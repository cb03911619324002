"""pfslayout.shimconfig: the typed shim config, its rendering, and the vectors the C parser checks."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from pydantic import BaseModel, ValidationError

from pfslayout.shimconfig import (
    HintValue,
    LazySync,
    Replica,
    Rule,
    ServerOverride,
    ShimConfig,
    ShimParams,
    Spread,
    StatsSettings,
    TraceSettings,
    normalise_path,
    parse_shim_config,
    render_shim_config,
    replica_path,
    slot_of,
    spread_servers,
)

ROOT = Path(__file__).resolve().parents[3]
VECTORS_DIR = ROOT / "operator" / "tests" / "vectors"
GENERATOR = VECTORS_DIR / "generate_shim_configs.py"
PRM = ShimParams(e=0.0003, v=8e-9, alpha_seq=0.0001, alpha_rand=0.0003, beta=8e-9)


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate_shim_configs", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GEN = _generator()


def test_render_then_parse_gives_the_same_config() -> None:
    for name, cfg in GEN.accepted():
        assert parse_shim_config(render_shim_config(cfg)) == cfg, name


@pytest.mark.parametrize("case", GEN.refused(), ids=lambda c: c["name"])
def test_the_model_refuses_what_the_shim_refuses(case: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        ShimConfig.model_validate(case["doc"])


def _set_fields(model: BaseModel, seen: set[str]) -> None:
    for name in model.model_fields_set:
        seen.add(f"{type(model).__name__}.{name}")
        value = getattr(model, name)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, BaseModel):
                _set_fields(item, seen)


def test_the_generated_set_sets_every_field_of_every_model() -> None:
    seen: set[str] = set()
    for _, cfg in GEN.accepted():
        _set_fields(cfg, seen)
    models: list[type[BaseModel]] = [ShimConfig, ShimParams, ServerOverride, Rule, Replica, TraceSettings,
                                     StatsSettings, LazySync]
    every = {f"{m.__name__}.{f}" for m in models for f in m.model_fields} - {"ShimConfig.format"}
    assert every - seen == set()
    layouts = {r.layout for _, cfg in GEN.accepted() for rule in cfg.rules or [] for r in rule.replicas or []}
    assert layouts == {"1-DV", "1-DH", "2-D", "auto"}


def test_committed_vectors_are_what_the_generator_writes() -> None:
    out = subprocess.run([sys.executable, str(GENERATOR)], capture_output=True, text=True, check=True).stdout
    committed = (VECTORS_DIR / "shim-configs.json").read_text()
    assert out == committed, (
        f"regenerate: python3 {GENERATOR.relative_to(ROOT)} > operator/tests/vectors/shim-configs.json")


def test_the_example_in_the_docs_is_a_valid_config() -> None:
    text = (ROOT / "docs" / "shim-config.md").read_text()
    example = re.search(r"## Example\n\n```json\n(.*?)\n```", text, flags=re.S)
    assert example is not None
    cfg = parse_shim_config(example.group(1))
    assert cfg.servers == 4 and cfg.rules is not None and len(cfg.rules[1].replicas or []) == 3


def test_unknown_fields_are_refused_naming_them() -> None:
    with pytest.raises(ValidationError, match="stripe_size"):
        Replica.model_validate({"dir": "/r", "layout": "1-DV", "stripe_size": 4096})
    with pytest.raises(ValidationError, match="lazysync"):
        parse_shim_config(json.dumps({"format": "pfsshim-config/1", "lazysync": {}}))


def test_strict_scalars_as_the_c_parser_reads_them() -> None:
    for doc in ({"servers": 4.0}, {"servers": "4"}, {"trace": {"enabled": 1}},
                {"rules": [{"path": "/d", "hints": {"a": True}}]}):
        with pytest.raises(ValidationError):
            parse_shim_config(json.dumps({"format": "pfsshim-config/1"} | doc))
    assert parse_shim_config('{"format": "pfsshim-config/1", "params": {"e": 0, "v": 1, "alpha_seq": 0, '
                             '"alpha_rand": 0, "beta": 0}}').params == ShimParams(e=0, v=1, alpha_seq=0,
                                                                                  alpha_rand=0, beta=0)


def test_hint_limit_counts_the_derived_striping_hints() -> None:
    hints: dict[str, HintValue] = {f"h{i}": "v" for i in range(15)}
    Replica(dir="/r", layout="1-DV", strip_size=4096, hints=hints)  # 15 + striping_unit = 16
    with pytest.raises(ValidationError, match="too many hints"):
        Replica(dir="/r", layout="1-DV", strip_size=4096, datafiles=2, hints=hints)


def test_paths_compare_as_the_shim_normalises_them() -> None:
    assert normalise_path("/a/b/") == "/a/b"
    assert normalise_path("ufs:/a//") == "ufs:/a"
    assert normalise_path("/") == "/"
    with pytest.raises(ValidationError, match="also rules"):
        ShimConfig(rules=[Rule(path="/d/", hints={"a": 1}), Rule(path="/d", hints={"b": 2})])
    with pytest.raises(ValidationError, match=r"replicas\[1\].dir"):
        Rule(path="/d", replicas=[Replica(dir="/r/", layout="1-DV"), Replica(dir="/r", layout="1-DH")])


def test_replica_sets_need_params_and_servers_and_fit_the_servers() -> None:
    rule = Rule(path="/d", replicas=[Replica(dir="/r", layout="2-D", g=4)])
    with pytest.raises(ValidationError, match="params: required"):
        ShimConfig(servers=4, rules=[rule])
    with pytest.raises(ValidationError, match="servers: required"):
        ShimConfig(params=PRM, rules=[rule])
    with pytest.raises(ValidationError, match=r"replicas\[0\].g: must be 1..servers \(2\)"):
        ShimConfig(params=PRM, servers=2, rules=[rule])
    assert ShimConfig(params=PRM, servers=4, rules=[rule]).rules == [rule]


def test_rendering_leaves_unset_fields_to_the_shim_defaults() -> None:
    doc = json.loads(render_shim_config(ShimConfig(trace=TraceSettings(enabled=False))))
    assert doc == {"format": "pfsshim-config/1", "trace": {"enabled": False}}


# the same table as shim/tests/c/test_config.c's test_slots (the shim's pfs_slot_of)
SLOT_CASES = [("/data.00000000", 4, 0), ("/data.00000001", 4, 1), ("/data.00000006", 4, 2),
              ("/sub/data.00000011", 3, 2), ("/out_0042.h5", 4, 2), ("/rank3.dat", 4, 3), ("/a.b.7.nc4", 8, 7),
              ("/x/data.123456789012345678901", 7, 4), ("/data.00000005", 1, 0), ("/plain", 4, 3),
              ("/9/plain", 4, 3), ("/ckpt", 3, 2)]


@pytest.mark.parametrize(("tail", "slots", "want"), SLOT_CASES)
def test_a_pinned_copy_lands_in_the_slot_its_name_gives(tail: str, slots: int, want: int) -> None:
    assert slot_of(tail, slots) == want


def test_rank_numbered_files_spread_over_the_slots_and_paths_match_the_shim() -> None:
    assert [slot_of(f"/data.{rank:08d}", 4) for rank in range(8)] == [0, 1, 2, 3, 0, 1, 2, 3]
    tail = "/d/data.00000003"
    assert replica_path("pvfs2:/m/.replica-1-DV", tail, 4) == "pvfs2:/m/.replica-1-DV/slot-3" + tail
    assert replica_path("pvfs2:/m/.replica-1-DH", tail, None) == "pvfs2:/m/.replica-1-DH" + tail


def test_slots_must_fit_the_servers() -> None:
    rule = Rule(path="/d", replicas=[Replica(dir="/r", layout="2-D", g=2, datafiles=2, slots=3)])
    with pytest.raises(ValidationError, match=r"replicas\[0\].slots: slots x datafiles \(3 x 2\) exceeds servers"):
        ShimConfig(params=PRM, servers=4, rules=[rule])
    with pytest.raises(ValidationError, match=r"replicas\[0\].slots: must be 1..servers \(2\)"):
        ShimConfig(params=PRM, servers=2, rules=[Rule(path="/d", replicas=[Replica(dir="/r", layout="1-DV", slots=4)])])


# the same table as shim/tests/c/test_config.c's test_spread (the shim's pfs_spread_list)
SPREAD_CASES = [(0, 1, 4, [0]), (3, 1, 4, [3]), (5, 1, 4, [1]), (0, 2, 4, [0, 1]), (1, 2, 4, [2, 3]),
                (2, 2, 4, [0, 1]), (1, 3, 4, [3, 0, 1]), (2, 3, 4, [2, 3, 0]), (7, 4, 4, [0, 1, 2, 3]),
                (123456789, 1, 6, [3])]


@pytest.mark.parametrize(("k", "d", "n", "want"), SPREAD_CASES)
def test_file_k_of_a_spread_rule_takes_the_next_servers(k: int, d: int, n: int, want: list[int]) -> None:
    assert spread_servers(k, d, n) == want


def test_spread_needs_servers_and_no_replicas() -> None:
    with pytest.raises(ValueError, match="servers: required when a rule has spread"):
        ShimConfig(rules=[Rule(path="/d", spread=Spread(datafiles=1))])
    with pytest.raises(ValueError, match=r"rules\[0\].spread.datafiles: must be 1..servers \(4\)"):
        ShimConfig(servers=4, rules=[Rule(path="/d", spread=Spread(datafiles=5))])
    with pytest.raises(ValueError, match="a replica set places its copies itself"):
        Rule(path="/d", spread=Spread(datafiles=1), replicas=[Replica(dir="/r", layout="1-DV")])
    with pytest.raises(ValueError, match="needs k >= 0"):
        spread_servers(-1, 1, 4)
