package mw

/*
#include <multiworld/multiworld.h>

// Compile-time check: the header this package is compiled against must be
// the API the package was written for (0.x with x >= 1; a 0.x minor may
// change the ABI, so the run-time check below wants the same minor).
#if !defined(MW_VERSION_MAJOR) || MW_VERSION_MAJOR != 0 || MW_VERSION_MINOR < 1
#error "github.com/multiworld/multiworld/bindings/go/mw needs <multiworld/multiworld.h> 0.x with x >= 1"
#endif
*/
import "C"

import (
	"fmt"
	"sync"
)

// The version of <multiworld/multiworld.h> this package was compiled with.
const (
	HeaderVersionMajor = int(C.MW_VERSION_MAJOR)
	HeaderVersionMinor = int(C.MW_VERSION_MINOR)
	HeaderVersionPatch = int(C.MW_VERSION_PATCH)
)

// Version reports the version of the C library loaded at run time, as
// mw_version does.
func Version() (major, minor, patch int) {
	var ma, mi, pa C.int
	C.mw_version(&ma, &mi, &pa)
	return int(ma), int(mi), int(pa)
}

// VersionString is mw_version_string: "MAJOR.MINOR.PATCH" of the loaded
// library.
func VersionString() string { return C.GoString(C.mw_version_string()) }

var (
	versionOnce sync.Once
	versionErr  error
)

// CheckVersion compares the library loaded at run time with the header the
// package was compiled against: the major versions must be equal, and the
// minor version must be at least the header's (equal while the major
// version is 0, where a minor release may break the ABI). NewContext calls
// it and fails with its error, an *Error with Code ErrUnsupported.
func CheckVersion() error {
	versionOnce.Do(func() {
		major, minor, patch := Version()
		ok := major == HeaderVersionMajor && minor >= HeaderVersionMinor
		if major == 0 {
			ok = ok && minor == HeaderVersionMinor
		}
		if !ok {
			versionErr = &Error{Code: ErrUnsupported, Msg: fmt.Sprintf(
				"MW_ERR_UNSUPPORTED: libmultiworld %d.%d.%d is loaded, but this binding was compiled against %d.%d.%d",
				major, minor, patch, HeaderVersionMajor, HeaderVersionMinor, HeaderVersionPatch)}
		}
	})
	return versionErr
}
