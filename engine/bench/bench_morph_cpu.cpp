// Morphology benchmark on the CPU: the second post's pipeline (erode 7×7 once, dilate 7×7 four
// times) on 3840×2160 masks, frames per second; and a 512³ dilation by a ball of radius 10.
//
//   bench_morph_cpu [--frames N] [--json PATH]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "poreforge/backend.hpp"
#include "poreforge/generators.hpp"
#include "bench_record.hpp"
#include "poreforge/io.hpp"
#include "poreforge/morphology.hpp"

using namespace poreforge;

int main(int argc, char** argv) {
  int frames = 20;
  std::string json;  // --json: the record (none without it)
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--frames") frames = std::stoi(argv[i + 1]);
    else if (a == "--json") json = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: bench_morph_cpu [--frames N] [--json PATH]\n");
      return 2;
    }
  }
  if (!bench::record_path_usable("bench_morph_cpu", json)) return 2;
  const Mask frame = generate_noise({3840, 2160, 1}, 0.5, 1);
  const auto box = StructuringElement::box(7, 7);
  std::vector<double> ms;
  for (int f = 0; f < frames + 2; ++f) {
    const auto t0 = std::chrono::steady_clock::now();
    const Mask out = dilate(erode(frame, box, 1, Backend::cpu), box, 4, Backend::cpu);
    const double t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (f >= 2) ms.push_back(t);  // two warm-up frames
  }
  std::sort(ms.begin(), ms.end());
  const double frame_ms = ms[ms.size() / 2];

  const Mask volume = generate_blobs({512, 512, 512}, 0.4, 1.0, 1);
  const auto t0 = std::chrono::steady_clock::now();
  const Mask dilated = dilate(volume, StructuringElement::ball(10), 1, Backend::cpu);
  const double ball_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  std::printf("CPU, %d threads\n", cpu_threads());
  std::printf("4K pipeline (erode 7x7 x1, dilate 7x7 x4), 3840x2160 u8: %.2f ms/frame = %.1f FPS (median of %d)\n",
              frame_ms, 1000.0 / frame_ms, frames);
  std::printf("512^3 blobs dilated by ball r=10: %.0f ms (one run)\n", ball_ms);
  std::ostringstream out;
  out << "{\n  \"benchmark\": \"morph_cpu\",\n  \"version\": \"" << version_string()
                      << "\",\n  \"threads\": " << cpu_threads() << ",\n  \"pipeline_4k_ms_per_frame\": " << frame_ms
                      << ",\n  \"pipeline_4k_fps\": " << 1000.0 / frame_ms << ",\n  \"frames\": " << frames
                      << ",\n  \"dilate_512_ball10_ms\": " << ball_ms << "\n}\n";
  return bench::write_record("bench_morph_cpu", json, out.str());
}
