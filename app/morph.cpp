// poreforge morph IN -o OUT --op …: binary morphology, OpenCV's conventions.
#include "commands.hpp"

#include <CLI/CLI.hpp>

#include <chrono>
#include <filesystem>
#include <cstdio>
#include <memory>

#include "poreforge/backend.hpp"
#include "poreforge/error.hpp"
#include "poreforge/io.hpp"
#include "poreforge/memory.hpp"
#include "poreforge/morphology.hpp"

#include "options.hpp"

namespace poreforge::app {

Runner add_morph_command(CLI::App& app, const std::string& command_line) {
  struct Options {
    InputOptions input;
    std::string output, op, element, backend = "auto";
    double phase = 1;
    int iterations = 1;
    bool force = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("morph", "Binary erosion, dilation, opening or closing of an image or volume");
  o->input.add_to(cmd);
  cmd->add_option("-o,--output", o->output, "Output: HDF5 (.h5, dataset /volume), raw (.raw) or TIFF stack (.tif)")
      ->required();
  cmd->add_option("--op", o->op, "erode, dilate, open or close")->required()->check(CLI::IsMember({"erode", "dilate", "open", "close"}));
  cmd->add_option("--element", o->element, "box:KXxKY, box:KXxKYxKZ (anchor at the centre, as OpenCV) or ball:R (physical units)")
      ->required();
  cmd->add_option("--iterations", o->iterations, "Times to apply (open/close: each half)")->check(CLI::Range(1, 100000));
  cmd->add_option("--phase", o->phase, "Label of the foreground (default 1)");
  cmd->add_option("--backend", o->backend, "auto, cpu or cuda")->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  cmd->add_flag("--force", o->force, "Overwrite an existing output file");

  return [o, command_line] {
    const StructuringElement element = StructuringElement::parse(o->element);
    const MorphOp op = parse_morph_op(o->op);
    const Backend backend = resolve_backend(parse_backend(o->backend), Operation::morphology);
    const std::string ext = std::filesystem::path(o->output).extension().string();
    if (o->output.empty()) throw InputError("the output path is empty");
    if (std::filesystem::exists(o->output) && !o->force)
      throw InputError("output '" + o->output + "' already exists (use --force to overwrite it)");
    if (ext == ".tif" || ext == ".tiff") {
      if (!tiff_supported()) throw InputError("cannot write '" + o->output + "': this build has no TIFF support");
    } else if (ext != ".raw" && ext != ".h5" && ext != ".hdf5") {
      throw InputError("output '" + o->output + "': expected .h5, .raw or .tif");
    }
    require_writable_folder(o->output);
    const LabelImage image = o->input.read([&](const Shape& s, std::size_t bytes, const Spacing&) {
      return morph_memory(s, bytes, backend);
    });
    const Mask in = phase_mask(image, o->phase);
    const auto start = std::chrono::steady_clock::now();
    const Mask out = morphology(in, op, element, o->iterations, backend);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (ext == ".raw") {
      write_raw(o->output, out);
    } else if (ext == ".tif" || ext == ".tiff") {
      write_tiff(o->output, out);
    } else {
      OutputFile h5(o->output, o->force);
      h5.write_volume("/volume", out);
      h5.set_attribute("operation", o->op);
      h5.set_attribute("element", element.to_string());
      h5.set_attribute("iterations", double(o->iterations));
      h5.set_attribute("backend", to_string(backend));
      h5.set_provenance(command_line);
      h5.commit();
    }
    std::printf("%s %s x%d on %s (%s): %lld -> %lld foreground voxels in %.3f s (%s)\nwrote %s\n", o->op.c_str(),
                element.to_string().c_str(), o->iterations, to_string(image.shape).c_str(), o->input.path.c_str(),
                static_cast<long long>(count_phase(in)), static_cast<long long>(count_phase(out)), seconds,
                to_string(backend).c_str(), o->output.c_str());
    return 0;
  };
}

}  // namespace poreforge::app
