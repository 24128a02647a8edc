#pragma once
// Runs a CUDA kernel's own source on the host, one block at a time, for tests that check
// a kernel's logic where no GPU is (CI): each CUDA thread of the block is a fiber
// (ucontext) on the calling thread, switched at the points where CUDA threads wait for
// one another: __syncthreads is a barrier of the block, shuffles and ballots exchange
// through a barrier of the warp. __shared__ variables become static (one block runs at a
// time), a kernel's dynamic shared memory (PAGODA_DYNAMIC_SHARED) the block's buffer of
// the bytes run_block is given, every bit set at the block's start; the f32 intrinsics round as IEEE operations do (volatile
// keeps the compiler from fusing them), the integer ones (dp4a, byte permutes, funnel
// shifts, bytewise subtraction) compute what the CUDA documentation says they do.
// Include it before any kernel header: it takes over the qualifiers cuda_runtime.h
// defines for host compilers.
//
// What it cannot show: timing, memory ordering beyond what the barriers give, and most
// interleavings between barriers (a fiber runs alone until it waits; blocks of odd index
// run their threads in reverse order, so a missing barrier shows in one order or the
// other). A block whose
// threads wait at barriers that never fill (divergence at a __syncthreads) aborts with a
// message instead of hanging.

// Kernel headers with inline PTX (mma_ops.cuh) leave it to this file.
#define PAGODA_SIMT_EMULATION 1

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <ucontext.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __launch_bounds__
#undef __shared__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(threads)
#define __shared__ static

namespace pagoda::simt {

struct Index {
  unsigned x = 0, y = 0, z = 0;
};
inline Index thread_index;  // the running fiber's
inline Index block_index;
// blockDim and gridDim below are variables, not macros (cudaLaunchConfig_t has members
// of those names); gridDim is set by run_blocks, which kernels that read it go through.
inline Index block_dim;
inline Index grid_dim;

struct Barrier {
  int arrived = 0;
  uint64_t generation = 0;
};

// The block being run: a fiber per thread, the block's barrier, and per warp a barrier
// and the bytes its lanes exchange through (warp_gather).
struct Block {
  std::function<void()> body;
  int threads = 0;
  ucontext_t scheduler{};
  std::vector<ucontext_t> contexts;
  std::vector<bool> done;
  Barrier all;
  std::vector<Barrier> warps;
  std::vector<int> votes;  // [threads]
  std::vector<uint4> dynamic_shared;  // the launch's dynamic shared memory, 16-byte aligned
  std::vector<std::vector<std::byte>> gathered;  // per warp: 32 lanes' values (warp_gather)
  uint64_t progress = 0;   // arrivals and ends, to see a block that cannot go on
};
inline Block* block = nullptr;

// The fibers' stacks, kept from block to block.
inline std::vector<std::vector<std::byte>>& stacks() {
  static std::vector<std::vector<std::byte>> kept;
  return kept;
}

inline void yield() {
  swapcontext(&block->contexts[thread_index.x], &block->scheduler);
}

// Waits until every one of `count` threads has arrived at `b`.
inline void wait_at(Barrier& b, int count) {
  ++block->progress;
  const uint64_t generation = b.generation;
  if (++b.arrived == count) {
    b.arrived = 0;
    ++b.generation;
    return;
  }
  while (b.generation == generation) yield();
}

inline void fiber_entry() {
  block->body();
  block->done[thread_index.x] = true;
  ++block->progress;
}  // then uc_link: back to the scheduler

// Runs body() as one block of `threads` threads (a multiple of 32), block index `index`,
// with `shared_bytes` of dynamic shared memory.
inline void run_block(int threads, Index index, std::function<void()> body, size_t shared_bytes = 0) {
  constexpr size_t kStackBytes = size_t{64} << 10;
  Block b;
  b.body = std::move(body);
  b.threads = threads;
  // Poisoned, as a GPU leaves it undefined: all bits set (a NaN as a float, -1 as an
  // integer), so that a kernel reading what no thread wrote goes wrong here too.
  b.dynamic_shared.assign((shared_bytes + sizeof(uint4) - 1) / sizeof(uint4), make_uint4(~0u, ~0u, ~0u, ~0u));
  b.contexts.resize(static_cast<size_t>(threads));
  b.done.assign(static_cast<size_t>(threads), false);
  b.warps.resize(static_cast<size_t>(threads / 32));
  b.votes.assign(static_cast<size_t>(threads), 0);
  b.gathered.resize(static_cast<size_t>(threads / 32));
  block = &b;
  block_index = index;
  block_dim.x = static_cast<unsigned>(threads);
  std::vector<std::vector<std::byte>>& stack = stacks();
  if (stack.size() < static_cast<size_t>(threads)) stack.resize(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    std::vector<std::byte>& memory = stack[static_cast<size_t>(t)];
    memory.resize(kStackBytes);
    ucontext_t& c = b.contexts[static_cast<size_t>(t)];
    getcontext(&c);
    c.uc_stack.ss_sp = memory.data();
    c.uc_stack.ss_size = memory.size();
    c.uc_link = &b.scheduler;
    makecontext(&c, fiber_entry, 0);
  }
  // Blocks of odd index run their threads from the last to the first: a kernel that reads
  // what another thread writes without a barrier between then goes wrong in one order or
  // the other, whichever thread writes.
  const bool reversed = (index.x + index.y + index.z) % 2 == 1;
  for (bool running = true; running;) {
    running = false;
    const uint64_t before = b.progress;
    for (int i = 0; i < threads; ++i) {
      const int t = reversed ? threads - 1 - i : i;
      if (b.done[static_cast<size_t>(t)]) continue;
      running = true;
      thread_index.x = static_cast<unsigned>(t);
      swapcontext(&b.scheduler, &b.contexts[static_cast<size_t>(t)]);
    }
    if (running && b.progress == before) {
      std::fprintf(stderr, "simt: the block's threads wait at barriers that cannot fill\n");
      std::abort();
    }
  }
  block = nullptr;
}

// The same for block index (index, 0, 0).
inline void run_block(int threads, unsigned index, std::function<void()> body, size_t shared_bytes = 0) {
  run_block(threads, Index{index, 0, 0}, std::move(body), shared_bytes);
}

// A launch of `blocks` blocks along x, one after another (gridDim set for them).
inline void run_blocks(unsigned blocks, int threads, const std::function<void()>& body, size_t shared_bytes = 0) {
  grid_dim = Index{blocks, 1, 1};
  for (unsigned b = 0; b < blocks; ++b) run_block(threads, b, body, shared_bytes);
}

// Every lane's `mine`, in lane order, for every lane of the calling thread's warp.
template <typename T>
void warp_gather(const T& mine, T (&all)[32]) {
  const size_t warp = thread_index.x / 32, lane = thread_index.x % 32;
  std::vector<std::byte>& slots = block->gathered[warp];
  slots.resize(32 * sizeof(T));
  std::memcpy(slots.data() + lane * sizeof(T), &mine, sizeof(T));
  wait_at(block->warps[warp], 32);
  std::memcpy(all, slots.data(), 32 * sizeof(T));
  wait_at(block->warps[warp], 32);
}

// Thread `source_lane`'s value of v, in the calling thread's warp.
template <typename T>
T warp_exchange(T v, int source_lane) {
  T all[32];
  warp_gather(v, all);
  return all[source_lane];
}

}  // namespace pagoda::simt

#define threadIdx ::pagoda::simt::thread_index
#define blockIdx ::pagoda::simt::block_index
inline const pagoda::simt::Index& blockDim = pagoda::simt::block_dim;
inline const pagoda::simt::Index& gridDim = pagoda::simt::grid_dim;
#define PAGODA_DYNAMIC_SHARED(type, name) \
  type* name = reinterpret_cast<type*>(::pagoda::simt::block->dynamic_shared.data())

inline void __syncthreads() { pagoda::simt::wait_at(pagoda::simt::block->all, pagoda::simt::block->threads); }
inline int __syncthreads_or(int predicate) {
  pagoda::simt::Block& b = *pagoda::simt::block;
  b.votes[threadIdx.x] = predicate != 0;
  __syncthreads();
  int any = 0;
  for (const int v : b.votes) any |= v;
  __syncthreads();
  return any;
}
template <typename T>
T __shfl_xor_sync(unsigned, T v, int mask) {
  return pagoda::simt::warp_exchange(v, static_cast<int>(threadIdx.x % 32) ^ mask);
}
template <typename T>
T __shfl_sync(unsigned, T v, int lane) {
  return pagoda::simt::warp_exchange(v, lane);
}
template <typename T>
T __shfl_up_sync(unsigned, T v, int delta) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  return pagoda::simt::warp_exchange(v, lane >= delta ? lane - delta : lane);
}
inline unsigned __ballot_sync(unsigned, int predicate) {
  int all[32];
  pagoda::simt::warp_gather(predicate != 0 ? 1 : 0, all);
  unsigned votes = 0;
  for (int lane = 0; lane < 32; ++lane) votes |= all[lane] != 0 ? 1u << lane : 0u;
  return votes;
}
inline void __syncwarp(unsigned = 0xffffffffu) {
  pagoda::simt::wait_at(pagoda::simt::block->warps[threadIdx.x / 32], 32);
}
inline int __any_sync(unsigned mask, int predicate) { return __ballot_sync(mask, predicate) != 0; }
inline int __popc(unsigned v) { return __builtin_popcount(v); }
// One fiber runs at a time: plain reads and writes are atomic here.
template <typename T>
T atomicAdd(T* p, T v) {
  const T old = *p;
  *p = old + v;
  return old;
}
inline unsigned long long atomicMin(unsigned long long* p, unsigned long long v) {
  const unsigned long long old = *p;
  *p = std::min(old, v);
  return old;
}
inline int atomicExch(int* p, int v) {
  const int old = *p;
  *p = v;
  return old;
}

inline float __fadd_rn(float a, float b) {
  volatile float r = a + b;
  return r;
}
inline float __fsub_rn(float a, float b) {
  volatile float r = a - b;
  return r;
}
inline float __fmul_rn(float a, float b) {
  volatile float r = a * b;
  return r;
}
inline float __fdiv_rn(float a, float b) {
  volatile float r = a / b;
  return r;
}
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline int __float2int_rn(float f) { return static_cast<int>(std::nearbyint(f)); }  // the default mode: half to even
inline int __float_as_int(float f) { return std::bit_cast<int>(f); }

// Read-only loads: plain loads here.
template <typename T>
T __ldg(const T* p) {
  return *p;
}
// The four signed bytes of a times those of b, added to c.
inline int __dp4a(int a, int b, int c) {
  for (int i = 0; i < 4; ++i) c += static_cast<int8_t>(a >> (8 * i)) * static_cast<int8_t>(b >> (8 * i));
  return c;
}
// Byte n of the result: byte (s >> 4 n) & 7 of the eight bytes y:x (x's are 0..3).
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const uint64_t bytes = (static_cast<uint64_t>(y) << 32) | x;
  unsigned out = 0;
  for (int n = 0; n < 4; ++n) out |= static_cast<unsigned>((bytes >> (8 * ((s >> (4 * n)) & 7))) & 0xFFu) << (8 * n);
  return out;
}
// The low 32 bits of hi:lo shifted right by shift & 31.
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned shift) {
  return static_cast<unsigned>(((static_cast<uint64_t>(hi) << 32) | lo) >> (shift & 31));
}
// Bytewise a - b, each byte modulo 256.
inline unsigned __vsub4(unsigned a, unsigned b) {
  unsigned out = 0;
  for (int n = 0; n < 4; ++n) out |= (((a >> (8 * n)) - (b >> (8 * n))) & 0xFFu) << (8 * n);
  return out;
}
inline float __uint_as_float(unsigned u) { return std::bit_cast<float>(u); }
inline unsigned __float_as_uint(float f) { return std::bit_cast<unsigned>(f); }
inline int64_t min(int64_t a, int64_t b) { return a < b ? a : b; }
inline uint32_t min(uint32_t a, uint32_t b) { return a < b ? a : b; }
inline int min(int a, int b) { return a < b ? a : b; }
using std::exp;
using std::isfinite;
using std::isnan;
using std::ldexp;
using std::log;

// mma_ops.cuh's operations. mma.sync m16n8k16 (A row-major, B column-major, f16 inputs, f32
// accumulators) as the PTX ISA lays out its fragments: lane l (g = l / 4, t = l % 4) holds
// A[g][2t, 2t+1], A[g+8][2t, 2t+1], A[g][2t+8, 2t+9], A[g+8][2t+8, 2t+9] in a[0..3] (the
// first of each pair in the low half), B[2t, 2t+1][g] in b0 and B[2t+8, 2t+9][g] in b1,
// D[g][2t, 2t+1] and D[g+8][2t, 2t+1] in d[0..3]. The products of f16 values are exact;
// each lane's 16 are summed in double and added to its accumulator once (the tensor
// cores' order and internal precision are their own: tests compare within a tolerance).
namespace pagoda::backend::cuda {

inline void mma_16x8x16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  struct Fragments {
    uint32_t a[4], b[2];
  };
  Fragments all[32];
  simt::warp_gather(Fragments{{a[0], a[1], a[2], a[3]}, {b0, b1}}, all);
  const auto half_of = [](uint32_t pair, int high) {
    return static_cast<double>(__half2float(__ushort_as_half(static_cast<unsigned short>(high ? pair >> 16 : pair))));
  };
  const auto a_at = [&](int row, int col) {  // the lane and register holding A[row][col]
    const int lane = 4 * (row % 8) + (col % 8) / 2, reg = (row >= 8 ? 1 : 0) + (col >= 8 ? 2 : 0);
    return half_of(all[lane].a[reg], col % 2);
  };
  const auto b_at = [&](int row, int col) {
    const int lane = 4 * col + (row % 8) / 2;
    return half_of(all[lane].b[row >= 8 ? 1 : 0], row % 2);
  };
  const int lane = static_cast<int>(threadIdx.x % 32), g = lane / 4, t = lane % 4;
  for (int i = 0; i < 4; ++i) {
    const int row = g + (i >= 2 ? 8 : 0), col = 2 * t + i % 2;
    double sum = 0.0;
    for (int k = 0; k < 16; ++k) sum += a_at(row, k) * b_at(k, col);
    d[i] = static_cast<float>(static_cast<double>(d[i]) + sum);
  }
}

// cp.async of 16 bytes: copied at once here; wait_all has nothing to wait for. The GPU
// faults on a source or destination that is not 16-byte aligned: so does this.
inline void copy_16_async(void* shared, const void* global) {
  if (reinterpret_cast<uintptr_t>(shared) % 16 != 0 || reinterpret_cast<uintptr_t>(global) % 16 != 0) {
    std::fprintf(stderr, "simt emulation: cp.async of 16 bytes from %p to %p, not 16-byte aligned\n", global, shared);
    std::abort();
  }
  std::memcpy(shared, global, 16);
}
inline void wait_async_copies() {}

}  // namespace pagoda::backend::cuda
