#include "sol/roofline.h"

#include <algorithm>

namespace solbench::sol {

namespace {
double ratio(double work, double rate) { return work > 0 && rate > 0 ? work / rate : 0; }
}  // namespace

Bound roofline(const Work& total, double input_bytes, double min_input_bytes, double output_bytes,
               const HardwareModel& hw, double min_output_bytes) {
  Bound b;
  b.work = total;
  b.boundary_bytes = input_bytes + output_bytes;
  const double written =
      min_output_bytes >= 0 ? std::min(min_output_bytes, output_bytes) : output_bytes;
  b.min_bytes = min_input_bytes + written;
  // Cache sizes are binary: "50 MB" of L2 is 50 MiB (the larger reading keeps the
  // bound a lower bound).
  b.l2_deferred_bytes = std::min(written, std::max(0.0, hw.l2_mb) * 1024.0 * 1024.0);
  b.dram_bytes = b.min_bytes - b.l2_deferred_bytes;
  b.unfused_bytes = total.bytes;
  // Tensor cores: classes share the same units, so their times add.
  for (size_t c = 0; c < kClasses; ++c)
    b.t_tensor += ratio(total.tensor_flops[c], hw.tensor_flops(MathClass(c)));
  // CUDA cores: float classes share the FMA pipes (times add); integer work
  // runs on its own pipe, so the term is the larger of the two.
  double t_float = 0;
  for (MathClass c : {MathClass::FP64, MathClass::FP32, MathClass::FP16, MathClass::BF16})
    t_float += ratio(total.cuda_flops[size_t(c)], hw.cuda_core_flops(c));
  double t_int = ratio(total.int_ops, hw.cuda_core_flops(MathClass::FP32));
  b.t_cuda = std::max(t_float, t_int);
  b.t_sfu = ratio(total.sfu_ops, hw.sfu_ops());
  b.t_dram = ratio(b.dram_bytes, hw.dram_bytes());
  b.t_sol = b.t_dram;
  b.bottleneck = "dram";
  if (b.t_tensor > b.t_sol) b.t_sol = b.t_tensor, b.bottleneck = "tensor";
  if (b.t_cuda > b.t_sol) b.t_sol = b.t_cuda, b.bottleneck = "cuda";
  if (b.t_sfu > b.t_sol) b.t_sol = b.t_sfu, b.bottleneck = "sfu";
  b.t_unfused = std::max({b.t_tensor, b.t_cuda, b.t_sfu, ratio(b.unfused_bytes, hw.dram_bytes())});
  double flops = total.tensor_total() + total.cuda_total();
  b.intensity = b.dram_bytes > 0 ? flops / b.dram_bytes : 0;
  return b;
}

}  // namespace solbench::sol
