"""One module per `vaulttools` sub-command. Each exposes `NAME`, `HELP`, `add_arguments(parser)` and
`run(args) -> int`; heavy imports (Textual, watchdog, httpx) stay inside `run` so `--help` is instant."""

#: Sub-command modules, in the order `vaulttools --help` lists them.
COMMANDS: tuple[str, ...] = ("lint", "ask", "eval", "new", "watch", "tui", "reload", "import_pdf")
