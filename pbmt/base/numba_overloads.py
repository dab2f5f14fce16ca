"""Numba's ``@overload`` implementations (``np.empty``, ``np.zeros``, ``np.full``, ``min``, ...) compiled once
per argument types, whatever kernel calls them.

Numba keeps the compiled implementation of an overloaded function per argument types *and the calling
kernel's whole set of compiler flags* (``_OverloadFunctionTemplate._get_impl``), so ``np.empty(n, np.int64)``
is compiled again for every combination of flags among its callers: kernels called from Python or not
(``no_cpython_wrapper``), releasing the GIL or not (``nogil``), the implementations of other overloads (which
numba compiles without a CPython wrapper). A cold ``pbmt translate`` compiled numpy's constructors 53 times
for 30 signatures. The implementation's own compilation takes only a few of its caller's flags
(``CPUTargetOptions.finalize``: those it ``inherit_if_not_set``\\ s, e.g. ``nrt``, ``fastmath``,
``error_model``), the rest come from its own options; ``install`` keys the implementations by those flags
alone, read from numba's source at install time, so the same signature compiles once per set of flags it
can see. The narrower key is also cheaper to look up: numba's compares every flag's value on each lookup, and
a cold run looks implementations up about 35,000 times (typing each ``a[i]`` asks every ``getitem``
overload), about 3 CPU s of its typing.

An overload pbmt itself declares ``inline="always"`` (the searches' loops over a model's features, the call of
a feature's kernels) is inlined into its caller and typed there, but numba first compiles it whole, through
LLVM, only to see whether it asks for a literal argument (``numba.literally``), which pbmt's never do: about
1.5 CPU s of a cold run compiled code that no kernel runs. ``install`` has such an overload typed without
that compile.

Only the CPU target's lookups change; any other target, or a numba whose ``finalize`` or ``_get_impl``
cannot be read as expected, keeps numba's own key. There is no public API for this; it replaces a private
method of numba's, as ``pbmt.base.numba_cache`` does.
"""

from __future__ import annotations

import inspect
import re

from numba.core import targetconfig
from numba.core.cpu import CPUTargetOptions
from numba.core.registry import cpu_target
from numba.core.typing import templates

_TEMPLATE = templates._OverloadFunctionTemplate
_NUMBAS_GET_IMPL = _TEMPLATE._get_impl


def inherited_flags() -> tuple[str, ...]:
    """The compiler flags an overload's implementation takes from the kernel that calls it (those numba's
    ``CPUTargetOptions.finalize`` inherits from the flags being compiled), or () if its source cannot be
    read."""
    try:
        source = inspect.getsource(CPUTargetOptions.finalize)
    except (OSError, TypeError):
        return ()
    return tuple(re.findall(r"""inherit_if_not_set\(\s*["'](\w+)["']""", source))


def _value(flag):
    """A flag's value as a dictionary key (``fastmath`` is a mutable set of LLVM flags)."""
    flags = getattr(flag, "flags", None)
    return frozenset(flags) if isinstance(flags, (set, frozenset)) else flag


def _typed_only(jitter):
    """A jit decorator like ``jitter`` whose functions are never compiled, only typed (numba's inliner types
    an inlined function's code in its caller)."""
    def decorator(**options):
        jit = jitter(**options)

        def typed_only(function):
            dispatcher = jit(function)
            dispatcher._can_compile = False
            return dispatcher

        return typed_only

    return decorator


def _pbmt_inlined(template) -> bool:
    """Whether ``template`` is of an overload pbmt declares ``inline="always"``."""
    return template._inline.is_always_inline and template._overload_func.__module__.split(".")[0] == "pbmt"


def _key_by(names: tuple[str, ...]):
    """``_get_impl`` keyed by the argument types and the callers' flags ``names`` alone, on the CPU target;
    pbmt's inlined overloads typed only."""
    typing_context = cpu_target.typing_context

    def _get_impl(self, args, kws):
        if self.context is not typing_context:
            return _NUMBAS_GET_IMPL(self, args, kws)
        flags = targetconfig.ConfigStack.top_or_none()
        seen = None if flags is None else tuple(_value(getattr(flags, name)) for name in names)
        cache_key = self.context, tuple(args), tuple(kws.items()), "pbmt", seen
        try:
            return self._impl_cache[cache_key]
        except KeyError:
            pass
        if _pbmt_inlined(self):
            jitter = self._get_jit_decorator()
            self._get_jit_decorator = lambda: _typed_only(jitter)
        return self._build_impl(cache_key, args, kws)

    return _get_impl


def install() -> bool:
    """Key overload implementations by the flags they inherit (once a process; ``import pbmt`` calls it).
    Returns whether numba's lookup is replaced."""
    if _TEMPLATE._get_impl is not _NUMBAS_GET_IMPL:
        return True
    names = inherited_flags()
    try:
        numbas = inspect.getsource(_NUMBAS_GET_IMPL)
    except (OSError, TypeError):
        return False
    if "nrt" not in names or "self._build_impl(cache_key, args, kws)" not in numbas:
        return False
    _TEMPLATE._get_impl = _key_by(names)
    return True
