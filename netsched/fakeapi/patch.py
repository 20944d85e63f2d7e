"""The three PATCH flavours the fake Kubernetes API server understands.

The official client sends dict bodies as strategic merge patches and list bodies
as JSON patches, and other tools send JSON merge patches. A strategic merge is a
merge patch except that some lists are merged element by element on a key
(status.conditions by "type"); getting that wrong would drop a pod's other
conditions whenever the scheduler reports PodScheduled=False.
"""

from __future__ import annotations

import copy
from typing import Any

JsonObj = dict[str, Any]

# Lists merged by key in a strategic merge patch, by the name of the field holding them
# (the patchMergeKey tags of the upstream types). Upstream declares these per type; for the
# objects the fake serves the field name is enough. Other lists are replaced whole.
STRATEGIC_MERGE_KEYS: dict[str, str] = {
    "conditions": "type",
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "env": "name",
}


class PatchError(ValueError):
    """A patch that cannot be applied; the server answers 422 or 400."""


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result: JsonObj = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """A merge patch that merges the lists in STRATEGIC_MERGE_KEYS by their key.

    Directive keys client-go adds ("$setElementOrder/...", "$retainKeys") are
    dropped: they only order or prune, and nothing here depends on that.
    """
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result: JsonObj = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$"):
            continue
        if value is None:
            result.pop(key, None)
        elif key in STRATEGIC_MERGE_KEYS and isinstance(value, list):
            result[key] = _merge_list(result.get(key), value, STRATEGIC_MERGE_KEYS[key])
        else:
            result[key] = strategic_merge_patch(result.get(key), value)
    return result


def _merge_list(current: Any, patch: list[Any], merge_key: str) -> list[Any]:
    items: list[Any] = list(current) if isinstance(current, list) else []
    for entry in patch:
        if not isinstance(entry, dict) or merge_key not in entry:
            items.append(copy.deepcopy(entry))
            continue
        index = next(
            (
                i
                for i, item in enumerate(items)
                if isinstance(item, dict) and item.get(merge_key) == entry[merge_key]
            ),
            None,
        )
        if entry.get("$patch") == "delete":
            if index is not None:
                del items[index]
        elif index is None:
            items.append(strategic_merge_patch({}, entry))
        else:
            items[index] = strategic_merge_patch(items[index], entry)
    return items


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _parent(doc: Any, pointer: str) -> tuple[Any, str]:
    """Walk a JSON pointer to the container of its last token."""
    if not pointer.startswith("/"):
        raise PatchError(f"invalid JSON pointer {pointer!r}")
    tokens = [_unescape(t) for t in pointer[1:].split("/")]
    node = doc
    for token in tokens[:-1]:
        try:
            node = node[int(token)] if isinstance(node, list) else node[token]
        except (KeyError, IndexError, ValueError, TypeError) as e:
            raise PatchError(f"path {pointer!r} does not exist") from e
    return node, tokens[-1]


def _list_index(container: list[Any], token: str, *, for_insert: bool) -> int:
    if for_insert and token == "-":
        return len(container)
    try:
        index = int(token)
    except ValueError as e:
        raise PatchError(f"invalid array index {token!r}") from e
    limit = len(container) if for_insert else len(container) - 1
    if not 0 <= index <= limit:
        raise PatchError(f"array index {index} out of range")
    return index


def _apply_op(doc: Any, op: JsonObj) -> None:
    kind = op.get("op")
    container, token = _parent(doc, str(op.get("path", "")))
    if isinstance(container, list):
        index = _list_index(container, token, for_insert=kind == "add")
        if kind == "add":
            container.insert(index, copy.deepcopy(op.get("value")))
        elif kind == "replace":
            container[index] = copy.deepcopy(op.get("value"))
        elif kind == "remove":
            del container[index]
        else:
            raise PatchError(f"unsupported JSON patch op {kind!r}")
        return
    if not isinstance(container, dict):
        raise PatchError(f"path {op.get('path')!r} does not exist")
    if kind in ("replace", "remove") and token not in container:
        raise PatchError(f"path {op.get('path')!r} does not exist")
    if kind in ("add", "replace"):
        container[token] = copy.deepcopy(op.get("value"))
    elif kind == "remove":
        del container[token]
    else:
        raise PatchError(f"unsupported JSON patch op {kind!r}")


def json_patch(target: JsonObj, ops: Any) -> JsonObj:
    """RFC 6902 add / replace / remove, all or nothing."""
    if not isinstance(ops, list):
        raise PatchError("a JSON patch must be a list of operations")
    doc: JsonObj = copy.deepcopy(target)
    for op in ops:
        if not isinstance(op, dict):
            raise PatchError("each JSON patch operation must be an object")
        _apply_op(doc, op)
    return doc
