#include "run_config.hpp"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <type_traits>

#include "poreforge/error.hpp"
#include "run_folder.hpp"

namespace poreforge::app {
namespace {

// Reads one mapping level: every key must be known; each value is handed to its reader.
class Section {
 public:
  // `node` absent (not in the document): every key takes its default.
  // `overrides`: the `--set` assignments by dotted key, so that an error in a value one of them
  // gave blames the --set, not a line of the file.
  Section(const YAML::Node& node, bool present, std::string path, const std::string& source,
          const std::map<std::string, std::string>* overrides = nullptr)
      : m_node(node), m_present(present && node.IsDefined() && !node.IsNull()), m_path(std::move(path)), m_source(source),
        m_overrides(overrides) {
    if (m_present && !node.IsMap()) fail(m_path.empty() ? "the document" : m_path, node, "must be a mapping");
    // yaml-cpp keeps both entries of a repeated key and lookups find the first: the second,
    // usually the one meant, would be ignored without a word.
    if (m_present) {
      std::map<std::string, int> lines;
      for (const auto& kv : node) {
        const std::string key = kv.first.as<std::string>();
        const int line = kv.first.Mark().line + 1;
        const auto [it, fresh] = lines.emplace(key, line);
        if (!fresh) fail(dotted(key), kv.first, "appears twice (lines " + std::to_string(it->second) + " and " +
                                                    std::to_string(line) + ")");
      }
    }
  }

  [[noreturn]] void fail(const std::string& key, const YAML::Node& at, const std::string& what) const {
    if (m_overrides)
      for (const auto& [set_key, assignment] : *m_overrides)
        if (key == set_key || key.rfind(set_key + ".", 0) == 0)
          throw InputError("--set " + assignment + ": " + key + " " + what);
    const int line = at ? at.Mark().line + 1 : 0;
    throw InputError(m_source + (line > 0 ? ":" + std::to_string(line) : "") + ": " + key + " " + what);
  }
  std::string dotted(const std::string& key) const { return m_path.empty() ? key : m_path + "." + key; }

  // Calls `read` for `key` when present; records the key as known either way.
  void optional(const std::string& key, const std::function<void(const YAML::Node&, const std::string&)>& read) {
    m_known.insert(key);
    if (!m_present) return;
    const YAML::Node v = lookup(key);
    if (v.IsDefined()) read(v, dotted(key));
  }
  Section child(const std::string& key) {
    m_known.insert(key);
    return m_present ? Section(lookup(key), true, dotted(key), m_source, m_overrides)
                     : Section(m_node, false, dotted(key), m_source, m_overrides);
  }
  // Refuses keys no reader asked for.
  void finish() const {
    if (!m_present) return;
    for (const auto& kv : m_node) {
      const std::string key = kv.first.as<std::string>();
      if (!m_known.count(key)) fail(dotted(key), kv.first, "is not a known key");
    }
  }

  template <class T>
  T scalar(const YAML::Node& v, const std::string& key, const char* type) const {
    if (!v.IsScalar()) fail(key, v, std::string("must be ") + type);
    try {
      return v.as<T>();
    } catch (const YAML::Exception&) {
      fail(key, v, std::string("must be ") + type + " (got '" + v.Scalar() + "')");
    }
  }

  const std::string& source() const { return m_source; }

 private:
  // Const access: a missing key reads as undefined instead of being created.
  YAML::Node lookup(const std::string& key) const {
    const YAML::Node& node = m_node;
    return node[key];
  }
  YAML::Node m_node;
  bool m_present;
  std::string m_path;
  const std::string& m_source;
  const std::map<std::string, std::string>* m_overrides;
  std::set<std::string> m_known;
};

// `a.b.c=value`: sets that key in the document, creating mappings on the way.
void apply_override(YAML::Node& root, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError("--set " + assignment + ": expected KEY.PATH=VALUE");
  const std::string path = assignment.substr(0, eq), value = assignment.substr(eq + 1);
  std::vector<std::string> keys;
  std::stringstream ss(path);
  for (std::string k; std::getline(ss, k, '.');) {
    if (k.empty()) throw InputError("--set " + assignment + ": expected KEY.PATH=VALUE (an empty key in '" + path + "')");
    keys.push_back(k);
  }
  std::function<void(YAML::Node, std::size_t)> set = [&](YAML::Node node, std::size_t i) {
    if (i + 1 == keys.size()) {
      try {
        node[keys[i]] = YAML::Load(value);
      } catch (const YAML::Exception& e) {
        throw InputError("--set " + assignment + ": the value is not valid YAML: " + e.msg);
      }
      return;
    }
    if (!node[keys[i]] || !node[keys[i]].IsMap()) node[keys[i]] = YAML::Node(YAML::NodeType::Map);
    set(node[keys[i]], i + 1);
  };
  set(root, 0);
}

Shape shape_of(const Section& s, const YAML::Node& v, const std::string& key) {
  if (!v.IsSequence() || (v.size() != 3 && v.size() != 2)) s.fail(key, v, "must be a list [NX, NY, NZ]");
  Shape out{s.scalar<int64_t>(v[0], key, "an integer"), s.scalar<int64_t>(v[1], key, "an integer"),
            v.size() == 3 ? s.scalar<int64_t>(v[2], key, "an integer") : 1};
  if (out.nx < 1 || out.ny < 1 || out.nz < 1 || out.nx > 32767 || out.ny > 32767 || out.nz > 32767)
    s.fail(key, v, "extents must lie in 1 … 32767");
  return out;
}

template <class T>
void in_range(const Section& s, const YAML::Node& v, const std::string& key, T value, T lo, T hi, bool open_lo = false,
              bool open_hi = false) {
  const bool ok = (open_lo ? value > lo : value >= lo) && (open_hi ? value < hi : value <= hi);
  if (!ok) {
    std::ostringstream msg;
    msg << "must lie in " << (open_lo ? "(" : "[") << lo << ", " << hi << (open_hi ? ")" : "]") << " (got " << value << ")";
    s.fail(key, v, msg.str());
  }
}

// An optional number `key` of section `s` into `field`, checked to lie in its range.
template <class T>
void ranged(Section& s, const std::string& key, T& field, T lo, T hi, bool open_lo = false, bool open_hi = false) {
  s.optional(key, [&](const YAML::Node& v, const std::string& k) {
    field = s.scalar<T>(v, k, std::is_integral_v<T> ? "an integer" : "a number");
    in_range(s, v, k, field, lo, hi, open_lo, open_hi);
  });
}

std::string one_of(const Section& s, const YAML::Node& v, const std::string& key, std::initializer_list<const char*> allowed) {
  const std::string value = s.scalar<std::string>(v, key, "a string");
  std::string list;
  for (const char* a : allowed) {
    if (value == a) return value;
    list += std::string(list.empty() ? "" : ", ") + a;
  }
  s.fail(key, v, "must be one of " + list + " (got '" + value + "')");
}

}  // namespace

RunConfig parse_run_config(const std::string& text, const std::string& source, const std::vector<std::string>& overrides) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw InputError(source + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  }
  if (!root || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap())
    throw InputError(source + ":" + std::to_string(root.Mark().line + 1) + ": the document must be a mapping of keys "
                     "(name:, target:, ...), not " + (root.IsSequence() ? "a list" : "a single value"));
  std::map<std::string, std::string> set_keys;
  for (const auto& o : overrides) {
    apply_override(root, o);
    set_keys[o.substr(0, o.find('='))] = o;
  }

  RunConfig c;
  Section doc(root, true, "", source, &set_keys);
  doc.optional("name", [&](auto& v, auto& k) {
    c.name = doc.scalar<std::string>(v, k, "a string");
    // The run's folder: `.`, `..` or a path here once replaced the folder above it.
    if (const std::string problem = folder_name_problem(c.name); !problem.empty()) doc.fail(k, v, problem);
  });
  doc.optional("seed", [&](auto& v, auto& k) {
    // Checked as text: a negative number would otherwise wrap to 2^64 - 1.
    if (v.IsScalar() && !v.Scalar().empty() && v.Scalar()[0] == '-')
      doc.fail(k, v, "must be a non-negative integer (got '" + v.Scalar() + "')");
    c.loop.seed = doc.scalar<uint64_t>(v, k, "a non-negative integer");
  });
  doc.optional("backend", [&](auto& v, auto& k) { c.backend = one_of(doc, v, k, {"auto", "cpu", "cuda"}); });

  Section target = doc.child("target");
  target.optional("image", [&](auto& v, auto& k) { c.target_image = target.scalar<std::string>(v, k, "a path"); });
  target.optional("descriptors", [&](auto& v, auto& k) { c.target_descriptors = target.scalar<std::string>(v, k, "a path"); });
  target.optional("format", [&](auto& v, auto& k) { c.target_format = one_of(target, v, k, {"auto", "hdf5", "raw", "tiff"}); });
  target.optional("dataset", [&](auto& v, auto& k) { c.target_dataset = target.scalar<std::string>(v, k, "a string"); });
  target.optional("shape", [&](auto& v, auto& k) { c.target_shape = shape_of(target, v, k); });
  target.optional("dtype", [&](auto& v, auto& k) { c.target_dtype = one_of(target, v, k, {"u8", "u16", "i32", "f32"}); });
  target.optional("phase", [&](auto& v, auto& k) { c.target_phase = target.scalar<double>(v, k, "a number"); });
  target.optional("boundary", [&](auto& v, auto& k) { c.target_boundary = one_of(target, v, k, {"open", "wall", "periodic"}); });
  target.finish();
  if (c.target_image.empty() == c.target_descriptors.empty())
    doc.fail("target", static_cast<const YAML::Node&>(root)["target"], "needs exactly one of target.image and target.descriptors");

  Section desc = doc.child("descriptors");
  ranged(desc, "bins", c.bins, 1, 100000);
  desc.optional("log_bins", [&](auto& v, auto& k) { c.log_bins = desc.scalar<bool>(v, k, "true or false"); });
  Section weights = desc.child("weights");
  ranged(weights, "pore_psd", c.loop.weights.pore_psd, 0.0, 1e9);
  ranged(weights, "solid_psd", c.loop.weights.solid_psd, 0.0, 1e9);
  ranged(weights, "s2", c.loop.weights.s2, 0.0, 1e9);
  ranged(weights, "euler", c.loop.weights.euler, 0.0, 1e9);
  ranged(weights, "surface", c.loop.weights.surface, 0.0, 1e9);
  ranged(weights, "chords", c.loop.weights.chords, 0.0, 1e9);
  ranged(weights, "openings", c.loop.weights.openings, 0.0, 1e9);
  ranged(weights, "patterns", c.loop.weights.patterns, 0.0, 1e9);
  ranged(weights, "local_porosity", c.loop.weights.local_porosity, 0.0, 1e9);
  weights.finish();
  desc.finish();

  Section domain = doc.child("domain");
  domain.optional("shape", [&](auto& v, auto& k) { c.loop.shape = shape_of(domain, v, k); });
  domain.optional("spacing", [&](auto& v, auto& k) {
    if (!v.IsSequence() || v.size() != 3) domain.fail(k, v, "must be a list [SX, SY, SZ]");
    c.loop.spacing = {domain.scalar<double>(v[0], k, "a number"), domain.scalar<double>(v[1], k, "a number"),
                 domain.scalar<double>(v[2], k, "a number")};
    for (double s : {c.loop.spacing.x, c.loop.spacing.y, c.loop.spacing.z}) in_range(domain, v, k, s, min_spacing, max_spacing);
    c.spacing_given = true;
  });
  domain.optional("boundary", [&](auto& v, auto& k) {
    c.loop.boundary = parse_boundary(one_of(domain, v, k, {"open", "wall", "periodic"}));
  });
  domain.finish();

  Section an = doc.child("annealing");
  auto& s = c.loop.schedule;
  auto& stop = c.loop.stopping;
  an.optional("schedule", [&](auto& v, auto& k) {
    s.kind = one_of(an, v, k, {"exponential", "aarts_korst"}) == "exponential" ? anneal::Schedule::Kind::exponential
                                                                               : anneal::Schedule::Kind::aarts_korst;
  });
  ranged(an, "t0", s.t0, 0.0, 1e12);
  ranged(an, "initial_acceptance", s.initial_acceptance, 0.0, 1.0, true, true);
  ranged(an, "trial_moves", s.trial_moves, 1, 1000000);
  ranged(an, "alpha", s.alpha, 0.0, 1.0, true, true);
  ranged<int64_t>(an, "stage_length", s.stage_length, 1, int64_t(1) << 40);
  ranged(an, "delta", s.delta, 0.0, 1e6, true);
  ranged<int64_t>(an, "max_evaluations", stop.max_evaluations, 1, int64_t(1) << 50);
  ranged(an, "energy_tolerance", stop.energy_tolerance, 0.0, 1e12);
  ranged(an, "stall_stages", stop.stall_stages, 1, 1 << 30);
  ranged(an, "max_seconds", c.max_seconds, 0.0, 1e9);
  ranged<int64_t>(an, "verify_every", c.verify_every, 0, int64_t(1) << 50);
  an.optional("levels", [&](const YAML::Node& v, const std::string& k) {
    c.levels_auto = v.IsScalar() && v.Scalar() == "auto";
    if (c.levels_auto) return;
    c.levels = an.scalar<int>(v, k, "a whole number or auto");
    in_range(an, v, k, c.levels, 1, 6);
  });
  ranged(an, "batch", c.loop.batch, 0, 4096);
  // Not a setting: on CUDA the loop runs on the device (the host-driven loop was measured
  // slower and stays for cross-checks in the tests and bench_anneal --loop host). Configs that
  // poreforge stored with `host_loop: false` still read.
  an.optional("host_loop", [&](auto& v, auto& k) {
    if (an.scalar<bool>(v, k, "true or false"))
      an.fail(k, v, "is not a setting: on CUDA the annealing loop runs on the device (remove the key)");
  });
  an.finish();

  Section moves = doc.child("moves");
  ranged(moves, "interface_bias", c.loop.moves.interface_bias, 0.0, 1e6);
  moves.optional("keep_pore_connected", [&](auto& v, auto& k) {
    c.loop.moves.keep_pore_connected = moves.scalar<bool>(v, k, "true or false");
    c.keep_pore_connected_given = true;
  });
  moves.finish();

  Section init = doc.child("initial");
  init.optional("structure", [&](auto& v, auto& k) { c.initial = one_of(init, v, k, {"noise", "blobs", "grains", "file"}); });
  init.optional("file", [&](auto& v, auto& k) {
    c.initial_file = init.scalar<std::string>(v, k, "a path");
    if (c.initial != "file") init.fail(k, v, "is read for initial.structure: file");
  });
  init.optional("dataset", [&](auto& v, auto& k) { c.initial_dataset = init.scalar<std::string>(v, k, "a string"); });
  init.optional("phase", [&](auto& v, auto& k) { c.initial_phase = init.scalar<double>(v, k, "a number"); });
  // A number, or `auto`: chosen by the targets when the run starts (the resolved config then
  // names the value chosen).
  auto number_or_auto = [&](const char* key, double& value, bool& is_auto, double lo, double hi, bool open_lo,
                            const char* what) {
    init.optional(key, [&](const YAML::Node& v, const std::string& k) {
      if (v.IsScalar() && v.Scalar() == "auto") {
        is_auto = true;
        return;
      }
      value = init.scalar<double>(v, k, what);
      in_range(init, v, k, value, lo, hi, open_lo);
      is_auto = false;
    });
  };
  number_or_auto("blobiness", c.initial_blobiness, c.initial_blobiness_auto, 0.0, 1e6, true, "a number or auto");
  number_or_auto("grain_radius", c.initial_grain_radius, c.initial_grain_radius_auto, 1.0, 1e6, false,
                 "a number of voxels or auto");
  number_or_auto("grain_spread", c.initial_grain_spread, c.initial_grain_spread_auto, 0.0, 10.0, false,
                 "a coefficient of variation or auto");
  init.optional("grain_stretch", [&](const YAML::Node& v, const std::string& k) {
    if (v.IsScalar() && v.Scalar() == "auto") {
      c.initial_grain_stretch_auto = true;
      return;
    }
    if (!v.IsSequence() || v.size() != 3) init.fail(k, v, "must be auto or [SX, SY, SZ]");
    for (std::size_t a = 0; a < 3; ++a) {
      c.initial_grain_stretch[a] = init.scalar<double>(v[a], k, "a number");
      in_range(init, v, k, c.initial_grain_stretch[a], 0.1, 10.0);
    }
    c.initial_grain_stretch_auto = false;
  });
  bool connect_given = false;
  init.optional("connect", [&](const YAML::Node& v, const std::string& k) {
    c.initial_connect = init.scalar<bool>(v, k, "true or false");
    connect_given = true;
  });
  init.optional("draws", [&](const YAML::Node& v, const std::string& k) {
    c.initial_draws = init.scalar<int>(v, k, "a whole number");
    in_range(init, v, k, c.initial_draws, 1, 64);
  });
  init.optional("plant_large_pores", [&](const YAML::Node& v, const std::string& k) {
    c.initial_plant_large_pores = init.scalar<bool>(v, k, "true or false");
    if (c.initial_plant_large_pores && c.initial != "blobs" && c.initial != "file")
      init.fail(k, v, "plants into a blobs or file start (initial.structure: blobs or file)");
  });
  init.finish();
  // A connected start replaces every cluster beside the largest, planted balls among them: by
  // default it is on for blobs and grains without planting, and the two together are refused.
  if (!connect_given) c.initial_connect = !c.initial_plant_large_pores;
  if (c.initial == "blobs" && c.initial_connect && c.initial_plant_large_pores)
    doc.fail("initial", static_cast<const YAML::Node&>(root)["initial"],
             "has connect and plant_large_pores both on: they exclude each other (planted balls sit apart from the "
             "connected pore space and a connected start replaces them); set one of them to false");
  // Connected moves need a connected start: on by default exactly when the start is one.
  if (!c.keep_pore_connected_given)
    c.loop.moves.keep_pore_connected = (c.initial == "blobs" || c.initial == "grains") && c.initial_connect;
  if (c.initial == "file" && c.initial_file.empty())
    doc.fail("initial", static_cast<const YAML::Node&>(root)["initial"], "structure: file needs initial.file");
  // Each coarser level halves the grid (rounding down: an odd extent's coarser box is one fine
  // voxel short, and the refinement stretches it back onto the domain, by less than a voxel)
  // against the reference coarsened as much; the coarsest needs a few voxels along each axis.
  if (c.levels > 1 || c.levels_auto) {
    const YAML::Node node = static_cast<const YAML::Node&>(root)["annealing"]["levels"];
    const std::string said = c.levels_auto ? "= auto" : "= " + std::to_string(c.levels);
    if (c.target_image.empty())
      doc.fail("annealing.levels", node, said + " needs target.image: the coarser levels' targets "
                                  "come from the reference image coarsened, which a descriptor file cannot give");
    if (c.initial == "file")
      doc.fail("annealing.levels", node, said + " builds its own coarse-to-fine chain: start "
                                  "the coarsest level from grains, blobs or noise (initial.structure), not a file");
    if (c.levels_auto && c.initial != "grains" && c.initial != "blobs")
      doc.fail("annealing.levels", node, said + " weighs a coarser level against the grains or blobs chosen on the "
                                  "domain's grid: initial.structure must be grains or blobs");
    const int levels = c.levels_auto ? 2 : c.levels;
    const int64_t factor = int64_t(1) << (levels - 1);
    for (int a = 0; a < 3; ++a) {
      const int64_t n = c.loop.shape.extent(a);
      if (n > 1 && n / factor < 4 && c.levels_auto) {  // too small to coarsen: one level
        c.levels_auto = false;
        c.levels = 1;
        break;
      }
      if (n > 1 && n / factor < 4)
        doc.fail("annealing.levels", node, said + " halves the domain " +
                                    std::to_string(c.levels - 1) + " times: each extent of domain.shape must be at least " +
                                    std::to_string(4 * factor) + " (got " + std::to_string(n) + " along " + "xyz"[a] +
                                    ")");
    }
  }

  Section output = doc.child("output");
  output.optional("directory", [&](auto& v, auto& k) { c.output_directory = output.scalar<std::string>(v, k, "a path"); });
  ranged<int64_t>(output, "report_every", c.report_every, 1, int64_t(1) << 50);
  output.optional("tiff", [&](auto& v, auto& k) {
    c.tiff = output.scalar<bool>(v, k, "true or false");
    if (c.tiff && !tiff_supported()) output.fail(k, v, "needs a build with TIFF support (libtiff was not found)");
  });
  output.finish();

  Section ck = doc.child("checkpoint");
  ranged<int64_t>(ck, "every_evaluations", c.checkpoint_every_evaluations, 0, int64_t(1) << 50);
  ranged(ck, "every_seconds", c.checkpoint_every_seconds, 0.0, 1e9);
  ranged(ck, "keep", c.checkpoint_keep, 1, 1000);
  ck.finish();
  doc.finish();
  return c;
}

RunConfig load_run_config(const std::string& path, const std::vector<std::string>& overrides) {
  if (path.empty()) throw InputError("the config path is empty");
  if (!std::filesystem::exists(path)) throw InputError("config '" + path + "' does not exist");
  if (std::filesystem::is_directory(path)) throw InputError("config '" + path + "' is a directory, not a YAML file");
  std::ifstream in(path);
  if (!in) throw InputError("config '" + path + "' cannot be read: " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  RunConfig c = parse_run_config(text.str(), path, overrides);
  // Input paths are relative to the config file (so a config travels with its data); the
  // output directory is relative to where the program runs.
  const std::filesystem::path base = std::filesystem::path(path).parent_path();
  for (std::string* p : {&c.target_image, &c.target_descriptors, &c.initial_file})
    if (!p->empty() && std::filesystem::path(*p).is_relative()) *p = (base / *p).lexically_normal().string();
  return c;
}

std::string RunConfig::to_yaml() const {
  YAML::Emitter y;
  y << YAML::BeginMap << YAML::Key << "name" << YAML::Value << name;
  y << YAML::Key << "seed" << YAML::Value << loop.seed << YAML::Key << "backend" << YAML::Value << backend;
  y << YAML::Key << "target" << YAML::Value << YAML::BeginMap;
  if (!target_image.empty()) {
    y << YAML::Key << "image" << YAML::Value << target_image << YAML::Key << "format" << YAML::Value << target_format;
    if (!target_dataset.empty()) y << YAML::Key << "dataset" << YAML::Value << target_dataset;
    if (target_shape)
      y << YAML::Key << "shape" << YAML::Value << YAML::Flow << std::vector<int64_t>{target_shape->nx, target_shape->ny, target_shape->nz};
    y << YAML::Key << "dtype" << YAML::Value << target_dtype << YAML::Key << "phase" << YAML::Value << target_phase
      << YAML::Key << "boundary" << YAML::Value << target_boundary;
  } else {
    y << YAML::Key << "descriptors" << YAML::Value << target_descriptors;
  }
  y << YAML::EndMap;
  y << YAML::Key << "descriptors" << YAML::Value << YAML::BeginMap << YAML::Key << "bins" << YAML::Value << bins
    << YAML::Key << "log_bins" << YAML::Value << log_bins << YAML::Key << "weights" << YAML::Value << YAML::BeginMap
    << YAML::Key << "pore_psd" << YAML::Value << loop.weights.pore_psd << YAML::Key << "solid_psd" << YAML::Value
    << loop.weights.solid_psd << YAML::Key << "s2" << YAML::Value << loop.weights.s2 << YAML::Key << "euler" << YAML::Value
    << loop.weights.euler << YAML::Key << "surface" << YAML::Value << loop.weights.surface << YAML::Key << "chords"
    << YAML::Value << loop.weights.chords << YAML::Key << "openings" << YAML::Value << loop.weights.openings
    << YAML::Key << "patterns" << YAML::Value << loop.weights.patterns << YAML::Key << "local_porosity" << YAML::Value
    << loop.weights.local_porosity << YAML::EndMap << YAML::EndMap;
  const anneal::Schedule& sc = loop.schedule;
  const anneal::Stopping& stop = loop.stopping;
  y << YAML::Key << "domain" << YAML::Value << YAML::BeginMap << YAML::Key << "shape" << YAML::Value << YAML::Flow
    << std::vector<int64_t>{loop.shape.nx, loop.shape.ny, loop.shape.nz} << YAML::Key << "spacing" << YAML::Value
    << YAML::Flow << std::vector<double>{loop.spacing.x, loop.spacing.y, loop.spacing.z} << YAML::Key << "boundary"
    << YAML::Value << to_string(loop.boundary) << YAML::EndMap;
  y << YAML::Key << "annealing" << YAML::Value << YAML::BeginMap << YAML::Key << "schedule" << YAML::Value
    << (sc.kind == anneal::Schedule::Kind::exponential ? "exponential" : "aarts_korst") << YAML::Key << "t0"
    << YAML::Value << sc.t0 << YAML::Key << "initial_acceptance" << YAML::Value << sc.initial_acceptance << YAML::Key
    << "trial_moves" << YAML::Value << sc.trial_moves << YAML::Key << "alpha" << YAML::Value << sc.alpha << YAML::Key
    << "stage_length" << YAML::Value << sc.stage_length << YAML::Key << "delta" << YAML::Value << sc.delta << YAML::Key
    << "max_evaluations" << YAML::Value << stop.max_evaluations << YAML::Key << "energy_tolerance" << YAML::Value
    << stop.energy_tolerance << YAML::Key << "stall_stages" << YAML::Value << stop.stall_stages << YAML::Key
    << "max_seconds" << YAML::Value << max_seconds << YAML::Key << "verify_every" << YAML::Value << verify_every
    << YAML::Key << "levels" << YAML::Value;
  if (levels_auto) y << "auto";
  else y << levels;
  y << YAML::Key << "batch" << YAML::Value << loop.batch << YAML::EndMap;
  y << YAML::Key << "moves" << YAML::Value << YAML::BeginMap << YAML::Key << "interface_bias" << YAML::Value
    << loop.moves.interface_bias << YAML::Key << "keep_pore_connected" << YAML::Value << loop.moves.keep_pore_connected
    << YAML::EndMap;
  auto number_or_auto = [&](const char* key, double value, bool is_auto) {
    y << YAML::Key << key << YAML::Value;
    if (is_auto) y << "auto";
    else y << value;
  };
  y << YAML::Key << "initial" << YAML::Value << YAML::BeginMap << YAML::Key << "structure" << YAML::Value << initial;
  number_or_auto("blobiness", initial_blobiness, initial_blobiness_auto);
  if (initial == "grains") {
    number_or_auto("grain_radius", initial_grain_radius, initial_grain_radius_auto);
    number_or_auto("grain_spread", initial_grain_spread, initial_grain_spread_auto);
    y << YAML::Key << "grain_stretch" << YAML::Value;
    if (initial_grain_stretch_auto) y << "auto";
    else y << YAML::Flow << std::vector<double>(initial_grain_stretch.begin(), initial_grain_stretch.end());
  }
  if (initial == "blobs" || initial == "grains")
    y << YAML::Key << "connect" << YAML::Value << initial_connect << YAML::Key << "draws" << YAML::Value
      << initial_draws;
  y << YAML::Key << "plant_large_pores" << YAML::Value << initial_plant_large_pores;
  if (initial == "file") {
    y << YAML::Key << "file" << YAML::Value << initial_file << YAML::Key << "phase" << YAML::Value << initial_phase;
    if (!initial_dataset.empty()) y << YAML::Key << "dataset" << YAML::Value << initial_dataset;
  }
  y << YAML::EndMap;
  y << YAML::Key << "output" << YAML::Value << YAML::BeginMap << YAML::Key << "directory" << YAML::Value
    << output_directory << YAML::Key << "report_every" << YAML::Value << report_every << YAML::Key << "tiff"
    << YAML::Value << tiff << YAML::EndMap;
  y << YAML::Key << "checkpoint" << YAML::Value << YAML::BeginMap << YAML::Key << "every_evaluations" << YAML::Value
    << checkpoint_every_evaluations << YAML::Key << "every_seconds" << YAML::Value << checkpoint_every_seconds
    << YAML::Key << "keep" << YAML::Value << checkpoint_keep << YAML::EndMap;
  y << YAML::EndMap;
  return std::string(y.c_str()) + "\n";
}

}  // namespace poreforge::app
