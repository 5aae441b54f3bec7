"""The terminal UI: renders the headless layers' results; the only package that imports textual.

`PrecmonApp` lives in `precmon.tui.app`; import it from there (importing this package stays
cheap, so `precmon --help` never pays for Textual).
"""
