// The device half of the records' input fingerprints (python/solbench_py/record.py,
// _device_sums): one pass of a kernel of ours over a tensor's words, where torch's
// operators take about sixteen passes over int64 temporaries (a call's digests of
// the peer's gemma3 SwiGLU inputs, 0.3 GB, took 23 ms that way on an H200).
// CUDA-free: a build without device kernels answers can_fingerprint() false, and
// record.py keeps its operators.
#pragma once

#include <cstddef>
#include <cstdint>

namespace solbench::gpu {

bool can_fingerprint();

// Queues on `stream` (a cudaStream_t, as an integer) the two sums of `bytes` bytes
// at `data` (device memory, 16-byte aligned) into `sums` (two int64 on the device,
// overwritten): over the little-endian 32-bit words w_i (the last one zero-padded),
// sign-extended, with k_i splitmix64's finaliser of i on int64 (arithmetic
// shifts), sums[0] = sum w_i k_i and sums[1] = sum w_i^2 (k_i | 1), modulo 2^64:
// exactly what record.py's operators compute.
void fingerprint(uintptr_t data, size_t bytes, uintptr_t sums, uintptr_t stream);

}  // namespace solbench::gpu
