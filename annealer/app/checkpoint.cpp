#include "checkpoint.hpp"

#include "poreforge/error.hpp"
#include "poreforge/io.hpp"

namespace poreforge::app {
namespace {

const char* kKind = "poreforge checkpoint";
const char* kHistoryColumns[9] = {"evaluations", "stage", "temperature", "energy", "pore_psd",
                                  "solid_psd",   "s2",    "accepted",    "rejected"};

void write_energy(OutputFile& f, const std::string& prefix, const anneal::Energy& e) {
  f.set_attribute(prefix + "total", e.total);
  f.set_attribute(prefix + "pore_psd", e.pore_psd);
  f.set_attribute(prefix + "solid_psd", e.solid_psd);
  f.set_attribute(prefix + "s2", e.s2);
}

anneal::Energy read_energy(const std::string& path, const std::string& prefix) {
  return {read_hdf5_attribute(path, prefix + "total"), read_hdf5_attribute(path, prefix + "pore_psd"),
          read_hdf5_attribute(path, prefix + "solid_psd"), read_hdf5_attribute(path, prefix + "s2")};
}

}  // namespace

void write_checkpoint(const std::string& path, const Checkpoint& c, const std::string& command_line) {
  OutputFile f(path, true);
  const auto& s = c.snapshot;
  const auto& p = s.progress;
  f.set_attribute("kind", std::string(kKind));
  f.set_attribute("schema", double(kCheckpointSchema));
  f.set_attribute("config", c.config_yaml);
  f.set_provenance(command_line);
  f.write_volume("/state/volume", s.pore);
  f.write_vector("/state/solid_voxels", s.solid_voxels);
  f.write_vector("/state/pore_voxels", s.pore_voxels);
  f.write_vector("/state/stage_energies", s.stage_energies);
  f.write_vector("/state/norm", std::vector<double>(s.norm.begin(), s.norm.end()));
  // Integers up to 2^53 are exact in a double attribute.
  f.set_attribute("evaluations", double(p.evaluations));
  f.set_attribute("accepted", double(p.accepted));
  f.set_attribute("rejected", double(p.rejected));
  f.set_attribute("stage", double(p.stage));
  f.set_attribute("temperature", p.temperature);
  f.set_attribute("last_delta", p.last_delta);
  f.set_attribute("stall", double(s.stall));
  f.set_attribute("stopped", anneal::to_string(p.stopped));
  write_energy(f, "energy_", p.energy);
  write_energy(f, "best_", p.best);
  const auto& t = c.targets;
  if (c.run_start) {
    f.set_attribute("start_pore_psd_l1", c.run_start->pore_psd_l1);
    f.set_attribute("start_s2_rms", c.run_start->s2_rms);
  }
  f.set_attribute("target_porosity", t.porosity);
  f.set_attribute("target_spacing", to_string(t.spacing));
  // The describe-file layout under /targets, read back by Targets::from_descriptor_file.
  f.write_vector("/targets/psd/pore/edges", t.pore_edges);
  f.write_vector("/targets/psd/pore/fraction", t.pore_psd);
  f.write_vector("/targets/psd/solid/edges", t.solid_edges);
  f.write_vector("/targets/psd/solid/fraction", t.solid_psd);
  f.write_vector("/targets/s2/directional/x", t.s2[0]);
  f.write_vector("/targets/s2/directional/y", t.s2[1]);
  f.write_vector("/targets/s2/directional/z", t.s2[2]);
  for (int k = 0; k < 9; ++k) {
    std::vector<double> column;
    for (const auto& row : c.history) column.push_back(row[k]);
    f.write_vector(std::string("/history/") + kHistoryColumns[k], column);
  }
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
  if (schema != kCheckpointSchema)
    throw InputError("'" + path + "' has checkpoint schema " + std::to_string(int(schema)) + "; this poreforge reads " +
                     std::to_string(kCheckpointSchema));
  Checkpoint c;
  c.config_yaml = read_hdf5_string_attribute(path, "config");
  auto& s = c.snapshot;
  const LabelImage volume = read_hdf5(path, "/state/volume");
  s.pore = phase_mask(volume, 1);
  s.solid_voxels = read_hdf5_vector_int64(path, "/state/solid_voxels");
  s.pore_voxels = read_hdf5_vector_int64(path, "/state/pore_voxels");
  s.stage_energies = read_hdf5_vector(path, "/state/stage_energies");
  const auto norm = read_hdf5_vector(path, "/state/norm");
  if (norm.size() != 3) throw InputError("'" + path + "': /state/norm must hold 3 values");
  s.norm = {norm[0], norm[1], norm[2]};
  auto& p = s.progress;
  p.evaluations = int64_t(read_hdf5_attribute(path, "evaluations"));
  p.accepted = int64_t(read_hdf5_attribute(path, "accepted"));
  p.rejected = int64_t(read_hdf5_attribute(path, "rejected"));
  p.stage = int64_t(read_hdf5_attribute(path, "stage"));
  p.temperature = read_hdf5_attribute(path, "temperature");
  p.last_delta = read_hdf5_attribute(path, "last_delta");
  s.stall = int64_t(read_hdf5_attribute(path, "stall"));
  p.energy = read_energy(path, "energy_");
  p.best = read_energy(path, "best_");
  c.targets = anneal::Targets::from_descriptor_file(path, "/targets", "target_porosity", "target_spacing");
  if (hdf5_has_attribute(path, "start_pore_psd_l1"))
    c.run_start = anneal::Quality{read_hdf5_attribute(path, "start_pore_psd_l1"), read_hdf5_attribute(path, "start_s2_rms")};
  std::array<std::vector<double>, 9> columns;
  for (int k = 0; k < 9; ++k) columns[k] = read_hdf5_vector(path, std::string("/history/") + kHistoryColumns[k]);
  for (std::size_t r = 0; r < columns[0].size(); ++r) {
    HistoryRow row;
    for (int k = 0; k < 9; ++k) {
      if (columns[k].size() != columns[0].size()) throw InputError("'" + path + "': history columns differ in length");
      row[k] = columns[k][r];
    }
    c.history.push_back(row);
  }
  return c;
}

}  // namespace poreforge::app
