// The vector chunk kernels compiled for AVX-512 (F, VL): the same 8-float operations in
// 32 vector registers, so tiles of 6 query rows: a prompt's queries (units of 8 queries x
// the heads of a KV head) convert and load each K and V row half as often.

#include "backend/cpu/attention/attention_chunk_kernels_simd.h"

namespace pagoda::backend::cpu::avx512 {

const ChunkKernels kChunkKernels = chunk_simd::kernels_of_rows<6>();

}  // namespace pagoda::backend::cpu::avx512
