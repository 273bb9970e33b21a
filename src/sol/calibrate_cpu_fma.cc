// FMA throughput loops for the CPU calibration. Each variant keeps 12 independent
// vector accumulators (FMA latency 4 cycles x 2 pipes, with room to spare) so the
// loop is bound by the FMA pipes, not by a dependency chain (the inner loop is
// unrolled so the accumulators live in registers). The wide variants are
// compiled with target attributes and picked by __builtin_cpu_supports, so the
// rest of solbench keeps the project's flags (no -march=native).
#include <cstring>

#include "sol/calibrate_cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SOLBENCH_X86 1
#endif

namespace solbench::sol {

namespace {

constexpr int kChains = 12;

// Multiplier just under 1 and a small addend: the values stay bounded and normal.
#ifdef SOLBENCH_X86
__attribute__((target("avx512f"))) double fma512_ps(long n) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(1.0f + c * 1e-3f);
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-6f);
  for (long i = 0; i < n; ++i)
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  float sink[16];
  __m512 s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm512_add_ps(s, acc[c]);
  _mm512_storeu_ps(sink, s);
  volatile float keep = sink[0];
  (void)keep;
  return 2.0 * 16 * kChains * double(n);
}
__attribute__((target("avx512f"))) double fma512_pd(long n) {
  __m512d acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_pd(1.0 + c * 1e-3);
  const __m512d a = _mm512_set1_pd(0.999999), b = _mm512_set1_pd(1e-6);
  for (long i = 0; i < n; ++i)
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_pd(acc[c], a, b);
  double sink[8];
  __m512d s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm512_add_pd(s, acc[c]);
  _mm512_storeu_pd(sink, s);
  volatile double keep = sink[0];
  (void)keep;
  return 2.0 * 8 * kChains * double(n);
}
__attribute__((target("avx2,fma"))) double fma256_ps(long n) {
  __m256 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(1.0f + c * 1e-3f);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-6f);
  for (long i = 0; i < n; ++i)
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  float sink[8];
  __m256 s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm256_add_ps(s, acc[c]);
  _mm256_storeu_ps(sink, s);
  volatile float keep = sink[0];
  (void)keep;
  return 2.0 * 8 * kChains * double(n);
}
__attribute__((target("avx2,fma"))) double fma256_pd(long n) {
  __m256d acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_pd(1.0 + c * 1e-3);
  const __m256d a = _mm256_set1_pd(0.999999), b = _mm256_set1_pd(1e-6);
  for (long i = 0; i < n; ++i)
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_pd(acc[c], a, b);
  double sink[4];
  __m256d s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm256_add_pd(s, acc[c]);
  _mm256_storeu_pd(sink, s);
  volatile double keep = sink[0];
  (void)keep;
  return 2.0 * 4 * kChains * double(n);
}
#endif

// Portable fallback: a multiply and an add per step (2 FLOPs), which the
// compiler may vectorise across the chains with the baseline ISA.
template <typename T>
double generic_loop(long n) {
  T acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = T(1) + T(c) * T(1e-3);
  const T a = T(0.999999), b = T(1e-6);
  for (long i = 0; i < n; ++i)
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) acc[c] = acc[c] * a + b;
  T s = 0;
  for (int c = 0; c < kChains; ++c) s += acc[c];
  volatile T keep = s;
  (void)keep;
  return 2.0 * kChains * double(n);
}

}  // namespace

double fma_loop_fp32(long n, const char** isa) {
#ifdef SOLBENCH_X86
  if (__builtin_cpu_supports("avx512f")) return *isa = "avx512f", fma512_ps(n);
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return *isa = "avx2+fma", fma256_ps(n);
#endif
  *isa = "generic";
  return generic_loop<float>(n);
}

double fma_loop_fp64(long n, const char** isa) {
#ifdef SOLBENCH_X86
  if (__builtin_cpu_supports("avx512f")) return *isa = "avx512f", fma512_pd(n);
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return *isa = "avx2+fma", fma256_pd(n);
#endif
  *isa = "generic";
  return generic_loop<double>(n);
}

}  // namespace solbench::sol
