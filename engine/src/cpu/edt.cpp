#include <omp.h>

#include "cpu_backend.hpp"
#include "distance.hpp"

namespace poreforge::cpu {

Volume<uint32_t> squared_distance_voxels(const Mask& phase, Boundary boundary) {
  validate_shape(phase.shape());
  return Volume<uint32_t>(phase.shape(), phase.spacing(),
                          squared_distance(phase, boundary, detail::VoxelMetric{}));
}

Volume<float> distance_transform(const Mask& phase, Boundary boundary) {
  validate_shape(phase.shape());
  validate_spacing(phase.spacing());
  Volume<float> out(phase.shape(), phase.spacing(), 0.0f);
  auto fill = [&](const auto& m) {
    const auto d2 = squared_distance(phase, boundary, m);
    const int64_t n = phase.voxels();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) out[i] = d2[i] == 0 ? 0.0f : m.radius(d2[i]);
  };
  if (phase.spacing().isotropic())
    fill(voxel_metric(phase.spacing()));
  else
    fill(physical_metric(phase.spacing()));
  return out;
}

}  // namespace poreforge::cpu
