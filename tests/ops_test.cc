// Every operation of the C API, on every dtype and every reduction op, on
// real worker processes (one per rank) over a real redis-server. Each group
// of workers forms one world and runs many operations on it; every result is
// checked element by element against values computed here independently.
#include <gtest/gtest.h>
#include <multiworld/multiworld.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tests/support/member.h"
#include "tests/support/mw_test.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"
#include "tools/lab/shared.h"

namespace {

using namespace std::chrono_literals;
using Bytes = std::vector<unsigned char>;

constexpr mw_dtype_t kDTypes[] = {MW_INT8,  MW_UINT8,   MW_INT32,    MW_UINT32,  MW_INT64,
                                  MW_UINT64, MW_FLOAT16, MW_BFLOAT16, MW_FLOAT32, MW_FLOAT64};
constexpr mw_redop_t kOps[] = {MW_SUM, MW_PROD, MW_MIN, MW_MAX, MW_AVG};
constexpr size_t kCounts[] = {0, 1, 37, 1000};
constexpr size_t kLargeCount = size_t{1} << 16;
constexpr int kWaitMs = 120000;
constexpr auto kGroupTimeout = 280s;
constexpr int kCreateTimeoutMs = 60000;  // how long a world waits for its members

// ------------------------------------------------------------ dtype helpers

const char* dtName(mw_dtype_t dt) {
  static const char* names[] = {"int8",    "uint8",    "int32",   "uint32",  "int64",
                                "uint64",  "float16",  "bfloat16", "float32", "float64"};
  return names[static_cast<int>(dt)];
}

const char* opName(mw_redop_t op) {
  static const char* names[] = {"sum", "prod", "min", "max", "avg"};
  return names[static_cast<int>(op)];
}

size_t width(mw_dtype_t dt) {
  switch (dt) {
    case MW_INT8: case MW_UINT8: return 1;
    case MW_FLOAT16: case MW_BFLOAT16: return 2;
    case MW_INT32: case MW_UINT32: case MW_FLOAT32: return 4;
    default: return 8;
  }
}

bool isFloat(mw_dtype_t dt) {
  return dt == MW_FLOAT16 || dt == MW_BFLOAT16 || dt == MW_FLOAT32 || dt == MW_FLOAT64;
}

bool isSigned(mw_dtype_t dt) { return dt == MW_INT8 || dt == MW_INT32 || dt == MW_INT64; }

uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// IEEE binary16, round to nearest even.
uint16_t toHalf(float f) {
  const uint32_t x = floatBits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
  if (a == 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u);
  if (a < 0x00800000u) return sign;  // float zero/subnormal: far below half's range
  const int e = static_cast<int>(a >> 23) - 127;
  if (e > 15) return static_cast<uint16_t>(sign | 0x7c00u);
  if (e < -25) return sign;
  const uint32_t m = (a & 0x7fffffu) | 0x800000u;  // 24 significant bits
  // Normal: keep 11 bits. Subnormal: units of 2^-24.
  const int shift = e >= -14 ? 13 : 13 + (-14 - e);
  uint32_t r = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1);
  if (rem > halfway || (rem == halfway && (r & 1u))) ++r;
  uint32_t out = e >= -14 ? (static_cast<uint32_t>(e + 14) << 10) + r : r;
  if (out >= 0x7c00u) out = 0x7c00u;
  return static_cast<uint16_t>(sign | out);
}

float fromHalf(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu;
  const uint32_t m = h & 0x3ffu;
  if (e == 0) return std::copysign(std::ldexp(static_cast<float>(m), -24), sign ? -1.0f : 1.0f);
  if (e == 31) return bitsFloat(sign | 0x7f800000u | (m << 13));
  return bitsFloat(sign | ((e + 112u) << 23) | (m << 13));
}

// bfloat16, round to nearest even.
uint16_t toBf16(float f) {
  const uint32_t x = floatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  const uint64_t lsb = (x >> 16) & 1u;
  return static_cast<uint16_t>((static_cast<uint64_t>(x) + 0x7fffu + lsb) >> 16);
}

float fromBf16(uint16_t b) { return bitsFloat(static_cast<uint32_t>(b) << 16); }

// One logical element: integers as their 64-bit two's complement value
// (sign-extended for signed dtypes), floats as an exact double.
struct V {
  uint64_t u = 0;
  double d = 0;
};

// Reduces x to the dtype's width (mod 2^bits) and sign- or zero-extends.
uint64_t wrapTo(mw_dtype_t dt, uint64_t x) {
  const size_t bits = width(dt) * 8;
  if (bits == 64) return x;
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  x &= mask;
  if (isSigned(dt) && (x >> (bits - 1))) x |= ~mask;
  return x;
}

uint64_t bigValue(mw_dtype_t dt) {
  switch (dt) {
    case MW_INT8: return 100;
    case MW_UINT8: return 200;
    case MW_INT32: return 0x40000000u;
    case MW_UINT32: return 0xC0000000u;
    case MW_INT64: return uint64_t{1} << 62;
    default: return 0xC000000000000000ull;
  }
}

// Input values. Floats: small values, exactly representable in every float
// type, whose sums, products (of up to 4) and averages stay exact even in
// bfloat16. Integers: small values, plus large ones that make sums and
// products wrap deliberately, and extremes for min/max.
V gen(mw_dtype_t dt, int rank, size_t i, uint64_t salt) {
  V v;
  const uint64_t h = static_cast<uint64_t>(i) * 7 + static_cast<uint64_t>(rank) * 3 + salt * 11;
  if (isFloat(dt)) {
    static const double kVals[] = {1, 2, 3, -1.5, 0.5, -2, 0.25, -1, 1.5};
    v.d = kVals[(static_cast<uint64_t>(i) * 5 + static_cast<uint64_t>(rank) * 3 + salt) % 9];
    return v;
  }
  const uint64_t r = static_cast<uint64_t>(rank);
  const uint64_t k = h % 13;
  uint64_t x;
  if (k == 1) {
    x = bigValue(dt) + r;
  } else if (k == 2 && isSigned(dt)) {
    x = 0 - (bigValue(dt) + r);
  } else if (k == 2) {
    x = wrapTo(dt, ~uint64_t{0}) - r;  // near the unsigned maximum
  } else if (isSigned(dt)) {
    x = static_cast<uint64_t>(static_cast<int64_t>(h % 11) - 5);
  } else {
    x = h % 11;
  }
  v.u = wrapTo(dt, x);
  return v;
}

void put(mw_dtype_t dt, unsigned char* buf, size_t i, V v) {
  unsigned char* p = buf + i * width(dt);
  switch (dt) {
    case MW_FLOAT16: {
      uint16_t h = toHalf(static_cast<float>(v.d));
      std::memcpy(p, &h, 2);
      return;
    }
    case MW_BFLOAT16: {
      uint16_t b = toBf16(static_cast<float>(v.d));
      std::memcpy(p, &b, 2);
      return;
    }
    case MW_FLOAT32: {
      float f = static_cast<float>(v.d);
      std::memcpy(p, &f, 4);
      return;
    }
    case MW_FLOAT64:
      std::memcpy(p, &v.d, 8);
      return;
    default:
      std::memcpy(p, &v.u, width(dt));  // little-endian: the low bytes
      return;
  }
}

std::string showElem(mw_dtype_t dt, const unsigned char* p) {
  char buf[96];
  switch (dt) {
    case MW_FLOAT16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      std::snprintf(buf, sizeof buf, "%g (0x%04x)", static_cast<double>(fromHalf(h)), h);
      break;
    }
    case MW_BFLOAT16: {
      uint16_t b;
      std::memcpy(&b, p, 2);
      std::snprintf(buf, sizeof buf, "%g (0x%04x)", static_cast<double>(fromBf16(b)), b);
      break;
    }
    case MW_FLOAT32: {
      float f;
      std::memcpy(&f, p, 4);
      std::snprintf(buf, sizeof buf, "%g", static_cast<double>(f));
      break;
    }
    case MW_FLOAT64: {
      double d;
      std::memcpy(&d, p, 8);
      std::snprintf(buf, sizeof buf, "%g", d);
      break;
    }
    default: {
      uint64_t u = 0;
      std::memcpy(&u, p, width(dt));
      u = wrapTo(dt, u);
      if (isSigned(dt)) {
        std::snprintf(buf, sizeof buf, "%" PRId64, static_cast<int64_t>(u));
      } else {
        std::snprintf(buf, sizeof buf, "%" PRIu64, u);
      }
    }
  }
  return buf;
}

// The expected reduction of valueOf(0..size-1), as the header defines it.
template <typename F>
V reduceExpected(mw_dtype_t dt, mw_redop_t op, int size, F valueOf) {
  V out;
  if (isFloat(dt)) {
    double acc = valueOf(0).d;
    for (int r = 1; r < size; ++r) {
      const double x = valueOf(r).d;
      switch (op) {
        case MW_SUM: case MW_AVG: acc += x; break;
        case MW_PROD: acc *= x; break;
        case MW_MIN: acc = x < acc ? x : acc; break;
        case MW_MAX: acc = x > acc ? x : acc; break;
      }
    }
    if (op == MW_AVG) acc /= size;  // size is 2 or 4: exact
    out.d = acc;
    return out;
  }
  uint64_t acc = valueOf(0).u;
  for (int r = 1; r < size; ++r) {
    const uint64_t x = valueOf(r).u;
    switch (op) {
      case MW_SUM: case MW_AVG: acc += x; break;  // mod 2^64, reduced below
      case MW_PROD: acc *= x; break;
      case MW_MIN:
        if (isSigned(dt) ? static_cast<int64_t>(x) < static_cast<int64_t>(acc) : x < acc) acc = x;
        break;
      case MW_MAX:
        if (isSigned(dt) ? static_cast<int64_t>(x) > static_cast<int64_t>(acc) : x > acc) acc = x;
        break;
    }
  }
  acc = wrapTo(dt, acc);
  if (op == MW_AVG) {
    // C's `/` truncates toward zero.
    if (isSigned(dt)) {
      acc = static_cast<uint64_t>(static_cast<int64_t>(acc) / static_cast<int64_t>(size));
    } else {
      acc = acc / static_cast<uint64_t>(size);
    }
    acc = wrapTo(dt, acc);
  }
  out.u = acc;
  return out;
}

template <typename F>
Bytes fill(mw_dtype_t dt, size_t n, F valueAt) {
  Bytes b(n * width(dt));
  for (size_t i = 0; i < n; ++i) put(dt, b.data(), i, valueAt(i));
  return b;
}

Bytes sentinel(mw_dtype_t dt, size_t n) { return Bytes(n * width(dt), 0xA5); }

// NULL for an empty buffer: count 0 allows NULL buffers.
unsigned char* ptr(Bytes& b) { return b.empty() ? nullptr : b.data(); }

// Compares `got` (n elements) with `want`; prints the first mismatches.
bool sameElements(const std::string& what, mw_dtype_t dt, const unsigned char* got, const Bytes& want,
                  int* printed) {
  const size_t w = width(dt);
  const size_t n = want.size() / w;
  bool ok = true;
  for (size_t i = 0; i < n; ++i) {
    if (std::memcmp(got + i * w, want.data() + i * w, w) != 0) {
      if (ok && (*printed)++ < 40) {
        size_t bad = 0;
        for (size_t j = i; j < n; ++j) bad += std::memcmp(got + j * w, want.data() + j * w, w) != 0;
        std::fprintf(stderr, "[pid %d] %s: element %zu is %s, want %s (%zu of %zu elements wrong)\n", getpid(),
                     what.c_str(), i, showElem(dt, got + i * w).c_str(),
                     showElem(dt, want.data() + i * w).c_str(), bad, n);
      }
      ok = false;
      break;
    }
  }
  return ok;
}

std::vector<long long> integersIn(const char* s) {
  std::vector<long long> out;
  for (const char* p = s; *p;) {
    if (std::isdigit(static_cast<unsigned char>(*p))) {
      char* end = nullptr;
      out.push_back(std::strtoll(p, &end, 10));
      p = end;
    } else {
      ++p;
    }
  }
  return out;
}

bool mentions(const std::vector<long long>& v, long long x) {
  for (long long y : v) {
    if (y == x) return true;
  }
  return false;
}

// ------------------------------------------------------------ batches

// One issued operation, its buffers and what they must hold afterwards.
struct Case {
  std::string what;
  mw_dtype_t dt = MW_UINT8;
  Bytes send, recv;
  struct Expect {
    bool in_recv;   // else in send
    size_t offset;  // elements
    Bytes want;
    const char* label;
  };
  std::vector<Expect> expects;
  mw_request_t* req = nullptr;
};

class Runner {
 public:
  Runner(mw_world_t* w, int rank, int size) : w_(w), rank_(rank), size_(size) {}

  int failures() const { return failures_; }
  uint64_t nextSalt() { return salt_++; }

  Case& add(std::string what, mw_dtype_t dt) {
    cases_.push_back(std::make_unique<Case>());
    Case& c = *cases_.back();
    c.what = "rank " + std::to_string(rank_) + "/" + std::to_string(size_) + " " + what;
    c.dt = dt;
    return c;
  }

  // Records a failed issue; the caller returns as the world's op order on
  // this rank now differs from the others'.
  bool issued(Case& c, mw_status_t s) {
    if (s == MW_OK && c.req) return true;
    std::fprintf(stderr, "[pid %d] %s: issue -> %s (%s)\n", getpid(), c.what.c_str(), mw_status_string(s),
                 mw_last_error());
    ++failures_;
    return false;
  }

  // Waits for every case, then checks every buffer.
  void flush() {
    for (auto& c : cases_) {
      if (!c->req) continue;
      mw_status_t s = mw_wait(c->req, kWaitMs);
      if (s == MW_ERR_TIMEOUT) {
        std::fprintf(stderr, "[pid %d] %s: still running after %d ms\n", getpid(), c->what.c_str(), kWaitMs);
        std::fflush(nullptr);
        _exit(3);  // buffers are still in use: do not free them
      }
      if (s != MW_OK) {
        std::fprintf(stderr, "[pid %d] %s: completed with %s (%s)\n", getpid(), c->what.c_str(),
                     mw_status_string(s), mw_last_error());
        ++failures_;
      }
      mw_request_free(c->req);
      c->req = nullptr;
    }
    for (auto& c : cases_) {
      for (auto& e : c->expects) {
        Bytes& b = e.in_recv ? c->recv : c->send;
        const std::string what = c->what + " [" + e.label + "]";
        if (!sameElements(what, c->dt, b.data() + e.offset * width(c->dt), e.want, &printed_)) ++failures_;
      }
    }
    cases_.clear();
  }

  // ---- the operations. Each builds inputs and expectations and issues.

  bool broadcast(mw_dtype_t dt, size_t n, int root) {
    const uint64_t s = nextSalt();
    Case& c = add(std::string("broadcast ") + dtName(dt) + " n=" + std::to_string(n) + " root=" +
                      std::to_string(root),
                  dt);
    c.recv = fill(dt, n, [&](size_t i) { return gen(dt, rank_ == root ? root : rank_ + 100, i, s); });
    c.expects.push_back({true, 0, fill(dt, n, [&](size_t i) { return gen(dt, root, i, s); }), "buf"});
    return issued(c, mw_broadcast_async(w_, ptr(c.recv), n, dt, root, &c.req));
  }

  bool allreduce(mw_dtype_t dt, size_t n, mw_redop_t op, bool inplace) {
    const uint64_t s = nextSalt();
    Case& c = add(std::string("allreduce ") + dtName(dt) + " " + opName(op) + " n=" + std::to_string(n) +
                      (inplace ? " in-place" : ""),
                  dt);
    Bytes in = fill(dt, n, [&](size_t i) { return gen(dt, rank_, i, s); });
    Bytes want = fill(dt, n, [&](size_t i) {
      return reduceExpected(dt, op, size_, [&](int r) { return gen(dt, r, i, s); });
    });
    if (inplace) {
      c.recv = in;
      c.expects.push_back({true, 0, want, "buf"});
      return issued(c, mw_allreduce_async(w_, ptr(c.recv), ptr(c.recv), n, dt, op, &c.req));
    }
    c.send = in;
    c.recv = sentinel(dt, n);
    c.expects.push_back({false, 0, in, "sendbuf unchanged"});
    c.expects.push_back({true, 0, want, "recvbuf"});
    return issued(c, mw_allreduce_async(w_, ptr(c.send), ptr(c.recv), n, dt, op, &c.req));
  }

  bool reduce(mw_dtype_t dt, size_t n, mw_redop_t op, int root, bool inplace) {
    const uint64_t s = nextSalt();
    Case& c = add(std::string("reduce ") + dtName(dt) + " " + opName(op) + " n=" + std::to_string(n) +
                      " root=" + std::to_string(root) + (inplace ? " in-place" : ""),
                  dt);
    Bytes in = fill(dt, n, [&](size_t i) { return gen(dt, rank_, i, s); });
    Bytes want = fill(dt, n, [&](size_t i) {
      return reduceExpected(dt, op, size_, [&](int r) { return gen(dt, r, i, s); });
    });
    const bool root_here = rank_ == root;
    if (inplace) {
      c.recv = in;
      if (root_here) {
        c.expects.push_back({true, 0, want, "buf"});
      } else {
        c.expects.push_back({true, 0, in, "non-root buf unchanged"});
      }
      return issued(c, mw_reduce_async(w_, ptr(c.recv), ptr(c.recv), n, dt, op, root, &c.req));
    }
    c.send = in;
    c.expects.push_back({false, 0, in, "sendbuf unchanged"});
    if (root_here) {
      c.recv = sentinel(dt, n);
      c.expects.push_back({true, 0, want, "recvbuf"});
    } else if (s % 2 == 0) {
      c.recv = sentinel(dt, n);
      c.expects.push_back({true, 0, sentinel(dt, n), "non-root recvbuf untouched"});
    }  // else: NULL recvbuf on a non-root
    return issued(c, mw_reduce_async(w_, ptr(c.send), ptr(c.recv), n, dt, op, root, &c.req));
  }

  bool allgather(mw_dtype_t dt, size_t n, bool inplace) {
    const uint64_t s = nextSalt();
    Case& c = add(std::string("allgather ") + dtName(dt) + " n=" + std::to_string(n) +
                      (inplace ? " in-place" : ""),
                  dt);
    const size_t total = n * static_cast<size_t>(size_);
    Bytes own = fill(dt, n, [&](size_t i) { return gen(dt, rank_, i, s); });
    Bytes want = fill(dt, total, [&](size_t j) { return gen(dt, static_cast<int>(j / n), j % n, s); });
    if (inplace) {
      c.recv = fill(dt, total, [&](size_t j) {
        return static_cast<int>(j / n) == rank_ ? gen(dt, rank_, j % n, s) : gen(dt, rank_ + 100, j, s);
      });
      c.expects.push_back({true, 0, want, "buf"});
      return issued(c, mw_allgather_async(w_, ptr(c.recv), ptr(c.recv), n, dt, &c.req));
    }
    c.send = own;
    c.recv = sentinel(dt, total);
    c.expects.push_back({false, 0, own, "sendbuf unchanged"});
    c.expects.push_back({true, 0, want, "recvbuf"});
    return issued(c, mw_allgather_async(w_, ptr(c.send), ptr(c.recv), n, dt, &c.req));
  }

  bool gather(mw_dtype_t dt, size_t n, int root, bool inplace) {
    const uint64_t s = nextSalt();
    Case& c = add(std::string("gather ") + dtName(dt) + " n=" + std::to_string(n) + " root=" +
                      std::to_string(root) + (inplace ? " in-place" : ""),
                  dt);
    const size_t total = n * static_cast<size_t>(size_);
    Bytes own = fill(dt, n, [&](size_t i) { return gen(dt, rank_, i, s); });
    Bytes want = fill(dt, total, [&](size_t j) { return gen(dt, static_cast<int>(j / n), j % n, s); });
    if (rank_ == root && inplace) {
      c.recv = fill(dt, total, [&](size_t j) {
        return static_cast<int>(j / n) == rank_ ? gen(dt, rank_, j % n, s) : gen(dt, rank_ + 100, j, s);
      });
      c.expects.push_back({true, 0, want, "buf"});
      return issued(c, mw_gather_async(w_, ptr(c.recv), ptr(c.recv), n, dt, root, &c.req));
    }
    c.send = own;
    c.expects.push_back({false, 0, own, "sendbuf unchanged"});
    if (rank_ == root) {
      c.recv = sentinel(dt, total);
      c.expects.push_back({true, 0, want, "recvbuf"});
    } else if (!inplace && s % 2 == 0) {
      c.recv = sentinel(dt, total);
      c.expects.push_back({true, 0, sentinel(dt, total), "non-root recvbuf untouched"});
    }  // else: NULL recvbuf on a non-root
    return issued(c, mw_gather_async(w_, ptr(c.send), ptr(c.recv), n, dt, root, &c.req));
  }

  bool scatter(mw_dtype_t dt, size_t n, int root, bool inplace) {
    const uint64_t s = nextSalt();
    Case& c = add(std::string("scatter ") + dtName(dt) + " n=" + std::to_string(n) + " root=" +
                      std::to_string(root) + (inplace ? " in-place" : ""),
                  dt);
    const size_t total = n * static_cast<size_t>(size_);
    Bytes full = fill(dt, total, [&](size_t j) { return gen(dt, root, j, s); });
    Bytes mine = fill(dt, n, [&](size_t i) { return gen(dt, root, static_cast<size_t>(rank_) * n + i, s); });
    if (rank_ == root) {
      if (inplace) {
        c.recv = full;
        c.expects.push_back({true, 0, full, "buf (root's block stays in place)"});
        return issued(c, mw_scatter_async(w_, ptr(c.recv), ptr(c.recv), n, dt, root, &c.req));
      }
      c.send = full;
      c.recv = sentinel(dt, n);
      c.expects.push_back({false, 0, full, "sendbuf unchanged"});
      c.expects.push_back({true, 0, mine, "recvbuf"});
      return issued(c, mw_scatter_async(w_, ptr(c.send), ptr(c.recv), n, dt, root, &c.req));
    }
    c.recv = sentinel(dt, n);
    c.expects.push_back({true, 0, mine, "recvbuf"});
    if (!inplace && s % 2 == 0) {
      c.send = fill(dt, total, [&](size_t j) { return gen(dt, rank_ + 100, j, s); });
      c.expects.push_back({false, 0, c.send, "non-root sendbuf unchanged"});
    }  // else: NULL sendbuf on a non-root
    return issued(c, mw_scatter_async(w_, ptr(c.send), ptr(c.recv), n, dt, root, &c.req));
  }

  bool reduceScatter(mw_dtype_t dt, size_t n, mw_redop_t op, bool inplace) {
    const uint64_t s = nextSalt();
    Case& c = add(std::string("reduce_scatter ") + dtName(dt) + " " + opName(op) + " n=" + std::to_string(n) +
                      (inplace ? " in-place" : ""),
                  dt);
    const size_t total = n * static_cast<size_t>(size_);
    Bytes in = fill(dt, total, [&](size_t j) { return gen(dt, rank_, j, s); });
    Bytes want = fill(dt, n, [&](size_t i) {
      const size_t j = static_cast<size_t>(rank_) * n + i;
      return reduceExpected(dt, op, size_, [&](int r) { return gen(dt, r, j, s); });
    });
    if (inplace) {
      c.recv = in;
      c.expects.push_back({true, 0, want, "start of buf"});
      return issued(c, mw_reduce_scatter_async(w_, ptr(c.recv), ptr(c.recv), n, dt, op, &c.req));
    }
    c.send = in;
    c.recv = sentinel(dt, n);
    c.expects.push_back({false, 0, in, "sendbuf unchanged"});
    c.expects.push_back({true, 0, want, "recvbuf"});
    return issued(c, mw_reduce_scatter_async(w_, ptr(c.send), ptr(c.recv), n, dt, op, &c.req));
  }

  bool alltoall(mw_dtype_t dt, size_t n, bool inplace) {
    const uint64_t s = nextSalt();
    Case& c = add(std::string("alltoall ") + dtName(dt) + " n=" + std::to_string(n) +
                      (inplace ? " in-place" : ""),
                  dt);
    const size_t total = n * static_cast<size_t>(size_);
    // Block j of rank r's sendbuf goes to rank j; so block q of our result
    // is block `rank_` of rank q's sendbuf.
    Bytes in = fill(dt, total, [&](size_t j) { return gen(dt, rank_, j, s); });
    Bytes want = fill(dt, total, [&](size_t j) {
      return gen(dt, static_cast<int>(j / n), static_cast<size_t>(rank_) * n + j % n, s);
    });
    if (inplace) {
      c.recv = in;
      c.expects.push_back({true, 0, want, "buf"});
      return issued(c, mw_alltoall_async(w_, ptr(c.recv), ptr(c.recv), n, dt, &c.req));
    }
    c.send = in;
    c.recv = sentinel(dt, total);
    c.expects.push_back({false, 0, in, "sendbuf unchanged"});
    c.expects.push_back({true, 0, want, "recvbuf"});
    return issued(c, mw_alltoall_async(w_, ptr(c.send), ptr(c.recv), n, dt, &c.req));
  }

  bool barrier() {
    Case& c = add("barrier", MW_UINT8);
    return issued(c, mw_barrier_async(w_, &c.req));
  }

  // Every rank sends a message to every other rank and receives one from
  // each; all issued before any is waited for.
  bool p2pAll(mw_dtype_t dt, size_t n) {
    const uint64_t s = nextSalt();
    auto content = [&](int src, int dst) {
      return fill(dt, n, [&](size_t i) { return gen(dt, src, i, s * 16 + static_cast<uint64_t>(dst)); });
    };
    for (int k = 1; k < size_; ++k) {
      const int dst = (rank_ + k) % size_;
      Case& c = add(std::string("send ") + dtName(dt) + " n=" + std::to_string(n) + " to " + std::to_string(dst),
                    dt);
      c.send = content(rank_, dst);
      c.expects.push_back({false, 0, c.send, "sendbuf unchanged"});
      if (!issued(c, mw_send_async(w_, ptr(c.send), n, dt, dst, &c.req))) return false;
    }
    for (int k = 1; k < size_; ++k) {
      const int src = (rank_ - k + size_) % size_;
      Case& c = add(std::string("recv ") + dtName(dt) + " n=" + std::to_string(n) + " from " +
                        std::to_string(src),
                    dt);
      c.recv = sentinel(dt, n);
      c.expects.push_back({true, 0, content(src, rank_), "recvbuf"});
      if (!issued(c, mw_recv_async(w_, ptr(c.recv), n, dt, src, &c.req))) return false;
    }
    return true;
  }

 private:
  mw_world_t* w_;
  int rank_, size_;
  uint64_t salt_ = 1;
  int failures_ = 0;
  int printed_ = 0;
  std::vector<std::unique_ptr<Case>> cases_;
};

// ------------------------------------------------------------ workers

// Every collective x dtype x op x count x root x in-place, plus p2p between
// every pair, on one world.
int collectivesWorker(const std::string& url, int rank, int size, std::atomic<int>* arrived,
                      const mwtest::Settings& extra = {}) {
  mwtest::Settings settings = mwtest::kPatientSettings;
  settings.insert(settings.end(), extra.begin(), extra.end());
  mwtest::Member m(settings, kCreateTimeoutMs);
  MWT_REQUIRE(m.join(url, "ops", rank, size));
  MWT_REQUIRE(mw_world_rank(m.world) == rank);
  MWT_REQUIRE(mw_world_size(m.world) == size);
  Runner run(m.world, rank, size);
  int barrier_round = 0;

  for (mw_dtype_t dt : kDTypes) {
    for (size_t n : kCounts) {
      bool ok = true;
      for (int root = 0; root < size && ok; ++root) ok = run.broadcast(dt, n, root);
      for (mw_redop_t op : kOps) {
        for (int ip = 0; ip < 2 && ok; ++ip) ok = run.allreduce(dt, n, op, ip == 1);
        for (int root = 0; root < size && ok; ++root) {
          for (int ip = 0; ip < 2 && ok; ++ip) ok = run.reduce(dt, n, op, root, ip == 1);
        }
      }
      ok = ok && run.barrier();
      for (int ip = 0; ip < 2 && ok; ++ip) ok = run.allgather(dt, n, ip == 1);
      for (int root = 0; root < size && ok; ++root) {
        for (int ip = 0; ip < 2 && ok; ++ip) ok = run.gather(dt, n, root, ip == 1);
        for (int ip = 0; ip < 2 && ok; ++ip) ok = run.scatter(dt, n, root, ip == 1);
      }
      for (mw_redop_t op : kOps) {
        for (int ip = 0; ip < 2 && ok; ++ip) ok = run.reduceScatter(dt, n, op, ip == 1);
      }
      for (int ip = 0; ip < 2 && ok; ++ip) ok = run.alltoall(dt, n, ip == 1);
      ok = ok && run.p2pAll(dt, n);
      run.flush();
      if (!ok) return 1;
    }

    // A large allreduce of every op, out of place and in place.
    bool ok = true;
    for (mw_redop_t op : kOps) {
      for (int ip = 0; ip < 2 && ok; ++ip) ok = run.allreduce(dt, kLargeCount, op, ip == 1);
    }
    // Large blocks for the other collectives on a few dtypes.
    if (dt == MW_INT8 || dt == MW_FLOAT16 || dt == MW_FLOAT32 || dt == MW_UINT64) {
      const size_t block = kLargeCount / 4 + 3;
      const int last = size - 1;
      ok = ok && run.broadcast(dt, kLargeCount, last);
      ok = ok && run.reduce(dt, kLargeCount, MW_SUM, last, false);
      ok = ok && run.reduce(dt, kLargeCount, MW_MAX, 0, true);
      ok = ok && run.allgather(dt, block, false);
      ok = ok && run.gather(dt, block, last, true);
      ok = ok && run.scatter(dt, block, 0, false);
      ok = ok && run.reduceScatter(dt, block, MW_AVG, false);
      ok = ok && run.reduceScatter(dt, block, MW_MIN, true);
      ok = ok && run.alltoall(dt, block, true);
    }
    run.flush();
    if (!ok) return 1;
    // Checked before the barrier: once a peer passes the last one it may
    // destroy its world, which breaks ours.
    MWT_REQUIRE(mw_world_state(m.world) == MW_WORLD_READY);

    // Nobody leaves a barrier before everybody entered it.
    arrived->fetch_add(1);
    mw_request_t* req = nullptr;
    MWT_CHECK(mw_barrier_async(m.world, &req));
    MWT_CHECK(mwtest::waitAndFree(req, kWaitMs));
    ++barrier_round;
    const int seen = arrived->load();
    if (seen < size * barrier_round) {
      std::fprintf(stderr, "rank %d left barrier round %d having seen only %d arrivals (want >= %d)\n", rank,
                   barrier_round, seen, size * barrier_round);
      return 1;
    }
  }
  if (run.failures()) {
    std::fprintf(stderr, "rank %d/%d: %d failed checks\n", rank, size, run.failures());
    return 1;
  }
  return 0;
}

// Message k of the FIFO test: a dtype, a count and contents unique to k.
struct Msg {
  mw_dtype_t dt;
  size_t n;
  Bytes data;
};

Msg fifoMessage(int k) {
  Msg m;
  m.dt = kDTypes[k % 10];
  m.n = static_cast<size_t>((k * 53) % 700);
  m.data = fill(m.dt, m.n, [&](size_t i) { return gen(m.dt, 7, i, static_cast<uint64_t>(k) * 31 + 5); });
  return m;
}

int fifoWorker(const std::string& url, int rank) {
  constexpr int kMessages = 200;
  mwtest::Member m(mwtest::kPatientSettings, kCreateTimeoutMs);
  MWT_REQUIRE(m.join(url, "fifo", rank, 2));
  int failures = 0, printed = 0;
  std::vector<Msg> msgs;
  for (int k = 0; k < kMessages; ++k) msgs.push_back(fifoMessage(k));
  std::vector<Bytes> bufs(kMessages);
  std::vector<mw_request_t*> reqs(kMessages, nullptr);
  for (int k = 0; k < kMessages; ++k) {
    if (rank == 0) {
      MWT_CHECK(mw_send_async(m.world, ptr(msgs[k].data), msgs[k].n, msgs[k].dt, 1, &reqs[k]));
    } else {
      bufs[k] = sentinel(msgs[k].dt, msgs[k].n);
      MWT_CHECK(mw_recv_async(m.world, ptr(bufs[k]), msgs[k].n, msgs[k].dt, 0, &reqs[k]));
    }
  }
  for (int k = 0; k < kMessages; ++k) {
    mw_status_t s = mw_wait(reqs[k], kWaitMs);
    if (s == MW_ERR_TIMEOUT) {
      std::fprintf(stderr, "rank %d: message %d still in flight after %d ms\n", rank, k, kWaitMs);
      std::fflush(nullptr);
      _exit(3);
    }
    if (s != MW_OK) {
      std::fprintf(stderr, "rank %d: message %d (%s n=%zu) completed with %s (%s)\n", rank, k, dtName(msgs[k].dt),
                   msgs[k].n, mw_status_string(s), mw_last_error());
      ++failures;
    }
    mw_request_free(reqs[k]);
  }
  if (rank == 1) {
    for (int k = 0; k < kMessages; ++k) {
      std::string what = "fifo message " + std::to_string(k) + " (" + dtName(msgs[k].dt) +
                         " n=" + std::to_string(msgs[k].n) + ")";
      if (!sameElements(what, msgs[k].dt, bufs[k].data(), msgs[k].data, &printed)) ++failures;
    }
  }
  return failures ? 1 : 0;
}

// Checks that the world still carries a collective correctly.
int allreduceStillWorks(mw_world_t* w, int rank, int size) {
  Runner run(w, rank, size);
  MWT_REQUIRE(run.allreduce(MW_FLOAT32, 37, MW_SUM, false));
  MWT_REQUIRE(run.allreduce(MW_INT64, 5, MW_MAX, true));
  run.flush();
  MWT_REQUIRE(run.failures() == 0);
  return 0;
}

int selfWorker(const std::string& url, int rank) {
  mwtest::Member m(mwtest::kPatientSettings, kCreateTimeoutMs);
  MWT_REQUIRE(m.join(url, "self", rank, 2));
  int printed = 0;
  auto msg = [&](uint64_t tag, size_t n) {
    return fill(MW_INT32, n, [&](size_t i) { return gen(MW_INT32, rank, i, tag); });
  };

  // Send, then recv.
  {
    Bytes a = msg(1, 19), got = sentinel(MW_INT32, 19);
    mw_request_t *s = nullptr, *r = nullptr;
    MWT_CHECK(mw_send_async(m.world, a.data(), 19, MW_INT32, rank, &s));
    MWT_CHECK(mw_recv_async(m.world, got.data(), 19, MW_INT32, rank, &r));
    MWT_CHECK(mwtest::waitAndFree(s, kWaitMs));
    MWT_CHECK(mwtest::waitAndFree(r, kWaitMs));
    MWT_REQUIRE(sameElements("self send-then-recv", MW_INT32, got.data(), a, &printed));
  }
  // Recv, then send.
  {
    Bytes a = msg(2, 23), got = sentinel(MW_INT32, 23);
    mw_request_t *s = nullptr, *r = nullptr;
    MWT_CHECK(mw_recv_async(m.world, got.data(), 23, MW_INT32, rank, &r));
    MWT_CHECK(mw_send_async(m.world, a.data(), 23, MW_INT32, rank, &s));
    MWT_CHECK(mwtest::waitAndFree(r, kWaitMs));
    MWT_CHECK(mwtest::waitAndFree(s, kWaitMs));
    MWT_REQUIRE(sameElements("self recv-then-send", MW_INT32, got.data(), a, &printed));
  }
  // Several queued either way arrive in order (count 0: see selfZeroWorker).
  {
    const size_t sizes[] = {3, 1, 8, 2};
    std::vector<Bytes> out, in;
    for (int i = 0; i < 4; ++i) {
      out.push_back(msg(10 + static_cast<uint64_t>(i), sizes[i]));
      in.push_back(sentinel(MW_INT32, sizes[i]));
    }
    std::vector<mw_request_t*> reqs;
    for (int i = 0; i < 4; ++i) {
      reqs.push_back(nullptr);
      MWT_CHECK(mw_send_async(m.world, ptr(out[i]), sizes[i], MW_INT32, rank, &reqs.back()));
    }
    for (int i = 0; i < 4; ++i) {
      reqs.push_back(nullptr);
      MWT_CHECK(mw_recv_async(m.world, ptr(in[i]), sizes[i], MW_INT32, rank, &reqs.back()));
    }
    for (mw_request_t* r : reqs) MWT_CHECK(mwtest::waitAndFree(r, kWaitMs));
    for (int i = 0; i < 4; ++i) {
      MWT_REQUIRE(sameElements("self queued sends, message " + std::to_string(i), MW_INT32, in[i].data(), out[i],
                               &printed));
    }
  }
  {
    const size_t sizes[] = {5, 2, 4, 9};
    std::vector<Bytes> out, in;
    for (int i = 0; i < 4; ++i) {
      out.push_back(msg(20 + static_cast<uint64_t>(i), sizes[i]));
      in.push_back(sentinel(MW_INT32, sizes[i]));
    }
    std::vector<mw_request_t*> reqs;
    for (int i = 0; i < 4; ++i) {
      reqs.push_back(nullptr);
      MWT_CHECK(mw_recv_async(m.world, ptr(in[i]), sizes[i], MW_INT32, rank, &reqs.back()));
    }
    for (int i = 0; i < 4; ++i) {
      reqs.push_back(nullptr);
      MWT_CHECK(mw_send_async(m.world, ptr(out[i]), sizes[i], MW_INT32, rank, &reqs.back()));
    }
    for (mw_request_t* r : reqs) MWT_CHECK(mwtest::waitAndFree(r, kWaitMs));
    for (int i = 0; i < 4; ++i) {
      MWT_REQUIRE(sameElements("self queued recvs, message " + std::to_string(i), MW_INT32, in[i].data(), out[i],
                               &printed));
    }
  }
  // Self traffic interleaved with traffic to the peer.
  {
    const int peer = 1 - rank;
    Bytes to_self = msg(30, 6), to_peer = msg(31, 7);
    Bytes from_self = sentinel(MW_INT32, 6), from_peer = sentinel(MW_INT32, 7);
    Bytes want_peer = fill(MW_INT32, 7, [&](size_t i) { return gen(MW_INT32, peer, i, 31); });
    mw_request_t* reqs[4] = {};
    MWT_CHECK(mw_recv_async(m.world, from_self.data(), 6, MW_INT32, rank, &reqs[0]));
    MWT_CHECK(mw_send_async(m.world, to_peer.data(), 7, MW_INT32, peer, &reqs[1]));
    MWT_CHECK(mw_recv_async(m.world, from_peer.data(), 7, MW_INT32, peer, &reqs[2]));
    MWT_CHECK(mw_send_async(m.world, to_self.data(), 6, MW_INT32, rank, &reqs[3]));
    for (mw_request_t* r : reqs) MWT_CHECK(mwtest::waitAndFree(r, kWaitMs));
    MWT_REQUIRE(sameElements("self among peer traffic", MW_INT32, from_self.data(), to_self, &printed));
    MWT_REQUIRE(sameElements("peer among self traffic", MW_INT32, from_peer.data(), want_peer, &printed));
  }
  return allreduceStillWorks(m.world, rank, 2);
}

// Count 0 sent to self, in either issue order, with NULL buffers (which
// the header allows for count 0) or real ones.
int selfZeroWorker(const std::string& url, int rank, bool send_first, bool null_buffers) {
  mwtest::Member m(mwtest::kPatientSettings, kCreateTimeoutMs);
  MWT_REQUIRE(m.join(url, "selfzero", rank, 2));
  float out[1] = {1.0f}, in[1] = {2.0f};
  void* sbuf = null_buffers ? nullptr : out;
  void* rbuf = null_buffers ? nullptr : in;
  mw_request_t *s = nullptr, *r = nullptr;
  if (send_first) {
    MWT_CHECK(mw_send_async(m.world, sbuf, 0, MW_FLOAT32, rank, &s));
    MWT_CHECK(mw_recv_async(m.world, rbuf, 0, MW_FLOAT32, rank, &r));
  } else {
    MWT_CHECK(mw_recv_async(m.world, rbuf, 0, MW_FLOAT32, rank, &r));
    MWT_CHECK(mw_send_async(m.world, sbuf, 0, MW_FLOAT32, rank, &s));
  }
  MWT_CHECK(mwtest::waitAndFree(s, kWaitMs));
  MWT_CHECK(mwtest::waitAndFree(r, kWaitMs));
  MWT_REQUIRE(in[0] == 2.0f && out[0] == 1.0f);  // count 0 touches nothing
  return allreduceStillWorks(m.world, rank, 2);
}

// Checks a size-mismatch failure message: it must name both sizes, in bytes
// or in elements.
bool namesBothSizes(const char* msg, size_t mine_elems, size_t theirs_elems, size_t elem_bytes) {
  auto ints = integersIn(msg);
  auto has = [&](size_t x) { return mentions(ints, static_cast<long long>(x)); };
  return (has(mine_elems * elem_bytes) && has(theirs_elems * elem_bytes)) || (has(mine_elems) && has(theirs_elems));
}

// rank 0 sends `send_n` int32, rank 1 receives `recv_n`; the receiver gets
// MW_ERR_INVALID_ARGUMENT naming both sizes, the sender MW_OK; the world
// still works.
int mismatchWorker(const std::string& url, int rank, size_t send_n, size_t recv_n) {
  mwtest::Member m(mwtest::kPatientSettings, kCreateTimeoutMs);
  MWT_REQUIRE(m.join(url, "mismatch", rank, 2));
  int printed = 0;
  Bytes out = fill(MW_INT32, send_n, [&](size_t i) { return gen(MW_INT32, 0, i, 77); });
  Bytes in = sentinel(MW_INT32, recv_n);
  mw_request_t* req = nullptr;
  if (rank == 0) {
    MWT_CHECK(mw_send_async(m.world, out.data(), send_n, MW_INT32, 1, &req));
    mw_status_t s = mw_wait(req, kWaitMs);
    mw_request_free(req);
    if (s != MW_OK) {
      std::fprintf(stderr, "mismatched send completed with %s (%s), want MW_OK\n", mw_status_string(s),
                   mw_last_error());
      return 1;
    }
  } else {
    MWT_CHECK(mw_recv_async(m.world, in.data(), recv_n, MW_INT32, 0, &req));
    mw_status_t s = mw_wait(req, kWaitMs);
    const std::string why = mw_last_error();
    mw_request_free(req);
    if (s != MW_ERR_INVALID_ARGUMENT) {
      std::fprintf(stderr, "recv of %zu int32 from a send of %zu completed with %s (%s), want %s\n", recv_n, send_n,
                   mw_status_string(s), why.c_str(), mw_status_string(MW_ERR_INVALID_ARGUMENT));
      return 1;
    }
    if (!namesBothSizes(why.c_str(), recv_n, send_n, 4)) {
      std::fprintf(stderr, "mismatch error does not name both sizes (%zu and %zu int32): '%s'\n", recv_n, send_n,
                   why.c_str());
      return 1;
    }
  }
  MWT_REQUIRE(mw_world_state(m.world) == MW_WORLD_READY);

  // A following correct exchange, both ways, then collectives.
  for (int dir = 0; dir < 2; ++dir) {
    const int src = dir, dst = 1 - dir;
    Bytes msg = fill(MW_INT64, 8, [&](size_t i) { return gen(MW_INT64, src, i, 78 + static_cast<uint64_t>(dir)); });
    Bytes got = sentinel(MW_INT64, 8);
    if (rank == src) {
      MWT_CHECK(mw_send_async(m.world, msg.data(), 8, MW_INT64, dst, &req));
    } else {
      MWT_CHECK(mw_recv_async(m.world, got.data(), 8, MW_INT64, src, &req));
    }
    MWT_CHECK(mwtest::waitAndFree(req, kWaitMs));
    if (rank == dst) MWT_REQUIRE(sameElements("exchange after mismatch", MW_INT64, got.data(), msg, &printed));
  }
  return allreduceStillWorks(m.world, rank, 2);
}

// A batch collected only through mw_poll: each request exactly once, with
// its user_data and world.
int pollWorker(const std::string& url, int rank, int size) {
  mwtest::Member m(mwtest::kPatientSettings, kCreateTimeoutMs);
  MWT_REQUIRE(m.join(url, "poll", rank, size));
  constexpr int kOpsInBatch = 40;
  int printed = 0;

  struct Item {
    Bytes send, recv, want;
    mw_dtype_t dt = MW_INT32;
    mw_request_t* req = nullptr;
    uint64_t user_data = 0;
    bool seen = false;
  };
  std::vector<Item> items(kOpsInBatch);
  const int next = (rank + 1) % size, prev = (rank - 1 + size) % size;
  for (int k = 0; k < kOpsInBatch; ++k) {
    Item& it = items[k];
    const size_t n = static_cast<size_t>(k % 7) * 3;  // 0 included
    const uint64_t s = 500 + static_cast<uint64_t>(k);
    switch (k % 5) {
      case 0:  // allreduce int32 sum
        it.send = fill(MW_INT32, n, [&](size_t i) { return gen(MW_INT32, rank, i, s); });
        it.recv = sentinel(MW_INT32, n);
        it.want = fill(MW_INT32, n, [&](size_t i) {
          return reduceExpected(MW_INT32, MW_SUM, size, [&](int r) { return gen(MW_INT32, r, i, s); });
        });
        MWT_CHECK(mw_allreduce_async(m.world, ptr(it.send), ptr(it.recv), n, MW_INT32, MW_SUM, &it.req));
        break;
      case 1:
        MWT_CHECK(mw_barrier_async(m.world, &it.req));
        break;
      case 2: {  // broadcast float32 from a varying root
        const int root = k % size;
        it.dt = MW_FLOAT32;
        it.recv = fill(MW_FLOAT32, n, [&](size_t i) { return gen(MW_FLOAT32, rank == root ? root : 50, i, s); });
        it.want = fill(MW_FLOAT32, n, [&](size_t i) { return gen(MW_FLOAT32, root, i, s); });
        MWT_CHECK(mw_broadcast_async(m.world, ptr(it.recv), n, MW_FLOAT32, root, &it.req));
        break;
      }
      case 3:  // send around the ring
        it.send = fill(MW_INT32, n, [&](size_t i) { return gen(MW_INT32, rank, i, s); });
        MWT_CHECK(mw_send_async(m.world, ptr(it.send), n, MW_INT32, next, &it.req));
        break;
      case 4: {  // recv around the ring: matches the previous item's send
        const size_t sent = static_cast<size_t>((k - 1) % 7) * 3;
        it.recv = sentinel(MW_INT32, sent);
        it.want = fill(MW_INT32, sent, [&](size_t i) { return gen(MW_INT32, prev, i, s - 1); });
        MWT_CHECK(mw_recv_async(m.world, ptr(it.recv), sent, MW_INT32, prev, &it.req));
        break;
      }
    }
    it.user_data = 0xC0FFEE0000000000ull | (static_cast<uint64_t>(rank) << 16) | static_cast<uint64_t>(k);
    mw_request_set_user_data(it.req, it.user_data);
    MWT_REQUIRE(mw_request_user_data(it.req) == it.user_data);
  }

  std::map<mw_request_t*, int> index;
  for (int k = 0; k < kOpsInBatch; ++k) index[items[k].req] = k;
  MWT_REQUIRE(static_cast<int>(index.size()) == kOpsInBatch);

  int collected = 0, failures = 0, last_main_k = -1, last_recv_k = -1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kWaitMs);
  while (collected < kOpsInBatch) {
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "rank %d: mw_poll delivered only %d of %d completions\n", rank, collected, kOpsInBatch);
      std::fflush(nullptr);
      _exit(3);
    }
    mw_completion_t out[6];
    size_t got = 99;
    MWT_CHECK(mw_poll(m.ctx, out, 6, 1000, &got));
    MWT_REQUIRE(got <= 6);
    for (size_t i = 0; i < got; ++i) {
      auto found = index.find(out[i].request);
      if (found == index.end()) {
        std::fprintf(stderr, "rank %d: mw_poll delivered an unknown request %p\n", rank,
                     static_cast<void*>(out[i].request));
        ++failures;
        continue;
      }
      Item& it = items[found->second];
      if (it.seen) {
        std::fprintf(stderr, "rank %d: request %d delivered twice\n", rank, found->second);
        ++failures;
        continue;
      }
      it.seen = true;
      ++collected;
      // Sends and collectives complete in issue order; so do the receives
      // from one peer, on their own lane.
      int& last_k = (found->second % 5 == 4) ? last_recv_k : last_main_k;
      if (found->second <= last_k) {
        std::fprintf(stderr, "rank %d: request %d delivered after request %d\n", rank, found->second, last_k);
        ++failures;
      }
      last_k = found->second;
      if (out[i].user_data != it.user_data) {
        std::fprintf(stderr, "rank %d: request %d user_data %#" PRIx64 ", want %#" PRIx64 "\n", rank, found->second,
                     out[i].user_data, it.user_data);
        ++failures;
      }
      if (out[i].world != m.world) {
        std::fprintf(stderr, "rank %d: request %d world %p, want %p\n", rank, found->second,
                     static_cast<void*>(out[i].world), static_cast<void*>(m.world));
        ++failures;
      }
      if (out[i].status != MW_OK) {
        std::fprintf(stderr, "rank %d: request %d status %s\n", rank, found->second, mw_status_string(out[i].status));
        ++failures;
      }
    }
  }
  // Nothing more to deliver; each request keeps its final status.
  mw_completion_t extra[4];
  size_t got = 99;
  MWT_CHECK(mw_poll(m.ctx, extra, 4, 100, &got));
  if (got != 0) {
    std::fprintf(stderr, "rank %d: mw_poll delivered %zu more completions after the batch\n", rank, got);
    ++failures;
  }
  for (int k = 0; k < kOpsInBatch; ++k) {
    Item& it = items[k];
    if (mw_test(it.req) != MW_OK) {
      std::fprintf(stderr, "rank %d: mw_test on polled request %d is not MW_OK\n", rank, k);
      ++failures;
    }
    if (mw_wait(it.req, 0) != MW_OK) {
      std::fprintf(stderr, "rank %d: mw_wait on polled request %d is not MW_OK\n", rank, k);
      ++failures;
    }
    mw_request_free(it.req);
    if (!it.want.empty() &&
        !sameElements("polled op " + std::to_string(k), it.dt, it.recv.data(), it.want, &printed)) {
      ++failures;
    }
  }
  MWT_CHECK(mw_poll(m.ctx, extra, 4, 0, &got));
  MWT_REQUIRE(got == 0);
  return failures ? 1 : 0;
}

// ------------------------------------------------------------ tests

TEST(OpsHelpers, HalfAndBfloat16Conversions) {
  EXPECT_EQ(toHalf(1.0f), 0x3c00);
  EXPECT_EQ(toHalf(-1.5f), 0xbe00);
  EXPECT_EQ(toHalf(0.25f), 0x3400);
  EXPECT_EQ(toHalf(65504.0f), 0x7bff);
  EXPECT_EQ(toHalf(65520.0f), 0x7c00);
  EXPECT_EQ(toHalf(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(toHalf(std::ldexp(1.0f, -25)), 0x0000);                 // tie to even
  EXPECT_EQ(toHalf(std::ldexp(3.0f, -25)), 0x0002);                 // tie to even
  EXPECT_EQ(toHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);          // tie to even
  EXPECT_EQ(toHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);      // tie to even
  EXPECT_EQ(toHalf(-0.0f), 0x8000);
  EXPECT_EQ(fromHalf(0x3c00), 1.0f);
  EXPECT_EQ(fromHalf(0xbe00), -1.5f);
  EXPECT_EQ(fromHalf(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(toBf16(1.0f), 0x3f80);
  EXPECT_EQ(toBf16(-1.5f), 0xbfc0);
  EXPECT_EQ(toBf16(bitsFloat(0x3f808000u)), 0x3f80);  // tie to even
  EXPECT_EQ(toBf16(bitsFloat(0x3f818000u)), 0x3f82);  // tie to even
  EXPECT_EQ(fromBf16(0xbfc0), -1.5f);
  // The float inputs survive every float type exactly.
  for (int r = 0; r < 4; ++r) {
    for (size_t i = 0; i < 9; ++i) {
      const float f = static_cast<float>(gen(MW_FLOAT16, r, i, 0).d);
      EXPECT_EQ(fromHalf(toHalf(f)), f);
      EXPECT_EQ(fromBf16(toBf16(f)), f);
    }
  }
}

TEST(OpsHelpers, ExpectedReductions) {
  // int8 wraps: 100 + 101 = 201 = -55; avg truncates toward zero: -27.
  auto v8 = [](int64_t x) { V v; v.u = wrapTo(MW_INT8, static_cast<uint64_t>(x)); return v; };
  auto pair = [&](int64_t a, int64_t b) { return [=](int r) { return v8(r == 0 ? a : b); }; };
  EXPECT_EQ(static_cast<int64_t>(reduceExpected(MW_INT8, MW_SUM, 2, pair(100, 101)).u), -55);
  EXPECT_EQ(static_cast<int64_t>(reduceExpected(MW_INT8, MW_AVG, 2, pair(100, 101)).u), -27);
  EXPECT_EQ(static_cast<int64_t>(reduceExpected(MW_INT8, MW_AVG, 2, pair(-3, 0)).u), -1);
  EXPECT_EQ(static_cast<int64_t>(reduceExpected(MW_INT8, MW_PROD, 2, pair(100, 3)).u), 44);
  EXPECT_EQ(static_cast<int64_t>(reduceExpected(MW_INT8, MW_MIN, 2, pair(-100, 3)).u), -100);
  auto u8 = [](uint64_t a, uint64_t b) { return [=](int r) { V v; v.u = r == 0 ? a : b; return v; }; };
  EXPECT_EQ(reduceExpected(MW_UINT8, MW_SUM, 2, u8(200, 201)).u, 145u);
  EXPECT_EQ(reduceExpected(MW_UINT8, MW_AVG, 2, u8(200, 201)).u, 72u);
  EXPECT_EQ(reduceExpected(MW_UINT8, MW_MAX, 2, u8(255, 3)).u, 255u);
  EXPECT_EQ(reduceExpected(MW_UINT64, MW_MAX, 2, u8(0xC000000000000000ull, 3)).u, 0xC000000000000000ull);
}

TEST(Ops, EveryCollectiveDtypeAndOpOnTwoRanks) {
  mwtest::RedisServer redis;
  mwlab::Shared<std::atomic<int>> arrived;
  EXPECT_TRUE(mwtest::runRanks(
      2, [&](int rank) { return collectivesWorker(redis.url(), rank, 2, arrived.get()); }, kGroupTimeout));
}

TEST(Ops, EveryCollectiveDtypeAndOpOnFourRanks) {
  mwtest::RedisServer redis;
  mwlab::Shared<std::atomic<int>> arrived;
  EXPECT_TRUE(mwtest::runRanks(
      4, [&](int rank) { return collectivesWorker(redis.url(), rank, 4, arrived.get()); }, kGroupTimeout));
}

// Three and five: no power of two, so every tree is uneven and allreduce
// takes its reduce-then-broadcast and ring paths.
TEST(Ops, EveryCollectiveDtypeAndOpOnThreeRanks) {
  mwtest::RedisServer redis;
  mwlab::Shared<std::atomic<int>> arrived;
  EXPECT_TRUE(mwtest::runRanks(
      3, [&](int rank) { return collectivesWorker(redis.url(), rank, 3, arrived.get()); }, kGroupTimeout));
}

TEST(Ops, EveryCollectiveDtypeAndOpOnFiveRanks) {
  mwtest::RedisServer redis;
  mwlab::Shared<std::atomic<int>> arrived;
  EXPECT_TRUE(mwtest::runRanks(
      5, [&](int rank) { return collectivesWorker(redis.url(), rank, 5, arrived.get()); }, kGroupTimeout));
}

// The same, every message of one byte or more lent over the same-host
// path (UCX: core/backends/ucx/channels/ring_channel.h), descriptors smaller than
// the receive included.
const mwtest::Settings kEverythingLent = {{"same_host_path", "auto"}, {"same_host_min_bytes", "1"}};

TEST(Ops, EveryCollectiveDtypeAndOpOverTheSameHostPathOnTwoRanks) {
  mwtest::RedisServer redis;
  mwlab::Shared<std::atomic<int>> arrived;
  EXPECT_TRUE(mwtest::runRanks(
      2, [&](int rank) { return collectivesWorker(redis.url(), rank, 2, arrived.get(), kEverythingLent); },
      kGroupTimeout));
}

TEST(Ops, EveryCollectiveDtypeAndOpOverTheSameHostPathOnThreeRanks) {
  mwtest::RedisServer redis;
  mwlab::Shared<std::atomic<int>> arrived;
  EXPECT_TRUE(mwtest::runRanks(
      3, [&](int rank) { return collectivesWorker(redis.url(), rank, 3, arrived.get(), kEverythingLent); },
      kGroupTimeout));
}

TEST(Ops, EveryCollectiveDtypeAndOpOverTheSameHostPathOnFiveRanks) {
  mwtest::RedisServer redis;
  mwlab::Shared<std::atomic<int>> arrived;
  EXPECT_TRUE(mwtest::runRanks(
      5, [&](int rank) { return collectivesWorker(redis.url(), rank, 5, arrived.get(), kEverythingLent); },
      kGroupTimeout));
}

TEST(Ops, PointToPointIsFifo) {
  mwtest::RedisServer redis;
  EXPECT_TRUE(mwtest::runRanks(2, [&](int rank) { return fifoWorker(redis.url(), rank); }, kGroupTimeout));
}

TEST(Ops, SendToSelfInBothIssueOrders) {
  mwtest::RedisServer redis;
  EXPECT_TRUE(mwtest::runRanks(2, [&](int rank) { return selfWorker(redis.url(), rank); }, kGroupTimeout));
}

TEST(Ops, SendToSelfCountZeroNullBuffersSendFirst) {
  mwtest::RedisServer redis;
  EXPECT_TRUE(mwtest::runRanks(
      2, [&](int rank) { return selfZeroWorker(redis.url(), rank, true, true); }, kGroupTimeout));
}

TEST(Ops, SendToSelfCountZeroRealBuffersSendFirst) {
  mwtest::RedisServer redis;
  EXPECT_TRUE(mwtest::runRanks(
      2, [&](int rank) { return selfZeroWorker(redis.url(), rank, true, false); }, kGroupTimeout));
}

TEST(Ops, SendToSelfCountZeroNullBuffersRecvFirst) {
  mwtest::RedisServer redis;
  EXPECT_TRUE(mwtest::runRanks(
      2, [&](int rank) { return selfZeroWorker(redis.url(), rank, false, true); }, kGroupTimeout));
}

TEST(Ops, SendToSelfCountZeroRealBuffersRecvFirst) {
  mwtest::RedisServer redis;
  EXPECT_TRUE(mwtest::runRanks(
      2, [&](int rank) { return selfZeroWorker(redis.url(), rank, false, false); }, kGroupTimeout));
}

TEST(Ops, RecvSmallerThanSendFailsAndWorldSurvives) {
  mwtest::RedisServer redis;
  EXPECT_TRUE(mwtest::runRanks(2, [&](int rank) { return mismatchWorker(redis.url(), rank, 10, 5); },
                               kGroupTimeout));
}

TEST(Ops, RecvLargerThanSendFailsAndWorldSurvives) {
  mwtest::RedisServer redis;
  EXPECT_TRUE(mwtest::runRanks(2, [&](int rank) { return mismatchWorker(redis.url(), rank, 5, 10); },
                               kGroupTimeout));
}

TEST(Ops, CompletionsThroughPollOnTwoRanks) {
  mwtest::RedisServer redis;
  EXPECT_TRUE(mwtest::runRanks(2, [&](int rank) { return pollWorker(redis.url(), rank, 2); }, kGroupTimeout));
}

TEST(Ops, CompletionsThroughPollOnFourRanks) {
  mwtest::RedisServer redis;
  EXPECT_TRUE(mwtest::runRanks(4, [&](int rank) { return pollWorker(redis.url(), rank, 4); }, kGroupTimeout));
}

}  // namespace
