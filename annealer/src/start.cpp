#include "poreforge/annealer/start.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <queue>

#include "poreforge/annealer/connectivity.hpp"
#include "poreforge/annealer/philox.hpp"
#include "poreforge/edt.hpp"
#include "poreforge/error.hpp"
#include "poreforge/evaluator.hpp"
#include "poreforge/generators.hpp"
#include "poreforge/local_thickness.hpp"
#include "poreforge/measures.hpp"
#include "poreforge/psd.hpp"
#include "poreforge/realism.hpp"

namespace poreforge::anneal {
namespace {

// Planting draws its positions from the run's seed on a lane of its own, apart from the
// annealer's proposal and acceptance lanes.
constexpr uint32_t kPlantLane = 0x504c4e54u;  // "PLNT"

// Half-widths in voxels of a ball of physical radius `radius` (0 along an axis of extent 1).
std::array<int64_t, 3> half_widths(double radius, Spacing spacing, Shape shape) {
  std::array<int64_t, 3> h{};
  for (int a = 0; a < 3; ++a)
    h[a] = shape.extent(a) > 1 ? static_cast<int64_t>(std::floor(radius / spacing.along(a))) : 0;
  return h;
}

// Calls visit(index) for every voxel of the open ball |x − c| < radius (physical units) that
// lies in the volume; under `periodic` positions wrap (the caller keeps balls narrower than the
// volume, so no voxel is visited twice).
template <class Visit>
void for_each_ball_voxel(const PlantedBall& ball, Spacing spacing, Shape shape, Boundary boundary, Visit visit) {
  const auto h = half_widths(ball.radius, spacing, shape);
  const double r2 = ball.radius * ball.radius;
  for (int64_t dz = -h[2]; dz <= h[2]; ++dz)
    for (int64_t dy = -h[1]; dy <= h[1]; ++dy)
      for (int64_t dx = -h[0]; dx <= h[0]; ++dx) {
        const double px = double(dx) * spacing.x, py = double(dy) * spacing.y, pz = double(dz) * spacing.z;
        if (px * px + py * py + pz * pz >= r2) continue;
        int64_t p[3] = {ball.centre[0] + dx, ball.centre[1] + dy, ball.centre[2] + dz};
        bool inside = true;
        for (int a = 0; a < 3; ++a) {
          const int64_t n = shape.extent(a);
          if (boundary == Boundary::periodic) p[a] = ((p[a] % n) + n) % n;
          else if (p[a] < 0 || p[a] >= n) inside = false;
        }
        if (inside) visit((p[2] * shape.ny + p[1]) * shape.nx + p[0]);
      }
}

int64_t count_inside(const PlantedBall& ball, Spacing spacing, Shape shape, Boundary boundary) {
  int64_t n = 0;
  for_each_ball_voxel(ball, spacing, shape, boundary, [&](int64_t) { ++n; });
  return n;
}

double psd_l1(const Mask& structure, const Targets& targets, Boundary boundary, Backend backend,
              std::vector<double>* fraction = nullptr) {
  auto psd = pore_size_distribution(structure, boundary, Bins::from_edges(targets.pore_edges), backend).fraction;
  const double l1 = pore_psd_l1(psd, targets);
  if (fraction) *fraction = std::move(psd);
  return l1;
}

// One plan (see plan_large_pores) for a start that keeps the share `kept` of its own pore
// voxels once the balls take theirs.
std::vector<PlantedBall> plan_round(const std::vector<double>& start_fraction, double kept, const Targets& targets,
                                    Shape shape, Spacing spacing, Boundary boundary, int64_t pore_voxels, uint64_t seed) {
  const auto& edges = targets.pore_edges;
  const int bins = static_cast<int>(std::min({targets.pore_psd.size(), edges.size() - 1, start_fraction.size()}));
  const Philox random(seed);
  std::vector<PlantedBall> balls;
  int64_t planted = 0;
  uint64_t draws = 0;
  unsigned corners_used = 0;  // partial balls go to different corners while there are any left
  auto plant = [&](PlantedBall& ball) {
    ball.inside = count_inside(ball, spacing, shape, boundary);
    if (ball.inside == 0 || planted + ball.inside > pore_voxels) return false;
    planted += ball.inside;
    balls.push_back(ball);
    return true;
  };
  for (int b = bins - 1; b >= 1; --b) {
    double deficit = (targets.pore_psd[b] - kept * start_fraction[b]) * double(pore_voxels);  // voxels missing
    if (deficit < 1) continue;
    const double radius = 0.5 * (edges[b] + edges[b + 1]);
    const auto h = half_widths(radius, spacing, shape);
    // A ball that wraps onto itself in a periodic volume is no longer a ball of this radius.
    bool fits = true;
    for (int a = 0; a < 3; ++a) fits &= boundary != Boundary::periodic || 2 * h[a] + 1 < shape.extent(a);
    if (!fits) continue;
    PlantedBall probe;  // a whole ball, to count its voxels
    probe.radius = radius;
    probe.centre = h;
    const int64_t full = count_inside(probe, spacing, Shape{2 * h[0] + 1, 2 * h[1] + 1, 2 * h[2] + 1}, Boundary::open);

    // A uniform position: anywhere when the volume tiles space, else wholly inside where it
    // has room (centred where it has none).
    auto anywhere = [&](const PhiloxBlock& w) {
      std::array<int64_t, 3> centre{};
      for (int a = 0; a < 3; ++a) {
        const int64_t n = shape.extent(a);
        const int64_t lo = boundary == Boundary::periodic ? 0 : h[a];
        const int64_t room = boundary == Boundary::periodic ? n : n - 2 * h[a];
        centre[a] = room > 0 ? lo + int64_t(Philox::unit(w[a]) * double(room)) : n / 2;
      }
      return centre;
    };
    // Whole balls while the bin still holds at least one.
    while (deficit >= double(full)) {
      const PhiloxBlock w = random.draw(draws++, kPlantLane);
      PlantedBall ball;
      ball.radius = radius;
      ball.centre = anywhere(w);
      if (!plant(ball)) break;
      deficit -= double(ball.inside);
    }
    if (deficit < 1) continue;

    // The rest: one more ball if it brings the bin nearer its target volume than none does.
    const PhiloxBlock w = random.draw(draws++, kPlantLane);
    PlantedBall best;
    best.radius = radius;
    double best_miss = deficit;  // planting nothing misses by the whole deficit
    unsigned corner = w[3] % 8;
    if (boundary == Boundary::open) {
      // In a corner chosen at random, the centre `depth` voxels in from each of its faces: from
      // an eighth of the ball inside (depth 0) to all of it.
      for (int k = 0; k < 8 && (corners_used >> corner & 1); ++k) corner = (corner + 1) % 8;
      const int64_t deepest = std::max({h[0], h[1], h[2]});
      for (int64_t depth = 0; depth <= deepest; ++depth) {
        PlantedBall ball;
        ball.radius = radius;
        for (int a = 0; a < 3; ++a) {
          const int64_t n = shape.extent(a);
          const int64_t in = std::min(n - 1, deepest > 0 ? (depth * h[a] + deepest / 2) / deepest : 0);
          ball.centre[a] = n == 1 ? 0 : (corner >> a & 1) ? n - 1 - in : in;
        }
        const double miss = std::abs(double(count_inside(ball, spacing, shape, boundary)) - deficit);
        if (miss < best_miss) {
          best_miss = miss;
          best = ball;
        }
      }
    } else if (std::abs(double(full) - deficit) < deficit) {
      best.centre = anywhere(w);
      best_miss = 0;
    }
    if (best_miss < deficit && plant(best) && boundary == Boundary::open) corners_used |= 1u << corner;
  }
  return balls;
}

// The structure's largest inscribed balls, one per pore: pore voxels by decreasing distance
// to the other phase, each kept unless it lies inside a ball already kept (in voxels along
// each axis, a box test: cheap, and only used to spread the candidates), at most `count`.
std::vector<std::array<int64_t, 3>> largest_ball_centres(const Volume<float>& distance, int count) {
  const Shape s = distance.shape();
  std::vector<int64_t> order;
  for (int64_t i = 0; i < s.voxels(); ++i)
    if (distance[std::size_t(i)] > 0) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return distance[std::size_t(a)] != distance[std::size_t(b)] ? distance[std::size_t(a)] > distance[std::size_t(b)] : a < b;
  });
  const Spacing sp = distance.spacing();
  std::vector<std::array<int64_t, 3>> centres;
  std::vector<double> radii;
  for (int64_t i : order) {
    if (int(centres.size()) == count) break;
    const std::array<int64_t, 3> c{i % s.nx, (i / s.nx) % s.ny, i / (s.nx * s.ny)};
    bool covered = false;
    for (std::size_t k = 0; k < centres.size() && !covered; ++k) {
      covered = true;
      for (int a = 0; a < 3; ++a) covered &= double(std::abs(c[a] - centres[k][a])) * sp.along(a) < radii[k];
    }
    if (covered) continue;
    centres.push_back(c);
    radii.push_back(distance[std::size_t(i)]);
  }
  return centres;
}

// A well-mixed 64-bit order for ties.
uint64_t tie_order(uint64_t seed, uint64_t i) { return mix64(seed * golden_gamma + i + 0x632BE59BD9B4E019ull); }

// `structure` with `ball` made pore and as many of its other pore voxels made solid, the
// thinnest first (`thickness`: the structure's local thickness), ties by tie_order; nothing
// when the structure has too few pore voxels outside the ball to pay with.
std::optional<Mask> plant_and_pay(const Mask& structure, const Volume<float>& thickness, const PlantedBall& ball,
                                  Boundary boundary, uint64_t seed, int64_t* added) {
  const Shape shape = structure.shape();
  Mask out = structure;
  std::vector<uint8_t> in_ball(std::size_t(shape.voxels()), 0);
  int64_t made_pore = 0;
  for_each_ball_voxel(ball, structure.spacing(), shape, boundary, [&](int64_t i) {
    in_ball[std::size_t(i)] = 1;
    if (!out[std::size_t(i)]) out[std::size_t(i)] = 1, ++made_pore;
  });
  std::vector<int64_t> payers;
  for (int64_t i = 0; i < shape.voxels(); ++i)
    if (structure[std::size_t(i)] && !in_ball[std::size_t(i)]) payers.push_back(i);
  if (made_pore > int64_t(payers.size())) return std::nullopt;
  std::nth_element(payers.begin(), payers.begin() + made_pore, payers.end(), [&](int64_t a, int64_t b) {
    const float ta = thickness[std::size_t(a)], tb = thickness[std::size_t(b)];
    return ta != tb ? ta < tb : tie_order(seed, uint64_t(a)) < tie_order(seed, uint64_t(b));
  });
  for (int64_t k = 0; k < made_pore; ++k) out[std::size_t(payers[std::size_t(k)])] = 0;
  if (added) *added = made_pore;
  return out;
}

}  // namespace

RefinedStart plant_into_structure(const Mask& structure, const Targets& targets, Boundary boundary, uint64_t seed,
                                  Backend backend, const std::function<void(const RefinedStart&)>& progress) {
  validate_shape(structure.shape());
  constexpr int kMaxBalls = 16, kCentres = 32;
  constexpr double kShortBy = 0.003, kGain = 0.002;
  const Shape shape = structure.shape();
  const Spacing spacing = structure.spacing();
  const auto& edges = targets.pore_edges;
  RefinedStart r;
  r.structure = structure;
  std::vector<double> fraction;
  r.pore_psd_l1_before = r.pore_psd_l1_after = psd_l1(structure, targets, boundary, backend, &fraction);
  const int bins = static_cast<int>(std::min({targets.pore_psd.size(), edges.size() - 1, fraction.size()}));
  const Bins bin_set = Bins::from_edges(edges);
  std::exception_ptr failure;
  for (int round = 0; round < kMaxBalls; ++round) {
    const Volume<float> thickness = local_thickness(r.structure, boundary, backend);
    const auto centres = largest_ball_centres(distance_transform(r.structure, boundary, backend), kCentres);
    std::vector<PlantedBall> candidates;
    for (int b = bins / 2; b < bins; ++b) {
      if (targets.pore_psd[std::size_t(b)] - fraction[std::size_t(b)] < kShortBy) continue;
      PlantedBall ball;
      ball.radius = 0.5 * (edges[std::size_t(b)] + edges[std::size_t(b) + 1]);
      const auto h = half_widths(ball.radius, spacing, shape);
      bool fits = true;  // a ball that wraps onto itself is no longer a ball of this radius
      for (int a = 0; a < 3; ++a) fits &= boundary != Boundary::periodic || 2 * h[a] + 1 < shape.extent(a);
      if (!fits) continue;
      for (const auto& c : centres) {
        ball.centre = c;
        candidates.push_back(ball);
      }
      if (boundary != Boundary::open) continue;
      // Corners and edges, the centre `depth` voxels in from the faces it is near.
      const int64_t deepest = std::max({h[0], h[1], h[2]}), step = std::max<int64_t>(1, deepest / 7);
      auto inward = [&](int a, int64_t depth, bool high) {
        const int64_t n = shape.extent(a);
        if (n == 1) return int64_t(0);
        const int64_t in = std::min(n - 1, deepest > 0 ? (depth * h[a] + deepest / 2) / deepest : 0);
        return high ? n - 1 - in : in;
      };
      for (int64_t depth = 0; depth <= deepest; depth += step) {
        for (int corner = 0; corner < 8; ++corner) {
          for (int a = 0; a < 3; ++a) ball.centre[a] = inward(a, depth, corner >> a & 1);
          candidates.push_back(ball);
        }
        for (int along = 0; along < 3; ++along)  // the edges parallel to axis `along`
          for (int side = 0; side < 4; ++side)
            for (int quarter = 1; quarter <= 3; ++quarter) {
              int bit = 0;
              for (int a = 0; a < 3; ++a)
                ball.centre[a] = a == along ? shape.extent(a) * quarter / 4 : inward(a, depth, side >> bit++ & 1);
              candidates.push_back(ball);
            }
      }
    }
    if (candidates.empty()) break;
    // Thousands of candidates, each a few thousand voxels changed: scored on the CPU, one
    // evaluator a thread, whatever the run's backend (a device evaluator takes changes a voxel
    // at a time; the counts are exact on either backend, so the start is the same on both).
    std::vector<double> l1(candidates.size(), std::numeric_limits<double>::infinity());
    const auto score = [&](PsdEvaluator& evaluator, std::size_t k) {
      const std::optional<Mask> m = plant_and_pay(r.structure, thickness, candidates[k], boundary, seed, nullptr);
      if (!m) return;
      std::vector<int64_t> changed;
      for (int64_t i = 0; i < shape.voxels(); ++i)
        if ((*m)[std::size_t(i)] != r.structure[std::size_t(i)]) changed.push_back(i);
      for (int64_t i : changed) evaluator.set(i, (*m)[std::size_t(i)]);
      try {
        l1[k] = pore_psd_l1(psd_from_counts(evaluator.counts(), bin_set).fraction, targets);
      } catch (const InputError&) {  // e.g. a ball over every solid voxel: not a candidate
      }
      for (int64_t i : changed) evaluator.set(i, r.structure[std::size_t(i)]);
    };
#pragma omp parallel
    {
      // An exception may not leave an OpenMP region: the first one is kept and rethrown.
      std::unique_ptr<PsdEvaluator> evaluator;
      try {
        evaluator = make_psd_evaluator(r.structure, boundary, bin_set, Backend::cpu);
      } catch (...) {
#pragma omp critical(plant_into_structure_error)
        if (!failure) failure = std::current_exception();
      }
#pragma omp for schedule(dynamic)
      for (std::size_t k = 0; k < candidates.size(); ++k) {
        if (!evaluator) continue;
        try {
          score(*evaluator, k);
        } catch (...) {
#pragma omp critical(plant_into_structure_error)
          if (!failure) failure = std::current_exception();
        }
      }
    }
    if (failure) std::rethrow_exception(failure);
    r.candidates_tried += int(candidates.size());
    const std::size_t best = std::size_t(std::min_element(l1.begin(), l1.end()) - l1.begin());
    if (!(l1[best] < r.pore_psd_l1_after - kGain)) break;
    int64_t added = 0;
    PlantedBall kept = candidates[best];
    r.structure = *plant_and_pay(r.structure, thickness, kept, boundary, seed, &added);  // scored, so it paid
    kept.inside = count_inside(kept, spacing, shape, boundary);
    r.balls.push_back(kept);
    r.planted_voxels += added;
    r.pore_psd_l1_after = psd_l1(r.structure, targets, boundary, backend, &fraction);
    if (progress) progress(r);
  }
  return r;
}

std::vector<PlantedBall> plan_large_pores(const std::vector<double>& start_fraction, const Targets& targets,
                                          Shape shape, Spacing spacing, Boundary boundary, int64_t pore_voxels,
                                          uint64_t seed) {
  // Planted voxels take part of the pore count from the start, whose own bins shrink in
  // proportion: the plan is made three times, each for the share the last one left.
  std::vector<PlantedBall> balls;
  for (int round = 0; round < 3; ++round) {
    int64_t planted = 0;
    for (const PlantedBall& b : balls) planted += b.inside;
    const double kept = pore_voxels > 0 ? 1 - double(planted) / double(pore_voxels) : 1.0;
    balls = plan_round(start_fraction, kept, targets, shape, spacing, boundary, pore_voxels, seed);
  }
  return balls;
}

ClusterSample sample_clusters(const Mask& reference, Shape sub, int count, uint64_t seed, Backend backend) {
  ClusterSample out;
  auto add = [&](const Mask& pore_mask, double weight) {
    const ComponentLabels c = label_components(pore_mask, Adjacency::face6, backend);
    if (c.count == 0) return;
    const uint32_t largest = largest_component(c);
    const int64_t pore = std::accumulate(c.sizes.begin(), c.sizes.end(), int64_t(0));
    out.largest_share += weight * double(c.sizes[largest - 1]) / double(pore);
    out.others += weight * double(c.count - 1);
    const ComponentLabels joined = label_components(pore_mask, Adjacency::full26, backend);
    out.touching += weight * double(c.count - joined.count);
    // Which clusters touch: in each 26-connected cluster the largest 6-connected one stands
    // alone and the rest join it. Drawn with their sizes, the sizes that touch are the
    // sample's — a pack's specks at grain contacts touch, its larger isolated pores do not.
    std::vector<uint32_t> joined_label(c.sizes.size(), 0);  // each 6-connected cluster's 26-connected one
    for (int64_t i = 0; i < pore_mask.voxels(); ++i)
      if (const uint32_t l = c.labels[std::size_t(i)]; l && !joined_label[l - 1]) joined_label[l - 1] = joined.labels[std::size_t(i)];
    std::vector<int64_t> head(std::size_t(joined.count), 0);  // per 26-connected cluster: its largest 6-connected one's label
    for (std::size_t k = 0; k < c.sizes.size(); ++k) {
      int64_t& h = head[joined_label[k] - 1];
      if (!h || c.sizes[k] > c.sizes[std::size_t(h - 1)] || k + 1 == largest) h = int64_t(k + 1);
    }
    for (std::size_t k = 0; k < c.sizes.size(); ++k)
      if (k + 1 != largest) {
        out.other_sizes.push_back(c.sizes[k]);
        out.other_touching.push_back(head[joined_label[k] - 1] != int64_t(k + 1));
      }
    // Their shapes, in the same order: each cluster's bounding box, then its voxels at their
    // places in it; the box faces each meets are the labelling's.
    const Shape s = pore_mask.shape();
    std::vector<std::array<int64_t, 6>> box(c.sizes.size(), {s.nx, s.ny, s.nz, -1, -1, -1});  // low, high x, y, z
    for (int64_t i = 0; i < s.voxels(); ++i)
      if (const uint32_t l = c.labels[std::size_t(i)]; l && l != largest) {
        const int64_t xyz[3] = {i % s.nx, (i / s.nx) % s.ny, i / (s.nx * s.ny)};
        for (std::size_t a = 0; a < 3; ++a) {
          box[l - 1][a] = std::min(box[l - 1][a], xyz[a]);
          box[l - 1][a + 3] = std::max(box[l - 1][a + 3], xyz[a]);
        }
      }
    std::vector<std::size_t> slot(c.sizes.size(), 0);  // label − 1 → its index in other_shapes
    for (std::size_t k = 0; k < c.sizes.size(); ++k)
      if (k + 1 != largest) {
        slot[k] = out.other_shapes.size();
        ClusterShape& shape = out.other_shapes.emplace_back();
        for (std::size_t a = 0; a < 3; ++a) shape.extent[a] = box[k][a + 3] - box[k][a] + 1;
        shape.faces = c.faces[k];
      }
    for (int64_t i = 0; i < s.voxels(); ++i)
      if (const uint32_t l = c.labels[std::size_t(i)]; l && l != largest) {
        const auto& low = box[l - 1];
        ClusterShape& shape = out.other_shapes[slot[l - 1]];
        shape.voxels.push_back((i % s.nx - low[0]) +
                               shape.extent[0] * ((i / s.nx) % s.ny - low[1] + shape.extent[1] * (i / (s.nx * s.ny) - low[2])));
      }
  };
  const Shape whole = reference.shape();
  if (sub.nx <= whole.nx && sub.ny <= whole.ny && sub.nz <= whole.nz && count > 0) {
    for (const Shape& corner : subvolume_corners(whole, sub, count, seed)) add(crop(reference, corner, sub), 1.0 / count);
  } else {  // the domain is larger than the reference: its clusters, as many per voxel
    add(reference, 1.0);
    out.others *= double(sub.voxels()) / double(whole.voxels());
    out.touching *= double(sub.voxels()) / double(whole.voxels());
  }
  return out;
}

Mask connect_largest_cluster(const Mask& start, const std::vector<float>& field, const ClusterSample& clusters,
                             uint64_t seed, Backend backend, ConnectedStart* report) {
  const Shape shape = start.shape();
  if (field.size() != std::size_t(shape.voxels()))
    throw InputError("connect_largest_cluster: " + std::to_string(field.size()) + " field values for a " +
                     to_string(shape) + " volume");
  ComponentLabels c = label_components(start, Adjacency::face6, backend);
  ConnectedStart r;
  const int64_t pore = std::accumulate(c.sizes.begin(), c.sizes.end(), int64_t(0));
  if (c.count == 0) {
    if (report) *report = r;
    return start;
  }
  const uint32_t largest = largest_component(c);
  r.largest_share_before = r.largest_share_after = double(c.sizes[largest - 1]) / double(pore);
  const int64_t want = std::min<int64_t>(pore, std::llround(std::clamp(clusters.largest_share, 0.0, 1.0) * double(pore)));
  const bool place = !clusters.other_sizes.empty();
  if (c.sizes[largest - 1] >= want && !place) {
    if (report) *report = r;
    return start;
  }
  const int64_t n = shape.voxels();
  const int64_t stride[3] = {1, shape.nx, shape.nx * shape.ny};
  auto for_faces = [&](int64_t v, auto&& f) {
    const int64_t xyz[3] = {v % shape.nx, (v / shape.nx) % shape.ny, v / (shape.nx * shape.ny)};
    for (int a = 0; a < 3; ++a) {
      if (xyz[a] > 0) f(v - stride[a]);
      if (xyz[a] + 1 < shape.extent(a)) f(v + stride[a]);
    }
  };
  // Clusters are kept apart by their 26-neighbourhoods: touching at an edge or a corner they
  // would be one cluster to a 26-connected count (compare's, and the Euler characteristic's).
  const int64_t extent[3] = {shape.nx, shape.ny, shape.nz};
  auto for_cube = [&](int64_t v, auto&& f) { for_each_in_cube(extent, v, f); };
  Mask out = start;
  std::vector<uint32_t>& owner = c.labels.values();  // 0 solid; the largest's label; other clusters' labels
  int64_t others_total = pore - c.sizes[largest - 1];
  int64_t largest_size = c.sizes[largest - 1];
  if (place) {
    // Every other cluster goes; the reference's own small clusters take their place: as many
    // as its sub-volumes hold on average, sizes (and shapes) drawn from theirs, each placed in
    // the solid, none touching another (nor the largest) even at an edge or a corner — but
    // those whose sampled cluster touched another at edges or corners alone meet the largest
    // so (never across a face).
    for (int64_t i = 0; i < n; ++i)
      if (owner[std::size_t(i)] && owner[std::size_t(i)] != largest) {
        owner[std::size_t(i)] = 0;
        out[std::size_t(i)] = 0;
      }
    r.clusters_dropped = c.count - 1;
    others_total = 0;
    // The sizes first, drawn from the sample's: as many as it holds clusters on average. A
    // draw that would take the total past half again the pore the sample's share leaves the
    // others is drawn again (up to 8 times; a heavy tail's one huge cluster in a small box),
    // and the largest gives up what they take: the count is the sample's (but for draws that
    // found no fit); cut to the share as they are drawn, the last ones would find no pore left
    // and the count would fall short (the largest of them go after the draws instead, below).
    const Philox random(seed ^ 0x434c5354u);  // "CLST": a lane of its own
    uint64_t draw = 0;
    const int64_t placing = std::llround(clusters.others);
    const int64_t room = (pore - want) * 3 / 2;
    const bool with_shapes = clusters.other_shapes.size() == clusters.other_sizes.size();
    const bool with_touching = clusters.other_touching.size() == clusters.other_sizes.size();
    // A set of the sample's clusters, each named by its index there (its size, shape and
    // whether it touched come with it).
    struct Drawn {
      std::vector<std::size_t> picks;
      int64_t total = 0;
    };
    auto draw_set = [&] {
      Drawn d;
      for (int64_t k = 0; k < placing; ++k) {
        int64_t size = 0;
        std::size_t pick = 0;
        for (int tries = 0; tries < 8 && (size == 0 || d.total + size > room); ++tries) {
          const PhiloxBlock w = random.draw(draw++, 0);
          pick = std::size_t(Philox::below(w[0], w[1], clusters.other_sizes.size()));
          size = clusters.other_sizes[pick];
        }
        if (d.total + size > room) continue;
        d.picks.push_back(pick);
        d.total += size;
      }
      // Never the largest below the sample's average share: the largest drawn go first while
      // it would (a heavy tail's one huge isolated cluster, which most sub-volumes lack), so
      // the count stays the sample's. A refined start's largest below every real sub-volume's
      // would stay there: the connected moves keep it.
      auto size_of = [&](std::size_t pick) { return clusters.other_sizes[pick]; };
      std::vector<std::size_t> order(d.picks.size());
      std::iota(order.begin(), order.end(), std::size_t(0));
      std::stable_sort(order.begin(), order.end(),
                       [&](std::size_t a, std::size_t b) { return size_of(d.picks[a]) > size_of(d.picks[b]); });
      std::vector<uint8_t> drop(d.picks.size(), 0);
      for (std::size_t k = 0; k < order.size() && d.total > pore - want; ++k) {
        drop[order[k]] = 1;
        d.total -= size_of(d.picks[order[k]]);
      }
      std::size_t kept = 0;
      for (std::size_t k = 0; k < d.picks.size(); ++k)
        if (!drop[k]) d.picks[kept++] = d.picks[k];
      d.picks.resize(kept);
      return d;
    };
    // Of a few sets drawn, the one whose total comes nearest what the sample's average share
    // leaves: one set's total, capped there, falls below it by as much as a heavy tail makes
    // it, and the largest's share would sit above the sample's more often than not.
    Drawn chosen = draw_set();
    for (int set = 1; set < 16 && chosen.total < pore - want; ++set)
      if (Drawn d = draw_set(); d.total > chosen.total) chosen = std::move(d);
    const std::vector<std::size_t>& picks = chosen.picks;
    const int64_t drawn_total = chosen.total;
    // A largest holding more than the placed clusters leave gives the excess up, its voxels
    // where the field is highest first (the pore's edges, away from its valleys), each only
    // where it splits the largest nowhere and starts no solid cluster (connectivity.hpp's test
    // for a swap's leaving voxel).
    const int64_t keep = pore - drawn_total;
    if (largest_size > keep) {
      std::vector<int64_t> edge;
      for (int64_t i = 0; i < n; ++i)
        if (owner[std::size_t(i)] == largest) edge.push_back(i);
      std::stable_sort(edge.begin(), edge.end(),
                       [&](int64_t a, int64_t b) { return field[std::size_t(a)] > field[std::size_t(b)]; });
      uint8_t* voxels = out.values().data();
      // A voxel refused now may pass once its neighbours have gone: a few passes.
      for (int pass = 0; pass < 4 && largest_size > keep; ++pass)
        for (std::size_t k = 0; k < edge.size() && largest_size > keep; ++k) {
          const int64_t v = edge[k];
          if (!voxels[v] || !may_leave_pore(voxels, extent, v)) continue;
          voxels[v] = 0;
          owner[std::size_t(v)] = 0;
          --largest_size;
          ++r.voxels_peeled;
        }
    }
    // What the largest leaves (it may hold more still, where peeling it would split it: the
    // last sizes then find no room and their pore goes back to it below).
    int64_t budget = pore - largest_size;
    const int64_t drawn = int64_t(picks.size());
    const int64_t touching = std::clamp<int64_t>(std::llround(clusters.touching), 0, drawn);
    uint32_t next_label = uint32_t(c.count) + 1;
    for (int64_t k = 0; k < drawn && budget > 0; ++k) {
      const std::size_t pick = picks[std::size_t(k)];
      const int64_t size = clusters.other_sizes[pick];
      if (size > budget) continue;
      // A cluster walled in by the others before it reaches its size goes again from another
      // origin: the sizes placed are the sample's, not cut short (a cut one would be a speck).
      const uint32_t label = next_label;
      // As the sampled cluster it copies did; without the sample's flags, spread evenly:
      // the k-th touches when the running share passes those placed touching so far (one that
      // found no room hands its turn on).
      const bool touch = with_touching ? bool(clusters.other_touching[pick]) : (k + 1) * touching / drawn > r.clusters_touching;
      std::vector<int64_t> grown;
      // Apart from every other cluster, but one placed touching may meet the largest at edges
      // and corners (not across a face).
      auto apart = [&](int64_t v) {
        bool ok = true;
        for_cube(v, [&](int64_t u) {
          const uint32_t l = owner[std::size_t(u)];
          ok = ok && (!l || l == label || (touch && l == largest));
        });
        if (touch) for_faces(v, [&](int64_t u) { ok = ok && owner[std::size_t(u)] != largest; });
        return ok;
      };
      // The sample's cluster as it lies, where it fits: the shape of a pore pressed between
      // grains (sheets along contacts, tubes along edges), where one grown compact would be a
      // ball no rock holds. Mirrored along any axis (the axes, and so the anisotropy, stay);
      // one the sample's box cut lies against the same faces of this one. One that fits
      // nowhere is not placed: its pore stays with the largest, and a turn to touch it passes
      // to the next.
      const ClusterShape* sampled = with_shapes ? &clusters.other_shapes[pick] : nullptr;
      if (sampled) {
        std::array<int64_t, 3> room_along{};
        bool fits = int64_t(sampled->voxels.size()) == size;
        for (int a = 0; a < 3; ++a) {
          const int64_t e = sampled->extent[std::size_t(a)];
          room_along[std::size_t(a)] = e <= extent[a] ? extent[a] - e + 1 : 0;
          fits = fits && room_along[std::size_t(a)] > 0;
        }
        for (int tries = 0; fits && tries < 1024 && grown.empty(); ++tries) {
          const PhiloxBlock w = random.draw(draw++, 0), w2 = random.draw(draw++, 0);
          const uint32_t words[6] = {w[0], w[1], w[2], w[3], w2[0], w2[1]};
          const unsigned mirror = w2[2] & 7u;  // bit a: mirrored along axis a
          int64_t corner[3];
          for (int a = 0; a < 3; ++a) {
            corner[a] = int64_t(Philox::below(words[2 * a], words[2 * a + 1], uint64_t(room_along[std::size_t(a)])));
            const bool flip = mirror & (1u << a);
            if (sampled->faces & (1u << (2 * a + (flip ? 1 : 0)))) corner[a] = 0;
            else if (sampled->faces & (1u << (2 * a + (flip ? 0 : 1)))) corner[a] = extent[a] - sampled->extent[std::size_t(a)];
          }
          const int64_t ex = sampled->extent[0], ey = sampled->extent[1], ez = sampled->extent[2];
          auto at = [&](int64_t i) {
            int64_t p[3] = {i % ex, (i / ex) % ey, i / (ex * ey)};
            const int64_t e[3] = {ex, ey, ez};
            for (int a = 0; a < 3; ++a)
              if (mirror & (1u << a)) p[a] = e[a] - 1 - p[a];
            return (corner[0] + p[0]) + extent[0] * ((corner[1] + p[1]) + extent[1] * (corner[2] + p[2]));
          };
          bool clear = true, meets_largest = false;
          for (std::size_t j = 0; clear && j < sampled->voxels.size(); ++j) {
            const int64_t v = at(sampled->voxels[j]);
            clear = !owner[std::size_t(v)] && apart(v);
            if (touch) for_cube(v, [&](int64_t u) { meets_largest = meets_largest || owner[std::size_t(u)] == largest; });
          }
          if (!clear || meets_largest != touch) continue;
          for (int64_t i : sampled->voxels) {
            const int64_t v = at(i);
            owner[std::size_t(v)] = label;
            out[std::size_t(v)] = 1;
            grown.push_back(v);
          }
          ++r.clusters_as_sampled;
        }
      }
      for (int attempt = 0; !sampled && attempt < 8 && int64_t(grown.size()) < size; ++attempt) {
        for (int64_t v : grown) {
          owner[std::size_t(v)] = 0;
          out[std::size_t(v)] = 0;
        }
        grown.clear();
        int64_t origin = -1;
        for (int tries = 0; tries < 256 && origin < 0; ++tries) {
          const PhiloxBlock w = random.draw(draw++, 0);
          const int64_t v = int64_t(Philox::below(w[0], w[1], uint64_t(n)));
          // Apart: nothing in the 26-neighbourhood. Touching: the largest at edges or corners
          // only, nothing else there, and no pore across a face.
          bool clear = !owner[std::size_t(v)], meets_largest = false;
          for_cube(v, [&](int64_t u) {
            const uint32_t l = owner[std::size_t(u)];
            meets_largest = meets_largest || l == largest;
            clear = clear && (!l || (touch && l == largest));
          });
          if (touch) for_faces(v, [&](int64_t u) { clear = clear && !owner[std::size_t(u)]; });
          if (clear && meets_largest == touch) origin = v;
        }
        if (origin < 0) break;
        // Where no shape is known (the sample on another grid): grown nearest the origin
        // first, the field breaking ties, a compact pore. Along the field's valleys it would
        // creep round the largest at the one-voxel gap it must keep, a shell no rock has.
        const int64_t ox = origin % shape.nx, oy = (origin / shape.nx) % shape.ny, oz = origin / (shape.nx * shape.ny);
        auto priority = [&](int64_t v) {
          const int64_t dx = v % shape.nx - ox, dy = (v / shape.nx) % shape.ny - oy, dz = v / (shape.nx * shape.ny) - oz;
          return float(dx * dx + dy * dy + dz * dz) + 1e-3f * std::tanh(field[std::size_t(v)]);
        };
        using Entry = std::pair<float, int64_t>;
        std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> front;
        front.push({priority(origin), origin});
        while (int64_t(grown.size()) < size && !front.empty()) {
          const int64_t v = front.top().second;
          front.pop();
          if (owner[std::size_t(v)] || !apart(v)) continue;
          owner[std::size_t(v)] = label;
          out[std::size_t(v)] = 1;
          grown.push_back(v);
          for_faces(v, [&](int64_t u) {
            if (!owner[std::size_t(u)]) front.push({priority(u), u});
          });
        }
      }
      if (int64_t(grown.size()) < size) {  // no room for it: its voxels go to the largest below
        for (int64_t v : grown) {
          owner[std::size_t(v)] = 0;
          out[std::size_t(v)] = 0;
        }
        continue;
      }
      ++next_label;
      budget -= size;
      others_total += size;
      ++r.clusters_placed;
      if (touch) ++r.clusters_touching;
    }
  } else {
    // Drop the largest other clusters until the others fit in what the largest leaves: the
    // small ones (specks among them) stay, as a real sample's isolated pores do.
    std::vector<uint32_t> others;
    for (uint32_t k = 1; k <= uint32_t(c.count); ++k)
      if (k != largest) others.push_back(k);
    std::stable_sort(others.begin(), others.end(),
                     [&](uint32_t a, uint32_t b) { return c.sizes[a - 1] > c.sizes[b - 1]; });
    std::vector<uint8_t> dropped(std::size_t(c.count) + 1, 0);
    for (uint32_t k : others) {
      if (others_total <= pore - want) break;
      dropped[k] = 1;
      others_total -= c.sizes[k - 1];
      ++r.clusters_dropped;
    }
    for (int64_t i = 0; i < n; ++i) {
      uint32_t& l = owner[std::size_t(i)];
      if (l && dropped[l]) {
        out[std::size_t(i)] = 0;
        l = 0;
      }
    }
  }
  // Grow the largest cluster into the field's lowest solid voxels next to it (along its
  // valleys), never touching another cluster, until the pore count is the start's.
  int64_t deficit = pore - largest_size - others_total;
  auto touches_other = [&](int64_t v) {
    bool t = false;
    for_cube(v, [&](int64_t u) {
      const uint32_t l = owner[std::size_t(u)];
      t = t || (l != 0 && l != largest);
    });
    return t;
  };
  using Entry = std::pair<float, int64_t>;  // ties by index: the same start every time
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> front;
  auto offer = [&](int64_t u) {
    if (!out[std::size_t(u)] && !touches_other(u)) front.push({field[std::size_t(u)], u});
  };
  for (int64_t i = 0; i < n; ++i)
    if (owner[std::size_t(i)] == largest) for_faces(i, offer);
  while (deficit > 0 && !front.empty()) {
    const int64_t v = front.top().second;
    front.pop();
    if (out[std::size_t(v)]) continue;
    out[std::size_t(v)] = 1;
    owner[std::size_t(v)] = largest;
    --deficit;
    ++r.voxels_grown;
    for_faces(v, offer);
  }
  // Walled in by the other clusters (a degenerate start): the lowest values anywhere.
  if (deficit > 0) {
    std::vector<int64_t> order;
    for (int64_t i = 0; i < n; ++i)
      if (!out[std::size_t(i)]) order.push_back(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return field[std::size_t(a)] < field[std::size_t(b)]; });
    for (std::size_t k = 0; deficit > 0 && k < order.size(); ++k, --deficit) out[std::size_t(order[k])] = 1;
  }
  r.largest_share_after = cluster_statistics(label_components(out, Adjacency::face6, backend)).largest_share;
  if (report) *report = r;
  return out;
}

std::array<double, 3> grain_stretch(const Targets& targets, const Spacing& spacing) {
  std::array<double, 3> mean{};
  for (int a = 0; a < 3; ++a) {
    const std::vector<double>& f = targets.chords[std::size_t(a)][0];
    double chords = 0, length = 0;
    for (std::size_t l = 1; l < f.size(); ++l) {
      chords += f[l];
      length += double(l) * f[l];
    }
    if (!(chords > 0)) return {1.0, 1.0, 1.0};
    mean[std::size_t(a)] = length / chords * targets.chord_spacing.along(a) / spacing.along(a);
  }
  const double geometric = std::cbrt(mean[0] * mean[1] * mean[2]);
  std::array<double, 3> stretch{};
  for (int a = 0; a < 3; ++a) stretch[std::size_t(a)] = std::clamp(mean[std::size_t(a)] / geometric, 0.1, 10.0);
  return stretch;
}

std::vector<float> grain_field(Shape shape, double radius, double porosity, uint64_t seed, Backend backend,
                               double radius_spread, const std::array<double, 3>& stretch) {
  const Mask pack = generate_spheres(shape, porosity, radius, seed, radius_spread, stretch);
  const int64_t pore = count_phase(pack);
  if (pore == 0 || pore == shape.voxels()) {
    char r[32];
    std::snprintf(r, sizeof r, "%g", radius);
    throw InputError(std::string("grains of radius ") + r + " voxels leave " + (pore ? "no solid" : "no pore") +
                     " in a " + to_string(shape) + " domain: take a radius well below the domain's extent");
  }
  const Volume<float> in_pore = distance_transform(pack, Boundary::periodic, backend);
  const Volume<float> in_solid = distance_transform(complement(pack), Boundary::periodic, backend);
  const Philox random(seed ^ 0x47524e53u);  // "GRNS": ties at equal distances, broken the same way every time
  std::vector<float> field(std::size_t(shape.voxels()));
  for (int64_t i = 0; i < shape.voxels(); ++i) {
    const float jitter = float(Philox::unit(random.draw(uint64_t(i), 0)[0])) * 1e-3f;
    field[std::size_t(i)] = (pack[std::size_t(i)] ? -in_pore[std::size_t(i)] : in_solid[std::size_t(i)]) + jitter;
  }
  return field;
}

namespace {

// A start from a field whose lowest values are pore (blobs or grains): exactly the target's
// pore count, with planting and connecting as asked; `c` gets the figures.
Mask start_from_field(std::vector<float>& field, Shape shape, Spacing spacing, const Targets& targets,
                      Boundary boundary, bool plant_large_pores, uint64_t seed, Backend backend, BlobCandidate& c,
                      const ClusterSample* clusters);

}  // namespace

Mask make_grain_start(Shape shape, Spacing spacing, const Targets& targets, Boundary boundary, double radius,
                      uint64_t seed, Backend backend, BlobCandidate* report, const ClusterSample* clusters,
                      double radius_spread, const std::optional<std::array<double, 3>>& stretch) {
  validate_shape(shape);
  validate_spacing(spacing);
  BlobCandidate c;
  c.radius = radius;
  c.radius_spread = radius_spread;
  c.stretch = stretch ? *stretch : grain_stretch(targets, spacing);
  std::vector<float> field = grain_field(shape, radius, targets.porosity, seed, backend, radius_spread, c.stretch);
  Mask start = start_from_field(field, shape, spacing, targets, boundary, false, seed, backend, c, clusters);
  if (report) *report = c;
  return start;
}

Mask make_blob_start(Shape shape, Spacing spacing, const Targets& targets, Boundary boundary, double blobiness,
                     bool plant_large_pores, uint64_t seed, Backend backend, BlobCandidate* report,
                     const ClusterSample* clusters) {
  validate_shape(shape);
  validate_spacing(spacing);
  BlobCandidate c;
  c.blobiness = blobiness;
  c.sigma = blob_sigma(shape, blobiness);
  std::vector<float> field = blob_field(shape, blobiness, seed);
  Mask start = start_from_field(field, shape, spacing, targets, boundary, plant_large_pores, seed, backend, c, clusters);
  if (report) *report = c;
  return start;
}

namespace {

Mask start_from_field(std::vector<float>& field, Shape shape, Spacing spacing, const Targets& targets,
                      Boundary boundary, bool plant_large_pores, uint64_t seed, Backend backend, BlobCandidate& c,
                      const ClusterSample* clusters) {
  const int64_t pore_voxels = std::llround(targets.porosity * double(shape.voxels()));
  Mask start = lowest_values(field, shape, pore_voxels);
  start.set_spacing(spacing);
  std::vector<double> fraction;
  c.blobs_psd_l1 = c.pore_psd_l1 = psd_l1(start, targets, boundary, backend, &fraction);
  if (plant_large_pores) {
    const auto balls = plan_large_pores(fraction, targets, shape, spacing, boundary, pore_voxels, seed);
    if (!balls.empty()) {
      // Planted voxels take the field's lowest value, so they are pore and the blobs keep the
      // rest of the count where their own field is lowest.
      for (const PlantedBall& ball : balls)
        for_each_ball_voxel(ball, spacing, shape, boundary,
                            [&](int64_t i) { field[std::size_t(i)] = -std::numeric_limits<float>::infinity(); });
      c.planted_balls = static_cast<int>(balls.size());
      c.planted_voxels = std::count(field.begin(), field.end(), -std::numeric_limits<float>::infinity());
      start = lowest_values(field, shape, pore_voxels);
      start.set_spacing(spacing);
      c.pore_psd_l1 = psd_l1(start, targets, boundary, backend);
    }
  }
  if (clusters) {
    start = connect_largest_cluster(start, field, *clusters, seed, backend, &c.connected);
    start.set_spacing(spacing);
    c.pore_psd_l1 = psd_l1(start, targets, boundary, backend);
  }
  return start;
}

}  // namespace

BlobStart choose_blob_start(Shape shape, Spacing spacing, const Targets& targets, Boundary boundary, uint64_t seed,
                            bool plant_large_pores, Backend backend,
                            const std::function<void(const BlobCandidate&)>& tried, const ClusterSample* clusters,
                            StartWeights weights, bool grains, double grain_spread,
                            const std::optional<std::array<double, 3>>& stretch) {
  validate_shape(shape);
  const double unit_sigma = blob_sigma(shape, 1.0);  // σ ∝ 1 / blobiness; a quarter of the extent is 10 units
  BlobStart best;
  best.chosen.score = std::numeric_limits<double>::infinity();
  // Each error is measured against a porosity-matched white noise's, as the run's energy
  // against a random start is: the size sets the structure's length scale, which S2 fixes and
  // the PSD alone does not (small blobs match a PSD's small bins); the chords see the grains'
  // sizes, which a single radius gets wrong (its solid chords pile up at one diameter).
  Quality noise;
  double noise_chords = 0;
  if (weights.s2 > 0 || weights.chords > 0) {
    Mask n = generate_noise(shape, targets.porosity, seed);
    n.set_spacing(spacing);
    noise = quality(n, targets, boundary, backend);  // the PSD's L1₀ is wanted whichever term is weighted
    if (weights.chords > 0) noise_chords = chords_l1(n, targets);  // 0 (the term left out) without chord targets
  }
  std::vector<double> spreads{0.0};
  if (grains) spreads = grain_spread >= 0 ? std::vector<double>{grain_spread}
                                          : std::vector<double>(std::begin(kGrainSpreads), std::end(kGrainSpreads));
  std::exception_ptr too_large;  // the first grains that left no pore
  for (const double spread : spreads) {
    int worse = 0, tried_here = 0;
    double best_here = std::numeric_limits<double>::infinity();
    // Without planting, three worse sizes in a row end the search (the error grows past the
    // best size, if not strictly); with planting it jumps between sizes (small blobs leave
    // every larger bin to balls, large ones only the tail), so every size up to a quarter of
    // the extent is tried.
    for (double sigma = 1.0; (worse < 3 || plant_large_pores) && (sigma <= 10 * unit_sigma || tried_here == 0);
         sigma *= 1.25, ++tried_here) {
      BlobCandidate c;
      // Grains: radii from 2 voxels (a sphere of one voxel is no grain) in the same steps.
      Mask m;
      if (grains) {
        try {
          m = make_grain_start(shape, spacing, targets, boundary, 2 * sigma, seed, backend, &c, clusters, spread,
                               stretch);
        } catch (const MemoryLimitError&) {
          throw;  // too little memory ends the search: smaller grains would not need less
        } catch (const InputError&) {
          // Grains as large as a small domain (a coarse level's) leave it no pore, and larger
          // ones too: this spread's search ends there. Only when no size of any spread made a
          // start is that the caller's error.
          if (!too_large) too_large = std::current_exception();
          break;
        }
      } else {
        m = make_blob_start(shape, spacing, targets, boundary, unit_sigma / sigma, plant_large_pores, seed, backend, &c,
                            clusters);
      }
      c.score = c.pore_psd_l1;
      auto relative = [](double e, double e0) { return e0 > 0 ? (e / e0) * (e / e0) : 0.0; };
      if (weights.s2 > 0 || weights.chords > 0) c.score = relative(c.pore_psd_l1, noise.pore_psd_l1);
      if (weights.s2 > 0) {
        c.s2_rms = s2_rms(m, targets);  // the PSD's L1 the start already measured
        c.score += weights.s2 * relative(c.s2_rms, noise.s2_rms);
      }
      if (weights.chords > 0) {
        c.chords_l1 = chords_l1(m, targets);
        c.score += weights.chords * relative(c.chords_l1, noise_chords);
      }
      best.tried.push_back(c);
      if (tried) tried(c);
      if (c.score < best.chosen.score) {
        best.chosen = c;
        best.structure = std::move(m);
      }
      if (c.score < best_here) {
        best_here = c.score;
        worse = 0;
      } else {
        ++worse;
      }
    }
  }
  if (best.tried.empty() && too_large) std::rethrow_exception(too_large);
  return best;
}

namespace {

// `structure`'s pore indicator at the cell centres of `shape` over the same box, trilinear
// (edges clamped, or wrapped when `periodic`): 1 deep in the pore, 0 deep in the solid,
// between near the interface.
std::vector<float> interpolated_pore(const Mask& structure, Shape shape, bool periodic) {
  const Shape from = structure.shape();
  // Source position of target index i along an axis: cell centres of the same box; the two
  // neighbouring source indices and the weight of the upper one.
  struct Tap {
    int64_t lo, hi;
    float w;
  };
  auto taps = [periodic](int64_t n_to, int64_t n_from) {
    std::vector<Tap> t(static_cast<std::size_t>(n_to));
    for (int64_t i = 0; i < n_to; ++i) {
      double u = (double(i) + 0.5) * double(n_from) / double(n_to) - 0.5;
      if (!periodic) u = std::clamp(u, 0.0, double(n_from - 1));
      const int64_t lo = static_cast<int64_t>(std::floor(u));
      const float w = static_cast<float>(u - double(lo));
      if (periodic) t[std::size_t(i)] = {(lo % n_from + n_from) % n_from, ((lo + 1) % n_from + n_from) % n_from, w};
      else t[std::size_t(i)] = {lo, std::min(lo + 1, n_from - 1), w};
    }
    return t;
  };
  const auto tx = taps(shape.nx, from.nx), ty = taps(shape.ny, from.ny), tz = taps(shape.nz, from.nz);
  auto pore_at = [&](int64_t x, int64_t y, int64_t z) { return structure[(z * from.ny + y) * from.nx + x] ? 1.0f : 0.0f; };
  std::vector<float> field(static_cast<std::size_t>(shape.voxels()));
#pragma omp parallel for schedule(static)
  for (int64_t z = 0; z < shape.nz; ++z)
    for (int64_t y = 0; y < shape.ny; ++y)
      for (int64_t x = 0; x < shape.nx; ++x) {
        const Tap a = tx[std::size_t(x)], b = ty[std::size_t(y)], c = tz[std::size_t(z)];
        auto along_x = [&](int64_t yy, int64_t zz) {
          return (1 - a.w) * pore_at(a.lo, yy, zz) + a.w * pore_at(a.hi, yy, zz);
        };
        const float lo = (1 - b.w) * along_x(b.lo, c.lo) + b.w * along_x(b.hi, c.lo);
        const float hi = (1 - b.w) * along_x(b.lo, c.hi) + b.w * along_x(b.hi, c.hi);
        field[std::size_t((z * shape.ny + y) * shape.nx + x)] = (1 - c.w) * lo + c.w * hi;
      }
  return field;
}

// One [1 2 1]/4 pass along each axis, the faces clamped (wrapped when `periodic`).
void smooth_121(std::vector<float>& field, Shape shape, bool periodic) {
  std::vector<float> out(field.size());
  const int64_t stride[3] = {1, shape.nx, shape.nx * shape.ny};
  for (int axis = 0; axis < 3; ++axis) {
    const int64_t n = shape.extent(axis), step = stride[axis];
#pragma omp parallel for schedule(static)
    for (int64_t z = 0; z < shape.nz; ++z)
      for (int64_t y = 0; y < shape.ny; ++y)
        for (int64_t x = 0; x < shape.nx; ++x) {
          const int64_t i = (z * shape.ny + y) * shape.nx + x;
          const int64_t at = axis == 0 ? x : axis == 1 ? y : z;
          const int64_t left_at = at > 0 ? i - step : periodic ? i + (n - 1) * step : i;
          const int64_t right_at = at + 1 < n ? i + step : periodic ? i - (n - 1) * step : i;
          const float left = field[std::size_t(left_at)], right = field[std::size_t(right_at)];
          out[std::size_t(i)] = 0.25f * left + 0.5f * field[std::size_t(i)] + 0.25f * right;
        }
    field.swap(out);
  }
}

}  // namespace

Mask resample_start(const Mask& structure, Shape shape, Spacing spacing, int64_t pore_voxels) {
  validate_shape(shape);
  if (pore_voxels < 0 || pore_voxels > shape.voxels())
    throw InputError("resample_start: " + std::to_string(pore_voxels) + " pore voxels asked of " + to_string(shape));
  std::vector<float> field = interpolated_pore(structure, shape, false);
  for (float& v : field) v = -v;
  Mask start = lowest_values(field, shape, pore_voxels);
  start.set_spacing(spacing);
  return start;
}

std::vector<float> refine_field(const Mask& structure, Shape shape, bool periodic) {
  validate_shape(shape);
  std::vector<float> field = interpolated_pore(structure, shape, periodic);
  smooth_121(field, shape, periodic);
  for (float& v : field) v = -v;
  return field;
}

Mask coarsen(const Mask& pore, int factor) {
  if (factor < 1) throw InputError("coarsen: the factor must be 1 or more (got " + std::to_string(factor) + ")");
  const Shape from = pore.shape();
  const Shape to{std::max<int64_t>(1, from.nx / factor), std::max<int64_t>(1, from.ny / factor),
                 std::max<int64_t>(1, from.nz / factor)};
  // Each block's pore share; an axis shorter than the factor is one block of what it has.
  const int64_t bx = std::min<int64_t>(factor, from.nx), by = std::min<int64_t>(factor, from.ny),
                bz = std::min<int64_t>(factor, from.nz);
  std::vector<float> share(static_cast<std::size_t>(to.voxels()));
#pragma omp parallel for schedule(static)
  for (int64_t z = 0; z < to.nz; ++z)
    for (int64_t y = 0; y < to.ny; ++y)
      for (int64_t x = 0; x < to.nx; ++x) {
        int64_t count = 0;
        for (int64_t k = 0; k < bz; ++k)
          for (int64_t j = 0; j < by; ++j)
            for (int64_t i = 0; i < bx; ++i)
              count += pore[((z * bz + k) * from.ny + (y * by + j)) * from.nx + (x * bx + i)] ? 1 : 0;
        share[std::size_t((z * to.ny + y) * to.nx + x)] = float(count) / float(bx * by * bz);
      }
  // Blocks of equal share (half pore, say) are told apart by their neighbours': the block in
  // the more porous neighbourhood turns pore. The neighbourhood's weight stays below one step
  // of the share (one voxel of the block), so it never overturns a difference in share.
  std::vector<float> field = share;
  smooth_121(field, to, false);
  const float tie = 0.5f / float(bx * by * bz);
  for (std::size_t i = 0; i < field.size(); ++i) field[i] = -(share[i] + tie * field[i]);
  int64_t blocks_pore = 0;
  for (int64_t z = 0; z < to.nz * bz; ++z)
    for (int64_t y = 0; y < to.ny * by; ++y)
      for (int64_t x = 0; x < to.nx * bx; ++x) blocks_pore += pore[(z * from.ny + y) * from.nx + x] ? 1 : 0;
  const int64_t pore_voxels = std::llround(double(blocks_pore) / double(bx * by * bz));
  Mask coarse = lowest_values(field, to, pore_voxels);
  const Spacing s = pore.spacing();
  coarse.set_spacing({s.x * double(bx), s.y * double(by), s.z * double(bz)});
  return coarse;
}

}  // namespace poreforge::anneal
