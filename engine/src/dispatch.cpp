// The public engine functions: pick a backend, run it.
#include <cmath>

#include "cpu/cpu_backend.hpp"
#include "measures_detail.hpp"
#include "poreforge/edt.hpp"
#include "poreforge/error.hpp"
#include "poreforge/evaluator.hpp"
#include "poreforge/local_thickness.hpp"
#include "poreforge/measures.hpp"
#include "poreforge/morphology.hpp"
#include "poreforge/transport.hpp"
#include "transport_backends.hpp"
#ifdef POREFORGE_HAVE_CUDA
#include "poreforge/cuda_engine.hpp"
#include "poreforge/cuda_morphology.hpp"
#include "cuda/labels.hpp"
#endif

namespace poreforge {
namespace {

// Runs `on_cuda` when `requested` resolves to CUDA for `op`, `on_cpu` otherwise. In a build
// without the CUDA backend the CUDA branch does not exist (resolve_backend refuses `cuda`).
template <class OnCuda, class OnCpu>
auto run_on(Backend requested, Operation op, [[maybe_unused]] OnCuda&& on_cuda, OnCpu&& on_cpu) {
  const Backend backend = resolve_backend(requested, op);
#ifdef POREFORGE_HAVE_CUDA
  if (backend == Backend::cuda) return on_cuda();
#else
  (void)backend;
#endif
  return on_cpu();
}

}  // namespace

#ifdef POREFORGE_HAVE_CUDA
#define PF_ON_CUDA(expr) [&] { return expr; }
#else
#define PF_ON_CUDA(expr) [] {}
#endif

Volume<uint32_t> squared_distance_voxels(const Mask& phase, Boundary boundary, Backend backend) {
  return run_on(backend, Operation::distance_transform, PF_ON_CUDA(cuda::squared_distance_voxels(phase, boundary)),
                [&] { return cpu::squared_distance_voxels(phase, boundary); });
}

Volume<float> distance_transform(const Mask& phase, Boundary boundary, Backend backend) {
  return run_on(backend, Operation::distance_transform, PF_ON_CUDA(cuda::distance_transform(phase, boundary)),
                [&] { return cpu::distance_transform(phase, boundary); });
}

Volume<float> local_thickness(const Mask& phase, Boundary boundary, Backend backend) {
  return run_on(backend, Operation::local_thickness, PF_ON_CUDA(cuda::local_thickness(phase, boundary)),
                [&] { return cpu::local_thickness(phase, boundary); });
}

PoreSizeDistribution pore_size_distribution(const Mask& phase, Boundary boundary, const Bins& bins,
                                            Backend backend) {
  const PsdCounts counts =
      run_on(backend, Operation::pore_size_distribution, PF_ON_CUDA(cuda::psd_counts(phase, boundary, bins)),
             [&] { return cpu::psd_counts(phase, boundary, bins); });
  return psd_from_counts(counts, bins);
}

std::unique_ptr<PsdEvaluator> make_psd_evaluator(const Mask& phase, Boundary boundary, const Bins& bins,
                                                 Backend backend) {
  return run_on(backend, Operation::pore_size_distribution, PF_ON_CUDA(cuda::make_psd_evaluator(phase, boundary, bins)),
                [&] { return cpu::make_psd_evaluator(phase, boundary, bins); });
}

Mask morphology(const Mask& image, MorphOp op, const StructuringElement& element, int iterations, Backend backend) {
  validate_morphology(image, element, iterations);
  return run_on(backend, Operation::morphology, PF_ON_CUDA(cuda::morphology(image, op, element, iterations)),
                [&] { return cpu::morphology(image, op, element, iterations); });
}

ComponentLabels label_components(const Mask& phase, Adjacency adjacency, Backend backend) {
  validate_shape(phase.shape());
  const Backend ran = resolve_backend(backend, Operation::connected_components);
  std::vector<uint32_t> roots =
      run_on(ran, Operation::connected_components, PF_ON_CUDA(cuda::component_roots(phase, adjacency)),
             [&] { return cpu::component_roots(phase, adjacency); });
  ComponentLabels c = detail::canonical_components(phase, std::move(roots), ran);
  c.adjacency = adjacency;
  return c;
}

Mask erode(const Mask& image, const StructuringElement& element, int iterations, Backend backend) {
  return morphology(image, MorphOp::erode, element, iterations, backend);
}

Mask dilate(const Mask& image, const StructuringElement& element, int iterations, Backend backend) {
  return morphology(image, MorphOp::dilate, element, iterations, backend);
}

FormationFactorResult formation_factor(const Mask& pore, int axis, const FormationFactorOptions& options,
                                       Backend backend, const ComponentLabels* components6) {
  detail::validate_formation_factor(pore, axis, options);
  detail::validate_components6(pore, components6);
  return run_on(backend, Operation::formation_factor,
                PF_ON_CUDA(cuda::formation_factor(pore, axis, options, components6)),
                [&] { return cpu::formation_factor(pore, axis, options, components6); });
}

PoiseuillePermeabilityResult poiseuille_permeability(const Mask& pore, const Volume<float>& radius, int axis,
                                                     const FormationFactorOptions& options, Backend backend,
                                                     const ComponentLabels* components6) {
  detail::validate_formation_factor(pore, axis, options);
  detail::validate_components6(pore, components6);
  if (radius.shape() != pore.shape())
    throw InputError("poiseuille_permeability: the radius map is " + to_string(radius.shape()) + ", the pore " +
                     to_string(pore.shape()));
  // A pore voxel that conducts nothing would leave its row of the system empty.
  for (int64_t i = 0; i < pore.voxels(); ++i)
    if (pore.data()[i] && !(std::isfinite(radius.data()[i]) && radius.data()[i] > 0))
      throw InputError("poiseuille_permeability: the radius map is not a positive number on every pore voxel");
  const FormationFactorResult r =
      run_on(backend, Operation::formation_factor,
             PF_ON_CUDA(cuda::formation_factor(pore, axis, options, components6, radius.data())),
             [&] { return cpu::formation_factor(pore, axis, options, components6, radius.data()); });
  PoiseuillePermeabilityResult k;
  // The current through the medium over the open box's for a unit conductivity.
  k.permeability = r.pore_conductance / r.open_conductance;
  k.iterations = r.iterations;
  k.relative_residual = r.relative_residual;
  k.converged = r.converged;
  k.backend = r.backend;
  return k;
}

PermeabilityResult permeability(const Mask& pore, int axis, const PermeabilityOptions& options, Backend backend,
                                const ComponentLabels* components6) {
  detail::validate_permeability(pore, axis, options);
  detail::validate_components6(pore, components6);
  return run_on(backend, Operation::permeability, PF_ON_CUDA(cuda::permeability(pore, axis, options, components6)),
                [&] { return cpu::permeability(pore, axis, options, components6); });
}

}  // namespace poreforge
