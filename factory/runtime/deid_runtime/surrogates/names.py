"""Person names: where given names and surnames come from, the sex a name tells, whole persons for
the training corpus, and word-by-word consistent replacement for redaction.

Names are drawn from Faker's provider lists of the locale (`faker_locale` of formats.yml) when Faker
is installed, otherwise from the locale's own lists (given_female.txt, given_male.txt, surnames.txt),
always with the caller's random generator, so a draw is reproducible from a seed or a key.
"""

from __future__ import annotations

import importlib
import random
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Sequence

from .forms import apply_casing, casing_of
from .locale import LocaleData, ends_with, fold, folded_words, starts_with

# A name that could not sit inside a span (a trailing '.', digits) is never drawn.
_CLEAN_NAME = re.compile(r"^[^\W\d_]+(?:[-' ][^\W\d_]+)*$")
# The words of a mention as folded_words splits them, kept as written so their casing can be read.
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class NameList:
    names: tuple[str, ...]
    weights: tuple[float, ...] | None = None

    def draw(self, rng: random.Random, single_word: bool = False) -> str:
        for _ in range(100):
            name = rng.choices(self.names, self.weights)[0] if self.weights else rng.choice(self.names)
            if not single_word or " " not in name:
                return name
        raise RuntimeError("no single-word name in 100 draws")


def _name_list(values, fallback: Sequence[str]) -> NameList:
    if isinstance(values, dict):  # Faker's weighted lists (en_US): {name: weight}
        pairs = [(str(k), float(v)) for k, v in values.items() if _CLEAN_NAME.match(str(k))]
        if pairs:
            return NameList(tuple(n for n, _ in pairs), tuple(w for _, w in pairs))
    elif values:
        names = tuple(dict.fromkeys(str(v) for v in values if _CLEAN_NAME.match(str(v))))
        if names:
            return NameList(names)
    return NameList(tuple(fallback))


@dataclass(frozen=True)
class Names:
    """The given names (per sex) and surnames of one locale."""

    female: NameList
    male: NameList
    surnames: NameList
    female_set: frozenset[str]
    male_set: frozenset[str]
    surname_set: frozenset[str]
    source: str  # "faker" or "data"

    def given(self, rng: random.Random, sex: str, single_word: bool = False) -> str:
        return (self.female if sex == "f" else self.male).draw(rng, single_word)

    def surname(self, rng: random.Random, single_word: bool = False) -> str:
        return self.surnames.draw(rng, single_word)

    def sex_of_given(self, word: str) -> str | None:
        """'f'/'m' when the (folded) word is a given name of one sex only."""
        key = fold(word)
        if key in self.female_set and key not in self.male_set:
            return "f"
        if key in self.male_set and key not in self.female_set:
            return "m"
        return None

    def is_given(self, word: str) -> bool:
        key = fold(word)
        return key in self.female_set or key in self.male_set

    def is_surname_only(self, word: str) -> bool:
        """A known surname that is no given name ("Jiménez"; not "Martín")."""
        key = fold(word)
        return key in self.surname_set and not self.is_given(key)


@lru_cache(maxsize=None)
def names_of(locale: LocaleData, use_faker: bool = True) -> Names:
    provider = None
    if use_faker and locale.formats.get("faker_locale"):
        try:
            provider = importlib.import_module(f"faker.providers.person.{locale.formats['faker_locale']}").Provider
        except ImportError:  # runtime-only environments: the locale's own lists
            provider = None
    female = _name_list(getattr(provider, "first_names_female", None), locale.given_female)
    male = _name_list(getattr(provider, "first_names_male", None), locale.given_male)
    surnames = _name_list(getattr(provider, "last_names", None), locale.surnames)
    # Telling the sex of a name uses both sources: the short lists are the common names.
    female_set = frozenset(fold(n) for n in female.names + tuple(locale.given_female))
    male_set = frozenset(fold(n) for n in male.names + tuple(locale.given_male))
    surname_set = frozenset(fold(n) for n in surnames.names + tuple(locale.surnames))
    return Names(female, male, surnames, female_set, male_set, surname_set, "faker" if provider else "data")


# ----------------------------------------------------------------------------- sex of a mention
def sex_of(surface: str, locale: LocaleData, context: str = "") -> str | None:
    """'f' or 'm' from a title or agreeing words right before the name ("Sra.", "la paciente"), a
    title inside it ("Dra. Ruiz"), or an unambiguous given name of the locale; else None."""
    triggers = locale.triggers.get("person") or {}
    female, male = triggers.get("female", frozenset()), triggers.get("male", frozenset())
    words = folded_words(surface)
    before = folded_words(context)[-4:]
    for phrases_f, phrases_m, test, seq in ((female, male, starts_with, words), (female, male, ends_with, before)):
        is_f, is_m = test(seq, phrases_f), test(seq, phrases_m)
        if is_f != is_m:
            return "f" if is_f else "m"
    titles = triggers.get("titles", frozenset())
    names = names_of(locale)
    for word in words:
        if (word,) in titles or len(word) == 1:
            continue
        return names.sex_of_given(word)  # the first word that is not a title or an initial
    return None


# ----------------------------------------------------------------------------- training: whole persons
@dataclass
class Person:
    given: list[str]
    surnames: list[str]
    sex: str

    def full(self) -> str:
        return " ".join(self.given + self.surnames)

    def part(self, part: str, words: int = 0) -> str:
        """A partial mention: 'given' -> given name(s); 'family' -> surname(s) (first only if words == 1)."""
        if part == "given":
            return " ".join(self.given)
        if part == "family":
            return self.surnames[0] if words == 1 and len(self.surnames) > 1 else " ".join(self.surnames)
        return self.full()


class NameGenerator:
    """Whole persons with the locale's structure (es: given name + two surnames), compound names at
    the configured rates, and, when `unique`, every full name distinct across a corpus (so a test
    split never holds a name seen in training)."""

    def __init__(self, locale: LocaleData, rng: random.Random, unique: bool = True, person_cfg: dict | None = None):
        self.names = names_of(locale)
        self.rng = rng
        self.surnames = max(1, int(locale.formats.get("surnames_per_name", 1)))
        self.unique = unique
        cfg = person_cfg or {}
        self.compound_given_rate = float(cfg.get("compound_given_rate", 0.0))
        self.given_joiner = str(cfg.get("compound_given_joiner", " "))
        self.compound_surname_rate = float(cfg.get("compound_surname_rate", 0.0))
        self.surname_joiner = str(cfg.get("compound_surname_joiner", "-"))
        self.used: set[str] = set()
        self.collisions = 0

    def _compound(self, pick: Callable[[], str], rate: float, joiner: str) -> str:
        name = pick()
        if self.rng.random() < rate:
            other = pick()
            if other != name:
                name = f"{name}{joiner}{other}"
        return name

    def person(self, sex: str | None = None) -> Person:
        """A new person; `sex` ('f'/'m', from the source mention) keeps grammatical agreement."""
        for _ in range(200):
            sex = sex if sex in ("f", "m") else self.rng.choice("fm")
            given = self._compound(lambda: self.names.given(self.rng, sex), self.compound_given_rate, self.given_joiner)
            surnames = [self._compound(lambda: self.names.surname(self.rng), self.compound_surname_rate, self.surname_joiner)
                        for _ in range(self.surnames)]
            person = Person([given], surnames, sex)
            key = fold(person.full())
            if not self.unique or key not in self.used:
                self.used.add(key)
                return person
            self.collisions += 1
        raise RuntimeError("could not draw a new unique name after 200 tries; the locale's name lists are exhausted")


# ----------------------------------------------------------------------------- redaction: word by word
_TOKEN = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?|\d+|\S", re.UNICODE)


class PersonWords:
    """Consistent person surrogates for one document (or one patient's documents), word by word.

    Every word of a name is replaced by a surrogate word of the same role (given name of the same
    sex, or surname), chosen by `draw_rng(role, word)`, a generator that depends only on the scope's
    key and the word: so "Antonio Jiménez Castro", "A. Jiménez Castro", "Sr. Jiménez" and "JIMÉNEZ"
    all become forms of one surrogate person, in any order of mention, and a re-run gives the same.
    Titles and punctuation are kept as written, each word keeps its casing, an initial becomes the
    initial of its given name's surrogate.
    """

    def __init__(self, locale: LocaleData, draw_rng: Callable[[str], random.Random]):
        self.locale = locale
        self.names = names_of(locale)
        self.draw_rng = draw_rng
        self.titles = (locale.triggers.get("person") or {}).get("titles", frozenset())
        self.surnames_per_name = max(1, int(locale.formats.get("surnames_per_name", 1)))
        # particles ("de la", "van der") stay as written: they are not names, and a name drawn for
        # "de" would turn "Peñalver de la Cruz" into four names
        self.particles = frozenset(fold(str(w)) for w in locale.formats.get("name_particles") or [])
        self.roles: dict[str, str] = {}   # folded word -> "given" or "surname"
        self.sexes: dict[str, str] = {}   # folded given name -> "f"/"m"
        self.words: dict[str, str] = {}   # folded word -> surrogate word
        self.initials: dict[str, str] = {}  # folded initial -> surrogate initial

    def learn(self, mentions: Sequence[tuple[str, str]]) -> None:
        """Read every (mention, context before it) of the scope first: roles come from the longest
        mentions ("Jiménez" alone is a surname if "Antonio Jiménez Castro" is a mention)."""
        ordered = sorted(mentions, key=lambda m: -len(self._name_words(m[0])))
        for mention, context in ordered:
            sex = sex_of(mention, self.locale, context)
            if "," in mention:  # "JIMÉNEZ CASTRO, ANTONIO": surnames, then the given name(s)
                family, given = mention.split(",", 1)
                parts = [(w, "surname") for w in self._name_words(family)] + [(w, "given") for w in self._name_words(given)]
            elif capitals := self._surnames_by_capitals(mention):
                parts = capitals  # "LE GOFF Maëlle", "Jean-Pierre MARTIN": the capitals are the surnames
            else:
                words = self._name_words(mention)
                n_surnames = min(self.surnames_per_name, len(words) - 1)
                if words and len(words) <= self.surnames_per_name and self.names.is_surname_only(words[0]):
                    n_surnames = len(words)  # "Jiménez Castro": two surnames, no given name
                parts = [(w, "surname" if i >= len(words) - n_surnames else "given") for i, w in enumerate(words)]
            parts = [(w, role) for w, role in parts if len(w) > 1]  # initials follow their given name
            known = [w for w, _ in parts if w in self.roles]
            if len(parts) == 1 and not known:
                word = parts[0][0]
                parts = [(word, "given" if self.names.is_given(word) else "surname")]
            for word, role in parts:
                self.roles.setdefault(word, role)
                if self.roles[word] == "given" and word not in self.sexes:
                    self.sexes[word] = sex or self.names.sex_of_given(word) or self._coin(word)

    def _coin(self, word: str) -> str:
        return self.draw_rng("sex\x00" + word).choice("fm")

    def _is_name_word(self, folded: str) -> bool:
        return (folded,) not in self.titles and not folded.isdigit() and folded not in self.particles

    def _name_words(self, mention: str) -> list[str]:
        return [w for w in folded_words(mention) if self._is_name_word(w)]

    def _surnames_by_capitals(self, mention: str) -> list[tuple[str, str]]:
        """Roles from casing when a mention mixes words in capitals with other words: French (and
        many hospitals') usage writes the surname in capitals, before or after the given name
        ("LE GOFF Maëlle", "Jean-Pierre MARTIN"), so word order alone would swap the roles. Empty
        when the casing does not tell (all capitals, no capitals)."""
        words = [(fold(w), w.isupper()) for w in _WORD.findall(mention) if len(w) > 1 and self._is_name_word(fold(w))]
        if not any(upper for _, upper in words) or all(upper for _, upper in words):
            return []
        return [(w, "surname" if upper else "given") for w, upper in words]

    def _surrogate_word(self, word: str) -> str:
        if word not in self.words:
            role = self.roles.get(word) or ("given" if self.names.is_given(word) else "surname")
            used = set(self.words.values())
            for attempt in range(20):
                rng = self.draw_rng(f"{role}\x00{word}\x00{attempt}")
                if role == "given":
                    sex = self.sexes.get(word) or self.names.sex_of_given(word) or self._coin(word)
                    new = self.names.given(rng, sex, single_word=True)
                else:
                    new = self.names.surname(rng, single_word=True)
                # never the original itself, and two words of the scope never share a surrogate
                if fold(new) != word and new not in used:
                    break
            self.words[word] = new
            if role == "given":
                self.initials.setdefault(word[0], new[0])
        return self.words[word]

    def replace(self, mention: str) -> str:
        """The mention with each name word replaced; separators, titles and casing as written."""
        tokens = list(_TOKEN.finditer(mention))
        out: list[str] = []
        pos = 0
        for i, tok in enumerate(tokens):
            out.append(mention[pos:tok.start()])
            pos = tok.end()
            text = tok.group(0)
            key = fold(text)
            if not text[0].isalpha() or (key,) in self.titles or key in self.particles:
                out.append(text)
            elif len(text) == 1:  # an initial: the initial of its given name's surrogate
                out.append(self._initial(key, text))
            else:
                new = self._surrogate_word(key)
                out.append(apply_casing(new, "upper" if casing_of(text) == "upper" else "lower" if text.islower() else "title"))
        out.append(mention[pos:])
        return "".join(out)

    def _initial(self, key: str, text: str) -> str:
        if key not in self.initials:
            given = [w for w, r in self.roles.items() if r == "given" and w[0] == key]
            if given:
                self.initials[key] = self._surrogate_word(given[0])[0]
            else:
                rng = self.draw_rng("initial\x00" + key)
                self.initials[key] = rng.choice("ABCDEFGHIJLMNOPRSTV")
        new = self.initials[key]
        return new.lower() if text.islower() else new.upper()
