"""The README documents every setting, every command and every exit code (as Datasette checks its docs)."""

from __future__ import annotations

import re

from pydantic import BaseModel

from tests.conftest import REPO
from tracerag.cli import ExitCode, app
from tracerag.config import Settings

README = (REPO / "README.md").read_text(encoding="utf-8")


def _setting_names(model: type[BaseModel], prefix: str = "") -> list[str]:
    names = []
    for name, field in model.model_fields.items():
        kind = field.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            names += _setting_names(kind, f"{prefix}{name}.")
        else:
            names.append(prefix + name)
    return names


def test_the_exit_code_table_is_exit_code():
    """`ExitCode` is the one definition: the README's table lists its codes, no more and no fewer."""
    table = README.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    listed = [int(code) for code in re.findall(r"^\| (\d+) \|", table, flags=re.M)]
    assert listed == sorted(int(code) for code in ExitCode), listed


def test_every_setting_is_in_the_readme_settings_table():
    table = README.split("## Settings", 1)[1].split("\n## ", 1)[0]
    documented = set()
    for cell in re.findall(r"^\| ([^|]+) \|", table, flags=re.M):
        for name in re.findall(r"`([a-z_.0-9]+)`", cell):
            documented.add(name)
        # "`llm.timeout_s` / `llm.max_retries`" and the short form "`retrieval.bm25_k1` / `bm25_b`"
        section = re.match(r"`([a-z_]+)\.", cell.strip())
        if section:
            documented |= {f"{section.group(1)}.{n}" for n in re.findall(r"`([a-z_0-9]+)`", cell)}
    missing = [n for n in _setting_names(Settings) if n not in documented]
    assert not missing, f"settings missing from the README table: {missing}"


def test_every_command_is_in_the_readme():
    names = [c.name or c.callback.__name__ for c in app.registered_commands]
    names += [g.name for g in app.registered_groups]
    missing = [n for n in names if f"`tracerag {n}" not in README]
    assert not missing, f"commands missing from the README: {missing}"
