#include "bench/raw_nccl.h"

#include <dlfcn.h>
#include <link.h>

#include <stdexcept>

namespace mwbench {
namespace {

#define MWBENCH_STR2(x) #x
#define MWBENCH_STR(x) MWBENCH_STR2(x)
constexpr const char* kSoname = "libnccl.so." MWBENCH_STR(NCCL_MAJOR);

void* openNccl(std::string& tried) {
  // A bare soname also matches the copy the plugin already loaded through
  // its RUNPATH, which a search of the default paths might not find.
  if (void* h = dlopen(kSoname, RTLD_NOW | RTLD_LOCAL)) return h;
  tried = dlerror();
#ifdef MWBENCH_NCCL_LIBDIR
  const std::string built = std::string(MWBENCH_NCCL_LIBDIR) + "/" + kSoname;
  if (void* h = dlopen(built.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
  tried += "; " + std::string(dlerror());
#endif
  return nullptr;
}

template <typename F>
void bind(void* h, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(h, name));
  if (!out) throw std::runtime_error(std::string("raw NCCL: ") + kSoname + " has no " + name);
}

RawNccl load() {
  std::string tried;
  void* h = openNccl(tried);
  if (!h) throw std::runtime_error("raw NCCL: cannot open " + std::string(kSoname) + ": " + tried);
  RawNccl n;
  bind(h, "ncclGetVersion", n.getVersion);
  bind(h, "ncclGetErrorString", n.getErrorString);
  bind(h, "ncclGetUniqueId", n.getUniqueId);
  bind(h, "ncclCommInitRank", n.commInitRank);
  bind(h, "ncclCommDestroy", n.commDestroy);
  bind(h, "ncclAllReduce", n.allReduce);
  bind(h, "ncclBroadcast", n.broadcast);
  bind(h, "ncclSend", n.send);
  bind(h, "ncclRecv", n.recv);
  bind(h, "ncclGroupStart", n.groupStart);
  bind(h, "ncclGroupEnd", n.groupEnd);
  link_map* map = nullptr;
  n.path = dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name ? map->l_name : kSoname;
  if (n.getVersion(&n.version) != ncclSuccess) n.version = 0;
  return n;
}

}  // namespace

const RawNccl& rawNccl() {
  static const RawNccl n = load();
  return n;
}

std::string ncclVersionText(int code) {
  // Codes from 2.9 on are major*10000 + minor*100 + patch.
  return std::to_string(code / 10000) + "." + std::to_string(code % 10000 / 100) + "." + std::to_string(code % 100);
}

}  // namespace mwbench
