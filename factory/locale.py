"""One locale in one place: `Locale.load("fr")` is the only code that reads a locale's settings file
(languages/<lc>/locale.yml) and knows where its folders are:

  languages/<lc>/       locale.yml (core settings) and one file per concern: silver.yml (silver
                        filters), placeholders.yml (placeholder inventory), surrogates.yml (surrogate
                        corpus settings), surrogate_data/ (the surrogate engine's formats and word
                        lists, docs/surrogate_data.md), configs/config.cfg and project.yml (rendered
                        by render.py)
  regex_packs/<pack>/   pack.yml + context.yml (the `regex_pack` of locale.yml, usually <lc>)
  corpora/synth/<lc>/   the locale's synthetic corpus data, when it has one

`Locale.of(lc)` is the same object wherever a locale's files are wanted, with or without a
locale.yml (yet): the stages that need only its files (silver.yml, placeholders.yml, its synthetic
corpus, its regex pack) find them through it, and no other module builds a path into those folders
but render.py and the new-locale scaffold (tests/factory/test_locale.py).

The locale's titles ("Mme", "Dr.": languages/<lc>/surrogate_data/titles.yml, deid_runtime/titles.py)
are written once: `titles()` gives them to the synthetic corpus and `factory errors`, `title_letters`
to the merger's config (written at assembly); the surrogate engine reads the file where it is, and
the regex pack through its pack.yml's `titles:`.

`settings` is locale.yml over the shared defaults of factory/templates/defaults.yml (a key set to
null in locale.yml keeps its default). The project root is the one the factory works on
(deid_factory.project_root(): `factory --root`, $DEID_FACTORY_ROOT, the current project, else the
shipped data), read when a locale is loaded; pass `root` to load one from another tree.

Importing this module registers the project's languages/ with the runtime's surrogate engine
(deid_runtime.surrogates.locale.register_locale_root): the runtime holds no locale data and finds
each locale's surrogate_data/ through that registry, so every factory module that draws surrogates
(or runs a redaction that may) imports this module first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deid_runtime.surrogates.locale import DATA_FOLDER, register_locale_root
from deid_runtime.titles import TITLES_FILE, Titles

from . import project_root


TEMPLATES = Path(__file__).resolve().parent / "templates"
DEFAULTS_FILE = TEMPLATES / "defaults.yml"
SETTINGS_FILE = "locale.yml"
SURROGATE_DATA = DATA_FOLDER  # languages/<lc>/surrogate_data/: the folder name the runtime looks for under a root
REQUIRED = ("lang", "name", "spacy_lang", "source_lang", "pivot_lang", "regex_pack")


class LocaleError(FileNotFoundError):
    """A locale that is not there, or whose locale.yml is not usable; the message names the file."""


def _read_yaml(path: Path) -> dict[str, Any]:
    from .records import read_yaml_mapping

    return read_yaml_mapping(path, LocaleError, "a mapping of settings")


def defaults() -> dict[str, Any]:
    """The shared defaults (factory/templates/defaults.yml)."""
    return _read_yaml(DEFAULTS_FILE)


def languages_dir(root: str | Path | None = None) -> Path:
    """languages/ of a project (default: the factory's)."""
    return (Path(root) if root is not None else project_root()) / "languages"


def packs_dir(root: str | Path | None = None) -> Path:
    """regex_packs/ of a project: one pack folder per locale."""
    return (Path(root) if root is not None else project_root()) / "regex_packs"


def synth_dir(root: str | Path | None = None) -> Path:
    """corpora/synth/ of a project: one synthetic-corpus folder per locale that has one."""
    return (Path(root) if root is not None else project_root()) / "corpora" / "synth"


def register_surrogate_data(root: str | Path | None = None) -> Path:
    """Make the surrogate engine read each locale's data from languages/<lc>/surrogate_data/ of a
    project (default: the factory's), ahead of any registered before it and of installed deid_<lc>
    wheels (whose copies may be older). Done on import for the factory's project; returns the
    languages/ folder registered."""
    folder = languages_dir(root)
    register_locale_root(folder)
    return folder


def concern_files(name: str, root: str | Path | None = None) -> list[Path]:
    """languages/*/<name>.yml of a project (default: the factory's), every locale folder's that has
    one (with or without a locale.yml), sorted by locale: e.g. every placeholder inventory."""
    return sorted(languages_dir(root).glob(f"*/{name}.yml"))


def pack_folders(root: str | Path | None = None) -> list[Path]:
    """Every regex_packs/<pack>/ of a project (default: the factory's) that holds a pack.yml, sorted."""
    folder = packs_dir(root)
    return sorted(p for p in folder.iterdir() if (p / "pack.yml").exists()) if folder.is_dir() else []


def project_locales(root: Path | None = None) -> list[str]:
    """The locales of a project: every languages/<lc>/ with a locale.yml."""
    root = Path(root) if root is not None else project_root()
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
        root = Path(root).expanduser().resolve() if root is not None else project_root()
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

    @classmethod
    def of(cls, lang: str, root: str | Path | None = None) -> "Locale":
        """The locale `lang` of a project wherever its folders are wanted, whether or not it has a
        locale.yml (yet): Locale.load when languages/<lang>/locale.yml is there (a broken one raises),
        else a bare locale, its settings the shared defaults alone and its folders where `factory
        new-locale` writes them (regex_packs/<lang>/). The stages that take a locale code without
        needing its settings (silver filters, placeholder inventory, synthetic corpus, regex pack)
        find its files this way: `Locale.of(lc).silver_file`, `.pack_dir` (which honours
        `regex_pack:`), `.synth_dir`."""
        found = cls.find(lang, root)
        if found is not None:
            return found
        root = Path(root).expanduser().resolve() if root is not None else project_root()
        return cls(str(lang), root, {}, defaults())

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
    def surrogate_data_dir(self) -> Path:
        """languages/<lc>/surrogate_data/: the surrogate engine's data of this locale (what `factory
        package` copies into the deid_<lc> wheel)."""
        return self.folder / SURROGATE_DATA

    def surrogate_data_files(self) -> list[Path]:
        return sorted(p for p in self.surrogate_data_dir.glob("*") if p.is_file()) if self.surrogate_data_dir.is_dir() else []

    @property
    def titles_file(self) -> Path:
        """languages/<lc>/surrogate_data/titles.yml: the locale's titles, its one list of them (it
        travels in the deid_<lc> wheel with the rest of surrogate_data/, for the surrogate engine)."""
        return self.surrogate_data_dir / TITLES_FILE

    def titles(self) -> Titles:
        """The locale's titles; none for a locale without a titles.yml (a bare locale)."""
        return Titles.read(self.titles_file, LocaleError) if self.titles_file.exists() else Titles({})

    @property
    def title_letters(self) -> list[str]:
        """The one-letter titles ("M" of "M."), which the merger must not take for initials of a name:
        its `title_letters`, written into the pipeline's config at assembly."""
        return self.titles().letters()

    def synth_files(self) -> list[Path]:
        """corpora/synth/<lc>/*.yml: the locale's synthetic corpus, when it has one."""
        return sorted(self.synth_dir.glob("*.yml")) if self.synth_dir.is_dir() else []

    @property
    def config_file(self) -> Path:
        return self.folder / "configs" / "config.cfg"

    def read(self, name: str) -> dict[str, Any]:
        """A per-concern file of the locale, parsed (a clear error when it is missing)."""
        path = self.concern_file(name)
        if not path.exists():
            raise LocaleError(f"no {path.name} for locale {self.lang!r}: {path}")
        return _read_yaml(path)

    def pack_files(self) -> list[Path]:
        """The data files of the locale's regex pack folder (patterns, context rules, clinical lexicon)."""
        folder = self.pack_dir
        return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in (".yml", ".txt")) if folder.is_dir() else []

    def stage_files(self) -> dict[str, list[Path]]:
        """The locale data files each stage of its project reads when this locale is the build's
        target, those that exist (weasel refuses a step whose deps are missing): the locale's own
        folder (its surrogate_data/ included), its regex pack, and its synthetic corpus
        (corpora/synth/<lc>/, which extract reads when the source is this language or when a
        translation build mixes in native records: native_share > 0). A project copied for a build
        therefore copies those three (tests/system/test_build_e2e.py). Not listed: another locale's files
        (the source's silver.yml, regex pack, synthetic corpus and surrogate data in a translation
        build): a locale's project names no folder of another locale, so that weasel finds every
        dep of a copy holding that locale's three folders."""
        # the pack reads the locale's titles (its `{title}`: pack.yml `titles:`), and the merger's config
        # gets the one-letter ones at assembly
        # every data file of the pack folder: pack.yml, context.yml, and the clinical lexicon that the
        # saved pack carries (clinical.yml, drugs.txt, checks.yml: deid_runtime/clinical.py)
        pack = [*self.pack_files(), self.titles_file]
        own_source = self.settings.get("source_lang") == self.lang
        native = own_source or float(self.settings.get("native_share") or 0) > 0
        data = self.surrogate_data_files()
        files = {
            # extract reads corpora/synth/<lc>/ as the source (synth format) or as the native share;
            # with another --vars.source_format the files are listed all the same (a rerun at worst)
            # (the synthetic corpus titles its persons with the locale's titles)
            "extract": [*self.synth_files(), self.titles_file] if native and self.synth_files() else [],
            # filter reads the silver.yml and regex pack of the *source* language: listed when that
            # is this locale (a translation build's source files live in another locale's folder)
            "filter": [self.silver_file, *pack] if own_source else [],
            "placeholder": [self.placeholders_file],
            "translate": [self.settings_file],
            # the surrogate engine draws from surrogate_data/ (registered with the runtime on import)
            "surrogate": [self.settings_file, self.surrogates_file, *data],
            "train": [self.config_file],
            "assemble": pack,
            "selftrain": [self.config_file, *pack],
            # package copies surrogate_data/ into the wheel
            "package": data,
        }
        # configs/config.cfg is rendered together with project.yml (render.py): always there
        return {stage: [p for p in paths if p.exists() or p == self.config_file] for stage, paths in files.items()}

    def project_deps(self) -> dict[str, list[str]]:
        """stage_files as paths relative to the locale's project folder (languages/<lc>/)."""
        import os

        return {stage: [Path(os.path.relpath(p, self.folder)).as_posix() for p in paths]
                for stage, paths in self.stage_files().items()}


# The factory's own project: its locales' surrogate data, for every module that imports this one.
register_surrogate_data()
