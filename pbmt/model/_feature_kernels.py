"""The numba side of the feature contract (``pbmt.model.features``): how the searches call a feature's kernels.

A feature that scores a block in context writes two ``@njit`` kernels and
registers them with the named tuple its sentence data is (``register_kernels``, public as
``pbmt.model.features.register_kernels``):

- ``transition(data, state, new_state, prev_start, prev_end, prev_option, start, end, option, out)``: block
  ``[start, end)`` translated by ``option`` (an index into the sentence's options) right after block
  ``[prev_start, prev_end)`` with ``prev_option`` (``[0, 0)`` and -1 at the sentence start). ``state``
  int64[width] is the feature's slice of the hypothesis's state row, ``new_state`` int64[width] the slice it
  writes for the extended hypothesis (it may be the same memory as ``state``: read before writing);
  ``out`` float64[n_scores] the feature's columns, to which it ADDS its values (natural log).
- ``end(data, state, last_option, out)``: the sentence end after ``last_option`` (-1: no block); ``state`` the
  slice after the last block, which it may update.

``feature_transition`` and ``feature_end`` call the kernels registered for the type of ``data``. Numba
resolves the call when it compiles a search for a model's features, so a search is compiled (and cached)
once per combination of feature types, and the call costs what a direct call costs.
"""

import inspect
import os
import re

from numba import types
from numba.core.dispatcher import Dispatcher
from numba.core.errors import NumbaError
from numba.extending import overload

from pbmt.base.errors import PbmtError
from pbmt.model._apart_cache import cache_apart, source_of

_KERNELS: dict[type, tuple] = {}  # sentence data's named-tuple class -> (transition, end)
_TRANSITION = ("data", "state", "new_state", "prev_start", "prev_end", "prev_option", "start", "end", "option", "out")
_END = ("data", "state", "last_option", "out")


def register_kernels(data_class: type, transition, end) -> None:
    """Make ``feature_transition`` and ``feature_end`` of a ``data_class`` instance call ``transition`` and
    ``end`` (``@njit`` functions of the signatures in the module docstring). A class defined outside pbmt has
    everything compiled for it cached apart from pbmt's own kernels (``pbmt.model._apart_cache``). TypeError for
    a class that is not a named tuple's, a kernel that is not ``@njit`` or takes other parameters: the searches
    would find out only when numba compiles them, in an error about pbmt's kernels."""
    if not (isinstance(data_class, type) and issubclass(data_class, tuple) and hasattr(data_class, "_fields")):
        raise TypeError(f"register_kernels: the sentence data's class must be a named tuple class "
                        f"(collections.namedtuple or typing.NamedTuple), got {data_class!r}")
    if data_class.__module__.split(".")[0] != "pbmt":
        cache_apart(data_class)
    for other in _KERNELS:
        if other.__name__ == data_class.__name__ and _source(other) != _source(data_class):
            raise TypeError(f"{data_class.__module__}.{data_class.__qualname__}: the sentence data of another feature "
                            f"({other.__module__}) has the same name; numba names compiled code after its types' "
                            "names, so two such features could run each other's kernels: rename one")
    for kernel, parameters in ((transition, _TRANSITION), (end, _END)):
        if not isinstance(kernel, Dispatcher):
            raise TypeError(f"register_kernels: {getattr(kernel, '__name__', repr(kernel))} is not an @njit function: "
                            "the searches call a feature's kernels from numba")
        given = tuple(inspect.signature(kernel.py_func).parameters)
        if len(given) != len(parameters):
            raise TypeError(f"register_kernels: {kernel.__name__}({', '.join(given)}) takes {len(given)} parameters; "
                            f"a feature's kernel takes {len(parameters)}: ({', '.join(parameters)})")
    _KERNELS[data_class] = (transition, end)


def kernels_registered(data) -> bool:
    """Whether ``data`` (a feature's sentence data) is of a class ``register_kernels`` was given."""
    return type(data) in _KERNELS


def _source(data_class: type) -> str:
    """What defines ``data_class``: its module's content (outside pbmt: copies of one module are one source) or
    its module's name."""
    return source_of(data_class) or data_class.__module__


def feature_transition(data, state, new_state, prev_start, prev_end, prev_option, start, end, option, out):
    """The registered transition kernel of ``data``'s feature (numba only)."""
    raise NotImplementedError("feature_transition is called from numba kernels only")


def feature_end(data, state, last_option, out):
    """The registered end-of-sentence kernel of ``data``'s feature (numba only)."""
    raise NotImplementedError("feature_end is called from numba kernels only")


def _kernels_of(data) -> tuple:
    if not isinstance(data, types.BaseNamedTuple) or data.instance_class not in _KERNELS:
        raise TypeError(f"no feature kernels are registered for {data}: a feature's sentence data must be a named "
                        "tuple class given to pbmt.model.features.register_kernels")
    return _KERNELS[data.instance_class]


def _compiled(kernel, args: tuple):
    """``kernel`` after compiling it for the numba types ``args`` when it is a kernel of one's own: numba's
    error in its code (a misspelt name, an operation its types lack) is then a PbmtError naming its file, its
    line and numba's reason, instead of an error in pbmt's searches that call it. pbmt's own kernels compile
    where they are called."""
    if kernel.py_func.__module__.split(".")[0] == "pbmt":
        return kernel
    try:
        kernel.compile(tuple(args))
    except NumbaError as err:
        text = re.sub(r"\x1b\[[0-9;]*m", "", str(err))
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        reason = next((line for line in lines[1:] if not line.startswith(("During:", "File "))), lines[0])
        place = re.search(r'File "(.+?)", line (\d+)', text)
        where = (f"{os.path.abspath(place.group(1))}:{place.group(2)}" if place else
                 f"{inspect.getsourcefile(kernel.py_func)}:{inspect.getsourcelines(kernel.py_func)[1]}")
        raise PbmtError(f"{where}: numba cannot compile {kernel.__name__} for sentence data {args[0]}: "
                        f"{reason}") from None
    return kernel


@overload(feature_transition, inline="always")
def _feature_transition(data, state, new_state, prev_start, prev_end, prev_option, start, end, option, out):
    kernel = _compiled(_kernels_of(data)[0], (data, state, new_state, prev_start, prev_end, prev_option, start, end,
                                              option, out))

    def call(data, state, new_state, prev_start, prev_end, prev_option, start, end, option, out):
        kernel(data, state, new_state, prev_start, prev_end, prev_option, start, end, option, out)

    return call


@overload(feature_end, inline="always")
def _feature_end(data, state, last_option, out):
    kernel = _compiled(_kernels_of(data)[1], (data, state, last_option, out))

    def call(data, state, last_option, out):
        kernel(data, state, last_option, out)

    return call
