// The structural measures of an image, with the time of each part: the figures `compare`
// will report, on the Berea sample by default. Timed with a steady clock around synchronous
// calls (the CUDA labelling synchronizes before returning).
//
//   bench_measures [--image PATH] [--dataset /volume] [--label 1] [--crop N] [--backend auto|cpu|cuda]
//                  [--openings R1,R2,...]   (χ of the openings {LT ≥ r}, r in physical units)
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "poreforge/backend.hpp"
#include "poreforge/io.hpp"
#include "poreforge/local_thickness.hpp"
#include "poreforge/measures.hpp"

using namespace poreforge;

namespace {

double seconds(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::string image = std::string(POREFORGE_DATA_DIR) + "/berea_400.h5", dataset = "/volume";
  double label = 1;
  int64_t crop = 0;
  Backend backend = Backend::automatic;
  std::vector<double> openings;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--image")) image = argv[i + 1];
    else if (!std::strcmp(argv[i], "--dataset")) dataset = argv[i + 1];
    else if (!std::strcmp(argv[i], "--label")) label = std::stod(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--crop")) crop = std::stoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--backend")) backend = parse_backend(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--openings")) {
      std::stringstream ss(argv[i + 1]);
      for (std::string r; std::getline(ss, r, ',');) openings.push_back(std::stod(r));
    }
    else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  Mask full = phase_mask(read_hdf5(image, dataset), label);
  Mask m = full;
  if (crop > 0) {
    const Shape s{std::min(crop, full.shape().nx), std::min(crop, full.shape().ny), std::min(crop, full.shape().nz)};
    m = Mask(s, full.spacing());
    for (int64_t z = 0; z < s.nz; ++z)
      for (int64_t y = 0; y < s.ny; ++y)
        for (int64_t x = 0; x < s.nx; ++x) m(x, y, z) = full(x, y, z);
  }
  std::printf("image %s, %s voxels, spacing %s, label %g, %d CPU threads\n", image.c_str(),
              to_string(m.shape()).c_str(), to_string(m.spacing()).c_str(), label, cpu_threads());

  ConfigurationHistogram h{};
  SurfaceMeasures surface;
  ComponentLabels c6, c26;
  ChordLengths chords, complement_chords;
  LinealPath lineal;
  const double t_euler = seconds([&] { h = configuration_histogram(m); });
  const double t_surface = seconds([&] { surface = specific_surface(m); });
  const double t_c6 = seconds([&] { c6 = label_components(m, Adjacency::face6, backend); });
  const double t_c26 = seconds([&] { c26 = label_components(m, Adjacency::full26, backend); });
  const double t_chords = seconds([&] {
    chords = chord_lengths(m, 1);
    complement_chords = chord_lengths(m, 0);
    lineal = lineal_path(m, 1);
  });
  StructureMeasures all;
  const double t_all = seconds([&] { all = measure_structure(m, {}, backend); });

  const ClusterStatistics s6 = all.clusters6, s26 = all.clusters26;
  std::printf("porosity            %.5f\n", all.porosity);
  std::printf("Euler chi           %lld  (chi_V %.4e per voxel)\n", (long long)all.euler, all.euler_per_voxel);
  std::printf("S_V marching cubes  %.5f per voxel   Crofton %.5f   faces %.5f per voxel\n",
              all.surface.area_per_volume, all.surface.crofton_per_volume, all.surface.faces_per_volume);
  for (const auto& [name, s] : {std::pair<const char*, ClusterStatistics>{"6-adjacency ", s6}, {"26-adjacency", s26}})
    std::printf("%s clusters %lld (%.1f per 1e6 voxels), largest %.4f, spanning x/y/z %.4f %.4f %.4f, specks %.5f\n",
                name, (long long)s.clusters, s.clusters_per_million, s.largest_share, s.spanning_share[0],
                s.spanning_share[1], s.spanning_share[2], s.speck_share);
  std::printf("mean chords pore    x %.3f  y %.3f  z %.3f voxels\n", all.chords.mean_voxels[0],
              all.chords.mean_voxels[1], all.chords.mean_voxels[2]);
  std::printf("mean chords solid   x %.3f  y %.3f  z %.3f voxels\n", all.complement_chords.mean_voxels[0],
              all.complement_chords.mean_voxels[1], all.complement_chords.mean_voxels[2]);
  std::printf("lineal path pore x  L(0) %.4f  L(5) %.4f  L(10) %.4f\n", all.lineal.along[0][0],
              all.lineal.along[0].size() > 5 ? all.lineal.along[0][5] : 0.0,
              all.lineal.along[0].size() > 10 ? all.lineal.along[0][10] : 0.0);
  std::printf("seconds: histogram %.2f, surface %.2f, components6 %.2f (%s), components26 %.2f, chords+lineal %.2f, "
              "all at once %.2f (components on %s)\n",
              t_euler, t_surface, t_c6, to_string(c6.backend).c_str(), t_c26, t_chords, t_all,
              to_string(all.backend).c_str());
  if (!openings.empty()) {
    Volume<float> lt;
    std::vector<int64_t> chi;
    const double t_lt = seconds([&] { lt = local_thickness(m, Boundary::open, backend); });
    const double t_open = seconds([&] { chi = euler_of_openings(lt, openings); });
    std::printf("chi(r) of openings:");
    for (std::size_t k = 0; k < openings.size(); ++k) std::printf("  r=%g: %lld", openings[k], (long long)chi[k]);
    std::printf("\nseconds: local thickness %.2f, %zu openings %.2f\n", t_lt, openings.size(), t_open);
  }
  (void)h;
  return 0;
}
