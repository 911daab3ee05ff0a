#pragma once
// Move-only RAII device memory, allocated and freed in stream order. A copy could not name
// its stream, so there is none; move-assignment frees the old buffer first.
#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <utility>

#include "check.cuh"

namespace poreforge::cuda {

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(std::size_t count, cudaStream_t stream, const char* what) : m_count(count), m_stream(stream) {
    if (count == 0) return;
    const cudaError_t err = cudaMallocAsync(reinterpret_cast<void**>(&m_data), bytes(), stream);
    if (err != cudaSuccess) {
      cudaGetLastError();
      throw MemoryLimitError("out of device memory: allocating " + std::to_string(bytes()) + " bytes (" +
                         std::to_string(bytes() >> 20) + " MiB) for " + what + " failed: " +
                         cudaGetErrorString(err));
    }
  }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      m_data = std::exchange(o.m_data, nullptr);
      m_count = std::exchange(o.m_count, 0);
      m_stream = o.m_stream;
    }
    return *this;
  }

  T* data() const { return m_data; }
  std::size_t size() const { return m_count; }
  std::size_t bytes() const { return m_count * sizeof(T); }

 private:
  void release() noexcept {
    if (m_data) PF_CUDA_CHECK_NOTHROW(cudaFreeAsync(m_data, m_stream));
    m_data = nullptr;
    m_count = 0;
  }
  T* m_data = nullptr;
  std::size_t m_count = 0;
  cudaStream_t m_stream = nullptr;
};

// A device copy of `count` host values, in stream order (the host memory must stay valid until
// the stream has copied it).
template <class T>
DeviceBuffer<T> upload_async(const T* host, std::size_t count, cudaStream_t stream, const char* what) {
  DeviceBuffer<T> d(count, stream, what);
  if (count) PF_CUDA_CHECK(cudaMemcpyAsync(d.data(), host, d.bytes(), cudaMemcpyHostToDevice, stream));
  return d;
}

// A non-blocking stream, destroyed with its owner.
class Stream {
 public:
  Stream() { PF_CUDA_CHECK(cudaStreamCreateWithFlags(&m_stream, cudaStreamNonBlocking)); }
  ~Stream() {
    if (m_stream) PF_CUDA_CHECK_NOTHROW(cudaStreamDestroy(m_stream));
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return m_stream; }

 private:
  cudaStream_t m_stream = nullptr;
};

// A CUDA event, destroyed with its owner.
class Event {
 public:
  explicit Event(unsigned flags = cudaEventDefault) { PF_CUDA_CHECK(cudaEventCreateWithFlags(&m_event, flags)); }
  ~Event() {
    if (m_event) PF_CUDA_CHECK_NOTHROW(cudaEventDestroy(m_event));
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return m_event; }

 private:
  cudaEvent_t m_event = nullptr;
};

}  // namespace poreforge::cuda
