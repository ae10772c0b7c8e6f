/*
 * SWIG interface over the one public header, <multiworld/multiworld.h>.
 * Generates the JNI layer (package io.multiworld.swig, class Multiworld with
 * one static method per C function). The idiomatic API in io.multiworld is
 * written on top of it; nothing else should use this layer directly.
 *
 * Java view of the C types:
 *   - enums                   int constants (mw_status_t.MW_OK, ...)
 *   - opaque handles          long (the pointer value; 0 for NULL)
 *   - T** out parameters      long[1] that receives the handle
 *   - void* / const void*     java.nio.Buffer, which must be direct: its
 *                             native address is passed as is (zero-copy);
 *                             null becomes NULL. A Buffer's position is NOT
 *                             applied here: pass buf.slice() for an offset.
 *   - uint64_t                long (same 64 bits)
 *   - size_t                  long
 *   - mw_poll's (out, max)    long[4*k]: per completion the quadruple
 *                             (request, world, user_data, status); at most 64
 *                             per call. n_out is a long[1].
 *   - mw_event_t,             proxy structs, read-only from Java; free them
 *     mw_event_info_t         with delete() (no finalizer). mw_event_info_t
 *                             is filled through mwj_next_event_info, which
 *                             sets its size.
 *   - mw_poll_info            through mwj_poll_info: long[6*k], per
 *                             completion (request, world, user_data,
 *                             status, kind, bytes); at most 64 per call.
 *   - mw_world_create_with    through mwj_world_create_with, which takes
 *                             the parameters struct's fields as arguments.
 *   - mw_world_shrink's       int[] (null for NULL); its length is n.
 *     (exclude, n)
 *   - mw_submit               through mwj_submit (host buffers as direct
 *                             Buffers) and mwj_submit_device (device
 *                             addresses as long), which take the
 *                             descriptor's fields as arguments.
 *   - device memory           mwj_device_* (native/device_memory.h).
 *   - mw_metrics_get          through mwj_metrics_get into a read-only
 *                             proxy of mw_metric_info_t (sized by it), whose
 *                             arrays are read with mwj_metric_label_name,
 *                             _label_value, _bucket_bound, _bucket_count.
 *   - mw_metrics_text         through mwj_metrics_text, which returns the
 *                             text as a String (null on failure).
 */
%module(jniclassname="MultiworldJNI") Multiworld

%{
#include <multiworld/multiworld.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "device_memory.h"
%}

/* The JNI class loads the library itself (multiworld.jni.path, else
 * java.library.path), so even direct users of this layer need no setup. */
%pragma(java) jniclasscode=%{
  static {
    io.multiworld.MultiWorld.loadNativeLibrary();
  }
%}

%include "enumtypeunsafe.swg"
%javaconst(1);
%include <stdint.i>
%include <typemaps.i>

%apply long long { uint64_t };
%apply int* OUTPUT { int* major, int* minor, int* patch };

/* ---- opaque handles as long ------------------------------------------- */
%define MW_HANDLE(T)
%typemap(jni) T*, const T* "jlong"
%typemap(jtype) T*, const T* "long"
%typemap(jstype) T*, const T* "long"
%typemap(javain) T*, const T* "$javainput"
%typemap(javaout) T*, const T* { return $jnicall; }
%typemap(in) T*, const T* %{ $1 = ($1_ltype)(intptr_t)$input; %}
%typemap(out) T*, const T* %{ $result = (jlong)(intptr_t)$1; %}

%typemap(jni) T** "jlongArray"
%typemap(jtype) T** "long[]"
%typemap(jstype) T** "long[]"
%typemap(javain) T** "$javainput"
%typemap(in) T** (T* handle_out = NULL) %{
  if (!$input || (*jenv)->GetArrayLength(jenv, $input) < 1) {
    SWIG_JavaThrowException(jenv, SWIG_JavaIllegalArgumentException, "output handle needs a long[1]");
    return $null;
  }
  $1 = &handle_out;
%}
%typemap(argout) T** %{
  {
    jlong handle_value = (jlong)(intptr_t)handle_out$argnum;
    (*jenv)->SetLongArrayRegion(jenv, $input, 0, 1, &handle_value);
  }
%}
%enddef

MW_HANDLE(mw_config_t)
MW_HANDLE(mw_context_t)
MW_HANDLE(mw_world_t)
MW_HANDLE(mw_request_t)
MW_HANDLE(mw_metrics_t)

/* ---- data buffers: direct java.nio.Buffer, zero-copy ------------------- */
%typemap(jni) void*, const void* "jobject"
%typemap(jtype) void*, const void* "java.nio.Buffer"
%typemap(jstype) void*, const void* "java.nio.Buffer"
%typemap(javain) void*, const void* "$javainput"
%typemap(in) void*, const void* %{
  $1 = NULL;
  if ($input) {
    $1 = ($1_ltype)(*jenv)->GetDirectBufferAddress(jenv, $input);
    if (!$1 && (*jenv)->GetDirectBufferCapacity(jenv, $input) != 0) {
      SWIG_JavaThrowException(jenv, SWIG_JavaIllegalArgumentException,
                              "buffer is not a direct java.nio.Buffer");
      return $null;
    }
  }
%}

/* ---- size_t* n_out, uint64_t* address_out: long[1] --------------------- */
%define MW_LONG_OUT(T, NAME)
%typemap(jni) T* NAME "jlongArray"
%typemap(jtype) T* NAME "long[]"
%typemap(jstype) T* NAME "long[]"
%typemap(javain) T* NAME "$javainput"
%typemap(in) T* NAME (T value_out = 0) %{
  if (!$input || (*jenv)->GetArrayLength(jenv, $input) < 1) {
    SWIG_JavaThrowException(jenv, SWIG_JavaIllegalArgumentException, #NAME " needs a long[1]");
    return $null;
  }
  $1 = &value_out;
%}
%typemap(argout) T* NAME %{
  {
    jlong out_value = (jlong)value_out$argnum;
    (*jenv)->SetLongArrayRegion(jenv, $input, 0, 1, &out_value);
  }
%}
%enddef

MW_LONG_OUT(size_t, n_out)
MW_LONG_OUT(uint64_t, address_out)
%apply int* OUTPUT { int* count, int* fd_out };

/* ---- mw_poll's completion array: long[4*k] ------------------------------- */
%typemap(jni) (mw_completion_t* out, size_t max) "jlongArray"
%typemap(jtype) (mw_completion_t* out, size_t max) "long[]"
%typemap(jstype) (mw_completion_t* out, size_t max) "long[]"
%typemap(javain) (mw_completion_t* out, size_t max) "$javainput"
%typemap(in) (mw_completion_t* out, size_t max) (mw_completion_t done[64]) %{
  {
    jsize len = $input ? (*jenv)->GetArrayLength(jenv, $input) : 0;
    $2 = (size_t)(len / 4) > 64 ? 64 : (size_t)(len / 4);
    memset(done, 0, sizeof done);
    $1 = done;
  }
%}
%typemap(argout) (mw_completion_t* out, size_t max) %{
  {
    size_t i;
    jlong quad[4];
    for (i = 0; i < $2; ++i) {
      if (!done$argnum[i].request) break;
      quad[0] = (jlong)(intptr_t)done$argnum[i].request;
      quad[1] = (jlong)(intptr_t)done$argnum[i].world;
      quad[2] = (jlong)done$argnum[i].user_data;
      quad[3] = (jlong)done$argnum[i].status;
      (*jenv)->SetLongArrayRegion(jenv, $input, (jsize)(4 * i), 4, quad);
    }
  }
%}
%ignore mw_completion_t;

/* ---- mw_poll_info's completion array: long[6*k] -------------------------- */
%typemap(jni) (mw_completion_info_t* out, size_t max) "jlongArray"
%typemap(jtype) (mw_completion_info_t* out, size_t max) "long[]"
%typemap(jstype) (mw_completion_info_t* out, size_t max) "long[]"
%typemap(javain) (mw_completion_info_t* out, size_t max) "$javainput"
%typemap(in) (mw_completion_info_t* out, size_t max) (mw_completion_info_t done[64]) %{
  {
    jsize len = $input ? (*jenv)->GetArrayLength(jenv, $input) : 0;
    $2 = (size_t)(len / 6) > 64 ? 64 : (size_t)(len / 6);
    memset(done, 0, sizeof done);
    $1 = done;
  }
%}
%typemap(argout) (mw_completion_info_t* out, size_t max) %{
  {
    size_t i;
    jlong six[6];
    for (i = 0; i < $2; ++i) {
      if (!done$argnum[i].request) break;
      six[0] = (jlong)(intptr_t)done$argnum[i].request;
      six[1] = (jlong)(intptr_t)done$argnum[i].world;
      six[2] = (jlong)done$argnum[i].user_data;
      six[3] = (jlong)done$argnum[i].status;
      six[4] = (jlong)done$argnum[i].kind;
      six[5] = (jlong)done$argnum[i].bytes;
      (*jenv)->SetLongArrayRegion(jenv, $input, (jsize)(6 * i), 6, six);
    }
  }
%}
%ignore mw_completion_info_t;
%ignore mw_completion_info;
%ignore mw_poll_info;
/* The parameters struct holds a const char* whose lifetime a proxy could
   not keep; its fields come as arguments instead. */
%ignore mw_world_params_t;
%ignore mw_world_params;
%ignore mw_world_create_with;
/* The caller's size must be set; mwj_next_event_info does it. */
%ignore mw_next_event_info;
/* The same for mw_metrics_get; the info's arrays are read by index, the
   text is returned whole. */
%ignore mw_metrics_get;
%ignore mw_metrics_text;
%ignore mw_metric_info::label_names;
%ignore mw_metric_info::label_values;
%ignore mw_metric_info::bucket_bounds;
%ignore mw_metric_info::bucket_counts;
%newobject mwj_metrics_text;

%inline %{
/* mw_world_create_with: MW_WORLD_PARAMS_INIT, then these fields. */
mw_status_t mwj_world_create_with(mw_context_t* ctx, const char* name, int rank, int size, mw_backend_t backend,
                                  int device, int timeout_ms, int op_timeout_ms, mw_path_failover_t path_failover,
                                  mw_world_t** out) {
  mw_world_params_t p = MW_WORLD_PARAMS_INIT;
  p.name = name;
  p.rank = rank;
  p.world_size = size;
  p.backend = backend;
  p.device = device;
  p.timeout_ms = timeout_ms;
  p.op_timeout_ms = op_timeout_ms;
  p.path_failover = path_failover;
  return mw_world_create_with(ctx, &p, out);
}

/* mw_poll_info with this binding's element size. */
mw_status_t mwj_poll_info(mw_context_t* ctx, mw_completion_info_t* out, size_t max, int timeout_ms, size_t* n_out) {
  return mw_poll_info(ctx, out, sizeof *out, max, timeout_ms, n_out);
}

/* mw_metrics_get into a proxy of this binding's size. */
mw_status_t mwj_metrics_get(const mw_metrics_t* m, size_t i, mw_metric_info_t* out) {
  if (out) out->size = sizeof *out;
  return mw_metrics_get(m, i, out);
}

/* The arrays of a series, element j (j below its count). */
const char* mwj_metric_label_name(const mw_metric_info_t* info, size_t j) { return info->label_names[j]; }
const char* mwj_metric_label_value(const mw_metric_info_t* info, size_t j) { return info->label_values[j]; }
double mwj_metric_bucket_bound(const mw_metric_info_t* info, size_t j) { return info->bucket_bounds[j]; }
uint64_t mwj_metric_bucket_count(const mw_metric_info_t* info, size_t j) { return info->bucket_counts[j]; }

/* mw_metrics_text as one string (freed by SWIG); NULL when it fails. */
char* mwj_metrics_text(const mw_metrics_t* m) {
  size_t needed = 0;
  char* text;
  if (mw_metrics_text(m, NULL, 0, &needed) != MW_OK) return NULL;
  text = (char*)malloc(needed);
  if (text && mw_metrics_text(m, text, needed, NULL) != MW_OK) {
    free(text);
    text = NULL;
  }
  return text;
}

/* mw_next_event_info into a proxy of this binding's size. */
mw_status_t mwj_next_event_info(mw_context_t* ctx, mw_event_info_t* out, int timeout_ms) {
  if (out) out->size = sizeof *out;
  return mw_next_event_info(ctx, out, timeout_ms);
}
%}
/* SWIG's struct proxy of mw_op_t would put the Buffer typemap above on its
   void* fields and hand Java a descriptor whose buffers it cannot keep
   alive; the descriptor is filled here instead, from arguments. */
%ignore mw_op_t;
%ignore mw_submit;

%{
static mw_status_t mwj_submit_op(mw_world_t* world, mw_op_kind_t kind, const void* sendbuf, void* recvbuf,
                                 size_t count, mw_dtype_t dtype, mw_redop_t op, int peer, uint64_t user_data,
                                 mw_request_t** req) {
  mw_op_t d;
  memset(&d, 0, sizeof d);
  d.size = sizeof d;
  d.kind = kind;
  d.sendbuf = sendbuf;
  d.recvbuf = recvbuf;
  d.count = count;
  d.dtype = dtype;
  d.op = op;
  d.peer = peer;
  d.user_data = user_data;
  return mw_submit(world, &d, req);
}
%}

%inline %{
/* mw_submit on host memory: sendbuf and recvbuf are direct Buffers (or null). */
mw_status_t mwj_submit(mw_world_t* world, mw_op_kind_t kind, const void* sendbuf, void* recvbuf, size_t count,
                       mw_dtype_t dtype, mw_redop_t op, int peer, uint64_t user_data, mw_request_t** req) {
  return mwj_submit_op(world, kind, sendbuf, recvbuf, count, dtype, op, peer, user_data, req);
}

/* mw_submit on device memory: sendbuf and recvbuf are CUDA device addresses (or 0). */
mw_status_t mwj_submit_device(mw_world_t* world, mw_op_kind_t kind, uint64_t sendbuf, uint64_t recvbuf,
                              size_t count, mw_dtype_t dtype, mw_redop_t op, int peer, uint64_t user_data,
                              mw_request_t** req) {
  return mwj_submit_op(world, kind, (const void*)(uintptr_t)sendbuf, (void*)(uintptr_t)recvbuf, count, dtype, op,
                       peer, user_data, req);
}
%}

/* ---- mw_world_shrink's exclude list: int[] (null: NULL, 0) -------------- */
%typemap(jni) (const int* exclude, int n) "jintArray"
%typemap(jtype) (const int* exclude, int n) "int[]"
%typemap(jstype) (const int* exclude, int n) "int[]"
%typemap(javain) (const int* exclude, int n) "$javainput"
%typemap(in) (const int* exclude, int n) %{
  $1 = $input ? ($1_ltype)(*jenv)->GetIntArrayElements(jenv, $input, NULL) : NULL;
  $2 = $input ? (int)(*jenv)->GetArrayLength(jenv, $input) : 0;
  if ($input && !$1) return $null;  /* out of memory: Java has the exception */
%}
%typemap(freearg) (const int* exclude, int n) %{
  if ($1) (*jenv)->ReleaseIntArrayElements(jenv, $input, (jint*)$1, JNI_ABORT);
%}

/* ---- events: a read-only proxy without finalizer ------------------------ */
%immutable;  /* the header's only wrapped struct members are mw_event_t's, mw_event_info_t's and mw_metric_info_t's */
%typemap(javafinalize) mw_event_t ""
%typemap(javafinalize) mw_event_info_t ""
%typemap(javafinalize) mw_metric_info_t ""

%include <multiworld/multiworld.h>
%include "device_memory.h"
