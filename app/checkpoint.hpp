#pragma once
// Run checkpoints: everything `poreforge resume` needs to continue a run bit for bit, in one
// HDF5 file written atomically (temporary file, flush, rename).
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "poreforge/annealer/annealer.hpp"

namespace poreforge::app {

/// 2: every part of the state carries an FNV-1a checksum (schema 1 files, without, still resume).
/// 3: the Euler, surface and chords terms — their energies, normalisers, targets and history
/// columns (read as 0 and off where a file holds none of them).
/// 4: target_surface_density, the surface term's marching-cubes target; a schema-3 file's
/// surface target counted faces, so it resumes only with the surface term off.
/// 5: the openings term — its energies, normaliser, target and history column (read as 0 and
/// off where a file holds none of them).
/// 6: /targets/euler/occupancy, the Euler term's target for the domain's box (a file without it
/// resumes with the reference's χ per volume, the target it ran with).
/// 7: the interface patterns and local porosity terms — their energies, normalisers, targets
/// (/targets/patterns, /targets/local_porosity) and history columns (read as 0 and off where a
/// file holds none of them).
/// 8: the local porosity term counts every voxel (neighbours beyond a face the nearest inside)
/// and the 3×3 squares through it too (kLocalPorosityBins); a 7's target of the cubes inside the
/// box alone is dropped, and a run that weighs the term cannot resume from it.
/// 9: the local porosity term counts the 5×5 squares through every voxel too; an 8's target
/// (without them) is dropped, and a run that weighs the term cannot resume from it.
constexpr int kCheckpointSchema = 9;

/// One row of energy.csv: evaluations, stage, temperature, energy, pore_psd, solid_psd, s2,
/// accepted, rejected, euler, surface, chords, openings, patterns, local_porosity.
using HistoryRow = std::array<double, 15>;

struct Checkpoint {
  int schema = kCheckpointSchema;  ///< the file's (read_checkpoint)
  std::string config_yaml;  ///< the resolved run configuration
  anneal::Targets targets;
  anneal::Snapshot snapshot;
  std::vector<HistoryRow> history;
  /// The quality of the run's first structure, so that a resumed run still reports how far
  /// it came from its start (absent in checkpoints written before it was kept).
  std::optional<anneal::Quality> run_start;
};

void write_checkpoint(const std::string& path, const Checkpoint& checkpoint, const std::string& command_line);
/// Throws InputError for a missing, truncated or foreign file, a newer schema, a part whose
/// checksum does not match, or a count that is negative or not a number.
Checkpoint read_checkpoint(const std::string& path);

}  // namespace poreforge::app
