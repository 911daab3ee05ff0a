// `import poreforge`: the engine on NumPy arrays. The Python layer (poreforge/__init__.py)
// turns any array into a C-contiguous uint8 phase mask and a spacing in poreforge's x, y, z
// order; this file copies it into a Mask, lets go of the GIL while the engine works, and
// hands the result back as a NumPy array that owns it.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "poreforge/backend.hpp"
#include "poreforge/correlation.hpp"
#include "poreforge/edt.hpp"
#include "poreforge/error.hpp"
#include "poreforge/local_thickness.hpp"
#include "poreforge/memory.hpp"
#include "poreforge/morphology.hpp"
#include "poreforge/psd.hpp"
#include "poreforge/volume.hpp"

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

// A float map of the phase (distance or thickness) by `compute` on the backend for `op`.
nb::ndarray<nb::numpy, float> phase_map(const MaskArray& a, std::array<double, 3> spacing, const std::string& boundary,
                                        const std::string& backend, Operation op,
                                        Volume<float> (*compute)(const Mask&, Boundary, Backend)) {
  const Mask m = mask_of(a, spacing);
  const Boundary b = parse_boundary(boundary);
  const Backend be = backend_for(backend, op);
  require_memory(thickness_memory(m.shape(), 1, m.spacing(), b, be));
  Volume<float> out;
  {
    nb::gil_scoped_release release;
    out = compute(m, b, be);
  }
  return array_of(std::move(out), a.ndim());
}

nb::ndarray<nb::numpy, float> distance(const MaskArray& a, std::array<double, 3> spacing, const std::string& boundary,
                                       const std::string& backend) {
  return phase_map(a, spacing, boundary, backend, Operation::distance_transform, &distance_transform);
}

nb::ndarray<nb::numpy, float> thickness(const MaskArray& a, std::array<double, 3> spacing, const std::string& boundary,
                                        const std::string& backend) {
  return phase_map(a, spacing, boundary, backend, Operation::local_thickness, &local_thickness);
}

// With edges: the PSD-only path (no map kept); without: the map, then `bins` bins over its
// range over the phase, as `poreforge thickness` does.
nb::dict psd(const MaskArray& a, std::array<double, 3> spacing, const std::string& boundary, const std::string& backend,
             int bins, bool log, std::optional<std::vector<double>> edges) {
  const Mask m = mask_of(a, spacing);
  const Boundary b = parse_boundary(boundary);
  if (!edges && bins < 1) throw InputError("bins must be 1 or more (got " + std::to_string(bins) + ")");
  std::optional<Bins> given;
  if (edges) given = Bins::from_edges(*edges);
  const Backend be = backend_for(backend, edges ? Operation::pore_size_distribution : Operation::local_thickness);
  require_memory(thickness_memory(m.shape(), 1, m.spacing(), b, be));
  PoreSizeDistribution d;
  {
    nb::gil_scoped_release release;
    if (given) {
      d = pore_size_distribution(m, b, *given, be);
    } else {
      const Volume<float> map = local_thickness(m, b, be);
      d = psd_from_thickness(map, m, default_bins(map, m, bins, log));
    }
  }
  nb::dict r;
  r["edges"] = d.edges;
  r["fraction"] = d.fraction;
  r["cumulative"] = d.cumulative;
  r["below"] = d.below;
  r["above"] = d.above;
  r["phase_voxels"] = d.phase_voxels;
  return r;
}

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
  m.def("distance_transform", &distance, "mask"_a, "spacing"_a, "boundary"_a, "backend"_a);
  m.def("local_thickness", &thickness, "mask"_a, "spacing"_a, "boundary"_a, "backend"_a);
  m.def("pore_size_distribution", &psd, "mask"_a, "spacing"_a, "boundary"_a, "backend"_a, "bins"_a, "log"_a,
        "edges"_a = nb::none());
  m.def("two_point_correlation", &s2, "mask"_a, "spacing"_a);
  m.def("morphology", &morph, "mask"_a, "spacing"_a, "op"_a, "element"_a, "iterations"_a, "backend"_a);
  m.def("backend_description", [](const std::string& name) {
    return backend_description(resolve_backend(parse_backend(name), Operation::local_thickness));
  });
  m.def("cuda_available", [] { return cuda_device_count() > 0; });
  m.attr("__version__") = POREFORGE_VERSION;
}
