"""The registry: every operator by name, in the order that decides which of two equal mutants is kept."""
from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from fidelity.discover.operators._base import Operator
from fidelity.discover.operators.activations import ActivationFactor, ActivationSwap
from fidelity.discover.operators.axes import (
    DimArgument, KeywordFlag, ReductionSwap, TransposeInserted, TransposeRemoved,
)
from fidelity.discover.operators.forwarding import (
    ForwardedArgumentDefault, ForwardedArgumentNone, ForwardedKeywordDropped,
)
from fidelity.discover.operators.guards import CheckCallRemoved, GuardBoolSwapped, GuardBoundaryMoved, GuardRemoved
from fidelity.discover.operators.literals import NumericLiteral, ParameterDefault
from fidelity.discover.operators.outputs import DetachInserted, DowncastInserted, DtypeNarrowed
from fidelity.discover.operators.structure import ArgumentsSwapped, AssignmentsSwapped, RangeBound, TermDropped

__all__ = ["OPERATORS"]

_ALL: tuple[Operator, ...] = (
    GuardBoolSwapped(), GuardBoundaryMoved(), GuardRemoved(), CheckCallRemoved(),
    NumericLiteral(), ParameterDefault(),
    DimArgument(), KeywordFlag(), TransposeRemoved(), TransposeInserted(), ReductionSwap(),
    TermDropped(), AssignmentsSwapped(),
    DetachInserted(), ActivationSwap(), ActivationFactor(), DowncastInserted(), DtypeNarrowed(),
    RangeBound(), ArgumentsSwapped(),
    ForwardedKeywordDropped(), ForwardedArgumentNone(), ForwardedArgumentDefault(),
)

OPERATORS: Mapping[str, Operator] = MappingProxyType({op.name: op for op in _ALL})
