"""Reproduce stage: YAML read with PyYAML, every scalar kept as text, hostile input refused.

LKP job files (job.yaml) and stress-ng's `--yaml` metrics are YAML. They are read with PyYAML's
BaseLoader, which builds only str, list and dict (narrower than safe_load: no object tags, and
no YAML 1.1 guessing, so `yes` stays "yes", `08` stays "08" and `1t` stays "1t", as the planner
expects). A plain empty value (`fio:`) reads as None. Refused before anything is built:
text over MAX_YAML_CHARS, any alias (`*name`: LKP and stress-ng write none, and aliases are how a
"billion laughs" document grows without bound) and nesting deeper than MAX_YAML_DEPTH.
"""
from __future__ import annotations

from typing import Any

import yaml
from yaml.composer import Composer
from yaml.events import AliasEvent
from yaml.nodes import Node, ScalarNode

MAX_YAML_CHARS = 4 * 1024 * 1024  # the materials fetch's cap on a job.yaml (4 MiB), in characters
MAX_YAML_DEPTH = 64  # nested collections; a job file nests two or three deep


class YamlRefused(ValueError):
    """The text is not YAML this reader accepts; the message says why, on one line."""


class _Loader(yaml.BaseLoader):
    depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        if self.check_event(AliasEvent):
            event = self.peek_event()
            raise YamlRefused(f"line {event.start_mark.line + 1}: a YAML alias (*{event.anchor}) "
                              "(aliases are refused)")
        self.depth += 1
        if self.depth > MAX_YAML_DEPTH:
            mark = self.peek_event().start_mark
            raise YamlRefused(f"line {mark.line + 1}: nested more than {MAX_YAML_DEPTH} deep")
        try:
            return Composer.compose_node(self, parent, index)
        finally:
            self.depth -= 1


def _text_or_none(loader: _Loader, node: ScalarNode) -> str | None:
    value = loader.construct_scalar(node)
    return None if value == "" and node.style is None else value


_Loader.add_constructor("tag:yaml.org,2002:str", _text_or_none)


def load_documents(text: str) -> list[Any]:
    """Every document of `text`, scalars as str (None for a plain empty value); YamlRefused."""
    if len(text) > MAX_YAML_CHARS:
        raise YamlRefused(f"{len(text)} characters, over the {MAX_YAML_CHARS} this reader reads")
    try:
        # the reader checks every character as it is built: a control character (U+001A in a
        # job.yaml attachment, found by bench/fuzz.py) is its ReaderError, a refusal here
        loader = _Loader(text)
    except yaml.YAMLError as error:
        raise YamlRefused(f"not YAML ({' '.join(str(error).split())})") from None
    try:
        documents = []
        while loader.check_data():
            documents.append(loader.get_data())
        return documents
    except yaml.MarkedYAMLError as error:
        where = error.problem_mark or error.context_mark
        line = f"line {where.line + 1}: " if where is not None else ""
        raise YamlRefused(f"{line}not YAML ({error.problem or error.context})") from None
    except yaml.YAMLError as error:
        raise YamlRefused(f"not YAML ({' '.join(str(error).split())})") from None
    finally:
        loader.dispose()
