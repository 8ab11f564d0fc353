"""Schema validation behind ``ifc://model/warnings``, cached per document revision."""

from __future__ import annotations

from collections import Counter
from typing import Any

from cadmcp.hosts.ifc.documents import IfcDocument

MAX_ISSUES = 50


def _issue(statement: dict[str, Any]) -> dict[str, Any]:
    instance = statement.get("instance")
    message = " ".join(str(statement.get("message", "")).split())
    issue: dict[str, Any] = {"level": statement.get("level"), "message": message[:300]}
    if statement.get("attribute"):
        issue["attribute"] = statement["attribute"]
    if instance is not None and hasattr(instance, "id"):
        issue["element"] = {"id": instance.id(), "class": instance.is_a()}
        if hasattr(instance, "GlobalId"):
            issue["element"]["globalId"] = instance.GlobalId
    return issue


class WarningsCache:
    """Validates each document at most once per revision (validation is slow on big models)."""

    def __init__(self) -> None:
        self._cache: dict[IfcDocument, tuple[int, dict[str, Any]]] = {}

    def get(self, doc: IfcDocument) -> dict[str, Any]:
        """Grouped schema-validation issues of ``doc``, the first :data:`MAX_ISSUES` in full."""
        cached = self._cache.get(doc)
        if cached is not None and cached[0] == doc.revision:
            return cached[1]
        import ifcopenshell.validate

        logger = ifcopenshell.validate.json_logger()
        ifcopenshell.validate.validate(doc.file, logger)
        issues = [_issue(s) for s in logger.statements]
        groups = Counter((i["level"], i.get("attribute") or i["message"][:80]) for i in issues)
        result = {
            "document": doc.title,
            "revision": doc.revision,
            "total": len(issues),
            "groups": [
                {"level": lvl, "about": about, "count": n} for (lvl, about), n in groups.most_common()
            ],
            "issues": issues[:MAX_ISSUES],
            "truncated": len(issues) > MAX_ISSUES,
            "checked": "IFC schema: attribute types, required attributes, inverses (no EXPRESS rules)",
        }
        self._cache[doc] = (doc.revision, result)
        return result

    def forget(self, doc: IfcDocument) -> None:
        """Drop what is kept of a document that closed (it holds the whole model)."""
        self._cache.pop(doc, None)
