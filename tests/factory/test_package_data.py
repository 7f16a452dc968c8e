"""The project's own wheel: every data folder is declared (the package list setup.py computes), so
building it prints no setuptools warning about a folder "absent from the `packages` configuration"
(deid_factory.templates.new_locale was one), and the data files land in the wheel, those of a locale
added as data only (no edit of pyproject.toml or setup.py) included."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile

from deid_factory import PROJECT_ROOT


def test_wheel_declares_every_data_folder(tmp_path):
    src = tmp_path / "src"  # a copy: the build writes build/ and *.egg-info next to the sources
    outputs = shutil.ignore_patterns("__pycache__", "corpus", "training", "metrics", "packages", "assets", "*.lock")
    for name in ("factory", "regex_packs", "languages", "corpora"):
        shutil.copytree(PROJECT_ROOT / name, src / name, ignore=outputs)
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(PROJECT_ROOT / name, src / name)
    # a new locale, as `factory new-locale` writes it, only in the copy: no packaging file is edited
    new_locale = {"languages/xq/locale.yml": "lang: xq\n", "languages/xq/configs/config.cfg": "[nlp]\n",
                  "languages/xq/surrogate_data/formats.yml": "lang: xq\n", "languages/xq/surrogate_data/cities.tsv": "x\n",
                  "regex_packs/xq/pack.yml": "patterns: []\n", "regex_packs/xq/context.yml": "{}\n",
                  "corpora/synth/xq/sections.yml": "{}\n"}
    for name, text in new_locale.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text, encoding="utf-8")
    # and a build's outputs in it, which the wheel leaves out
    (src / "languages" / "xq" / "training" / "model-best").mkdir(parents=True)
    (src / "languages" / "xq" / "training" / "model-best" / "meta.yml").write_text("{}\n", encoding="utf-8")
    (src / "languages" / "xq" / "corpus").mkdir()
    (src / "languages" / "xq" / "corpus" / "report.yml").write_text("{}\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w",
                           tmp_path / "wheel", src], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    printed = proc.stdout + proc.stderr
    assert "absent from the `packages` configuration" not in printed, printed
    assert "Package would be ignored" not in printed
    (wheel,) = (tmp_path / "wheel").glob("deid_factory-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    templates = PROJECT_ROOT / "factory" / "templates"
    for data in sorted(p for p in (templates / "new_locale").rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        assert f"deid_factory/templates/{data.relative_to(templates).as_posix()}" in names
    for name in new_locale:
        assert f"deid_factory/shipped/{name}" in names
    assert not [n for n in names if "/xq/training/" in n or "/xq/corpus/" in n]
    for lc in ("it", "pt", "nl"):  # a locale added as data only is carried whole
        assert f"deid_factory/shipped/regex_packs/{lc}/pack.yml" in names
        assert f"deid_factory/shipped/corpora/synth/{lc}/sections.yml" in names
    # the surrogate data of a locale is in its own folder (languages/<lc>/surrogate_data/), shipped
    # with the factory's wheel for the stages; the runtime's wheel carries only what every locale
    # shares (a deid_<lc> wheel carries its locale's data: tests/factory/test_package.py)
    for lc in ("es", "fr", "it", "pt", "nl"):
        assert f"deid_factory/shipped/languages/{lc}/surrogate_data/formats.yml" in names
        assert f"deid_factory/shipped/languages/{lc}/surrogate_data/cities.tsv" in names
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w",
                           tmp_path / "runtime_wheel", src / "factory" / "runtime"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (runtime_wheel,) = (tmp_path / "runtime_wheel").glob("deid_runtime-*.whl")
    runtime_names = set(zipfile.ZipFile(runtime_wheel).namelist())
    assert "deid_runtime/surrogates/common.yml" in runtime_names
    assert not [n for n in runtime_names if "/locales/" in n or "surrogate_data" in n]
    assert "deid_factory/shipped/languages/fr/locale.yml" in names
    assert "deid_factory/shipped/regex_packs/fr/pack.yml" in names
