"""What every verb's parser shares: old spellings kept as hidden aliases, and defaults read from the code.

One concept has one flag across the verbs (``tests/test_cli_vocabulary.py``
holds the table and checks every parser against it). An old spelling stays
for one release as a hidden alias: it parses to the same destination as the
new flag and prints a one-line warning naming the new flag, so scripts keep
working while they are updated.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import sys


class _Deprecated:
    """Mixed into an action's class: used through one of its ``deprecated_strings``, it warns on standard
    error (naming what to write instead), then acts as the action."""

    deprecated_strings: dict[str, str]

    def __call__(self, parser, namespace, values, option_string=None):
        if option_string in self.deprecated_strings:
            print(f"{parser.prog}: warning: {option_string} is deprecated and goes in the next release; "
                  f"use {self.deprecated_strings[option_string]}", file=sys.stderr)
        super().__call__(parser, namespace, values, option_string)


def deprecated(container, old: str, canonical: argparse.Action, replacement: str | None = None,
               **kwargs) -> argparse.Action:
    """Make ``old`` a hidden spelling of ``canonical`` (an action of ``container``) that warns when used.

    Without ``kwargs``, ``old`` becomes one more option string of
    ``canonical`` itself (so a required option is satisfied by either
    spelling), which the help leaves out (``pbmt.cli.HelpFormatter``). With
    them (``action="store_const", const="moses"``, say) ``old`` is a hidden
    action of its own storing into ``canonical``'s destination.
    ``replacement``: what the warning tells the user to write instead
    (default: ``canonical``'s long flag). Returns the action ``old`` belongs to.
    """
    replacement = replacement or canonical.option_strings[-1]
    if kwargs:
        action = container.add_argument(old, dest=canonical.dest, default=argparse.SUPPRESS,
                                        help=argparse.SUPPRESS, **kwargs)
    else:
        if old in container._option_string_actions:
            raise ValueError(f"{old} is taken")
        action = canonical
        action.option_strings.append(old)
        container._option_string_actions[old] = action
    if not isinstance(action, _Deprecated):
        action.__class__ = type(f"Deprecated{type(action).__name__}", (_Deprecated, type(action)), {})
        action.deprecated_strings = {}
    action.deprecated_strings[old] = replacement
    return action


def visible_flags(action: argparse.Action) -> list[str]:
    """The option strings of ``action`` that its help shows: all but the deprecated ones."""
    if action.help == argparse.SUPPRESS:
        return []
    return [s for s in action.option_strings if s not in getattr(action, "deprecated_strings", {})]


def deprecated_flags(action: argparse.Action) -> dict[str, str]:
    """The deprecated option strings of ``action``, each with what to write instead."""
    return dict(getattr(action, "deprecated_strings", {}))


def default_of(owner, name: str):
    """The default of parameter or field ``name`` of ``owner`` (a class's constructor, a dataclass or a
    function), so a command-line default is written once, where the code that uses it is."""
    if dataclasses.is_dataclass(owner):
        field = {f.name: f for f in dataclasses.fields(owner)}[name]
        return field.default
    return inspect.signature(owner).parameters[name].default


def preset_values(args: argparse.Namespace, preset: dict, owner, options: dict[str, str]) -> dict:
    """The parameters of ``owner`` (a class) that a preset can set, by name: for each option (``options``: its
    argparse destination -> the parameter it sets, parsed to None when not given) the value given, else the
    ``preset``'s, else ``owner``'s default."""
    return {parameter: getattr(args, dest) if getattr(args, dest) is not None
            else preset.get(parameter, default_of(owner, parameter)) for dest, parameter in options.items()}
