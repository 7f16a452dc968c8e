# Everything about the distribution is in pyproject.toml but its package list, which is computed
# here: the project's data folders (languages/, regex_packs/, corpora/) ship in the wheel as
# deid_factory.shipped.<folder>.* (package-dir in pyproject.toml), and every sub-folder that carries
# package data must be a listed package (else setuptools warns that it is "absent from the
# `packages` configuration"; tests/factory/test_package_data.py fails on that). pyproject.toml's
# [tool.setuptools.packages.find] cannot remap folders to those names, so the list is computed
# here, and a new locale (languages/<lc>/, regex_packs/<lc>/, corpora/synth/<lc>/) needs no edit.
from setuptools import find_namespace_packages, setup

CODE = "factory"  # import name deid_factory (package-dir); factory/runtime/ is its own distribution
DATA = ("languages", "regex_packs", "corpora")
# build outputs and caches inside the data folders (.gitignore), never shipped
OUTPUTS = ("corpus", "training", "metrics", "packages", "assets", "__pycache__")
SKIP = [pattern for name in OUTPUTS for pattern in (name, f"{name}.*", f"*.{name}", f"*.{name}.*")]


def packages(root: str = ".") -> list[str]:
    """deid_factory and its sub-packages, and deid_factory.shipped.<folder>[.<sub-folder>...] for
    every folder of the project's data (its build outputs left out)."""
    found = ["deid_factory"] + [f"deid_factory.{p}" for p in find_namespace_packages(
        where=f"{root}/{CODE}", exclude=["runtime", "runtime.*", *SKIP])]
    for folder in DATA:
        found.append(f"deid_factory.shipped.{folder}")
        found += [f"deid_factory.shipped.{folder}.{p}" for p in find_namespace_packages(where=f"{root}/{folder}", exclude=SKIP)]
    return sorted(found)


if __name__ == "__main__":
    setup(packages=packages())
