"""Program executors for neuro-symbolic VQA (numpy only; torch is used lazily for tensor input).

>>> from executors import load_ontology, Program, SymbolicScene, DeterministicExecutor
"""
from .deterministic import DeterministicExecutor, ExecutionResult
from .dsl import FUNCTIONS, SIGNATURES, Signature, signature
from .errors import (ExecutionError, FormatError, InvalidObjectReference, InvalidProgram,
                     TypeMismatch, UniquenessError)
from .ontology import Ontology, load_ontology
from .probabilistic import ProbabilisticExecutor
from .program import Node, Program
from .scene import SceneLikelihoods, SymbolicScene

__all__ = [
    "DeterministicExecutor", "ProbabilisticExecutor", "ExecutionResult", "FUNCTIONS", "SIGNATURES",
    "Signature", "signature", "ExecutionError", "FormatError", "InvalidObjectReference",
    "InvalidProgram", "TypeMismatch", "UniquenessError", "Ontology", "load_ontology", "Node",
    "Program", "SceneLikelihoods", "SymbolicScene",
]
