"""The surrogate stage (`factory surrogate`): stage.py writes the training corpus, casing.py samples
how names are written. The surrogate values themselves are deid_runtime.surrogates' (redaction
draws from the same engine)."""
