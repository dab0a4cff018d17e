"""The rules directory, read once: one loader and one module per rules file.

    loader.py     TOML read as UTF-8, one error format (FILE:LINE: WHERE: problem), typed fields
    sources.py    sources.toml: the lists polled and the HTTP manners
    hosts.py      hosts.toml: the lab hosts
    templates.py  reproducers/*.toml: the benchmark templates
    routing.py    routing.toml: which Slack channel a report goes to
    floors.py     metric_floors.toml: the smallest change that may confirm, per metric
    commands.py   commands.toml: the programs that start a reproducer in mail, and administration;
                  read by the parse stage from the packaged rules only, so a record is the same
                  in every process whatever rules directory it was given
    settings.py   Settings: all of the above, loaded once from the rules directory and passed down

Stage packages import from here; nothing here imports a stage's code beyond plain data
(`triagebot.ingest.protocol.HttpPolicy`, `triagebot.parse.reported.UNITS`), nor any command.
"""
