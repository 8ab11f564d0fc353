"""The ranking's rules and tuned constants are counted, do not grow back (issue 26 started from
63 rules and 19 constants, 59 and 21 before this count; its aim is at most half), and
docs/search.md states the counts."""

from __future__ import annotations

import re
from pathlib import Path

from cadmcp.daemon.search.accounting import constants, report, rules, stray_numbers
from cadmcp.daemon.search.features import BY_NAME, CONSTANTS, FEATURES

DOCS = Path(__file__).resolve().parents[2] / "docs" / "search.md"


def test_every_number_of_the_ranking_is_a_declared_constant_or_marked() -> None:
    assert stray_numbers() == []


def test_rules_and_constants_do_not_grow_back() -> None:
    assert len(rules()) <= 32  # the aim is 30
    assert len(constants()) <= 9  # the BM25F field table apart


def test_docs_state_the_counts_the_code_has() -> None:
    text = DOCS.read_text(encoding="utf-8")
    stated = re.search(r"\*\*(\d+) rules and (\d+) tuned constants\*\*", text)
    assert stated, "docs/search.md should say '**N rules and M tuned constants**'"
    assert (int(stated.group(1)), int(stated.group(2))) == (len(rules()), len(constants()))


def test_each_feature_is_weighted_by_a_declared_constant_or_by_none() -> None:
    for feature in FEATURES:
        assert feature.weight is None or feature.weight in CONSTANTS, feature.name
    assert BY_NAME["app_named"].weight == BY_NAME["domain_app"].weight == BY_NAME["question_reads"].weight


def test_the_report_lists_each_rule_where_it_is_applied() -> None:
    text = report()
    assert text.startswith(f"{len(rules())} rules:")
    module, line, what = rules()[0]
    assert f"{module}:{line}: {what}" in text
    source = (Path(__file__).resolve().parents[2] / "src/cadmcp/daemon/search" / module).read_text()
    assert "# rule: " + what in source.splitlines()[line - 1]
