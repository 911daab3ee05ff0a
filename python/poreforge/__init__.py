"""poreforge from Python: exact distance transform, local thickness, pore-size distribution,
two-point correlation and binary morphology of 2D and 3D images, on the CPU or a CUDA GPU.

Images are NumPy arrays of any dtype, layout and strides: ``phase`` picks the voxels to
measure (``image == phase``), and the array is copied into the engine's layout, never read
through its strides. Axes follow NumPy: a 3D array is indexed ``[z, y, x]`` with ``x`` the
last (fastest) axis, and ``spacing`` — one number, or one per array axis, like SciPy's
``sampling`` — is in array-axis order. Results come back with the input's shape. Lengths
(distances, thickness, PSD bins) are in the units of ``spacing`` (voxels when it is 1).

CuPy arrays are measured on the device, without a copy to the host, by ``distance_transform``,
``local_thickness`` and ``pore_size_distribution`` (their results are CuPy arrays); the other
functions copy them to the host. ``Workspace`` keeps the device workspace across calls for
loops over many images.

``boundary`` says what lies beyond the faces: ``"open"`` (nothing: a phase that reaches a face
goes on), ``"wall"`` (the other phase) or ``"periodic"``; ``backend`` is ``"auto"``, ``"cpu"`` or ``"cuda"``:
for one call on a host image ``"auto"`` picks the backend that should finish first for its size
(the device's start-up counted while this process has not paid it), for a CuPy array or a
``Workspace`` the device when there is one. Errors are the
command line's messages: bad input raises ``ValueError``, too little memory ``MemoryError``.
The engine runs without the GIL, so threads can measure several images at once.
"""
from __future__ import annotations

import warnings

import numpy as np

from . import _poreforge

__version__ = _poreforge.__version__
__all__ = [
    "Workspace",
    "distance_transform",
    "local_thickness",
    "pore_size_distribution",
    "PoreSizeDistribution",
    "two_point_correlation",
    "TwoPointCorrelation",
    "erode",
    "dilate",
    "open",
    "close",
    "realism_profile",
    "compare",
    "Comparison",
    "reconstruct",
    "Reconstruction",
    "backend_description",
]


def _on_device(image):
    """True for a CUDA array (CuPy's, or any with the CUDA array interface)."""
    return hasattr(image, "__cuda_array_interface__")


def _phase_of(array, phase, xp):
    """The phase of ``array`` (NumPy's or CuPy's, ``xp`` its module) as a C-contiguous uint8 mask
    (a copy: never a strided view)."""
    if array.ndim not in (2, 3):
        raise ValueError(f"expected a 2D or 3D image, got {array.ndim} dimensions (shape {array.shape})")
    if array.size == 0:
        raise ValueError(f"the image is empty (shape {array.shape})")
    if array.dtype == xp.bool_ and phase in (1, True):
        return xp.ascontiguousarray(array).view(xp.uint8)  # True is 1: no second copy
    return xp.ascontiguousarray(array == phase, dtype=xp.uint8)


def _mask(image, phase):
    """The phase of ``image`` as a host mask. A CUDA array is copied to the host: the functions
    that measure it where it lies do not come here."""
    if _on_device(image):
        import cupy

        image = cupy.asnumpy(image)
    return _phase_of(np.asarray(image), phase, np)


def _whole(name, value, lowest, highest=2**31 - 1):
    """`value` as an int in [lowest, highest], or a ValueError naming `name`."""
    if isinstance(value, (bool, np.bool_)) or np.ndim(value) != 0:
        raise ValueError(f"{name} must be a whole number (got {value!r})")
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name} must be a whole number (got {value!r})") from None
    if number != value or not lowest <= number <= highest:
        raise ValueError(f"{name} must be a whole number in [{lowest}, {highest}] (got {value!r})")
    return number


def _word(name, value):
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string (got {value!r})")
    return value


def _edges(bins):
    edges = np.asarray(bins, dtype=float)
    if edges.ndim != 1:
        raise ValueError(f"bins must be a number of bins or a flat list of edges (got shape {edges.shape})")
    return [float(e) for e in edges]


def _spacing(spacing, ndim):
    """Spacing per array axis -> the engine's (x, y, z)."""
    if spacing is None:
        values = [1.0] * ndim
    elif np.ndim(spacing) == 0:
        values = [float(spacing)] * ndim
    else:
        values = [float(s) for s in spacing]
        if len(values) != ndim:
            raise ValueError(f"spacing has {len(values)} values for a {ndim}D image: give one, or one per axis")
    for s in values:
        if not np.isfinite(s) or s <= 0:
            raise ValueError(f"spacing must be positive and finite (got {values})")
    xyz = values[::-1]
    return (xyz[0], xyz[1], xyz[2] if ndim == 3 else 1.0)


def _device_mask(image, phase, *, required=True):
    """The phase of a CUDA array as a CuPy mask, made on the device; ``required``: an empty
    phase is refused, as the engine refuses it in a host image."""
    import cupy

    mask = _phase_of(cupy.asarray(image), phase, cupy)
    if required and not bool(mask.any()):
        raise ValueError(_poreforge.empty_phase_message())
    return mask


def _current_stream():
    """CuPy's current stream on the current device, as the engine takes it (a cudaStream_t): the
    engine's work waits for what CuPy has queued there, not for the whole device."""
    import cupy

    return cupy.cuda.get_current_stream().ptr


class Workspace:
    """The engine for many images in a row: on CUDA it keeps its device workspace (the engine
    context, its buffers and captured launches) from one call to the next and makes a new one
    only when the shape, spacing, boundary or bins change — a loop over many images pays the
    set-up once. The module's functions of the same names make a workspace per call.

    CuPy arrays (any array with the CUDA array interface) are measured where they lie, without
    a copy to the host, on a ``"cuda"`` workspace, and the results are CuPy arrays on the same
    device; the workspace's work waits for what CuPy's current stream has queued (not for
    the rest of the device) and the call returns when the result is written. Another
    library's array is taken through ``cupy.asarray``, which waits for the stream its
    interface names (CUDA array interface v3). One call at a time runs in a workspace: threads that share one take turns."""

    def __init__(self, backend="auto"):
        self._engine = _poreforge.Workspace(_word("backend", backend))

    @classmethod
    def _for_one(cls, image, backend):
        """A workspace for one call on ``image``: ``"auto"`` picks the backend that should
        finish first for its size (the device's start-up counted), or the device for a CUDA
        array, which is there already."""
        backend = _word("backend", backend)
        if _on_device(image) and backend == "auto":
            backend = "cuda" if _poreforge.cuda_available() else "cpu"
        ws = cls.__new__(cls)
        ws._engine = _poreforge.Workspace(backend, int(np.prod(np.shape(image))) or 1)
        return ws

    @property
    def backend(self):
        """``"cpu"`` or ``"cuda"``: what ``backend`` resolved to."""
        return self._engine.backend

    def __repr__(self):
        return f"Workspace(backend={self.backend!r})"

    def _device_map(self, method, image, phase, boundary, spacing, required=True):
        import cupy

        mask = _device_mask(image, phase, required=required)
        out = cupy.empty(mask.shape, dtype=cupy.float32)
        method(mask, out, _spacing(spacing, mask.ndim), _word("boundary", boundary), _current_stream())
        return out

    def _on_host(self, image):
        """A CuPy array for a CPU workspace: measured on a host copy."""
        return self.backend == "cpu" and _on_device(image)

    def distance_transform(self, image, *, phase=1, boundary="open", spacing=None):
        """Exact Euclidean distance from each phase voxel to the nearest voxel outside the phase
        (0 outside the phase), float32, in the units of ``spacing``."""
        if self._on_host(image):
            import cupy

            return cupy.asarray(self.distance_transform(cupy.asnumpy(image), phase=phase, boundary=boundary,
                                                        spacing=spacing))
        if _on_device(image):
            return self._device_map(self._engine.distance_transform_device, image, phase, boundary, spacing,
                                    required=False)
        mask = _mask(image, phase)
        return self._engine.distance_transform(mask, _spacing(spacing, mask.ndim), _word("boundary", boundary))

    def local_thickness(self, image, *, phase=1, boundary="open", spacing=None):
        """Exact local thickness as a radius: for each phase voxel the radius of the largest ball
        inside the phase that covers it (Hildebrand & Rüegsegger; 0 outside the phase), float32.
        Fiji's LocalThickness and BoneJ report the diameter: twice this."""
        if self._on_host(image):
            import cupy

            return cupy.asarray(self.local_thickness(cupy.asnumpy(image), phase=phase, boundary=boundary,
                                                     spacing=spacing))
        if _on_device(image):
            return self._device_map(self._engine.local_thickness_device, image, phase, boundary, spacing)
        mask = _mask(image, phase)
        return self._engine.local_thickness(mask, _spacing(spacing, mask.ndim), _word("boundary", boundary))

    def pore_size_distribution(self, image, *, phase=1, boundary="open", spacing=None, bins=20, log=False):
        """The pore-size distribution of the phase from its exact local thickness. ``bins``: a
        number of bins over the thickness's [min, max] over the phase (``log``: log-spaced), or
        the bin edges themselves (radii, increasing) — then the engine counts without keeping
        the map."""
        boundary = _word("boundary", boundary)
        if _on_device(image) and not self._on_host(image):
            import cupy

            mask = _device_mask(image, phase)
            sp = _spacing(spacing, mask.ndim)
            if np.ndim(bins) != 0:
                return PoreSizeDistribution(self._engine.pore_size_distribution_device(mask, sp, boundary,
                                                                                       _edges(bins),
                                                                                       _current_stream()))
            # The map, binned where it lies as the engine bins a host map (psd_from_thickness):
            # a voxel counts at each edge at or below its radius, compared as stored.
            n = _whole("bins", bins, 1, 100000)
            out = cupy.empty(mask.shape, dtype=cupy.float32)
            self._engine.local_thickness_device(mask, out, sp, boundary, _current_stream())
            radii = out[mask.view(cupy.bool_)].astype(cupy.float64)
            edges = _poreforge.default_edges(float(radii.min()), float(radii.max()), n, bool(log))
            below = cupy.searchsorted(cupy.asarray(edges), radii, side="right")
            hits = cupy.asnumpy(cupy.bincount(below, minlength=len(edges) + 1))
            at_least = hits[1:][::-1].cumsum()[::-1]
            above = int((radii > edges[-1]).sum())
            return PoreSizeDistribution(_poreforge.psd_from_counts([int(c) for c in at_least], above,
                                                                   int(radii.size), list(edges)))
        if _on_device(image):
            import cupy

            image = cupy.asnumpy(image)
        mask = _mask(image, phase)
        sp = _spacing(spacing, mask.ndim)
        if np.ndim(bins) == 0:
            result = self._engine.pore_size_distribution(mask, sp, boundary, _whole("bins", bins, 1, 100000),
                                                         bool(log), None)
        else:
            result = self._engine.pore_size_distribution(mask, sp, boundary, 0, bool(log), _edges(bins))
        return PoreSizeDistribution(result)


def distance_transform(image, *, phase=1, boundary="open", spacing=None, backend="auto"):
    """Exact Euclidean distance from each phase voxel to the nearest voxel outside the phase
    (0 outside the phase), float32, in the units of ``spacing``. A CuPy image gives a CuPy
    result, measured on the device (see Workspace)."""
    return Workspace._for_one(image, backend).distance_transform(image, phase=phase, boundary=boundary,
                                                                 spacing=spacing)


def local_thickness(image, *, phase=1, boundary="open", spacing=None, backend="auto"):
    """Exact local thickness as a radius: for each phase voxel the radius of the largest ball
    inside the phase that covers it (Hildebrand & Rüegsegger; 0 outside the phase), float32.
    Fiji's LocalThickness and BoneJ report the diameter: twice this. A CuPy image gives a CuPy
    result, measured on the device (see Workspace)."""
    return Workspace._for_one(image, backend).local_thickness(image, phase=phase, boundary=boundary, spacing=spacing)


class PoreSizeDistribution:
    """A pore-size distribution: how the phase's voxels share out by local thickness (radius)
    over the bins. Named as PoreSpy's ``metrics.pore_size_distribution`` results, and meaning the
    same — shares of the voxels whose radius lies within the edges, as ``np.histogram`` counts
    them: ``R`` and ``bin_centers`` (radius at the bin centres), ``bin_edges``, ``bin_widths``,
    ``relfreq`` (share per bin), ``pdf`` (share per unit radius: ``sum(pdf * bin_widths)`` is 1),
    ``cdf`` (share with a radius at least each bin's lower edge). PoreSpy bins log10 of the
    radii when ``log`` and names the centres ``LogR``; here ``log`` spaces the edges
    logarithmically and every value stays a radius. poreforge's own, as shares of all the
    phase's voxels: ``fraction`` per bin, ``cumulative`` (share ≥ each edge, one more than the
    bins), ``below`` / ``above`` (shares outside the edges), and ``phase_voxels``. With the
    default bins (the thickness's whole range) both readings agree."""

    def __init__(self, result):
        self.bin_edges = np.asarray(result["edges"])
        self.fraction = np.asarray(result["fraction"])
        self.cumulative = np.asarray(result["cumulative"])
        self.below = float(result["below"])
        self.above = float(result["above"])
        self.phase_voxels = int(result["phase_voxels"])
        self.bin_widths = np.diff(self.bin_edges)
        self.bin_centers = (self.bin_edges[1:] + self.bin_edges[:-1]) / 2
        self.R = self.bin_centers
        within = self.fraction.sum()
        self.relfreq = self.fraction / within if within > 0 else np.zeros_like(self.fraction)
        self.pdf = self.relfreq / self.bin_widths
        self.cdf = self.relfreq[::-1].cumsum()[::-1]

    def __repr__(self):
        return (f"PoreSizeDistribution({len(self.fraction)} bins over [{self.bin_edges[0]:.6g}, "
                f"{self.bin_edges[-1]:.6g}], {self.phase_voxels} phase voxels)")


def pore_size_distribution(image, *, phase=1, boundary="open", spacing=None, bins=20, log=False, backend="auto"):
    """The pore-size distribution of the phase from its exact local thickness. ``bins``: a number
    of bins over the thickness's [min, max] over the phase (``log``: log-spaced), or the bin
    edges themselves (radii, increasing) — then the engine counts without keeping the map."""
    return Workspace._for_one(image, backend).pore_size_distribution(image, phase=phase, boundary=boundary,
                                                                     spacing=spacing, bins=bins, log=log)


class TwoPointCorrelation:
    """Two-point probability S2 of the phase, the volume tiling space (periodic).
    ``directional[k]``: S2 along array axis ``k`` at lags 0 … n/2 voxels; ``r`` / ``s2``: averaged
    over all lattice vectors whose length rounds to each ``r`` (units of ``spacing``)."""

    def __init__(self, result, ndim):
        xyz = [np.asarray(result["x"]), np.asarray(result["y"]), np.asarray(result["z"])]
        self.directional = xyz[:ndim][::-1]
        self.r = np.asarray(result["r"])
        self.s2 = np.asarray(result["s2"])

    def __repr__(self):
        return f"TwoPointCorrelation(S2(0) = {self.s2[0]:.6g}, {len(self.r)} radial lags)"


def two_point_correlation(image, *, phase=1, spacing=None):
    """S2 along each array axis and radially averaged, by FFT (CPU)."""
    mask = _mask(image, phase)
    return TwoPointCorrelation(_poreforge.two_point_correlation(mask, _spacing(spacing, mask.ndim)), mask.ndim)


def _element(size, radius, ndim):
    if radius is not None:
        if size is not None:
            raise ValueError("give a box size or a ball radius, not both")
        return f"ball:{float(radius)!r}"
    size = 3 if size is None else size
    sizes = ([_whole("size", size, 1)] * ndim if np.ndim(size) == 0
             else [_whole("size", s, 1) for s in np.asarray(size).ravel()])
    if len(sizes) != ndim:
        raise ValueError(f"size has {len(sizes)} values for a {ndim}D image: give one, or one per axis")
    return "box:" + "x".join(str(s) for s in sizes[::-1])


def _morph(op, image, size, radius, iterations, phase, spacing, backend):
    mask = _mask(image, phase)
    element = _element(size, radius, mask.ndim)
    return _poreforge.morphology(mask, _spacing(spacing, mask.ndim), op, element, _whole("iterations", iterations, 1),
                                 _word("backend", backend))


def erode(image, size=None, *, radius=None, iterations=1, phase=1, spacing=None, backend="auto"):
    """Binary erosion of the phase by a box (``size`` voxels per axis, default 3, anchored at its
    centre) or a closed Euclidean ball (``radius`` in the units of ``spacing``); uint8 0/1.
    Beyond the faces never erodes (OpenCV's default)."""
    return _morph("erode", image, size, radius, iterations, phase, spacing, backend)


def dilate(image, size=None, *, radius=None, iterations=1, phase=1, spacing=None, backend="auto"):
    """Binary dilation; see erode."""
    return _morph("dilate", image, size, radius, iterations, phase, spacing, backend)


def open(image, size=None, *, radius=None, iterations=1, phase=1, spacing=None, backend="auto"):  # noqa: A001
    """Binary opening (``iterations`` erosions, then as many dilations); see erode."""
    return _morph("open", image, size, radius, iterations, phase, spacing, backend)


def close(image, size=None, *, radius=None, iterations=1, phase=1, spacing=None, backend="auto"):
    """Binary closing (dilations, then erosions); see erode."""
    return _morph("close", image, size, radius, iterations, phase, spacing, backend)


def backend_description(backend="auto"):
    """What ``backend`` resolves to on this machine, in words."""
    return _poreforge.backend_description(backend)


def realism_profile(image, *, phase=1, spacing=None, bins=20, permeability=False, length_unit="", backend="auto"):
    """The realism measures of one 3D structure, as ``poreforge compare`` measures each volume:
    porosity, specific surface, Euler characteristic density, clusters (6 and 26), spanning and
    speck shares, formation factors, and with ``permeability`` the lattice-Boltzmann
    permeabilities along x, y, z (millidarcy when ``length_unit`` names the spacing's unit,
    else squared spacing units), besides curves (chords, lineal paths, S2, pore PSD, χ of the
    openings, the interface's 2×2×2 patterns and the local porosity of 3×3×3 neighbourhoods and
    3×3 and 5×5 squares). ``bins``: PSD edges, or a number of bins from one voxel to the largest
    inscribed radius. Names along x, y, z mean poreforge's axes: x is the last array axis.
    Returns ``{"scalars": {name: {"unit", "value"}}, "curves": {name: {...}}, "warnings": [...]}``;
    each warning (a permeability that did not settle) is also issued as a RuntimeWarning."""
    mask = _mask(image, phase)
    if mask.ndim != 3:
        raise ValueError(f"the realism measures are of 3D images (got shape {mask.shape})")
    if np.ndim(bins) == 0:
        edges, count = None, _whole("bins", bins, 1, 100000)
    else:
        edges, count = _edges(bins), 0
    result = _poreforge.realism_profile(mask, _spacing(spacing, 3), edges, count, bool(permeability),
                                        _word("length_unit", length_unit), _word("backend", backend))
    for w in result["warnings"]:
        warnings.warn(w, RuntimeWarning, stacklevel=2)
    return {"scalars": {s["name"]: {"unit": s["unit"], "value": s["value"]} for s in result["scalars"]},
            "curves": {c["name"]: c for c in result["curves"]}, "warnings": list(result["warnings"])}


class Comparison:
    """A structure judged against real sub-volumes of a reference, as ``poreforge compare``
    judges it: ``scalars`` and ``curves`` (dicts by name, each with the structure's value, the
    real mean, SD, min, max, z and ``inside``; curves their distance beside each real one's
    leave-one-out distance), ``outside`` of ``measures`` outside the real range, against
    ``typical_real_outside`` for a real sub-volume (``bins``: the number of pore-PSD bins every
    volume shares, as the command's --bins); ``corners`` of the sub-volumes in array-axis
    order; ``candidate`` and ``real`` the raw profiles. ``judged`` is False when the reference
    has the structure's shape (one real volume has no range): only the profiles are there."""

    def __init__(self, result):
        self.judged = bool(result["judged"])
        self.corners = [tuple(c) for c in result["corners"]]
        self.candidate = result["candidate"]
        self.real = result["real"]
        self.scalars = {s["name"]: s for s in result.get("scalars", [])}
        self.curves = {c["name"]: c for c in result.get("curves", [])}
        self.outside = result.get("outside")
        self.measures = result.get("measures")
        self.real_outside = result.get("real_outside")
        self.typical_real_outside = result.get("typical_real_outside")

    def __repr__(self):
        if not self.judged:
            return "Comparison(the reference alone, nothing judged)"
        return (f"Comparison(outside the real range on {self.outside} of {self.measures} measures; "
                f"a real sub-volume on {self.typical_real_outside:g})")


def compare(image, reference, *, phase=1, reference_phase=None, spacing=None, subvolumes=12, seed=1, bins=20,
            permeability=False, length_unit="", backend="auto"):
    """Is ``image`` rock? Its realism measures against ``subvolumes`` real sub-volumes of
    ``reference`` of its shape (corners drawn from ``seed`` as the command line draws them), both
    at ``spacing``. Equal to ``poreforge compare`` on the same arrays; a permeability that did
    not settle is issued as a RuntimeWarning naming its volume, as the command warns."""
    mask = _mask(image, phase)
    ref = _mask(reference, phase if reference_phase is None else reference_phase)
    if mask.ndim != 3 or ref.ndim != 3:
        raise ValueError(f"compare judges 3D images (got shapes {mask.shape} and {ref.shape})")
    result = _poreforge.compare(mask, ref, _spacing(spacing, 3), _whole("subvolumes", subvolumes, 2, 10000),
                                _whole("seed", seed, 0, 2**63 - 1), _whole("bins", bins, 1, 10000), bool(permeability),
                                _word("length_unit", length_unit), _word("backend", backend))
    for w in result["candidate"]["warnings"]:
        warnings.warn(f"the reconstruction: {w}", RuntimeWarning, stacklevel=2)
    for k, profile in enumerate(result["real"]):
        for w in profile["warnings"]:
            warnings.warn(f"real volume {k + 1}: {w}", RuntimeWarning, stacklevel=2)
    return Comparison(result)


class Reconstruction:
    """A finished ``poreforge run``: ``volume`` (uint8, 1 = pore, ``[z, y, x]``), ``summary``
    (its summary.json) and ``folder`` (the run folder with every output and checkpoint)."""

    def __init__(self, volume, summary, folder):
        self.volume, self.summary, self.folder = volume, summary, folder

    def __repr__(self):
        return (f"Reconstruction({'x'.join(str(n) for n in self.volume.shape)}, "
                f"{self.summary.get('evaluations')} evaluations, stop {self.summary.get('stop_reason')!r}, "
                f"folder {self.folder!r})")


def reconstruct(config, *, overrides=(), output=None, backend=None, force=False, quiet=True):
    """``poreforge run`` in this process. ``config``: a YAML file's path (its input paths
    relative to it, as on the command line) or a dict of the same keys (input paths relative to
    the working directory); ``overrides``: ``"KEY.PATH=VALUE"`` strings as ``--set`` takes;
    ``output``: the output directory (default: the config's ``output.directory``); ``force``
    replaces an earlier run folder of that name that poreforge made; ``quiet`` prints only the
    summary, as ``--quiet`` does (else a progress line every 5 s). The run writes its folder as
    the command does. A SIGINT (Ctrl-C) stops it after a checkpoint and raises
    KeyboardInterrupt; ``poreforge resume`` goes on from there."""
    import builtins
    import json
    import os

    if isinstance(config, dict):
        # JSON is YAML; NumPy numbers (a shape from an array's) become plain ones.
        path, text = "", json.dumps(config, default=lambda v: v.item() if isinstance(v, np.generic) else str(v))
    else:
        path, text = os.fspath(config), ""
    if isinstance(overrides, str):
        raise ValueError("overrides is a list of KEY.PATH=VALUE strings, not one string")
    folder, code = _poreforge.reconstruct(path, text, [str(s) for s in overrides], "" if output is None else
                                          os.fspath(output), backend or "", bool(force), bool(quiet))
    if code:
        if not folder:
            raise KeyboardInterrupt(f"the run stopped on signal {code - 128} before its folder was made: nothing "
                                    "was written")
        raise KeyboardInterrupt(f"the run stopped on signal {code - 128} after writing a checkpoint in {folder}")
    with builtins.open(os.path.join(folder, "summary.json")) as f:  # this module's open is morphology's
        summary = json.load(f)
    return Reconstruction(_poreforge.read_volume(os.path.join(folder, "final.h5"), 1.0), summary, folder)
