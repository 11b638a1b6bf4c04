"""The 21 procedural Super-CLEVR vehicles, built in code from primitives as named parts.

One per shape a scene can hold (``Ontology.scene_values('shape')``): the question generator's
22nd shape, ``addi`` ("regular car"), is never placed by the official image generator and has no
model here either.

Every vehicle is modelled in metres and then normalised to the canonical frame: front toward +x,
left toward +y, up +z, resting on z = 0 (lowest vertex), centred in x/y on its bounding box, the
longest horizontal side exactly 1.0 long. UVs are scaled with the geometry, so one uv unit is one
canonical length unit on every part (textures keep one scale across a vehicle).

Each vehicle's ``parts`` hold exactly the part names of ``parts.per_shape`` in the Super-CLEVR
ontology (in that order), each a visible piece of its own; everything else (chassis, cabin, frame,
fuselage, windows, struts, extra saddles ...) is in ``body``. Plural part names ending in ``_s``
(``door_left_s``, ``footrest_left_s``, ``exhaust_right_s``) are one mesh with several pieces.

The models are deterministic (no randomness) and cached; their arrays are read-only.
"""
from __future__ import annotations

from functools import lru_cache

from executors.ontology import load_ontology

from nsvqa.generation.vehicles.aeroplanes import _aeroplane
from nsvqa.generation.vehicles.bicycles import _bicycle
from nsvqa.generation.vehicles.buses import _bus
from nsvqa.generation.vehicles.cars import _CARS, _car
from nsvqa.generation.vehicles.model import CATEGORIES, SHAPES, VehicleModel, category_of
from nsvqa.generation.vehicles.motorbikes import _motorbike

__all__ = ["VehicleModel", "build_vehicle", "SHAPES", "CATEGORIES", "category_of"]


@lru_cache(maxsize=None)
def build_vehicle(shape: str) -> VehicleModel:
    """The procedural model of ``shape`` (deterministic, cached; arrays are read-only).

    Raises:
        KeyError: ``shape`` is not one of :data:`SHAPES` (the ontology's unplaced ``addi`` included:
            the official image generator has no model for it either).
    """
    if shape not in SHAPES and shape in load_ontology("superclevr").unplaced.get("shape", ()):
        raise KeyError(f"vehicle shape {shape!r} has no model: questions may name it, but no scene "
                       f"places it (as in the Super-CLEVR release); valid: {SHAPES}")
    cat = category_of(shape)
    if cat == "car":
        return _car(shape, _CARS[shape])
    if cat == "bus":
        return _bus(shape)
    if cat == "motorbike":
        return _motorbike(shape)
    if cat == "aeroplane":
        return _aeroplane(shape)
    return _bicycle(shape)
