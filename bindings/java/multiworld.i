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
 *   - mw_event_t              a proxy struct, read-only from Java; free it
 *                             with delete() (no finalizer).
 */
%module(jniclassname="MultiworldJNI") Multiworld

%{
#include <multiworld/multiworld.h>
#include <stdint.h>
#include <string.h>
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

/* ---- size_t* n_out: long[1] --------------------------------------------- */
%typemap(jni) size_t* n_out "jlongArray"
%typemap(jtype) size_t* n_out "long[]"
%typemap(jstype) size_t* n_out "long[]"
%typemap(javain) size_t* n_out "$javainput"
%typemap(in) size_t* n_out (size_t count_out = 0) %{
  if (!$input || (*jenv)->GetArrayLength(jenv, $input) < 1) {
    SWIG_JavaThrowException(jenv, SWIG_JavaIllegalArgumentException, "n_out needs a long[1]");
    return $null;
  }
  $1 = &count_out;
%}
%typemap(argout) size_t* n_out %{
  {
    jlong count_value = (jlong)count_out$argnum;
    (*jenv)->SetLongArrayRegion(jenv, $input, 0, 1, &count_value);
  }
%}

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
/* mw_submit is reached through io.multiworld's own wrapper, not SWIG's
   struct proxy (whose void* fields would take the Buffer typemap above). */
%ignore mw_op_t;
%ignore mw_submit;

/* ---- events: a read-only proxy without finalizer ------------------------ */
%immutable;  /* the header's only wrapped struct members are mw_event_t's */
%typemap(javafinalize) mw_event_t ""

%include <multiworld/multiworld.h>
