#include "backend/cuda/gemm_bound.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <vector>

#include "backend/cuda/device_memory.h"

namespace pagoda::backend::cuda {
namespace {

constexpr int kWarmups = 2, kTimed = 5;

// Values in [-1, 1) from a hash of the index: random enough that the products run as on
// real data (zeros can run faster), made on the device.
__global__ void fill_kernel(__nv_bfloat16* p, int64_t n, uint32_t seed) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    uint32_t h = static_cast<uint32_t>(i) * 0x9E3779B1u ^ seed ^ static_cast<uint32_t>(i >> 32);
    h ^= h >> 15;
    h *= 0x2C1B3C6Du;
    h ^= h >> 12;
    p[i] = __float2bfloat16(static_cast<float>(h) * (2.0f / 4294967296.0f) - 1.0f);
  }
}

bool fill(__nv_bfloat16* p, int64_t n, uint32_t seed, cudaStream_t stream) {
  fill_kernel<<<1024, 256, 0, stream>>>(p, n, seed);
  return cudaGetLastError() == cudaSuccess;
}

}  // namespace

std::optional<double> measure_bf16_gemm_seconds(cublasHandle_t cublas, cudaStream_t stream,
                                                std::span<const Backend::GemmShape> shapes, int64_t n_tokens) {
  int64_t max_w = 0, max_in = 0, max_out = 0;
  for (const Backend::GemmShape& s : shapes) {
    if (s.n_out <= 0 || s.n_in <= 0 || s.n_out > INT_MAX || s.n_in > INT_MAX) return std::nullopt;
    max_w = std::max(max_w, s.n_out * s.n_in);
    max_in = std::max(max_in, s.n_in);
    max_out = std::max(max_out, s.n_out);
  }
  if (shapes.empty() || n_tokens <= 0 || n_tokens > INT_MAX) return std::nullopt;
  const size_t bf16 = sizeof(__nv_bfloat16);
  Expected<DeviceMemory> w = DeviceMemory::allocate(static_cast<size_t>(max_w) * bf16, MemoryKind::kDevice, "a GEMM test");
  Expected<DeviceMemory> x =
      DeviceMemory::allocate(static_cast<size_t>(max_in * n_tokens) * bf16, MemoryKind::kDevice, "a GEMM test");
  Expected<DeviceMemory> y =
      DeviceMemory::allocate(static_cast<size_t>(max_out * n_tokens) * bf16, MemoryKind::kDevice, "a GEMM test");
  if (!w.ok() || !x.ok() || !y.ok()) return std::nullopt;
  auto* wp = static_cast<__nv_bfloat16*>(w->data());
  auto* xp = static_cast<__nv_bfloat16*>(x->data());
  auto* yp = static_cast<__nv_bfloat16*>(y->data());
  cudaEvent_t start = nullptr, stop = nullptr;
  bool ok = fill(wp, max_w, 1, stream) && fill(xp, max_in * n_tokens, 2, stream) &&
            cudaEventCreate(&start) == cudaSuccess && cudaEventCreate(&stop) == cudaSuccess;
  const float alpha = 1.0f, beta = 0.0f;
  // y [n][n_out] = x [n][n_in] W^T, W [n_out][n_in] row-major (matmul_gemm.cu's layout).
  auto gemm = [&](const Backend::GemmShape& s) {
    const int m = static_cast<int>(s.n_out), n = static_cast<int>(n_tokens), k = static_cast<int>(s.n_in);
    return cublasGemmEx(cublas, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, wp, CUDA_R_16BF, k, xp, CUDA_R_16BF, k,
                        &beta, yp, CUDA_R_16BF, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS;
  };
  double total = 0.0;
  for (size_t i = 0; ok && i < shapes.size(); ++i) {
    for (int r = 0; ok && r < kWarmups; ++r) ok = gemm(shapes[i]);
    std::vector<float> ms;
    for (int r = 0; ok && r < kTimed; ++r) {
      float elapsed = 0.0f;
      ok = cudaEventRecord(start, stream) == cudaSuccess && gemm(shapes[i]) &&
           cudaEventRecord(stop, stream) == cudaSuccess && cudaEventSynchronize(stop) == cudaSuccess &&
           cudaEventElapsedTime(&elapsed, start, stop) == cudaSuccess;
      ms.push_back(elapsed);
    }
    if (!ok) break;
    std::sort(ms.begin(), ms.end());
    total += static_cast<double>(shapes[i].count) * ms[ms.size() / 2] * 1e-3;
  }
  if (start != nullptr) cudaEventDestroy(start);
  if (stop != nullptr) cudaEventDestroy(stop);
  ok = ok && cudaStreamSynchronize(stream) == cudaSuccess;  // before the buffers go
  cudaGetLastError();
  if (!ok || total <= 0.0) return std::nullopt;
  return total;
}

}  // namespace pagoda::backend::cuda
