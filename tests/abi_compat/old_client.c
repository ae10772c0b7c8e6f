/* A program written and built against the 0.1 header (v0_1/, the header as
 * released, kept verbatim) and linked against a library without symbol
 * versions, as every program built before symbol versions was. Run against
 * today's library, unchanged: configuration, a context, a Gloo and a UCX
 * world of one member, the *_async calls, mw_submit with the 0.1 mw_op_t,
 * mw_poll with the 0.1 mw_completion_t, mw_next_event with the 0.1
 * mw_event_t. Exits 0 and prints "old client: OK" when everything did what
 * the 0.1 header promises. */
#include <multiworld/multiworld.h>
#include <stdio.h>
#include <string.h>

#define CHECK(call)                                                                   \
  do {                                                                                \
    mw_status_t s_ = (call);                                                          \
    if (s_ != MW_OK) {                                                                \
      fprintf(stderr, "%s:%d: %s -> %s (%s)\n", __FILE__, __LINE__, #call,            \
              mw_status_string(s_), mw_last_error());                                 \
      return 1;                                                                       \
    }                                                                                 \
  } while (0)
#define REQUIRE(cond)                                                                 \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      fprintf(stderr, "%s:%d: requirement failed: %s\n", __FILE__, __LINE__, #cond);  \
      return 1;                                                                       \
    }                                                                                 \
  } while (0)

static int exercise(mw_context_t* ctx, mw_backend_t backend, const char* name) {
  mw_world_t* w = NULL;
  CHECK(mw_world_create(ctx, name, 0, 1, backend, 0, 30000, &w));
  REQUIRE(mw_world_rank(w) == 0 && mw_world_size(w) == 1 && strcmp(mw_world_name(w), name) == 0);
  REQUIRE(mw_world_state(w) == MW_WORLD_READY && mw_world_epoch(w) >= 1);

  int32_t in[4] = {1, 2, 3, 4}, out[4] = {0};
  mw_request_t* r = NULL;
  CHECK(mw_allreduce_async(w, in, out, 4, MW_INT32, MW_SUM, &r));
  CHECK(mw_wait(r, 30000));
  mw_request_free(r);
  REQUIRE(out[3] == 4);

  mw_op_t op;
  memset(&op, 0, sizeof op);
  op.size = sizeof op;
  op.kind = MW_OP_ALLREDUCE;
  op.sendbuf = in;
  op.recvbuf = out;
  op.count = 4;
  op.dtype = MW_INT32;
  op.op = MW_MAX;
  op.peer = -1;
  op.user_data = 42;
  CHECK(mw_submit(w, &op, &r));
  mw_completion_t c[4];
  size_t n = 0;
  while (n == 0) CHECK(mw_poll(ctx, c, 4, 30000, &n));
  REQUIRE(n == 1 && c[0].request == r && c[0].world == w && c[0].user_data == 42 && c[0].status == MW_OK);
  mw_request_free(r);

  mw_event_t ev;
  REQUIRE(mw_next_event(ctx, &ev, 0) == MW_ERR_TIMEOUT);
  CHECK(mw_world_destroy(w));
  return 0;
}

int main(void) {
  int major = -1, minor = -1, patch = -1;
  mw_version(&major, &minor, &patch);
  REQUIRE(major == MW_VERSION_MAJOR);
  mw_config_t* cfg = NULL;
  CHECK(mw_config_new(&cfg));
  CHECK(mw_config_set(cfg, "heartbeat_timeout_ms", "30000"));
  REQUIRE(mw_config_set(cfg, "no_such_key", "1") == MW_ERR_INVALID_ARGUMENT);
  mw_context_t* ctx = NULL;
  CHECK(mw_context_new(cfg, &ctx));
  mw_config_free(cfg);
  if (exercise(ctx, MW_BACKEND_GLOO, "old-client-gloo") != 0) return 1;
  if (mw_backend_available(MW_BACKEND_UCX) && exercise(ctx, MW_BACKEND_UCX, "old-client-ucx") != 0) return 1;
  mw_context_free(ctx);
  printf("old client: OK against %s (built against %d.%d.%d)\n", mw_version_string(), MW_VERSION_MAJOR,
         MW_VERSION_MINOR, MW_VERSION_PATCH);
  return 0;
}
