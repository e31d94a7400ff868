"""Importers: turn documents that are not notes (PDF books) into vault notes the author can lint and edit.

`vaulttools.importers.pdf` is the only one today; see docs/pdf-import.md.
"""
