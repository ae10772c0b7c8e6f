#include "tools/multiworld/demo_stage.h"

#include <cstdio>
#include <map>
#include <memory>
#include <stdexcept>

#include "tools/multiworld/demo_protocol.h"
#include "tools/multiworld/message_node.h"

namespace mwcli {
namespace {

Message control(MsgKind kind, int replica, uint64_t req_id = 0) {
  Message m{};
  m.h.kind = kind;
  m.h.replica = replica;
  m.h.req_id = req_id;
  return m;
}

void transform(Message& m, float (*f)(float)) {
  for (float& v : m.tensor) v = f(v);
}

// Stage 1: requests from the leader go to the replica the leader chose.
int runStage1(MessageNode& node, const StageArgs& args) {
  Endpoint& leader = node.connect(leaderToS1(), 1, true, -1);
  std::map<int, Endpoint*> replicas;
  for (int k : args.replicas) replicas[k] = &node.connect(s1ToReplica(k), 0, false, k);
  bool stop = false;
  auto onMessage = [&](Endpoint&, const Message& in) {
    Message m = in;
    switch (in.h.kind) {
      case MsgKind::Request: {
        auto it = replicas.find(in.h.replica);
        transform(m, stage1);
        if (it == replicas.end() || !node.send(*it->second, m)) {
          node.send(leader, control(MsgKind::Nack, in.h.replica, in.h.req_id));
        }
        break;
      }
      case MsgKind::AddReplica:
        replicas[in.h.replica] = &node.connect(s1ToReplica(in.h.replica), 0, false, in.h.replica);
        node.send(leader, control(MsgKind::ReplicaReady, in.h.replica));
        break;
      case MsgKind::Stop:
        for (auto& [k, e] : replicas) node.send(*e, control(MsgKind::Stop, k));
        stop = true;
        break;
      default:
        break;
    }
  };
  auto onBroken = [&](Endpoint& e, const std::string& why) {
    if (e.tag < 0) {
      std::fprintf(stderr, "stage1: lost the leader: %s\n", why.c_str());
      stop = true;
      return;
    }
    node.send(leader, control(MsgKind::ReplicaDown, e.tag));
    replicas.erase(e.tag);
    node.close(e);
  };
  while (!stop) node.pump(100, onMessage, onBroken);
  // Let the stop notices leave before the worlds go.
  for (int i = 0; i < 5; ++i) node.pump(20, [](Endpoint&, const Message&) {}, [](Endpoint&, const std::string&) {});
  return 0;
}

int runReplica(MessageNode& node, const StageArgs& args) {
  node.connect(s1ToReplica(args.replica), 1, true, -1);
  Endpoint& out = node.connect(replicaToS3(args.replica), 0, false, -1);
  bool stop = false;
  auto onMessage = [&](Endpoint&, const Message& in) {
    if (in.h.kind == MsgKind::Stop) {
      stop = true;
      return;
    }
    if (in.h.kind != MsgKind::Request) return;
    Message m = in;
    transform(m, stage2);
    node.send(out, m);
  };
  auto onBroken = [&](Endpoint&, const std::string&) { stop = true; };
  while (!stop) node.pump(100, onMessage, onBroken);
  return 0;
}

// Stage 3: results from every replica go back to the leader.
int runStage3(MessageNode& node, const StageArgs& args) {
  for (int k : args.replicas) node.connect(replicaToS3(k), 1, true, k);
  Endpoint& leader = node.connect(s3ToLeader(), 0, true, -1);
  bool stop = false;
  auto onMessage = [&](Endpoint& from, const Message& in) {
    if (from.tag < 0) {  // from the leader
      if (in.h.kind == MsgKind::AddReplica) {
        node.connect(replicaToS3(in.h.replica), 1, true, in.h.replica);
        node.send(leader, control(MsgKind::ReplicaReady, in.h.replica));
      } else if (in.h.kind == MsgKind::Stop) {
        stop = true;
      }
      return;
    }
    if (in.h.kind != MsgKind::Request) return;
    Message m = in;
    m.h.kind = MsgKind::Result;
    transform(m, stage3);
    node.send(leader, m);
  };
  auto onBroken = [&](Endpoint& e, const std::string& why) {
    if (e.tag < 0) {
      std::fprintf(stderr, "stage3: lost the leader: %s\n", why.c_str());
      stop = true;
      return;
    }
    node.send(leader, control(MsgKind::ReplicaDown, e.tag));
    node.close(e);
  };
  while (!stop) node.pump(100, onMessage, onBroken);
  return 0;
}

}  // namespace

int runDemoStage(const StageArgs& args) {
  mw_context_t* ctx = newDemoContext();
  if (!ctx) {
    std::fprintf(stderr, "demo %s: %s\n", args.role.c_str(), mw_last_error());
    return 1;
  }
  int rc = 1;
  try {
    MessageNode node(ctx);
    if (args.role == "s1") rc = runStage1(node, args);
    if (args.role == "replica") rc = runReplica(node, args);
    if (args.role == "s3") rc = runStage3(node, args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "demo %s: %s\n", args.role.c_str(), e.what());
  }
  mw_context_free(ctx);
  return rc;
}

}  // namespace mwcli
