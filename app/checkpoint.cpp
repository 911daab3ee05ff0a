#include "checkpoint.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>

#include "checksum.hpp"
#include "poreforge/error.hpp"
#include "poreforge/io.hpp"

namespace poreforge::app {
namespace {

const char* kKind = "poreforge checkpoint";
constexpr int kHistoryColumnCount = 15;
// Checkpoints written before the Euler, surface and chords terms hold the first 9 columns, those
// before the openings term 12, those before the patterns and local porosity terms 13; the others
// read as 0 there.
constexpr int kEarlierHistoryColumns = 9;
const char* kHistoryColumns[kHistoryColumnCount] = {"evaluations", "stage",    "temperature", "energy",
                                                    "pore_psd",    "solid_psd", "s2",         "accepted",
                                                    "rejected",    "euler",     "surface",    "chords",
                                                    "openings",    "patterns",  "local_porosity"};
// The openings term's target (Targets::opening_euler_density).
const char* kOpeningTarget = "/targets/openings/euler_density";
// The Euler term's pattern occupancies (Targets::euler_occupancy): the voxel, the pairs and
// squares along x, y, z, the cube.
const char* kEulerOccupancy = "/targets/euler/occupancy";
// The patterns term's target: the reference's interface cells' shares by class, then the share
// of its inner cells that are interface cells (Targets::pattern_shares, interface_cell_share).
const char* kPatternTarget = "/targets/patterns/shares";
// The local porosity term's target (Targets::local_porosity_shares).
const char* kLocalPorosityTarget = "/targets/local_porosity/shares";

// The chords term's target under /targets/chords/<axis>/<phase>.
std::string chord_target_name(int axis, int phase) {
  return std::string("/targets/chords/") + "xyz"[axis] + (phase ? "/pore" : "/solid");
}

// The checksums of a checkpoint's parts, by the name an error shows: "/state/volume" for a
// dataset, "@evaluations" for an attribute of the file.
using Sums = std::map<std::string, std::string>;

std::string sums_text(const Sums& sums) {
  std::string out;
  for (const auto& [part, hex] : sums) out += part + " fnv1a64:" + hex + "\n";
  return out;
}

Sums sums_of(const std::string& text, const std::string& path) {
  Sums sums;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto space = line.find(" fnv1a64:");
    if (space == std::string::npos) throw InputError("checkpoint '" + path + "': its checksum list is damaged");
    sums[line.substr(0, space)] = line.substr(space + 9);
  }
  return sums;
}

std::string volume_sum(const Mask& m) {
  const Shape& s = m.shape();
  return Fnv1a().add(double(s.nx)).add(double(s.ny)).add(double(s.nz)).add(m.values()).hex();
}

void write_energy(OutputFile& f, Sums& sums, const std::string& prefix, const anneal::Energy& e) {
  for (const auto& [name, value] : {std::pair<std::string, double>{"total", e.total}, {"pore_psd", e.pore_psd},
                                    {"solid_psd", e.solid_psd}, {"s2", e.s2}, {"euler", e.euler},
                                    {"surface", e.surface}, {"chords", e.chords}, {"openings", e.openings},
                                    {"patterns", e.patterns}, {"local_porosity", e.local_porosity}}) {
    f.set_attribute(prefix + name, value);
    sums["@" + prefix + name] = Fnv1a().add(value).hex();
  }
}

// Reads the file's parts and checks each against its stored checksum (when the file has them).
class Reader {
 public:
  Reader(const std::string& path, std::optional<Sums> sums) : m_path(path), m_sums(std::move(sums)) {}

  double number(const std::string& name) {
    const double v = read_hdf5_attribute(m_path, name);
    verify("@" + name, Fnv1a().add(v).hex());
    return v;
  }
  // A count: a whole number, `least` or more (a NaN here once sent the loop spinning forever).
  int64_t count(const std::string& name, double least = 0) {
    const double v = read_hdf5_attribute(m_path, name);
    if (!std::isfinite(v) || v < least || v != std::floor(v) || v > 9.0e15)
      throw InputError("checkpoint '" + m_path + "': " + name + " must be a whole number, " +
                       std::to_string(int(least)) + " or more (got " + std::to_string(v) + ")");
    verify("@" + name, Fnv1a().add(v).hex());
    return int64_t(v);
  }
  std::string text(const std::string& name) {
    const std::string v = read_hdf5_string_attribute(m_path, name);
    verify("@" + name, Fnv1a().add(v).hex());
    return v;
  }
  std::vector<double> vector(const std::string& name) {
    auto v = read_hdf5_vector(m_path, name);
    verify(name, Fnv1a().add(v).hex());
    return v;
  }
  std::vector<int64_t> vector_int64(const std::string& name) {
    auto v = read_hdf5_vector_int64(m_path, name);
    verify(name, Fnv1a().add(v).hex());
    return v;
  }
  void verify(const std::string& part, const std::string& hex) {
    if (!m_sums) return;
    const auto it = m_sums->find(part);
    if (it == m_sums->end())
      throw InputError("checkpoint '" + m_path + "': " + part + " has no stored checksum (changed or corrupt)");
    if (it->second != hex)
      throw InputError("checkpoint '" + m_path + "': the stored checksum of " + part +
                       " does not match (changed or corrupt)");
  }
  // Checkpoints written before the Euler, surface, chords, openings, patterns and local porosity
  // terms hold none of their energies (the terms were off).
  double number_or_zero(const std::string& name) { return hdf5_has_attribute(m_path, name) ? number(name) : 0.0; }
  anneal::Energy energy(const std::string& prefix) {
    return {number(prefix + "total"),         number(prefix + "pore_psd"),        number(prefix + "solid_psd"),
            number(prefix + "s2"),            number_or_zero(prefix + "euler"), number_or_zero(prefix + "surface"),
            number_or_zero(prefix + "chords"), number_or_zero(prefix + "openings"),
            number_or_zero(prefix + "patterns"), number_or_zero(prefix + "local_porosity")};
  }

 private:
  std::string m_path;
  std::optional<Sums> m_sums;
};

const char* kTargetVectors[7] = {"/targets/psd/pore/edges",   "/targets/psd/pore/fraction",
                                 "/targets/psd/solid/edges",  "/targets/psd/solid/fraction",
                                 "/targets/s2/directional/x", "/targets/s2/directional/y",
                                 "/targets/s2/directional/z"};

}  // namespace

void write_checkpoint(const std::string& path, const Checkpoint& c, const std::string& command_line) {
  OutputFile f(path, true);
  Sums sums;
  const auto& s = c.snapshot;
  const auto& p = s.progress;
  auto number = [&](const std::string& name, double value) {
    f.set_attribute(name, value);
    sums["@" + name] = Fnv1a().add(value).hex();
  };
  auto text = [&](const std::string& name, const std::string& value) {
    f.set_attribute(name, value);
    sums["@" + name] = Fnv1a().add(value).hex();
  };
  auto vector = [&](const std::string& name, const auto& values) {
    f.write_vector(name, values);
    sums[name] = Fnv1a().add(values).hex();
  };
  f.set_attribute("kind", std::string(kKind));
  f.set_attribute("schema", double(kCheckpointSchema));
  text("config", c.config_yaml);
  f.set_provenance(command_line);
  f.write_volume("/state/volume", s.pore);
  sums["/state/volume"] = volume_sum(s.pore);
  vector("/state/solid_voxels", s.solid_voxels);
  vector("/state/pore_voxels", s.pore_voxels);
  vector("/state/stage_energies", s.stage_energies);
  vector("/state/norm", std::vector<double>(s.norm.begin(), s.norm.end()));
  // Integers up to 2^53 are exact in a double attribute.
  number("evaluations", double(p.evaluations));
  number("accepted", double(p.accepted));
  number("rejected", double(p.rejected));
  number("stage", double(p.stage));
  number("temperature", p.temperature);
  number("last_delta", p.last_delta);
  number("stall", double(s.stall));
  text("stopped", anneal::to_string(p.stopped));
  write_energy(f, sums, "energy_", p.energy);
  write_energy(f, sums, "best_", p.best);
  const auto& t = c.targets;
  if (c.run_start) {
    number("start_pore_psd_l1", c.run_start->pore_psd_l1);
    number("start_s2_rms", c.run_start->s2_rms);
  }
  number("target_porosity", t.porosity);
  text("target_spacing", to_string(t.spacing));
  number("target_euler_density", t.euler_density);
  number("target_surface_density", t.surface_density);
  for (int a = 0; a < 3; ++a)
    for (int phase = 0; phase < 2; ++phase) vector(chord_target_name(a, phase), t.chords[a][phase]);
  vector(kOpeningTarget, t.opening_euler_density);
  if (t.euler_occupancy.known) {
    const PatternOccupancy& o = t.euler_occupancy;
    vector(kEulerOccupancy,
           std::vector<double>{o.voxel, o.pair[0], o.pair[1], o.pair[2], o.square[0], o.square[1], o.square[2], o.cube});
  }
  if (!t.pattern_shares.empty()) {
    std::vector<double> shares = t.pattern_shares;
    shares.push_back(t.interface_cell_share);
    vector(kPatternTarget, shares);
  }
  if (!t.local_porosity_shares.empty()) vector(kLocalPorosityTarget, t.local_porosity_shares);
  // The describe-file layout under /targets, read back by Targets::from_descriptor_file.
  const std::vector<double>* target_vectors[7] = {&t.pore_edges, &t.pore_psd, &t.solid_edges, &t.solid_psd,
                                                  &t.s2[0],       &t.s2[1],    &t.s2[2]};
  for (int k = 0; k < 7; ++k) vector(kTargetVectors[k], *target_vectors[k]);
  for (int k = 0; k < kHistoryColumnCount; ++k) {
    std::vector<double> column;
    for (const auto& row : c.history) column.push_back(row[k]);
    vector(std::string("/history/") + kHistoryColumns[k], column);
  }
  f.set_attribute("checksums", sums_text(sums));
  f.commit();
}

Checkpoint read_checkpoint(const std::string& path) {
  std::string kind;
  try {
    kind = read_hdf5_string_attribute(path, "kind");
  } catch (const InputError& e) {
    throw InputError("'" + path + "' is not a poreforge checkpoint (" + e.what() + ")");
  }
  if (kind != kKind) throw InputError("'" + path + "' is not a poreforge checkpoint");
  const double schema = read_hdf5_attribute(path, "schema");
  if (!(schema >= 1 && schema <= kCheckpointSchema && schema == std::floor(schema)))
    throw InputError("'" + path + "' has checkpoint schema " + std::to_string(schema) + "; this poreforge reads 1 to " +
                     std::to_string(kCheckpointSchema));
  // Schema 1 predates the checksums and is read as it stands; from schema 2 every part is checked.
  std::optional<Sums> sums;
  if (schema >= 2) {
    if (!hdf5_has_attribute(path, "checksums"))
      throw InputError("checkpoint '" + path + "': its checksums are missing (changed or corrupt)");
    sums = sums_of(read_hdf5_string_attribute(path, "checksums"), path);
  }
  Reader in(path, sums);
  Checkpoint c;
  c.schema = int(schema);
  c.config_yaml = in.text("config");
  auto& s = c.snapshot;
  const LabelImage volume = read_hdf5(path, "/state/volume");
  s.pore = phase_mask(volume, 1);
  in.verify("/state/volume", volume_sum(s.pore));
  s.solid_voxels = in.vector_int64("/state/solid_voxels");
  s.pore_voxels = in.vector_int64("/state/pore_voxels");
  s.stage_energies = in.vector("/state/stage_energies");
  const auto norm = in.vector("/state/norm");
  // 3: from before the count and chords terms; 6: before the openings term; 7: before the
  // patterns and local porosity terms.
  if (norm.size() != 3 && norm.size() != 6 && norm.size() != 7 && norm.size() != s.norm.size())
    throw InputError("'" + path + "': /state/norm must hold " + std::to_string(s.norm.size()) + " values");
  s.norm.fill(1.0);
  std::copy(norm.begin(), norm.end(), s.norm.begin());
  auto& p = s.progress;
  p.evaluations = in.count("evaluations");
  p.accepted = in.count("accepted");
  p.rejected = in.count("rejected");
  p.stage = in.count("stage");
  p.temperature = in.number("temperature");
  if (!std::isfinite(p.temperature) || p.temperature < 0)
    throw InputError("checkpoint '" + path + "': temperature must be a finite number, 0 or more");
  p.last_delta = in.number("last_delta");
  s.stall = in.count("stall", -1);  // -1: a new best in the current stage
  const std::string stopped = in.text("stopped");
  for (auto r : {anneal::StopReason::none, anneal::StopReason::max_evaluations, anneal::StopReason::energy_tolerance,
                 anneal::StopReason::no_improvement, anneal::StopReason::time_limit})
    if (anneal::to_string(r) == stopped) p.stopped = r;
  p.energy = in.energy("energy_");
  p.best = in.energy("best_");
  for (const char* name : kTargetVectors) in.vector(name);
  in.number("target_porosity");
  in.text("target_spacing");
  c.targets = anneal::Targets::from_descriptor_file(path, "/targets", "target_porosity", "target_spacing");
  if (hdf5_has_attribute(path, "target_euler_density"))  // from schema 3
    c.targets.euler_density = in.number("target_euler_density");
  // Schema 3's surface target counted faces (/targets/face_area_density): it stays unknown, and
  // a run that weighs the surface does not resume (resume_run says why).
  if (schema >= 4) c.targets.surface_density = in.number("target_surface_density");
  if (hdf5_has_object(path, chord_target_name(0, 0)))
    for (int a = 0; a < 3; ++a)
      for (int phase = 0; phase < 2; ++phase) c.targets.chords[a][phase] = in.vector(chord_target_name(a, phase));
  if (hdf5_has_object(path, kOpeningTarget)) c.targets.opening_euler_density = in.vector(kOpeningTarget);
  // Checkpoints from before the occupancies ran with the density's target, and resume with it.
  if (hdf5_has_object(path, kEulerOccupancy)) {
    const std::vector<double> o = in.vector(kEulerOccupancy);
    if (o.size() != 8) throw InputError("'" + path + "': " + kEulerOccupancy + " must hold 8 values");
    PatternOccupancy& t = c.targets.euler_occupancy;
    t.voxel = o[0];
    for (std::size_t a = 0; a < 3; ++a) {
      t.pair[a] = o[1 + a];
      t.square[a] = o[4 + a];
    }
    t.cube = o[7];
    t.known = true;
  }
  if (hdf5_has_object(path, kPatternTarget)) {
    std::vector<double> shares = in.vector(kPatternTarget);
    if (shares.size() != std::size_t(kInterfacePatterns) + 1)
      throw InputError("'" + path + "': " + kPatternTarget + " must hold " + std::to_string(kInterfacePatterns + 1) +
                       " values");
    c.targets.interface_cell_share = shares.back();
    shares.pop_back();
    c.targets.pattern_shares = shares;
  }
  if (hdf5_has_object(path, kLocalPorosityTarget)) {
    c.targets.local_porosity_shares = in.vector(kLocalPorosityTarget);
    if (schema < 9 && c.targets.local_porosity_shares.size() != std::size_t(kLocalPorosityBins))
      c.targets.local_porosity_shares.clear();  // counted over other cells: aims at nothing now
    else if (c.targets.local_porosity_shares.size() != std::size_t(kLocalPorosityBins))
      throw InputError("'" + path + "': " + kLocalPorosityTarget + " must hold " + std::to_string(kLocalPorosityBins) +
                       " values");
  }
  // A run with chords weighted ran on the grid they were counted on: the stored one.
  c.targets.chord_spacing = c.targets.spacing;
  if (hdf5_has_attribute(path, "start_pore_psd_l1"))
    c.run_start = anneal::Quality{in.number("start_pore_psd_l1"), in.number("start_s2_rms")};
  std::array<std::vector<double>, kHistoryColumnCount> columns;
  for (int k = 0; k < kHistoryColumnCount; ++k) {
    const std::string name = std::string("/history/") + kHistoryColumns[k];
    if (k < kEarlierHistoryColumns || hdf5_has_object(path, name)) columns[k] = in.vector(name);
    else columns[k].assign(columns[0].size(), 0.0);
  }
  for (std::size_t r = 0; r < columns[0].size(); ++r) {
    HistoryRow row;
    for (int k = 0; k < kHistoryColumnCount; ++k) {
      if (columns[k].size() != columns[0].size()) throw InputError("'" + path + "': history columns differ in length");
      row[k] = columns[k][r];
    }
    c.history.push_back(row);
  }
  return c;
}

}  // namespace poreforge::app
