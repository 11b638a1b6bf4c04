"""Triangle meshes shared by the procedural vehicles and the renderer."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Mesh:
    """An indexed triangle mesh in its model frame.

    Attributes:
        positions: (V, 3) float32 vertex positions.
        normals: (V, 3) float32 unit vertex normals (flat-shaded faces duplicate their vertices).
        uvs: (V, 2) float32 surface coordinates that procedural textures follow (about one unit
            per unit of surface length, so stripes have the same width on every part).
        indices: (F, 3) uint32 triangle vertex indices, counter-clockwise seen from outside.
    """

    positions: np.ndarray
    normals: np.ndarray
    uvs: np.ndarray
    indices: np.ndarray

    def __post_init__(self) -> None:
        v = self.positions.shape[0]
        assert self.positions.shape == (v, 3) and self.normals.shape == (v, 3), "bad vertex arrays"
        assert self.uvs.shape == (v, 2) and self.indices.ndim == 2 and self.indices.shape[1] == 3
        assert self.indices.size == 0 or int(self.indices.max()) < v, "index out of range"

    @property
    def n_triangles(self) -> int:
        return int(self.indices.shape[0])

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """(min xyz, max xyz) of the vertices."""
        return self.positions.min(0), self.positions.max(0)

    @staticmethod
    def concat(meshes: "list[Mesh]") -> "Mesh":
        """One mesh holding all triangles of ``meshes``."""
        offs = np.cumsum([0] + [m.positions.shape[0] for m in meshes[:-1]])
        return Mesh(np.concatenate([m.positions for m in meshes]).astype(np.float32),
                    np.concatenate([m.normals for m in meshes]).astype(np.float32),
                    np.concatenate([m.uvs for m in meshes]).astype(np.float32),
                    np.concatenate([m.indices + o for m, o in zip(meshes, offs)]).astype(np.uint32))

    def transformed(self, matrix: np.ndarray) -> "Mesh":
        """The mesh moved by a 4x4 affine ``matrix`` (normals by its inverse transpose)."""
        m = np.asarray(matrix, dtype=np.float64)
        p = self.positions @ m[:3, :3].T + m[:3, 3]
        n = self.normals @ np.linalg.inv(m[:3, :3])
        n /= np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-12)
        return Mesh(p.astype(np.float32), n.astype(np.float32), self.uvs, self.indices)
