"""Every default the README and the user docs state equals the settings model's, every setting
they name exists, and every configuration example they show is one the operator accepts
(homing.config.Settings, as configfile.py and the environment feed it). How a page is read:
tests/docs/prose.py. docs/dev/ is the developers' notebook and is not held to this.

Pages the lead is rewriting (docs/behaviour.md, docs/benchmarks.md, docs/configuration.md,
docs/helm.md) are read like the others; where one of them is known to be stale its test is
marked xfail with the stale text, so the marker can go with the fix (an XPASS says so).
docs/configuration.md is generated from the model and checked whole by
tests/adapters/test_configuration_reference.py; it is read here too, as a check of this reader.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from homing.config import Settings

from . import prose
from .prose import ROOT

USER_DOCS = sorted([ROOT / "README.md", ROOT / "README.zh-CN.md", *(ROOT / "docs").glob("*.md")])
# Known stale text in pages this change may not edit (see the module's docstring).
STALE: dict[str, dict[str, str]] = {
    "examples": {},
}
EXAMPLE_FILES = [ROOT / "manifests" / "examples" / "config.yaml"]


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def pages(check: str) -> list:
    return [pytest.param(p, id=rel(p), marks=pytest.mark.xfail(reason=STALE[check][rel(p)], strict=False))
            if rel(p) in STALE.get(check, {}) else pytest.param(p, id=rel(p)) for p in USER_DOCS]


def describe(statement: prose.Statement) -> str:
    return (f"{statement.where}: states {'.'.join(statement.path)} = {prose.as_json(statement.stated)}, "
            f"the model's default is {prose.as_json(prose.accepted(statement.path)[0])}")


@pytest.mark.parametrize("page", pages("defaults"))
def test_every_stated_default_is_the_models(page: Path):
    text = page.read_text()
    wrong = [describe(s) for u in prose.units(text) for s in prose.statements(u, rel(page)) if not s.holds()]
    for found in prose.table_statements(text, rel(page)):
        if isinstance(found, str):
            wrong.append(found)
        elif not found.holds():
            wrong.append(describe(found))
    assert wrong == []


@pytest.mark.parametrize("page", pages("names"))
def test_every_setting_named_exists(page: Path):
    text = page.read_text()
    assert sorted({n for n in prose.settings_names(text) if not prose.name_exists(n)}) == []


@pytest.mark.parametrize("page", pages("examples"))
def test_every_configuration_example_is_accepted(page: Path):
    text = page.read_text()
    problems = []
    for lang, block in prose.fenced_blocks(text):
        if lang not in ("yaml", "yml"):
            continue
        for doc in prose.settings_documents(block):
            problems += settings_problems(doc)
        for env in prose.env_lists(block):
            problems += env_problems(env)
    for doc in prose.inline_settings(text):
        problems += settings_problems(doc)
    for name, value in prose.env_assignments(text):
        problems += env_problems({name: value})
    assert problems == []


def settings_problems(doc: dict) -> list[str]:
    """A settings example's keys the model does not know (it would ignore them silently), or its refusal."""
    problems = [f"unknown setting {k}" for k in prose.unknown_keys(doc)]
    try:
        Settings.model_validate(doc)
    except ValidationError as err:
        problems.append(f"refused: {doc}: {err}")
    return problems


def env_problems(env: dict[str, str]) -> list[str]:
    unknown = [k for k in env if prose.resolve_env(k) is None]
    if unknown:
        return [f"unknown setting {k}" for k in unknown]
    try:
        prose.env_to_settings(env)
    except (ValidationError, ValueError) as err:
        return [f"refused: {env}: {err}"]
    return []


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=rel)
def test_the_example_settings_file_is_accepted_and_holds_the_defaults(path: Path):
    """manifests/examples/config.yaml says its values are the defaults: each is."""
    [doc] = [d for block in [path.read_text()] for d in prose.settings_documents(block)]
    assert prose.unknown_keys(doc) == []
    Settings.model_validate(doc)
    differ = [f"{s}.{k}: {v!r}" for s, fields in doc.items() if isinstance(fields, dict)
              for k, v in fields.items() if not prose.same(v, (s, k))]
    assert differ == []


def test_every_page_was_read():
    """The reader finds statements where the docs make them (a guard against a reader that
    silently matches nothing): the README names the deletion-cost switch, how-it-works states
    the weights, operations.md the Lease timings."""
    def found(name: str) -> set[tuple[str, ...]]:
        text = (ROOT / name).read_text()
        out = {s.path for u in prose.units(text) for s in prose.statements(u, name)}
        out |= {s.path for s in prose.table_statements(text, name) if isinstance(s, prose.Statement)}
        return out

    assert {("weights", "home"), ("weights", "domains"), ("weights", "free_room"), ("weights", "pool_other"),
            ("lifetimes", "ttl_seconds"), ("lifetimes", "fault_memory_seconds")} <= found("docs/how-it-works.md")
    assert {("replicas", "lease_seconds"), ("replicas", "renew_seconds"), ("replicas", "retry_seconds"),
            ("replicas", "handover_grace_seconds"), ("webhook", "max_head_bytes")} <= found("docs/operations.md")
    assert ("bounds", "max_ranks") in found("README.md") and ("bounds", "max_ranks") in found("README.zh-CN.md")
    assert {("events", "aggregate_seconds"), ("weights", "claimed")} <= found("docs/behaviour.md")
    assert {"deletion_cost": {"enabled": False}} in list(prose.inline_settings((ROOT / "README.md").read_text()))


@pytest.mark.parametrize("text, path, stated", [
    ("for 72 h (`lifetimes.ttl_seconds`)", ("lifetimes", "ttl_seconds"), 259200),
    ("`events.aggregate_seconds` (10 min; repeats)", ("events", "aggregate_seconds"), 600),
    ("lease 15 s, renew deadline 10 s, retry 2 s (`HOMING_REPLICAS__LEASE_SECONDS`, `__RENEW_SECONDS`, `__RETRY_SECONDS`;",
     ("replicas", "retry_seconds"), 2),
    ("`max_review_bytes` (3 MiB, the API server's)", ("webhook", "max_review_bytes"), 3 * 1024 * 1024),
    ("By default (`tenancy.shared_nodes` off) a pod", ("tenancy", "shared_nodes"), False),
    ("`preferences.claimed_homes`, `.image_warm` (all on)", ("preferences", "image_warm"), True),
    ("The defaults (home 90, domains 32/26/20, keep-clear 5)", ("weights", "home"), 90),
    ("`HOMING_HEALTH__WATCH_STALE_SECONDS`（300 秒）内", ("health", "watch_stale_seconds"), 300),
])
def test_the_reader_finds_a_statement(text, path, stated):
    assert (path, stated) in [(s.path, s.stated) for s in prose.statements(text, "t")]


def test_the_reader_reads_a_default_column_and_sees_a_wrong_value():
    table = ("| setting | default | meaning |\n|---|---|---|\n"
             "| `HOMING_WEIGHTS__HOME` / `__KEEP_CLEAR` | 100 / 3 | weights |\n"
             "| `HOMING_LIFETIMES__TTL_SECONDS` | 259200 (72 h) | forget |\n")
    found = {(s.path, s.stated, s.holds()) for s in prose.table_statements(table, "t") if isinstance(s, prose.Statement)}
    assert found == {(("weights", "home"), 100, True), (("weights", "keep_clear"), 3, False),
                     (("lifetimes", "ttl_seconds"), 259200, True)}


def test_the_reader_leaves_other_numbers_alone():
    """A number of another kind, or an example rather than a default, is no statement."""
    assert list(prose.statements("Shared nodes (`tenancy.shared_nodes` on): every namespace", "t")) == []
    assert list(prose.statements("The 1Gi limit fits (`bounds.max_ranks`)", "t")) == []
    assert list(prose.statements("set `HOMING_WEIGHTS__HOME` (an integer) to", "t")) == []


def test_examples_that_are_wrong_are_caught():
    assert prose.unknown_keys({"weights": {"hom": 100}}) == ["weights.hom"]
    with pytest.raises(ValidationError):
        Settings.model_validate(yaml.safe_load("weights: {home: 100, domains: [50, 25, 12]}"))
    assert env_problems({"HOMING_WEIGHTS__HOM": "100"}) == ["unknown setting HOMING_WEIGHTS__HOM"]
    assert env_problems({"HOMING_DELETION_COST__ENABLED": "maybe"}) != []
    assert env_problems({"HOMING_DELETION_COST__ENABLED": "false"}) == []


def test_the_shard_column_of_scale_md_is_what_a_shard_gets():
    """docs/scale.md's table: the defaults a shard's name changes, as the model changes them."""
    text = (ROOT / "docs" / "scale.md").read_text()
    [(header, rows)] = [(h, r) for h, r in prose.tables(text) if any(c.startswith("shard `") for c in h)]
    col = next(i for i, c in enumerate(header) if c.startswith("shard `"))
    shard = prose.CODE.search(header[col]).group(1)
    sharded = Settings.model_validate({"shard": shard})
    wrong = []
    for row in rows:
        [named] = list(prose.named_groups(row[0]))
        [path] = named.paths
        value = sharded
        for part in path:
            value = getattr(value, part)
        stated = prose.parse_token(row[col], path)
        if stated != value:
            wrong.append(f"{'.'.join(path)}: the page says {row[col]}, a shard gets {value!r}")
    assert rows and wrong == []
