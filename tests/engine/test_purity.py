"""The engine keeps no state of its own between calls: no module of it holds a mutable
object at module level (a cache, a counter, a registry). What it remembers lives in the
objects it is given (the index, the snapshot) and is returned to the adapters."""
from __future__ import annotations

import importlib
import itertools
import pkgutil
from collections import Counter, OrderedDict, defaultdict, deque

import homing.engine

MUTABLE = (list, dict, set, bytearray, deque, OrderedDict, Counter, defaultdict, itertools.count)


def engine_modules():
    for info in pkgutil.walk_packages(homing.engine.__path__, "homing.engine."):
        yield importlib.import_module(info.name)


def test_no_engine_module_holds_mutable_state():
    found = [f"{m.__name__}.{name}: {type(value).__name__}" for m in engine_modules()
             for name, value in vars(m).items() if not name.startswith("__") and isinstance(value, MUTABLE)]
    assert found == []


def test_the_check_sees_a_module_level_cache():
    """The check itself can fail: a module with a dict at module level is reported."""
    import types

    m = types.ModuleType("homing.engine.fake")
    m.cache = {}
    assert any(isinstance(v, MUTABLE) for k, v in vars(m).items() if not k.startswith("__"))
