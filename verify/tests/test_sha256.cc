// hub/sha256.cc (the downloader's checksum, FIPS 180-4) against the standard's examples (FIPS
// 180-2 appendix B / NIST's SHA-256 example values) and one message fed in every split of two
// updates. Python's hashlib checks it too: verify/tests/test_hub.py downloads files of every
// padding edge length from the stub hub, whose listing carries hashlib's sums.
#include <string>

#include "hub/sha256.h"
#include "verify/tests/common.h"

namespace {

std::string sha(const std::string &m) {
  ml::hub::Sha256 h;
  h.update(m.data(), m.size());
  return h.hex();
}

}  // namespace

TEST_CASE("SHA-256: the standard's examples", "[sha256]") {
  CHECK(sha("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  // 448 bits: the padding needs a second block
  CHECK(sha("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(sha("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrst"
            "nopqrstu") == "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  CHECK(sha(std::string(1000000, 'a')) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("SHA-256: any split into two updates gives the one-update sum", "[sha256]") {
  std::string m(130, '\0');  // two blocks and a tail
  for (size_t i = 0; i < m.size(); ++i) m[i] = char((i * 7 + 3) & 255);
  const std::string want = "4d5e47a2e8510a314576c238f6ff19d389d3ef3aaaca8b2e530263a5d15741da";  // hashlib
  CHECK(sha(m) == want);
  int splits = 0;
  for (size_t cut = 0; cut <= m.size(); ++cut) {
    ml::hub::Sha256 h;
    h.update(m.data(), cut);
    h.update(m.data() + cut, m.size() - cut);
    CHECK(h.hex() == want);
    ++splits;
  }
  CHECK(splits == 131);
}
