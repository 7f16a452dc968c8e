"""Draw a surrogate of a label from its shape: `surrogate_for(label, shape, rng, locale)`.

The shape (kinds.describe, or the one the placeholder stage kept) picks the kind and form: a
country for a country, a postal code for a postal code, a health centre for a health centre, a
day-month date for a day-month date, an international phone with its calling code... The values
come from the locale's data (formats.yml and the word lists of its surrogate_data/ folder).
"""

from __future__ import annotations

import datetime as dt
import random
import re
from typing import Any, Sequence

from .dates import draw_age, draw_date, random_date
from .forms import ascii_slug, fill_pattern
from .kinds import calling_code, head_agrees, head_of, same_head
from .locale import LocaleData, common, fold
from .names import names_of

DEFAULT_YEARS = (1995, 2024)
_WORD = re.compile(r"\w+")


def phone(rng: random.Random, locale: LocaleData, shape: dict[str, Any] | None) -> str:
    shape = shape or {}
    formats = locale["phone"]
    if shape.get("international") and formats.get("international"):
        code = shape.get("calling_code")
        code = locale.calling_code if code in (None, "own") else str(code)
        return fill_pattern(rng, rng.choice(formats["international"]), cc=code)
    return fill_pattern(rng, rng.choice(formats["national"]), cc=locale.calling_code)


def phone_like(value: str, rng: random.Random) -> str:
    """The phone with new digits in the same layout, keeping what says where it rings: the country
    calling code ('+34', '0034'), and the first digit of the national number (mobile or landline;
    with a trunk '0', the digit after it too)."""
    code = calling_code(value)
    digits = [c for c in value if c.isdigit()]
    if code is not None:
        keep = (2 if value.strip().startswith("00") else 0) + len(code) + 1
    else:
        keep = 2 if digits[:1] == ["0"] else 1
    new = value
    for _ in range(20):
        seen, out = 0, []
        for ch in value:
            if ch.isdigit():
                seen += 1
                out.append(ch if seen <= keep else rng.choice("0123456789"))
            else:
                out.append(ch)
        new = "".join(out)
        if new != value:
            break
    return new


def email(rng: random.Random, locale: LocaleData, given: str, surname: str, reserved: bool = False) -> str:
    g, s = ascii_slug(given) or "nombre", ascii_slug(surname) or "x"
    local = rng.choice([f"{g}.{s}", f"{g[:1]}{s}", f"{g}{s}{rng.randint(1, 99)}", f"{s}.{g}"])
    domains = common()["reserved"]["email_domains"] if reserved else locale["email"]["domains"]
    return f"{local}@{rng.choice(domains)}"


def url(rng: random.Random, locale: LocaleData, word: str, reserved: bool = False) -> str:
    slug = ascii_slug(word) or "inicio"
    if reserved:
        return common()["reserved"]["url_prefix"] + slug
    return rng.choice(locale["url"]["templates"]).format(word=slug)


def ip(rng: random.Random, private_share: float = 0.5, reserved: bool = False) -> str:
    if reserved:
        return common()["reserved"]["ip_prefix"] + str(rng.randint(1, 254))
    if rng.random() < private_share:
        return rng.choice([f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}",
                           f"192.168.{rng.randint(0, 255)}.{rng.randint(1, 254)}",
                           f"172.{rng.randint(16, 31)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"])
    return f"{rng.randint(11, 223)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"


def place(rng: random.Random, locale: LocaleData) -> tuple[str, str]:
    """(town, postal code): a real pair of the locale's list, every town as likely whatever its
    number of postal codes."""
    town, _ = rng.choice(locale.cities)
    return town, postal_code_of(town, rng, locale) or ""


def postal_code_of(town: str, rng: random.Random, locale: LocaleData) -> str | None:
    """One of the postal codes of `town` (as the locale's list writes it), None for a town the list
    does not hold."""
    codes = locale.postcodes.get(town)
    return rng.choice(codes) if codes else None


def address(rng: random.Random, locale: LocaleData, shape: dict[str, Any] | None, street_word: str | None = None) -> str:
    """A street address with a house number when the original had one, and ', <postal> <town>'
    when the original had a postal code. `street_word`: the original's street type as written
    ("Place", "Avda."), kept in place of a drawn one."""
    shape = shape or {}
    formats = locale["address"]
    with_number = shape.get("number", True)
    templates = formats["with_number"] if with_number else (formats.get("without_number") or formats["with_number"])
    text = rng.choice(templates).format(n=rng.randint(1, 180), n2=rng.randint(1, 40),
                                        type=street_word or rng.choice(formats["types"]), street=rng.choice(locale.streets))
    if shape.get("locality"):
        city, postal = place(rng, locale)
        text += ", " + formats["locality"].format(postal=postal, city=city)
    return text


def kind_of(label: str, shape: dict[str, Any] | None) -> str:
    """The kind a LOCATION or ORGANIZATION shape asks for; shapes written before kinds existed
    (LOCATION: by their digits) and kinds nothing told get the label's default (common.yml)."""
    shape = shape or {}
    if shape.get("kind"):
        return str(shape["kind"])
    if label == "LOCATION" and shape.get("digits"):
        return "postal_code" if shape.get("words", 1) <= 1 else "postal_city"
    return common()["kinds"][label][0]


def location(rng: random.Random, locale: LocaleData, shape: dict[str, Any] | None) -> str:
    kind = kind_of("LOCATION", shape)
    if kind == "country":
        return rng.choice(locale.countries)
    if kind == "region":
        return rng.choice(locale.region_names)
    city, postal = place(rng, locale)
    if kind == "postal_code":
        return postal
    if kind == "postal_city":
        return locale["address"]["postal_city"].format(postal=postal, city=city)
    return city


def organization(rng: random.Random, locale: LocaleData, shape: dict[str, Any] | None, surname: str | None = None,
                 articles: Sequence[str] = (), original: str | None = None) -> str:
    """An organisation of the shape's kind that reads where the original was written. `original`:
    where its head word (its first: "Clinique") is a generic word of the locale (formats.yml
    `articles.heads`), the surrogate's head is of the same gender and, in a locale that elides, starts
    with a vowel as it does, so every article the original followed still agrees ("la Clinique X" ->
    "la Polyclinique Y", "l'Hôpital X" -> "l'Hôpital Y", never "la Hôpital Y"); any other original
    agrees with `articles`, the groups of the articles written before its mentions
    (kinds.article_before). Where no name of the kind agrees, the original's generic head word is kept
    before a drawn surname."""
    kind = kind_of("ORGANIZATION", shape)
    city, _ = rng.choice(locale.cities)
    surname = surname or names_of(locale).surname(rng, single_word=True)
    patterns = locale.organization_patterns(kind)
    generic = bool(original) and head_of(original or "", locale)[0] is not None
    if generic:
        agreeing = [p for p in patterns if same_head(p, original or "", locale)]
    elif articles:
        agreeing = [p for p in patterns if all(head_agrees(p, a, locale) for a in articles)]
    else:
        agreeing = patterns
    if not agreeing and generic:
        head = next(w for w in _WORD.findall(original or "") if fold(w) in locale.head_groups)
        if same_head(head, original or "", locale):
            return f"{head} {surname}"
    return rng.choice(agreeing or patterns).format(city=city, surname=surname)


def profession(rng: random.Random, locale: LocaleData, gender: str | None = None) -> str:
    """An occupation of the locale's list, in the grammatical gender of the original when it is known."""
    masculine, feminine = rng.choice(locale.professions)
    if masculine == feminine or gender in ("m", "f"):
        return feminine if gender == "f" else masculine
    return rng.choice((masculine, feminine))


def surrogate_for(label: str, shape: dict[str, Any] | None, rng: random.Random, locale: LocaleData, *,
                  day: dt.date | None = None, age_range: tuple[int, int] = (1, 99), reserved: bool = False,
                  private_ip_share: float = 0.5, person: tuple[str, str] | None = None) -> str:
    """A surrogate of `label` with the kind and form `shape` describes, in `locale`.

    day: the date a DATE surrogate writes (default: drawn); person: (given, surname) an EMAIL is
    made of (default: drawn); reserved: contacts (e-mail, URL, IP) only in documentation-reserved
    names. PERSON and ID have their own engines (names.py, identifiers.py)."""
    shape = shape or {}
    if label == "DATE":
        return draw_date(rng, locale, shape, day or random_date(rng, DEFAULT_YEARS))
    if label == "AGE":
        return draw_age(rng, locale, shape, age_range)
    if label == "PHONE":
        return phone(rng, locale, shape)
    if label == "EMAIL":
        names = names_of(locale)
        given, surname = person or (names.given(rng, rng.choice("fm"), True), names.surname(rng, True))
        return email(rng, locale, given, surname, reserved)
    if label == "URL":
        word = names_of(locale).surname(rng, True) if rng.random() < 0.5 else rng.choice(locale.cities)[0]
        return url(rng, locale, word, reserved)
    if label == "IP":
        return ip(rng, private_ip_share, reserved)
    if label == "ADDRESS":
        return address(rng, locale, shape)
    if label == "LOCATION":
        return location(rng, locale, shape)
    if label == "ORGANIZATION":
        return organization(rng, locale, shape)
    if label == "PROFESSION":
        return profession(rng, locale, (shape or {}).get("gender"))
    raise ValueError(f"no surrogate drawn from a shape for label {label}")
