/* dlopen()s libmultiworld.so.<MW_VERSION_MAJOR> by its SONAME, as a plugin
 * host or a language binding would, and resolves every function that
 * multiworld.h declares; each must come from that library itself. Linked
 * with -ldl only, never with libmultiworld.
 *
 * mw_header_functions.h is generated at configure time from the header
 * (packaging/CMakeLists.txt): one MW_FN(name) per declaration. Taking
 * __typeof__(&name) below also checks, at compile time, that each name is
 * declared by the header this test was compiled against. */
#define _GNU_SOURCE
#include <multiworld/multiworld.h>

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "mw_header_functions.h"

#define MW_STR_(x) #x
#define MW_STR(x) MW_STR_(x)
#define MW_SONAME "libmultiworld.so." MW_STR(MW_VERSION_MAJOR)

int main(void) {
#ifdef MW_HEADER_PARSE_MISMATCH
  fprintf(stderr, "%s\n", MW_HEADER_PARSE_MISMATCH);
  return 1;
#endif
  void* lib = dlopen(MW_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "dlopen(%s): %s\n", MW_SONAME, dlerror());
    return 1;
  }
  struct link_map* map = NULL;
  if (dlinfo(lib, RTLD_DI_LINKMAP, &map) != 0 || !map) {
    fprintf(stderr, "dlinfo: %s\n", dlerror());
    return 1;
  }
  printf("loaded %s from %s\n", MW_SONAME, map->l_name);

  int declared = 0, resolved = 0;
#define MW_FN(name)                                                              \
  do {                                                                           \
    ++declared;                                                                  \
    __typeof__(&name) fn;                                                        \
    void* sym = dlsym(lib, #name);                                               \
    Dl_info info;                                                                \
    if (!sym) {                                                                  \
      fprintf(stderr, "missing: %s (%s)\n", #name, dlerror());                   \
    } else if (!dladdr(sym, &info) || !info.dli_fname ||                         \
               strcmp(info.dli_fname, map->l_name) != 0) {                       \
      fprintf(stderr, "%s resolves outside %s (%s)\n", #name, map->l_name,       \
              info.dli_fname ? info.dli_fname : "?");                            \
    } else {                                                                     \
      memcpy(&fn, &sym, sizeof fn);                                              \
      (void)fn;                                                                  \
      ++resolved;                                                                \
    }                                                                            \
  } while (0);
  MW_HEADER_FUNCTIONS(MW_FN)
#undef MW_FN

  /* The library found is the version this header describes. */
  void* sym = dlsym(lib, "mw_version");
  if (sym) {
    void (*version)(int*, int*, int*);
    memcpy(&version, &sym, sizeof version);
    int major = -1, minor = -1, patch = -1;
    version(&major, &minor, &patch);
    if (major != MW_VERSION_MAJOR || minor < MW_VERSION_MINOR) {
      fprintf(stderr, "library is %d.%d.%d, header %d.%d.%d\n", major, minor, patch,
              MW_VERSION_MAJOR, MW_VERSION_MINOR, MW_VERSION_PATCH);
      return 1;
    }
  }

  printf("resolved %d of %d functions declared in multiworld.h\n", resolved, declared);
  dlclose(lib);
  return declared > 0 && resolved == declared ? 0 : 1;
}
