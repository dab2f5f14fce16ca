"""The tuners' options on a verb's parser, and the tuner its parsed values describe (``pbmt tune``, ``pbmt
optimize``, ``pbmt rescore``).

Each tuner declares its options (``pbmt.tune.tuner.Option``); ``TunerOptions``
adds those of some tuners to a parser, each once, in the tuners' order, with
its default read from the constructor, and builds the chosen tuner from the
parsed values: the options it lists that set its parameters, over its preset,
over its constructor's defaults.
"""

from __future__ import annotations

import argparse
from typing import Any, Callable, Sequence

from pbmt.base.errors import UsageError
from pbmt.tune.gains import GAINS
from pbmt.tune.registry import TUNERS, tuners
from pbmt.tune.tuner import CONSTRUCTOR, TUNER_DEFAULT, Option, Tuner


class _Defaults:
    """``{Class.parameter}`` in an option's help: that tuner's constructor default (or a class attribute)."""

    def __init__(self, cls: type[Tuner]):
        self.cls = cls

    def __getattr__(self, name: str) -> Any:
        parameters = self.cls.parameters()
        return parameters[name] if name in parameters else getattr(self.cls, name)


def listed(names: Sequence[str]) -> str:
    """``names`` as a sentence lists them: "a", "a and b", "a, b and c"."""
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]


def _label(cls: type[Tuner]) -> str:
    """``cls`` as the command line chooses it: its ``--algorithm`` name, with ``--features`` when that is not
    the name's dense tuner (``costmargin --features binary``)."""
    return cls.name if "dense" in cls.features else f"{cls.name} --features {' or '.join(cls.features)}"


class TunerOptions:
    """The options of ``tuners`` (tuner classes, in the order their options are added), those ``include``
    accepts (default: all); ``scope`` maps each option's destination, and its group's title, to the names of the
    tuners listing it."""

    def __init__(self, tuners: Sequence[type[Tuner]], include: Callable[[Option], bool] = lambda option: True):
        self.tuners = tuple(tuners)
        self.options: dict[tuple[str, ...], Option] = {}
        self.scope: dict[str, list[str]] = {}
        for tuner in self.tuners:
            for option in filter(include, tuner.options):
                if self.options.setdefault(option.flags, option) != option:  # a plugin's, spelt as another's
                    raise UsageError(f"{tuner.name}'s option {'/'.join(option.flags)} is spelt as an option of "
                                     f"{listed(self.scope[self.options[option.flags].destination])}: give it "
                                     "another name")
                for key in {option.destination, option.group.title if option.group else option.destination}:
                    names = self.scope.setdefault(key, [])
                    if tuner.name not in names:
                        names.append(tuner.name)

    def add_to(self, parser: argparse.ArgumentParser, descriptions: dict[str, str] | None = None) -> None:
        """Add the options to ``parser``, each group's under its title (joining a group ``parser`` has), with
        its description, or the one ``descriptions`` gives for its title."""
        groups = {group.title: group for group in parser._action_groups}
        classes = {cls.__name__: _Defaults(cls) for cls in tuners()}  # for {Class.parameter} in a help
        for option in self.options.values():
            container = parser
            if option.group is not None:
                if option.group.title not in groups:
                    description = (descriptions or {}).get(option.group.title, option.group.description)
                    groups[option.group.title] = parser.add_argument_group(option.group.title, description)
                container = groups[option.group.title]
            keywords = {k: v for k, v in (("type", option.type), ("choices", option.choices),
                                          ("metavar", option.metavar)) if v is not None}
            if option.boolean:
                keywords["action"] = argparse.BooleanOptionalAction
            try:
                container.add_argument(*option.flags, dest=option.destination, default=self._default(option),
                                       help=option.help.format_map(classes), **keywords)
            except argparse.ArgumentError as err:  # a plugin's option, spelt as one of the verb's own
                raise UsageError(f"{listed(self.scope[option.destination])}'s option {'/'.join(option.flags)} is "
                                 f"spelt as one of {parser.prog}'s own ({err.message}): give it another name") from None
            except (LookupError, ValueError, AttributeError) as err:  # in a plugin's help: {Class.parameter}
                raise UsageError(f"the help of {listed(self.scope[option.destination])}'s option "
                                 f"{'/'.join(option.flags)}: {type(err).__name__}: {err}") from None

    def _default(self, option: Option) -> Any:
        if option.default is TUNER_DEFAULT:
            return None
        if option.default is not CONSTRUCTOR:
            return option.default
        return next(t.parameters()[option.parameter] for t in self.tuners
                    if option in t.options and option.parameter in t.parameters())

    def check_given(self, cls: type[Tuner], args: argparse.Namespace) -> None:
        """UsageError for an option ``cls`` does not list (``Tuner.options``: its constructor's parameters and
        the settings its loop reads) given a value other than its default: ``cls`` would ignore it without a
        word (``--sparse-l1 3`` with MERT, ``--iterations 5`` with Costmargin); the error names the tuners that
        take it."""
        own = {o.destination for o in cls.options}
        for option in self.options.values():
            value = getattr(args, option.destination, None)
            if option.destination in own or value is None or value == self._default(option):
                continue
            labels = list(dict.fromkeys(_label(t) for t in self.tuners
                                        if any(o.destination == option.destination for o in t.options)))
            # "costmargin" covers "costmargin --features binary" when both take it
            takers = [t for t in labels if t.partition(" --features ")[0] == t or t.partition(" ")[0] not in labels]
            raise UsageError(f"{option.flags[-1]} is an option of {listed(takers)}, not of {_label(cls)}: it would "
                             "be ignored")

    def build(self, cls: type[Tuner], args: argparse.Namespace, reordering: str = "distortion",
              n_sentences: int | None = None, **context) -> Tuner:
        """The tuner ``cls`` as ``args`` describe it, for decoding in the ``reordering`` space a dev set of
        ``n_sentences`` (None: not known yet); ``context``
        (``workers``, ``out``, ``progress``, ...) goes to the constructor parameters of those names."""
        accepted = cls.parameters()
        # None is "not given", unless the option's default is not None: then it is the value given ('none')
        given = {o.parameter: getattr(args, o.destination) for o in cls.options
                 if o.flags in self.options and o.parameter in accepted
                 and (getattr(args, o.destination) is not None or self._default(o) is not None)}
        preset = cls.presets.get(getattr(args, cls.preset_option) or "", {}) if cls.preset_option else {}
        params = {**preset, **given, **{k: v for k, v in context.items() if k in accepted}}
        if "gain" in params:
            self._check_gain(cls, params["gain"])
        return cls(**cls.for_search(params, reordering, n_sentences))

    def _check_gain(self, cls: type[Tuner], name: str) -> None:
        """UsageError when the gain ``name`` is not of the level ``cls`` takes, naming the tuners it is for."""
        level = GAINS[name].level
        if level == cls.gain_level:
            return
        listed = [t for t in TUNERS if t.gain_level and any(o.destination == "gain" for o in t.options)]
        owners = " and ".join(dict.fromkeys(f"{t.title}'s" for t in listed if t.gain_level == level))
        takers = list(dict.fromkeys(t.title for t in listed if t.gain_level == cls.gain_level))
        takes = " or ".join(n for n, g in GAINS.items() if g.level == cls.gain_level)
        raise UsageError(f"--gain {name} is a {level} gain ({owners}); {' and '.join(takers)} "
                         f"take{'s' if len(takers) == 1 else ''} {takes}")
