"""One locale in one place: `Locale.load("fr")` is the only code that reads a locale's settings file
(languages/<lc>/locale.yml) and knows where its folders are:

  languages/<lc>/       locale.yml (core settings) and one file per concern: silver.yml (silver
                        filters), placeholders.yml (placeholder inventory), surrogates.yml (surrogate
                        corpus settings), configs/config.cfg and project.yml (rendered by render.py)
  regex_packs/<pack>/   pack.yml + context.yml (the `regex_pack` of locale.yml, usually <lc>)
  corpora/synth/<lc>/   the locale's synthetic corpus data, when it has one

`settings` is locale.yml over the shared defaults of factory/templates/defaults.yml (a key set to
null in locale.yml keeps its default). The project root is the one the factory works on
(deid_factory.PROJECT_ROOT: `factory --root`, $DEID_FACTORY_ROOT, the current project, else the
shipped data), read when a locale is loaded; pass `root` to load one from another tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


TEMPLATES = Path(__file__).resolve().parent / "templates"
DEFAULTS_FILE = TEMPLATES / "defaults.yml"
SETTINGS_FILE = "locale.yml"
REQUIRED = ("lang", "name", "spacy_lang", "source_lang", "pivot_lang", "regex_pack")


class LocaleError(FileNotFoundError):
    """A locale that is not there, or whose locale.yml is not usable; the message names the file."""


def _project_root() -> Path:
    from . import PROJECT_ROOT  # read now, not at import: `factory --root` may have changed it

    return PROJECT_ROOT


def _read_yaml(path: Path) -> dict[str, Any]:
    from .records import read_yaml_mapping

    return read_yaml_mapping(path, LocaleError, "a mapping of settings")


def defaults() -> dict[str, Any]:
    """The shared defaults (factory/templates/defaults.yml)."""
    return _read_yaml(DEFAULTS_FILE)


def languages_dir(root: str | Path | None = None) -> Path:
    """languages/ of a project (default: the factory's)."""
    return (Path(root) if root is not None else _project_root()) / "languages"


def packs_dir(root: str | Path | None = None) -> Path:
    """regex_packs/ of a project: one pack folder per locale."""
    return (Path(root) if root is not None else _project_root()) / "regex_packs"


def synth_dir(root: str | Path | None = None) -> Path:
    """corpora/synth/ of a project: one synthetic-corpus folder per locale that has one."""
    return (Path(root) if root is not None else _project_root()) / "corpora" / "synth"


def available(root: Path | None = None) -> list[str]:
    """The locales of a project: every languages/<lc>/ with a locale.yml."""
    root = Path(root) if root is not None else _project_root()
    return sorted(p.parent.name for p in languages_dir(root).glob(f"*/{SETTINGS_FILE}"))


@dataclass(frozen=True, eq=False)
class Locale:
    lang: str
    root: Path
    raw: dict[str, Any] = field(repr=False)        # locale.yml as written
    settings: dict[str, Any] = field(repr=False)   # defaults.yml, then locale.yml over it

    # ------------------------------------------------------------------ loading
    @classmethod
    def load(cls, lang: str, root: str | Path | None = None, require: tuple[str, ...] = ()) -> "Locale":
        """The locale `lang` of the project `root` (default: the factory's project). A missing locale
        is a LocaleError naming the folder; `require` lists settings that must be present."""
        root = Path(root).expanduser().resolve() if root is not None else _project_root()
        folder = cls.folder_of(lang, root)
        path = folder / SETTINGS_FILE
        if not path.exists():
            where = "no such folder" if not folder.is_dir() else f"no {SETTINGS_FILE} in it"
            raise LocaleError(f"unknown locale {lang!r}: {folder} ({where})")
        raw = _read_yaml(path)
        settings = {**defaults(), **{k: v for k, v in raw.items() if v is not None}}
        for key in require:
            if key not in settings:
                raise LocaleError(f"{path}: missing `{key}`")
        return cls(lang, root, raw, settings)

    @classmethod
    def find(cls, lang: str, root: str | Path | None = None) -> "Locale | None":
        """Like load, or None when the project has no such locale (a broken locale.yml still raises)."""
        if not cls.settings_path(lang, Path(root).expanduser() if root is not None else None).exists():
            return None
        return cls.load(lang, root)

    @staticmethod
    def folder_of(lang: str, root: str | Path | None = None) -> Path:
        """languages/<lang>/ of a project, whether or not it exists yet (new-locale writes it)."""
        return languages_dir(root) / str(lang)

    @staticmethod
    def settings_path(lang: str, root: str | Path | None = None) -> Path:
        return Locale.folder_of(lang, root) / SETTINGS_FILE

    # ------------------------------------------------------------------ folders and files
    def get(self, key: str, default: Any = None) -> Any:
        return self.settings.get(key, default)

    @property
    def folder(self) -> Path:
        return self.folder_of(self.lang, self.root)

    @property
    def settings_file(self) -> Path:
        return self.folder / SETTINGS_FILE

    @property
    def pack_dir(self) -> Path:
        return packs_dir(self.root) / str(self.settings.get("regex_pack") or self.lang)

    @property
    def synth_dir(self) -> Path:
        return synth_dir(self.root) / self.lang

    def concern_file(self, name: str) -> Path:
        """languages/<lc>/<name>.yml: silver, placeholders, surrogates."""
        return self.folder / f"{name}.yml"

    @property
    def silver_file(self) -> Path:
        return self.concern_file("silver")

    @property
    def placeholders_file(self) -> Path:
        return self.concern_file("placeholders")

    @property
    def surrogates_file(self) -> Path:
        return self.concern_file("surrogates")

    @property
    def config_file(self) -> Path:
        return self.folder / "configs" / "config.cfg"

    def read(self, name: str) -> dict[str, Any]:
        """A per-concern file of the locale, parsed (a clear error when it is missing)."""
        path = self.concern_file(name)
        if not path.exists():
            raise LocaleError(f"no {path.name} for locale {self.lang!r}: {path}")
        return _read_yaml(path)

    def stage_files(self) -> dict[str, list[Path]]:
        """The locale data files each stage of its project reads when this locale is the build's
        target, those that exist (weasel refuses a step whose deps are missing). Only files under the
        locale's own folder and regex pack are listed: a project copied with those two folders alone
        (tests/test_build_e2e.py) still runs. Not listed: another locale's files (the source's
        silver.yml in a translation build), corpora/synth/ (extract), the data inside the package
        (deid_runtime/surrogates/locales/)."""
        pack = [self.pack_dir / name for name in ("pack.yml", "context.yml")]
        own_source = self.settings.get("source_lang") == self.lang
        files = {
            # filter reads the silver.yml and regex pack of the *source* language: listed when that
            # is this locale (a translation build's source files live in another locale's folder)
            "filter": [self.silver_file, *pack] if own_source else [],
            "placeholder": [self.placeholders_file],
            "translate": [self.settings_file],
            "surrogate": [self.settings_file, self.surrogates_file],
            "train": [self.config_file],
            "assemble": pack,
            "selftrain": [self.config_file, *pack],
        }
        # configs/config.cfg is rendered together with project.yml (render.py): always there
        return {stage: [p for p in paths if p.exists() or p == self.config_file] for stage, paths in files.items()}

    def project_deps(self) -> dict[str, list[str]]:
        """stage_files as paths relative to the locale's project folder (languages/<lc>/)."""
        import os

        return {stage: [Path(os.path.relpath(p, self.folder)).as_posix() for p in paths]
                for stage, paths in self.stage_files().items()}
