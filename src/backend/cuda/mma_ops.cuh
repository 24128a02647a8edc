#pragma once
// The inline PTX the tensor-core attention (attention_mma_kernel.cuh) uses: the mma of
// one 16 x 8 x 16 tile and 16-byte asynchronous copies into shared memory. A host
// emulation of CUDA threads (tests/backend/cuda/simt_emulation.h) defines
// PAGODA_SIMT_EMULATION and gives its own.

#include <cuda_runtime.h>

#include <cstdint>

#ifndef PAGODA_SIMT_EMULATION
namespace pagoda::backend::cuda {

// d += a b for one 16 x 8 x 16 tile: a row-major (4 registers of two f16), b column-major
// (2 registers), d f32. Lane l holds a's rows l / 4 and l / 4 + 8, columns 2 (l % 4)
// and +1, +8, +9; b's rows 2 (l % 4), +1, +8, +9 of column l / 4; d's rows l / 4 and
// l / 4 + 8, columns 2 (l % 4) and +1.
__device__ __forceinline__ void mma_16x8x16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void copy_16_async(void* shared, const void* global) {
  const auto address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(address), "l"(global));
}

__device__ __forceinline__ void wait_async_copies() {
  asm volatile("cp.async.wait_all;\n" ::: "memory");
}

}  // namespace pagoda::backend::cuda
#endif
