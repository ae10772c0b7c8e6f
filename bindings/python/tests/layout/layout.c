/* Prints what the Python package's ctypes declarations must match, from
 * the header itself: struct sizes and field offsets, and enum values, one
 * "name value" per line (tests/test_layout.py reads it). */
#include <multiworld/multiworld.h>
#include <stddef.h>
#include <stdio.h>

#define SIZE(t) printf("sizeof %s %zu\n", #t, sizeof(t))
#define OFF(t, f) printf("offsetof %s.%s %zu\n", #t, #f, offsetof(t, f))
#define VAL(e) printf("value %s %d\n", #e, (int)(e))

int main(void) {
  SIZE(mw_op_t);
  OFF(mw_op_t, size); OFF(mw_op_t, kind); OFF(mw_op_t, sendbuf); OFF(mw_op_t, recvbuf); OFF(mw_op_t, count);
  OFF(mw_op_t, dtype); OFF(mw_op_t, op); OFF(mw_op_t, peer); OFF(mw_op_t, user_data);
  SIZE(mw_completion_t);
  OFF(mw_completion_t, request); OFF(mw_completion_t, world); OFF(mw_completion_t, user_data);
  OFF(mw_completion_t, status);
  SIZE(mw_event_t);
  OFF(mw_event_t, type); OFF(mw_event_t, world); OFF(mw_event_t, world_name); OFF(mw_event_t, peer_rank);
  OFF(mw_event_t, reason); OFF(mw_event_t, detail);
  SIZE(mw_world_params_t);
  OFF(mw_world_params_t, size); OFF(mw_world_params_t, magic); OFF(mw_world_params_t, version);
  OFF(mw_world_params_t, name); OFF(mw_world_params_t, rank); OFF(mw_world_params_t, world_size);
  OFF(mw_world_params_t, backend); OFF(mw_world_params_t, device); OFF(mw_world_params_t, timeout_ms);
  OFF(mw_world_params_t, op_timeout_ms); OFF(mw_world_params_t, path_failover);
  OFF(mw_world_params_t, same_host_path);
  SIZE(mw_event_info_t);
  OFF(mw_event_info_t, size); OFF(mw_event_info_t, type); OFF(mw_event_info_t, world);
  OFF(mw_event_info_t, world_epoch); OFF(mw_event_info_t, world_name); OFF(mw_event_info_t, peer_rank);
  OFF(mw_event_info_t, reason); OFF(mw_event_info_t, detail); OFF(mw_event_info_t, path_index);
  OFF(mw_event_info_t, local_address); OFF(mw_event_info_t, remote_address);
  OFF(mw_event_info_t, outstanding_messages); OFF(mw_event_info_t, outstanding_bytes);
  SIZE(mw_metric_info_t);
  OFF(mw_metric_info_t, size); OFF(mw_metric_info_t, name); OFF(mw_metric_info_t, help);
  OFF(mw_metric_info_t, kind); OFF(mw_metric_info_t, label_count); OFF(mw_metric_info_t, label_names);
  OFF(mw_metric_info_t, label_values); OFF(mw_metric_info_t, value); OFF(mw_metric_info_t, count);
  OFF(mw_metric_info_t, bucket_count); OFF(mw_metric_info_t, bucket_bounds); OFF(mw_metric_info_t, bucket_counts);
  SIZE(mw_completion_info_t);
  OFF(mw_completion_info_t, request); OFF(mw_completion_info_t, world); OFF(mw_completion_info_t, user_data);
  OFF(mw_completion_info_t, status); OFF(mw_completion_info_t, kind); OFF(mw_completion_info_t, bytes);
  VAL(MW_VERSION_MAJOR);
  VAL(MW_WORLD_PARAMS_MAGIC);
  VAL(MW_PATH_FAILOVER_DEFAULT); VAL(MW_PATH_FAILOVER_ON); VAL(MW_PATH_FAILOVER_OFF);
  VAL(MW_SAME_HOST_PATH_DEFAULT); VAL(MW_SAME_HOST_PATH_AUTO); VAL(MW_SAME_HOST_PATH_OFF);
  VAL(MW_OK); VAL(MW_IN_PROGRESS); VAL(MW_ERR_INVALID_ARGUMENT); VAL(MW_ERR_NOT_FOUND);
  VAL(MW_ERR_ALREADY_EXISTS); VAL(MW_ERR_TIMEOUT); VAL(MW_ERR_WORLD_BROKEN); VAL(MW_ERR_STORE);
  VAL(MW_ERR_BACKEND); VAL(MW_ERR_UNSUPPORTED); VAL(MW_ERR_CANCELLED); VAL(MW_ERR_INTERNAL);
  VAL(MW_ERR_NO_MEMORY);
  VAL(MW_BACKEND_GLOO); VAL(MW_BACKEND_NCCL); VAL(MW_BACKEND_UCX);
  VAL(MW_INT8); VAL(MW_UINT8); VAL(MW_INT32); VAL(MW_UINT32); VAL(MW_INT64); VAL(MW_UINT64);
  VAL(MW_FLOAT16); VAL(MW_BFLOAT16); VAL(MW_FLOAT32); VAL(MW_FLOAT64);
  VAL(MW_SUM); VAL(MW_PROD); VAL(MW_MIN); VAL(MW_MAX); VAL(MW_AVG);
  VAL(MW_WORLD_READY); VAL(MW_WORLD_BROKEN); VAL(MW_WORLD_RETIRED);
  VAL(MW_SHRINK_DEFAULT); VAL(MW_SHRINK_ABORT);
  VAL(MW_OP_SEND); VAL(MW_OP_RECV); VAL(MW_OP_BROADCAST); VAL(MW_OP_ALLREDUCE); VAL(MW_OP_REDUCE);
  VAL(MW_OP_ALLGATHER); VAL(MW_OP_GATHER); VAL(MW_OP_SCATTER); VAL(MW_OP_REDUCE_SCATTER); VAL(MW_OP_ALLTOALL);
  VAL(MW_OP_BARRIER);
  VAL(MW_EVENT_WORLD_BROKEN); VAL(MW_EVENT_STORE_DOWN); VAL(MW_EVENT_STORE_UP); VAL(MW_EVENT_PATH_DOWN);
  VAL(MW_EVENT_PATH_UP);
  VAL(MW_METRIC_COUNTER); VAL(MW_METRIC_GAUGE); VAL(MW_METRIC_HISTOGRAM);
  return 0;
}
