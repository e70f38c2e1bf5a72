"""Type stubs for ``flagpole_python``: in-process Flagsmith-compatible flag evaluation on Flagpole's Rust
engine. Whole evaluations release the GIL when they cost more than handing it to another thread;
environments are immutable and shared between threads.

Shipped in the wheel with a ``py.typed`` marker (maturin adds both).
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterable, List, Literal, Mapping, Optional, Tuple, Union

__version__: str
# Benchmark-only: the estimated evaluation cost (ns) from which the GIL is released.
_GIL_RELEASE_THRESHOLD_NS: int

TraitValue = Union[str, int, float, bool, None]
# A trait may also be the Flagsmith SDK's envelope {"value": v, "transient": bool}.
Traits = Mapping[str, Union[TraitValue, Mapping[str, Any]]]
FlagValue = Union[str, int, float, bool, None]
# One identity of a batch: (identifier, traits or None), or just an identifier.
BatchIdentity = Union[str, Tuple[str, Optional[Traits]], List[Any]]

class FlagpoleError(Exception):
    """Base class of flagpole's errors."""

class DocumentError(FlagpoleError):
    """The environment document cannot be read or compiled."""

class EvaluationError(FlagpoleError):
    """The Flagsmith engine raises for this input (e.g. an invalid regex in a segment)."""

class FeatureNotFoundError(FlagpoleError):
    """The environment has no feature of this name (and no default_flag_handler was given)."""

class UpstreamError(FlagpoleError):
    """The environment document could not be fetched; the last good document is still served."""

class Flag:
    """One flag, like the Flagsmith SDK's ``Flag``."""

    @property
    def enabled(self) -> bool: ...
    @property
    def value(self) -> FlagValue: ...
    @property
    def feature_id(self) -> int: ...
    @property
    def feature_name(self) -> str: ...
    @property
    def reason(self) -> Optional[str]: ...
    @property
    def is_default(self) -> bool: ...

class Flags:
    """The flags of one evaluation, like the Flagsmith SDK's ``Flags``. An identity's flags are
    lazy, as the SDK's are: reading one flag evaluates that feature only (once); ``all_flags()``
    runs the whole evaluation (once). Evaluation errors are raised when a flag is read."""

    def all_flags(self) -> List[Flag]:
        """Every flag: those already read first, in read order (as the SDK lists them), then
        the others in document order. Raises EvaluationError if the engine raises."""
    def get_flag(self, feature_name: str) -> Flag:
        """Evaluates only this feature. Raises FeatureNotFoundError for an unknown feature
        unless a default_flag_handler was given (then its result is returned), and
        EvaluationError if the engine raises."""
    def is_feature_enabled(self, feature_name: str) -> bool: ...
    def get_feature_value(self, feature_name: str) -> FlagValue: ...
    def feature_names(self) -> List[str]:
        """The document's feature names, in order (nothing is evaluated)."""
    def __len__(self) -> int: ...
    def __contains__(self, feature_name: str) -> bool: ...

class Environment:
    """A compiled environment document (``/api/v1/environment-document/`` JSON)."""

    @staticmethod
    def from_path(path: Union[str, os.PathLike[str]]) -> Environment: ...
    @staticmethod
    def from_bytes(data: Union[bytes, str]) -> Environment: ...
    @staticmethod
    def from_dict(document: Mapping[str, Any]) -> Environment: ...
    def get_environment_flags(self) -> Flags:
        """The document's own flags: no identity, no segments."""
    def get_identity_flags(self, identifier: str, traits: Optional[Traits] = None) -> Flags:
        """One identity's flags, evaluated lazily (traits are converted now, once)."""
    def _get_identity_flags_gil(
        self, identifier: str, traits: Optional[Traits] = None, *,
        gil: Literal["auto", "release", "hold"]
    ) -> Flags:
        """Benchmark-only: the same, with the GIL never released (``"hold"``), always released
        for ``all_flags()`` (``"release"``), or as shipped (``"auto"``)."""
    def get_identity_flags_batch(self, identities: Iterable[BatchIdentity]) -> List[Flags]:
        """Many identities' flags, each evaluated whole, all in one release of the GIL (so
        threads scale even when one evaluation is short; a batch too small for a release to pay
        keeps the GIL). Same order as ``identities``; each ``Flags`` answers as
        ``get_identity_flags(...)`` after ``all_flags()``."""
    def explain(self, identifier: str, traits: Optional[Traits] = None) -> str:
        """Why this identity gets each value: a readable table."""
    @property
    def api_key(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def updated_at(self) -> Optional[str]: ...
    @property
    def _evaluation_cost_ns(self) -> int:
        """Benchmark-only: the estimated cost of one whole evaluation, made at compile time;
        ``all_flags()`` releases the GIL when it reaches ``_GIL_RELEASE_THRESHOLD_NS``."""
    def feature_names(self) -> List[str]: ...

class Flagpole:
    """A client: offline around an Environment, or following
    ``<api_url>/environment-document/`` with a server key (``ser.…``), refreshed every
    ``refresh_interval_seconds`` on a background thread (0 disables it) with conditional
    requests; a failed refresh keeps the last good document. With both, ``environment`` is the
    fallback while the upstream cannot be reached."""

    def __init__(
        self,
        environment_key: Optional[str] = None,
        api_url: Optional[str] = None,
        *,
        environment: Optional[Environment] = None,
        refresh_interval_seconds: float = 60.0,
        request_timeout_seconds: float = 10.0,
        default_flag_handler: Optional[Callable[[str], Any]] = None,
    ) -> None: ...
    def get_environment_flags(self) -> Flags: ...
    def get_identity_flags(self, identifier: str, traits: Optional[Traits] = None) -> Flags: ...
    def _get_identity_flags_gil(
        self, identifier: str, traits: Optional[Traits] = None, *,
        gil: Literal["auto", "release", "hold"]
    ) -> Flags: ...
    def get_identity_flags_batch(self, identities: Iterable[BatchIdentity]) -> List[Flags]: ...
    def explain(self, identifier: str, traits: Optional[Traits] = None) -> str: ...
    def refresh(self) -> bool:
        """Fetch now. True if a new document is served; raises UpstreamError on failure."""
    @property
    def environment(self) -> Environment: ...
    @property
    def last_error(self) -> Optional[str]: ...
    @property
    def last_success(self) -> Optional[float]: ...
    @property
    def refresh_counts(self) -> Tuple[int, int]: ...
    def close(self) -> None: ...
    def __enter__(self) -> Flagpole: ...
    def __exit__(self, *exc: Any) -> bool: ...

Client = Flagpole

