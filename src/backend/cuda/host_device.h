#pragma once
// PAGODA_HOST_DEVICE: plain arithmetic that nvcc compiles for both sides and the host
// compiler for the host alone (attention_rows.h, matmul_vec_tiling.h, tested on the host).

#if defined(__CUDACC__)
#define PAGODA_HOST_DEVICE __host__ __device__
#else
#define PAGODA_HOST_DEVICE
#endif

// PAGODA_NOINLINE: a device function kept out of line (nvcc's __noinline__); a host
// compiler, as in the emulation of kernels on the host, takes GCC's attribute (libstdc++
// spells that attribute __noinline__ too, so the CUDA name cannot be a host macro).
#if defined(__CUDACC__)
#define PAGODA_NOINLINE __noinline__
#else
#define PAGODA_NOINLINE __attribute__((noinline))
#endif
