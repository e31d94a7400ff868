"""Secrets planted in the private notes of the bundled `vault/`, for tests that prove they never leak.

Each marker appears only in a `visibility: private` note (nowhere else in the repository), so finding one in
an API response, a prompt, a trace, a log line or an error message means a private note reached a visitor.
`PRIVATE_SLUGS` are the slugs (and file stems) of those notes: they must not appear in sources or traces either.
"""

from __future__ import annotations

#: Distinctive strings from the private notes (salary, phone, address, e-mail, health).
PRIVATE_MARKERS: tuple[str, ...] = (
    # 30-Parcours/prive-pretentions-salariales.md
    "58 750",
    "52 300",
    "49 800",
    "585 € HT",
    "510 € HT",
    # 30-Parcours/prive-coordonnees-personnelles.md (06 39 98 xx xx is the ARCEP range reserved for fiction)
    "06 39 98 41 27",
    "7 allée des Gabarriers",
    "aurele.quintard.perso@example.net",
    # 30-Parcours/prive-suivi-medical.md
    "rectocolite hémorragique",
    "mésalazine",
    "RQTH-49-2024-118307",
)

#: Slugs of the private notes of the bundled vault.
PRIVATE_SLUGS: tuple[str, ...] = (
    "prive-coordonnees-personnelles",
    "prive-pretentions-salariales",
    "prive-suivi-medical",
)
