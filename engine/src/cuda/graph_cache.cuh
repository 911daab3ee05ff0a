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
  std::map<Key, cudaGraphExec_t> m_graphs;
};

// Graph loops (a while node: its body runs again as long as a kernel in it says so) need
// CUDA 12.4 and a stream being captured; without them callers launch a fixed sequence.
#if CUDART_VERSION >= 12040
#define PF_CUDA_GRAPH_LOOPS 1
using LoopHandle = cudaGraphConditionalHandle;
#else
#define PF_CUDA_GRAPH_LOOPS 0
using LoopHandle = unsigned long long;  // unused
#endif

inline bool graph_loops_available(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  PF_CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
  return PF_CUDA_GRAPH_LOOPS && status == cudaStreamCaptureStatusActive;
}

#if PF_CUDA_GRAPH_LOOPS
// Inside a capture of `stream` (graph_loops_available): appends a while loop. `start(handle)`
// enqueues on `stream` what sets the loop's first condition (a kernel calling
// cudaGraphSetConditional(handle, …)); `body(body_stream, handle)` enqueues one iteration,
// which sets the condition for the next, and is captured into the loop's body graph. The
// capture of `stream` goes on after the loop.
template <class Start, class Body>
void capture_while(cudaStream_t stream, cudaStream_t body_stream, Start&& start, Body&& body) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaGraph_t graph = nullptr;
  const cudaGraphNode_t* dependencies = nullptr;
  std::size_t count = 0;
  PF_CUDA_CHECK(cudaStreamGetCaptureInfo(stream, &status, nullptr, &graph, nullptr, nullptr, nullptr));
  LoopHandle handle{};
  PF_CUDA_CHECK(cudaGraphConditionalHandleCreate(&handle, graph, 0, cudaGraphCondAssignDefault));
  start(handle);
  PF_CUDA_CHECK(cudaStreamGetCaptureInfo(stream, &status, nullptr, &graph, &dependencies, nullptr, &count));
  cudaGraphNodeParams params{};
  params.type = cudaGraphNodeTypeConditional;
  params.conditional.handle = handle;
  params.conditional.type = cudaGraphCondTypeWhile;
  params.conditional.size = 1;
  cudaGraphNode_t loop = nullptr;
  PF_CUDA_CHECK(cudaGraphAddNode(&loop, graph, dependencies, nullptr, count, &params));
  PF_CUDA_CHECK(cudaStreamBeginCaptureToGraph(body_stream, params.conditional.phGraph_out[0], nullptr, nullptr, 0,
                                              cudaStreamCaptureModeThreadLocal));
  try {
    body(body_stream, handle);
  } catch (...) {
    cudaGraph_t ignored = nullptr;
    cudaStreamEndCapture(body_stream, &ignored);
    throw;
  }
  cudaGraph_t body_graph = nullptr;
  PF_CUDA_CHECK(cudaStreamEndCapture(body_stream, &body_graph));
  PF_CUDA_CHECK(cudaStreamUpdateCaptureDependencies(stream, &loop, nullptr, 1, cudaStreamSetCaptureDependencies));
}
#endif

}  // namespace poreforge::cuda
