#include <torch/extension.h>

torch::Tensor add_rows(const torch::Tensor& x, const torch::Tensor& y) {
  TORCH_CHECK(x.sizes() == y.sizes(), "add_rows: shapes differ");
  return x + y;
}
