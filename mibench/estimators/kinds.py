"""The estimator interfaces mibench benchmarks, as small protocols in the style of bmi's
``src/bmi/interface.py``: three kinds of estimator, one registry (``mibench.estimators.ESTIMATORS``).

* ``"critic"`` -- :class:`CriticBound`: heads on a critic's K x K score matrix, under both protocols (the
  streaming one trains the critic; under the sample protocol ``mibench.estimate`` trains it on the fixed
  dataset and reports a held-out value);
* ``"black-box"`` / ``"generative"`` -- :class:`SampleEstimator`: one dataset in, one number (nats) out;
  sample protocol only (asked to stream, refused in one line: :func:`require_streamable`).  A plain
  function ``f(x, y) -> float`` is one too (:class:`FunctionEstimator`).

Registry entries are :class:`ClassFactory` objects: an entry's kind, training objective and bound are
read off the class, never by building one.  Plug-ins (``package.module:Name``, the ``mibench.estimators``
entry-point group, ``mibench.register_estimator``): :mod:`mibench.estimators.lookup` and
:mod:`mibench.estimators.plugins`.
"""
from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from typing import Any, Callable, Protocol, runtime_checkable

from mibench.errors import MibenchError

CRITIC = "critic"
BLACK_BOX = "black-box"
GENERATIVE = "generative"
KINDS = (CRITIC, BLACK_BOX, GENERATIVE)
SAMPLE_KINDS = (BLACK_BOX, GENERATIVE)

#: what an estimator's reported number is relative to the truth, shown beside it in every leaderboard
#: so that a bound is never ranked as an estimate without saying so
LOWER_BOUND = "lower bound"
UPPER_BOUND = "upper bound"
ESTIMATE = "estimate"
BOUND_KINDS = (LOWER_BOUND, UPPER_BOUND, ESTIMATE)


@runtime_checkable
class CriticBound(Protocol):
    """A critic-bound head (``mibench.estimators.Estimator``, an ``nn.Module``): turns a K x K score matrix
    into ``(loss to minimise, reported estimate in nats)``; the harness trains the critic.  Under the
    streaming protocol (``mibench run`` without ``--n``) a fresh batch per step, a staircase; under the
    sample protocol (``--n N``) ``mibench.estimate(x, y, estimator=NAME, critic=..., seed=SEED,
    units="nats")`` trains head and critic on the fixed dataset and reports a held-out value."""

    training_objective: str | None

    def ceiling_nats(self, batch_size: int) -> float:
        """Largest value the reported estimate can take for batch K (``inf`` if unbounded)."""

    def forward(self, scores):  # (loss, estimate)
        """One training step on the score matrix."""


@runtime_checkable
class SampleEstimator(Protocol):
    """A sample-based estimator (black-box or generative): one dataset in, one number (nats) out.

    * class attribute ``kind: str`` -- ``"black-box"`` (KSG, CCA, histogram, a user's function) or
      ``"generative"`` (trains its own model: flows, difference of entropies, score models);
    * ``estimate(self, x, y, *, seed=0) -> float`` -- I(X;Y) in **nats** for ``x`` (n, dx) and ``y`` (n, dy)
      float64 arrays;
    * ``n_parameters: int`` -- trainable parameters (0 for non-parametric; may be set during ``estimate``).

    Registered like any estimator: ``ESTIMATORS.add(name, description, ClassFactory(cls, args))``, or with
    any zero-argument factory; a plain function is wrapped by :func:`as_estimator` in
    :class:`FunctionEstimator` (a ``seed`` keyword is passed when ``f`` accepts one).
    """

    kind: str
    n_parameters: int

    def estimate(self, x, y, *, seed: int = 0) -> float:
        """I(X;Y) in nats for x (n, dx), y (n, dy) float64 arrays."""


class FunctionEstimator:
    """A user's ``f(x, y) -> float`` (nats) as a black-box :class:`SampleEstimator`."""

    kind = BLACK_BOX

    def __init__(self, fn: Callable, name: str | None = None):
        self.fn = fn
        self.name = name or getattr(fn, "__name__", "function")
        self.n_parameters = int(getattr(fn, "n_parameters", 0) or 0)
        try:
            params = inspect.signature(fn).parameters
            self._takes_seed = "seed" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())
        except (TypeError, ValueError):
            self._takes_seed = False

    def estimate(self, x, y, *, seed: int = 0) -> float:
        from mibench.utils.checks import estimate_value

        value = self.fn(x, y, seed=seed) if self._takes_seed else self.fn(x, y)
        return estimate_value(value, f"estimator {self.name!r}")       # float(True), float("0.3") would pass

    def __repr__(self) -> str:
        return f"FunctionEstimator({self.name})"


def _is_critic_bound(obj) -> bool:
    if getattr(obj, "kind", None) == CRITIC:
        return True
    try:
        from torch import nn
    except ImportError:  # pragma: no cover
        return False
    return isinstance(obj, nn.Module) and not callable(getattr(obj, "estimate", None))


def _is_torch_module(obj) -> bool:
    try:
        from torch import nn
    except ImportError:  # pragma: no cover
        return False
    return isinstance(obj, nn.Module)


def _is_sample_estimator(obj) -> bool:
    return (not isinstance(obj, type) and callable(getattr(obj, "estimate", None))
            and getattr(obj, "kind", None) in SAMPLE_KINDS)


def _positional_arity(fn) -> int | None:
    """Number of required positional parameters of ``fn``, None if it cannot be inspected."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    return sum(1 for p in params if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def kind_of(obj) -> str:
    """``"critic"``, ``"black-box"`` or ``"generative"`` for an estimator object; one line otherwise."""
    if _is_sample_estimator(obj):
        return obj.kind
    if _is_critic_bound(obj):
        return CRITIC
    kind = getattr(obj, "kind", None)
    if kind is not None and kind not in KINDS:
        raise MibenchError(f"estimator {obj!r} has kind {kind!r}; the kinds are: {', '.join(KINDS)}")
    raise MibenchError(f"{obj!r} is not an estimator: give an object with kind ('black-box'/'generative') and "
                       "estimate(x, y, *, seed=0) -> nats, a function f(x, y) -> nats, or a mibench Estimator head")


def as_estimator(obj: Any, name: str | None = None):
    """Normalise what a user hands over into an estimator *object*:

    * an estimator object (sample-based or critic head) -> itself;
    * a class -> ``obj()``;
    * a function with two required positional parameters -> :class:`FunctionEstimator`;
    * a zero-argument factory -> ``obj()``, normalised again.
    """
    kind = None if isinstance(obj, type) else getattr(obj, "kind", None)
    if isinstance(kind, str) and kind not in KINDS:
        raise MibenchError(f"{name or type(obj).__name__!r} has kind {kind!r}; the kinds are: {', '.join(KINDS)}")
    if kind == CRITIC and not _is_torch_module(obj):
        raise MibenchError(f"{name or type(obj).__name__!r} has kind 'critic' but is not a torch module: a critic "
                           "head subclasses mibench.estimators.Estimator (forward(scores) -> (loss, estimate))")
    if _is_sample_estimator(obj) or (not isinstance(obj, type) and _is_critic_bound(obj)):
        kind_of(obj)
        return obj
    if isinstance(obj, type):
        try:
            inst = obj()
        except TypeError as e:
            raise MibenchError(f"estimator class {obj.__name__} could not be built without arguments: {e}") from None
        return as_estimator(inst, name)
    if callable(obj):
        arity = _positional_arity(obj)
        if arity is not None and arity >= 2:
            return FunctionEstimator(obj, name)
        if arity == 0:
            return as_estimator(obj(), name)
    raise MibenchError(f"{name or obj!r} is not an estimator: give an object with kind ('black-box'/'generative') "
                       "and estimate(x, y, *, seed=0) -> nats, a class building one, or a function f(x, y) -> nats")


def class_kind(cls: type) -> str:
    """The kind an estimator class declares (its ``kind`` attribute; a torch module without an
    ``estimate`` method is a critic head), read off the class without building one."""
    kind = getattr(cls, "kind", None)
    if kind in KINDS:
        return kind
    if kind is None:
        try:
            from torch import nn
        except ImportError:  # pragma: no cover
            nn = None
        if nn is not None and issubclass(cls, nn.Module) and not callable(getattr(cls, "estimate", None)):
            return CRITIC
    raise MibenchError(f"{cls.__name__} declares no estimator kind: set the class attribute kind to one of "
                       f"{', '.join(KINDS)} (or subclass mibench.estimators.Estimator for a critic head)")


@dataclass(frozen=True)
class ClassFactory:
    """A registry entry's estimator: ``target(*args)``, where ``target`` is a class or, for a module
    kept out of ``import mibench.estimators``, ``"package.module:Class"`` imported when first needed.
    Its ``kind`` and ``training_objective`` are the class's own attributes: known without building
    an estimator."""

    target: type | str
    args: tuple = ()
    #: lower bound / upper bound / estimate for this entry (None: the class's ``bound`` attribute,
    #: else "estimate"); an entry decides because one class may report several readouts
    bound: str | None = None
    #: the entry's settings of ``target`` by name (a dict; kept as (name, value) pairs so the factory
    #: stays hashable); a value that is itself a :class:`ClassFactory` is built first (composition:
    #: the hybrid's generative part)
    options: tuple | dict = ()

    def __post_init__(self):
        if isinstance(self.options, dict):
            object.__setattr__(self, "options", tuple(self.options.items()))

    def cls(self) -> type:
        if isinstance(self.target, str):
            module, _, name = self.target.partition(":")
            return getattr(importlib.import_module(module), name)
        return self.target

    @property
    def kind(self) -> str:
        return class_kind(self.cls())

    @property
    def training_objective(self) -> str | None:
        return getattr(self.cls(), "training_objective", None)

    @property
    def bound_kind(self) -> str:
        return self.bound or getattr(self.cls(), "bound", None) or ESTIMATE

    def __call__(self, **options):
        """The estimator; ``options`` add to (or replace) the entry's settings."""
        merged = {**dict(self.options), **options}
        return self.cls()(*self.args, **{k: v() if isinstance(v, ClassFactory) else v for k, v in merged.items()})


@dataclass(frozen=True)
class ObjectFactory:
    """A plug-in handed over as a ready-made object or a zero-argument factory: ``build()`` gives the
    estimator; its ``kind`` was read when it was registered."""

    build: Callable[[], Any]
    kind: str
    training_objective: str | None = None
    bound_kind: str = ESTIMATE

    def __call__(self):
        return self.build()


def _object_factory(build: Callable[[], Any], built: Any) -> ObjectFactory:
    """An :class:`ObjectFactory` whose kind, training objective and bound kind are read off ``built``."""
    return ObjectFactory(build, kind_of(built), getattr(built, "training_objective", None),
                         getattr(built, "bound", None) or ESTIMATE)


def factory_for(obj: Any, name: str | None = None) -> ClassFactory | ObjectFactory:
    """The registry factory of what a user hands over: a class (checked by building one now),
    a function ``f(x, y)`` (wrapped in :class:`FunctionEstimator`), a zero-argument factory (called
    afresh each time) or a ready-made object (returned as is)."""
    if isinstance(obj, type):
        built = as_estimator(obj, name)      # one line now if it is not an estimator
        try:
            class_kind(obj)
        except MibenchError:
            return _object_factory(lambda: as_estimator(obj, name), built)
        return ClassFactory(obj)
    if callable(obj) and not _is_sample_estimator(obj) and not _is_critic_bound(obj):
        arity = _positional_arity(obj)
        if arity is not None and arity >= 2:
            return ClassFactory(FunctionEstimator, (obj, name))
        if arity == 0:
            built = as_estimator(obj(), name)
            return _object_factory(lambda: as_estimator(obj(), name), built)
    built = as_estimator(obj, name)
    return _object_factory(lambda: obj, built)


def as_factory(obj: Any) -> ClassFactory | ObjectFactory:
    """What a registry entry holds: a :class:`ClassFactory` / :class:`ObjectFactory` as it is, a class
    as a :class:`ClassFactory`, any other zero-argument callable as an :class:`ObjectFactory` (built
    once here to learn its kind)."""
    if isinstance(obj, (ClassFactory, ObjectFactory)):
        return obj
    if isinstance(obj, type):
        class_kind(obj)
        return ClassFactory(obj)
    built = obj()
    return _object_factory(obj, built)
