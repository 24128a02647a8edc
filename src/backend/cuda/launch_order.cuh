#pragma once
// Programmatic dependent launch (sm_90 and later): a kernel launched with the attribute
// (Context::programmatic_launch) may start while the kernel before it on the stream is
// still running, once every block of that kernel has called allow_next_kernel() (or
// exited). It must call wait_for_previous_kernel() before it reads anything an earlier
// kernel wrote or writes anything one may still read; what it does before (reading
// weights, which no kernel writes) overlaps the previous kernel's tail and the launch
// gap. On older GPUs, and in kernels launched without the attribute, both are no-ops.

namespace pagoda::backend::cuda {

__device__ __forceinline__ void allow_next_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;");
#endif
}

__device__ __forceinline__ void wait_for_previous_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

}  // namespace pagoda::backend::cuda
