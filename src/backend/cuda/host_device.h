#pragma once
// PAGODA_HOST_DEVICE: plain arithmetic that nvcc compiles for both sides and the host
// compiler for the host alone (attention_rows.h, matmul_vec_tiling.h, tested on the host).

#if defined(__CUDACC__)
#define PAGODA_HOST_DEVICE __host__ __device__
#else
#define PAGODA_HOST_DEVICE
#endif
