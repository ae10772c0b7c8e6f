#include "tools/lab/temp_dir.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <vector>

namespace mwlab {
namespace {

// The pid in "<prefix><pid>.XXXXXX", or -1.
long pidIn(const std::string& name, const std::string& prefix) {
  if (name.compare(0, prefix.size(), prefix) != 0) return -1;
  const size_t dot = name.find('.', prefix.size());
  if (dot == std::string::npos || dot == prefix.size() || dot - prefix.size() > 9) return -1;
  const std::string digits = name.substr(prefix.size(), dot - prefix.size());
  if (digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stol(digits);
}

bool deadPid(long pid) { return pid > 0 && pid != getpid() && kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH; }

}  // namespace

TempDir::TempDir(const std::string& prefix) {
  const std::filesystem::path tmp = std::filesystem::temp_directory_path();
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(tmp, ec)) {
    if (deadPid(pidIn(entry.path().filename().string(), prefix))) std::filesystem::remove_all(entry.path(), ec);
  }
  const std::string base = tmp.string() + "/" + prefix + std::to_string(getpid()) + ".XXXXXX";
  std::vector<char> tmpl(base.begin(), base.end());
  tmpl.push_back('\0');
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp " + base + " failed: " + std::strerror(errno));
  path_ = tmpl.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace mwlab
