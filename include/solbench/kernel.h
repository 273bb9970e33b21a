/* solbench native kernel binding [ext]: a plain C ABI, no torch headers.
 *
 * A C++-family solution with `"binding": "native"` exports one entry function
 * (the function named in `entry_point`) with the signature `sb_entry_fn`:
 *
 *   #include <solbench/kernel.h>
 *   SB_EXPORT int my_kernel(const sb_tensor* inputs, int32_t n_inputs,
 *                           sb_tensor* outputs, int32_t n_outputs, void* stream);
 *
 * - inputs are in the definition's `inputs` order, outputs in its `outputs` order;
 * - outputs are always pre-allocated by the harness (destination-passing style) and
 *   filled with a poison pattern: the kernel must write every element;
 * - tensors live on the solution's device (`device` >= 0: CUDA ordinal, -1: host);
 *   scalar inputs (`shape: null`) arrive as 0-d tensors on the HOST (device -1) in the
 *   definition's dtype, even for GPU kernels, so they can be read directly;
 * - `stream` is the cudaStream_t to launch on (NULL for CPU solutions); the call must
 *   not synchronise the device or leave work on other streams;
 * - return 0 on success, any other value is a runtime error (the code is reported).
 *
 * The harness owns every pointer passed in; the kernel must not free or retain them.
 * See docs/native-binding.md for a complete example.
 */
#ifndef SOLBENCH_KERNEL_H_
#define SOLBENCH_KERNEL_H_

#include <stdint.h>

/* Bumped on any incompatible change of the structures or the entry signature. */
#define SB_ABI_VERSION 1

/* Dtype codes; equal to DTypeInfo::kernel_code in solbench's core/dtype.h. */
enum sb_dtype_code {
  SB_DTYPE_F64 = 0,
  SB_DTYPE_F32 = 1,
  SB_DTYPE_F16 = 2,
  SB_DTYPE_BF16 = 3,
  SB_DTYPE_F8E4M3 = 4,   /* float8_e4m3fn */
  SB_DTYPE_F8E5M2 = 5,   /* float8_e5m2 */
  SB_DTYPE_F4E2M1 = 6,   /* one FP4 value per element (storage: half a byte) */
  SB_DTYPE_F4E2M1X2 = 7, /* two FP4 values packed per byte; shape counts bytes */
  SB_DTYPE_I64 = 8,
  SB_DTYPE_I32 = 9,
  SB_DTYPE_I16 = 10,
  SB_DTYPE_I8 = 11,
  SB_DTYPE_U8 = 12,
  SB_DTYPE_BOOL = 13
};

#define SB_DEVICE_CPU (-1)

/* A non-owning view of one tensor. `shape` and `strides` hold `ndim` entries
 * (NULL when ndim == 0); strides are in ELEMENTS, not bytes. */
typedef struct sb_tensor {
  void* data;
  int32_t dtype;  /* enum sb_dtype_code */
  int32_t ndim;
  const int64_t* shape;
  const int64_t* strides;
  int32_t device; /* SB_DEVICE_CPU (-1) or a CUDA device ordinal */
} sb_tensor;

typedef int (*sb_entry_fn)(const sb_tensor* inputs, int32_t n_inputs, sb_tensor* outputs,
                           int32_t n_outputs, void* stream);

#ifdef __cplusplus
#define SB_EXTERN_C extern "C"
#else
#define SB_EXTERN_C
#endif

/* Marks the entry function: C linkage (unmangled name) and default visibility. */
#define SB_EXPORT SB_EXTERN_C __attribute__((visibility("default")))

/* Every object including this header carries the ABI version it was built
 * against; the harness reads `sb_abi_version` from the shared object and refuses a
 * mismatch. Weak, so several translation units may include the header. Define
 * SB_NO_ABI_SYMBOL before including to leave it out (the harness itself does). */
#ifndef SB_NO_ABI_SYMBOL
SB_EXTERN_C __attribute__((weak, visibility("default"), used))
const int32_t sb_abi_version = SB_ABI_VERSION;
#endif

/* Bits of storage per element (4 for SB_DTYPE_F4E2M1), 0 for an unknown code. */
static inline int32_t sb_dtype_bits(int32_t dtype) {
  switch (dtype) {
    case SB_DTYPE_F64: case SB_DTYPE_I64: return 64;
    case SB_DTYPE_F32: case SB_DTYPE_I32: return 32;
    case SB_DTYPE_F16: case SB_DTYPE_BF16: case SB_DTYPE_I16: return 16;
    case SB_DTYPE_F8E4M3: case SB_DTYPE_F8E5M2: case SB_DTYPE_F4E2M1X2:
    case SB_DTYPE_I8: case SB_DTYPE_U8: case SB_DTYPE_BOOL: return 8;
    case SB_DTYPE_F4E2M1: return 4;
    default: return 0;
  }
}

/* Number of elements (product of the shape; 1 for a 0-d tensor). */
static inline int64_t sb_numel(const sb_tensor* t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t->ndim; ++i) n *= t->shape[i];
  return n;
}

/* True when the strides are the row-major (C-contiguous) ones for the shape. */
static inline int sb_is_contiguous(const sb_tensor* t) {
  int64_t expected = 1;
  for (int32_t i = t->ndim - 1; i >= 0; --i) {
    if (t->shape[i] != 1 && t->strides[i] != expected) return 0;
    expected *= t->shape[i];
  }
  return 1;
}

#endif /* SOLBENCH_KERNEL_H_ */
