#pragma once
/// Starting structures shaped by the targets. Single swaps shrink and reshape pores but do not
/// grow one past the start's largest (a larger inscribed ball needs many coordinated swaps, each
/// uphill alone), so what the start holds at the large end of the pore-size distribution is
/// what the reconstruction can keep. Two levers: the blob size (a blobs start whose PSD is
/// nearest the target's), and balls planted for the pore volume the blobs lack in each bin.
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "poreforge/annealer/annealer.hpp"

namespace poreforge::anneal {

/// What connect_largest_cluster did.
struct ConnectedStart {
  double largest_share_before = 0, largest_share_after = 0;  ///< of the pore, 6-connected in the box
  int64_t clusters_dropped = 0;  ///< other clusters made solid
  int64_t clusters_placed = 0;   ///< the reference's small clusters placed instead
  int64_t clusters_touching = 0; ///< of those, placed touching the largest at an edge or a corner
  int64_t clusters_as_sampled = 0; ///< of those, placed in the shape the sample holds them in
  int64_t voxels_peeled = 0;     ///< pore voxels the largest cluster gave up for the placed clusters
  int64_t voxels_grown = 0;      ///< solid voxels the largest cluster took
};

/// One of a real sample's clusters as it lies in its box: the voxels of its bounding box it
/// holds, and the box's faces it meets (a cluster the box cut).
struct ClusterShape {
  std::array<int64_t, 3> extent{};  ///< its bounding box
  std::vector<int64_t> voxels;      ///< indices in the bounding box, x fastest
  unsigned faces = 0;               ///< as ComponentLabels::faces: bit 2a the low face along axis a, 2a + 1 the high
};

/// How a real sample's pore falls into 6-connected clusters in a box of the domain's size:
/// the largest's share of the pore, and the others — their mean number, their sizes and shapes —
/// and how many of them touch another cluster at an edge or a corner only (a 26-connected count
/// has that many clusters fewer).
/// Without sizes (a descriptor file's share alone) a start keeps the blobs' own small clusters.
struct ClusterSample {
  double largest_share = 0;
  double others = 0;
  double touching = 0;  ///< the 6-connected count less the 26-connected one
  std::vector<int64_t> other_sizes;
  /// Per other_sizes: 1 where that cluster joins another at edges or corners alone — every
  /// cluster of a 26-connected one but the largest there (as many as `touching`). Empty: the
  /// touching ones are spread evenly over the sizes.
  std::vector<uint8_t> other_touching;
  /// other_sizes' clusters as they lie, on the reference's grid; empty where the domain's grid
  /// is another (connect_largest_cluster then grows each compact).
  std::vector<ClusterShape> other_shapes;
};

/// The clusters of `count` sub-volumes of shape `sub` of `reference` (pore = 1), drawn from
/// `seed` as `compare` draws its real sub-volumes: the mean largest share, the mean number of
/// other clusters and of those touching at edges or corners, their sizes, shapes and whether
/// each touches pooled (a shape's faces: those of its sub-volume it meets). A `sub` larger
/// than the reference: the whole reference, its numbers of clusters scaled to `sub`'s voxels.
ClusterSample sample_clusters(const Mask& reference, Shape sub, int count, uint64_t seed,
                              Backend backend = Backend::cpu);

/// A porosity-matched blobs start and how near its pore PSD is to the target's.
struct BlobCandidate {
  double blobiness = 0, sigma = 0;  ///< sigma: the Gaussian's width in voxels
  double pore_psd_l1 = 0;           ///< L1 distance to the target pore PSD of the start returned
  double blobs_psd_l1 = 0;          ///< the same for the blobs alone (before any planting)
  int planted_balls = 0;
  int64_t planted_voxels = 0;       ///< voxels inside planted balls (pore in the start)
  ConnectedStart connected;         ///< when the start's largest cluster was grown
  double radius = 0;                ///< a grains start: the spheres' (mean) radius in voxels (blobs: 0)
  double radius_spread = 0;         ///< a grains start: the radii's coefficient of variation
  std::array<double, 3> stretch{1.0, 1.0, 1.0};  ///< a grains start: the spheres' stretch along x, y, z
  double s2_rms = 0;                ///< choose_blob_start with S2 weighted: the start's S2 RMS error
  double chords_l1 = 0;             ///< choose_blob_start with chords weighted: the start's chords_l1
  double score = 0;                 ///< what choose_blob_start ranks by (lower is nearer)
};

/// A ball planted into a start: centre in voxels (inside the volume), radius in physical units,
/// and how many of its voxels lie inside the volume.
struct PlantedBall {
  std::array<int64_t, 3> centre{};
  double radius = 0;
  int64_t inside = 0;
};

/// Balls for the pore volume a start lacks in the target's PSD bins above the first
/// (`start_fraction`: the start's PSD on the target's bins), bin by bin from the top down: bin b
/// misses D = (target_b − kept·start_b)·pore_voxels voxels, where `kept` is the share of the
/// start's own pore voxels left once the balls take theirs (the plan is made three times to
/// settle it). It gets whole balls of the bin's mid radius while D is at least a ball, then one
/// more ball when that brings the bin nearer D than none does. Under the `open` boundary that
/// last ball may sit in a corner of the volume, its centre 0…R voxels from the three faces, so
/// that the part inside matches D — how a finite sample's own largest pores show (cut by its
/// faces) and what a periodic volume cannot hold. Balls are not checked for overlap; planting
/// stops before the balls alone would exceed `pore_voxels`. Positions come from `seed`.
std::vector<PlantedBall> plan_large_pores(const std::vector<double>& start_fraction, const Targets& targets,
                                          Shape shape, Spacing spacing, Boundary boundary, int64_t pore_voxels,
                                          uint64_t seed);

/// A blobs start with exactly the target's pore count (round(porosity·N)) on `spacing`: the
/// lowest values of blob_field(shape, blobiness, seed); with `plant_large_pores`, the balls of
/// plan_large_pores are pore and the blob field's lowest values fill the rest of the count.
/// With `clusters` the result goes through connect_largest_cluster with the blob field. The
/// PSDs are measured with the engine on `backend`; `report` (optional) receives the figures.
Mask make_blob_start(Shape shape, Spacing spacing, const Targets& targets, Boundary boundary, double blobiness,
                     bool plant_large_pores, uint64_t seed, Backend backend = Backend::cpu,
                     BlobCandidate* report = nullptr, const ClusterSample* clusters = nullptr);

/// A start whose pore falls into clusters as a real sample's does (`clusters`): blobs
/// thresholded at a porosity fall apart into many, and swaps that keep the pore connected
/// (Moves::keep_pore_connected) keep whatever the start has. The other clusters are replaced:
/// with sizes in `clusters`, clusters.others sizes are drawn from the sample's (from `seed`;
/// of up to 16 such sets the one whose total comes nearest what the sample's mean share leaves,
/// never past it: a set's largest sizes go while it would), the largest gives up what they take
/// (its voxels where `field` is highest, each where that splits nothing), and they
/// are placed, each in the sample's shape where one is known (at a random corner where it fits,
/// mirrored along random axes; one that fits nowhere is not placed) and else grown compact
/// (nearest first) from a voxel clear of all pore, none touching another or the largest — not
/// even at an edge or a corner (26-connected they would be one) but for those whose sampled
/// cluster joined another so (clusters.other_touching; without it, clusters.touching of them
/// spread over the sizes), which meet the largest at edges or corners and never across a face
/// (the 26-connected count then comes out as the sample's); without sizes, the largest other
/// clusters are made solid until the others fit in 1 − largest_share (the small ones stay).
/// Then the largest grows by the voxels that frees into the solid next to it where `field` is
/// lowest, never touching another cluster — along the field's valleys, so the throats it opens
/// follow the structure. The pore count is kept exactly. Without sizes, a largest cluster that
/// already holds its share is left as it is. `report` (optional) hears the figures.
Mask connect_largest_cluster(const Mask& start, const std::vector<float>& field, const ClusterSample& clusters,
                             uint64_t seed, Backend backend = Backend::cpu, ConnectedStart* report = nullptr);

/// What choose_blob_start ranks by besides the pore PSD's L1 distance: the weights of the S2
/// RMS error and of chords_l1, each error over a porosity-matched white noise's (as the run's
/// energy is measured against a random start's), all relative to the PSD's weight.
struct StartWeights {
  double s2 = 0, chords = 0;
};

/// The blobs start nearest the targets: tries σ = 1, 1.25, 1.25², … voxels up to a quarter of the
/// mean extent — without planting stopping three sizes past the best, with planting every size
/// (its error jumps between sizes); each candidate is a make_blob_start from `seed` (connected
/// with `clusters`); `tried` (optional) hears of each. Ranked by the pore-PSD L1 distance
/// alone, or with `weights` by (L1/L1₀)² + w_s2·(RMS/RMS₀)² + w_chords·(C/C₀)², the ₀ errors a
/// porosity-matched white noise's. With `grains`, make_grain_start's instead, radii 2, 2.5,
/// 3.1, … voxels, the same search for each radius spread of kGrainSpreads (or only
/// `grain_spread` when that is ≥ 0): one size of grain, or sizes as varied as a sandstone's,
/// each stretched by `stretch` (none given: grain_stretch of the targets).
struct BlobStart {
  Mask structure;
  BlobCandidate chosen;
  std::vector<BlobCandidate> tried;
};
inline constexpr double kGrainSpreads[] = {0.0, 0.25, 0.5};
BlobStart choose_blob_start(Shape shape, Spacing spacing, const Targets& targets, Boundary boundary, uint64_t seed,
                            bool plant_large_pores, Backend backend = Backend::cpu,
                            const std::function<void(const BlobCandidate&)>& tried = {},
                            const ClusterSample* clusters = nullptr, StartWeights weights = {}, bool grains = false,
                            double grain_spread = -1,
                            const std::optional<std::array<double, 3>>& stretch = std::nullopt);

/// How much a grains start's spheres are stretched along x, y, z: the target's mean solid chord
/// along each axis, in voxels of `spacing`, over the geometric mean of the three (their product
/// is 1; each clamped to [0.1, 10]). A rock's grains are flattened or aligned as it was laid
/// down and compacted, and its solid chords say by how much; the throats between such grains
/// pass flow more easily along their long axes, which the reference's formation factors show
/// and spheres do not give, whatever the annealing then matches. {1, 1, 1} when the targets
/// hold no chord lengths.
std::array<double, 3> grain_stretch(const Targets& targets, const Spacing& spacing);

/// The field of a grains start: overlapping solid spheres of `radius` voxels (log-normal of
/// that mean and coefficient of variation `radius_spread`), stretched by `stretch`, at
/// `porosity` (generate_spheres, from `seed`) as the signed distance to their surface — minus the distance
/// to the solid in the pore, the distance to the pore in the solid — plus a jitter below 10⁻³
/// voxel from the seed, so that its lowest values are the pack's pore and a count cuts it
/// without ties. Sandstone is grains: the pore is the space between them, angular pores with
/// sheet-like throats, which blobs' rounded bodies and tubular necks are not.
std::vector<float> grain_field(Shape shape, double radius, double porosity, uint64_t seed,
                               Backend backend = Backend::cpu, double radius_spread = 0,
                               const std::array<double, 3>& stretch = {1.0, 1.0, 1.0});

/// A grains start: the lowest values of grain_field, its grains stretched by `stretch` (none
/// given: grain_stretch of the targets), exactly the target's pore count, connected with
/// `clusters` as make_blob_start's (no planting).
Mask make_grain_start(Shape shape, Spacing spacing, const Targets& targets, Boundary boundary, double radius,
                      uint64_t seed, Backend backend = Backend::cpu, BlobCandidate* report = nullptr,
                      const ClusterSample* clusters = nullptr, double radius_spread = 0,
                      const std::optional<std::array<double, 3>>& stretch = std::nullopt);

/// A start from an existing structure (pore = 1), e.g. a coarser reconstruction of the same
/// region: resampled onto `shape` by fractional position (both boxes are the same region, so a
/// 64³ run at spacing 1.72 seeds a 110³ one at spacing 1), trilinear in the pore indicator
/// (edges clamped), and cut at exactly `pore_voxels` pore voxels, the highest interpolated
/// values first (ties by index). On the same shape the structure comes back itself when it has
/// that pore count. Throws InputError when `pore_voxels` is outside [0, voxels].
Mask resample_start(const Mask& structure, Shape shape, Spacing spacing, int64_t pore_voxels);

/// The field a finer level of a reconstruction starts from: `structure` (pore = 1) resampled
/// onto `shape` over the same box as resample_start does, smoothed by a [1 2 1]/4 pass along
/// each axis so that the coarse grid's staircase becomes a slope, negated: its lowest values
/// are the most pore-like, for lowest_values and connect_largest_cluster. `periodic`: the
/// faces wrap (a periodic domain), else they are clamped.
std::vector<float> refine_field(const Mask& structure, Shape shape, bool periodic = false);

/// An image on a grid `factor` times coarser (the targets of a coarser level): each factor³
/// block's pore share, the highest shares made pore up to the blocks' porosity (equal shares
/// told apart by their neighbourhood's), spacing × factor. Voxels past the last whole block
/// are dropped; an axis shorter than `factor` becomes one block of its extent.
Mask coarsen(const Mask& pore, int factor);

/// What plant_into_structure did.
struct RefinedStart {
  Mask structure;
  std::vector<PlantedBall> balls;  ///< in the order planted
  int64_t planted_voxels = 0;      ///< solid voxels the balls made pore (as many pore voxels went solid)
  double pore_psd_l1_before = 0, pore_psd_l1_after = 0;
  int candidates_tried = 0;
};

/// Balls for the large-pore bins an existing structure lacks (an annealed coarser run
/// resampled onto this grid, or a finished run), for when single swaps cannot supply them:
/// growing a pore into the next bin takes a whole shell of voxels, each swap of it uphill
/// alone. Greedy, one ball a round: for every bin in the upper half of the target's range
/// short of its target by at least 0.3 % of the pore volume, a ball of the bin's mid radius is
/// tried centred on each of the structure's 32 largest inscribed-ball centres (growing the
/// pores it has) and, under `open`, at the volume's corners and along its edges at depths
/// 0…R from the faces (where a finite sample's largest pores show, cut by its faces); the
/// candidate kept is the one whose result has the smallest pore-PSD L1 to the target. Each
/// ball is paid for with the structure's thinnest pore voxels outside it (the local
/// thickness before the ball; ties in an order drawn from `seed`), so the pore count stays
/// exact. Stops when no candidate lowers the L1 by 0.002, or after 16 balls. The candidates
/// are scored on the CPU (OpenMP, one at a time per thread), the rest on `backend`: the same
/// start on either; `progress` (optional) hears of each ball kept.
RefinedStart plant_into_structure(const Mask& structure, const Targets& targets, Boundary boundary, uint64_t seed,
                                  Backend backend = Backend::cpu,
                                  const std::function<void(const RefinedStart&)>& progress = {});

}  // namespace poreforge::anneal
