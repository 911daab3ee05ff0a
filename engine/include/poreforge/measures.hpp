#pragma once
/// Structural realism measures (DESIGN §1 "Realism measures"): Euler characteristic from the
/// 2×2×2 configuration histogram, χ of openings, specific surface, connected components and
/// their statistics, chord lengths and the lineal path. `poreforge compare` reports them.
///
/// Every count is an exact integer; shares and densities are ratios of those counts. "Voxel
/// units" means lengths in voxels, areas in voxel faces and volumes in voxels; "physical
/// units" uses the mask's spacing (equal to voxel units when the spacing is 1).
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "poreforge/backend.hpp"
#include "poreforge/host_device.hpp"
#include "poreforge/volume.hpp"

namespace poreforge {

// ---------------------------------------------------------------------------------------
// Euler characteristic (Ohser–Mücklich): the phase as a union of closed unit cubes, so that
// cubes meeting at a corner or an edge touch (26-connected phase, 6-connected complement).
// χ = V − E + F − C of that cubical complex; each cell is shared out among the lattice
// corners it meets (a corner 1, an edge ½ to each end, a face ¼, a cube ⅛), so χ is a sum
// over corners of a weight that depends only on the 8 voxels around the corner.

/// Histogram of 2×2×2 configurations. Bin c counts the lattice corners (x, y, z),
/// 0 ≤ x ≤ nx etc., whose surrounding voxels form c: bit dx + 2·dy + 4·dz of c is set when
/// voxel (x − 1 + dx, y − 1 + dy, z − 1 + dz) is phase. Voxels outside the box are not phase,
/// so the (nx+1)(ny+1)(nz+1) corners see the phase's whole boundary.
using ConfigurationHistogram = std::array<int64_t, 256>;

/// The histogram of `phase` (1 = phase). O(N), one pass, OpenMP over z. CPU.
ConfigurationHistogram configuration_histogram(const Mask& phase);

/// The histogram of the cells inside the box only: the corners 1 ≤ x < nx etc., whose eight
/// voxels all lie in the box (none when an extent is 1). The annealer's surface term sums the
/// marching-cubes area over these, so that the box's faces add no surface. CPU.
ConfigurationHistogram interior_configuration_histogram(const Mask& phase);

/// 8·χ contributed by one corner of configuration `c` (an integer in [−6, 4]); the weights
/// of a histogram sum to 8·χ.
int euler_weight8(int configuration);

/// χ from a histogram: Σ_c h[c]·euler_weight8(c) / 8 (exact).
int64_t euler_characteristic(const ConfigurationHistogram& histogram);

/// χ of the 26-connected phase (6-connected complement, outside = not phase):
/// components − tunnels + cavities. O(N). CPU.
int64_t euler_characteristic(const Mask& phase);

/// The change of χ when voxel (x, y, z) of `phase` flips (0 ↔ 1), from the 8 configurations
/// that contain it: O(1). Equals χ(after) − χ(before).
int euler_flip_delta(const Mask& phase, int64_t x, int64_t y, int64_t z);

/// The chances that the voxels a cell of the closed-cube complex touches hold any of the
/// phase: a cube cell its voxel, a face its two voxels, an edge its 2×2 square, a corner its
/// 2×2×2 cube. Averaged over every position inside the image's 2×2×2 cells.
struct PatternOccupancy {
  double voxel = 0;               ///< one voxel: the phase's share
  std::array<double, 3> pair{};   ///< two voxels side by side along x, y, z
  std::array<double, 3> square{}; ///< a 2×2 square normal to x, y, z
  double cube = 0;                ///< a 2×2×2 cube
  bool known = false;             ///< false: the image has an extent below 2
};

/// The occupancies of `phase`, from its interior configuration histogram. O(N). CPU.
PatternOccupancy pattern_occupancy(const Mask& phase);

/// The mean χ (outside the box not phase, as euler_characteristic counts it) of a box of
/// shape `box` cut at random from a stationary structure of these occupancies: Σ over the
/// cells of the box's closed-cube complex of ± the chance that the voxels of the box it
/// touches hold the phase (a cell on the box's faces touches fewer of them). A box's faces
/// cut loops, so a small box holds a less negative χ per volume than a large one: this is
/// the χ a real sub-volume of that shape holds on average, as `compare` samples them.
double expected_euler_characteristic(const PatternOccupancy& occupancy, const Shape& box);

/// The 2×2×2 configurations that hold both phases (the interface's cells) fall into 20 classes
/// under the cube's 48 rotations and reflections: a flat wall normal to an axis, an oblique or
/// a diagonal one, a step, a corner of the phase or of its complement, a one-voxel tip, …
/// Their shares hold how the interface bends and turns at the voxel scale, which the surface's
/// area, the chords along the axes and S2 leave free: a wall of one-voxel stairs and a smooth
/// oblique one can hold the same area and chords. Complementing the phase maps a class to
/// another (a convex corner to a concave one).
constexpr int kInterfacePatterns = 20;

/// The class (0 … kInterfacePatterns − 1) of a configuration (bits as in
/// ConfigurationHistogram), −1 for the two uniform ones (0 and 255). Classes are numbered in
/// the order of their smallest member.
int interface_pattern(int configuration);

/// The interface cells' shares by class (summing to 1; all 0 when no cell holds both phases).
std::array<double, kInterfacePatterns> interface_pattern_shares(const ConfigurationHistogram& histogram);

/// The local porosity distribution of the 3×3×3 cells, of the 3×3 squares through their centre
/// normal to x, y and z, and of the 5×5 squares there (Hilfer's local porosity theory at the
/// smallest cells), split by the centre's phase: each voxel, binned by its phase and the pore
/// voxels among its 26 neighbours, and once more for each axis and square by its phase and the
/// pore voxels among its 8 (24) neighbours in the plane normal to that axis; a neighbour beyond a
/// face is the nearest voxel inside, so the faces' voxels count as the others do. A pore voxel
/// with few pore neighbours is a spike of pore into solid, a solid one with many a spike of solid
/// into pore: how ragged an outline is one voxel beyond the 2×2×2 patterns. The squares see what
/// a section shows and the cube averages away: a solid fin one voxel thick is a spur on the
/// sections across it, a solid strand a pinhole in the pore. The 5×5 squares see how a
/// section's outline bends over a few voxels: along a grain's flat or gently curved face an
/// interface voxel's square holds about half pore, at a pore's sharp tip little, in a pore that
/// bulges between knobs more. The uniform bins (a pore voxel among pore only, a solid one among
/// solid only) are not among the bins.
constexpr int kLocalPorosityCubeBins = 52;
constexpr int kLocalPorositySquareBins = 16;      ///< a plane's: pore 0 … 7 pore neighbours, solid 1 … 8
constexpr int kLocalPorosityWideSquareBins = 48;  ///< a plane's 5×5: pore 0 … 23, solid 1 … 24
constexpr int kLocalPorosityWideSquaresAt = kLocalPorosityCubeBins + 3 * kLocalPorositySquareBins;
constexpr int kLocalPorosityBins = kLocalPorosityWideSquaresAt + 3 * kLocalPorosityWideSquareBins;

/// The bin of a voxel of phase `centre` (1 pore) with `around` pore voxels among its 26
/// neighbours: a pore voxel's 0 … 25 in bins 0 … 25, a solid voxel's 1 … 26 in bins 26 … 51;
/// −1 for the uniform two.
PF_HD constexpr int local_porosity_bin(int centre, int around) {
  return centre ? (around < 26 ? around : -1) : (around > 0 ? 25 + around : -1);
}

/// The bin of a voxel of phase `centre` with `around` pore voxels among its 8 neighbours in the
/// plane normal to `axis` (0 x, 1 y, 2 z): after the cube's bins, 16 an axis, a pore voxel's
/// 0 … 7 first, a solid voxel's 1 … 8 next; −1 for the uniform two.
PF_HD constexpr int local_porosity_square_bin(int axis, int centre, int around) {
  return centre ? (around < 8 ? kLocalPorosityCubeBins + kLocalPorositySquareBins * axis + around : -1)
                : (around > 0 ? kLocalPorosityCubeBins + kLocalPorositySquareBins * axis + 7 + around : -1);
}

/// The bin of a voxel of phase `centre` with `around` pore voxels among its 24 neighbours in the
/// 5×5 square normal to `axis`: after the 3×3 squares' bins, 48 an axis, a pore voxel's 0 … 23
/// first, a solid voxel's 1 … 24 next; −1 for the uniform two.
PF_HD constexpr int local_porosity_wide_square_bin(int axis, int centre, int around) {
  return centre ? (around < 24 ? kLocalPorosityWideSquaresAt + kLocalPorosityWideSquareBins * axis + around : -1)
                : (around > 0 ? kLocalPorosityWideSquaresAt + kLocalPorosityWideSquareBins * axis + 23 + around : -1);
}

struct LocalPorosityHistogram {
  std::array<int64_t, kLocalPorosityBins> counts{};  ///< voxels by bin
  int64_t voxels = 0;  ///< the box's voxels, the uniform ones included
};

/// The histogram of `pore` (pore = 1). O(N), OpenMP over z. CPU.
LocalPorosityHistogram local_porosity_histogram(const Mask& pore);

/// Updates `histogram` (of `phase`) for the flip of voxel (x, y, z), which has not been
/// applied to `phase` yet: the 8 configurations containing the voxel move bins. O(1).
void update_histogram_for_flip(ConfigurationHistogram& histogram, const Mask& phase, int64_t x,
                               int64_t y, int64_t z);

/// χ(r): χ of the opening {LT ≥ r} for each r of `radii` (physical units, the units of the
/// local-thickness map `thickness`; voxels with thickness 0 are never in an opening).
/// O(N · radii) time. CPU.
std::vector<int64_t> euler_of_openings(const Volume<float>& thickness, const std::vector<double>& radii);

/// 8·χ of each opening {LT ≥ r} over the box's inner cells only (interior_configuration_histogram):
/// Σ_c h[c]·euler_weight8(c), the Ohser–Mücklich estimate of χ per volume times 8 and the inner
/// cells' volume. The box's faces do not bias it, where χ of the whole box counts each branch
/// they cut: a box of another size holds the same density (the annealer's openings term aims a
/// domain at its reference this way). O(N · radii) time. CPU.
std::vector<int64_t> inner_euler8_of_openings(const Volume<float>& thickness, const std::vector<double>& radii);

// ---------------------------------------------------------------------------------------
// Specific surface. Only the interface between phase and non-phase voxels inside the box
// counts, never the box faces.

struct SurfaceMeasures {
  /// Marching-cubes area, physical units². The estimator: marching cubes on the voxel centres
  /// with the iso-vertices at the edge midpoints, one polygon per cycle of face segments; a
  /// face whose phase corners lie on a diagonal joins them (the phase is 26-connected); each
  /// polygon's area is that of its fan of triangles from its vertex centroid. The 256
  /// per-configuration areas are computed once per spacing. Beyond the faces the volume is
  /// continued by its face voxels (so no surface runs along a face) and the cells straddling
  /// a face count ½ (¼, ⅛ on edges and corners): the surface is clipped to the box. Exact for
  /// planes normal to an axis; on curved surfaces it keeps part of the voxel staircase:
  /// +6.5 % to +7 % on balls of radius 12–24 voxels (tests). The two phases' areas differ
  /// where a face's diagonal corners are ambiguous (the rule favours the phase).
  double area = 0;
  /// Crofton estimate, physical units² (Ohser–Mücklich): S_V = 2 · Σ_d c_d · P_L(d) over the
  /// 13 directions d of a 2×2×2 cell (3 axes, 6 face and 4 space diagonals), P_L(d) the
  /// phase/non-phase transitions between voxels d apart inside the box per voxel of the box
  /// and per length |d|, c_d the share of the sphere's directions nearest ±d (a fixed
  /// quadrature, recomputed for anisotropic spacing). Right on average over orientations
  /// (within 2 % on balls of radius 12–24, tests), not for each plane: 0.92 of a plane normal
  /// to an axis. A surface crossing the box faces loses the pairs cut by them, about |d|₁/n
  /// per direction (0.5 % at 400³). Equal for the two phases. 0 when an axis has extent 1.
  double crofton_area = 0;
  /// Voxel faces between a phase and a non-phase voxel inside the box, by the axis they are
  /// normal to (exact counts).
  std::array<int64_t, 3> faces{};
  /// The same faces as an area, physical units² (faces normal to x count sy·sz, etc.).
  double face_area = 0;
  /// Box volume, physical units³ (voxels · sx·sy·sz).
  double volume = 0;
  /// area / volume, crofton_area / volume and face_area / volume: physical units⁻¹ (voxel⁻¹
  /// at spacing 1).
  double area_per_volume = 0;
  double crofton_per_volume = 0;
  double faces_per_volume = 0;
};

/// The marching-cubes area (physical units²) of one 2×2×2 configuration (bits as in
/// ConfigurationHistogram) in a cell of the given spacing: the per-configuration table of
/// SurfaceMeasures::area, for incremental updates (a voxel flip changes 8 configurations).
double marching_cubes_area(int configuration, const Spacing& spacing = {});

/// Marching-cubes area and face counts of `phase`, with its spacing. O(N), OpenMP over z. CPU.
SurfaceMeasures specific_surface(const Mask& phase);

// ---------------------------------------------------------------------------------------
// Connected components.

/// Which voxels are neighbours: sharing a face (6) or any of a face, an edge or a corner (26).
enum class Adjacency { face6 = 6, full26 = 26 };

/// Labels of the components of the phase. Canonical, so that every backend gives the same
/// numbers: 0 outside the phase, components numbered 1, 2, … in the raster order (x fastest)
/// of their first voxel.
struct ComponentLabels {
  Volume<uint32_t> labels;
  int64_t count = 0;                ///< components
  std::vector<int64_t> sizes;       ///< sizes[k]: voxels of component k + 1
  /// faces[k]: the box faces component k + 1 touches; bit 2a: the low face normal to axis a
  /// (coordinate 0), bit 2a + 1: the high face (coordinate n − 1).
  std::vector<uint8_t> faces;
  Adjacency adjacency = Adjacency::face6;  ///< the neighbours they were labelled with
  Backend backend = Backend::cpu;          ///< the backend that ran
};

/// Whether a component whose `faces` bits (ComponentLabels::faces) these are touches both faces
/// normal to `axis`: it spans the box along it.
inline bool spans_axis(uint8_t faces, int axis) { return ((faces >> (2 * axis)) & 3u) == 3u; }

/// Connected-component labelling. CPU: union-find, each thread on its own z-slab, then the
/// slabs' seams merged. CUDA: union-find on the device (Playne–Hawick style: every voxel
/// unites with its backward neighbours by atomicMin on the roots, then paths are
/// compressed), canonicalised on the host. O(N · neighbours) near-linear; 4 bytes a voxel
/// plus the output. The volume must have fewer than 2³² − 1 voxels. Synchronizes.
ComponentLabels label_components(const Mask& phase, Adjacency adjacency, Backend backend = Backend::automatic);

/// The label of the largest component (the first in raster order among equals); 0 when none.
inline uint32_t largest_component(const ComponentLabels& c) {
  uint32_t best = 0;
  for (std::size_t k = 0; k < c.sizes.size(); ++k)
    if (best == 0 || c.sizes[k] > c.sizes[best - 1]) best = uint32_t(k + 1);
  return best;
}

struct ClusterStatistics {
  int64_t clusters = 0;
  double clusters_per_million = 0;      ///< clusters per 10⁶ voxels of the box
  double largest_share = 0;             ///< largest cluster / phase voxels
  /// Share of the phase in clusters touching both faces normal to x, y, z (an axis of
  /// extent 1 is spanned by every cluster).
  std::array<double, 3> spanning_share{};
  double speck_share = 0;               ///< share of the phase in clusters of ≤ speck_voxels
  int64_t speck_voxels = 10;
};

/// Statistics of labelled components (shares are 0 for an empty phase).
ClusterStatistics cluster_statistics(const ComponentLabels& components, int64_t speck_voxels = 10);

// ---------------------------------------------------------------------------------------
// Chords and the lineal path, along the three axes.

/// Chord lengths of one phase: runs of the phase along each axis that touch neither face
/// (a run cut by the box is not a chord).
struct ChordLengths {
  /// histogram[a][l]: chords of l voxels along axis a (index 0 unused), l ≤ extent.
  std::array<std::vector<int64_t>, 3> histogram;
  std::array<int64_t, 3> count{};
  /// Mean chord length along each axis in voxels, and in physical units (× the spacing along
  /// the axis); 0 when there is no chord.
  std::array<double, 3> mean_voxels{};
  std::array<double, 3> mean{};
};

/// Chords of `phase` (value 1) or, with value = 0, of its complement. O(N). CPU.
ChordLengths chord_lengths(const Mask& phase, uint8_t value = 1);

/// Lineal path L(r) along each axis: the probability that a segment from a voxel to the voxel
/// r further along the axis (r + 1 voxel centres, length r voxels) lies entirely in the
/// phase, over every such segment inside the box (no wrap); r = 0 … extent/2 (floor).
/// L(0) is the phase fraction. Exact counts over counts.
struct LinealPath {
  std::array<std::vector<double>, 3> along;
};

/// L(r) of the voxels equal to `value` (1: the phase, 0: the complement). O(N). CPU.
LinealPath lineal_path(const Mask& phase, uint8_t value = 1);

// ---------------------------------------------------------------------------------------
// Everything at once.

struct MeasureOptions {
  /// Radii (physical units) of the openings {LT ≥ r} whose χ to report; empty: none (and no
  /// local thickness is computed).
  std::vector<double> opening_radii;
  /// Boundary mode of that local thickness.
  Boundary boundary = Boundary::open;
  int64_t speck_voxels = 10;
  /// Keep the 6-connected components in StructureMeasures::components6: the transport
  /// measures read their spanning clusters from them rather than search for them again.
  bool keep_components6 = false;
};

struct StructureMeasures {
  Shape shape;
  Spacing spacing;
  Backend backend = Backend::cpu;  ///< the backend that labelled the components
  int64_t voxels = 0;
  int64_t phase_voxels = 0;
  double porosity = 0;  ///< phase fraction

  ConfigurationHistogram configurations{};
  int64_t euler = 0;             ///< χ (dimensionless)
  double euler_per_voxel = 0;    ///< χ / voxels, voxel⁻¹
  double euler_density = 0;      ///< χ_V: χ / box volume, physical units⁻³
  std::vector<double> opening_radii;       ///< physical units
  std::vector<int64_t> opening_euler;      ///< χ(r) for each opening radius

  SurfaceMeasures surface;

  ClusterStatistics clusters6;   ///< 6-adjacency
  ClusterStatistics clusters26;  ///< 26-adjacency
  /// The 6-connected components themselves, with MeasureOptions::keep_components6.
  std::optional<ComponentLabels> components6;

  ChordLengths chords;             ///< of the phase
  ChordLengths complement_chords;  ///< of the other phase
  LinealPath lineal;               ///< of the phase
  LinealPath complement_lineal;    ///< of the other phase
};

/// Every measure above of `phase` (1 = phase), units as documented on each member. The
/// components (and the local thickness for the openings) run on `backend`; the rest on the
/// CPU. Throws InputError for a bad shape or spacing. Synchronizes.
StructureMeasures measure_structure(const Mask& phase, const MeasureOptions& options = {},
                                    Backend backend = Backend::automatic);

}  // namespace poreforge
