#pragma once
// The CPU (OpenMP) backend's entry points; the public functions dispatch here.
#include <memory>

#include "poreforge/evaluator.hpp"
#include "poreforge/measures.hpp"
#include "poreforge/morphology.hpp"
#include "poreforge/psd.hpp"
#include "poreforge/volume.hpp"

namespace poreforge::cpu {

Volume<uint32_t> squared_distance_voxels(const Mask& phase, Boundary boundary);
Volume<float> distance_transform(const Mask& phase, Boundary boundary);
Volume<float> local_thickness(const Mask& phase, Boundary boundary);
PsdCounts psd_counts(const Mask& phase, Boundary boundary, const Bins& bins);
Mask morphology(const Mask& image, MorphOp op, const StructuringElement& element, int iterations);
std::unique_ptr<PsdEvaluator> make_psd_evaluator(const Mask& phase, Boundary boundary, const Bins& bins);
/// How many of a CPU evaluator's evaluations ran locally (around the changed voxels), how many
/// from scratch, and how many commits it wrote from a scoring's findings, for tests and
/// benchmarks.
struct EvaluationTally {
  int64_t local = 0, full = 0;
  int64_t recorded = 0;  // commits written from a scoring's findings (its own or a scorer's), not evaluated
};
EvaluationTally evaluation_tally(const PsdEvaluator& evaluator);
/// Per voxel the index of its component's first voxel (detail::kNoRoot outside the phase).
std::vector<uint32_t> component_roots(const Mask& phase, Adjacency adjacency);

}  // namespace poreforge::cpu
