"""Pages of `docs/` generated from the code, so that they cannot drift from it.

`docs/metrics.md` comes from the exporter's metric catalogue
(`services.exporter.catalogue.METRICS`), and `docs/configuration.md` from the command
line's registry (`services.cli.build_parser`, every subcommand's flags) and from the
`GROUPSCOPE_*` variables the code reads (`services.docgen.environment`).
`python -m services.docgen` (or `make docs`) writes them; `--check` exits 1 when a
committed page differs from what the code generates, as `tests/docs/` does.
"""
