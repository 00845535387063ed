// SHA-256 (FIPS 180-4, section 6.2), written from the standard: the downloader (hub/hub.cc)
// checks every file it fetches against the hub's LFS sha256 before renaming it into place.
// Streaming: update() any number of times, then hex() (or digest()) once. Tested against the
// standard's examples (verify/tests/test_sha256.cc) and against Python's hashlib through the
// downloads of verify/tests/test_hub.py (files of every padding edge length).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace ml::hub {

class Sha256 {
 public:
  Sha256();
  void update(const void *data, size_t n);
  void digest(uint8_t out[32]);  // finishes the hash; the object must not be updated afterwards
  std::string hex();             // digest() as 64 lowercase hex digits

 private:
  void block(const uint8_t *p);  // one 64-byte block into state_
  uint32_t state_[8];
  uint8_t buf_[64];
  size_t used_ = 0;      // bytes in buf_
  uint64_t total_ = 0;   // bytes hashed so far
};

}  // namespace ml::hub
