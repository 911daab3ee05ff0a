// How a grains start's stretch moves its formation factors: the figure behind initial.draws'
// restretch (app/run_session.cpp, kStretchSensitivity). Packs of the start's grains
// (generate_spheres: overlapping ellipsoids, pore between them) stretched by s along x and by
// 1/√s along y and z (the grains' volume kept), several seeds each; the mean ln F along each
// axis per stretch, and the least-squares slope of ln F_a against ln stretch_a over every axis
// and stretch (each seed's pack is the same draw at every stretch, so the slope is not the
// seeds' scatter). Prints a table and writes JSON.
//
//   stretch_sensitivity [--size N] [--porosity P] [--radius R] [--spread S] [--seeds K]
//                       [--stretches a,b,c] [--backend cpu|cuda] [--json PATH]
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "bench_record.hpp"
#include "poreforge/backend.hpp"
#include "poreforge/generators.hpp"
#include "poreforge/transport.hpp"

using namespace poreforge;

int main(int argc, char** argv) {
  int64_t size = 128;
  double porosity = 0.19, radius = 4.88, spread = 0.25;
  int seeds = 16;
  std::vector<double> stretches{0.9, 0.95, 1.0, 1.05, 1.1};
  std::string json, backend_name = "cpu";
  for (int i = 1; i < argc; i += 2) {
    const std::string a = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "stretch_sensitivity: error: %s needs a value\n", a.c_str());
      return 2;
    }
    const std::string v = argv[i + 1];
    if (a == "--size") size = std::atoll(v.c_str());
    else if (a == "--porosity") porosity = std::atof(v.c_str());
    else if (a == "--radius") radius = std::atof(v.c_str());
    else if (a == "--spread") spread = std::atof(v.c_str());
    else if (a == "--seeds") seeds = std::atoi(v.c_str());
    else if (a == "--backend") backend_name = v;
    else if (a == "--json") json = v;
    else if (a == "--stretches") {
      stretches.clear();
      std::stringstream in(v);
      for (std::string item; std::getline(in, item, ',');) stretches.push_back(std::atof(item.c_str()));
    } else {
      std::fprintf(stderr, "stretch_sensitivity: error: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (size < 8 || seeds < 1 || stretches.size() < 2 || !(porosity > 0 && porosity < 1) || !(radius > 0)) {
    std::fprintf(stderr, "stretch_sensitivity: error: needs --size >= 8, --seeds >= 1, two stretches or more, "
                         "a porosity in (0, 1) and a positive radius\n");
    return 2;
  }
  if (backend_name != "cpu" && backend_name != "cuda") {
    std::fprintf(stderr, "stretch_sensitivity: error: --backend is cpu or cuda\n");
    return 2;
  }
  if (!bench::record_path_usable("stretch_sensitivity", json)) return 2;
  const Backend backend = backend_name == "cuda" ? Backend::cuda : Backend::cpu;
  FormationFactorOptions fo;
  fo.tolerance = 1e-6;

  std::printf("grain packs %lld^3, porosity %.3g, radius %.3g voxels (spread %.3g), %d seeds a stretch\n",
              static_cast<long long>(size), porosity, radius, spread, seeds);
  std::printf("%9s  %10s %10s %10s   (geometric mean F along x / y / z)\n", "stretch x", "F_x", "F_y", "F_z");
  std::vector<std::array<double, 3>> mean_log;
  double sxy = 0, sxx = 0;  // the slope's sums over (ln stretch_a, ln F_a − its mean over stretches)
  std::vector<std::vector<std::array<double, 3>>> logs(stretches.size());
  for (std::size_t k = 0; k < stretches.size(); ++k) {
    const double s = stretches[k];
    const std::array<double, 3> st{s, 1 / std::sqrt(s), 1 / std::sqrt(s)};
    std::array<double, 3> m{};
    for (int seed = 1; seed <= seeds; ++seed) {
      const Mask pack = generate_spheres(Shape{size, size, size}, porosity, radius, uint64_t(seed), spread, st);
      std::array<double, 3> l{};
      for (int a = 0; a < 3; ++a) {
        l[std::size_t(a)] = std::log(formation_factor(pack, a, fo, backend).formation_factor);
        m[std::size_t(a)] += l[std::size_t(a)] / double(seeds);
      }
      logs[k].push_back(l);
    }
    mean_log.push_back(m);
    std::printf("%9.3f  %10.3f %10.3f %10.3f\n", s, std::exp(m[0]), std::exp(m[1]), std::exp(m[2]));
    std::fflush(stdout);
  }
  // Per seed and axis, ln F about its mean over the stretches against ln stretch_a about its mean.
  double mean_ls = 0;
  for (double s : stretches) mean_ls += std::log(s) / double(stretches.size());
  for (int seed = 0; seed < seeds; ++seed)
    for (std::size_t a = 0; a < 3; ++a) {
      double mean_lf = 0;
      for (std::size_t k = 0; k < stretches.size(); ++k) mean_lf += logs[k][std::size_t(seed)][a] / double(stretches.size());
      for (std::size_t k = 0; k < stretches.size(); ++k) {
        const double x = (a == 0 ? 1.0 : -0.5) * (std::log(stretches[k]) - mean_ls);
        sxy += x * (logs[k][std::size_t(seed)][a] - mean_lf);
        sxx += x * x;
      }
    }
  const double sensitivity = -sxy / sxx;
  std::printf("\n-d ln F_a / d ln stretch_a = %.3f (least squares over the axes, stretches and seeds)\n", sensitivity);

  std::ostringstream j;
  j << "{\n  \"program\": \"stretch_sensitivity\",\n  \"size\": " << size << ",\n  \"porosity\": " << porosity
    << ",\n  \"radius\": " << radius << ",\n  \"spread\": " << spread << ",\n  \"seeds\": " << seeds
    << ",\n  \"backend\": \"" << backend_name << "\",\n  \"rows\": [";
  for (std::size_t k = 0; k < stretches.size(); ++k)
    j << (k ? "," : "") << "\n    {\"stretch_x\": " << stretches[k] << ", \"geometric_mean_f\": [" << std::exp(mean_log[k][0])
      << ", " << std::exp(mean_log[k][1]) << ", " << std::exp(mean_log[k][2]) << "]}";
  j << "\n  ],\n  \"sensitivity\": " << sensitivity << "\n}\n";
  return bench::write_record("stretch_sensitivity", json, j.str());
}
