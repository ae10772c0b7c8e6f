/* Two ranks form a world, exchange a message and sum a vector.
 *
 *   hello_world            forks both ranks itself
 *   hello_world RANK SIZE  runs one rank (start SIZE of them)
 *
 * Redis comes from MW_REDIS_URL (default redis://127.0.0.1:6379). */
#include <multiworld/multiworld.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(call)                                                           \
  do {                                                                        \
    mw_status_t s_ = (call);                                                  \
    if (s_ != MW_OK) {                                                        \
      fprintf(stderr, "%s failed: %s\n", #call, mw_last_error());             \
      exit(1);                                                                \
    }                                                                         \
  } while (0)

static int run_rank(int rank, int size) {
  mw_context_t* ctx;
  mw_world_t* world;
  mw_request_t* req;
  CHECK(mw_context_new(NULL, &ctx));
  CHECK(mw_world_create(ctx, "hello", rank, size, MW_BACKEND_UCX, 0, 10000, &world));

  /* Point to point: rank 0 greets every other rank. */
  int greeting[4] = {0};
  for (int peer = 1; peer < size && rank == 0; ++peer) {
    int msg[4] = {42, peer, size, 7};
    CHECK(mw_send_async(world, msg, 4, MW_INT32, peer, &req));
    CHECK(mw_wait(req, -1));
    mw_request_free(req);
  }
  if (rank != 0) {
    CHECK(mw_recv_async(world, greeting, 4, MW_INT32, 0, &req));
    CHECK(mw_wait(req, -1));
    mw_request_free(req);
    printf("rank %d received %d %d %d %d\n", rank, greeting[0], greeting[1], greeting[2], greeting[3]);
  }

  /* Collective: everyone contributes rank+1; the sum is size*(size+1)/2. */
  float mine[3] = {(float)(rank + 1), 1.0f, 0.5f}, sum[3];
  CHECK(mw_allreduce_async(world, mine, sum, 3, MW_FLOAT32, MW_SUM, &req));
  CHECK(mw_wait(req, -1));
  mw_request_free(req);
  printf("rank %d allreduce: %.1f %.1f %.1f\n", rank, sum[0], sum[1], sum[2]);

  int ok = sum[0] == size * (size + 1) / 2.0f && sum[1] == (float)size &&
           (rank == 0 || (greeting[0] == 42 && greeting[1] == rank));
  CHECK(mw_world_destroy(world));
  mw_context_free(ctx);
  return ok ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc == 3) return run_rank(atoi(argv[1]), atoi(argv[2]));
  const int size = 2;
  for (int rank = 0; rank < size; ++rank) {
    if (fork() == 0) {
      int rc = run_rank(rank, size);
      fflush(stdout);
      _exit(rc);
    }
  }
  int failed = 0, status;
  while (wait(&status) > 0) failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  printf(failed ? "hello_world: FAILED\n" : "hello_world: OK\n");
  return failed;
}
