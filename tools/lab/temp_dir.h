// A run's private directory under $TMPDIR (a redis-server's socket and
// log, a file store), removed with everything in it when the object goes
// away. Its name carries the pid of the process that made it, so a run
// that was killed before it could clean up is swept by the next one.
#pragma once

#include <string>

namespace mwlab {

class TempDir {
 public:
  // $TMPDIR/<prefix><pid>.XXXXXX; throws std::runtime_error when it cannot
  // be made. `prefix` is a plain name such as "mw-bench-".
  explicit TempDir(const std::string& prefix = "mw-lab-");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace mwlab
