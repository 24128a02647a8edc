#pragma once
// A kernel's dynamic shared memory (the bytes its launch asks for) as `type name[]`. A
// host emulation of CUDA threads (tests) defines PAGODA_DYNAMIC_SHARED before it includes
// a kernel's source, giving the block's buffer instead.

#ifndef PAGODA_DYNAMIC_SHARED
#define PAGODA_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#endif
