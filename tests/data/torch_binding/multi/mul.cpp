#include <torch/extension.h>

torch::Tensor mul_rows(const torch::Tensor& x, const torch::Tensor& y) {
  TORCH_CHECK(x.sizes() == y.sizes(), "mul_rows: shapes differ");
  return x * y;
}
