"""Code that travels inside the deid_<lang> wheels: no factory-only dependencies (no Argos, no torch)."""
