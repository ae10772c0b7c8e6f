// Every operation and every dtype of NCCL worlds on 2 and 3 ranks, each rank
// its own process, with results checked on the host. Where there are fewer
// GPUs than ranks, the ranks share device 0 (tests/support/nccl_gpu.h).
// Without a GPU every test skips, saying why.
//
// Values are small integers, exact in every dtype, so sums, minima, maxima
// and products compare bit for bit; only MW_AVG over 3 ranks may round.
#include <gtest/gtest.h>
#include <multiworld/multiworld.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "tests/support/mw_test.h"
#include "tests/support/nccl_gpu.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"

#if MW_TEST_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace {

using namespace std::chrono_literals;

#if MW_TEST_HAVE_CUDA

constexpr int kCreateMs = 60000;
constexpr int kWaitMs = 60000;
constexpr size_t kBlock = 1031;  // elements per rank's block: odd, so no op sees an aligned size only

struct DType {
  mw_dtype_t dt;
  const char* name;
  size_t bytes;
  bool floating;
};

constexpr DType kDTypes[] = {
    {MW_INT8, "int8", 1, false},       {MW_UINT8, "uint8", 1, false},     {MW_INT32, "int32", 4, false},
    {MW_UINT32, "uint32", 4, false},   {MW_INT64, "int64", 8, false},     {MW_UINT64, "uint64", 8, false},
    {MW_FLOAT16, "float16", 2, true},  {MW_BFLOAT16, "bfloat16", 2, true}, {MW_FLOAT32, "float32", 4, true},
    {MW_FLOAT64, "float64", 8, true},
};

// IEEE binary16 of a non-negative integer below 2048 (exact).
uint16_t halfOf(double v) {
  const auto k = static_cast<uint32_t>(v);
  if (k == 0) return 0;
  int e = 0;
  while ((k >> (e + 1)) != 0) ++e;
  const uint32_t mantissa = ((k << 10) >> e) & 0x3ff;
  return static_cast<uint16_t>(((e + 15) << 10) | mantissa);
}

void encode(const DType& t, double v, uint8_t* out) {
  switch (t.dt) {
    case MW_INT8: { int8_t x = static_cast<int8_t>(v); std::memcpy(out, &x, 1); break; }
    case MW_UINT8: { uint8_t x = static_cast<uint8_t>(v); std::memcpy(out, &x, 1); break; }
    case MW_INT32: { int32_t x = static_cast<int32_t>(v); std::memcpy(out, &x, 4); break; }
    case MW_UINT32: { uint32_t x = static_cast<uint32_t>(v); std::memcpy(out, &x, 4); break; }
    case MW_INT64: { int64_t x = static_cast<int64_t>(v); std::memcpy(out, &x, 8); break; }
    case MW_UINT64: { uint64_t x = static_cast<uint64_t>(v); std::memcpy(out, &x, 8); break; }
    case MW_FLOAT16: { uint16_t x = halfOf(v); std::memcpy(out, &x, 2); break; }
    case MW_BFLOAT16: {
      float f = static_cast<float>(v);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      uint16_t x = static_cast<uint16_t>(bits >> 16);
      std::memcpy(out, &x, 2);
      break;
    }
    case MW_FLOAT32: { float x = static_cast<float>(v); std::memcpy(out, &x, 4); break; }
    case MW_FLOAT64: std::memcpy(out, &v, 8); break;
  }
}

// Element `idx` of rank `r`'s input: 1..9.
double val(int r, size_t idx) { return r + 1 + static_cast<double>(idx % 7); }

std::vector<uint8_t> bytesOf(const DType& t, size_t count, const std::function<double(size_t)>& f) {
  std::vector<uint8_t> out(count * t.bytes);
  for (size_t i = 0; i < count; ++i) encode(t, f(i), out.data() + i * t.bytes);
  return out;
}

using DeviceBytes = mwtest::DeviceArray<uint8_t>;

// Checks `got` against `want`; on a mismatch names the op, dtype and first
// differing byte, and returns 1.
int same(const char* op, const DType& t, int rank, const std::vector<uint8_t>& got, const std::vector<uint8_t>& want) {
  if (got == want) return 0;
  size_t at = 0;
  while (at < got.size() && at < want.size() && got[at] == want[at]) ++at;
  std::fprintf(stderr, "rank %d: %s on %s: %zu bytes differ from byte %zu on (got %zu bytes, want %zu)\n", rank, op,
               t.name, got.size() == want.size() ? got.size() - at : 0, at, got.size(), want.size());
  return 1;
}

// Takes the request by address: it is read only after the call that issued
// it has run (the order in which a call's arguments are evaluated is
// unspecified).
int wait(mw_status_t issued, mw_request_t** r) {
  MWT_CHECK(issued);
  MWT_CHECK(mwtest::waitAndFree(*r, kWaitMs));
  return 0;
}

// Every op of one dtype on this rank of `w`.
int everyOp(mw_world_t* w, int rank, int size, const DType& t) {
  const size_t n = kBlock, all = n * static_cast<size_t>(size), bytes = n * t.bytes, all_bytes = all * t.bytes;
  DeviceBytes in(all_bytes), out(all_bytes), ring(bytes);
  MWT_REQUIRE(in.get() && out.get() && ring.get());
  mw_request_t* r = nullptr;
  auto mine = [&](size_t i) { return val(rank, i); };
  auto over = [&](double (*f)(double, double), size_t idx) {
    double acc = val(0, idx);
    for (int q = 1; q < size; ++q) acc = f(acc, val(q, idx));
    return acc;
  };
  auto sum = [](double a, double b) { return a + b; };

  struct Reduction {
    mw_redop_t op;
    const char* name;
    double (*f)(double, double);
  };
  std::vector<Reduction> reductions = {{MW_SUM, "sum", [](double a, double b) { return a + b; }},
                                       {MW_MIN, "min", [](double a, double b) { return std::min(a, b); }},
                                       {MW_MAX, "max", [](double a, double b) { return std::max(a, b); }}};
  if (t.floating) reductions.push_back({MW_PROD, "prod", [](double a, double b) { return a * b; }});
  for (const Reduction& red : reductions) {
    MWT_REQUIRE(in.put(bytesOf(t, n, mine)));
    if (wait(mw_allreduce_async(w, in.get(), out.get(), n, t.dt, red.op, &r), &r)) return 1;
    const auto want = bytesOf(t, n, [&](size_t i) { return over(red.f, i); });
    if (same((std::string("allreduce ") + red.name).c_str(), t, rank, out.take(bytes), want)) return 1;
    if (wait(mw_reduce_async(w, in.get(), out.get(), n, t.dt, red.op, 0, &r), &r)) return 1;
    if (rank == 0 && same((std::string("reduce ") + red.name).c_str(), t, rank, out.take(bytes), want)) return 1;
  }
  if (t.dt == MW_FLOAT32 || t.dt == MW_FLOAT64) {
    // The mean may round where 1/size does not fit the type exactly.
    MWT_REQUIRE(in.put(bytesOf(t, n, mine)));
    if (wait(mw_allreduce_async(w, in.get(), out.get(), n, t.dt, MW_AVG, &r), &r)) return 1;
    const auto got = out.take(bytes);
    for (size_t i = 0; i < n; ++i) {
      const double want = over(sum, i) / size;
      const double have = t.dt == MW_FLOAT32 ? reinterpret_cast<const float*>(got.data())[i]
                                             : reinterpret_cast<const double*>(got.data())[i];
      if (std::fabs(have - want) > 1e-5 * want) {
        std::fprintf(stderr, "rank %d: allreduce avg on %s: element %zu is %g, want %g\n", rank, t.name, i, have, want);
        return 1;
      }
    }
  }

  const int root = size - 1;
  MWT_REQUIRE(in.put(bytesOf(t, n, mine)));
  if (wait(mw_broadcast_async(w, in.get(), n, t.dt, root, &r), &r)) return 1;
  if (same("broadcast", t, rank, in.take(bytes), bytesOf(t, n, [&](size_t i) { return val(root, i); }))) return 1;

  const auto gathered = bytesOf(t, all, [&](size_t j) { return val(static_cast<int>(j / n), j % n); });
  MWT_REQUIRE(in.put(bytesOf(t, n, mine)));
  if (wait(mw_allgather_async(w, in.get(), out.get(), n, t.dt, &r), &r)) return 1;
  if (same("allgather", t, rank, out.take(all_bytes), gathered)) return 1;
  if (wait(mw_gather_async(w, in.get(), out.get(), n, t.dt, root, &r), &r)) return 1;
  if (rank == root && same("gather", t, rank, out.take(all_bytes), gathered)) return 1;

  MWT_REQUIRE(in.put(bytesOf(t, all, mine)));
  if (wait(mw_scatter_async(w, in.get(), out.get(), n, t.dt, 0, &r), &r)) return 1;
  if (same("scatter", t, rank, out.take(bytes), bytesOf(t, n, [&](size_t i) { return val(0, rank * n + i); })))
    return 1;
  if (wait(mw_reduce_scatter_async(w, in.get(), out.get(), n, t.dt, MW_SUM, &r), &r)) return 1;
  if (same("reduce_scatter", t, rank, out.take(bytes),
           bytesOf(t, n, [&](size_t i) { return over(sum, rank * n + i); })))
    return 1;
  if (wait(mw_alltoall_async(w, in.get(), out.get(), n, t.dt, &r), &r)) return 1;
  if (same("alltoall", t, rank, out.take(all_bytes),
           bytesOf(t, all, [&](size_t j) { return val(static_cast<int>(j / n), rank * n + j % n); })))
    return 1;

  // A ring: everyone sends to the next rank and receives from the previous.
  // A world's operations run in order on its one stream, so rank 0 sends
  // first and the others receive first, or every rank would wait in its
  // receive.
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  MWT_REQUIRE(in.put(bytesOf(t, n, mine)));
  mw_request_t *sr = nullptr, *rr = nullptr;
  if (rank == 0) MWT_CHECK(mw_send_async(w, in.get(), n, t.dt, next, &sr));
  MWT_CHECK(mw_recv_async(w, ring.get(), n, t.dt, prev, &rr));
  if (rank != 0) MWT_CHECK(mw_send_async(w, in.get(), n, t.dt, next, &sr));
  MWT_CHECK(mwtest::waitAndFree(sr, kWaitMs));
  MWT_CHECK(mwtest::waitAndFree(rr, kWaitMs));
  if (same("send/recv", t, rank, ring.take(bytes), bytesOf(t, n, [&](size_t i) { return val(prev, i); }))) return 1;
  return wait(mw_barrier_async(w, &r), &r);
}

void everyOpAndDtype(int size) {
  if (!mwtest::ncclProbe().available) GTEST_SKIP() << "no usable GPU here: " << mwtest::ncclProbe().why;
  mwtest::RedisServer redis;
  EXPECT_TRUE(mwtest::runRanks(size, [&](int rank) {
    mwtest::ncclPlaceRank(rank, size);
    const int device = mwtest::ncclDeviceForRank(rank, size);
    MWT_REQUIRE(cudaSetDevice(device) == cudaSuccess);
    mw_context_t* ctx = mwtest::newContext(redis.url());
    MWT_REQUIRE(ctx);
    mw_world_t* w = nullptr;
    MWT_CHECK(mw_world_create(ctx, ("ops-" + std::to_string(size)).c_str(), rank, size, MW_BACKEND_NCCL, device,
                              kCreateMs, &w));
    int failed = 0;
    for (const DType& t : kDTypes) {
      if (everyOp(w, rank, size, t)) {
        std::fprintf(stderr, "rank %d of %d: %s failed\n", rank, size, t.name);
        failed = 1;
        break;
      }
    }
    MWT_CHECK(mw_world_destroy(w));
    mw_context_free(ctx);
    return failed;
  }, 300s));
}

TEST(NcclOps, EveryOpAndDtypeOnTwoRanks) { everyOpAndDtype(2); }
TEST(NcclOps, EveryOpAndDtypeOnThreeRanks) { everyOpAndDtype(3); }

#else

TEST(NcclOps, EveryOpAndDtype) { GTEST_SKIP() << "built without CUDA and NCCL"; }

#endif  // MW_TEST_HAVE_CUDA

}  // namespace
