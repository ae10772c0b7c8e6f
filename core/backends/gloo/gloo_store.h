// Gloo's rendezvous store, over the key-value store every backend shares.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <gloo/rendezvous/store.h>

#include "core/store/kv_store.h"

namespace mw {

class GlooStore : public gloo::rendezvous::Store {
 public:
  explicit GlooStore(KvStore& kv) : kv_(kv) {}

  void set(const std::string& key, const std::vector<char>& data) override { kv_.set(key, data); }
  std::vector<char> get(const std::string& key) override { return kv_.get(key); }
  // Every wait is bounded by the world creation's deadline, whatever Gloo asks for.
  void wait(const std::vector<std::string>& keys) override {
    for (const auto& k : keys) kv_.get(k);
  }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds&) override { wait(keys); }

 private:
  KvStore& kv_;
};

}  // namespace mw
