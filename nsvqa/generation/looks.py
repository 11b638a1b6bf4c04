"""Render looks: how large the generator draws each vehicle and how wide its camera sees.

A look is part of a variant's scene parameters (``scene.look`` in its spec, default ``v1``): a new
look is a new dataset, and every dataset made before looks existed is ``v1``, byte for byte (its
manifests do not even name it).

- ``v1``: the generator's look since its first version, and every study dataset's. A vehicle's
  longest side is 2.2 world units when large and 1.15 when small, whatever its shape (the ratio
  of Super-CLEVR's two scales), and the camera's vertical field of view is 34 degrees.
- ``v2``: matched to the official Super-CLEVR renders, from what ``scripts/rerender_official.py``
  measured on the release's ten sample scenes (results/transfer/renders). Fitting a pinhole camera
  to each scene's ``3d_coords`` and ``pixel_coords`` gives CLEVR's camera: about (7.3, -6.5, 5.4),
  like this generator's, but with a 37.8-degree vertical field of view, which is CLEVR's 35 mm lens
  on a 32 mm sensor at 4:3 (2 atan(12 / 35) = 37.85 degrees). Official vehicles are also larger: the
  official generator scales each CGPart model by 3.5 (large) or 1.8 (small) (``sizes`` in the
  release's ``properties_cgpart.json``), and the models' longest ground side, ``info_box``
  there, runs from 0.76 (the jet, wingspan) to 0.97 (the articulated bus). ``v2`` draws each shape
  with that longest side: an SUV's is 3.5 x 0.87 = 3.06 units when large, against 2.2 in ``v1``.
  Vehicles that large do not fit ten to a scene without touching rectangles (13 of 100 ten-object
  layouts found no placement), and the official scenes put them closer than that: centres 0.36 to
  0.7 of their half-lengths' sum apart in the sample scenes. ``v2`` keeps 80% of each footprint
  free (no failure in 100 layouts). Its lights are 0.8x the renderer's and its metal mirrors 0.2x
  the studio: the official renders' mean brightness per material and on the ground
  (``scripts/rerender_official.py``; docs/variants.md).

Figures from Lizw14/Super-CLEVR (``properties_cgpart.json``) and Johnson et al. (CLEVR, 2017).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Mapping

from nsvqa.generation.renderer import Lights

#: The look of every dataset made before looks existed (and the default).
DEFAULT_LOOK = "v1"

#: Official scale per size (``sizes`` of the release's ``properties_cgpart.json``).
OFFICIAL_SIZES = {"large": 3.5, "small": 1.8}

#: Longest ground side (max of x, y of ``info_box``) of each official CGPart model, per shape.
OFFICIAL_LONGEST_SIDE = {
    "suv": 0.8736, "wagon": 0.8872, "minivan": 0.8603, "sedan": 0.8964, "truck": 0.8906, "addi": 0.9095,
    "articulated": 0.9718, "regular": 0.9299, "double": 0.929, "school": 0.9491,
    "chopper": 0.8685, "dirtbike": 0.8293, "scooter": 0.7773, "cruiser": 0.8444,
    "jet": 0.7609, "fighter": 0.7543, "biplane": 0.7423, "airliner": 0.7261,
    "road": 0.8583, "utility": 0.7973, "mountain": 0.8162, "tandem": 0.9121,
}


@dataclass(frozen=True)
class Look:
    """One look.

    Attributes:
        name: what a variant's ``scene.look`` says.
        fov_y_deg: the camera's vertical field of view.
        size_length: the longest side of every vehicle per size (world units); None: per shape,
            from ``shape_length``.
        shape_length: size -> shape -> longest side (used when ``size_length`` is None).
        light_gain: the key, fill and ambient lights' intensities, times the renderer's defaults.
        env_gain: the metal's environment reflection, times the renderer's default.
        ground_color: the ground's linear RGB.
        footprint_scale: objects may not overlap on the ground within their rectangular footprint
            times this (1: the whole rectangle; less lets vehicles, narrower than their rectangle,
            come closer).
    """

    name: str
    fov_y_deg: float
    size_length: Mapping[str, float] | None = None
    shape_length: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    light_gain: float = 1.0
    env_gain: float = 1.0
    ground_color: tuple[float, float, float] = (0.55, 0.55, 0.55)
    footprint_scale: float = 1.0

    def lights(self) -> Lights:
        """The renderer's light rig with the key, fill and ambient light times ``light_gain`` and
        the metal's reflection times ``env_gain``."""
        base = Lights()
        g = self.light_gain
        return replace(base, key_intensity=base.key_intensity * g, fill_intensity=base.fill_intensity * g,
                       ambient=base.ambient * g, env_gain=self.env_gain)

    def scale(self, shape: str, size: str) -> float:
        """The uniform scale of ``shape``'s model (longest side 1) at ``size``.

        Raises:
            ValueError: a size (or, per shape, a shape) this look does not know.
        """
        if self.size_length is not None:
            if size not in self.size_length:
                raise ValueError(f"look {self.name!r}: no size {size!r} (sizes: {sorted(self.size_length)})")
            return self.size_length[size]
        try:
            return self.shape_length[size][shape]
        except KeyError:
            raise ValueError(f"look {self.name!r}: no length for a {size!r} {shape!r}") from None


LOOKS: dict[str, Look] = {
    "v1": Look("v1", 34.0, size_length={"large": 2.2, "small": 1.15}),
    "v2": Look("v2", 37.85, shape_length={size: {shape: k * side for shape, side in OFFICIAL_LONGEST_SIDE.items()}
                                          for size, k in OFFICIAL_SIZES.items()},
               light_gain=0.8, env_gain=0.2, footprint_scale=0.8),
}


def get_look(name: str) -> Look:
    """The look called ``name``.

    Raises:
        ValueError: no such look (the message lists them).
    """
    try:
        return LOOKS[name]
    except KeyError:
        raise ValueError(f"no render look {name!r} (looks: {', '.join(sorted(LOOKS))})") from None


__all__ = ["DEFAULT_LOOK", "LOOKS", "Look", "OFFICIAL_LONGEST_SIDE", "OFFICIAL_SIZES", "get_look"]
