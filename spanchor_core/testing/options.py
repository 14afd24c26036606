"""The plugin's options and ini keys, as plain data.

Their own module because ``pytest_addoption`` runs in every pytest session of a project that
has spanchor installed, used or not: registering the options must not import the library
(numpy, pydantic, the index), which :mod:`.config` needs to read the settings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["CONFIG", "SETTINGS", "Setting"]


@dataclass(frozen=True, slots=True)
class Setting:
    option: str
    ini: str
    table_key: str
    what: str


SETTINGS: Final = {
    "docs": Setting("--spanchor-docs", "spanchor_docs", "docs", "the documents directory"),
    "gold": Setting("--spanchor-gold", "spanchor_gold", "gold", "the gold set (JSONL)"),
    "baseline": Setting(
        "--spanchor-baseline",
        "spanchor_baseline",
        "baseline",
        "the baseline run or evaluation file",
    ),
    "policy": Setting("--spanchor-policy", "spanchor_policy", "policy", "the policy file"),
}
CONFIG = Setting(
    "--spanchor-config", "spanchor_config", "", "the TOML file with a [tool.spanchor] table"
)
