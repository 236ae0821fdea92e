"""Write (or check) the generated parts of litejobs' reference pages from the code.

``docs/reference/settings.md`` and ``docs/reference/cli.md`` are hand-written around blocks
between ``<!-- generated: NAME -->`` and ``<!-- end generated: NAME -->``; only the blocks are
rewritten, so the pages stay readable on GitHub as committed files:

- ``settings``: every key of ``litejobs.conf.DEFAULTS``, its default as written there and the
  comment above it, so a setting added to DEFAULTS with its comment is documented;
- ``cli`` and ``commands``: every verb of ``manage.py litejobs`` and the options of
  ``runworker``, ``runscheduler`` and ``runrelay``, read from their argparse parsers.

    python scripts/docs_reference.py           rewrite the blocks
    python scripts/docs_reference.py --check   exit 1 naming the stale pages (``make docs``)

The test suite (tests/test_docs.py) runs the same check, so a stale page fails ``make test``.
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import sys
import tokenize
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "docs" / "reference"
#: The runtimes whose options the CLI page lists beside ``manage.py litejobs``.
RUNTIMES = ("runworker", "runscheduler", "runrelay")


# -- settings -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    name: str
    default: str
    meaning: str


def _comments(source: str) -> dict[int, str]:
    """Comment text per line number of ``source`` (without the ``#``)."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return {
        token.start[0]: token.string.lstrip("#").strip()
        for token in tokens
        if token.type == tokenize.COMMENT
    }


def _defaults_node(tree: ast.Module) -> ast.Dict:
    for node in tree.body:
        target = getattr(node, "target", None) or next(iter(getattr(node, "targets", [])), None)
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and target.id == "DEFAULTS" and isinstance(value, ast.Dict):
            return value
    raise LookupError("litejobs/conf.py has no DEFAULTS = {...} literal.")


def _sentence(text: str) -> str:
    """A comment fragment as a sentence: no leading "..." or "and", a full stop at the end."""
    text = re.sub(r"^(\.\.\.\s*|and\s+)", "", text.strip())
    text = re.sub(r"\s*(\.\.\.|,)$", "", text)
    return text if not text or text.endswith(".") else f"{text}."


def settings_of(source: str) -> list[Setting]:
    """Every key of ``DEFAULTS`` in ``source`` (litejobs/conf.py) with its default and comment.

    A key's comment is the comment lines between the previous entry and it (plus a comment on
    its own line). A key without one shares the previous key's. A comment that goes on from
    the previous one (that one ended with "," or "...") is prefixed with the series' heading,
    the text before the first colon of the comment that opened the series ("runscheduler:").
    """
    comments = _comments(source)
    node = _defaults_node(ast.parse(source))
    found: list[Setting] = []
    previous_end = node.lineno
    heading, previous_raw, previous_meaning = "", "", ""
    for key, value in zip(node.keys, node.values, strict=True):
        if not isinstance(key, ast.Constant) or not isinstance(key.value, str):
            raise LookupError("DEFAULTS keys must be string literals.")
        own = [comments[line] for line in range(previous_end + 1, key.lineno) if line in comments]
        end = value.end_lineno or key.lineno
        inline = [comments[line] for line in range(key.lineno, end + 1) if line in comments]
        raw = " ".join(own + inline)
        if not raw:
            meaning = previous_meaning
        elif previous_raw.endswith((",", "...")):
            meaning = f"{heading}: {_sentence(raw)}" if heading else _sentence(raw)
        else:
            heading = raw.split(":", 1)[0] if ":" in raw else ""
            meaning = _sentence(raw)
        default = ast.get_source_segment(source, value) or repr(ast.literal_eval(value))
        found.append(Setting(key.value, " ".join(default.split()), meaning))
        previous_end = end
        previous_raw = raw or previous_raw
        previous_meaning = meaning
    return found


def settings_block() -> str:
    source = (ROOT / "litejobs" / "conf.py").read_text(encoding="utf-8")
    rows = [
        f"| `{s.name}` | `{s.default}` | {s.meaning.replace('|', '&#124;')} |"
        for s in settings_of(source)
    ]
    return "\n".join(["| setting | default | meaning |", "|---|---|---|", *rows])


# -- command line ---------------------------------------------------------------------------


def _django() -> None:
    """Configure Django just enough to build the commands' parsers (no database is opened)."""
    import django
    from django.conf import settings

    if not settings.configured:
        settings.configure(
            INSTALLED_APPS=[
                "django.contrib.contenttypes",
                "django.contrib.auth",
                "pgtrigger",
                "litejobs",
            ],
            DATABASES={"default": {"ENGINE": "django.db.backends.postgresql", "NAME": "docs"}},
            USE_TZ=True,
        )
    django.setup()


def _parser(name: str) -> argparse.ArgumentParser:
    from django.core.management import load_command_class

    return load_command_class("litejobs", name).create_parser("manage.py", name)


def _django_dests() -> set[str]:
    """The options every Django command has (``--settings``, ``-v`` ...): not listed."""
    from django.core.management.base import BaseCommand

    return {action.dest for action in BaseCommand().create_parser("manage.py", "x")._actions}


def _metavar(action: argparse.Action) -> str:
    if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
        return "{" + ",".join(str(choice) for choice in action.choices) + "}"
    if action.metavar is not None:
        return str(action.metavar)
    return action.dest if not action.option_strings else action.dest.upper()


def _term(action: argparse.Action) -> str:
    """How one argument is written: ``--state {…}``, ``--json``, ``id``."""
    if not action.option_strings:
        return _metavar(action)
    option = max(action.option_strings, key=len)
    return option if action.nargs == 0 else f"{option} {_metavar(action)}"


def _usage(prog: str, parser: argparse.ArgumentParser, skip: set[str]) -> str:
    """A usage line built from the actions (argparse's own wraps by terminal width)."""
    grouped = {
        id(action): group
        for group in parser._mutually_exclusive_groups
        for action in group._group_actions
    }
    parts, seen_groups = [], set()
    for action in parser._actions:
        if action.dest in skip or action.help == argparse.SUPPRESS:
            continue
        group = grouped.get(id(action))
        if group is not None:
            if id(group) not in seen_groups:
                seen_groups.add(id(group))
                inner = " | ".join(_term(member) for member in group._group_actions)
                parts.append(f"({inner})" if group.required else f"[{inner}]")
            continue
        if isinstance(action, argparse._SubParsersAction):
            parts.append("{" + ",".join(action.choices) + "} ...")
        elif action.option_strings and not action.required:
            parts.append(f"[{_term(action)}]")
        else:
            parts.append(_term(action))
    return " ".join([prog, *parts])


def _help(text: str | None) -> str:
    return " ".join((text or "").split()).replace("|", "&#124;").replace("%%", "%")


def _meaning(action: argparse.Action) -> str:
    """The help text, with the default when the help does not give it."""
    text = _help(action.help)
    if not action.option_strings:
        return text or "Required."
    default = action.default
    shown = isinstance(default, (int, float, str)) and not isinstance(default, bool)
    if shown and default != "" and "default" not in text.lower():
        text = f"{text} Default: `{default}`.".strip()
    return text


def _options(parser: argparse.ArgumentParser, skip: set[str]) -> list[str]:
    rows = []
    for action in parser._actions:
        if action.dest in skip or isinstance(action, argparse._SubParsersAction):
            continue
        term = ", ".join(action.option_strings) if action.option_strings else _metavar(action)
        if action.option_strings and action.nargs != 0:
            term = f"{term} {_metavar(action)}"
        rows.append(f"| `{term}` | {_meaning(action)} |")
    if not rows:
        return []
    return ["| argument | meaning |", "|---|---|", *rows, ""]


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def _verbs(
    prog: str, parser: argparse.ArgumentParser
) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    """(full verb, help, parser) of every verb under ``parser``, nested ones too, in order."""
    subparsers = _subparsers(parser)
    if subparsers is None:
        return
    helps = {choice.dest: choice.help for choice in subparsers._choices_actions}
    for verb, child in subparsers.choices.items():
        full = f"{prog} {verb}".strip()
        yield full, helps.get(verb) or "", child
        yield from _verbs(full, child)


def litejobs_verbs() -> list[str]:
    """Every verb of ``manage.py litejobs``, nested ones as ``"schedule show"``."""
    _django()
    return [verb for verb, _, _ in _verbs("", _parser("litejobs"))]


def cli_block() -> str:
    _django()
    skip = _django_dests() | {"help"}
    lines: list[str] = []
    for verb, text, parser in _verbs("", _parser("litejobs")):
        lines += [f"### `{verb}`", "", _help(text), ""]
        if parser.description and _help(parser.description) != _help(text):
            lines += [_help(parser.description), ""]
        lines += ["```text", _usage(f"manage.py litejobs {verb}", parser, skip), "```", ""]
        if _subparsers(parser) is None:
            lines += _options(parser, skip)
    return "\n".join(lines).rstrip()


def commands_block() -> str:
    _django()
    skip = _django_dests() | {"help"}
    lines: list[str] = []
    for name in RUNTIMES:
        from django.core.management import load_command_class

        parser = _parser(name)
        lines += [f"### `{name}`", "", _help(load_command_class("litejobs", name).help), ""]
        lines += ["```text", _usage(f"manage.py {name}", parser, skip), "```", ""]
        lines += _options(parser, skip)
    return "\n".join(lines).rstrip()


# -- pages ----------------------------------------------------------------------------------

BLOCKS: dict[str, tuple[str, Callable[[], str]]] = {
    "settings": ("settings.md", settings_block),
    "cli": ("cli.md", cli_block),
    "commands": ("cli.md", commands_block),
}


def _marked(name: str) -> re.Pattern[str]:
    return re.compile(
        rf"(<!-- generated: {name} -->\n).*?(<!-- end generated: {name} -->)", re.DOTALL
    )


def rendered() -> dict[Path, tuple[str, str]]:
    """Each page's (committed text, text with its generated blocks rewritten)."""
    pages: dict[Path, tuple[str, str]] = {}
    for name, (page, build) in BLOCKS.items():
        path = REFERENCE / page
        committed, current = pages.get(path, (path.read_text(encoding="utf-8"),) * 2)
        pattern = _marked(name)
        if not pattern.search(current):
            raise LookupError(f"{path} has no <!-- generated: {name} --> block.")
        block = build()
        current = pattern.sub(lambda match, block=block: f"{match[1]}{block}\n{match[2]}", current)
        pages[path] = (committed, current)
    return pages


def stale_pages() -> list[Path]:
    """The pages whose generated blocks differ from what the code says now."""
    return [path for path, (old, new) in rendered().items() if old != new]


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        stale = stale_pages()
        for path in stale:
            print(
                f"{path.relative_to(ROOT)} is stale: run `make docs-reference` and commit it.",
                file=sys.stderr,
            )
        return 1 if stale else 0
    if argv:
        print(__doc__, file=sys.stderr)
        return 2
    for path, (old, new) in rendered().items():
        if old != new:
            path.write_text(new, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
