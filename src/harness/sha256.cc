#include "harness/sha256.h"

#include <openssl/evp.h>

#include <cstdint>
#include <stdexcept>

namespace solbench::harness {
namespace {

std::string to_hex(const unsigned char* d, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    s[2 * i] = digits[d[i] >> 4];
    s[2 * i + 1] = digits[d[i] & 15];
  }
  return s;
}

}  // namespace

struct Sha256::Impl {
  EVP_MD_CTX* ctx = nullptr;
  Impl() {
    ctx = EVP_MD_CTX_new();
    if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) != 1) {
      EVP_MD_CTX_free(ctx);
      throw std::runtime_error("OpenSSL SHA-256 initialisation failed");
    }
  }
  ~Impl() { EVP_MD_CTX_free(ctx); }
  void update(const void* p, size_t n) {
    if (EVP_DigestUpdate(ctx, p, n) != 1) throw std::runtime_error("OpenSSL SHA-256 update failed");
  }
  std::string finish() {
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_DigestFinal_ex(ctx, out, &len) != 1)
      throw std::runtime_error("OpenSSL SHA-256 final failed");
    return to_hex(out, len);
  }
};

Sha256::Sha256() : impl_(std::make_unique<Impl>()) {}
Sha256::~Sha256() = default;

Sha256& Sha256::update(std::string_view data) {
  impl_->update(data.data(), data.size());
  return *this;
}

Sha256& Sha256::field(std::string_view data) {
  unsigned char len[8];
  const uint64_t n = data.size();
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(n >> (8 * i));
  impl_->update(len, 8);
  impl_->update(data.data(), data.size());
  return *this;
}

std::string Sha256::hex_digest() { return impl_->finish(); }

std::string sha256_hex(std::string_view data) { return Sha256().update(data).hex_digest(); }

std::string_view sha256_backend() { return "openssl"; }

}  // namespace solbench::harness
