// The vector chunk kernels for AVX2 + FMA + F16C: tiles of 3 query rows (with 4
// positions or 4 vectors of dimensions, a tile fills the 16 vector registers).

#include "backend/cpu/attention/attention_chunk_kernels_simd.h"

namespace pagoda::backend::cpu::avx2 {

const ChunkKernels kChunkKernels = chunk_simd::kernels_of_rows<3>();

}  // namespace pagoda::backend::cpu::avx2
