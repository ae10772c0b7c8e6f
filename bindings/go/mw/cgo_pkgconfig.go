//go:build !mw_no_pkgconfig

package mw

// The C library is found with pkg-config. To build against a build tree
// instead of an installed library, point PKG_CONFIG_PATH at the tree's
// pkg-config directory (<build>/pkgconfig-build-tree, whose multiworld.pc
// also sets an rpath), or build with -tags mw_no_pkgconfig and set
// CGO_CFLAGS/CGO_LDFLAGS yourself (see cgo_flags.go).

// #cgo pkg-config: multiworld
import "C"
