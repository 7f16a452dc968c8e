"""The synthetic corpus engine: clinical notes with exact gold PHI spans, rendered from one locale's data.

The engine knows no language. Every word, template, slot, agreement rule and value format of a locale
lives in `corpora/synth/<lc>/` (docs/corpus.md, "The synthetic corpus", describes each file):

  sections.yml  document types, their sections and the sentence templates of each section
  header.yml    header layouts (blocks of field lines, optional, shuffled)
  slots.yml     what each `{slot}` of a template means: one of the engine's makers (`MAKERS`) and its settings
  lexicon.yml   how people are named, agreement words, typing slips, and word lists (their titles are
                the locale's: languages/<lc>/surrogate_data/titles.yml, through Locale.titles)
  clinical.yml  clinical word lists (symptoms, diagnoses, drugs, labs...), never PHI
  formats.yml   the note's timeline; how dates, ages, phones, e-mails and identifiers are written

so a new locale is a new folder of data files. A note is assembled from pieces (literal text, or a value
with a label); spans are the offsets of the labelled pieces, so gold spans are exact by construction.
Within a note an entity is consistent (one patient, one address, one NHC; the age follows from the
birth and admission dates) while each mention is written its own way. Person names come from Faker,
or, with a probability, from name pools of the locale's lexicon (`given_names`, `surname_forms`).

Template syntax: `{slot}` / `{slot.arg}` (slots.yml), `{list}` / `{list.field}` (an entry of a word
list), `{n:lo-hi}` (a number), `[a|b|c]` a choice, `<m|f>` agreement with the patient's sex. A slot
written with a capital ("{Drug}") capitalises a context value.

The corpus enters the pipeline as the reader format "synth" (`readers.read_corpus(folder, "synth")`,
`factory extract --format synth`); `generate_records` and `factory synth` go through that reader too.

The package, in the order a corpus is made:
  syntax.py   the template syntax (slots, choices, agreement) and the data's error
  data.py     a locale's data folder loaded (`SynthData`) and checked against the makers of slots.yml
              (`MAKERS`: the settings each needs; `Note.make_<maker>` makes its pieces)
  note.py     one note: `Note` composes a record (header, sections, gold spans) from the data
  corpus.py   the corpus: `read_synth` (the reader of the format), `generate_records`, its summary
  command.py  `factory synth`
"""

from .corpus import CorpusSummary, corpus_report, generate_records, read_synth
from .data import MAKERS, SynthData
from .note import Note
from .syntax import SynthError

__all__ = ["MAKERS", "CorpusSummary", "Note", "SynthData", "SynthError", "corpus_report", "generate_records", "read_synth"]
