// The CPU evaluator. It keeps the evaluated mask's squared distances, thickness map, ball
// centres and each brick's largest distance, and re-evaluates only the region a change can
// reach (common/local_psd.hpp, which says why that is exact; the CUDA swap scorer runs the same
// functions). With a voxel metric only: anisotropic spacings evaluate from scratch.
//
// The last evaluation's changes stay pending: the next evaluation commits them when they are
// still in the mask (an annealer's accepted swap) and drops them when they were set back (a
// rejected one), so a rejected swap costs one local evaluation and nothing to take it back.
// What a scoring found (the changed distances and thickness, the counts' change) is kept
// (Findings), so that committing those changes writes it instead of evaluating them again (an
// accepted swap costs one local evaluation and a few writes, not two evaluations), and a copy
// of this evaluator in the same state (another thread's replica) takes a swap this one scored
// the same way (settle_with).
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <array>
#include <cmath>

#include "../common/local_psd.hpp"
#include "../common/messages.hpp"
#include "ball_centres.hpp"
#include "cpu_backend.hpp"
#include "distance.hpp"
#include "first_unpainted.hpp"
#include "poreforge/error.hpp"
#include "poreforge/evaluator.hpp"
#include "poreforge/generators.hpp"
#include "poreforge/measures.hpp"

namespace poreforge::cpu {
namespace local = detail::local;

namespace {

class CpuPsdEvaluator final : public PsdEvaluator {
 public:
  CpuPsdEvaluator(const Mask& phase, Boundary boundary, const Bins& bins)
      : m_phase(phase), m_boundary(boundary), m_bins(bins), m_local(phase.spacing().isotropic()) {}

  void set(int64_t index, uint8_t value) override {
    m_phase[index] = value;
    if (m_local && !m_stale && m_touched.size() < kMostTouched) m_touched.push_back(index);
    else if (m_local) m_stale = true;  // more changes than pay locally: the next evaluation starts afresh
  }

  PsdCounts counts() override {
    m_findings_last = false;  // until this evaluation keeps its findings
    if (!m_local) return from_scratch();
    if (m_stale) {
      // Many voxels set since the last evaluation (a start's candidate), or one that threw: the
      // plain path, the maps dropped; the next evaluation after a few changes makes them anew.
      m_committed = Mask();
      m_pending = local::Changes{};
      m_touched.clear();
      ++m_full;
      const PsdCounts c = from_scratch();
      m_stale = false;
      return c;
    }
    if (m_committed.voxels() == 0) {  // the first evaluation: the maps
      m_stale = true;  // until it completes
      refresh();
      m_stale = false;
      return counts_of(m_counts);
    }
    m_stale = true;  // until this evaluation completes: one that throws leaves the next to start afresh
    local::Changes ch;
    if (!changes(ch)) {
      refresh();
      m_stale = false;
      return counts_of(m_counts);
    }
    if (ch.count == 0) {
      m_stale = false;
      return counts_of(m_counts);
    }
    std::vector<int64_t> delta(m_counts.size(), 0);
    PsdCounts c;
    if (process(ch, &delta)) {
      ++m_local_count;
      for (std::size_t i = 0; i < delta.size(); ++i) delta[i] += m_counts[i];
      c = counts_of(delta);
      if (m_openings)
        for (std::size_t i = 0; i < c.opening_euler.size(); ++i) c.opening_euler[i] += m_opening_delta[i];
    } else {  // from scratch; committed by the maps afresh if it is kept
      ++m_full;
      c = from_scratch();
      ch.whole = true;
      if (++m_whole_in_a_row == kWholeInARow) {  // the volume is small beside its structure: maps no more
        m_local = false;
        m_committed = Mask();
        m_d2 = {};
        m_thickness = Volume<float>();
        m_centres_bits = {};
        m_pending = local::Changes{};
        m_touched.clear();
        m_stale = false;
        return c;
      }
    }
    if (!ch.whole) m_whole_in_a_row = 0;
    // A change of one swap stays pending (the next evaluation commits it or drops it); more
    // are committed now, so that the committed mask never falls behind by more than a swap.
    if (ch.count <= 2) {
      m_pending = ch;
      for (int k = 0; k < ch.count; ++k) m_touched.push_back(ch.index[k]);  // looked at again next time
    } else {
      commit(ch);
    }
    m_stale = false;
    return c;
  }

  void settle() override { settle_with(nullptr); }

  bool settle_with(const std::shared_ptr<const Scoring>& scoring) override {
    if (!m_local || m_stale || m_committed.voxels() == 0) return false;  // the next evaluation starts afresh anyway
    m_stale = true;
    local::Changes ch;
    // The change this evaluator scored last, kept (the swap it scored was the one taken), is
    // written from its own findings where it kept them.
    bool written = false;
    if (!changes(ch, &written)) return false;  // stays stale: the next evaluation starts afresh
    if (ch.count > 0) {
      const auto* theirs = dynamic_cast<const Findings*>(scoring.get());
      written = theirs && holds(*theirs, ch);
      if (written) commit_findings(*theirs);
      else commit(ch);
    }
    m_stale = false;
    return written;
  }

  std::shared_ptr<const Scoring> last_scoring() const override { return m_findings_last ? m_findings : nullptr; }
  Backend backend() const override { return Backend::cpu; }
  // Every map and pending change copied: the copy's next evaluation is as local as this one's
  // would be.
  std::unique_ptr<PsdEvaluator> copy() const override { return std::make_unique<CpuPsdEvaluator>(*this); }

  bool count_openings() override {
    if (m_openings) return true;
    m_openings = true;
    if (m_committed.voxels() > 0) m_opening_euler = inner_euler8_of_openings(m_thickness, m_bins.edges());
    return true;
  }

  EvaluationTally tally_of_evaluations() const { return {m_local_count, m_full, m_recorded}; }

 private:
  // Voxels set between evaluations beyond which they are not even looked at (an annealer sets
  // four: a swap undone and the next swap).
  static constexpr std::size_t kMostTouched = 64;
  // Evaluations from scratch in a row after which the evaluator keeps no maps at all.
  static constexpr int kWholeInARow = 16;
  // The offsets table's largest radius: 1.1 million offsets, 9 MB.
  static constexpr int64_t kMostOffsetRadius = 64;

  // The pending changes committed where they are still in the mask and dropped where they
  // were set back; then the voxels that differ from the committed mask, prepared, into `ch`.
  // False when they are too many to take locally; throws when a joined voxel has no background.
  // `pending_from_findings` (optional): set to whether the pending changes were committed from
  // this evaluator's findings.
  bool changes(local::Changes& ch, bool* pending_from_findings = nullptr) {
    if (m_pending.count > 0) {
      bool kept = true;
      for (int k = 0; k < m_pending.count; ++k) kept = kept && m_phase[m_pending.index[k]] == m_pending.value[k];
      if (kept) {
        const bool from_findings = commit(m_pending);
        if (pending_from_findings) *pending_from_findings = from_findings;
      }
      m_pending = local::Changes{};
    }
    std::vector<int64_t> changed;
    for (int64_t p : m_touched)
      if (m_phase[std::size_t(p)] != m_committed[std::size_t(p)] &&
          std::find(changed.begin(), changed.end(), p) == changed.end())
        changed.push_back(p);
    m_touched.clear();
    if (changed.size() > std::size_t(local::kMostChanges)) return false;
    const local::View v = view();
    for (int64_t p : changed) ch.add(v.grid, p, m_phase[std::size_t(p)]);
    local::prepare(v, ch);
    if (ch.failed) throw InputError(detail::no_background_message(m_boundary));
    return true;
  }

  local::View view() const {
    local::View v;
    const Shape& s = m_phase.shape();
    v.grid.n[0] = s.nx, v.grid.n[1] = s.ny, v.grid.n[2] = s.nz;
    v.grid.stride[0] = 1, v.grid.stride[1] = s.nx, v.grid.stride[2] = s.nx * s.ny;
    v.grid.boundary = int(m_boundary);
    v.phase = m_committed.data();
    v.d2 = m_d2.data();
    v.thickness = m_thickness.data();
    v.centres = m_centres_bits.data();
    v.offsets = m_offsets->view();
    v.containment = m_containment->view();
    v.metric = voxel_metric(m_phase.spacing());
    v.edges = m_bins.edges().data();
    v.edge_count = int(m_bins.edges().size());
    v.largest = m_largest;
    return v;
  }

  PsdCounts counts_of(const std::vector<int64_t>& flat) const {
    const std::size_t e = m_bins.edges().size();
    PsdCounts c;
    c.at_least.assign(flat.begin(), flat.begin() + std::ptrdiff_t(e));
    c.above = flat[e];
    c.phase_voxels = flat[e + 1];
    if (c.phase_voxels == 0) throw InputError(detail::empty_phase_message());
    if (m_openings) c.opening_euler = m_opening_euler;
    return c;
  }

  // The counts of the current mask with no maps kept (and the openings' 8·χ where they are
  // counted: then from a thickness map, which psd_counts keeps to itself).
  PsdCounts from_scratch() const {
    if (!m_openings) return psd_counts(m_phase, m_boundary, m_bins);
    const Volume<float> thickness = local_thickness(m_phase, m_boundary);
    PsdCounts c = counts_of(flat_counts(thickness));
    c.opening_euler = inner_euler8_of_openings(thickness, m_bins.edges());
    return c;
  }

  // The flat counts of a thickness map, tallied as every local change is (local::tally: only
  // the edges are read, so no maps or tables need exist).
  std::vector<int64_t> flat_counts(const Volume<float>& thickness) const {
    local::View v;
    v.edges = m_bins.edges().data();
    v.edge_count = int(m_bins.edges().size());
    std::vector<int64_t> hits(std::size_t(v.edge_count) + 2, 0), flat(std::size_t(local::count_entries(v.edge_count)), 0);
    for (int64_t i = 0; i < thickness.voxels(); ++i)
      local::tally(v, thickness[std::size_t(i)], 1, [&](int e, int64_t s) { hits[std::size_t(e)] += s; });
    local::counts_from_hit_array(v.edge_count, hits.data(), flat.data());
    return flat;
  }

  // The maps of the current mask from scratch, and its counts.
  void refresh() {
    ++m_full;
    m_touched.clear();
    m_pending = local::Changes{};
    m_committed = Mask();
    m_old_lt2.clear(), m_new_lt2.clear();  // an evaluation that threw may have left them painted
    const Volume<uint32_t> d2 = squared_distance_voxels(m_phase, m_boundary);  // throws when there is no background
    m_d2 = d2.values();
    m_thickness = local_thickness(m_phase, m_boundary);
    m_committed = m_phase;
    uint32_t most = 0;
    for (uint32_t d : m_d2) most = std::max(most, d);
    m_d2_count.assign(std::size_t(most) + 1, 0);
    for (uint32_t d : m_d2) ++m_d2_count[d];
    m_largest = local::ceil_root(most);
    tables(most);
    // The kept centres, by the engine's rule.
    const local::View v = view();
    const int64_t n = m_phase.voxels();
    m_centres_bits.assign(std::size_t(local::CentreBits::words(v.grid)), 0);
    m_brick_d2.assign(m_centres_bits.size(), 0);
    for (int64_t i = 0; i < n; ++i) {
      if (!m_d2[std::size_t(i)]) continue;
      int64_t c[3];
      v.grid.coords(i, c);
      uint32_t& brick = m_brick_d2[std::size_t(local::CentreBits::word(v.grid, c))];
      brick = std::max(brick, m_d2[std::size_t(i)]);
      if (local::kept_centre(v, c, m_d2[std::size_t(i)], [&](int64_t j, const int64_t*) { return m_d2[std::size_t(j)]; }))
        set_centre(v.grid, c, true);
    }
    m_counts = flat_counts(m_thickness);
    if (m_openings) m_opening_euler = inner_euler8_of_openings(m_thickness, m_bins.edges());
    m_committed_hash = 0;
    for (int64_t i = 0; i < n; ++i)
      if (m_committed[std::size_t(i)]) m_committed_hash ^= voxel_key(i);
  }

  // The offsets walked for nearest backgrounds (to twice the largest distance, so that a walk
  // rarely goes past them, but no farther than kMostOffsetRadius: a walk past the table searches
  // shells, exactly) and the containment tables (to the squared distance a ball of that reach
  // can have; beyond, the continuous test decides), made again when distances outgrow them.
  void tables(uint32_t most) {
    const int64_t want = std::min<int64_t>(2 * (local::ceil_root(most) + 2), kMostOffsetRadius);
    if (!m_offsets || int64_t(m_offsets->limit) < (want / 2) * (want / 2))
      m_offsets = std::make_shared<const local::OffsetTable>(m_phase.shape(), want);
    const uint32_t reach = uint32_t(want * want);
    if (!m_containment || m_containment_limit < std::min(most, reach)) {
      using Containment = detail::BallContainment<detail::VoxelMetric>;
      m_containment = std::make_shared<const Containment>(detail::VoxelMetric{}, reach);
      m_containment_limit = reach;
    }
  }

  // Scores `ch` (delta: the flat counts' change) or, with delta null, commits it: the maps
  // take the changed mask's values in every R2 and R1 box, and the counts their change. False
  // (scoring only) when the regions hold about the volume: then nothing is scored.
  bool process(const local::Changes& ch, std::vector<int64_t>* delta) {
    const local::View v = view();
    const local::Grid& g = v.grid;
    // Scans that hold a good part of the volume already (a small one): from scratch.
    if (delta) {
      double scanned = 0;
      for (int k = 0; k < ch.count; ++k) scanned += double(local::Box::around(g, ch.at[k], v.largest).voxels());
      if (scanned >= 0.25 * double(m_phase.voxels())) return false;
    }
    // Each change's scan: R1's extent and its balls' reach.
    std::array<local::Reach, local::kMostChanges> reach{};
    std::array<int64_t, local::kMostChanges> d1{};
    std::array<local::Box, local::kMostChanges> r2{};
    for (int k = 0; k < ch.count; ++k) {
      const int64_t* p = ch.at[k];
      const local::Box scan = local::Box::around(g, p, v.largest);
      const auto may_hold_members = [&](const int64_t w[3]) {
        return local::brick_gap2(g, p, w) <= m_brick_d2[std::size_t(local::CentreBits::brick(g, w))];
      };
      for_box_bricks(g, scan, may_hold_members, [&](int64_t x, const int64_t c[3]) {
        int64_t cheb = 0;
        for (int a = 0; a < 3; ++a) cheb = std::max<int64_t>(cheb, std::abs(g.offset(a, p[a], c[a])));
        local::scan_voxel(v, ch, k, x, c, cheb, reach[std::size_t(k)]);
      });
      d1[std::size_t(k)] = reach[std::size_t(k)].d1;
      r2[std::size_t(k)] = local::Box::around(g, p, local::repaint_half_width(reach[std::size_t(k)]));
    }
    // Where the regions hold a good part of the volume (a small one, or pores as wide as it)
    // scoring from scratch costs less: each change's near box takes a distance search a voxel,
    // its R2 a few reads a voxel (a sixteenth of a from-scratch voxel's cost, about).
    if (delta) {
      double work = 0;
      for (int k = 0; k < ch.count; ++k)
        work += double(local::near_box(v, ch, k, d1[std::size_t(k)]).voxels()) + double(r2[std::size_t(k)].voxels()) / 16;
      if (work > 0.25 * double(m_phase.voxels())) return false;
    }
    // The changed distances round each change, once.
    local::NearDistances near;
    m_near.resize(std::size_t(ch.count));
    for (int k = 0; k < ch.count; ++k) {
      near.box[k] = local::near_box(v, ch, k, d1[std::size_t(k)]);
      std::vector<uint32_t>& d = m_near[std::size_t(k)];
      d.resize(std::size_t(near.box[k].voxels()));
      std::size_t at = 0;
      for_box(g, near.box[k], [&](int64_t x, const int64_t c[3]) { d[at++] = local::new_d2(v, ch, x, c); });
      near.d2[k] = d.data();
    }
    std::vector<int64_t> hits(std::size_t(v.edge_count) + 2, 0);
    // The new values: written after every box (commit), or kept with the scoring's findings.
    std::vector<std::pair<int64_t, float>>& thickness = m_changed;
    thickness.clear();
    sort_near_balls(v, ch, near);
    for (int k = 0; k < ch.count; ++k) {
      const local::Box& box = r2[std::size_t(k)];
      repaint(v, ch, d1.data(), box);
      for_spans(g, box, [&](int64_t at, int64_t, int64_t, int64_t y, const int64_t c[3]) {
        for (int j = 0; j < k; ++j)
          if (r2[std::size_t(j)].holds(g, c)) return;
        const float now = m_now[std::size_t(at)];
        const float before = m_thickness[std::size_t(y)];
        if (now == before) return;
        if (delta) {
          local::tally(v, before, -1, [&](int e, int64_t s) { hits[std::size_t(e)] += s; });
          local::tally(v, now, +1, [&](int e, int64_t s) { hits[std::size_t(e)] += s; });
        }
        thickness.push_back({y, now});
      });
    }
    if (delta) {
      local::counts_from_hit_array(v.edge_count, hits.data(), delta->data());
      if (m_openings) openings_change(v, thickness, false, m_opening_delta);
      keep_findings(ch, d1.data(), near, *delta);
      return true;
    }
    // Commit: the counts' change, then thickness, distances and centres; distances only after
    // every box is painted (painting reads them), centres after the distances.
    std::vector<int64_t> change(m_counts.size(), 0);
    for (const auto& [y, now] : thickness) {
      local::tally(v, m_thickness[std::size_t(y)], -1, [&](int e, int64_t s) { hits[std::size_t(e)] += s; });
      local::tally(v, now, +1, [&](int e, int64_t s) { hits[std::size_t(e)] += s; });
    }
    local::counts_from_hit_array(v.edge_count, hits.data(), change.data());
    for (std::size_t i = 0; i < change.size(); ++i) m_counts[i] += change[i];
    if (m_openings) {
      openings_change(v, thickness, true, m_opening_delta);
      for (std::size_t i = 0; i < m_opening_euler.size(); ++i) m_opening_euler[i] += m_opening_delta[i];
    } else {
      for (const auto& [y, now] : thickness) m_thickness[std::size_t(y)] = now;
    }
    write_maps(v, ch, d1.data(), near);
    return true;
  }

  // What process found scoring `ch` from the committed mask `state` (committed_hash) with
  // these bins and boundary: the changed distances (near boxes), thickness and counts, all a
  // commit of `ch` writes.
  struct Findings final : Scoring {
    uint64_t state = 0;
    Shape shape;
    Spacing spacing;
    Boundary boundary = Boundary::open;
    std::vector<double> edges;
    local::Changes changes;
    std::array<int64_t, local::kMostChanges> d1{};
    std::array<local::Box, local::kMostChanges> near_box{};
    std::vector<std::vector<uint32_t>> near;
    std::vector<std::pair<int64_t, float>> thickness;
    std::vector<int64_t> delta, opening_delta;
    bool openings = false;  // opening_delta holds the openings' change

    std::size_t bytes() const override {
      std::size_t b = sizeof(*this) + edges.capacity() * sizeof(double) + thickness.capacity() * sizeof(thickness[0]) +
                      (delta.capacity() + opening_delta.capacity()) * sizeof(int64_t);
      for (const auto& d : near) b += d.capacity() * sizeof(uint32_t);
      return b;
    }
  };

  // The scoring's findings kept; its buffers swapped in, not copied. A record someone else
  // still holds (a copy of this evaluator, or a taker of last_scoring) is left to them and a new
  // one made; one held by none is reused.
  void keep_findings(const local::Changes& ch, const int64_t* d1, const local::NearDistances& near,
                   const std::vector<int64_t>& delta) {
    if (!m_findings || m_findings.use_count() > 1) {
      m_findings = std::make_shared<Findings>();
      m_findings->shape = m_phase.shape();
      m_findings->spacing = m_phase.spacing();
      m_findings->boundary = m_boundary;
      m_findings->edges = m_bins.edges();
    } else {
      // The last other holder's reads (on another thread) happen before these writes.
      std::atomic_thread_fence(std::memory_order_acquire);
    }
    m_findings_last = true;
    Findings& s = *m_findings;
    s.state = m_committed_hash;
    s.changes = ch;
    for (int k = 0; k < ch.count; ++k) {
      s.d1[std::size_t(k)] = d1[k];
      s.near_box[std::size_t(k)] = near.box[k];
    }
    std::swap(s.near, m_near);
    std::swap(s.thickness, m_changed);
    s.delta = delta;
    s.openings = m_openings;
    if (m_openings) s.opening_delta = m_opening_delta;
  }

  // Whether `s` was scored from this evaluator's committed mask (shape, spacing), bins and
  // boundary for the same changes as `ch` (in any order), counting what this evaluator counts (the openings may have
  // been asked for since).
  bool holds(const Findings& s, const local::Changes& ch) const {
    if (s.state != m_committed_hash || s.openings != m_openings || s.changes.count != ch.count || ch.whole) return false;
    if (!(s.shape == m_phase.shape()) || !(s.spacing == m_phase.spacing()) || s.boundary != m_boundary ||
        s.edges != m_bins.edges())
      return false;
    for (int k = 0; k < ch.count; ++k) {
      const int at = s.changes.find(ch.index[k]);
      if (at < 0 || s.changes.value[at] != ch.value[k]) return false;
    }
    return true;
  }

  // The changes `s` scored, committed from its findings: process's commit without the
  // evaluation (the same writes: its thickness list is the one process would make).
  void commit_findings(const Findings& s) {
    ++m_recorded;
    for (std::size_t i = 0; i < m_counts.size(); ++i) m_counts[i] += s.delta[i];
    if (m_openings)
      for (std::size_t i = 0; i < m_opening_euler.size(); ++i) m_opening_euler[i] += s.opening_delta[i];
    for (const auto& [y, now] : s.thickness) m_thickness[std::size_t(y)] = now;
    local::NearDistances near;
    for (int k = 0; k < s.changes.count; ++k) {
      near.box[k] = s.near_box[std::size_t(k)];
      near.d2[k] = s.near[std::size_t(k)].data();
    }
    write_maps(view(), s.changes, s.d1.data(), near);
  }

  // A commit's distances (the changed mask's in each change's R1 box, from `near`), bricks,
  // mask, largest distance and centres, after its counts and thickness.
  void write_maps(const local::View& v, const local::Changes& ch, const int64_t* d1, const local::NearDistances& near) {
    const local::Grid& g = v.grid;
    std::vector<std::pair<int64_t, uint32_t>>& distances = m_distances;
    distances.clear();
    for (int k = 0; k < ch.count; ++k) {
      for_box(g, local::Box::around(g, ch.at[k], d1[k]), [&](int64_t x, const int64_t c[3]) {
        const uint32_t now = near.at(v, ch, x, c);
        if (now != m_d2[std::size_t(x)]) distances.push_back({x, now});
      });
    }
    m_lowered.clear();  // voxels whose brick's largest distance may have fallen
    for (const auto& [x, now] : distances) {
      uint32_t& d = m_d2[std::size_t(x)];
      if (d == now) continue;  // listed twice (overlapping boxes)
      --m_d2_count[d];
      if (now >= m_d2_count.size()) m_d2_count.resize(std::size_t(now) + 1, 0);
      ++m_d2_count[now];
      int64_t c[3];
      g.coords(x, c);
      uint32_t& most = m_brick_d2[std::size_t(local::CentreBits::word(g, c))];
      if (now > most) most = now;
      else if (d == most) m_lowered.push_back(x);
      d = now;
    }
    for (int64_t x : m_lowered) {
      int64_t c[3];
      g.coords(x, c);
      update_brick(g, c);
    }
    for (int k = 0; k < ch.count; ++k) {
      uint8_t& was = m_committed[std::size_t(ch.index[k])];
      if (was != ch.value[k]) m_committed_hash ^= voxel_key(ch.index[k]);
      was = ch.value[k];
    }
    uint32_t most = uint32_t(m_d2_count.size() - 1);
    while (most > 0 && m_d2_count[most] == 0) --most;
    m_largest = local::ceil_root(most);
    tables(most);
    // A voxel is a kept centre by its own distance and its 26 neighbours' (the engine's rule):
    // only those next to a changed distance can have changed.
    std::vector<int64_t>& retest = m_retest;
    retest.clear();
    for (const auto& [x, now] : distances) {
      int64_t c[3];
      g.coords(x, c);
      local::any_neighbour(g, c, true, false, [&](int64_t j, const int64_t*, int, int, int) {
        retest.push_back(j);
        return false;
      });
    }
    std::sort(retest.begin(), retest.end());
    retest.erase(std::unique(retest.begin(), retest.end()), retest.end());
    const local::View after = view();
    for (int64_t x : retest) {
      int64_t c[3];
      g.coords(x, c);
      const uint32_t r = m_d2[std::size_t(x)];
      set_centre(g, c, r && local::kept_centre(after, c, r, [&](int64_t j, const int64_t*) { return m_d2[std::size_t(j)]; }));
    }
  }

  // A voxel's share of committed_hash: a Zobrist key (SplitMix64 of its index), so that the hash
  // of a mask is the XOR over its phase voxels and a changed voxel flips its key in or out.
  static uint64_t voxel_key(int64_t index) { return splitmix64(uint64_t(index)); }

  // The change of 8·χ of every opening {thickness ≥ edge} over the inner cells (into `out`) as
  // the listed voxels take their new values one after another: a voxel that enters or leaves
  // openings changes only its eight 2×2×2 cells, each read with its neighbours as they stand at
  // that point of the sequence, so the changes add up to the whole change however the cells
  // overlap. A cell with a voxel outside the box is not an inner cell: it counts for nothing.
  // Thickness stays written where `keep`, else is set back.
  void openings_change(const local::View& v, const std::vector<std::pair<int64_t, float>>& changes, bool keep,
                       std::vector<int64_t>& out) {
    const local::Grid& g = v.grid;
    out.assign(std::size_t(v.edge_count), 0);
    const auto opening_count = [&](float t) { return std::max(local::hit_of(v, t), 0); };  // openings it is in
    if (!keep) m_set_back.clear();
    for (const auto& [y, now] : changes) {
      float& t = m_thickness[std::size_t(y)];
      const int before = opening_count(t), after = opening_count(now);
      if (!keep) m_set_back.push_back({y, t});
      if (before != after) {
        int64_t c[3];
        g.coords(y, c);
        // The 3×3×3 neighbourhood's openings counts, bit (dx + 1) + 3(dy + 1) + 9(dz + 1); −1
        // outside the box.
        int in[27];
        for (int dz = -1; dz <= 1; ++dz)
          for (int dy = -1; dy <= 1; ++dy)
            for (int dx = -1; dx <= 1; ++dx) {
              const int64_t u[3] = {c[0] + dx, c[1] + dy, c[2] + dz};
              bool inside = true;
              for (int a = 0; a < 3; ++a) inside = inside && u[a] >= 0 && u[a] < g.n[a];
              in[(dx + 1) + 3 * (dy + 1) + 9 * (dz + 1)] = inside ? opening_count(m_thickness[std::size_t(g.index(u))]) : -1;
            }
        const int lo = std::min(before, after), hi = std::max(before, after);
        const int64_t sign = after > before ? 1 : -1;  // it enters openings lo … hi − 1, or leaves them
        for (int corner = 0; corner < 8; ++corner) {
          const int i = corner & 1, j = (corner >> 1) & 1, k = (corner >> 2) & 1;
          int cell[8];  // the cell's voxels' openings counts; the voxel itself is bit `centre`
          bool inner = true;
          for (int b = 0; b < 8; ++b) {
            cell[b] = in[(i + (b & 1)) + 3 * (j + ((b >> 1) & 1)) + 9 * (k + ((b >> 2) & 1))];
            inner = inner && cell[b] >= 0;
          }
          if (!inner) continue;
          const int centre = (1 - i) + 2 * (1 - j) + 4 * (1 - k);
          for (int e = lo; e < hi; ++e) {
            int configuration = 0;
            for (int b = 0; b < 8; ++b)
              if (b != centre && cell[b] > e) configuration |= 1 << b;
            out[std::size_t(e)] += sign * (euler_weight8(configuration | (1 << centre)) - euler_weight8(configuration));
          }
        }
      }
      t = now;
    }
    if (!keep)
      for (auto it = m_set_back.rbegin(); it != m_set_back.rend(); ++it) m_thickness[std::size_t(it->first)] = it->second;
  }

  // The near boxes' balls split as local_psd.hpp's "Changed balls only" says: O, N and U's part.
  void sort_near_balls(const local::View& v, const local::Changes& ch, const local::NearDistances& near) {
    m_old_balls.clear();
    m_new_balls.clear();
    m_kept_balls.clear();
    const int64_t items = local::near_voxels(ch, near);
    for (int64_t t = 0; t < items; ++t) {
      int64_t x, c[3];
      if (!local::near_voxel(v, ch, near, t, x, c)) continue;
      const local::NearBall b = local::near_ball(v, ch, near, x, c);
      if (b.kept) m_kept_balls.push_back({b.before, x});
      if (b.old) m_old_balls.push_back({b.before, x});
      if (b.fresh) m_new_balls.push_back({b.after, x});
    }
  }

  // The changed mask's thickness over `box` (a change's R2) into m_now, box order, within each
  // row's span (for_spans): O's and N's balls painted, each voxel's value from its committed one
  // and theirs, U's balls painted only where those leave it open. Outside the spans no ball of O
  // or N reaches and no voxel changed, so U's balls gave the value before and give it after:
  // nothing there is read or written.
  void repaint(const local::View& v, const local::Changes& ch, const int64_t* d1, const local::Box& box) {
    const local::Grid& g = v.grid;
    const int64_t lx = box.length(0), ly = box.length(1), voxels = box.voxels();
    const int64_t rows = ly * box.length(2);
    m_span_lo.assign(std::size_t(rows), int32_t(lx));
    m_span_hi.assign(std::size_t(rows), -1);
    const auto widen = [&](int64_t row, int64_t x0, int64_t x1) {
      m_span_lo[std::size_t(row)] = std::min(m_span_lo[std::size_t(row)], int32_t(x0));
      m_span_hi[std::size_t(row)] = std::max(m_span_hi[std::size_t(row)], int32_t(x1));
    };
    // The painted buffers are all zero between calls: each box sets back its spans below (and
    // refresh() clears them after an evaluation that threw).
    if (m_old_lt2.size() < std::size_t(voxels)) m_old_lt2.resize(std::size_t(voxels), 0);
    if (m_new_lt2.size() < std::size_t(voxels)) m_new_lt2.resize(std::size_t(voxels), 0);
    const auto paint_max = [&](const std::vector<Centre<detail::VoxelMetric>>& balls, std::vector<uint32_t>& out) {
      for (const auto& ball : balls) {
        int64_t cc[3];
        g.coords(ball.index, cc);
        if (box.gap2(g, cc) >= ball.r2) continue;
        local::ball_chords(
            g, box, cc, ball.r2, 0, 1, [](int64_t) { return true; },
            [&](int64_t row, int64_t x0, int64_t x1) {
              uint32_t* o = out.data() + row * lx;
              for (int64_t x = x0; x <= x1; ++x) o[x] = std::max(o[x], ball.r2);
              widen(row, x0, x1);
            });
      }
    };
    paint_max(m_old_balls, m_old_lt2);
    paint_max(m_new_balls, m_new_lt2);
    for (int k = 0; k < ch.count; ++k) {
      int64_t u[3];
      for (int a = 0; a < 3; ++a) u[a] = box.local(g, a, ch.at[k][a]);
      if (u[0] >= 0 && u[1] >= 0 && u[2] >= 0) widen(u[1] + u[2] * ly, u[0], u[0]);
    }
    // Each voxel from the committed value and the changed balls; the voxels that need U left
    // unpainted for the union-find painter (its rows whole: outside the span nothing is open),
    // and their bounding box.
    m_now.resize(std::size_t(voxels));
    m_next.resize(std::size_t(rows * (lx + 1)));
    m_unpainted.assign(std::size_t(rows), 0);
    int64_t left = 0, lo[3] = {box.length(0), box.length(1), box.length(2)}, hi[3] = {-1, -1, -1};
    for_spans(g, box, [&](int64_t at, int64_t row, int64_t x, int64_t y, const int64_t*) {
      bool needs_u = false;
      m_now[std::size_t(at)] = local::thickness_from_changed_balls(
          v, ch, y, local::u_gave(v, v.thickness[y], m_old_lt2[std::size_t(at)]), m_new_lt2[std::size_t(at)], needs_u);
      if (!needs_u) return;
      uint32_t* next = m_next.data() + row * (lx + 1);
      if (m_unpainted[std::size_t(row)]++ == 0)
        for (int64_t i = 0; i <= lx; ++i) next[i] = uint32_t(std::min(i + 1, lx));
      next[x] = uint32_t(x);
      ++left;
      const int64_t u[3] = {x, row % ly, row / ly};
      for (int a = 0; a < 3; ++a) lo[a] = std::min(lo[a], u[a]), hi[a] = std::max(hi[a], u[a]);
    });
    if (left > 0) paint_u(v, ch, d1, box, lo, hi, left);
    // The painted buffers set back to zero where this box painted them.
    for (int64_t row = 0; row < rows; ++row) {
      const int64_t x0 = m_span_lo[std::size_t(row)], x1 = m_span_hi[std::size_t(row)];
      if (x0 > x1) continue;
      std::fill(m_old_lt2.begin() + row * lx + x0, m_old_lt2.begin() + row * lx + x1 + 1, 0u);
      std::fill(m_new_lt2.begin() + row * lx + x0, m_new_lt2.begin() + row * lx + x1 + 1, 0u);
    }
  }

  // U's balls painted over the `left` voxels repaint left open (box-local bounding box lo–hi),
  // largest first: a voxel's first paint is U's largest.
  void paint_u(const local::View& v, const local::Changes& ch, const int64_t* d1, const local::Box& box,
               const int64_t lo[3], const int64_t hi[3], int64_t left) {
    const local::Grid& g = v.grid;
    const int64_t lx = box.length(0);
    local::Box needed;
    for (int a = 0; a < 3; ++a) needed.lo[a] = box.lo[a] + lo[a], needed.hi[a] = box.lo[a] + hi[a];
    const local::BrickWalk walk = local::BrickWalk::of(g, needed.grown(g, v.largest - 1));
    m_centres.clear();
    for (int64_t t = 0; t < walk.bricks; ++t) {
      // A brick whose largest distance does not reach the voxels holds no ball that does.
      int64_t w[3], from[3], to[3];
      walk.brick(t, w, from, to);
      const std::size_t brick = std::size_t(local::CentreBits::brick(g, w));
      if (v.centres[brick] == 0 || needed.block_gap2(g, from, to) >= m_brick_d2[brick]) continue;
      local::u_centres_in_brick(v, ch, d1, walk, t, needed,
                                [&](int64_t i, const int64_t*, uint32_t r2) { m_centres.push_back({r2, i}); });
    }
    for (const auto& ball : m_kept_balls) {
      int64_t c[3];
      g.coords(ball.index, c);
      if (needed.gap2(g, c) < ball.r2) m_centres.push_back(ball);
    }
    std::sort(m_centres.begin(), m_centres.end(), [](const Centre<detail::VoxelMetric>& a, const Centre<detail::VoxelMetric>& b) {
      return a.r2 > b.r2 || (a.r2 == b.r2 && a.index < b.index);
    });
    for (const auto& centre : m_centres) {
      if (left == 0) break;
      int64_t cc[3];
      g.coords(centre.index, cc);
      const auto open_row = [&](int64_t row) { return m_unpainted[std::size_t(row)] > 0; };
      local::ball_chords(g, box, cc, centre.r2, 0, 1, open_row, [&](int64_t row, int64_t x0, int64_t x1) {
        uint32_t* next = m_next.data() + row * (lx + 1);
        for (int64_t x = first_unpainted(next, x0, x1); x <= x1; x = first_unpainted(next, x + 1, x1)) {
          const int64_t at = row * lx + x;
          m_now[std::size_t(at)] = v.metric.radius(std::max(centre.r2, m_new_lt2[std::size_t(at)]));
          next[x] = uint32_t(x + 1);
          --m_unpainted[std::size_t(row)];
          --left;
        }
      });
    }
  }

  // Whether the maps took `ch` from this evaluator's findings.
  bool commit(const local::Changes& ch) {
    if (ch.whole) {
      refresh();  // its mask may hold the next change too: the maps take that as well
      return false;
    }
    if (m_findings && holds(*m_findings, ch)) {
      commit_findings(*m_findings);
      return true;
    }
    process(ch, nullptr);
    return false;
  }

  void set_centre(const local::Grid& g, const int64_t c[3], bool on) {
    uint64_t& w = m_centres_bits[std::size_t(local::CentreBits::word(g, c))];
    const uint64_t bit = uint64_t(1) << local::CentreBits::bit(c);
    w = on ? w | bit : w & ~bit;
  }

  // f(index, coordinates) for every voxel of a box.
  template <class F>
  static void for_box(const local::Grid& g, const local::Box& b, F&& f) {
    int64_t c[3];
    for (int64_t z = b.lo[2]; z <= b.hi[2]; ++z) {
      c[2] = g.periodic() && g.n[2] > 1 ? local::Grid::wrap(z, g.n[2]) : z;
      for (int64_t y = b.lo[1]; y <= b.hi[1]; ++y) {
        c[1] = g.periodic() && g.n[1] > 1 ? local::Grid::wrap(y, g.n[1]) : y;
        for (int64_t x = b.lo[0]; x <= b.hi[0]; ++x) {
          c[0] = g.periodic() && g.n[0] > 1 ? local::Grid::wrap(x, g.n[0]) : x;
          f(g.index(c), c);
        }
      }
    }
  }

  // f(box-local index, box row, box-local x, index, coordinates) for every voxel of box b within
  // its row's span (repaint's m_span_lo–m_span_hi), rows in box order.
  template <class F>
  void for_spans(const local::Grid& g, const local::Box& b, F&& f) const {
    const int64_t lx = b.length(0), ly = b.length(1), rows = ly * b.length(2);
    const bool wrap = g.periodic();
    int64_t c[3];
    for (int64_t row = 0; row < rows; ++row) {
      const int64_t x0 = m_span_lo[std::size_t(row)], x1 = m_span_hi[std::size_t(row)];
      if (x0 > x1) continue;
      c[1] = b.lo[1] + row % ly, c[2] = b.lo[2] + row / ly;
      for (int a = 1; a < 3; ++a)
        if (wrap && g.n[a] > 1) c[a] = local::Grid::wrap(c[a], g.n[a]);
      for (int64_t x = x0; x <= x1; ++x) {
        c[0] = wrap && g.n[0] > 1 ? local::Grid::wrap(b.lo[0] + x, g.n[0]) : b.lo[0] + x;
        f(row * lx + x, row, x, g.index(c), c);
      }
    }
  }

  // f(index, coordinates) for every voxel of box b in the bricks (CentreBits') that wanted(w)
  // accepts.
  template <class Wanted, class F>
  static void for_box_bricks(const local::Grid& g, const local::Box& b, Wanted&& wanted, F&& f) {
    const local::BrickWalk walk = local::BrickWalk::of(g, b);
    for (int64_t t = 0; t < walk.bricks; ++t) {
      int64_t w[3], from[3], to[3], c[3];
      walk.brick(t, w, from, to);
      if (!wanted(w)) continue;
      for (c[2] = from[2]; c[2] <= to[2]; ++c[2])
        for (c[1] = from[1]; c[1] <= to[1]; ++c[1])
          for (c[0] = from[0]; c[0] <= to[0]; ++c[0]) f(g.index(c), c);
    }
  }

  // The largest committed squared distance of the brick that holds voxel c, from its voxels.
  void update_brick(const local::Grid& g, const int64_t c[3]) {
    const int64_t w[3] = {c[0] / 4, c[1] / 4, c[2] / 4};
    m_brick_d2[std::size_t(local::CentreBits::brick(g, w))] = local::brick_largest(g, m_d2.data(), w);
  }

  Mask m_phase;      // as set() leaves it
  Mask m_committed;  // the mask the maps are of (empty before the first evaluation)
  Boundary m_boundary;
  Bins m_bins;
  bool m_local;          // re-evaluates locally: isotropic, and the volume not too small beside its structure
  bool m_stale = false;  // the kept maps are not to be trusted: the next evaluation starts afresh
  std::vector<uint32_t> m_d2;
  Volume<float> m_thickness;
  std::vector<uint64_t> m_centres_bits;  // local::CentreBits
  std::vector<uint32_t> m_brick_d2;      // each brick's largest squared distance (CentreBits' layout)
  std::vector<int64_t> m_lowered;        // a commit's voxels whose brick may need its largest anew
  std::vector<int64_t> m_retest;         // a commit's voxels whose centre bit may have changed
  std::vector<int64_t> m_d2_count;  // committed voxels by squared distance: the largest distance
  int64_t m_largest = 0;
  std::vector<int64_t> m_counts;  // committed, flat
  // Tables, never changed once made (a larger one replaces them): shared with this evaluator's
  // copies.
  std::shared_ptr<const local::OffsetTable> m_offsets;
  std::shared_ptr<const detail::BallContainment<detail::VoxelMetric>> m_containment;
  uint32_t m_containment_limit = 0;
  local::Changes m_pending;            // the last evaluation's changes, not yet committed
  std::vector<int64_t> m_touched;      // voxels set() changed since the last evaluation
  std::vector<float> m_now;            // a box's new thickness (repaint)
  // The largest squared radius of O's and of N's balls there; zero outside the spans being used.
  std::vector<uint32_t> m_old_lt2, m_new_lt2;
  std::vector<uint32_t> m_next;        // its rows' union-find (first_unpainted) where U's balls decide
  std::vector<int64_t> m_unpainted;    // its rows' voxels left to them
  std::vector<int32_t> m_span_lo, m_span_hi;  // its rows' spans that O's or N's balls reach or a change is in
  std::vector<Centre<detail::VoxelMetric>> m_centres;  // U's balls that reach those voxels
  std::vector<std::vector<uint32_t>> m_near;  // local::NearDistances's distances
  std::vector<Centre<detail::VoxelMetric>> m_old_balls, m_new_balls;  // O's and N's
  std::vector<Centre<detail::VoxelMetric>> m_kept_balls;  // U's in the near boxes
  int64_t m_full = 0, m_local_count = 0, m_recorded = 0;
  int m_whole_in_a_row = 0;
  // The openings' 8·χ over the inner cells (count_openings): committed, and the last evaluation's
  // change.
  bool m_openings = false;
  std::vector<int64_t> m_opening_euler, m_opening_delta;
  std::vector<std::pair<int64_t, float>> m_changed;   // process's changed voxels and their new values
  std::vector<std::pair<int64_t, float>> m_set_back;  // openings_change's values before, when scoring
  std::vector<std::pair<int64_t, uint32_t>> m_distances;  // a commit's changed distances
  uint64_t m_committed_hash = 0;  // of m_committed (voxel_key)
  // The last scoring's findings; shared with whoever took them (last_scoring), and then left to
  // them when this evaluator scores again.
  std::shared_ptr<Findings> m_findings;
  bool m_findings_last = false;  // m_findings holds the last evaluation's findings
};

}  // namespace

EvaluationTally evaluation_tally(const PsdEvaluator& evaluator) {
  const auto* cpu = dynamic_cast<const CpuPsdEvaluator*>(&evaluator);
  return cpu ? cpu->tally_of_evaluations() : EvaluationTally{};
}

std::unique_ptr<PsdEvaluator> make_psd_evaluator(const Mask& phase, Boundary boundary, const Bins& bins) {
  return std::make_unique<CpuPsdEvaluator>(phase, boundary, bins);
}

}  // namespace poreforge::cpu
