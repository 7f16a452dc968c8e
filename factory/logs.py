"""How the factory's commands log: one line per message, on stderr, at INFO.

spaCy's logger ("spacy") carries its own handler ("[date] [INFO] ..."); left to propagate, every
line of spaCy's training also came out a second time through the root handler that the command
sets up ("INFO spacy: ..."). It keeps its own handler and stops there."""

from __future__ import annotations

import logging

COMMAND_FORMAT = "%(levelname)s %(name)s: %(message)s"


def setup_command_logging(fmt: str = COMMAND_FORMAT) -> None:
    """The root handler of a command's process; spaCy's lines printed once, by spaCy's own handler."""
    from spacy.util import logger as spacy_logger  # spaCy attaches its handler when spacy.util is imported

    logging.basicConfig(level=logging.INFO, format=fmt)
    if spacy_logger.handlers:
        spacy_logger.propagate = False
