// CUPTI's parameter blocks (profiler host, range profiler, target): zeroed, with
// their size set, which is how the API tells its versions apart.
#pragma once

#include <cstddef>

namespace solbench::gpu::detail {

template <typename P>
P cupti_params(size_t struct_size) {
  P p{};
  p.structSize = struct_size;
  return p;
}

}  // namespace solbench::gpu::detail

// SB_CUPTI_PARAMS(CUpti_Profiler_Initialize_Params): the block, ready to fill.
#define SB_CUPTI_PARAMS(T) ::solbench::gpu::detail::cupti_params<T>(T##_STRUCT_SIZE)
