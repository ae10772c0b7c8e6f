// `multiworld status`: what Redis says about members and worlds.
#pragma once

#include <string>

namespace mwcli {

struct StatusOptions {
  std::string redis_url;  // empty: MW_REDIS_URL, else redis://127.0.0.1:6379
  std::string ns = "mw";
  bool watch = false;
};

int runStatus(const StatusOptions& opt);

}  // namespace mwcli
