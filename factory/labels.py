"""Canonical PHI labels and per-corpus label maps (data in corpora/label_maps/<corpus>.yml)."""

from __future__ import annotations

from pathlib import Path

import yaml

from . import project_root

from deid_runtime.canonical import CANONICAL_LABELS  # one definition, shared with the wheels



def label_maps_dir(root: str | Path | None = None) -> Path:
    """corpora/label_maps/ of a project (default: the factory's)."""
    return (Path(root) if root is not None else project_root()) / "corpora" / "label_maps"


def load_label_map(name_or_path: str | Path) -> dict[str, str | None]:
    """Return {corpus label: canonical label or None (dropped)} from a YAML file.

    `name_or_path` is a file path or the name of a map in corpora/label_maps/ ("meddocan").
    """
    path = Path(name_or_path)
    if not path.suffix:
        path = label_maps_dir() / f"{name_or_path}.yml"
    if not path.exists():
        raise FileNotFoundError(f"label map not found: {path}")
    raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    mapping = raw.get("labels", raw)
    for source, target in mapping.items():
        if target is not None and target not in CANONICAL_LABELS:
            raise ValueError(f"{path}: label {source!r} maps to non-canonical label {target!r}")
    return dict(mapping)


def load_label_roles() -> dict[str, str]:
    """{corpus label: role} of every label map's `roles` (corpora/label_maps/*.yml): what an ID label
    of an annotated corpus identifies (deid_runtime.ids.ROLES), for the surrogate stage. A label
    that two maps give different roles, or a role that is not one of ROLES, is an error."""
    from deid_runtime.ids import ROLES

    roles: dict[str, str] = {}
    for path in sorted(label_maps_dir().glob("*.yml")):
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        labels = raw.get("labels") or {}
        for label, role in (raw.get("roles") or {}).items():
            if role not in ROLES or labels.get(label) != "ID" or roles.get(label, role) != role:
                raise ValueError(f"{path}: roles.{label}: {role!r} must be one of {', '.join(ROLES)}, "
                                 f"for a label the map makes ID, and agree with the other maps")
            roles[label] = role
    return roles
