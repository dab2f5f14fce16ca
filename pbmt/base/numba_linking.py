"""Kernels at the top of a deep call tree compiled without LLVM's second optimisation of the code they link in.

Numba gives a kernel's machine code a copy of every kernel it calls, each optimised already when it was compiled
(as a kernel of its own), then runs LLVM's module-wide optimisation over the whole again, the callees' copies
included, before turning it all into machine code (``CPUCodeLibrary.finalize``). For a search kernel that drives
all the others (``cube_kernel``: about 19,000 LLVM instructions, its own code and wrappers a fifth of them)
that second pass is 0.9 of the 2.3 CPU s of its own compile, which is on the critical path of a first run: the
compiling child (``pbmt.commands.precompile``) compiles the search kernel last. It buys nothing where the
kernel's own code is a loop over stacks and the time goes in its callees: their code is optimised already, and
the kernel's own code still gets LLVM's function passes (numba runs them on each function as it is lowered).

``driver`` marks such a kernel (cube pruning's search kernel, and the kernels it calls once a sentence or once a
stack to start a search or make room: about 0.1 and 0.3 CPU s less each); ``install`` (``import pbmt`` calls it)
has numba skip the module-wide passes when it compiles a kernel marked. The search so compiled gives the same
search graphs at the same speed (docs/decoding.md, "The first run"). There is no public API for this; it
replaces a private method of numba's, as ``pbmt.base.numba_overloads`` does. A numba without that method keeps
its own.
"""

from __future__ import annotations

from numba.core import codegen
from numba.core.itanium_mangler import mangle_identifier

_LIBRARY = codegen.CPUCodeLibrary
_NUMBAS = getattr(_LIBRARY, "_optimize_final_module", None)
_DRIVERS: dict[str, str] = {}  # a marked kernel's qualified name -> the start of its mangled function names


def driver(kernel):
    """Mark the numba dispatcher ``kernel`` a driver: compiled without the module-wide passes (module
    docstring). Returns ``kernel``, so that it decorates."""
    function = kernel.py_func
    # numba names the function "_Z" + "N<module and name>" + its ABI tags and argument types
    _DRIVERS[function.__qualname__] = "_Z" + mangle_identifier(f"{function.__module__}.{function.__qualname__}")[:-1]
    return kernel


def _is_driver(library) -> bool:
    """Whether ``library`` (a numba code library being finalised) holds a marked kernel's own code: its name is the
    kernel's and it defines the kernel's function (a kernel of the same name elsewhere defines another). A numba
    whose libraries keep their code under another name has none: its passes run, as without pbmt."""
    prefix = _DRIVERS.get(library.name)
    module = getattr(library, "_final_module", None)
    return prefix is not None and module is not None and any(not f.is_declaration and f.name.startswith(prefix)
                                                             for f in module.functions)


def _optimize_final_module(self):
    if not _is_driver(self):
        _NUMBAS(self)


def install() -> bool:
    """Skip the module-wide passes for marked kernels (once a process; ``import pbmt`` calls it). Returns whether
    numba's method is replaced."""
    if _NUMBAS is None:
        return False
    _LIBRARY._optimize_final_module = _optimize_final_module
    return True
