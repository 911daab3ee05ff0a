// Where the CUDA painter's work is, and how much of it an exact cut could still remove: a CPU
// census of the kept balls' rows (x-runs of voxels) on the engine benchmark's volumes (blobs,
// porosity 0.4, open). Per size, rows that meet the volume:
//   whole balls          every row of every kept ball;
//   painter              the rows the CUDA painter walks that meet the ball (the face cuts of
//                        common/row_cuts.hpp, rows emptied by the x-cuts left out);
//   + yz-diagonals       those left after the yz-diagonal cuts (a neighbour (0, ±1, ±1) of no
//                        smaller radius holds row (dy, dz) whole when s = dy·d_y + dz·d_z has
//                        2s ≥ 2 − Δ; s ≥ 2 when Δ = 0, so that chains of cuts end);
//   one of 26 covers     rows not held whole by any single one of the 26 neighbour balls of no
//                        smaller radius (an x-shifted neighbour needs a chord longer by its
//                        shift; equal radii only toward a strictly nearer offset) — what cuts
//                        by one neighbour at a time could reach;
//   box around them      rows of the smallest (dy, dz) box holding those rows (what a centre
//                        would walk if it carried that box instead of its cuts);
//   painter in that box  the painter's rows inside that box (what the column walker would
//                        walk with the box as well as the cuts: box corners cost it nothing);
//   two largest cover    the same with only the two neighbours of largest radius (what a
//                        centre could carry in a 4-byte word: an offset and a Δ each);
//   26 bits cover        the same with all 26, each known only as "radius no smaller" (one
//                        bit each, 26 bits: a 4-byte word) and taken at the centre's radius;
//   own voxel            rows holding at least one voxel whose local thickness is the ball's
//                        own radius: rows no exact cut can drop.
// The centres are shared out with OpenMP: 128³ and 250³ take ~15 s on two cores, 512³ ~10
// minutes and 2 GB. Prints a table and writes JSON.
//
//   row_census_cpu [--sizes 128,250] [--json PATH]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/row_cuts.hpp"
#include "cpu/ball_centres.hpp"
#include "poreforge/edt.hpp"
#include "poreforge/generators.hpp"
#include "poreforge/local_thickness.hpp"

using namespace poreforge;

namespace {

struct Census {
  int n = 0;
  int64_t phase = 0, centres = 0, whole = 0, painter = 0, diagonal = 0, single_cover = 0, single_box = 0, box_painter = 0, top2_cover = 0, bits_cover = 0, own_voxel = 0;
};

// Largest a ≥ 0 with a² + dy² + dz² < r2 (the open lattice ball's chord), or −1.
int chord(uint32_t r2, int dy, int dz) {
  return int(detail::chord_half_width(detail::VoxelMetric{}, r2, 0, dy, dz));
}

Census census(int n) {
  Census c;
  c.n = n;
  const Shape shape{n, n, n};
  const Mask phase = generate_blobs(shape, 0.4, 1.0, 1);  // as bench_engine_cuda
  c.phase = count_phase(phase);
  const detail::VoxelMetric metric{};
  const auto d2 = squared_distance_voxels(phase, Boundary::open, Backend::cpu).values();
  const Volume<float> thickness = local_thickness(phase, Boundary::open, Backend::cpu);
  const detail::Geometry g = detail::Geometry::of(shape, Boundary::open);
  const auto centres = cpu::ball_centres(shape, Boundary::open, metric, d2);
  c.centres = int64_t(centres.size());
  auto at = [&](int64_t x, int64_t y, int64_t z) { return d2[std::size_t((z * n + y) * n + x)]; };
  int64_t whole = 0, painter = 0, diagonal = 0, single_cover = 0, single_box = 0, box_painter = 0, top2_cover = 0, bits_cover = 0,
          own_voxel = 0;
#pragma omp parallel for schedule(dynamic, 256) \
    reduction(+ : whole, painter, diagonal, single_cover, single_box, box_painter, top2_cover, bits_cover, own_voxel)
  for (std::size_t k = 0; k < centres.size(); ++k) {
    const uint32_t r2 = centres[k].r2;
    const int64_t i = centres[k].index;
    const int64_t x = i % n, y = (i / n) % n, z = i / (int64_t(n) * n);
    const float radius = metric.radius(r2);
    const detail::RowCut cut = detail::row_cut<detail::VoxelMetric>(d2.data(), i, x, y, z, g);
    const detail::RowBox box = detail::box_of(metric, r2, g, cut, int(y), int(z));
    // The yz-diagonal thresholds (kNoCut: none).
    int threshold[4];
    for (int d = 0; d < 4; ++d) {
      threshold[d] = detail::kNoCut;
      const int64_t yy = y + ((d & 1) ? 1 : -1), zz = z + ((d & 2) ? 1 : -1);
      if (yy < 0 || yy >= n || zz < 0 || zz >= n) continue;
      const uint32_t other = at(x, yy, zz);
      if (other == 0 || other < r2) continue;
      const int64_t delta = int64_t(other) - int64_t(r2);
      threshold[d] = delta == 0 ? 2 : int(-((delta - 2) >> 1));
    }
    // The neighbours of no smaller radius, and the two largest of them (first found on ties).
    struct Near { int ex = 0, ey = 0, ez = 0; uint32_t r2 = 0; };
    std::vector<Near> near;
    for (int ez = -1; ez <= 1; ++ez)
      for (int ey = -1; ey <= 1; ++ey)
        for (int ex = -1; ex <= 1; ++ex) {
          if (!ex && !ey && !ez) continue;
          const int64_t xx = x + ex, yy = y + ey, zz = z + ez;
          if (xx < 0 || yy < 0 || zz < 0 || xx >= n || yy >= n || zz >= n) continue;
          const uint32_t other = at(xx, yy, zz);
          if (other != 0 && other >= r2) near.push_back({ex, ey, ez, other});
        }
    std::vector<Near> largest = near;
    std::stable_sort(largest.begin(), largest.end(), [](const Near& a, const Near& b) { return a.r2 > b.r2; });
    if (largest.size() > 2) largest.resize(2);
    const int reach = int(std::sqrt(double(r2))) + 1;
    int open_y0 = reach + 1, open_y1 = -reach - 1, open_z0 = reach + 1, open_z1 = -reach - 1;  // the box
    for (int dz = -reach; dz <= reach; ++dz)
      for (int dy = -reach; dy <= reach; ++dy) {
        const int w = chord(r2, dy, dz);
        if (w < 0 || y + dy < 0 || y + dy >= n || z + dz < 0 || z + dz >= n) continue;
        ++whole;
        // The painter: inside its box, and the chord not emptied by the x-cuts.
        int from = 0, to = 0;
        if (dy >= box.y0 && dy <= box.y1 && dz >= box.z0 && dz <= box.z1 && detail::clip_chord(w, box.x0, box.x1, from, to)) {
          ++painter;
          bool taken = false;
          for (int d = 0; d < 4; ++d)
            taken |= threshold[d] != detail::kNoCut && ((d & 1) ? dy : -dy) + ((d & 2) ? dz : -dz) >= threshold[d];
          diagonal += !taken;
        }
        // One neighbour ball that holds the row whole: any of the 26, or one of the top two.
        auto holds = [&](int ex, int ey, int ez, uint32_t other) {
          if (chord(other, dy - ey, dz - ez) < w + std::abs(ex)) return false;
          return other != r2 || (dy - ey) * (dy - ey) + (dz - ez) * (dz - ez) + ex * ex < dy * dy + dz * dz;
        };
        bool top_covers = false, covered = false, bit_covered = false;
        for (const Near& t : largest) top_covers |= holds(t.ex, t.ey, t.ez, t.r2);
        top2_cover += !top_covers;
        for (const Near& t : near) {
          covered |= holds(t.ex, t.ey, t.ez, t.r2);
          bit_covered |= holds(t.ex, t.ey, t.ez, r2);
        }
        single_cover += !covered;
        if (!covered) {
          open_y0 = std::min(open_y0, dy), open_y1 = std::max(open_y1, dy);
          open_z0 = std::min(open_z0, dz), open_z1 = std::max(open_z1, dz);
        }
        bits_cover += !bit_covered;
        // A voxel of its own.
        const int64_t row = ((z + dz) * n + (y + dy)) * n;
        bool own = false;
        for (int64_t dx = std::max<int64_t>(-w, -x); dx <= std::min<int64_t>(w, n - 1 - x) && !own; ++dx)
          own = thickness[std::size_t(row + x + dx)] == radius;
        own_voxel += own;
      }
    if (open_y0 <= open_y1) {
      single_box += int64_t(open_y1 - open_y0 + 1) * (open_z1 - open_z0 + 1);
      // What the column walker would walk with that box as well as its cuts: the painter's
      // rows inside it.
      for (int dz = std::max(open_z0, box.z0); dz <= std::min(open_z1, box.z1); ++dz)
        for (int dy = std::max(open_y0, box.y0); dy <= std::min(open_y1, box.y1); ++dy) {
          int from = 0, to = 0;
          box_painter += detail::clip_chord(chord(r2, dy, dz), box.x0, box.x1, from, to);
        }
    }
  }
  c.whole = whole, c.painter = painter, c.diagonal = diagonal, c.single_cover = single_cover, c.top2_cover = top2_cover;
  c.single_box = single_box, c.box_painter = box_painter, c.bits_cover = bits_cover;
  c.own_voxel = own_voxel;
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes{128, 250};
  std::string json = "row_census_cpu.json";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--sizes") {
      sizes.clear();
      std::stringstream ss(argv[i + 1]);
      for (std::string item; std::getline(ss, item, ',');) sizes.push_back(std::stoi(item));
    } else if (a == "--json") {
      json = argv[i + 1];
    } else {
      std::fprintf(stderr, "usage: row_census_cpu [--sizes 128,250] [--json PATH]\n");
      return 2;
    }
  }
  std::vector<Census> rows;
  std::printf("rows that meet the volume, blobs p=0.4 open (%% of the whole balls' rows)\n");
  std::printf("%6s %10s %13s %20s %20s %20s %20s %20s %20s %20s %20s\n", "size", "centres", "whole balls", "painter",
              "+ yz-diagonals", "one of 26 covers", "box around them", "painter in that box", "two largest cover",
              "26 bits cover", "own voxel");
  for (int n : sizes) {
    const Census c = census(n);
    rows.push_back(c);
    auto pct = [&](int64_t v) { return 100.0 * double(v) / double(c.whole); };
    std::printf("%5d³ %10lld %13lld %12lld %5.1f%% %12lld %5.1f%% %12lld %5.1f%% %12lld %5.1f%% %12lld %5.1f%% %12lld %5.1f%% "
                "%12lld %5.1f%% %12lld %5.1f%%\n", n,
                static_cast<long long>(c.centres), static_cast<long long>(c.whole), static_cast<long long>(c.painter),
                pct(c.painter), static_cast<long long>(c.diagonal), pct(c.diagonal),
                static_cast<long long>(c.single_cover), pct(c.single_cover), static_cast<long long>(c.single_box),
                pct(c.single_box), static_cast<long long>(c.box_painter), pct(c.box_painter),
                static_cast<long long>(c.top2_cover),
                pct(c.top2_cover), static_cast<long long>(c.bits_cover), pct(c.bits_cover),
                static_cast<long long>(c.own_voxel), pct(c.own_voxel));
    std::fflush(stdout);
  }
  std::ofstream out(json);
  out << "{\n  \"benchmark\": \"row_census_cpu\",\n  \"volume\": \"blobs porosity 0.4, blobiness 1, seed 1, open\",\n"
         "  \"cases\": [\n";
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const Census& c = rows[k];
    out << "    {\"size\": " << c.n << ", \"phase_voxels\": " << c.phase << ", \"centres\": " << c.centres
        << ", \"rows_whole_balls\": " << c.whole << ", \"rows_painter\": " << c.painter
        << ", \"rows_after_yz_diagonals\": " << c.diagonal << ", \"rows_not_covered_by_one_of_26\": " << c.single_cover
        << ", \"rows_in_the_box_around_those\": " << c.single_box
        << ", \"painter_rows_in_that_box\": " << c.box_painter
        << ", \"rows_not_covered_by_the_two_largest\": " << c.top2_cover
        << ", \"rows_not_covered_by_26_bits\": " << c.bits_cover
        << ", \"rows_with_own_voxel\": " << c.own_voxel << "}" << (k + 1 < rows.size() ? "," : "") << "\n";
  }
  out << "  ]\n}\n";
  std::printf("wrote %s\n", json.c_str());
  return 0;
}
