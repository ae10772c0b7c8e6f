/* A data-parallel group that keeps reducing while it changes its members:
 * four workers sum a vector every step; one is killed (SIGKILL) and the
 * survivors shrink the world around it (mw_world_shrink with no list: the
 * member the break named); then a replacement is started and the group
 * grows back (mw_world_grow, the replacement creating the world with the
 * new size). Every step's sum is checked against the members of that step.
 *
 *   elastic_group            runs the whole scene (forks every worker)
 *
 * Redis comes from MW_REDIS_URL (default redis://127.0.0.1:6379). Exits 0
 * when every result of every worker was right. */
#include <multiworld/multiworld.h>

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WORKERS 4
#define STEPS 300
#define KILL_AT 40    /* the step after which worker 2 is killed */
#define WIDTH 1024    /* elements summed per step */
#define NAME "elastic-group"
#define TIMEOUT_MS 30000

#define CHECK(call)                                                           \
  do {                                                                        \
    mw_status_t s_ = (call);                                                  \
    if (s_ != MW_OK) {                                                        \
      fprintf(stderr, "worker %d: %s failed: %s\n", id, #call, mw_last_error()); \
      return 1;                                                               \
    }                                                                         \
  } while (0)

/* What the parent and the workers share (mapped before fork). */
struct board {
  volatile int step;         /* the furthest step any worker finished */
  volatile int shrunk;       /* survivors that shrank */
  volatile int target_size;  /* the size to grow to, once a replacement waits */
  volatile int grown;        /* members of the grown world */
};
static struct board* board;

static mw_backend_t backend(void) {
  return mw_backend_available(MW_BACKEND_UCX) ? MW_BACKEND_UCX : MW_BACKEND_GLOO;
}

static int wait_request(mw_request_t* req) {
  mw_status_t s = mw_wait(req, -1);
  mw_request_free(req);
  return s;
}

/* After the world formed, shrank or grew: every member learns the step
 * (rank 0's) and the sum of the members' ids. */
static int resync(int id, mw_world_t* w, int64_t* step, int64_t* id_sum) {
  mw_request_t* req;
  CHECK(mw_broadcast_async(w, step, 1, MW_INT64, 0, &req));
  CHECK(wait_request(req));
  int64_t mine = id + 1, ids[64];
  CHECK(mw_allgather_async(w, &mine, ids, 1, MW_INT64, &req));
  CHECK(wait_request(req));
  *id_sum = 0;
  for (int r = 0; r < mw_world_size(w); ++r) *id_sum += ids[r];
  return 0;
}

/* One worker: `id` names it for the checks; it joins as `rank` of `size`.
 * It reduces at least STEPS steps, and until the group shrank and grew
 * (`changes`: 2 for the replacement, which joins the grown world). */
static int worker(int id, int rank, int size, int changes) {
  mw_context_t* ctx;
  mw_world_t* w;
  mw_request_t* req;
  CHECK(mw_context_new(NULL, &ctx));
  CHECK(mw_world_create(ctx, NAME, rank, size, backend(), 0, TIMEOUT_MS, &w));
  int64_t step = 0, id_sum = 0;
  if (resync(id, w, &step, &id_sum)) return 1;
  static int64_t in[WIDTH + 1], out[WIDTH + 1];
  while (step < STEPS || changes < 2) {
    const int n = mw_world_size(w);
    for (int i = 0; i < WIDTH; ++i) in[i] = (id + 1) * (step + 1) + i;
    in[WIDTH] = board->target_size > n;  /* a replacement waits: grow */
    /* A break seen before the issue fails the issue itself. */
    mw_status_t s = mw_allreduce_async(w, in, out, WIDTH + 1, MW_INT64, MW_SUM, &req);
    if (s == MW_OK) s = wait_request(req);
    if (s == MW_ERR_WORLD_BROKEN) {
      /* A member died: the survivors go on without it. */
      mw_world_t* next;
      CHECK(mw_world_shrink(w, NULL, 0, MW_SHRINK_ABORT, TIMEOUT_MS, &next));
      CHECK(mw_world_destroy(w));
      w = next;
      ++changes;
      __sync_fetch_and_add(&board->shrunk, 1);
      printf("worker %d: shrank to %d members (rank %d), epoch %llu\n", id, mw_world_size(w), mw_world_rank(w),
             (unsigned long long)mw_world_epoch(w));
      if (resync(id, w, &step, &id_sum)) return 1;
      continue;
    }
    CHECK(s);
    for (int i = 0; i < WIDTH; ++i) {
      if (out[i] != id_sum * (step + 1) + (int64_t)n * i) {
        fprintf(stderr, "worker %d: step %lld [%d] = %lld, want %lld\n", id, (long long)step, i, (long long)out[i],
                (long long)(id_sum * (step + 1) + (int64_t)n * i));
        return 1;
      }
    }
    ++step;
    if (step > board->step) board->step = (int)step;
    if (out[WIDTH] > 0) {
      /* Every member saw the same sum, so every member grows here. */
      mw_world_t* next;
      CHECK(mw_world_grow(w, n + 1, TIMEOUT_MS, &next));
      CHECK(mw_world_destroy(w));
      w = next;
      ++changes;
      __sync_fetch_and_add(&board->grown, 1);
      printf("worker %d: grew to %d members, epoch %llu\n", id, mw_world_size(w),
             (unsigned long long)mw_world_epoch(w));
      if (resync(id, w, &step, &id_sum)) return 1;
    }
  }
  CHECK(mw_barrier_async(w, &req));
  CHECK(wait_request(req));
  CHECK(mw_world_destroy(w));
  mw_context_free(ctx);
  return 0;
}

static pid_t start(int id, int rank, int size, int changes) {
  pid_t pid = fork();
  if (pid == 0) {
    int rc = worker(id, rank, size, changes);
    fflush(stdout);
    _exit(rc);
  }
  return pid;
}

static void sleep_ms(int ms) {
  struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

/* Waits up to 60 s for `cond`. */
#define AWAIT(cond)                                                  \
  for (int waited_ = 0; !(cond); waited_ += 10) {                    \
    if (waited_ > 60000) {                                           \
      fprintf(stderr, "elastic_group: timed out waiting for %s\n", #cond); \
      goto out;                                                      \
    }                                                                \
    sleep_ms(10);                                                    \
  }

int main(void) {
  board = mmap(NULL, sizeof *board, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (board == MAP_FAILED) return 1;
  memset((void*)board, 0, sizeof *board);
  pid_t pids[WORKERS + 1];
  int started = 0, failed = 1;
  for (int id = 0; id < WORKERS; ++id) pids[started++] = start(id, id, WORKERS, 0);
  AWAIT(board->step >= KILL_AT);
  kill(pids[2], SIGKILL);
  waitpid(pids[2], NULL, 0);
  pids[2] = 0;
  AWAIT(board->shrunk == WORKERS - 1);
  /* The replacement joins the shrunk world of 3 as its rank 3; the
     members grow once they all saw that it waits. */
  pids[started++] = start(WORKERS, WORKERS - 1, WORKERS, 2);
  board->target_size = WORKERS;
  failed = 0;
out:
  for (int i = 0; i < started; ++i) {
    if (!pids[i]) continue;
    if (failed) kill(pids[i], SIGKILL);
    int status;
    if (waitpid(pids[i], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = 1;
  }
  printf("elastic_group: %s (%d steps; %d shrank, %d grew)\n", failed ? "FAILED" : "OK", board->step,
         board->shrunk, board->grown);
  return failed;
}
