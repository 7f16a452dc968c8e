"""`python -m deid_factory ...` = the `factory` command; the spaCy projects use this form so they run
with the interpreter weasel runs under, whether or not the virtual environment is activated."""

from . import main

main()
