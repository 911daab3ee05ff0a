#pragma once
// A fixed sequence of launches captured once as a CUDA graph per key and replayed afterwards:
// the first launch for a key records it (stream capture), every later one is a single graph
// launch. The owner synchronises its stream before the cache is destroyed.
#include <cuda_runtime.h>

#include <map>

#include "check.cuh"

namespace poreforge::cuda {

template <class Key>
class GraphCache {
 public:
  GraphCache() = default;
  GraphCache(const GraphCache&) = delete;
  GraphCache& operator=(const GraphCache&) = delete;
  ~GraphCache() {
    for (auto& [key, exec] : m_graphs) PF_CUDA_CHECK_NOTHROW(cudaGraphExecDestroy(exec));
  }

  // Launches the graph of `key` on `stream`, capturing it from `record` (which enqueues on
  // `stream`) the first time. An exception inside `record` ends the capture and propagates.
  template <class Record>
  void launch(const Key& key, cudaStream_t stream, Record&& record) {
    auto it = m_graphs.find(key);
    if (it == m_graphs.end()) {
      if (m_graphs.size() >= kMaxGraphs) clear();
      cudaGraph_t graph = nullptr;
      PF_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
      try {
        record();
      } catch (...) {
        cudaStreamEndCapture(stream, &graph);
        if (graph) cudaGraphDestroy(graph);
        throw;
      }
      PF_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
      cudaGraphExec_t exec = nullptr;
      const cudaError_t err = cudaGraphInstantiate(&exec, graph, 0);
      cudaGraphDestroy(graph);
      PF_CUDA_CHECK(err);
      it = m_graphs.emplace(key, exec).first;
    }
    PF_CUDA_CHECK(cudaGraphLaunch(it->second, stream));
  }

 private:
  // A caller that hands new buffers every call (a Python loop over CuPy arrays) would
  // otherwise grow the cache without end; callers that keep their buffers use a few keys.
  static constexpr std::size_t kMaxGraphs = 16;

  // Every graph goes (one still running is freed when it completes).
  void clear() noexcept {
    for (auto& [key, exec] : m_graphs) PF_CUDA_CHECK_NOTHROW(cudaGraphExecDestroy(exec));
    m_graphs.clear();
  }

  std::map<Key, cudaGraphExec_t> m_graphs;
};

}  // namespace poreforge::cuda
