"""Headless OpenGL renderer of the Super-CLEVR-style scenes (moderngl on an EGL context).

One :class:`Renderer` owns one standalone EGL context (Mesa's llvmpipe on CPU, the GPU driver
where there is one), created once and reused by every :meth:`Renderer.render`; each distinct
:class:`~nsvqa.generation.meshes.Mesh` is uploaded once (cached by ``id(mesh)``, the cache keeps
the mesh alive so the id cannot be reused). A render:

1. **Shadow pass** - depth only, from the key light, orthographic, fitted to the world bounds of
   the items (the casters; the ground only receives), ``shadow_size`` squared texels.
2. **Colour pass** - a large ground plane plus the items, lit by a key light (shadow map, PCF
   with per-pixel rotated taps: soft edges of ``SHADOW_SOFTNESS`` world units), a fill light and
   a hemispherical ambient; Lambert diffuse + Blinn-Phong specular. *Rubber*: matte, weak broad
   highlight. *Metal*: dim diffuse, strong sharp highlight (+ a broader sheen) tinted by the
   colour, and an environment reflection (procedural studio: bright horizon, darker zenith, dark
   grey floor, looked up with the reflection vector, tinted by the colour). Shading is done in
   linear light: the item colours (docs/executors.md RGB / 255) are decoded with gamma 2.2 and the
   result encoded back, so a surface lit at about unit intensity shows its reference RGB. The
   ground darkens with distance from the camera into the background grey
   (``BACKGROUND_SCALE`` x ground colour), like the Blender renders' backdrop.
3. **Ids** - exactly one object id and one part id per pixel, of the nearest fragment, without
   multisampling, in two ``int16`` render targets read back directly as ``object_ids`` /
   ``part_ids`` (``-1`` = background, the ground included).

Anti-aliasing: ``samples > 1`` renders the colour pass multisampled (resolved into the output)
and the ids in a separate single-sample pass (three geometry passes). ``samples <= 1`` is the
fast path for llvmpipe, whose MSAA is expensive: one single-sample pass writes colour and both
ids (multiple render targets), then a 9-tap FXAA post-filter smooths the colour edges (two
geometry passes). The id images are exact in both modes (one id per pixel, of the nearest
fragment). Where two surfaces lie at the same depth (a part on its body) the id pass, which
transforms vertices by one premultiplied matrix, and the single-sample colour pass (model, then
view-projection) can round the depths differently: there the two modes, and :meth:`Renderer.render_ids`
and :meth:`Renderer.render` of the fast path, may disagree on the part id of a few pixels.

Closed meshes (every edge shared by two consistently oriented triangles, positive volume) are
drawn with back-face culling, which halves llvmpipe's per-triangle cost; open ones two-sided.
The projection is flipped vertically when drawing so that OpenGL's bottom-up rows come back as
top-down image rows: every read-back lands in its final numpy array without a flip or copy.
The GLSL sources are files of ``shaders/`` beside this module (package data).
Fragment shaders are specialised per (material, texture) at compile time (llvmpipe executes
both sides of every branch). Output is deterministic for the same inputs (no time or random
state; the PCF rotation is a fixed 4x4 pixel pattern).

Procedural textures (from the mesh ``uvs``, ``TEXTURE_PERIOD`` uv units per period; uvs are
about one unit per unit of surface length): ``vstripped`` - bands alternating along ``u``,
``stripped`` - along ``v``, ``checkered`` - a checkerboard, ``dotted`` - round dots on a square
grid; edges anti-aliased with ``fwidth``. The second tone is a *shade of the base colour*, same
hue: darker (x ``TEXTURE_DARK``) - the case of all eight Super-CLEVR colours, whose display
luminance is >= 0.28 - or, for a colour darker than 0.2, lighter (mixed ``TEXTURE_LIGHT`` toward
white). So the object keeps its colour name and the pattern stays visible.

Performance (llvmpipe, Mesa 22.3, one Xeon core via ``taskset -c 0``, 10 objects x ~4k
triangles, see the tests' report): 320x240 ``samples=0, shadow_size=512`` about 19 ms a render,
``samples=0, shadow_size=1024`` about 22 ms, ``samples=4`` (the default) about 44 ms; 640x480
about 47 ms (``samples=0``) / 75 ms (``samples=4``). For bulk generation at 320x240 use
``Renderer(320, 240, samples=0, shadow_size=512)``. llvmpipe starts one rasterizer thread per
CPU it sees; with one generator process per core set ``LP_NUM_THREADS=1`` in the environment
before the first context is made (this module never sets environment variables). A Renderer
must be used from one thread at a time; it makes its context current around each call.
"""
from __future__ import annotations

import importlib
from collections import OrderedDict
from functools import lru_cache
from importlib import resources
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from nsvqa.generation.meshes import Mesh

__all__ = ["RendererUnavailable", "Camera", "Lights", "DrawItem", "RenderResult", "Renderer",
           "TEXTURES", "TEXTURE_PERIOD"]

#: Texture names, in the order of the shaders' ``TEXTURE`` codes.
TEXTURES = ("none", "vstripped", "checkered", "stripped", "dotted")
#: World units (uv units) per stripe/check/dot period.
TEXTURE_PERIOD = 0.25
#: Second tone of a texture: base * TEXTURE_DARK for light colours, mix(base, white, TEXTURE_LIGHT)
#: for dark ones.
TEXTURE_DARK = 0.5
TEXTURE_LIGHT = 0.5
#: Background (beyond the far ground) = ground colour x this (the Blender renders' dim backdrop).
BACKGROUND_SCALE = 0.74
#: Half-width of the PCF kernel, in world units (soft shadow penumbra).
SHADOW_SOFTNESS = 0.05
#: Meshes whose GPU buffers are kept (least recently used ones are released beyond that).
MESH_CACHE_SIZE = 1024

_APT_HINT = ("install the EGL/Mesa runtime: `apt-get install libegl1 libgl1-mesa-dri` "
             "(and libegl-mesa0 libgles2 on some distributions)")


class RendererUnavailable(RuntimeError):
    """No headless OpenGL (EGL) context could be created."""


# ----------------------------------------------------------------------------------- camera


def _normalize(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    if n < 1e-12:
        raise ValueError("zero-length vector")
    return v / n


@dataclass(frozen=True)
class Camera:
    """A perspective pinhole camera looking from ``eye`` at ``target`` (world: z up)."""

    eye: tuple[float, float, float]
    target: tuple[float, float, float]
    up: tuple[float, float, float] = (0.0, 0.0, 1.0)
    fov_y_deg: float = 40.0

    def _basis(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(right, true up, forward) unit vectors in world space."""
        eye = np.asarray(self.eye, np.float64)
        fwd = _normalize(np.asarray(self.target, np.float64) - eye)
        right = _normalize(np.cross(fwd, np.asarray(self.up, np.float64)))
        return right, np.cross(right, fwd), fwd

    def view_matrix(self) -> np.ndarray:
        """World -> view (OpenGL convention: camera at the origin looking down -z), 4x4."""
        r, u, f = self._basis()
        eye = np.asarray(self.eye, np.float64)
        m = np.eye(4)
        m[0, :3], m[1, :3], m[2, :3] = r, u, -f
        m[:3, 3] = -m[:3, :3] @ eye
        return m

    def projection_matrix(self, aspect: float, near: float = 0.1, far: float = 100.0) -> np.ndarray:
        """View -> clip, OpenGL perspective (NDC z in [-1, 1]), 4x4."""
        t = 1.0 / np.tan(np.radians(self.fov_y_deg) / 2.0)
        m = np.zeros((4, 4))
        m[0, 0], m[1, 1] = t / aspect, t
        m[2, 2], m[2, 3] = (far + near) / (near - far), 2.0 * far * near / (near - far)
        m[3, 2] = -1.0
        return m

    def project(self, points: np.ndarray, width: int, height: int) -> np.ndarray:
        """Pixel coordinates of world ``points`` (N, 3) -> (N, 3).

        Columns: x (pixels, to the right, 0 at the left edge of the image), y (pixels, DOWN, 0 at
        the top edge: row ``int(y)`` of the image arrays), and the view-space depth (distance
        along the viewing axis, positive in front of the camera). Continuous coordinates: pixel
        (i, j) covers [i, i+1) x [j, j+1), its centre is at (i + 0.5, j + 0.5).
        """
        p = np.asarray(points, np.float64).reshape(-1, 3)
        view = self.view_matrix()
        v = p @ view[:3, :3].T + view[:3, 3]
        depth = -v[:, 2]
        t = 1.0 / np.tan(np.radians(self.fov_y_deg) / 2.0)
        aspect = width / height
        with np.errstate(divide="ignore", invalid="ignore"):
            ndc_x = (t / aspect) * v[:, 0] / depth
            ndc_y = t * v[:, 1] / depth
        return np.stack([(ndc_x + 1.0) * 0.5 * width, (1.0 - ndc_y) * 0.5 * height, depth], 1)

    def ground_directions(self) -> dict[str, list[float]]:
        """CLEVR-style scene directions on the ground plane z = 0 (unit vectors, lists): the camera
        right / forward vectors projected on the ground (forward = ``behind``, away from the
        camera; a camera looking straight down uses its image-up vector instead)."""
        r, u, f = self._basis()
        right = _normalize(np.array([r[0], r[1], 0.0]))
        fwd = f if np.hypot(f[0], f[1]) > 1e-6 else u
        behind = _normalize(np.array([fwd[0], fwd[1], 0.0]))
        out = {"right": right, "left": -right, "behind": behind, "front": -behind,
               "above": np.array([0.0, 0.0, 1.0]), "below": np.array([0.0, 0.0, -1.0])}
        return {k: [float(x) + 0.0 for x in v] for k, v in out.items()}


@dataclass(frozen=True)
class Lights:
    """Directional key and fill lights plus ambient. Directions point FROM the surface TOWARD the
    light (unit vectors; normalised again when used). Only the key light casts shadows.

    The defaults give the Super-CLEVR look for its standard camera (at about (7.5, -6.5, 5.3)
    looking at the origin): the key light from behind-right of the scene, so that shadows fall
    toward the front-left, the fill light from the camera's side."""

    key_dir: tuple[float, float, float] = (-0.05, 0.64, 0.77)
    key_intensity: float = 0.9
    fill_dir: tuple[float, float, float] = (0.40, -0.73, 0.55)
    fill_intensity: float = 0.45
    ambient: float = 0.3
    env_gain: float = 1.0   # the metal's environment reflection (the studio it mirrors)


@dataclass
class DrawItem:
    """One mesh to draw: an object's body or one of its parts."""

    mesh: Mesh
    model: np.ndarray  # (4, 4) model -> world
    color: tuple[float, float, float]  # RGB in 0..1 (docs/executors.md 0-255 values / 255)
    metal: bool
    texture: str  # one of TEXTURES
    object_id: int  # 0..N-1
    part_id: int  # 0 = body, k+1 = part k of the shape's part list


@dataclass
class RenderResult:
    rgb: np.ndarray  # (H, W, 3) uint8
    object_ids: np.ndarray  # (H, W) int16, -1 = background
    part_ids: np.ndarray  # (H, W) int16, -1 background, 0 body, k+1 part k


# ---------------------------------------------------------------------------------- shaders

# The GLSL sources are files of shaders/ beside this module (package data), read on first use and
# cached; each file is a shader's exact source text (so the first line is empty):
#   frame.glsl     the per-frame uniform block (std140), spliced into the colour-pass shaders in
#                  place of their FRAME_BLOCK line
#   position.vert  position only: the shadow pass (with depth.frag, depth only) and the id pass
#                  (with ids.frag: the object / part id, two int targets)
#   scene.vert     the colour pass (world position, normal, uv)
#   scene.frag     the colour pass, specialised at compile time per (MATERIAL, TEXTURE) by
#                  #defines (llvmpipe runs both sides of every branch, so one shader per
#                  combination is much cheaper than uniforms selecting code). MATERIAL: 0 rubber,
#                  1 metal, 2 ground; TEXTURE: index into TEXTURES. Location 0: the colour;
#                  locations 1, 2: object / part id (the single-sample path attaches them to the
#                  same framebuffer; ignored otherwise).
#   quad.vert, fxaa.frag  post-process anti-aliasing of the single-sample path (FXAA 2 style,
#                  9 taps) over a full-screen quad
_SHADER_DIR = "shaders"


@lru_cache(maxsize=None)
def _shader(name: str) -> str:
    """The GLSL source ``shaders/<name>`` of this package, byte for byte (read once, cached)."""
    return (resources.files(__package__) / _SHADER_DIR / name).read_bytes().decode("utf-8")


# --------------------------------------------------------------------------------- renderer


def _look_at(eye: np.ndarray, target: np.ndarray, up: np.ndarray) -> np.ndarray:
    f = _normalize(target - eye)
    r = np.cross(f, up)
    if np.linalg.norm(r) < 1e-6:
        r = np.cross(f, np.array([0.0, 1.0, 0.0]))
    r = _normalize(r)
    u = np.cross(r, f)
    m = np.eye(4)
    m[0, :3], m[1, :3], m[2, :3] = r, u, -f
    m[:3, 3] = -m[:3, :3] @ eye
    return m


def _ortho(l: float, r: float, b: float, t: float, n: float, f: float) -> np.ndarray:
    m = np.eye(4)
    m[0, 0], m[1, 1], m[2, 2] = 2.0 / (r - l), 2.0 / (t - b), -2.0 / (f - n)
    m[0, 3], m[1, 3], m[2, 3] = -(r + l) / (r - l), -(t + b) / (t - b), -(f + n) / (f - n)
    return m


def _gl(m: np.ndarray) -> bytes:
    """A matrix as column-major float32 bytes for a uniform."""
    return np.ascontiguousarray(np.asarray(m, np.float32).T).tobytes()


_FLIP_Y = np.diag([1.0, -1.0, 1.0, 1.0])
_CUBE = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], np.float64)


def _is_closed(mesh: Mesh) -> bool:
    """Whether ``mesh`` is a closed, consistently outward-oriented surface (so back faces can be
    culled): welding vertices by position, every directed edge has its reverse, and the signed
    volume is positive. Any doubt answers False (drawn two-sided, only slower)."""
    p = np.asarray(mesh.positions, np.float64)
    tri = np.asarray(mesh.indices, np.int64)
    if tri.shape[0] == 0:
        return False
    scale = max(float(np.abs(p).max()), 1e-9)
    _, vid = np.unique(np.round(p / (scale * 1e-6)).astype(np.int64), axis=0, return_inverse=True)
    t = vid.reshape(-1)[tri]
    t = t[(t[:, 0] != t[:, 1]) & (t[:, 1] != t[:, 2]) & (t[:, 2] != t[:, 0])]
    if t.shape[0] == 0:
        return False
    n = int(vid.max()) + 1
    a = np.concatenate([t[:, 0], t[:, 1], t[:, 2]])
    b = np.concatenate([t[:, 1], t[:, 2], t[:, 0]])
    if not np.array_equal(np.sort(a * n + b), np.sort(b * n + a)):
        return False
    v0, v1, v2 = p[tri[:, 0]], p[tri[:, 1]], p[tri[:, 2]]
    return float(np.einsum("ij,ij->", v0, np.cross(v1, v2))) > 0.0


def _tones(color) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Linear albedo of ``color`` (display RGB 0..1) and of its texture's second tone."""
    return _tones_cached(tuple(float(x) for x in color))


@lru_cache(maxsize=4096)
def _tones_cached(color: tuple[float, ...]) -> tuple[tuple[float, ...], tuple[float, ...]]:
    c = np.clip(np.asarray(color, np.float64), 0.0, 1.0)
    lum = float(c @ (0.299, 0.587, 0.114))
    c2 = c * TEXTURE_DARK if lum > 0.2 else c + (1.0 - c) * TEXTURE_LIGHT
    return tuple((c ** 2.2).tolist()), tuple((c2 ** 2.2).tolist())


def _color_layout(vbo, prog) -> tuple:
    """Vertex layout (position, normal, uv; interleaved, 32 bytes) for a colour program; the
    specialisations without a texture have no uv input."""
    if "in_uv" in prog:
        return (vbo, "3f 3f 2f", "in_pos", "in_normal", "in_uv")
    return (vbo, "3f 3f 8x", "in_pos", "in_normal")


class _GpuMesh:
    __slots__ = ("mesh", "vbo", "ibo", "vao_depth", "vao_id", "vao_color", "box", "closed")


class _Frame:
    """Per-render data shared by the passes (see Renderer._prepare)."""
    __slots__ = ("eye", "dist", "viewproj", "ground", "items", "gms", "models", "corners", "order",
                 "mirror", "gl_mvp")


#: Floats of the per-frame uniform block (2 mat4 + 6 vec4, std140).
_FRAME_FLOATS = 2 * 16 + 6 * 4


def _load_torchvision_first() -> None:
    """Import torchvision (when installed) before the first EGL context exists.

    Loading torchvision's native extension into a process where Mesa's llvmpipe is already loaded
    crashes the process (segmentation fault; seen with Mesa 22.3 and torchvision 0.29.1); loaded
    in the other order both work. A generator process that later trains a model — or a test
    worker that runs both — must not crash, so the renderer loads torchvision first.
    """
    try:
        importlib.import_module("torchvision")
    except ImportError:
        pass


class Renderer:
    """Renders lists of :class:`DrawItem` to RGB + exact object/part id images.

    ``samples > 1``: multisampled colour pass + a separate single-sample id pass (three geometry
    passes). ``samples <= 1`` (the fast path on llvmpipe, whose MSAA is expensive): one
    single-sample pass writes the colour and both ids together (multiple render targets), and a
    9-tap FXAA post-filter smooths the edges (two geometry passes).
    """

    def __init__(self, width: int, height: int, samples: int = 4, shadow_size: int = 1024):
        try:
            import moderngl  # optional heavy dependency: needs an EGL driver, loaded only when a Renderer is made
        except ImportError as e:  # pragma: no cover - moderngl is a dependency of the generator
            raise RendererUnavailable(f"moderngl is not installed (pip install moderngl); "
                                      f"then {_APT_HINT}") from e
        _load_torchvision_first()
        try:
            ctx = moderngl.create_standalone_context(require=330, backend="egl")
        except Exception as e:
            raise RendererUnavailable(f"cannot create a headless EGL OpenGL 3.3 context ({e}); "
                                      f"{_APT_HINT}") from e
        self.ctx = ctx
        self.width, self.height = int(width), int(height)
        self.shadow_size = int(shadow_size)
        samples = min(int(samples), int(ctx.max_samples))
        self.samples = samples if samples > 1 else 0  # 0: the single-sample + FXAA path
        self._meshes: OrderedDict[int, _GpuMesh] = OrderedDict()
        self._programs: dict = {}
        # 8 PCF taps on the ground for images above ~400x300, 4 below (where a penumbra is a
        # few pixels wide and 4 rotated taps look the same, for half the cost)
        self._ground_taps = 8 if self.width * self.height > 400 * 300 else 4
        self._released = False
        with ctx:
            self._init_gl(moderngl)

    def _init_gl(self, moderngl) -> None:
        ctx = self.ctx
        size = (self.width, self.height)
        self._prog_depth = ctx.program(vertex_shader=_shader("position.vert"),
                                       fragment_shader=_shader("depth.frag"))
        self._prog_id = ctx.program(vertex_shader=_shader("position.vert"),
                                    fragment_shader=_shader("ids.frag"))
        self._frame = ctx.buffer(reserve=_FRAME_FLOATS * 4)
        self._frame_data = np.zeros(_FRAME_FLOATS, np.float32)
        # output colour (single sample) and the two int16 id images
        self._rb_rgb = ctx.renderbuffer(size, 4)
        self._fbo_rgb = ctx.framebuffer([self._rb_rgb])
        self._rb_obj = ctx.renderbuffer(size, 1, dtype="i2")
        self._rb_part = ctx.renderbuffer(size, 1, dtype="i2")
        self._fbo_ids = ctx.framebuffer([self._rb_obj, self._rb_part])  # clear + read back
        if self.samples:
            # colour: multisampled, resolved into _rb_rgb; ids: separate single-sample pass
            self._rb_ms = ctx.renderbuffer(size, 4, samples=self.samples)
            self._rb_ms_depth = ctx.depth_renderbuffer(size, samples=self.samples)
            self._fbo_color = ctx.framebuffer([self._rb_ms], self._rb_ms_depth)
            self._rb_id_depth = ctx.depth_renderbuffer(size)
            self._fbo_id = ctx.framebuffer([self._rb_obj, self._rb_part], self._rb_id_depth)
        else:
            # one pass: colour texture + ids (MRT), then FXAA from the texture into _rb_rgb
            self._tex_color = ctx.texture(size, 4)
            self._tex_color.filter = (moderngl.LINEAR, moderngl.LINEAR)
            self._tex_color.repeat_x = self._tex_color.repeat_y = False
            self._rb_depth = ctx.depth_renderbuffer(size)
            self._fbo_color = ctx.framebuffer([self._tex_color], self._rb_depth)
            self._fbo_main = ctx.framebuffer([self._tex_color, self._rb_obj, self._rb_part],
                                             self._rb_depth)
            self._fbo_id = ctx.framebuffer([self._rb_obj, self._rb_part], self._rb_depth)
            self._prog_fxaa = ctx.program(vertex_shader=_shader("quad.vert"),
                                          fragment_shader=_shader("fxaa.frag"))
            self._prog_fxaa["u_tex"].value = 1
            self._prog_fxaa["u_rcp"].value = (1.0 / self.width, 1.0 / self.height)
            quad = np.array([-1, -1, 1, -1, -1, 1, 1, 1], np.float32)
            self._quad_vbo = ctx.buffer(quad.tobytes())
            self._quad_vao = ctx.vertex_array(self._prog_fxaa, [(self._quad_vbo, "2f", "in_pos")])
        # shadow map (hardware depth comparison; bilinear = 2x2 PCF per tap)
        self._shadow_tex = ctx.depth_texture((self.shadow_size, self.shadow_size))
        self._shadow_tex.compare_func = "<="
        self._shadow_tex.repeat_x = self._shadow_tex.repeat_y = False
        self._shadow_tex.filter = (moderngl.LINEAR, moderngl.LINEAR)
        self._fbo_shadow = ctx.framebuffer(depth_attachment=self._shadow_tex)
        # ground: a unit quad, scaled/moved per render by its model matrix
        q = np.array([[-1, -1, 0, 0, 0, 1, 0, 0], [1, -1, 0, 0, 0, 1, 1, 0],
                      [1, 1, 0, 0, 0, 1, 1, 1], [-1, 1, 0, 0, 0, 1, 0, 1]], np.float32)
        self._ground_vbo = ctx.buffer(q.tobytes())
        self._ground_ibo = ctx.buffer(np.array([0, 1, 2, 0, 2, 3], np.uint32).tobytes())
        prog, _ = self._program(2, 0)
        self._ground_vao = ctx.vertex_array(prog, [_color_layout(self._ground_vbo, prog)],
                                            index_buffer=self._ground_ibo, index_element_size=4)
        self._ground_vao_id = ctx.vertex_array(
            self._prog_id, [(self._ground_vbo, "3f 20x", "in_pos")],
            index_buffer=self._ground_ibo, index_element_size=4)
        self._u_mvp_depth = self._prog_depth["u_mvp"]
        self._u_mvp_id = self._prog_id["u_mvp"]
        self._u_obj = self._prog_id["u_object_id"]
        self._u_part = self._prog_id["u_part_id"]

    def _program(self, material: int, texture: int):
        """The colour program specialised for (material 0 rubber/1 metal/2 ground, texture),
        compiled on first use, and its per-item uniforms."""
        key = (material, texture)
        hit = self._programs.get(key)
        if hit is None:
            head = (f"#version 330\n#define MATERIAL {material}\n#define TEXTURE {texture}\n"
                    f"#define PERIOD {TEXTURE_PERIOD!r}\n#define GROUND_TAPS {self._ground_taps}\n")
            frame = _shader("frame.glsl")
            vs = "#version 330\n" + _shader("scene.vert").replace("FRAME_BLOCK", frame)
            fs = head + _shader("scene.frag").replace("FRAME_BLOCK", frame)
            prog = self.ctx.program(vertex_shader=vs, fragment_shader=fs)
            prog["Frame"].binding = 0
            prog["u_shadow"].value = 0
            names = ("u_model", "u_normal_mat", "u_albedo", "u_albedo2", "u_object_id",
                     "u_part_id")
            hit = (prog, {n: prog[n] for n in names if n in prog})
            self._programs[key] = hit
        return hit

    # ------------------------------------------------------------------ resources

    def __enter__(self) -> "Renderer":
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def release(self) -> None:
        """Free every GL object and the context (idempotent)."""
        if self._released:
            return
        self._released = True
        self._meshes.clear()
        self._programs.clear()
        self.ctx.release()  # frees every object of the context

    def _gpu_mesh(self, mesh: Mesh) -> _GpuMesh:
        """The uploaded buffers of ``mesh`` (cached by ``id(mesh)``; the cache holds a
        reference, so an id is not reused while its entry lives)."""
        key = id(mesh)
        gm = self._meshes.get(key)
        if gm is not None:
            self._meshes.move_to_end(key)
            return gm
        ctx = self.ctx
        data = np.empty((mesh.positions.shape[0], 8), np.float32)
        data[:, 0:3], data[:, 3:6], data[:, 6:8] = mesh.positions, mesh.normals, mesh.uvs
        gm = _GpuMesh()
        gm.mesh = mesh
        gm.vbo = ctx.buffer(data.tobytes())
        gm.ibo = ctx.buffer(np.ascontiguousarray(mesh.indices, np.uint32).tobytes())
        gm.vao_depth = ctx.vertex_array(self._prog_depth, [(gm.vbo, "3f 20x", "in_pos")],
                                        index_buffer=gm.ibo, index_element_size=4)
        gm.vao_id = ctx.vertex_array(self._prog_id, [(gm.vbo, "3f 20x", "in_pos")],
                                     index_buffer=gm.ibo, index_element_size=4)
        gm.vao_color = {}  # per colour program, made on first use
        lo, hi = mesh.bounds()
        gm.box = _CUBE * (hi - lo).astype(np.float64) + lo
        gm.closed = _is_closed(mesh)
        self._meshes[key] = gm
        while len(self._meshes) > MESH_CACHE_SIZE:
            old = self._meshes.popitem(last=False)[1]
            for o in (old.vao_depth, old.vao_id, *old.vao_color.values(), old.vbo, old.ibo):
                o.release()
        return gm

    def _vao_color(self, gm: _GpuMesh, key, prog):
        vao = gm.vao_color.get(key)
        if vao is None:
            vao = self.ctx.vertex_array(prog, [_color_layout(gm.vbo, prog)],
                                        index_buffer=gm.ibo, index_element_size=4)
            gm.vao_color[key] = vao
        return vao

    # ------------------------------------------------------------------ rendering

    def _prepare(self, items: Sequence[DrawItem], camera: Camera) -> "_Frame":
        """Per-render data, batched in numpy: meshes, matrices, bounds, front-to-back order."""
        if self._released:
            raise RuntimeError("Renderer was released")
        fr = _Frame()
        fr.eye = eye = np.asarray(camera.eye, np.float64)
        target = np.asarray(camera.target, np.float64)
        fr.dist = dist = float(np.linalg.norm(target - eye))
        proj = _FLIP_Y @ camera.projection_matrix(self.width / self.height, 0.05,
                                                  max(100.0, 4.0 * dist))
        fr.viewproj = proj @ camera.view_matrix()
        fr.ground = np.eye(4)
        fr.ground[0, 0] = fr.ground[1, 1] = 3.0 * dist + 20.0
        fr.ground[:2, 3] = target[:2]
        fr.items = its = [it for it in items if it.mesh.indices.shape[0]]
        for it in its:
            if it.texture not in TEXTURES:
                raise ValueError(f"unknown texture {it.texture!r}; expected one of {TEXTURES}")
        fr.gms = gms = [self._gpu_mesh(it.mesh) for it in its]
        n = len(its)
        fr.models = models = np.array([it.model for it in its], np.float64).reshape(n, 4, 4)
        m3 = models[:, :3, :3]
        boxes = np.array([g.box for g in gms]).reshape(n, 8, 3)
        fr.corners = np.einsum("nij,nkj->nki", m3, boxes) + models[:, None, :3, 3]
        rel = fr.corners.mean(1) - eye
        fr.order = np.argsort(np.einsum("ni,ni->n", rel, rel), kind="stable")
        fr.mirror = np.linalg.det(m3) < 0 if n else np.zeros(0, bool)
        # column-major float32 of every per-item matrix (= row-major of the transposes)
        fr.gl_mvp = np.ascontiguousarray((fr.viewproj @ models).transpose(0, 2, 1), np.float32)
        ctx = self.ctx
        ctx.enable_only(ctx.DEPTH_TEST)
        ctx.cull_face = "back"
        self._culling = False
        return fr

    def _id_pass(self, fr: "_Frame") -> tuple[np.ndarray, np.ndarray]:
        """Single-sample id pass into the int16 targets; returns (object_ids, part_ids)."""
        self._fbo_id.use()
        self._fbo_id.clear(-1.0, -1.0, -1.0, -1.0, depth=1.0)
        for i in fr.order:
            self._set_cull(fr.gms[i].closed, fr.mirror[i], flipped=True)
            self._u_mvp_id.write(fr.gl_mvp[i])
            self._u_obj.value = int(fr.items[i].object_id)
            self._u_part.value = int(fr.items[i].part_id)
            fr.gms[i].vao_id.render()
        self._set_cull(False, False, flipped=True)
        # the ground hides what is below it, as in the colour pass
        self._u_mvp_id.write(_gl(fr.viewproj @ fr.ground))
        self._u_obj.value = -1
        self._u_part.value = -1
        self._ground_vao_id.render()
        return self._read_ids()

    def _read_ids(self) -> tuple[np.ndarray, np.ndarray]:
        obj = np.empty((self.height, self.width), np.int16)
        part = np.empty((self.height, self.width), np.int16)
        self._fbo_ids.read_into(obj, components=1, attachment=0, alignment=1, dtype="i2")
        self._fbo_ids.read_into(part, components=1, attachment=1, alignment=1, dtype="i2")
        return obj, part

    def render_ids(self, items: Sequence[DrawItem],
                   camera: Camera) -> tuple[np.ndarray, np.ndarray]:
        """Only the (object_ids, part_ids) images, without shadows or shading: a cheap visibility
        check (one geometry pass). The id pass of :meth:`render` with ``samples > 1``; with
        ``samples <= 1`` the same up to the part id of a few pixels where a part lies on its body
        (see the module docstring), so not a stand-in for the id images :meth:`render` returns."""
        with self.ctx:
            return self._id_pass(self._prepare(items, camera))

    def render(self, items: Sequence[DrawItem], camera: Camera, lights: Lights,
               ground_color: tuple[float, float, float] = (0.55, 0.55, 0.55)) -> RenderResult:
        """Draw ``items`` seen by ``camera``; returns the RGB image and the id images."""
        w, h = self.width, self.height
        ctx = self.ctx
        gc = np.asarray(ground_color, np.float64)
        bg = gc * BACKGROUND_SCALE

        with ctx:
            fr = self._prepare(items, camera)
            its, gms, order, mirror, models = fr.items, fr.gms, fr.order, fr.mirror, fr.models
            eye, dist, viewproj, ground = fr.eye, fr.dist, fr.viewproj, fr.ground
            light_vp, radius_uv, texel_world = self._fit_shadow(fr.corners.reshape(-1, 3), lights)
            gl_light = np.ascontiguousarray((light_vp @ models).transpose(0, 2, 1), np.float32)
            gl_model = np.ascontiguousarray(models.transpose(0, 2, 1), np.float32)
            gl_normal = np.ascontiguousarray(
                np.linalg.inv(models[:, :3, :3]) if len(its) else models[:, :3, :3], np.float32)

            # ---- 1. shadow pass (the items cast, the ground only receives) ----
            self._fbo_shadow.use()
            self._fbo_shadow.clear(depth=1.0)
            ctx.polygon_offset = (1.5, 2.0)
            for i in order:
                self._set_cull(gms[i].closed, mirror[i], flipped=False)
                self._u_mvp_depth.write(gl_light[i])
                gms[i].vao_depth.render()
            ctx.polygon_offset = (0.0, 0.0)

            # ---- 2. colour pass (+ ids in the single-sample path) ----
            f = self._frame_data
            f[0:16] = viewproj.T.ravel()
            f[16:32] = light_vp.T.ravel()
            f[32:35] = eye
            f[35] = lights.env_gain
            f[36:39] = _normalize(np.asarray(lights.key_dir, np.float64))
            f[39] = lights.key_intensity
            f[40:43] = _normalize(np.asarray(lights.fill_dir, np.float64))
            f[43] = lights.fill_intensity
            f[44:47] = bg
            f[47] = lights.ambient
            f[48:51] = (radius_uv, 2.0 * texel_world, SHADOW_SOFTNESS)
            f[52:56] = (eye[0], eye[1], 0.45 * dist, 1.9 * dist)
            self._frame.write(f)
            self._frame.bind_to_uniform_block(0)
            self._shadow_tex.use(location=0)
            if not self.samples:
                self._fbo_ids.clear(-1.0, -1.0, -1.0, -1.0)
            self._fbo_color.clear(*bg, 1.0, depth=1.0)
            (self._fbo_color if self.samples else self._fbo_main).use()
            for i in order:
                it, gm = its[i], gms[i]
                key = (1 if it.metal else 0, TEXTURES.index(it.texture))
                prog, u = self._program(*key)
                self._set_cull(gm.closed, mirror[i], flipped=True)
                u["u_model"].write(gl_model[i])
                u["u_normal_mat"].write(gl_normal[i])
                a1, a2 = _tones(it.color)
                u["u_albedo"].value = a1
                if "u_albedo2" in u:
                    u["u_albedo2"].value = a2
                u["u_object_id"].value = int(it.object_id)
                u["u_part_id"].value = int(it.part_id)
                self._vao_color(gm, key, prog).render()
            self._set_cull(False, False, flipped=True)
            prog, u = self._program(2, 0)
            u["u_model"].write(_gl(ground))
            u["u_normal_mat"].write(_gl(np.eye(3)))
            u["u_albedo"].value = _tones(gc)[0]
            u["u_object_id"].value = -1
            u["u_part_id"].value = -1
            self._ground_vao.render()

            if self.samples:
                ctx.copy_framebuffer(self._fbo_rgb, self._fbo_color)  # MSAA resolve
                rgb = np.empty((h, w, 3), np.uint8)
                self._fbo_rgb.read_into(rgb, components=3, alignment=1)
                # ---- 3. id pass (single sample, exact) ----
                obj, part = self._id_pass(fr)
            else:
                # ---- 3'. FXAA from the colour texture into the output ----
                ctx.disable(ctx.DEPTH_TEST)
                self._fbo_rgb.use()
                self._tex_color.use(location=1)
                self._quad_vao.render(mode=ctx.TRIANGLE_STRIP)
                rgb = np.empty((h, w, 3), np.uint8)
                self._fbo_rgb.read_into(rgb, components=3, alignment=1)
                obj, part = self._read_ids()
        return RenderResult(rgb=rgb, object_ids=obj, part_ids=part)

    def _set_cull(self, closed: bool, mirror: bool, flipped: bool) -> None:
        """Which winding is front (counter-clockwise in the model; the y-flipped camera
        projection and a mirroring model each reverse it: gl_FrontFacing of the two-sided
        lighting depends on it) and back-face culling, for closed meshes only."""
        if closed != self._culling:
            self._culling = closed
            (self.ctx.enable if closed else self.ctx.disable)(self.ctx.CULL_FACE)
        self.ctx.front_face = "cw" if flipped != mirror else "ccw"

    def _fit_shadow(self, pts: np.ndarray, lights: Lights):
        """Orthographic light view-projection fitted to the casters' world bounds ``pts``.

        Returns (light_vp, PCF radius in shadow uv units, world size of one texel)."""
        k = _normalize(np.asarray(lights.key_dir, np.float64))
        if pts.shape[0] == 0:
            pts = np.zeros((1, 3))
        lo, hi = pts.min(0), pts.max(0)
        center = (lo + hi) / 2
        radius = max(float(np.linalg.norm(hi - lo)) / 2, 1e-3)
        lv = _look_at(center + k * (radius + 1.0), center, np.array([0.0, 0.0, 1.0]))
        lp = pts @ lv[:3, :3].T + lv[:3, 3]
        pad = 2.0 * SHADOW_SOFTNESS + 0.05
        x0, y0 = lp[:, 0].min() - pad, lp[:, 1].min() - pad
        x1, y1 = lp[:, 0].max() + pad, lp[:, 1].max() + pad
        s = max(x1 - x0, y1 - y0)  # square: the PCF radius is the same along both axes
        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
        near = max(-lp[:, 2].max() - 0.05, 1e-3)
        far = -lp[:, 2].min() + 0.05
        proj = _ortho(cx - s / 2, cx + s / 2, cy - s / 2, cy + s / 2, near, far)
        return proj @ lv, SHADOW_SOFTNESS / s, s / self.shadow_size
