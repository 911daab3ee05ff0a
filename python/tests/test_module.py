"""The Python module against the command line, brute force and itself: equal results, any
array layout read right, errors as the CLI words them, the GIL let go while the engine works.

Run by scripts/test with PYTHONPATH=<build>/python and POREFORGE_CLI=<build>/poreforge."""
import json
import os
import signal
import subprocess
import sys
import threading
import time

import h5py
import numpy as np
import pytest

import poreforge as pf
from poreforge import _poreforge

CLI = os.path.abspath(os.environ["POREFORGE_CLI"]) if os.environ.get("POREFORGE_CLI") else None
BACKENDS = ["cpu"] + (["cuda"] if _poreforge.cuda_available() else [])


def seed():
    """A fresh seed per run, printed so a failure can be replayed (POREFORGE_TEST_SEED)."""
    s = int(os.environ.get("POREFORGE_TEST_SEED", np.random.SeedSequence().entropy % 2**32))
    print(f"seed {s}")
    return s


def cli_blobs(path, shape, porosity, value):
    """A blobs image made by the command line (HDF5, dataset /volume)."""
    subprocess.run([CLI, "generate", "blobs", "--shape", shape, "--porosity", str(porosity), "--seed", str(value),
                    "-o", str(path)], check=True, capture_output=True)


def wait_for(path):
    """Until `path` exists (a run's log: its loop is about to start)."""
    while not path.exists():
        time.sleep(0.01)


def random_structure(shape, porosity, rng, smooth=2):
    """A blobby random structure: noise box-averaged `smooth` times, cut at the porosity."""
    field = rng.random(shape)
    for _ in range(smooth):
        for axis in range(len(shape)):
            field = (field + np.roll(field, 1, axis) + np.roll(field, -1, axis)) / 3
    return field < np.quantile(field, porosity)


def brute_distance(mask, spacing):
    """Distance from each phase voxel to the nearest non-phase voxel inside the volume."""
    background = np.argwhere(~mask) * np.asarray(spacing)
    out = np.zeros(mask.shape)
    for index in np.argwhere(mask):
        out[tuple(index)] = np.sqrt(((background - index * np.asarray(spacing)) ** 2).sum(axis=1)).min()
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_distance_is_exact(backend):
    rng = np.random.default_rng(seed())
    mask = rng.random((7, 9, 11)) < 0.7
    spacing = (1.5, 1.0, 0.5)
    got = pf.distance_transform(mask, spacing=spacing, backend=backend)
    assert got.dtype == np.float32 and got.shape == mask.shape
    np.testing.assert_allclose(got, brute_distance(mask, spacing), rtol=1e-6)


@pytest.mark.skipif(CLI is None, reason="POREFORGE_CLI names the command line to compare with")
@pytest.mark.parametrize("backend", BACKENDS)
def test_thickness_and_psd_equal_the_command_line(tmp_path, backend):
    image = tmp_path / "blobs.h5"
    cli_blobs(image, "40,36,32", 0.35, seed())
    out = tmp_path / "thickness.h5"
    subprocess.run([CLI, "thickness", str(image), "-o", str(out), "--backend", backend, "--bins", "12",
                    "--boundary", "periodic"], check=True, capture_output=True)
    with h5py.File(image) as f:
        volume = f["volume"][...]
    with h5py.File(out) as f:
        cli_map = f["thickness"][...]
        cli_edges, cli_fraction = f["psd/edges"][...], f["psd/fraction"][...]
    assert volume.shape == (32, 36, 40)  # HDF5 stores z, y, x: the module's axis order
    got = pf.local_thickness(volume, boundary="periodic", backend=backend)
    np.testing.assert_array_equal(got, cli_map)
    psd = pf.pore_size_distribution(volume, boundary="periodic", bins=12, backend=backend)
    np.testing.assert_array_equal(psd.bin_edges, cli_edges)
    np.testing.assert_array_equal(psd.fraction, cli_fraction)
    # Given edges, the engine counts without the map: the same shares.
    counted = pf.pore_size_distribution(volume, boundary="periodic", bins=cli_edges, backend=backend)
    np.testing.assert_array_equal(counted.fraction, cli_fraction)


def test_psd_fields_as_porespy_names_them():
    rng = np.random.default_rng(seed())
    mask = random_structure((30, 30, 30), 0.4, rng)
    psd = pf.pore_size_distribution(mask, bins=8, spacing=2.0)
    assert len(psd.bin_edges) == 9 and len(psd.R) == 8
    np.testing.assert_allclose(psd.bin_centers, (psd.bin_edges[1:] + psd.bin_edges[:-1]) / 2)
    np.testing.assert_allclose((psd.pdf * psd.bin_widths).sum(), 1.0)  # every phase voxel in a bin
    np.testing.assert_allclose(psd.cdf[0], 1.0)
    np.testing.assert_allclose(psd.cdf, psd.relfreq[::-1].cumsum()[::-1])
    thickness = pf.local_thickness(mask, spacing=2.0)
    assert psd.bin_edges[0] == pytest.approx(thickness[mask].min())
    assert psd.bin_edges[-1] == pytest.approx(thickness[mask].max())
    assert psd.phase_voxels == mask.sum()
    # Edges inside the range: PoreSpy's fields count the voxels within them, poreforge's own
    # keep the shares of the whole phase.
    narrow = pf.pore_size_distribution(mask, bins=psd.bin_edges[2:6], spacing=2.0)
    assert narrow.below > 0 and narrow.above > 0
    np.testing.assert_allclose(narrow.fraction.sum(), 1 - narrow.below - narrow.above)
    np.testing.assert_allclose((narrow.pdf * narrow.bin_widths).sum(), 1.0)
    np.testing.assert_allclose(narrow.cdf[0], 1.0)
    np.testing.assert_allclose(narrow.relfreq, psd.fraction[2:5] / psd.fraction[2:5].sum())


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_workspace_measures_a_sequence_as_the_functions_do(backend):
    """Shapes, spacings, boundaries and bins change along the sequence and come back: each
    result equals a fresh call's."""
    rng = np.random.default_rng(seed())
    ws = pf.Workspace(backend)
    assert ws.backend == backend
    a, b = random_structure((20, 22, 24), 0.4, rng), random_structure((16, 18, 14), 0.35, rng)
    calls = [(a, "open", 1.0, 8), (a, "open", 1.0, 8), (b, "periodic", 1.0, 8), (a, "wall", (1.0, 2.0, 0.5), 5),
             (a, "open", 1.0, np.array([1.0, 1.5, 2.0, 3.0]))]
    for image, boundary, spacing, bins in calls:
        kw = dict(boundary=boundary, spacing=spacing)
        np.testing.assert_array_equal(ws.local_thickness(image, **kw), pf.local_thickness(image, backend="cpu", **kw))
        np.testing.assert_array_equal(ws.distance_transform(image, **kw),
                                      pf.distance_transform(image, backend="cpu", **kw))
        got = ws.pore_size_distribution(image, bins=bins, **kw)
        want = pf.pore_size_distribution(image, bins=bins, backend="cpu", **kw)
        np.testing.assert_array_equal(got.bin_edges, want.bin_edges)
        np.testing.assert_array_equal(got.fraction, want.fraction)
    with pytest.raises(ValueError, match="the phase is empty"):
        ws.local_thickness(np.zeros((8, 8, 8), bool))


def _cupy():
    try:
        import cupy
    except ImportError:
        return None
    return cupy if _poreforge.cuda_available() else None


@pytest.mark.skipif(_cupy() is None, reason="CuPy and a CUDA device measure device arrays")
def test_cupy_arrays_are_measured_on_the_device():
    cupy = _cupy()
    rng = np.random.default_rng(seed())
    host = random_structure((40, 36, 32), 0.4, rng)
    labels = cupy.asarray(np.where(host, 3, 7).astype(np.int16))
    before = labels.copy()
    ws = pf.Workspace("cuda")
    for _ in range(2):  # the second call reuses the workspace
        got = ws.local_thickness(labels, phase=3, boundary="periodic", spacing=(1.0, 1.0, 2.0))
        assert isinstance(got, cupy.ndarray) and got.dtype == cupy.float32 and got.shape == host.shape
        np.testing.assert_array_equal(cupy.asnumpy(got),
                                      pf.local_thickness(host, boundary="periodic", spacing=(1.0, 1.0, 2.0),
                                                         backend="cpu"))
    cupy.testing.assert_array_equal(labels, before)
    # On a stream of CuPy's own, with work queued there ahead of the call: the engine takes its
    # turn in that stream's order. The distance transform, because it does not ask whether the
    # phase is empty first (a question that waits for the stream on the host).
    with cupy.cuda.Stream(non_blocking=True):
        busy = cupy.zeros(1 << 26, cupy.float32)
        for _ in range(10):
            busy += 1
        late = labels.copy()
        got = ws.distance_transform(late, phase=3, boundary="periodic", spacing=(1.0, 1.0, 2.0))
        np.testing.assert_array_equal(cupy.asnumpy(got),
                                      pf.distance_transform(host, boundary="periodic", spacing=(1.0, 1.0, 2.0),
                                                            backend="cpu"))
    distance = pf.distance_transform(cupy.asarray(host), backend="cuda")
    assert isinstance(distance, cupy.ndarray)
    np.testing.assert_array_equal(cupy.asnumpy(distance), pf.distance_transform(host, backend="cpu"))
    for bins in (9, np.array([0.5, 1.0, 2.0, 4.0])):
        got = pf.pore_size_distribution(cupy.asarray(host), bins=bins, backend="cuda")
        want = pf.pore_size_distribution(host, bins=bins, backend="cpu")
        np.testing.assert_array_equal(got.bin_edges, want.bin_edges)
        np.testing.assert_array_equal(got.fraction, want.fraction)
    with pytest.raises(ValueError, match="the phase is empty"):
        ws.local_thickness(cupy.zeros((8, 8, 8), cupy.uint8))
    # A CPU workspace measures a host copy and hands back a CuPy array.
    on_cpu = pf.Workspace("cpu").local_thickness(labels, phase=3)
    assert isinstance(on_cpu, cupy.ndarray)
    np.testing.assert_array_equal(cupy.asnumpy(on_cpu), pf.local_thickness(host, backend="cpu"))
    # The functions that have no device path copy the array to the host.
    np.testing.assert_array_equal(pf.two_point_correlation(cupy.asarray(host)).s2, pf.two_point_correlation(host).s2)


def test_any_layout_reads_the_same():
    rng = np.random.default_rng(seed())
    base = random_structure((24, 20, 16), 0.4, rng)
    reference = pf.local_thickness(np.ascontiguousarray(base))
    fortran = np.asfortranarray(base)
    assert not fortran.flags.c_contiguous
    np.testing.assert_array_equal(pf.local_thickness(fortran), reference)
    # A transposed view is another image: the same as its own contiguous copy.
    view = base.transpose(2, 0, 1)
    np.testing.assert_array_equal(pf.local_thickness(view), pf.local_thickness(np.ascontiguousarray(view)))
    strided = base[::2, :, ::-1]
    np.testing.assert_array_equal(pf.local_thickness(strided), pf.local_thickness(strided.copy()))
    # Labels of any dtype: the phase picks the voxels.
    labels = np.where(base, 7, 2).astype(np.uint16)
    np.testing.assert_array_equal(pf.local_thickness(labels, phase=7), reference)
    np.testing.assert_array_equal(pf.local_thickness(labels.astype(np.float32), phase=7.0), reference)
    np.testing.assert_array_equal(pf.local_thickness(base.astype(np.int64)), reference)


def test_spacing_is_per_array_axis_and_2d_images_work():
    slab = np.zeros((9, 30, 30), bool)
    slab[2:7] = True  # 5 voxels thick along axis 0
    plain = pf.distance_transform(slab)
    stretched = pf.distance_transform(slab, spacing=(2.0, 1.0, 1.0))
    assert plain.max() == pytest.approx(3.0) and stretched.max() == pytest.approx(6.0)
    assert pf.distance_transform(slab, spacing=(1.0, 1.0, 2.0)).max() == pytest.approx(3.0)
    image = np.zeros((40, 50), bool)
    image[10:20, 5:45] = True
    thickness = pf.local_thickness(image)
    assert thickness.shape == (40, 50) and thickness.dtype == np.float32
    assert thickness.max() == pytest.approx(pf.local_thickness(image[None])[0].max())
    s2 = pf.two_point_correlation(image)
    assert len(s2.directional) == 2
    assert s2.directional[0][0] == pytest.approx(image.mean())
    assert len(s2.directional[0]) == 40 // 2 + 1 and len(s2.directional[1]) == 50 // 2 + 1


def box_erosion(mask, size):
    """Reference erosion by a centred box; beyond the faces never erodes."""
    out = np.ones_like(mask)
    for offset in np.ndindex(*size):
        shift = [o - s // 2 for o, s in zip(offset, size)]
        padded = np.pad(mask, [(s, s) for s in size], constant_values=True)
        window = tuple(slice(s + d, s + d + n) for s, d, n in zip(size, shift, mask.shape))
        out &= padded[window]
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_morphology_matches_a_reference(backend):
    rng = np.random.default_rng(seed())
    mask = rng.random((10, 12, 14)) < 0.8
    eroded = pf.erode(mask, (3, 1, 5), backend=backend)
    assert eroded.dtype == np.uint8
    np.testing.assert_array_equal(eroded.astype(bool), box_erosion(mask, (3, 1, 5)))
    # Dilation is erosion of the other phase; opening and closing compose them.
    np.testing.assert_array_equal(pf.dilate(mask, 3, backend=backend), 1 - pf.erode(~mask, 3, backend=backend))
    np.testing.assert_array_equal(pf.open(mask, 3, backend=backend),
                                  pf.dilate(pf.erode(mask, 3, backend=backend), 3, backend=backend))
    ball = pf.erode(mask, radius=1.0, backend=backend)  # the 6 face neighbours and the centre
    np.testing.assert_array_equal(ball, pf.erode(mask, radius=1.0, backend="cpu"))


def test_errors_say_what_the_command_line_says():
    with pytest.raises(ValueError, match="the phase is empty"):
        pf.local_thickness(np.zeros((4, 4, 4)))
    with pytest.raises(ValueError, match="unknown boundary 'mirror'"):
        pf.local_thickness(np.ones((4, 4, 4)), boundary="mirror")
    with pytest.raises(ValueError, match="expected a 2D or 3D image"):
        pf.distance_transform(np.ones(5))
    with pytest.raises(ValueError, match="spacing has 2 values for a 3D image"):
        pf.distance_transform(np.ones((3, 3, 3)), spacing=(1, 2))
    with pytest.raises(ValueError, match="spacing must be positive"):
        pf.distance_transform(np.ones((3, 3, 3)), spacing=0)
    with pytest.raises(ValueError, match="bins must be a whole number"):
        pf.pore_size_distribution(np.ones((3, 3, 3)), bins=2.5)
    with pytest.raises(ValueError, match="strictly increasing"):
        pf.pore_size_distribution(np.eye(6, dtype=bool)[None], bins=[1.0, 0.5])
    with pytest.raises(ValueError, match="bins must be a whole number in"):
        pf.pore_size_distribution(np.ones((3, 3, 3)), bins=2**31)
    with pytest.raises(ValueError, match="iterations must be a whole number"):
        pf.erode(np.ones((3, 3, 3)), iterations=1.9)
    with pytest.raises(ValueError, match="size must be a whole number"):
        pf.erode(np.ones((3, 3, 3)), size=2.7)
    with pytest.raises(ValueError, match="boundary must be a string"):
        pf.local_thickness(np.ones((3, 3, 3)), boundary=None)
    with pytest.raises(ValueError, match="flat list of edges"):
        pf.pore_size_distribution(np.ones((3, 3, 3)), bins=[[1, 2], [3, 4]])
    with pytest.raises(ValueError, match="box size or a ball radius"):
        pf.erode(np.ones((3, 3, 3)), 3, radius=1.0)
    if not _poreforge.cuda_available():
        with pytest.raises(ValueError, match="cuda"):
            pf.local_thickness(np.ones((4, 4, 4)) * (np.arange(4) < 2), backend="cuda")


def test_the_engine_lets_go_of_the_gil():
    # With a switch interval of minutes a thread that holds the GIL keeps it until it blocks
    # or ends: the main thread can look while the worker is still inside the engine only if
    # the engine let the GIL go.
    rng = np.random.default_rng(seed())
    mask = np.ascontiguousarray(random_structure((96, 96, 96), 0.4, rng, smooth=1), dtype=np.uint8)
    started, done, seen_running = threading.Event(), threading.Event(), []

    engine = _poreforge.Workspace("cpu")

    def work():
        started.set()
        engine.local_thickness(mask, (1.0, 1.0, 1.0), "open")
        engine.local_thickness(mask, (1.0, 1.0, 1.0), "open")
        done.set()

    interval = sys.getswitchinterval()
    sys.setswitchinterval(300)
    try:
        worker = threading.Thread(target=work)
        worker.start()
        started.wait()
        seen_running.append(not done.is_set())
        worker.join()
    finally:
        sys.setswitchinterval(interval)
    assert done.is_set(), "the worker failed (see the thread's exception above)"
    assert seen_running == [True]


def test_threads_sharing_a_workspace_take_turns():
    rng = np.random.default_rng(seed())
    images = [random_structure((40, 40, 40), 0.4, rng) for _ in range(4)]
    want = [pf.local_thickness(image, backend="cpu") for image in images]
    ws = pf.Workspace(BACKENDS[-1])
    got = [None] * len(images)

    def work(k):
        got[k] = ws.local_thickness(images[k])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(images))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


@pytest.mark.skipif(CLI is None, reason="POREFORGE_CLI names the command line to compare with")
def test_compare_equals_the_command_line(tmp_path):
    s = seed()
    reference, candidate = tmp_path / "reference.h5", tmp_path / "candidate.h5"
    for path, shape, value in ((reference, "40,40,40", s), (candidate, "20,20,20", s + 1)):
        cli_blobs(path, shape, 0.35, value)
    report = tmp_path / "report.json"
    subprocess.run([CLI, "compare", str(candidate), "--reference", str(reference), "--subvolumes", "4", "--seed", "3",
                    "--bins", "8", "--backend", "cpu", "-o", str(report)], check=True, capture_output=True)
    cli = json.loads(report.read_text())  # numbers to 10 significant digits
    with h5py.File(reference) as f:
        ref = f["volume"][...]
    with h5py.File(candidate) as f:
        cand = f["volume"][...]
    got = pf.compare(cand, ref, subvolumes=4, seed=3, bins=8, backend="cpu")
    assert got.judged and cli["judged"]
    assert (got.outside, got.measures) == (cli["outside"], cli["measures"])
    assert got.real_outside == cli["real_outside"]
    assert [tuple(c) for c in got.corners] == [tuple(c[::-1]) for c in cli["subvolume_corners"]]
    assert len(got.scalars) == len(cli["scalars"]) and len(got.curves) == len(cli["curves"])
    for entry in cli["scalars"]:
        mine = got.scalars[entry["name"]]
        for key in ("value", "real_mean", "real_min", "real_max"):
            assert mine[key] == pytest.approx(entry[key], rel=1e-9, abs=1e-300), (entry["name"], key)
        assert mine["inside"] == entry["inside"]
    for entry in cli["curves"]:
        assert got.curves[entry["name"]]["distance"] == pytest.approx(entry["distance"], rel=1e-9, abs=1e-300)
    # One structure's profile: the candidate's scalars again.
    profile = pf.realism_profile(cand, bins=8)
    assert profile["scalars"]["porosity"]["value"] == pytest.approx(got.scalars["porosity"]["value"])
    assert profile["scalars"]["formation_factor_x"]["value"] == pytest.approx(got.scalars["formation_factor_x"]["value"])
    assert profile["warnings"] == [] and cli["warnings"] == []
    # Units: the spacing's when named, "unit" when not.
    assert profile["scalars"]["specific_surface"]["unit"] == "1/unit"
    assert pf.realism_profile(cand, bins=8, length_unit="um")["scalars"]["specific_surface"]["unit"] == "1/um"
    with pytest.raises(ValueError, match="does not fit inside the reference"):
        pf.compare(ref, cand)
    with pytest.raises(ValueError, match="unknown length unit 'furlong'"):
        pf.compare(cand, ref, length_unit="furlong")


@pytest.fixture
def pythons_sigint():
    """Python's own SIGINT handler for the test, whatever the process was started with: a shell
    starts a background job with SIGINT ignored, and Python then leaves it ignored, so a signal
    after the run would raise nothing however well the run put the handler back."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.skipif(CLI is None, reason="POREFORGE_CLI names the command line to compare with")
def test_reconstruct_equals_the_command_line_and_keeps_pythons_signals(tmp_path, monkeypatch, pythons_sigint):
    monkeypatch.chdir(tmp_path)
    cli_blobs("ref.h5", "24,24,24", 0.35, seed())
    config = {"name": "py", "backend": "cpu", "target": {"image": "ref.h5"}, "domain": {"shape": [16, 16, 16]},
              "annealing": {"max_evaluations": 300, "stage_length": 50, "trial_moves": 20}}
    (tmp_path / "run.yaml").write_text(json.dumps(config))  # JSON is YAML
    subprocess.run([CLI, "run", "run.yaml", "--output", "cli", "--quiet"], check=True, capture_output=True)
    handler = signal.getsignal(signal.SIGINT)
    run = pf.reconstruct(config, output="module")
    assert signal.getsignal(signal.SIGINT) is handler
    with h5py.File(tmp_path / "cli" / "py" / "final.h5") as f:
        np.testing.assert_array_equal(run.volume, f["volume"][...])
    assert run.volume.shape == (16, 16, 16) and run.summary["evaluations"] == 300
    # The same from the file, with an override, and an existing folder refused.
    again = pf.reconstruct("run.yaml", overrides=["name=again"], output="module")
    np.testing.assert_array_equal(again.volume, run.volume)
    with pytest.raises(ValueError, match="already exists"):
        pf.reconstruct(config, output="module")
    with pytest.raises(ValueError, match="annealing.alpah is not a known key"):
        pf.reconstruct({**config, "annealing": {"alpah": 0.9}}, output="module")
    # Ctrl-C during a run: a checkpoint, then KeyboardInterrupt; Python's own handling after.
    # Long: no stop but the signal (the stall and energy stops off), however fast the loop.
    long = {**config, "name": "long",
            "annealing": {"max_evaluations": 10**9, "stage_length": 50, "stall_stages": 2**30, "energy_tolerance": 0}}

    def interrupt():
        wait_for(tmp_path / "module" / "long" / "run.log")
        time.sleep(0.3)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
    with pytest.raises(KeyboardInterrupt, match="signal 2 after writing a checkpoint"):
        pf.reconstruct(long, output="module")
    assert list((tmp_path / "module" / "long" / "checkpoints").glob("evaluation-*.h5"))
    assert signal.getsignal(signal.SIGINT) is handler
    with pytest.raises(KeyboardInterrupt):  # the run's handler would take it and raise nothing
        signal.raise_signal(signal.SIGINT)


@pytest.mark.skipif(CLI is None, reason="POREFORGE_CLI makes the reference image")
def test_reconstruct_runs_take_turns_and_a_signal_in_the_start_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cli_blobs("ref.h5", "48,48,48", 0.3, seed())
    # A signal while the start is searched (grains of every size at 96^3 take seconds): the run
    # ends before its folder exists.
    start = {"name": "start", "backend": "cpu", "target": {"image": "ref.h5"}, "domain": {"shape": [96, 96, 96]},
             "initial": {"structure": "grains"}, "annealing": {"max_evaluations": 100}}
    threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    with pytest.raises(KeyboardInterrupt, match="before its folder was made: nothing was written"):
        pf.reconstruct(start, output="out")
    assert not (tmp_path / "out" / "start").exists()
    # One run at a time in a process: a second, from another thread, is refused.
    long = {"name": "long", "backend": "cpu", "target": {"image": "ref.h5"}, "domain": {"shape": [16, 16, 16]},
            "annealing": {"max_evaluations": 10**9, "stage_length": 50}}
    outcome = []

    def first():
        try:
            pf.reconstruct(long, output="out")
        except KeyboardInterrupt as stop:
            outcome.append(str(stop))

    worker = threading.Thread(target=first)
    worker.start()
    wait_for(tmp_path / "out" / "long" / "run.log")
    with pytest.raises(ValueError, match="another poreforge run is going on in this process"):
        pf.reconstruct({**long, "name": "second"}, output="out")
    os.kill(os.getpid(), signal.SIGINT)
    worker.join()
    assert outcome and "after writing a checkpoint" in outcome[0]
