#pragma once
/// Is a structure rock? The realism measures of one structure gathered into a profile, and a
/// profile judged against the natural envelope: the same measures on real sub-volumes of a
/// reference image of the structure's shape (DESIGN §1, "Natural envelope").
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "poreforge/backend.hpp"
#include "poreforge/memory.hpp"
#include "poreforge/psd.hpp"
#include "poreforge/volume.hpp"

namespace poreforge {

/// One number of a profile (porosity, a formation factor, a cluster share, …). Infinite
/// values are meaningful (a formation factor where nothing spans).
struct ScalarMeasure {
  std::string name;         ///< e.g. "formation_factor_x"
  std::string unit;         ///< "1", "1/voxel", "mD", "voxels", …
  double value = 0;
};

/// One curve of a profile (the pore PSD, S2 along x, a chord-length distribution, …) on
/// abscissae shared by every profile compared with it.
struct CurveMeasure {
  enum class Distance { l1, rms };  ///< how two curves of this kind are compared
  std::string name;                 ///< e.g. "chords_pore_x"
  std::string x_unit;               ///< unit of the abscissae
  Distance distance = Distance::rms;
  std::vector<double> x, y;
};

struct RealismProfile {
  std::vector<ScalarMeasure> scalars;
  std::vector<CurveMeasure> curves;
  /// What the caller should tell the user about the figures: a permeability that did not
  /// settle within its step cap (its value then is the last one, as far off as it says).
  std::vector<std::string> warnings;
  /// Wall seconds of each stage ("structure", "thickness", "formation_factor",
  /// "permeability", "psd", "s2", "openings", "patterns": the interface patterns and the local
  /// porosity), in the order run: where a comparison's time goes.
  std::vector<std::pair<std::string, double>> seconds;
};

/// What to measure and how.
struct RealismOptions {
  Backend backend = Backend::automatic;
  Bins psd_bins = Bins::linear(0, 1, 1);  ///< shared by every profile of a comparison
  bool permeability = false;  ///< the costly one (39 flows in a comparison): off unless asked
  /// The permeability's steady-state tolerance (PermeabilityOptions::tolerance): 10⁻³, the
  /// mean velocity's estimated distance from steady, relative. The estimate reads low early in
  /// a run, so k may sit somewhat further off, still far inside the spread of real sub-volumes
  /// (docs/performance.md); each decade tighter costs about ln 10 relaxation times a flow.
  double permeability_tolerance = 1e-3;
  /// The formation factor's tolerance (FormationFactorOptions::tolerance, a relative
  /// residual): F far closer than its spread needs, in fewer conjugate-gradient iterations
  /// than the solver's own default.
  double formation_factor_tolerance = 1e-6;
  /// The flows' relaxation time (PermeabilityOptions::tau), above that default's 0.55. To a
  /// tolerance of 10⁻⁴ or looser most steps go to the viscous approach across the pores,
  /// which a higher viscosity shortens; to 10⁻⁶, to the slow spreading of the pressure through
  /// the sample, which it lengthens (docs/performance.md).
  double permeability_tau = 0.58;
  /// Metres per unit of the spacing (1e-6 for a spacing in µm), for the permeability in
  /// millidarcy; 0 when unknown: the permeability is then in squared spacing units.
  double unit_metres = 0;
  /// The spacing's unit as the measures' units name it ("micrometre": 1/micrometre, …);
  /// empty: "unit".
  std::string length_unit;
  int64_t speck_voxels = 10;  ///< clusters this small or smaller are specks
};

/// How one scalar of the candidate sits among the real sub-volumes' values.
struct ScalarComparison {
  std::string name, unit;
  double value = 0;                        ///< the candidate's
  double mean = 0, sd = 0, min = 0, max = 0;  ///< over the real sub-volumes (finite values for mean and sd)
  double z = 0;                            ///< (value − mean) / sd; 0 when both are equal, ±inf when sd = 0
  bool inside = false;                     ///< min ≤ value ≤ max
  std::vector<double> real;                ///< each real sub-volume's value
};

/// How one curve of the candidate sits among the real ones: its distance to the real mean
/// curve beside each real sub-volume's leave-one-out distance (to the mean of the others).
struct CurveComparison {
  std::string name, x_unit;
  CurveMeasure::Distance distance_kind = CurveMeasure::Distance::rms;
  std::vector<double> x, value, mean, min, max;  ///< the candidate's curve and the real band
  double distance = 0;                           ///< candidate to the real mean
  std::vector<double> real_distances;            ///< each real sub-volume to the mean of the others
  bool inside = false;                           ///< distance ≤ the largest real leave-one-out distance
};

struct EnvelopeComparison {
  std::vector<ScalarComparison> scalars;
  std::vector<CurveComparison> curves;
  int outside = 0;   ///< measures (scalars and curves) of the candidate outside the real range
  int measures = 0;  ///< measures compared
  /// For each real sub-volume: on how many measures it falls outside the range of the others
  /// (leave one out) — what "typical" means for a real sample.
  std::vector<int> real_outside;
  double typical_real_outside = 0;  ///< the median of real_outside
};

/// The profile of one structure (pore = 1): porosity, specific surface, Euler characteristic
/// density, χ(r) of the openings, connected components (6 and 26), spanning and speck shares,
/// formation factors and, if asked, permeabilities along x, y, z, chord lengths and lineal
/// paths of both phases, directional S2, the pore PSD on `options.psd_bins`, the shares of the
/// interface's 2×2×2 patterns (interface_pattern) over the cells inside the box and of the
/// voxels' local porosity bins (local_porosity_bin, local_porosity_square_bin,
/// local_porosity_wide_square_bin). Boundary:
/// open (the sample ends at its faces), as for measured images.
RealismProfile realism_profile(const Mask& pore, const RealismOptions& options);

/// The profiles of several structures (each as realism_profile), in order, `jobs` of them
/// measured at once (threads; each OpenMP loop of a job on its share of the cores). `done(k)`
/// is called as profile k is finished, one call at a time. The first error of any job is
/// rethrown once the running jobs have finished.
std::vector<RealismProfile> realism_profiles(const std::vector<const Mask*>& volumes, const RealismOptions& options,
                                             int jobs = 1, const std::function<void(std::size_t)>& done = {});

/// How many profiles of `volumes` structures to measure at once when one needs `each`: on
/// CUDA up to 4 (one volume's host stages and its solves' launch gaps leave the GPU idle,
/// which the others fill), as far as the free host and device memory allow; on the CPU 1
/// (every stage there already runs on all the cores).
int realism_jobs(Backend backend, const MemoryEstimate& each, std::size_t volumes);

/// The candidate against the real profiles (at least two; each with the same measures).
/// Throws InputError when they do not match.
EnvelopeComparison compare_with_envelope(const RealismProfile& candidate, const std::vector<RealismProfile>& real);

/// `count` corners of sub-volumes of shape `sub` inside a volume of shape `whole`, drawn
/// uniformly from the seed (the same on every machine). Throws InputError when `sub` does not
/// fit inside `whole`.
std::vector<Shape> subvolume_corners(const Shape& whole, const Shape& sub, int count, uint64_t seed);

/// The pore-PSD bins volumes compared with each other share: `bins` equal bins from one voxel
/// (the smallest spacing) to the largest inscribed radius of any of them (the largest local
/// thickness is the largest distance), at least two voxels. Throws InputError when bins < 1.
Bins shared_psd_bins(const std::vector<const Mask*>& volumes, int bins, Backend backend);

/// What a comparison with a reference decides before anything is measured: the real
/// sub-volumes of the candidate's shape (`count` of them drawn from `seed`; the reference
/// alone when it has that shape, and then nothing can be judged: one volume has no range) and
/// the pore-PSD bins every volume shares, `bins` equal bins from one voxel to the largest
/// inscribed radius of any of them. Both masks pore = 1 at the reference's spacing.
struct EnvelopePlan {
  std::vector<Shape> corners;  ///< of each real sub-volume in the reference
  std::vector<Mask> real;      ///< the sub-volumes themselves
  Bins psd_bins = Bins::linear(0, 1, 1);
  double largest_pore_fraction = 0;  ///< over the candidate and the sub-volumes (for memory estimates)
  bool whole_reference = false;      ///< the reference has the candidate's shape
};
/// Throws InputError when the candidate does not fit inside the reference or a sub-volume
/// holds only one phase.
EnvelopePlan plan_envelope(const Mask& candidate, const Mask& reference, int count, uint64_t seed, int bins,
                           Backend backend);

/// The sub-volume of `volume` of shape `sub` whose lowest corner is `corner` (a Shape used as
/// an x, y, z offset), with the volume's spacing.
Mask crop(const Mask& volume, const Shape& corner, const Shape& sub);

}  // namespace poreforge
