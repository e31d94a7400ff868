"""`vaulttools tui`: the Textual app (vault health, a note's problems, a live retrieval preview).

Textual is imported only by `vaulttools.tui.app` and the screens/widgets, never by the engine.
"""
