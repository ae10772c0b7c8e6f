// Address lists read for a peer (Gloo's full-mesh exchange): any bytes and
// any (peer, rank, size) are checked or sliced without a read outside.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "core/store/redis_values.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const int world = in.ConsumeIntegralInRange<int>(-2, 70000);
  const int peer = in.ConsumeIntegralInRange<int>(-2, 70000);
  const int rank = in.ConsumeIntegralInRange<int>(-2, 70000);
  const std::vector<char> list = in.ConsumeRemainingBytes<char>();
  const size_t entry_bytes = static_cast<size_t>(peer < 0 ? 136 : peer % 300);
  const bool valid = mw::addressListProblem(list, world, entry_bytes).empty();
  if (valid && (world < 2 || list.size() != static_cast<size_t>(world - 1) * entry_bytes)) std::abort();
  auto entry = mw::addressEntry(list, peer, rank, world);
  if (!entry) return 0;
  if (world < 2 || peer == rank || entry->empty() ||
      entry->size() * static_cast<size_t>(world - 1) != list.size()) {
    std::abort();
  }
  return 0;
}
