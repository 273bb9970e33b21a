// A small PNG reader for the Chromium test: 8-bit greyscale, RGB and RGBA,
// not interlaced (what Chromium's screenshots are), inflated with zlib.
// Enough to ask "is this screenshot blank?"; throws std::runtime_error for
// anything else.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace solbench::report::testing {

struct PngImage {
  uint32_t width = 0, height = 0;
  int channels = 0;            // 1, 3 or 4
  std::vector<uint8_t> pixels;  // rows top to bottom, `channels` bytes a pixel
  uint32_t pixel(uint32_t x, uint32_t y) const {
    const uint8_t* p = &pixels[(size_t(y) * width + x) * channels];
    uint32_t v = 0;
    for (int c = 0; c < channels; ++c) v = v << 8 | p[c];
    return v;
  }
};

namespace detail {

inline uint32_t be32(const std::string& s, size_t at) {
  return uint32_t(uint8_t(s[at])) << 24 | uint32_t(uint8_t(s[at + 1])) << 16 |
         uint32_t(uint8_t(s[at + 2])) << 8 | uint32_t(uint8_t(s[at + 3]));
}

inline std::vector<uint8_t> inflate_all(const std::string& in) {
  z_stream z{};
  if (inflateInit(&z) != Z_OK) throw std::runtime_error("png: inflateInit failed");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = uInt(in.size());
  std::vector<uint8_t> out;
  uint8_t buf[1 << 16];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    z.next_out = buf;
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&z);
      throw std::runtime_error("png: corrupt image data (zlib " + std::to_string(rc) + ")");
    }
    out.insert(out.end(), buf, buf + (sizeof buf - z.avail_out));
  }
  inflateEnd(&z);
  return out;
}

inline uint8_t paeth(int a, int b, int c) {
  const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
  return uint8_t(pa <= pb && pa <= pc ? a : pb <= pc ? b : c);
}

}  // namespace detail

inline PngImage decode_png(const std::string& file) {
  static const std::string kSignature("\x89PNG\r\n\x1a\n", 8);
  if (file.compare(0, 8, kSignature) != 0) throw std::runtime_error("png: no PNG signature");
  PngImage img;
  int colour_type = -1;
  std::string idat;
  for (size_t at = 8; at + 12 <= file.size();) {
    const uint32_t len = detail::be32(file, at);
    const std::string type = file.substr(at + 4, 4);
    if (at + 12 + len > file.size()) throw std::runtime_error("png: truncated chunk " + type);
    const std::string data = file.substr(at + 8, len);
    if (type == "IHDR") {
      img.width = detail::be32(data, 0);
      img.height = detail::be32(data, 4);
      colour_type = uint8_t(data[9]);
      if (uint8_t(data[8]) != 8 || uint8_t(data[12]) != 0)
        throw std::runtime_error("png: only 8-bit, non-interlaced images are read here");
    } else if (type == "IDAT") {
      idat += data;
    } else if (type == "IEND") {
      break;
    }
    at += 12 + len;
  }
  switch (colour_type) {
    case 0: img.channels = 1; break;
    case 2: img.channels = 3; break;
    case 6: img.channels = 4; break;
    default: throw std::runtime_error("png: colour type " + std::to_string(colour_type) + " not read here");
  }
  const std::vector<uint8_t> raw = detail::inflate_all(idat);
  const size_t stride = size_t(img.width) * img.channels;
  if (raw.size() < (stride + 1) * img.height) throw std::runtime_error("png: too little image data");
  img.pixels.resize(stride * img.height);
  const int bpp = img.channels;
  for (uint32_t y = 0; y < img.height; ++y) {
    const uint8_t filter = raw[y * (stride + 1)];
    const uint8_t* in = &raw[y * (stride + 1) + 1];
    uint8_t* out = &img.pixels[y * stride];
    const uint8_t* up = y ? out - stride : nullptr;
    for (size_t i = 0; i < stride; ++i) {
      const int a = i >= size_t(bpp) ? out[i - bpp] : 0;
      const int b = up ? up[i] : 0;
      const int c = up && i >= size_t(bpp) ? up[i - bpp] : 0;
      switch (filter) {
        case 0: out[i] = in[i]; break;
        case 1: out[i] = uint8_t(in[i] + a); break;
        case 2: out[i] = uint8_t(in[i] + b); break;
        case 3: out[i] = uint8_t(in[i] + (a + b) / 2); break;
        case 4: out[i] = uint8_t(in[i] + detail::paeth(a, b, c)); break;
        default: throw std::runtime_error("png: unknown row filter " + std::to_string(filter));
      }
    }
  }
  return img;
}

}  // namespace solbench::report::testing
