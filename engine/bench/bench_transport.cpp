// Transport measures on a real image: the formation factor and the permeability of a cube
// cropped from it (or the whole), along each axis, with the time each took.
//
//   bench_transport [--image PATH] [--label L] [--crop N] [--offset O] [--axes xyz]
//                   [--measures ff,k] [--backend auto|cpu|cuda] [--voxel-m S] [--tau T]
//                   [--cs2 C] [--tolerance E] [--mirror 0|1]
// Defaults: data/berea_400.h5, label 1 (pore), the whole image, both measures, spacing from
// the file in µm (Berea: 5.345 µm).
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstring>
#include <string>

#include "poreforge/io.hpp"
#include "poreforge/transport.hpp"

using namespace poreforge;

int main(int argc, char** argv) {
  std::string path = std::string(POREFORGE_DATA_DIR) + "/berea_400.h5", axes = "xyz", measures = "ff,k";
  double label = 1, voxel_m = 0, tau = PermeabilityOptions{}.tau, tolerance = PermeabilityOptions{}.tolerance;
  double cs2 = PermeabilityOptions{}.sound_speed_squared;
  int64_t crop = 0, offset = 0;
  bool mirror = true;
  Backend backend = Backend::automatic;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--image") path = v;
    else if (k == "--label") label = std::stod(v);
    else if (k == "--crop") crop = std::stoll(v);
    else if (k == "--offset") offset = std::stoll(v);
    else if (k == "--axes") axes = v;
    else if (k == "--measures") measures = v;
    else if (k == "--backend") backend = parse_backend(v);
    else if (k == "--voxel-m") voxel_m = std::stod(v);
    else if (k == "--tau") tau = std::stod(v);
    else if (k == "--cs2") cs2 = std::stod(v);
    else if (k == "--tolerance") tolerance = std::stod(v);
    else if (k == "--mirror") mirror = v != "0";
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  const LabelImage image = read_image(path, {});
  Mask full = phase_mask(image, label);
  // The sample files store µm; a file read without its spacing falls back to Berea's.
  if (voxel_m == 0) voxel_m = image.spacing.x != 1 ? image.spacing.x * 1e-6 : 5.345e-6;
  Mask m = full;
  if (crop > 0) {
    m = Mask({crop, crop, crop}, full.spacing());
    for (int64_t z = 0; z < crop; ++z)
      for (int64_t y = 0; y < crop; ++y)
        for (int64_t x = 0; x < crop; ++x) m(x, y, z) = full(x + offset, y + offset, z + offset);
  }
  std::printf("%s: %s from offset %lld, porosity %.4f, voxel %.4g m, backend %s\n", path.c_str(),
              to_string(m.shape()).c_str(), (long long)offset, double(count_phase(m)) / double(m.voxels()), voxel_m,
              to_string(backend).c_str());
  using clock = std::chrono::steady_clock;
  for (const char a : axes) {
    const int axis = parse_axis(std::string(1, a));
    if (measures.find("ff") != std::string::npos) {
      const auto t0 = clock::now();
      const std::clock_t c0 = std::clock();
      const FormationFactorResult r = formation_factor(m, axis, {}, backend);
      const double s = std::chrono::duration<double>(clock::now() - t0).count();
      const double cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
      std::printf("F_%c = %.4f  (phi %.4f, spanning %.4f, F*phi %.3f, %lld CG iterations, residual %.1e, %s, %.2f s, %.2f s of CPU)\n",
                  a, r.formation_factor, r.porosity, r.spanning_porosity, r.formation_factor * r.porosity,
                  (long long)r.iterations, r.relative_residual, to_string(r.backend).c_str(), s, cpu);
    }
    if (measures.find('k') != std::string::npos) {
      PermeabilityOptions o;
      o.voxel_size_m = voxel_m;
      o.tau = tau;
      o.sound_speed_squared = cs2;
      o.tolerance = tolerance;
      o.mirror = mirror;
      const auto t0 = clock::now();
      const std::clock_t c0 = std::clock();
      const PermeabilityResult r = permeability(m, axis, o, backend);
      const double s = std::chrono::duration<double>(clock::now() - t0).count();
      const double cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
      std::printf("k_%c = %.1f mD = %.4g m2 = %.4f voxel2  (%lld steps, %s, error %.1e, %s, %.2f s, %.2f s of CPU)\n", a,
                  r.k_millidarcy, r.k_m2, r.k_voxels, (long long)r.steps, r.converged ? "converged" : "NOT converged",
                  r.relative_error, to_string(r.backend).c_str(), s, cpu);
    }
    std::fflush(stdout);
  }
}
