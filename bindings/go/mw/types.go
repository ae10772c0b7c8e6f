package mw

/*
#include <multiworld/multiworld.h>
*/
import "C"

import "strconv"

// Backend selects the transport of a world (mw_backend_t).
type Backend int

const (
	Gloo Backend = C.MW_BACKEND_GLOO // host memory over TCP, a thread per world; kept as a baseline
	NCCL Backend = C.MW_BACKEND_NCCL // CUDA device memory (DeviceBuffer); needs the NCCL plugin and a GPU
	UCX  Backend = C.MW_BACKEND_UCX  // host memory: TCP on one host and across hosts, RDMA where present
)

// HostBackend is the backend for host memory: UCX where it is available,
// else Gloo.
func HostBackend() Backend {
	if UCX.Available() {
		return UCX
	}
	return Gloo
}

func (b Backend) String() string {
	switch b {
	case Gloo:
		return "gloo"
	case NCCL:
		return "nccl"
	case UCX:
		return "ucx"
	}
	return "Backend(" + strconv.Itoa(int(b)) + ")"
}

// Available reports whether the backend is compiled into the loaded library
// and usable on this machine (mw_backend_available).
func (b Backend) Available() bool { return C.mw_backend_available(C.mw_backend_t(b)) == 1 }

// DType is an element type (mw_dtype_t).
type DType int

const (
	Int8     DType = C.MW_INT8
	Uint8    DType = C.MW_UINT8
	Int32    DType = C.MW_INT32
	Uint32   DType = C.MW_UINT32
	Int64    DType = C.MW_INT64
	Uint64   DType = C.MW_UINT64
	Float16  DType = C.MW_FLOAT16  // Go element type F16
	BFloat16 DType = C.MW_BFLOAT16 // Go element type BF16
	Float32  DType = C.MW_FLOAT32
	Float64  DType = C.MW_FLOAT64
)

var dtypeNames = [...]string{"int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "bfloat16", "float32", "float64"}
var dtypeSizes = [...]int{1, 1, 4, 4, 8, 8, 2, 2, 4, 8}

func (d DType) String() string {
	if d >= 0 && int(d) < len(dtypeNames) {
		return dtypeNames[d]
	}
	return "DType(" + strconv.Itoa(int(d)) + ")"
}

// Size is the width of one element in bytes.
func (d DType) Size() int { return dtypeSizes[d] }

// Element is the set of Go element types the library transfers and reduces:
// []int8, []uint8 (= []byte), []int32, []uint32, []int64, []uint64, []F16,
// []BF16, []float32 and []float64 are the buffers operations accept.
type Element interface {
	int8 | uint8 | int32 | uint32 | int64 | uint64 | F16 | BF16 | float32 | float64
}

// DTypeOf is the DType of an Element type.
func DTypeOf[T Element]() DType {
	var zero T
	switch any(zero).(type) {
	case int8:
		return Int8
	case uint8:
		return Uint8
	case int32:
		return Int32
	case uint32:
		return Uint32
	case int64:
		return Int64
	case uint64:
		return Uint64
	case F16:
		return Float16
	case BF16:
		return BFloat16
	case float32:
		return Float32
	default: // float64; Element admits nothing else
		return Float64
	}
}

// ReduceOp is a reduction (mw_redop_t). Avg is the sum divided by the world
// size; on integers it truncates toward zero, and integer sums wrap.
type ReduceOp int

const (
	Sum  ReduceOp = C.MW_SUM
	Prod ReduceOp = C.MW_PROD
	Min  ReduceOp = C.MW_MIN
	Max  ReduceOp = C.MW_MAX
	Avg  ReduceOp = C.MW_AVG
)

func (o ReduceOp) String() string {
	switch o {
	case Sum:
		return "sum"
	case Prod:
		return "prod"
	case Min:
		return "min"
	case Max:
		return "max"
	case Avg:
		return "avg"
	}
	return "ReduceOp(" + strconv.Itoa(int(o)) + ")"
}

// WorldState is the state of a World.
type WorldState int

const (
	WorldReady  WorldState = C.MW_WORLD_READY
	WorldBroken WorldState = C.MW_WORLD_BROKEN // a member failed; every operation fails with ErrWorldBroken
	// Shrink or Grow made its successor; every operation fails with
	// ErrInvalidArgument naming the successor's epoch.
	WorldRetired WorldState = C.MW_WORLD_RETIRED
	WorldClosed  WorldState = 0 // Close was called (on the World or its Context)
)

// ShrinkMode says what Shrink does with operations still pending
// (mw_shrink_flags_t).
type ShrinkMode int

const (
	// ShrinkDefault needs a ready world with nothing pending.
	ShrinkDefault ShrinkMode = C.MW_SHRINK_DEFAULT
	// ShrinkAbort first completes pending operations with ErrCancelled;
	// the mode for a broken world.
	ShrinkAbort ShrinkMode = C.MW_SHRINK_ABORT
)

func (s WorldState) String() string {
	switch s {
	case WorldReady:
		return "ready"
	case WorldBroken:
		return "broken"
	case WorldRetired:
		return "retired"
	case WorldClosed:
		return "closed"
	}
	return "WorldState(" + strconv.Itoa(int(s)) + ")"
}
