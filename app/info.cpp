// poreforge info FILE: shape, element type, spacing and voxels per label.
#include "commands.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>

#include "poreforge/io.hpp"
#include "poreforge/memory.hpp"

#include "options.hpp"

namespace poreforge::app {

Runner add_info_command(CLI::App& app) {
  auto input = std::make_shared<InputOptions>();
  CLI::App* cmd = app.add_subcommand("info", "Shape, element type, spacing and label counts of an image");
  input->add_to(cmd);
  return [input] {
    const LabelImage image = input->read([](const Shape& s, std::size_t bytes, const Spacing&) {
      return MemoryEstimate{"info of " + to_string(s), double(s.voxels()) * double(bytes) * 1.1, 0};
    });
    std::printf("file      %s\nshape     %s (x, y, z)\ndtype     %s\nspacing   %g, %g, %g%s\n", input->path.c_str(),
                to_string(image.shape).c_str(), to_string(image.dtype).c_str(), image.spacing.x, image.spacing.y,
                image.spacing.z, image.spacing_unit.empty() ? "" : (" " + image.spacing_unit).c_str());
    const LabelCounts labels = count_labels(image, 32);
    const double total = double(image.shape.voxels());
    std::printf("labels    %s\n", labels.truncated ? "(more than 32 distinct values: a grey-level image?)" : "");
    for (auto& [value, count] : labels.counts)
      std::printf("  %-12s %12lld  %.4f\n", format_number(value).c_str(), static_cast<long long>(count),
                  double(count) / total);
    return 0;
  };
}

}  // namespace poreforge::app
