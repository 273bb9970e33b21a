// SHA-256 through OpenSSL's libcrypto (EVP), for content-addressed build cache keys.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace solbench::harness {

// Incremental hash. Not copyable (owns one EVP context).
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  Sha256& update(std::string_view data);
  // Length-prefixed update: hashing ("ab","c") differs from ("a","bc").
  Sha256& field(std::string_view data);
  // 64 lowercase hex digits; the object must not be updated afterwards.
  std::string hex_digest();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

std::string sha256_hex(std::string_view data);

// Always "openssl" (kept for the build log and the trace).
std::string_view sha256_backend();

}  // namespace solbench::harness
