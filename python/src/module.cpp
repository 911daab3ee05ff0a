// `import poreforge`: the engine on NumPy arrays. The Python layer (poreforge/__init__.py)
// turns any array into a C-contiguous uint8 phase mask and a spacing in poreforge's x, y, z
// order; this file copies it into a Mask, lets go of the GIL while the engine works, and
// hands the result back as a NumPy array that owns it.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "poreforge/backend.hpp"
#include "poreforge/correlation.hpp"
#include "poreforge/edt.hpp"
#include "poreforge/error.hpp"
#include "poreforge/io.hpp"
#include "poreforge/local_thickness.hpp"
#include "poreforge/memory.hpp"
#include "poreforge/morphology.hpp"
#include "poreforge/psd.hpp"
#include "poreforge/realism.hpp"
#include "poreforge/volume.hpp"
#include "poreforge/workspace.hpp"
#include "run_session.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace poreforge::python {
namespace {

using MaskArray = nb::ndarray<const uint8_t, nb::c_contig, nb::device::cpu>;

// The mask's shape as poreforge's: the last array axis is x (the fastest in memory), a 2D
// array is one z-plane.
Shape shape_of(const MaskArray& a) {
  if (a.ndim() == 3) return {int64_t(a.shape(2)), int64_t(a.shape(1)), int64_t(a.shape(0))};
  if (a.ndim() == 2) return {int64_t(a.shape(1)), int64_t(a.shape(0)), 1};
  throw InputError("expected a 2D or 3D image, got " + std::to_string(a.ndim()) + " dimensions");
}

Mask mask_of(const MaskArray& a, const std::array<double, 3>& spacing) {
  const Shape shape = shape_of(a);
  validate_shape(shape);
  Mask m(shape, Spacing{spacing[0], spacing[1], spacing[2]});
  const uint8_t* in = a.data();
  std::copy(in, in + shape.voxels(), m.data());
  return m;
}

// A NumPy array of the input's dimensions that owns `volume`'s values.
template <class T>
nb::ndarray<nb::numpy, T> array_of(Volume<T>&& volume, std::size_t ndim) {
  const Shape s = volume.shape();
  auto* owner = new std::vector<T>(std::move(volume.values()));
  nb::capsule free_when_done(owner, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  std::array<std::size_t, 3> shape{std::size_t(s.nz), std::size_t(s.ny), std::size_t(s.nx)};
  const std::size_t* dims = ndim == 3 ? shape.data() : shape.data() + 1;
  return nb::ndarray<nb::numpy, T>(owner->data(), ndim, dims, free_when_done);
}

Backend backend_for(const std::string& name, Operation op) { return resolve_backend(parse_backend(name), op); }

using DeviceMaskArray = nb::ndarray<const uint8_t, nb::c_contig, nb::device::cuda>;
using DeviceMapArray = nb::ndarray<float, nb::c_contig, nb::device::cuda>;

Shape shape_of(const DeviceMaskArray& a) {
  if (a.ndim() == 3) return {int64_t(a.shape(2)), int64_t(a.shape(1)), int64_t(a.shape(0))};
  if (a.ndim() == 2) return {int64_t(a.shape(1)), int64_t(a.shape(0)), 1};
  throw InputError("expected a 2D or 3D image, got " + std::to_string(a.ndim()) + " dimensions");
}

// A device array must be on the current device (where the engine's work goes).
void require_current_device(int device) {
  const int current = cuda_current_device();
  if (device != current)
    throw InputError("the array is on CUDA device " + std::to_string(device) + ", and device " +
                     std::to_string(current) + " is current: make its device current (with cupy.cuda.Device(" +
                     std::to_string(device) + "))");
}

// A device result array must match its mask element for element, on the same device.
void require_same_shape(const DeviceMaskArray& mask, const DeviceMapArray& out) {
  bool same = mask.ndim() == out.ndim() && mask.device_id() == out.device_id();
  for (std::size_t k = 0; same && k < mask.ndim(); ++k) same = mask.shape(k) == out.shape(k);
  if (!same) throw InputError("the result array's shape or device differs from the image's");
}

nb::dict psd_dict(const PoreSizeDistribution& d) {
  nb::dict r;
  r["edges"] = d.edges;
  r["fraction"] = d.fraction;
  r["cumulative"] = d.cumulative;
  r["below"] = d.below;
  r["above"] = d.above;
  r["phase_voxels"] = d.phase_voxels;
  return r;
}

// poreforge.Workspace: the engine's Workspace for Python, one call at a time (the lock: the
// engine runs without the GIL, and two threads may share a workspace).
class PyWorkspace {
 public:
  // `voxels`: the size of the one image a one-shot call measures (auto picks the backend that
  // should finish first for it, counting the device's start-up); 0: a workspace for a loop,
  // where auto means the device when there is one.
  PyWorkspace(const std::string& backend, int64_t voxels)
      : m_engine(voxels > 0 ? choose_backend(parse_backend(backend), Operation::local_thickness, voxels).backend
                            : parse_backend(backend)) {}

  std::string backend() const { return to_string(m_engine.backend()); }

  nb::ndarray<nb::numpy, float> distance(const MaskArray& a, std::array<double, 3> spacing, const std::string& boundary) {
    return map(a, spacing, boundary, &Workspace::distance_transform);
  }
  nb::ndarray<nb::numpy, float> thickness(const MaskArray& a, std::array<double, 3> spacing, const std::string& boundary) {
    return map(a, spacing, boundary, &Workspace::local_thickness);
  }

  // With edges: the PSD-only path (no map kept); without: the map, then `bins` bins over its
  // range over the phase, as `poreforge thickness` does.
  nb::dict psd(const MaskArray& a, std::array<double, 3> spacing, const std::string& boundary, int bins, bool log,
               std::optional<std::vector<double>> edges) {
    const Mask m = mask_of(a, spacing);
    const Boundary b = parse_boundary(boundary);
    if (!edges && bins < 1) throw InputError("bins must be 1 or more (got " + std::to_string(bins) + ")");
    std::optional<Bins> given;
    if (edges) given = Bins::from_edges(*edges);
    require_room(m, b);
    PoreSizeDistribution d;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> one_at_a_time(m_busy);
      if (given) {
        d = m_engine.pore_size_distribution(m, b, *given);
      } else {
        const Volume<float> map = m_engine.local_thickness(m, b);
        d = psd_from_thickness(map, m, default_bins(map, m, bins, log));
      }
    }
    return psd_dict(d);
  }

  // On CuPy arrays: the result into `out`, a device array the caller made.
  // `stream`: the cudaStream_t the arrays were written on (CuPy's current stream's `ptr`).
  void distance_device(const DeviceMaskArray& a, const DeviceMapArray& out, std::array<double, 3> spacing,
                       const std::string& boundary, std::uintptr_t stream) {
    device_map(a, out, spacing, boundary, stream, &Workspace::distance_transform);
  }
  void thickness_device(const DeviceMaskArray& a, const DeviceMapArray& out, std::array<double, 3> spacing,
                        const std::string& boundary, std::uintptr_t stream) {
    device_map(a, out, spacing, boundary, stream, &Workspace::local_thickness);
  }
  nb::dict psd_device(const DeviceMaskArray& a, std::array<double, 3> spacing, const std::string& boundary,
                      std::vector<double> edges, std::uintptr_t stream) {
    const Shape shape = shape_of(a);
    validate_shape(shape);
    require_current_device(a.device_id());
    const Boundary b = parse_boundary(boundary);
    const Bins bins = Bins::from_edges(std::move(edges));
    PoreSizeDistribution d;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> one_at_a_time(m_busy);
      d = m_engine.pore_size_distribution(a.data(), shape, Spacing{spacing[0], spacing[1], spacing[2]}, b, bins,
                                          reinterpret_cast<void*>(stream));
    }
    return psd_dict(d);
  }

 private:
  using HostMap = Volume<float> (Workspace::*)(const Mask&, Boundary);
  using DeviceMap = void (Workspace::*)(const uint8_t*, float*, const Shape&, const Spacing&, Boundary, void*);

  nb::ndarray<nb::numpy, float> map(const MaskArray& a, std::array<double, 3> spacing, const std::string& boundary,
                                    HostMap compute) {
    const Mask m = mask_of(a, spacing);
    const Boundary b = parse_boundary(boundary);
    require_room(m, b);
    Volume<float> out;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> one_at_a_time(m_busy);
      out = (m_engine.*compute)(m, b);
    }
    return array_of(std::move(out), a.ndim());
  }

  void device_map(const DeviceMaskArray& a, const DeviceMapArray& out, std::array<double, 3> spacing,
                  const std::string& boundary, std::uintptr_t stream, DeviceMap compute) {
    const Shape shape = shape_of(a);
    validate_shape(shape);
    require_same_shape(a, out);
    require_current_device(a.device_id());
    const Boundary b = parse_boundary(boundary);
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> one_at_a_time(m_busy);
    (m_engine.*compute)(a.data(), out.data(), shape, Spacing{spacing[0], spacing[1], spacing[2]}, b,
                        reinterpret_cast<void*>(stream));
  }

  // Memory for a call on `m`: the host's always, the device's unless the workspace already
  // holds a context for it (asking again would count what it holds as needed twice).
  void require_room(const Mask& m, Boundary b) {
    MemoryEstimate e = thickness_memory(m.shape(), 1, m.spacing(), b, m_engine.backend());
    bool held = false;
    {
      nb::gil_scoped_release release;  // another thread may be inside the engine with the lock
      std::lock_guard<std::mutex> one_at_a_time(m_busy);
      held = m_engine.holds(m.shape(), m.spacing(), b);
    }
    if (held) e.device_bytes = 0;
    require_memory(e);
  }

  Workspace m_engine;
  std::mutex m_busy;
};

nb::dict s2(const MaskArray& a, std::array<double, 3> spacing) {
  const Mask m = mask_of(a, spacing);
  TwoPointCorrelation c;
  {
    nb::gil_scoped_release release;
    c = two_point_correlation(m);
  }
  nb::dict r;
  r["x"] = c.directional.x;
  r["y"] = c.directional.y;
  r["z"] = c.directional.z;
  r["r"] = c.radial.r;
  r["s2"] = c.radial.s2;
  return r;
}

nb::ndarray<nb::numpy, uint8_t> morph(const MaskArray& a, std::array<double, 3> spacing, const std::string& op,
                                      const std::string& element, int iterations, const std::string& backend) {
  const Mask m = mask_of(a, spacing);
  const MorphOp o = parse_morph_op(op);
  const StructuringElement e = StructuringElement::parse(element);
  validate_morphology(m, e, iterations);
  const Backend be = backend_for(backend, Operation::morphology);
  require_memory(morph_memory(m.shape(), 1, be));
  Mask out;
  {
    nb::gil_scoped_release release;
    out = morphology(m, o, e, iterations, be);
  }
  return array_of(std::move(out), a.ndim());
}

// A dict of alternating keys and values: fields("name", n, "value", v).
inline void put(nb::dict&) {}
template <class Value, class... Rest>
void put(nb::dict& d, const char* key, const Value& value, const Rest&... rest) {
  d[key] = value;
  put(d, rest...);
}
template <class... Pairs>
nb::dict fields(const Pairs&... pairs) {
  nb::dict d;
  put(d, pairs...);
  return d;
}

nb::dict profile_dict(const RealismProfile& p) {
  nb::list scalars, curves;
  for (const ScalarMeasure& m : p.scalars) scalars.append(fields("name", m.name, "unit", m.unit, "value", m.value));
  for (const CurveMeasure& c : p.curves)
    curves.append(fields("name", c.name, "x_unit", c.x_unit,
                           "distance_kind", c.distance == CurveMeasure::Distance::l1 ? "L1" : "RMS", "x", c.x,
                           "y", c.y));
  nb::list warnings;
  for (const std::string& w : p.warnings) warnings.append(w);
  nb::dict r;
  r["scalars"] = scalars;
  r["curves"] = curves;
  r["warnings"] = warnings;
  return r;
}

// `length_unit`: the spacing's unit ("um", "mm", …) for a permeability in millidarcy; "":
// in squared spacing units.
RealismOptions realism_options(const std::string& backend, bool permeability, const std::string& length_unit) {
  RealismOptions o;
  o.backend = backend_for(backend, Operation::local_thickness);
  o.permeability = permeability;
  o.unit_metres = length_unit.empty() ? 0 : unit_in_metres(length_unit);
  o.length_unit = length_unit;
  if (!length_unit.empty() && o.unit_metres == 0)
    throw InputError("unknown length unit '" + length_unit + "' (m, mm, um, nm)");
  return o;
}

// One structure's realism measures, the pore PSD on `edges`, or without them on `bins` bins as
// compare shares them (shared_psd_bins).
nb::dict profile(const MaskArray& a, std::array<double, 3> spacing, std::optional<std::vector<double>> edges, int bins,
                 bool permeability, const std::string& length_unit, const std::string& backend) {
  if (a.ndim() != 3) throw InputError("the realism measures are of 3D images");
  const Mask m = mask_of(a, spacing);
  RealismOptions o = realism_options(backend, permeability, length_unit);
  o.psd_bins = edges ? Bins::from_edges(std::move(*edges)) : shared_psd_bins({&m}, bins, o.backend);
  require_memory(compare_memory(m.shape(), m.spacing(), double(count_phase(m)) / double(m.voxels()), permeability,
                                o.backend));
  RealismProfile p;
  {
    nb::gil_scoped_release release;
    p = realism_profile(m, o);
  }
  return profile_dict(p);
}

// `poreforge compare`'s judgement: the candidate against sub-volumes of the reference.
nb::dict compare(const MaskArray& candidate, const MaskArray& reference, std::array<double, 3> spacing, int count,
                 uint64_t seed, int bins, bool permeability, const std::string& length_unit,
                 const std::string& backend) {
  if (candidate.ndim() != 3 || reference.ndim() != 3) throw InputError("compare judges 3D images");
  const Mask c = mask_of(candidate, spacing), ref = mask_of(reference, spacing);
  RealismOptions o = realism_options(backend, permeability, length_unit);
  nb::dict r;
  RealismProfile judged;
  std::vector<RealismProfile> real;
  EnvelopePlan plan;
  EnvelopeComparison cmp;
  {
    nb::gil_scoped_release release;
    plan = plan_envelope(c, ref, count, seed, bins, o.backend);
    o.psd_bins = plan.psd_bins;
    const MemoryEstimate each = compare_memory(c.shape(), c.spacing(), plan.largest_pore_fraction, permeability, o.backend);
    require_memory(each);
    std::vector<const Mask*> volumes{&c};
    for (const Mask& m : plan.real) volumes.push_back(&m);
    real = realism_profiles(volumes, o, realism_jobs(o.backend, each, volumes.size()));
    judged = std::move(real.front());
    real.erase(real.begin());
    if (!plan.whole_reference) cmp = compare_with_envelope(judged, real);
  }
  nb::list corners;
  for (const Shape& s : plan.corners) corners.append(nb::make_tuple(s.nz, s.ny, s.nx));  // array-axis order
  r["corners"] = corners;
  r["judged"] = !plan.whole_reference;
  r["candidate"] = profile_dict(judged);
  nb::list real_profiles;
  for (const RealismProfile& p : real) real_profiles.append(profile_dict(p));
  r["real"] = real_profiles;
  if (plan.whole_reference) return r;
  nb::list scalars, curves;
  for (const ScalarComparison& s : cmp.scalars)
    scalars.append(fields("name", s.name, "unit", s.unit, "value", s.value, "real_mean", s.mean,
                            "real_sd", s.sd, "real_min", s.min, "real_max", s.max, "z", s.z,
                            "inside", s.inside, "real", s.real));
  for (const CurveComparison& cc : cmp.curves)
    curves.append(fields("name", cc.name, "x_unit", cc.x_unit,
                           "distance_kind", cc.distance_kind == CurveMeasure::Distance::l1 ? "L1" : "RMS",
                           "distance", cc.distance, "real_distances", cc.real_distances, "inside", cc.inside,
                           "x", cc.x, "value", cc.value, "real_mean", cc.mean, "real_min", cc.min,
                           "real_max", cc.max));
  r["scalars"] = scalars;
  r["curves"] = curves;
  r["outside"] = cmp.outside;
  r["measures"] = cmp.measures;
  r["real_outside"] = cmp.real_outside;
  r["typical_real_outside"] = cmp.typical_real_outside;
  return r;
}

// `poreforge run` in-process: the run folder and the exit status (0, or 128 + the signal that
// stopped it, after its checkpoint).
std::pair<std::string, int> reconstruct(const std::string& config, const std::string& config_text,
                                        std::vector<std::string> sets, const std::string& output,
                                        const std::string& backend, bool force, bool quiet) {
  app::RunOptions o;
  o.config = config;
  o.config_text = config_text;
  o.sets = std::move(sets);
  o.output = output;
  o.backend = backend;
  o.force = force;
  o.quiet = quiet;
  o.progress = quiet ? "auto" : "plain";
  std::string folder;
  int code = 0;
  {
    nb::gil_scoped_release release;
    code = app::start_run(o, "poreforge.reconstruct (Python)", &folder);
  }
  return {folder, code};
}

// A volume poreforge wrote (final.h5, a level, a checkpoint's structure is not one): its
// `phase` voxels as a uint8 mask in array-axis order.
nb::ndarray<nb::numpy, uint8_t> read_volume(const std::string& path, double phase) {
  ReadOptions ro;
  const LabelImage image = read_image(path, ro);
  Mask m = phase_mask(image, phase);
  const std::size_t ndim = m.shape().nz > 1 ? 3 : 2;
  return array_of(std::move(m), ndim);
}

}  // namespace
}  // namespace poreforge::python

NB_MODULE(_poreforge, m) {
  using namespace poreforge;
  using namespace poreforge::python;
  m.doc() = "poreforge's engine on NumPy arrays (the functions of the poreforge package call these)";
  // The CLI's messages, as Python exceptions: bad input is a ValueError, too little memory a
  // MemoryError, a failure of the machine a RuntimeError.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const MemoryLimitError& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    } catch (const InputError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const RuntimeError& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });
  nb::class_<PyWorkspace>(m, "Workspace")
      .def(nb::init<const std::string&, int64_t>(), "backend"_a, "voxels"_a = 0)
      .def_prop_ro("backend", &PyWorkspace::backend)
      .def("distance_transform", &PyWorkspace::distance, "mask"_a, "spacing"_a, "boundary"_a)
      .def("local_thickness", &PyWorkspace::thickness, "mask"_a, "spacing"_a, "boundary"_a)
      .def("pore_size_distribution", &PyWorkspace::psd, "mask"_a, "spacing"_a, "boundary"_a, "bins"_a, "log"_a,
           "edges"_a = nb::none())
      .def("distance_transform_device", &PyWorkspace::distance_device, "mask"_a, "out"_a.noconvert(), "spacing"_a,
           "boundary"_a, "stream"_a)
      .def("local_thickness_device", &PyWorkspace::thickness_device, "mask"_a, "out"_a.noconvert(), "spacing"_a,
           "boundary"_a, "stream"_a)
      .def("pore_size_distribution_device", &PyWorkspace::psd_device, "mask"_a, "spacing"_a, "boundary"_a,
           "edges"_a, "stream"_a);
  m.def("empty_phase_message", &empty_phase_message);
  // The PSD of counts made elsewhere (a CuPy array's map binned on the device), as the engine
  // turns its own counts into one.
  m.def("psd_from_counts", [](std::vector<int64_t> at_least, int64_t above, int64_t phase_voxels, std::vector<double> edges) {
    if (phase_voxels == 0) throw InputError(empty_phase_message());
    if (at_least.size() != edges.size()) throw InputError("one count per edge is needed");
    const Bins bins = Bins::from_edges(std::move(edges));
    PsdCounts c;
    c.at_least = std::move(at_least);
    c.above = above;
    c.phase_voxels = phase_voxels;
    return psd_dict(psd_from_counts(c, bins));
  }, "at_least"_a, "above"_a, "phase_voxels"_a, "edges"_a);
  m.def("default_edges", [](double lo, double hi, int bins, bool log) { return default_bins(lo, hi, bins, log).edges(); },
        "lo"_a, "hi"_a, "bins"_a, "log"_a);
  m.def("two_point_correlation", &s2, "mask"_a, "spacing"_a);
  m.def("morphology", &morph, "mask"_a, "spacing"_a, "op"_a, "element"_a, "iterations"_a, "backend"_a);
  m.def("realism_profile", &profile, "mask"_a, "spacing"_a, "edges"_a.none(), "bins"_a, "permeability"_a,
        "length_unit"_a, "backend"_a);
  m.def("compare", &compare, "candidate"_a, "reference"_a, "spacing"_a, "count"_a, "seed"_a, "bins"_a, "permeability"_a,
        "length_unit"_a, "backend"_a);
  m.def("reconstruct", &reconstruct, "config"_a, "config_text"_a, "sets"_a, "output"_a, "backend"_a, "force"_a,
        "quiet"_a);
  m.def("read_volume", &read_volume, "path"_a, "phase"_a);
  m.def("backend_description", [](const std::string& name) {
    return backend_description(resolve_backend(parse_backend(name), Operation::local_thickness));
  });
  m.def("cuda_available", [] { return cuda_device_count() > 0; });
  m.attr("__version__") = POREFORGE_VERSION;
}
