//go:build mw_no_pkgconfig

package mw

// With -tags mw_no_pkgconfig, pkg-config is not consulted: the header and
// library come from CGO_CFLAGS and CGO_LDFLAGS, for example
//
//	CGO_CFLAGS="-I$SRC/capi/include" \
//	CGO_LDFLAGS="-L$BUILD/capi -Wl,-rpath,$BUILD/capi" \
//	go build -tags mw_no_pkgconfig ./...

// #cgo LDFLAGS: -lmultiworld
import "C"
