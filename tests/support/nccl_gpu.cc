#include "tests/support/nccl_gpu.h"

#include <gtest/gtest.h>
#include <multiworld/multiworld.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#if MW_TEST_HAVE_CUDA
#include <cuda_runtime.h>
#include <nccl.h>
#endif

#include "tests/support/mw_test.h"
#include "tests/support/process.h"
#include "tests/support/redis_server.h"
#include "tools/lab/nccl_host.h"
#include "tools/lab/shared.h"

namespace mwtest {
namespace {

NcclProbe probeInWorker() {
  mwlab::Shared<NcclProbe> shared;
  pid_t pid = spawn([&] {
    shared->available = mw_backend_available(MW_BACKEND_NCCL);
    if (!shared->available) {
      // The reason is what world creation reports.
      RedisServer redis;
      mw_context_t* ctx = newContext(redis.url());
      if (!ctx) return 1;
      mw_world_t* w = nullptr;
      mw_world_create(ctx, "probe", 0, 1, MW_BACKEND_NCCL, 0, 1000, &w);
      std::snprintf(shared->why, sizeof shared->why, "%s", mw_last_error());
      mw_context_free(ctx);
      return 0;
    }
#if MW_TEST_HAVE_CUDA
    cudaGetDeviceCount(&shared->devices);
    ncclGetVersion(&shared->nccl_version);
#endif
    return 0;
  });
  EXPECT_EQ(waitExit(pid, std::chrono::seconds(60)), 0);
  return *shared;
}

}  // namespace

const NcclProbe& ncclProbe() {
  static const NcclProbe p = probeInWorker();
  return p;
}

int ncclDeviceForRank(int rank, int size) { return ncclProbe().devices >= size ? rank : 0; }

void ncclPlaceRank(int rank, int size) {
  if (ncclProbe().devices >= size) return;
  mwlab::claimOwnNcclHost("mwtest-" + std::to_string(getppid()) + "-rank" + std::to_string(rank));
}

}  // namespace mwtest
