"""A locale's titles: the words its notes write before a person's name ("Mme", "Dr.", "Sra.",
"dhr."), which are never part of the PERSON span (the annotation conventions of every corpus).

They are written once per locale, in languages/<lc>/surrogate_data/titles.yml (which a deid_<lc>
wheel carries with the rest of that folder), and read from there by everything that needs them:
the surrogate engine (a title tells a PERSON and its sex), and, through deid_factory.locale.Locale,
the regex pack (`{title}` in its patterns), the merger (a one-letter title, "M.", is not an initial
of the name after it: `title_letters` in the pipeline's config), the synthetic corpus and
`factory errors`.

The file maps groups (who bears the titles: courtesy, staff, nurse...) to the forms for a man (`m`)
and for a woman (`f`), as notes write them. The synthetic corpus draws a slot's group (`title:
staff`) for the person's sex, each form as often as it is written in the list; a group no slot
names holds forms that notes write and the corpus does not draw.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .yamlio import read_yaml_mapping

TITLES_FILE = "titles.yml"
SEXES = ("m", "f")


class TitlesError(ValueError):
    """A titles file that cannot be used; the message names the file and the group."""


@dataclass(frozen=True)
class Titles:
    groups: dict[str, dict[str, tuple[str, ...]]]  # group -> sex -> forms, repeated as often as drawn

    @classmethod
    def read(cls, path: str | Path, error: type[Exception] = TitlesError) -> "Titles":
        path = Path(path)
        if not path.exists():
            raise error(f"titles file not found: {path}")
        raw = read_yaml_mapping(path, error, "a mapping of groups (courtesy: {m: [...], f: [...]})")
        groups: dict[str, dict[str, tuple[str, ...]]] = {}
        for group, by_sex in raw.items():
            if not isinstance(by_sex, dict) or not by_sex or set(by_sex) - set(SEXES):
                raise error(f"{path}: group {group!r} must map m and/or f to lists of titles")
            for sex, forms in by_sex.items():
                if not isinstance(forms, list) or not forms or not all(isinstance(f, str) and f.strip() == f and f for f in forms):
                    raise error(f"{path}: {group}.{sex} must be a list of titles (non-empty strings, no outer spaces)")
            groups[str(group)] = {sex: tuple(forms) for sex, forms in by_sex.items()}
        return cls(groups)

    def forms(self, sex: str | None = None) -> list[str]:
        """Every title (of `sex` only, when given), once each, in the order of the file."""
        seen: dict[str, None] = {}
        for by_sex in self.groups.values():
            for s, forms in by_sex.items():
                if sex is None or s == sex:
                    seen.update(dict.fromkeys(forms))
        return list(seen)

    def letters(self) -> list[str]:
        """The one-letter titles without their period ("M." of Monsieur, "D." of Don): written like an
        initial, so the merger must not join them to the name after them."""
        return sorted({form.rstrip(".") for form in self.forms() if len(form.rstrip(".")) == 1 and form[0].isalpha()})

    def draws(self, group: str, sex: str) -> list[str]:
        """The forms a person of `sex` is titled with in `group`, each as often as written ([] if none)."""
        return list(self.groups.get(group, {}).get(sex, ()))
