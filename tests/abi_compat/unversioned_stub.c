/* Stands in for libmultiworld.so.0 as released before symbol versions: the
 * 0.1 functions' names, exported without versions, so that old_client.c
 * links as a program built then did (unversioned references). Never run:
 * old_client runs against the real library. Bodies and types do not
 * matter to the linker. */
void mw_allgather_async(void) {}
void mw_allreduce_async(void) {}
void mw_alltoall_async(void) {}
void mw_backend_available(void) {}
void mw_barrier_async(void) {}
void mw_broadcast_async(void) {}
void mw_config_free(void) {}
void mw_config_new(void) {}
void mw_config_set(void) {}
void mw_context_fd(void) {}
void mw_context_free(void) {}
void mw_context_new(void) {}
void mw_context_wake(void) {}
void mw_gather_async(void) {}
void mw_last_error(void) {}
void mw_next_event(void) {}
void mw_poll(void) {}
void mw_recv_async(void) {}
void mw_reduce_async(void) {}
void mw_reduce_scatter_async(void) {}
void mw_request_cancel(void) {}
void mw_request_free(void) {}
void mw_request_set_user_data(void) {}
void mw_request_user_data(void) {}
void mw_scatter_async(void) {}
void mw_send_async(void) {}
void mw_status_string(void) {}
void mw_submit(void) {}
void mw_test(void) {}
void mw_version(void) {}
void mw_version_string(void) {}
void mw_wait(void) {}
void mw_world_create(void) {}
void mw_world_destroy(void) {}
void mw_world_epoch(void) {}
void mw_world_name(void) {}
void mw_world_rank(void) {}
void mw_world_size(void) {}
void mw_world_state(void) {}
