#pragma once
// CUDA and cuBLAS return codes as Status values (core/status.h): the library never
// aborts on a failed CUDA call, it hands the failure up with the runtime's own words.

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string>

#include "core/status.h"

namespace pagoda::backend::cuda {

// "what: <CUDA's message> (<error name>)", e.g. "cudaMemcpyAsync: an illegal memory
// access was encountered (cudaErrorIllegalAddress)".
inline std::string cuda_message(cudaError_t error, const std::string& what) {
  return what + ": " + cudaGetErrorString(error) + " (" + cudaGetErrorName(error) + ")";
}

// ok for cudaSuccess; otherwise an internal error (resource_exhausted when the device
// is out of memory) naming the call.
inline Status cuda_status(cudaError_t error, const std::string& what) {
  if (error == cudaSuccess) return {};
  if (error == cudaErrorMemoryAllocation) return resource_exhausted(cuda_message(error, what));
  return internal_error(cuda_message(error, what));
}

inline Status cublas_status(cublasStatus_t status, const std::string& what) {
  if (status == CUBLAS_STATUS_SUCCESS) return {};
  const std::string message = what + ": " + cublasGetStatusString(status) + " (" + cublasGetStatusName(status) + ")";
  if (status == CUBLAS_STATUS_ALLOC_FAILED) return resource_exhausted(message);
  return internal_error(message);
}

// Errors after which the CUDA context is unusable: every later call of this process on
// the device fails with the same error (a kernel fault is "sticky").
inline bool is_sticky(cudaError_t error) {
  switch (error) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
    case cudaErrorUnknown:
      return true;
    default:
      return false;
  }
}

}  // namespace pagoda::backend::cuda
