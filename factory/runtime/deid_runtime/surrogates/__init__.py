"""The surrogate engine: one for the training corpus (`factory surrogate`) and for redaction
(`factory redact --mode surrogate`). It travels in the deid-runtime wheel that every deid_<lang> wheel
requires (no Faker needed, no Argos, no torch).

    from deid_runtime import surrogates as S
    es = S.load_locale("es")
    shape = S.describe("LOCATION", "España", es, context="País: ")   # {"kind": "country", ...}
    S.surrogate_for("LOCATION", shape, rng, S.load_locale("fr"))      # "Belgique": a country again

  describe(label, text, locale, context)   the kind and form of a PHI string (kinds.py): no text kept
  surrogate_for(label, shape, rng, locale) a value of that kind and form (values.py)
  shift_date / draw_date / age_like        dates and ages (dates.py)
  like / generate_id                       identifiers with valid check digits (identifiers.py)
  NameGenerator / PersonWords / sex_of     persons: whole names for training, consistent
                                           word-by-word replacement for redaction (names.py)

The training stage sees only shapes (the placeholder stage keeps them instead of the PHI);
redaction sees the original and keeps more of its form where it can (a date is shifted, an
identifier keeps its layout, a phone its calling code and layout, a name each word's casing).
Everything language-specific is data, one folder per locale (languages/<lc>/surrogate_data/ in the
factory, inside each deid_<lc> wheel once packaged; locale.py says how a folder is found, and
docs/surrogate_data.md what it holds).
"""

from .dates import age_like, date_parts, draw_date, shift_date
from .forms import apply_casing, casing_of, match_casing
from .identifiers import generate_id, like
from .kinds import describe
from .locale import LocaleData, LocaleDataError, fold, load_locale, register_locale_data, register_locale_root
from .names import NameGenerator, Person, PersonWords, names_of, sex_of
from .values import surrogate_for

__all__ = ["LocaleData", "LocaleDataError", "NameGenerator", "Person", "PersonWords", "age_like", "apply_casing",
           "casing_of", "date_parts", "describe", "draw_date", "fold", "generate_id", "like", "load_locale",
           "match_casing", "names_of", "register_locale_data", "register_locale_root", "sex_of", "shift_date",
           "surrogate_for"]
