"""A first ``pbmt translate`` compiles its search kernels in a forked child on the model's stand-in while it loads
the real model (``pbmt.commands.precompile``): the stand-in must give the kernels the real model's types (else
the run compiles them again), touch no file, and a child that fails must cost time only."""

import os
import shutil

import numba
import pytest

from pbmt.api import DEFAULT_MODEL
from pbmt.commands import precompile, translate
from pbmt.commands.cli import build_parser, main
from pbmt.model import cache
from pbmt.search import options as options_module
from pbmt.search._cube_kernels import _add_edges, _fill_stack, _graph, _stack_room, cube_kernel
from pbmt.search._scoring_kernels import _end
from pbmt.search import decoder
from pbmt.search.decoder import kernel_inputs, kernel_parts
from pbmt.search.transitions import transitions

LINES = "a b c\nc a e b\nb x a d\n"


def _args(ini, *more):
    return build_parser().parse_args(["translate", "-q", "-f", str(ini), *more])


def _kernel_types(translator, line):
    """The numba types of what the search and n-best kernels read of ``line``'s options under the translator's
    model."""
    words, markup = translator.read(line)
    options = translator.options(words, markup)
    sentence, limits = kernel_inputs(options, translator.model.settings, translator.n_best > 1)
    return [numba.typeof(x) for x in (sentence, transitions(translator.model, options), limits, options.tgt_offsets,
                                      options.tgt_words)]


@pytest.mark.parametrize("which, more", [("tiny", ()), ("tiny", ("--search", "stack", "--n-best", "x")),
                                         ("sparse", ()), ("embedded", ("--weights", "LM0= 0.7"))])
def test_the_stand_in_gives_the_kernels_the_real_models_types(which, more, tiny_model_dir, sparse_model_dir,
                                                              tmp_path):
    ini = {"tiny": tiny_model_dir / "moses.ini", "sparse": sparse_model_dir / "moses.ini",
           "embedded": DEFAULT_MODEL}[which]
    args = _args(ini, *(str(tmp_path / m) if m == "x" else m for m in more))
    with cache.standing_in():
        stand_in = translate._make_translator(args)
        stand_in_types = _kernel_types(stand_in, precompile.STAND_IN_LINE)
    assert stand_in.model.full_table.n_candidates == 0 and stand_in.model.lms[0].words == ("<unk>", "<s>", "</s>")
    real = translate._make_translator(args)
    assert real.model.full_table.n_candidates > 0
    assert stand_in_types == _kernel_types(real, "b a d" if which != "embedded" else "En el principio creó Dios .")


@pytest.mark.parametrize("which", ["tiny", "sparse"])
def test_the_search_kernels_parts_have_the_types_the_search_calls_them_with(which, tiny_model_dir, sparse_model_dir,
                                                                           monkeypatch):
    translator = translate._make_translator(_args({"tiny": tiny_model_dir, "sparse": sparse_model_dir}[which]
                                                  / "moses.ini"))
    options = translator.options(*translator.read("b a d"))
    sentence, limits = kernel_inputs(options, translator.model.settings, arcs=False)
    types = tuple(numba.typeof(x) for x in (sentence, transitions(translator.model, options), limits))
    calls = set()
    compile_ = numba.core.dispatcher.Dispatcher.compile

    def recording(kernel, args):
        calls.add((kernel, tuple(args)))
        return compile_(kernel, args)

    monkeypatch.setattr(numba.core.dispatcher.Dispatcher, "compile", recording)
    numba.njit(nogil=True)(cube_kernel.py_func).compile(types)  # typed anew: each callee compiled (or loaded) for
    fill_stack = next(args for kernel, args in calls if kernel is _fill_stack)  # the types of its call
    numba.njit(_fill_stack.py_func, _nrt=False).compile(fill_stack)  # and the feature kernels it calls
    monkeypatch.undo()
    parts = kernel_parts(translator.model, options, arcs=False)
    assert {kernel for kernel, _ in parts} == {_add_edges, _graph, _fill_stack, _stack_room, _end}
    assert all((kernel, args) in calls for kernel, args in parts)
    assert kernel_parts(translator.model, options, translate.search_settings(_args(
        tiny_model_dir / "moses.ini", "--search", "stack"))) == []  # stack decoding compiles whole


@pytest.mark.parametrize("n_best, distinct", [(1, False), (5, False), (5, True)])
@pytest.mark.parametrize("search", ["cube", "stack"])
def test_the_path_kernel_has_the_types_the_decode_calls_it_with(n_best, distinct, search, tiny_model_dir,
                                                                monkeypatch):
    translator = translate._make_translator(_args(tiny_model_dir / "moses.ini", "--search", search))
    options = translator.options(*translator.read("b a d"))
    calls = []
    for name in ("best_path", "k_best_paths"):
        kernel = getattr(decoder, name)
        monkeypatch.setattr(decoder, name, lambda *args, kernel=kernel: calls.append(
            (kernel, tuple(numba.typeof(a) for a in args))) or kernel(*args))
    decoder.decode_paths(translator.model, options, n_best, distinct)
    monkeypatch.undo()
    assert calls == [decoder.path_kernel(options, n_best, distinct)]


def test_the_stand_in_reads_and_writes_no_cache(tiny_model_dir, tmp_path, monkeypatch):
    folder = tmp_path / "model"
    shutil.copytree(tiny_model_dir, folder, ignore=shutil.ignore_patterns("*.pbmt-cache"))
    monkeypatch.delenv("PBMT_CACHE_DIR", raising=False)
    before = sorted(p.name for p in folder.iterdir())
    with cache.standing_in():
        translated = translate._make_translator(_args(folder / "moses.ini")).translate(0, "a b")
    assert translated.text == "a b"  # unknown words to the stand-in: passed through
    assert sorted(p.name for p in folder.iterdir()) == before
    translate._make_translator(_args(folder / "moses.ini"))  # the real model caches its tables as before
    assert any(p.name.endswith(".pbmt-cache") for p in folder.iterdir())


def test_the_childs_translator_lays_out_options_without_the_compiled_kernel(tiny_model_dir, monkeypatch):
    compiled = options_module.table_options

    class PythonOnly:  # the layout kernel, refusing to run compiled
        py_func = staticmethod(compiled.py_func)

        def __call__(self, *args):
            raise AssertionError("the compiled layout kernel ran")

    monkeypatch.setattr(options_module, "table_options", PythonOnly())
    with cache.standing_in():
        translated = translate._make_translator(_args(tiny_model_dir / "moses.ini"), compiled_layout=False).translate(
            0, precompile.STAND_IN_LINE)
        assert translated.text == precompile.STAND_IN_LINE
        with pytest.raises(AssertionError, match="compiled layout kernel ran"):
            translate._make_translator(_args(tiny_model_dir / "moses.ini")).translate(0, precompile.STAND_IN_LINE)


def test_the_child_starts_only_where_it_can_pay(tiny_model_dir, monkeypatch):
    settings = translate.search_settings(_args(tiny_model_dir / "moses.ini"))
    monkeypatch.setattr(precompile, "available_cores", lambda: 2)
    monkeypatch.setattr(precompile, "has_cached", lambda kernel: False)
    monkeypatch.setattr(precompile, "_load", lambda: 2.5)  # both cores busy
    monkeypatch.delenv(precompile.ENVIRONMENT, raising=False)
    monkeypatch.setattr(precompile.threading, "active_count", lambda: 1)
    assert not precompile.worth_it(_args(tiny_model_dir / "moses.ini"), settings)
    monkeypatch.setenv(precompile.ENVIRONMENT, "1")
    assert precompile.worth_it(_args(tiny_model_dir / "moses.ini"), settings)
    monkeypatch.delenv(precompile.ENVIRONMENT)
    monkeypatch.setattr(precompile, "_load", lambda: 0.8)
    monkeypatch.setattr(precompile.threading, "active_count", lambda: 2)  # another thread (pytest's own may run)
    assert not precompile.worth_it(_args(tiny_model_dir / "moses.ini", "--threads", "2"), settings)
    monkeypatch.setattr(precompile.threading, "active_count", lambda: 1)
    assert precompile.worth_it(_args(tiny_model_dir / "moses.ini", "--threads", "2"), settings)
    for more in (("--threads", "1"), ("--documents", "keys"), ("--constraint", "refs"), ("--prefix", "p"),
                 ("--scheduler", "tcp://elsewhere:8786")):
        assert not precompile.worth_it(_args(tiny_model_dir / "moses.ini", *more), settings), more
    monkeypatch.setenv(precompile.ENVIRONMENT, "0")
    assert not precompile.worth_it(_args(tiny_model_dir / "moses.ini"), settings)
    monkeypatch.delenv(precompile.ENVIRONMENT)
    monkeypatch.setattr(precompile, "available_cores", lambda: 1)
    assert not precompile.worth_it(_args(tiny_model_dir / "moses.ini"), settings)
    monkeypatch.setattr(precompile, "available_cores", lambda: 2)
    monkeypatch.setattr(precompile, "has_cached", lambda kernel: True)  # a warm cache
    assert not precompile.worth_it(_args(tiny_model_dir / "moses.ini"), settings)


def test_a_cold_cache_is_told_from_a_warm_one():
    from pbmt.base.numba_cache import has_cached

    @numba.njit(cache=True)
    def never_called(x):
        return x

    assert not has_cached(never_called)
    assert not has_cached(numba.njit(lambda x: x))  # no cache at all


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the child is forked")
def test_a_child_that_fails_costs_time_only(tiny_model_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(precompile, "worth_it", lambda args, settings: True)
    src = tmp_path / "in.txt"
    src.write_text(LINES)
    assert main(["translate", "-f", str(tiny_model_dir / "moses.ini"), "-i", str(src),
                 "-o", str(tmp_path / "plain")]) == 0
    assert "s waiting for the search kernels to compile)" in capsys.readouterr().err  # the summary says it

    make_translator = translate._make_translator

    def failing(args, **read):
        if cache.stand_in():
            raise RuntimeError("the child fails")
        return make_translator(args, **read)

    settings = translate.search_settings(_args(tiny_model_dir / "moses.ini"))
    assert precompile.start(_args(tiny_model_dir / "moses.ini"), settings, failing).wait() is False
    assert precompile.start(_args(tiny_model_dir / "moses.ini"), settings, make_translator).wait()
    killed = precompile.start(_args(tiny_model_dir / "moses.ini"), settings, make_translator)
    killed.stop()
    assert killed.pid == -1

    monkeypatch.setattr(translate, "_make_translator", failing)
    assert main(["translate", "-q", "-f", str(tiny_model_dir / "moses.ini"), "-i", str(src),
                 "-o", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out").read_text() == (tmp_path / "plain").read_text()


@pytest.mark.parametrize("mode", [(), ("--prefix", "prefixes")])
def test_a_first_run_without_the_child_says_it_compiles(mode, tiny_model_dir, tmp_path, monkeypatch, capsys):
    """Where no child compiles (one core, a busy machine, --prefix, ...), the run's first sentence compiles the
    kernels: a cold cache is said before it, as with the child; a warm one or -q says nothing."""
    monkeypatch.setenv(precompile.ENVIRONMENT, "0")
    src = tmp_path / "in.txt"
    src.write_text(LINES)
    (tmp_path / "prefixes").write_text("a\n\nb\n")
    more = [str(tmp_path / m) if m == "prefixes" else m for m in mode]
    note = "first run: compiling the search kernels"
    for cold, quiet, said in [(True, False, True), (True, True, False), (False, False, False)]:
        monkeypatch.setattr(precompile, "has_cached", lambda kernel, cold=cold: not cold)
        assert main(["translate", *(["-q"] if quiet else []), "-f", str(tiny_model_dir / "moses.ini"), "-i",
                     str(src), "-o", str(tmp_path / f"out{cold}{quiet}"), *more]) == 0
        assert (note in capsys.readouterr().err) is said


def test_a_cache_warm_for_the_1_best_is_a_first_run_of_an_n_best_list(tiny_model_dir, tmp_path, monkeypatch,
                                                                      capsys):
    """A cache holding only what a 1-best run compiled (the search kernel) lacks the n-best kernels: an
    ``--n-best`` run says it compiles (with no child: the two would compile them in turn); a 1-best run says
    nothing."""
    from pbmt.base.nbest import write_lines
    from pbmt.search.decoder import k_best_paths

    settings = translate.search_settings(_args(tiny_model_dir / "moses.ini"))
    monkeypatch.setattr(precompile, "available_cores", lambda: 2)
    monkeypatch.setattr(precompile, "_load", lambda: 0.0)
    monkeypatch.setattr(precompile.threading, "active_count", lambda: 1)
    monkeypatch.delenv(precompile.ENVIRONMENT, raising=False)
    for missing in (k_best_paths, write_lines):
        monkeypatch.setattr(precompile, "has_cached", lambda kernel, missing=missing: kernel is not missing)
        assert precompile.first_run(settings, 100) and not precompile.first_run(settings)
        assert not precompile.worth_it(_args(tiny_model_dir / "moses.ini", "--n-best", "x"), settings)
    monkeypatch.setattr(precompile, "has_cached", lambda kernel: kernel is not k_best_paths)
    assert not precompile.first_run(settings, 1)  # a list of one entry: the 1-best's path kernel
    monkeypatch.setattr(precompile, "has_cached", lambda kernel: True)
    assert not precompile.first_run(settings, 100)

    monkeypatch.setattr(precompile, "has_cached", lambda kernel: kernel is not k_best_paths)
    monkeypatch.setenv(precompile.ENVIRONMENT, "0")
    src = tmp_path / "in.txt"
    src.write_text(LINES)
    for n_best, said in [((), False), (("--n-best", str(tmp_path / "nbest")), True)]:
        assert main(["translate", "-f", str(tiny_model_dir / "moses.ini"), "-i", str(src), "-o",
                     str(tmp_path / "out"), *n_best]) == 0
        assert ("first run: compiling the search kernels" in capsys.readouterr().err) is said


def test_explain_and_serve_say_that_they_compile(tiny_model_dir, monkeypatch, capsys):
    """explain and serve have no child: on a first run they say before the wait that they compile (serve
    compiles before it listens), a warm cache or serve's -q says nothing."""
    settings = translate.search_settings(_args(tiny_model_dir / "moses.ini"))
    for cold, quiet, said in [(True, False, True), (True, True, False), (False, False, False)]:
        monkeypatch.setattr(precompile, "has_cached", lambda kernel, cold=cold: not cold)
        assert precompile.say_first_run(settings, "serve", quiet) is cold
        assert (capsys.readouterr().err == f"pbmt serve: {precompile.NOTE}\n") is said
        assert main(["explain", "-f", str(tiny_model_dir / "moses.ini"), "a b"]) == 0
        assert (f"pbmt explain: {precompile.NOTE}" in capsys.readouterr().err) is cold


def test_tune_says_that_its_first_decode_compiles(tiny_model_dir, tiny_dev, tmp_path, monkeypatch, capsys):
    """tune's first decode compiles the search kernels on a cold cache (a minute or more, progress bar at 0):
    it says so before the model loads, unless -q; a warm cache says nothing."""
    for cold, quiet, said in [(True, False, True), (True, True, False), (False, False, False)]:
        monkeypatch.setattr(precompile, "has_cached", lambda kernel, cold=cold: not cold)
        out = tmp_path / f"tune{cold}{quiet}"
        assert main(["tune", *(["-q"] if quiet else []), "-f", str(tiny_model_dir / "moses.ini"), "--src",
                     str(tiny_dev / "dev.src"), "--refs", str(tiny_dev / "dev.ref"), "--tokenized", "--out",
                     str(out), "--iterations", "1"]) == 0
        assert (f"pbmt tune: {precompile.NOTE}" in capsys.readouterr().err) is said


def test_lattice_mert_on_a_cache_warm_for_the_search_says_that_it_compiles(tiny_model_dir, monkeypatch):
    """A cache a decode left warm lacks lattice MERT's kernels (its first optimisation compiled for minutes
    without a word): they count for a first run with lattices alone."""
    from pbmt.search import lattice

    settings = translate.search_settings(_args(tiny_model_dir / "moses.ini"))
    lattice_kernels = {lattice.envelopes, lattice.live_edges}
    monkeypatch.setattr(precompile, "has_cached", lambda kernel: kernel not in lattice_kernels)
    assert precompile.first_run(settings, lattices=True) and not precompile.first_run(settings)
    monkeypatch.setattr(precompile, "has_cached", lambda kernel: True)
    assert not precompile.first_run(settings, lattices=True)
